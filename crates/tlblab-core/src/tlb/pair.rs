//! The zen3-shaped data path of a TLB-only run, as one structure: a fully associative first
//! level (`SHAPE_FULLY_ASSOC`) over a set-associative second level (`SHAPE_SET_ASSOC`), both
//! full, borrowed for a stretch of references (`system/fast_lane.rs`, `FastLane::run_pair`).
//!
//! Why it exists: on a stream that misses both levels (random, strided, pointer chases) the
//! shaped calls of tlb/fast.rs spend most of their instructions reaching the state, not
//! updating it: every call goes from `System` to the level to each of its vectors again,
//! bounds-checks every index and asks whether the set is full. `FullPair` takes the slices of
//! both levels once, so a reference is the few loads and stores the model needs (measured with
//! callgrind on random:pages=262144, TLB-only: see `FastLane::run_pair`).
//!
//! What it relies on, checked by the caller (`FastLane`): both levels are `fast_ready` for the
//! lane's page size, of those two shapes, and full (`Tlb::is_full`), so every fill replaces the
//! least recently used way of its set with an entry of the same size, and nothing invalidates
//! entries while the pair is borrowed. It has the effects of `lookup_shaped` and `fill_shaped`
//! on entries, replacement order, `present` counts and hint table, and leaves both memos empty,
//! as they do. `tests/reference_parity.rs` runs it against the naive model.

use super::{hint_hash, present_hash, tags_allow, Payload, Requester, TagConfig, Tlb};
use crate::replacement::order::{
    linked_recycle_oldest, linked_to_front, packed_recycle_oldest, packed_to_front,
};
use crate::replacement::OrderList;
use crate::tags::{fingerprint, fingerprint_matches_in};
use tlblab_types::{Domain, Pfn};

/// Where `FullPair::translate` settled a reference.
pub(crate) const SETTLED_FIRST: usize = 0;
pub(crate) const SETTLED_SECOND: usize = 1;
/// Missed both levels: a walk (TLB-only: the walker's fixed latency).
pub(crate) const SETTLED_WALK: usize = 2;

pub(crate) struct FullPair<'a> {
    // The first level: one set of `ways1` ways.
    keys1: &'a mut [u64],
    fps1: &'a mut [u8],
    payload1: &'a mut [Payload],
    links1: &'a mut [[u32; 2]],
    head1: &'a mut u32,
    hint: &'a mut [u32],
    hint_mask: usize,
    present: &'a mut [u16],
    present_mask: usize,
    ways1: usize,
    tags1: TagConfig,
    // The second level: sets of `ways2` ways, indexed by the low VPN bits `low_mask2`.
    keys2: &'a mut [u64],
    fps2: &'a mut [u8],
    payload2: &'a mut [Payload],
    order2: &'a mut [u64],
    ways2: usize,
    low_mask2: u64,
    tags2: TagConfig,
}

impl Tlb {
    /// Every set holds `ways` valid entries.
    pub(crate) fn is_full(&self) -> bool {
        self.set_valid.iter().all(|&v| v as usize == self.ways)
    }
}

