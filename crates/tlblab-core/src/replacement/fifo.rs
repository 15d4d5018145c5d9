//! First-in first-out: a fill moves the way to the front of its set's order (hits do not); the
//! victim is the allowed way filled longest ago. O(1) per fill and per unconstrained victim. The
//! order and the victim choice are the ones LRU has too (`order::Ordered`).

use super::order::Ordered;

/// FIFO's marker: the order is by fill.
#[derive(Clone, Copy, Debug)]
pub struct ByFill;

pub type Fifo = Ordered<ByFill>;

impl Fifo {
    /// A fill: the way becomes the newest; a hit changes nothing.
    #[inline]
    pub fn on_fill(&mut self, set: usize, way: usize) {
        self.move_to_front(set, way);
    }
}
