//! A two-level data path as one structure: a fully associative first level
//! (`SHAPE_FULLY_ASSOC`) over a set-associative second level (`SHAPE_SET_ASSOC`), both full,
//! borrowed for a stretch of references (`system/fast_lane.rs`, `FastLane::run_pair`).
//!
//! Why it exists: on a stream that misses both levels (random, strided, pointer chases) the
//! shaped calls of tlb/fast.rs spend most of their instructions reaching the state, not
//! updating it: every call goes from `System` to the level to each of its vectors again,
//! bounds-checks every index and asks whether the set is full. `FullPair` takes the slices of
//! both levels once, so a reference is the few loads and stores the model needs (measured with
//! callgrind on random:pages=262144, TLB-only: see `FastLane::run_pair`).
//!
//! It is compiled per geometry, `FullPair<W1, W2>`: a first level of `W1` ways over sets of
//! `W2` ways. With the sizes fixed, way numbers and hash buckets index fixed-size arrays
//! through masks, without bounds checks or registers for the sizes (measured on zen3's
//! geometry: 149 → 136 instructions per all-miss reference). `FastLane::pair_loops` lists the
//! geometries compiled (zen3's, 64 over 16, and its neighbours in a sweep: 32, 48 or 64 ways
//! over sets of 2, 4, 8 or 16); other geometries of the two shapes keep the shaped calls.
//!
//! What it relies on, checked by the caller (`FastLane`): both levels are `fast_ready` for the
//! lane's page size, of those two shapes, and `FullPair::ready` (this geometry, full), so
//! every fill replaces the least recently used way of its set with an entry of the same size,
//! and nothing invalidates entries while the pair is borrowed. It has the effects of `lookup_shaped` and `fill_shaped`
//! on entries, replacement order, `present` counts and hint table, and leaves both memos empty,
//! as they do. `tests/reference_parity.rs` runs it against the naive model.

use super::{hint_hash, hint_len, present_hash, present_len, tags_allow};
use super::{Payload, Requester, TagConfig, Tlb};
use crate::replacement::order::{
    linked_recycle_oldest, linked_to_front, packed_recycle_oldest, packed_to_front,
};
use crate::replacement::OrderList;
use crate::tags::{fingerprint, fingerprint_matches_in, row_matches};
use tlblab_types::{Domain, Pfn};

/// Where `FullPair::translate` settled a reference.
pub(crate) const SETTLED_FIRST: usize = 0;
pub(crate) const SETTLED_SECOND: usize = 1;
/// Missed both levels: a walk (TLB-only: the walker's fixed latency).
pub(crate) const SETTLED_WALK: usize = 2;

/// The two data levels, borrowed for a stretch of references (see the module comment): a
/// first level of `W1` ways in one set over a second level of `W2`-way sets.
pub(crate) struct FullPair<'a, const W1: usize, const W2: usize> {
    // The first level: one set of `W1` ways. A way number read from its order or its hints
    // indexes as `w % W1`: they only ever hold way numbers below it, and the remainder spares
    // the bounds check.
    keys1: &'a mut [u64; W1],
    fps1: &'a mut [u8; W1],
    payload1: &'a mut [Payload; W1],
    links1: &'a mut [[u32; 2]; W1],
    head1: &'a mut u32,
    // `Self::HINT_LEN` and `Self::PRESENT_LEN` long (`new` asserts it): indexed unchecked
    // through `% LEN`, a mask.
    hint: &'a mut [u32],
    present: &'a mut [u16],
    tags1: TagConfig,
    /// The domain of what a miss in both levels fills.
    domain: Domain,
    // The second level: sets of `W2` ways, set `vpn & low_mask2`; every vector has one
    // element per set (`new` asserts it), so a set number indexes them unchecked.
    keys2: &'a mut [[u64; W2]],
    // The fingerprints with their padding (at least 15 bytes past the last set, `TagArray`):
    // set `set`'s row starts at `set * W2`, and a 16-byte read from there stays in bounds.
    fps2: &'a mut [u8],
    payload2: &'a mut [[Payload; W2]],
    order2: &'a mut [u64],
    low_mask2: u64,
    tags2: TagConfig,
}

impl Tlb {
    /// Every set holds `ways` valid entries.
    fn is_full(&self) -> bool {
        self.set_valid.iter().all(|&v| v as usize == self.ways)
    }
}

/// Whether `first` over `second`, of the shapes `FastLane` has checked, may be a pair now:
/// both full. (Their geometry picked the copy of the pair loops, `FastLane::pair_loops`.)
pub(crate) fn pair_ready(first: &Tlb, second: &Tlb) -> bool {
    first.is_full() && second.is_full()
}

impl<'a, const W1: usize, const W2: usize> FullPair<'a, W1, W2> {
    /// The first level's hint table and `present` filter (`Tlb::new`).
    const HINT_LEN: usize = hint_len(W1);
    const PRESENT_LEN: usize = present_len(W1);

    /// Whether `first` over `second` has this pair's geometry (`W1` ways in one set over sets
    /// of `W2` ways).
    pub(crate) fn fits(first: &Tlb, second: &Tlb) -> bool {
        first.sets == 1 && first.ways == W1 && second.ways == W2
    }

