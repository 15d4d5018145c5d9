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

/// The ways of the pair's first level (zen3's L1D, gem5-a7's micro TLBs). Fixed, so a way
/// number read from the replacement order indexes the level's arrays as `w & (FIRST_WAYS - 1)`,
/// without a bounds check: the order only ever holds way numbers below it.
pub(crate) const FIRST_WAYS: usize = 64;
const FIRST_MASK: usize = FIRST_WAYS - 1;

pub(crate) struct FullPair<'a> {
    // The first level: one set of `FIRST_WAYS` ways.
    keys1: &'a mut [u64; FIRST_WAYS],
    fps1: &'a mut [u8],
    payload1: &'a mut [Payload; FIRST_WAYS],
    links1: &'a mut [[u32; 2]; FIRST_WAYS],
    head1: &'a mut u32,
    hint: &'a mut [u32],
    hint_mask: usize,
    present: &'a mut [u16],
    present_mask: usize,
    tags1: TagConfig,
    /// The domain of what a miss in both levels fills.
    domain: Domain,
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
    fn is_full(&self) -> bool {
        self.set_valid.iter().all(|&v| v as usize == self.ways)
    }
}

impl<'a> FullPair<'a> {
    /// Whether `first` over `second`, of the shapes the caller has checked, may be a pair now:
    /// the first level has `FIRST_WAYS` ways, and both are full.
    pub(crate) fn ready(first: &Tlb, second: &Tlb) -> bool {
        first.ways == FIRST_WAYS && first.is_full() && second.is_full()
    }

