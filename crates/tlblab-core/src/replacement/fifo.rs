//! First-in first-out: a fill moves the way to the front of its set's order (hits do not); the
//! victim is the allowed way filled longest ago. O(1) per fill and per unconstrained victim.

use super::order::OrderList;

#[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
pub struct Fifo {
    order: OrderList,
}

impl Fifo {
    pub fn new(sets: usize, ways: usize) -> Self {
        Fifo {
            order: OrderList::new(sets, ways),
        }
    }

    #[inline]
    pub fn on_fill(&mut self, set: usize, way: usize) {
        self.order.move_to_front(set, way);
    }

    #[inline]
    pub fn forget(&mut self, set: usize, way: usize) {
        self.order.move_to_back(set, way);
    }

    #[inline]
    pub fn victim(&self, set: usize, allowed: &[u64]) -> usize {
        self.order.oldest_allowed(set, allowed)
    }

    #[inline]
    pub fn victim_any(&self, set: usize) -> usize {
        self.order.oldest(set)
    }

    /// `victim_any` then the fill of that way, in one step (the replacement of a full set).
    #[inline(always)]
    pub fn fill_victim(&mut self, set: usize) -> usize {
        self.order.recycle_oldest(set)
    }

    #[inline]
    pub(crate) fn prefetch(&self, set: usize) {
        self.order.prefetch(set);
    }
}