    /// Borrows `first` and `second` (`fits`, `pair_ready`, and the caller's shape checks).
    pub(crate) fn new(first: &'a mut Tlb, second: &'a mut Tlb, domain: Domain) -> Self {
        debug_assert!(Self::fits(first, second) && pair_ready(first, second));
        // Neither level's memo names the most recent way once the pair has run.
        first.memo_slot = usize::MAX;
        second.memo_slot = usize::MAX;
        let sets2 = second.sets;
        // What the unchecked set indexing in `translate` relies on: `low_mask + 1` sets.
        assert!(sets2 == second.low_mask as usize + 1);
        let geometry = "FullPair::fits checked the geometry";
        let (keys1, fps1) = first.keys.parts_mut();
        let (links1, head1) = match first.repl.lru_order() {
            Some(OrderList::Linked(o)) => o.first_set_mut(),
            _ => unreachable!("the first level's shape was checked (SHAPE_FULLY_ASSOC)"),
        };
        let (keys2, fps2) = second.keys.parts_mut();
        let order2 = match second.repl.lru_order() {
            Some(OrderList::Packed(o)) => o.words_mut(),
            _ => unreachable!("the second level's shape was checked (SHAPE_SET_ASSOC)"),
        };
        let (keys2, []) = keys2.as_chunks_mut() else {
            unreachable!("{geometry}")
        };
        let (payload2, []) = second.payload.as_chunks_mut() else {
            unreachable!("{geometry}")
        };
        assert!(keys2.len() == sets2 && payload2.len() == sets2 && order2.len() == sets2);
        // What `set_rows`' 16-byte fingerprint rows rely on.
        assert!(W2 <= 16 && fps2.len() >= (sets2 - 1) * W2 + 16);
        // What the unchecked indexing of the hint table and the filter relies on.
        assert!(first.hint.len() == Self::HINT_LEN && first.present.len() == Self::PRESENT_LEN);
        assert!(Self::HINT_LEN.is_power_of_two() && Self::PRESENT_LEN.is_power_of_two());
        FullPair {
            keys1: keys1.try_into().expect(geometry),
            fps1: (&mut fps1[..W1]).try_into().expect(geometry),
            payload1: (&mut first.payload[..]).try_into().expect(geometry),
            links1: links1.try_into().expect(geometry),
            head1,
            hint: &mut first.hint[..],
            present: &mut first.present[..],
            tags1: first.config.tags,
            domain,
            keys2,
            fps2,
            payload2,
            order2,
            low_mask2: second.low_mask,
            tags2: second.config.tags,
        }
    }

    /// One reference to page `vpn` (`key = pack(vpn, size)`) by `req`: the first level, then
    /// the second, then (a miss in both) the translation `frame` in the domain `new` was
    /// given; fills the levels above the one that hit. Returns where it settled (`SETTLED_*`)
    /// and the frame. (A TLB-only run: the translation is known before the levels are looked
    /// up. With walks, `lookup_first`, `lookup_second` and `fill` take the steps one by one.)
    #[inline(always)]
    pub(crate) fn translate(
        &mut self,
        vpn: u64,
        key: u64,
        req: Requester,
        frame: Pfn,
    ) -> (usize, Pfn) {
        if let Some(pfn) = self.lookup_first(key, req) {
            return (SETTLED_FIRST, pfn);
        }
        // The first level's bookkeeping first, its payload once the second level has settled
        // the reference (measured: 12% faster and 13 instructions fewer than all after it).
        let w1 = self.replace_first(key);
        let set = (vpn & self.low_mask2) as usize;
        let (settled, payload) = match self.lookup_in_set(set, key, req) {
            Some(payload) => (SETTLED_SECOND, payload),
            None => {
                let payload = Payload::filled(frame, self.domain, req);
                self.replace_in_set(set, key, payload);
                (SETTLED_WALK, payload)
            }
        };
        self.payload1[w1] = payload;
        (settled, payload.pfn)
    }

    /// The first level's lookup: the frame of its entry of `key` for `req`, made the most
    /// recent, or None.
    #[inline(always)]
    pub(crate) fn lookup_first(&mut self, key: u64, req: Requester) -> Option<Pfn> {
        if *self.present_at(present_hash(key)) == 0 {
            return None;
        }
        let w = self.find_first(key, req)?;
        linked_to_front(self.links1, self.head1, w);
        Some(self.payload1[w].pfn)
    }

    /// The second level's lookup (after a first-level miss): what its entry of `key` for `req`
    /// fills above it, the entry made the most recent, or None.
    #[inline(always)]
    pub(crate) fn lookup_second(&mut self, vpn: u64, key: u64, req: Requester) -> Option<Payload> {
        self.lookup_in_set((vpn & self.low_mask2) as usize, key, req)
    }

    /// The fills after a first-level miss: `payload` under `key` in the first level and, when
    /// the second level missed too (`second`), in the second.
    #[inline(always)]
    pub(crate) fn fill(&mut self, vpn: u64, key: u64, payload: Payload, second: bool) {
        let w1 = self.replace_first(key);
        self.payload1[w1] = payload;
        if second {
            self.replace_in_set((vpn & self.low_mask2) as usize, key, payload);
        }
    }

