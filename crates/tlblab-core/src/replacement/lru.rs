//! Least-recently-used: every hit and fill moves the way to the front of its set's order; the
//! victim is the oldest allowed way. O(1) per touch and per unconstrained victim. The order and
//! the victim choice are the ones FIFO has too (`order::Ordered`).

use super::order::Ordered;

/// LRU's marker: the order is by use.
#[derive(Clone, Copy, Debug)]
pub struct ByUse;

pub type Lru = Ordered<ByUse>;

impl Lru {
    /// A hit or a fill: the way becomes the most recently used.
    #[inline(always)]
    pub fn touch(&mut self, set: usize, way: usize) {
        self.move_to_front(set, way);
    }
}
