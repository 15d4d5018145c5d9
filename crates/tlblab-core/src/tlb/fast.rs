//! Shaped lookups and fills for the fast lane (`system/fast_lane.rs`).
//!
//! `Tlb::fast_lookup` and `Tlb::fast_fill` serve any level that is `fast_ready`, deciding per
//! call what the level is: how its sets are indexed, which replacement policy it runs, whether
//! it keeps the `present` filter. For the two shapes nearly every machine's data TLBs have, the
//! lane decides that once (`Tlb::fast_shape`) and calls the versions here, monomorphised for the
//! shape, which only do what that shape needs:
//!
//! - `SHAPE_FULLY_ASSOC`: one set of 32..=64 ways, LRU (the linked order), with the hint table
//!   and the `present` filter (a first-level micro TLB: zen3 L1D, gem5-a7's micro TLBs);
//! - `SHAPE_SET_ASSOC`: sets of at most 16 ways indexed by low VPN bits, LRU (the packed order)
//!   (a second level: zen3 L2D, the Cortex-A7/A9 main TLBs).
//!
//! `SHAPE_ANY` forwards to the general fast methods. A shaped call has the effects of the
//! general one on the entries, the replacement state, the `present` counts and the hint table
//! (the shapes only skip questions whose answers are known); it leaves the memo empty where the
//! general one sets it, which is always correct (`lookup_shaped`). `tests/reference_parity.rs`
//! runs zen3-shaped levels against the naive model.

use super::{hint_hash, present_hash, Payload, Requester, Tlb};
use crate::replacement::OrderList;
use tlblab_types::PageSize;

/// Any level `fast_ready` allows: the general fast methods.
pub(crate) const SHAPE_ANY: u8 = 0;
/// One set of 32..=64 ways, LRU, with the hint table and the `present` filter.
pub(crate) const SHAPE_FULLY_ASSOC: u8 = 1;
/// At most 16 ways per set, low-VPN-bit index, LRU.
pub(crate) const SHAPE_SET_ASSOC: u8 = 2;

impl Tlb {
    /// The shape of this level for the shaped methods (a level that is `fast_ready(size)`).
    pub(crate) fn fast_shape(&self, size: PageSize) -> u8 {
        debug_assert!(self.fast_ready(size));
        let ways = self.ways;
        let low_mask = self.index.low_mask();
        match self.repl.lru_order_ref() {
            Some(OrderList::Linked(_))
                if self.sets == 1
                    && (32..=64).contains(&ways)
                    && !self.present.is_empty()
                    && !self.hint.is_empty() =>
            {
                SHAPE_FULLY_ASSOC
            }
            Some(OrderList::Packed(_)) if ways <= 16 && low_mask.is_some() => SHAPE_SET_ASSOC,
            _ => SHAPE_ANY,
        }
    }

    /// Whether this level (of shape `SHAPE_ANY`) is sets of at most 16 ways indexed by low VPN
    /// bits with random replacement: a second level the fast lane's pair loops take with
    /// `RandomSets` (tlb/pair/; the Cortex-A9's main TLB, seed 004 §V).
    pub(crate) fn random_sets(&self) -> bool {
        matches!(self.repl, crate::replacement::Replacement::Random(_))
            && self.ways <= 16
            && self.index.low_mask().is_some()
    }

    #[inline(always)]
    fn set_of_shaped<const S: u8>(&self, vpn: u64) -> usize {
        if S == SHAPE_FULLY_ASSOC {
            0
        } else {
            (vpn & self.low_mask) as usize
        }
    }

    /// `fast_lookup` for a level of shape `S` (`fast_shape`), except for the memo: a shaped
    /// lookup does not consult it (the lane keeps its own, `last_key`) and leaves it empty, as
    /// a shaped fill does. An empty memo is always correct; it only speeds lookups up.
    #[inline(always)]
    pub(crate) fn lookup_shaped<const S: u8>(
        &mut self,
        vpn: u64,
        key: u64,
        req: Requester,
    ) -> Option<usize> {
        if S == SHAPE_ANY {
            return self.fast_lookup(vpn, key, req);
        }
        let mut hinted = false;
        let slot = 'found: {
            if S == SHAPE_FULLY_ASSOC {
                // The filter first (most misses in O(1)), then the hint table (most hits).
                if self.present[present_hash(key) & self.present_mask] == 0 {
                    return None;
                }
                let h = self.hint[hint_hash(key) & self.hint_mask] as usize;
                if h != 0 && self.keys.get(h - 1) == key && self.tags_match(h - 1, req) {
                    hinted = true;
                    break 'found h - 1;
                }
            }
            let base = self.set_of_shaped::<S>(vpn) * self.ways;
            // No key equals INVALID (addresses stay below the format's limit), so empty ways
            // never match and the count of live sizes need not be checked.
            let m = self.keys.matches(base, self.ways, key);
            if m == 0 {
                return None;
            }
            self.first_tag_match(base, m, req)?
        };
        if S == SHAPE_FULLY_ASSOC && !hinted {
            self.point_hint(key, slot);
        }
        let set = self.set_of_shaped::<S>(vpn);
        let base = set * self.ways;
        match self.repl.lru_order() {
            Some(OrderList::Linked(o)) if S == SHAPE_FULLY_ASSOC => {
                o.move_to_front(set, slot - base)
            }
            Some(OrderList::Packed(o)) if S == SHAPE_SET_ASSOC => o.move_to_front(set, slot - base),
            _ => unreachable!("the shape was checked when the lane was built"),
        }
        // The memo may name another way (set by a general lookup of a path sharing the level):
        // no longer the most recent one.
        self.memo_slot = usize::MAX;
        Some(slot)
    }

    /// `fast_fill` for a level of shape `S` (`fast_shape`), leaving the memo empty.
    #[inline(always)]
    pub(crate) fn fill_shaped<const S: u8>(
        &mut self,
        vpn: u64,
        key: u64,
        size_index: usize,
        payload: Payload,
        req: Requester,
    ) -> bool {
        let set = self.set_of_shaped::<S>(vpn);
        if S == SHAPE_ANY || (self.set_valid[set] as usize) < self.ways {
            // A set still filling up (only while the level warms up) takes the general fill.
            return self.fast_fill(vpn, key, size_index, payload, req);
        }
        // A full set: the LRU way is the victim, of the same size (`fast_ready`), so the size
        // counts stay; it becomes the most recent way.
        let w = match self.repl.lru_order() {
            Some(OrderList::Linked(o)) if S == SHAPE_FULLY_ASSOC => o.recycle_oldest(set),
            Some(OrderList::Packed(o)) if S == SHAPE_SET_ASSOC => o.recycle_oldest(set),
            _ => unreachable!("the shape was checked when the lane was built"),
        };
        let slot = set * self.ways + w;
        if S == SHAPE_FULLY_ASSOC {
            self.point_hint(key, slot);
            let old = self.keys.get(slot);
            self.present[present_hash(old) & self.present_mask] -= 1;
            self.present[present_hash(key) & self.present_mask] += 1;
        }
        self.keys.set(slot, key);
        self.payload[slot] = payload;
        self.memo_slot = usize::MAX;
        true
    }
}