    /// The first level's least recently used way, made the most recent and given `key` (its
    /// hint, `present` counts and fingerprint follow); the caller writes its payload.
    #[inline(always)]
    fn replace_first(&mut self, key: u64) -> usize {
        let w = linked_recycle_oldest(self.links1, self.head1) % W1;
        *self.hint_at(hint_hash(key)) = w as u32 + 1;
        let old = self.keys1[w];
        *self.present_at(present_hash(old)) -= 1;
        *self.present_at(present_hash(key)) += 1;
        self.keys1[w] = key;
        self.fps1[w] = fingerprint(key);
        w
    }

    /// The rows of the second level's set `set` (`vpn & low_mask2`): keys, fingerprints,
    /// payloads, order.
    #[inline(always)]
    #[allow(clippy::type_complexity)]
    fn set_rows(
        &mut self,
        set: usize,
    ) -> (&mut [u64; W2], &mut [u8; 16], &mut [Payload; W2], &mut u64) {
        debug_assert!(set <= self.low_mask2 as usize);
        // SAFETY: callers pass vpn & low_mask2 ≤ low_mask2 < sets, the length of each
        // second-level vector (`new`); the fingerprint row's 16 bytes from set * W2 end at
        // most at (sets - 1) * W2 + 16, within `fps2` (`new`). (For W2 < 16 the row runs into
        // the next sets' fingerprints: only its first W2 are read as this set's, or written.)
        unsafe {
            (
                self.keys2.get_unchecked_mut(set),
                &mut *self.fps2.as_mut_ptr().add(set * W2).cast::<[u8; 16]>(),
                self.payload2.get_unchecked_mut(set),
                self.order2.get_unchecked_mut(set),
            )
        }
    }

    /// `lookup_second` in set `set`.
    #[inline(always)]
    fn lookup_in_set(&mut self, set: usize, key: u64, req: Requester) -> Option<Payload> {
        let tags = self.tags2;
        let (keys, fps, payloads, order) = self.set_rows(set);
        let w = find_in_set(keys, fps, payloads, tags, key, req)?;
        packed_to_front(order, w);
        let found = payloads[w];
        Some(Payload::filled(found.pfn, found.domain, req))
    }

    /// Set `set`'s least recently used way, made the most recent and given `key`, `payload`.
    #[inline(always)]
    fn replace_in_set(&mut self, set: usize, key: u64, payload: Payload) {
        let (keys, fps, payloads, order) = self.set_rows(set);
        let w = packed_recycle_oldest(order, W2) % W2;
        keys[w] = key;
        fps[w] = fingerprint(key);
        payloads[w] = payload;
    }

    /// The first level's way holding `key` for `req`: through the hint table, else a search
    /// (which then points the hint at it), as `lookup_shaped` finds it.
    #[inline(always)]
    fn find_first(&mut self, key: u64, req: Requester) -> Option<usize> {
        let h = hint_hash(key);
        let hinted = *self.hint_at(h) as usize;
        let w = hinted.wrapping_sub(1) % W1;
        if hinted != 0 && self.keys1[w] == key && tags_allow(self.tags1, &self.payload1[w], req) {
            return Some(w);
        }
        let [mut candidates] = fingerprint_matches_in(self.fps1, 0, W1, [fingerprint(key)]);
        while candidates != 0 {
            let w = candidates.trailing_zeros() as usize % W1;
            candidates &= candidates - 1;
            if self.keys1[w] == key && tags_allow(self.tags1, &self.payload1[w], req) {
                *self.hint_at(h) = w as u32 + 1;
                return Some(w);
            }
        }
        None
    }

    /// The hint-table bucket of hash `h`.
    #[inline(always)]
    fn hint_at(&mut self, h: usize) -> &mut u32 {
        // SAFETY: `new` asserts that the table is HINT_LEN long, a power of two, so the
        // remainder (a mask) is in bounds.
        unsafe { self.hint.get_unchecked_mut(h % Self::HINT_LEN) }
    }

    /// The `present` count of hash `h`.
    #[inline(always)]
    fn present_at(&mut self, h: usize) -> &mut u16 {
        // SAFETY: as `hint_at`, for PRESENT_LEN.
        unsafe { self.present.get_unchecked_mut(h % Self::PRESENT_LEN) }
    }
}

/// The way of a second-level set holding `key` for `req`.
#[inline(always)]
fn find_in_set<const W2: usize>(
    keys: &[u64; W2],
    fps: &[u8; 16],
    payloads: &[Payload; W2],
    tags: TagConfig,
    key: u64,
    req: Requester,
) -> Option<usize> {
    // Ways past W2 belong to the next sets: masked off (W2 ≤ 16).
    let mut candidates = row_matches(fps, fingerprint(key)) & ((1u64 << W2) - 1);
    while candidates != 0 {
        let w = candidates.trailing_zeros() as usize % W2;
        candidates &= candidates - 1;
        if keys[w] == key && tags_allow(tags, &payloads[w], req) {
            return Some(w);
        }
    }
    None
}