    /// Borrows `first` and `second` (see the module comment for what the caller has checked;
    /// the first level has `FIRST_WAYS` ways).
    pub(crate) fn new(first: &'a mut Tlb, second: &'a mut Tlb, domain: Domain) -> FullPair<'a> {
        debug_assert!(first.sets == 1 && FullPair::ready(first, second));
        // What the unchecked indexing in `translate` relies on (see the SAFETY comments there):
        // masks that stay inside their tables, a second level of `low_mask + 1` sets.
        assert!(first.ways == FIRST_WAYS && second.ways <= 16);
        assert!(first.hint.len() == first.hint_mask + 1);
        assert!(first.present.len() == first.present_mask + 1);
        assert!(second.sets == second.low_mask as usize + 1);
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
        assert!(order2.len() == second.sets && keys2.len() == second.sets * ways2);
        assert!(second.payload.len() == keys2.len() && fps2.len() >= keys2.len() + 15);
        let whole = "the first level has FIRST_WAYS slots (asserted above)";
        FullPair {
            keys1: keys1.try_into().expect(whole),
            fps1,
            payload1: (&mut first.payload[..]).try_into().expect(whole),
            links1: links1.try_into().expect(whole),
            head1,
            hint: &mut first.hint,
            hint_mask: first.hint_mask,
            present: &mut first.present,
            present_mask: first.present_mask,
            tags1: first.config.tags,
            domain,
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
    /// the second, then (a miss in both) the translation `frame` in the domain `new` was
    /// given; fills the levels
    /// above the one that hit. Returns where it settled (`SETTLED_*`) and the frame.
    #[inline(always)]
    pub(crate) fn translate(
        &mut self,
        vpn: u64,
        key: u64,
        req: Requester,
        frame: Pfn,
    ) -> (usize, Pfn) {
        if *self.present_count(key) != 0 {
            if let Some(w) = self.find_first(key, req) {
                linked_to_front(self.links1, self.head1, w);
                return (SETTLED_FIRST, self.payload1[w].pfn);
            }
        }
        let set = (vpn & self.low_mask2) as usize;
        let base = set * self.ways2;
        let (settled, payload) = match self.find_second(base, key, req) {
            Some(w) => {
                packed_to_front(self.order_of(set), w);
                let found = *self.payload2_at(base, w);
                (
                    SETTLED_SECOND,
                    Payload::filled(found.pfn, found.domain, req),
                )
            }
            None => {
                let payload = Payload::filled(frame, self.domain, req);
                let ways2 = self.ways2;
                // Checked: a way number read from the order, not derived from a mask.
                let slot = base + packed_recycle_oldest(self.order_of(set), ways2);
                self.keys2[slot] = key;
                self.fps2[slot] = fingerprint(key);
                self.payload2[slot] = payload;
                (SETTLED_WALK, payload)
            }
        };
        // The first level's fill: its least recently used way, which the hint now names.
        let w = linked_recycle_oldest(self.links1, self.head1) & FIRST_MASK;
        *self.hint_slot(key) = w as u32 + 1;
        let old = self.keys1[w];
        *self.present_count(old) -= 1;
        *self.present_count(key) += 1;
        self.keys1[w] = key;
        self.fps1[w] = fingerprint(key);
        self.payload1[w] = payload;
        (settled, payload.pfn)
    }

    /// The first level's way holding `key` for `req`: through the hint table, else a search
    /// (which then points the hint at it), as `lookup_shaped` finds it.
    #[inline(always)]
    fn find_first(&mut self, key: u64, req: Requester) -> Option<usize> {
        // Hints name slots of this level (below FIRST_WAYS); the mask only spares the check.
        let hinted = *self.hint_slot(key) as usize;
        let w = hinted.wrapping_sub(1) & FIRST_MASK;
        if hinted != 0 && self.keys1[w] == key && tags_allow(self.tags1, &self.payload1[w], req) {
            return Some(w);
        }
        let [mut candidates] = fingerprint_matches_in(self.fps1, 0, FIRST_WAYS, [fingerprint(key)]);
        while candidates != 0 {
            let w = candidates.trailing_zeros() as usize & FIRST_MASK;
            candidates &= candidates - 1;
            if self.keys1[w] == key && tags_allow(self.tags1, &self.payload1[w], req) {
                *self.hint_slot(key) = w as u32 + 1;
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
            if *self.key2_at(base, w) == key
                && tags_allow(self.tags2, self.payload2_at(base, w), req)
            {
                return Some(w);
            }
        }
        None
    }

    // The accessors below index without bounds checks, on what `new` asserted; each index is
    // a mask of its table's length or inside a set that is.

    /// The first level's `present` count of `key`'s bucket.
    #[inline(always)]
    fn present_count(&mut self, key: u64) -> &mut u16 {
        let i = present_hash(key) & self.present_mask;
        // SAFETY: i ≤ present_mask and present.len() == present_mask + 1 (`new`).
        unsafe { self.present.get_unchecked_mut(i) }
    }

    /// The first level's hint for `key`.
    #[inline(always)]
    fn hint_slot(&mut self, key: u64) -> &mut u32 {
        let i = hint_hash(key) & self.hint_mask;
        // SAFETY: i ≤ hint_mask and hint.len() == hint_mask + 1 (`new`).
        unsafe { self.hint.get_unchecked_mut(i) }
    }

    /// The packed LRU order of the second level's set `set` (`vpn & low_mask2`).
    #[inline(always)]
    fn order_of(&mut self, set: usize) -> &mut u64 {
        debug_assert!(set <= self.low_mask2 as usize);
        // SAFETY: callers pass vpn & low_mask2 ≤ low_mask2, and order2.len() == sets ==
        // low_mask2 + 1 (`new`).
        unsafe { self.order2.get_unchecked_mut(set) }
    }

    /// The key of way `w` (< ways2, from a fingerprint match) of the second-level set at `base`.
    #[inline(always)]
    fn key2_at(&self, base: usize, w: usize) -> &u64 {
        debug_assert!(w < self.ways2 && base + w < self.keys2.len());
        // SAFETY: base = set × ways2 with set < sets (`order_of`), w < ways2 (fingerprint
        // matches are masked to the set's ways), and keys2.len() == sets × ways2 (`new`).
        unsafe { self.keys2.get_unchecked(base + w) }
    }

    /// The payload of way `w` (< ways2) of the second-level set at `base`.
    #[inline(always)]
    fn payload2_at(&self, base: usize, w: usize) -> &Payload {
        debug_assert!(w < self.ways2 && base + w < self.payload2.len());
        // SAFETY: as `key2_at`; payload2.len() == keys2.len() (`new`).
        unsafe { self.payload2.get_unchecked(base + w) }
    }
}