impl<'a> FullPair<'a> {
    /// Borrows `first` and `second` (see the module comment for what the caller has checked).
    pub(crate) fn new(first: &'a mut Tlb, second: &'a mut Tlb) -> FullPair<'a> {
        debug_assert!(first.sets == 1 && first.is_full() && second.is_full());
        // Neither level's memo names the most recent way once the pair has run.
        first.memo_slot = usize::MAX;
        second.memo_slot = usize::MAX;
        let (keys1, fps1) = first.keys.parts_mut();
        let (links1, head1) = match first.repl.lru_order() {
            Some(OrderList::Linked(o)) => o.first_set_mut(),
            _ => unreachable!("the first level's shape was checked (SHAPE_FULLY_ASSOC)"),
        };
        let (keys2, fps2) = second.keys.parts_mut();
        let (order2, ways2) = match second.repl.lru_order() {
            Some(OrderList::Packed(o)) => o.words_mut(),
            _ => unreachable!("the second level's shape was checked (SHAPE_SET_ASSOC)"),
        };
        FullPair {
            keys1,
            fps1,
            payload1: &mut first.payload,
            links1,
            head1,
            hint: &mut first.hint,
            hint_mask: first.hint_mask,
            present: &mut first.present,
            present_mask: first.present_mask,
            ways1: first.ways,
            tags1: first.config.tags,
            keys2,
            fps2,
            payload2: &mut second.payload,
            order2,
            ways2,
            low_mask2: second.low_mask,
            tags2: second.config.tags,
        }
    }

    /// One reference to page `vpn` (`key = pack(vpn, size)`) by `req`: the first level, then
    /// the second, then (a miss in both) the translation `frame`/`domain`; fills the levels
    /// above the one that hit. Returns where it settled (`SETTLED_*`) and the frame.
    #[inline(always)]
    pub(crate) fn translate(
        &mut self,
        vpn: u64,
        key: u64,
        req: Requester,
        frame: Pfn,
        domain: Domain,
    ) -> (usize, Pfn) {
        let bucket = present_hash(key) & self.present_mask;
        if self.present[bucket] != 0 {
            if let Some(w) = self.find_first(key, req) {
                linked_to_front(self.links1, self.head1, w);
                return (SETTLED_FIRST, self.payload1[w].pfn);
            }
        }
        let set = (vpn & self.low_mask2) as usize;
        let base = set * self.ways2;
        let (settled, payload) = match self.find_second(base, key, req) {
            Some(w) => {
                packed_to_front(&mut self.order2[set], w);
                let found = self.payload2[base + w];
                (
                    SETTLED_SECOND,
                    Payload::filled(found.pfn, found.domain, req),
                )
            }
            None => {
                let payload = Payload::filled(frame, domain, req);
                let slot = base + packed_recycle_oldest(&mut self.order2[set], self.ways2);
                self.keys2[slot] = key;
                self.fps2[slot] = fingerprint(key);
                self.payload2[slot] = payload;
                (SETTLED_WALK, payload)
            }
        };
        // The first level's fill: its least recently used way, which the hint now names.
        let w = linked_recycle_oldest(self.links1, self.head1);
        self.hint[hint_hash(key) & self.hint_mask] = w as u32 + 1;
        let old = self.keys1[w];
        self.present[present_hash(old) & self.present_mask] -= 1;
        self.present[bucket] += 1;
        self.keys1[w] = key;
        self.fps1[w] = fingerprint(key);
        self.payload1[w] = payload;
        (settled, payload.pfn)
    }

    /// The first level's way holding `key` for `req`: through the hint table, else a search
    /// (which then points the hint at it), as `lookup_shaped` finds it.
    #[inline(always)]
    fn find_first(&mut self, key: u64, req: Requester) -> Option<usize> {
        let h = hint_hash(key) & self.hint_mask;
        let hinted = self.hint[h] as usize;
        if hinted != 0
            && self.keys1[hinted - 1] == key
            && tags_allow(self.tags1, &self.payload1[hinted - 1], req)
        {
            return Some(hinted - 1);
        }
        let [mut candidates] = fingerprint_matches_in(self.fps1, 0, self.ways1, [fingerprint(key)]);
        while candidates != 0 {
            let w = candidates.trailing_zeros() as usize;
            candidates &= candidates - 1;
            if self.keys1[w] == key && tags_allow(self.tags1, &self.payload1[w], req) {
                self.hint[h] = w as u32 + 1;
                return Some(w);
            }
        }
        None
    }

    /// The way of the second-level set at `base` holding `key` for `req`.
    #[inline(always)]
    fn find_second(&self, base: usize, key: u64, req: Requester) -> Option<usize> {
        let [mut candidates] =
            fingerprint_matches_in(self.fps2, base, self.ways2, [fingerprint(key)]);
        while candidates != 0 {
            let w = candidates.trailing_zeros() as usize;
            candidates &= candidates - 1;
            if self.keys2[base + w] == key && tags_allow(self.tags2, &self.payload2[base + w], req)
            {
                return Some(w);
            }
        }
        None
    }
}
