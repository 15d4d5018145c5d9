//! A two-level data path as one structure: a first level (`SHAPE_FULLY_ASSOC` or
//! `SHAPE_SET_ASSOC`) over a set-associative second level (`SHAPE_SET_ASSOC`), borrowed for a stretch of references (`system/fast_lane.rs`, `FastLane::run_pair`).
//!
//! Why it exists: on a stream that misses both levels (random, strided, pointer chases) the
//! shaped calls of tlb/fast.rs spend most of their instructions reaching the state, not
//! updating it: every call goes from `System` to the level to each of its vectors again,
//! bounds-checks every index and asks whether the set is full. `FullPair` takes the slices of
//! both levels once, so a reference is the few loads and stores the model needs (measured with
//! callgrind on random:pages=262144, TLB-only: see `FastLane::run_pair`).
//!
//! It is compiled per geometry, `FullPair<F, W2, O>`: a first level `F` (`FullyAssoc<W1, S>`,
//! one set of `W1` ways, or `SetAssoc<W1>`, sets of `W1` ways) over sets of `W2` ways replaced
//! by `O` (`LruSets`, or `RandomSets` for the Cortex-A9's random main TLB). With the
//! sizes fixed, way numbers and hash buckets index fixed-size arrays through masks, without
//! bounds checks or registers for the sizes (measured on zen3's geometry: 149 → 136
//! instructions per all-miss reference). `FastLane::pair_loops` lists the geometries
//! compiled (zen3's, 64 fully associative over 16, and its neighbours in a sweep; an Intel-like
//! 4-way first level over 4..16-way sets; the Cortex-A7's 10-entry micro TLB over 2 or 4 ways);
//! other geometries of the two shapes keep the shaped calls. `Single<F>` is the same for a data
//! path of one level (the SA-1100's, gem5's); both are `DataPath`s. A fully associative first
//! level is borrowed in place (`InPlace`), or, for a stretch `FastLane` expects to be long,
//! staged: its entries and order copied into one block and back (`Staged`).
//!
//! What it relies on, checked by the caller (`FastLane`): both levels are `fast_ready` for the
//! lane's page size, of those shapes and this geometry (`FullPair::fits`), and ready
//! (`pair_ready`): full, or LRU, whose invalid ways are always the oldest of their set, the
//! lowest the oldest (`Tlb::invalidate_slot`), so that every fill replaces the least recently
//! used way of its set, as the general fill of a set with room takes its lowest invalid way
//! (`Room` then counts the fill into the set's and page size's valid entries, and it evicts
//! nothing); and nothing invalidates entries while the pair is borrowed. Over full levels a
//! TLB-only loop checks for no invalid way (`DataPath::translate`'s `ROOM`). It has the
//! effects of `lookup_shaped` and `fill_shaped` on entries, replacement order, `present` counts
//! and hint table, and leaves both memos empty, as they do. `tests/reference_parity.rs` runs it
//! against the naive model.

use super::{hint_len, present_len, tags_allow, KeyHash, INVALID};
use super::{Payload, Requester, TagConfig, Tlb};
use crate::replacement::order::{
    linked_recycle_oldest_of, linked_to_front, packed_recycle_oldest, packed_to_front,
};
use crate::replacement::{OrderList, RandomRepl, Replacement};
use crate::tags::{fingerprint, fingerprint_matches_in, row_matches};
use std::marker::PhantomData;
use tlblab_types::Pfn;

mod fully;
mod sets;

pub(crate) use fully::*;
pub(crate) use sets::*;

/// Where `FullPair::translate` settled a reference.
pub(crate) const SETTLED_FIRST: usize = 0;
pub(crate) const SETTLED_SECOND: usize = 1;
/// Missed both levels: a walk (TLB-only: the walker's fixed latency).
pub(crate) const SETTLED_WALK: usize = 2;

impl Tlb {
    /// Every set holds `ways` valid entries.
    pub(crate) fn is_full(&self) -> bool {
        self.set_valid.iter().all(|&v| v as usize == self.ways)
    }
}

/// Whether `first` over `second`, of the shapes and the geometry `FastLane` has checked, may
/// be a pair now: each level full, or one whose fill of a set with room takes its oldest way
/// (`Tlb::fills_oldest_first`: LRU), as a pair fills every set.
pub(crate) fn pair_ready(first: &Tlb, second: &Tlb) -> bool {
    level_ready(first) && level_ready(second)
}

/// `pair_ready` for one level (a `Single`'s).
pub(crate) fn level_ready(tlb: &Tlb) -> bool {
    tlb.fills_oldest_first() || tlb.is_full()
}

/// What a level's fills into invalid ways change besides the way itself, borrowed with the
/// level: its valid-entry counts, per set and per page size. Such a fill evicts nothing; the
/// fast lane counts them (`fills_into_room`) to count only the others as evictions.
pub(crate) struct Room<'a> {
    set_valid: &'a mut [u32],
    size_count: &'a mut [u32; 6],
    live_sizes: &'a mut u8,
    /// The level's valid entries at the borrow: the fills into room are the count now less
    /// this (nothing in a pair invalidates an entry), not a count kept in the loop.
    valid_at_borrow: u32,
}

impl<'a> Room<'a> {
    fn borrow(
        set_valid: &'a mut [u32],
        size_count: &'a mut [u32; 6],
        live_sizes: &'a mut u8,
    ) -> Self {
        let valid_at_borrow = size_count.iter().sum();
        Room {
            set_valid,
            size_count,
            live_sizes,
            valid_at_borrow,
        }
    }

    /// Fills into invalid ways since the borrow.
    fn filled(&self) -> u64 {
        (self.size_count.iter().sum::<u32>() - self.valid_at_borrow) as u64
    }

    /// A way of `set` that held no entry now holds `key`: the set and the key's page size
    /// hold one more (`Tlb::insert`'s bookkeeping of a set with room).
    #[inline(always)]
    fn fill_room(&mut self, set: usize, key: u64) {
        count_room_fill(
            &mut self.set_valid[set],
            self.size_count,
            self.live_sizes,
            key,
        );
    }
}

/// `Room::fill_room`'s counts, out of line (a level fills its room once) and given the counts
/// themselves rather than the `Room`: the level's fields then stay in registers in the pair
/// loops (a `&mut Room` passed out of line kept the whole borrowed pair in memory: +22
/// instructions per all-miss reference).
#[cold]
#[inline(never)]
fn count_room_fill(set_valid: &mut u32, size_count: &mut [u32; 6], live_sizes: &mut u8, key: u64) {
    let size = (key & 7) as usize;
    *set_valid += 1;
    size_count[size] += 1;
    *live_sizes |= 1 << size;
}

/// The first level of a pair, borrowed: its lookup, and its replacement on a miss in two
/// steps (the bookkeeping first, the payload once the second level has settled the reference).
pub(crate) trait FirstLevel<'a>: Sized {
    /// Whether `tlb` (of this kind's shape) has this level's geometry.
    fn fits(tlb: &Tlb) -> bool;
    /// Borrows `tlb` (`fits`, full).
    fn borrow(tlb: &'a mut Tlb) -> Self;
    /// The frame of the entry of `key` (page `vpn`, `h = KeyHash::of(key)`) for `req`, made
    /// the most recent, or None.
    fn lookup(&mut self, vpn: u64, key: u64, h: KeyHash, req: Requester) -> Option<Pfn>;
    /// The least recently used way of `vpn`'s set, made the most recent and given `key`
    /// (`h = KeyHash::of(key)`); its slot, for `set_payload`.
    /// `ROOM`: the way may be invalid (else the caller knows the level is full).
    fn replace<const ROOM: bool>(&mut self, vpn: u64, key: u64, h: KeyHash) -> usize;
    /// The payload of the way `replace` returned.
    fn set_payload(&mut self, slot: usize, payload: Payload);
    /// How many of the borrow's fills took an invalid way (evicting nothing).
    fn fills_into_room(&self) -> u64;

    /// `replace` and `set_payload` in one step, for a fill whose payload is known.
    #[inline(always)]
    fn fill(&mut self, vpn: u64, key: u64, h: KeyHash, payload: Payload) {
        let slot = self.replace::<true>(vpn, key, h);
        self.set_payload(slot, payload);
    }
}

/// A first level's kind without the borrow, naming a `FirstLevel` in `FastLane`'s loops:
/// `Fa<W>` (`FullyAssoc<W>`) or `Sa<W>` (`SetAssoc<W>`).
pub(crate) trait FirstKind {
    type Level<'a>: FirstLevel<'a>;
    /// The level staged for a long stretch (`Staged`); `Level` again for a kind never staged.
    type Staged<'a>: FirstLevel<'a>;
    /// Whether `Staged` differs from `Level`.
    const STAGES: bool;
}

pub(crate) struct Fa<const W: usize>;
pub(crate) struct Sa<const W: usize>;

impl<const W: usize> FirstKind for Fa<W> {
    type Level<'a> = FullyAssoc<'a, W, InPlace<'a, W>>;
    type Staged<'a> = FullyAssoc<'a, W, Staged<'a, W>>;
    const STAGES: bool = true;
}

impl<const W: usize> FirstKind for Sa<W> {
    type Level<'a> = SetAssoc<'a, W>;
    type Staged<'a> = SetAssoc<'a, W>;
    const STAGES: bool = false;
}

/// A data path borrowed for a stretch of references: a `FullPair` (two levels) or a `Single`
/// (one). The fast lane's pair loops run on either (`FastLane::run_pair`).
pub(crate) trait DataPath<'a>: Sized {
    /// The path's TLB levels (a walk is settled at index `LEVELS`).
    const LEVELS: usize;
    /// Borrows the path's first level and, for a pair, its second (`second` is `Some` exactly
    /// when `LEVELS` is 2), of the geometry the caller picked this type for, full; `translate`
    /// fills entries with the tags `walk_tags` (`Payload::tags_word` of `Payload::filled`).
    fn borrow(first: &'a mut Tlb, second: Option<&'a mut Tlb>, walk_tags: u64) -> Self;
    /// One TLB-only reference (`FullPair::translate`); `ROOM`: a fill may find an invalid
    /// way (false: the caller knows the levels are full, and the loop checks for none).
    fn translate<const ROOM: bool>(
        &mut self,
        vpn: u64,
        key: u64,
        req: Requester,
        frame: Pfn,
    ) -> (usize, Pfn);
    /// `FullPair::lookup_first`.
    fn lookup_first(&mut self, vpn: u64, key: u64, req: Requester) -> Option<Pfn>;
    /// `FullPair::lookup_second`; None without a second level.
    fn lookup_second(&mut self, vpn: u64, key: u64, req: Requester) -> Option<Payload>;
    /// `FullPair::fill` (`second` is false without a second level).
    fn fill(&mut self, vpn: u64, key: u64, payload: Payload, second: bool);
    /// Per level, the fills that took an invalid way (`FirstLevel::fills_into_room`).
    fn fills_into_room(&self) -> [u64; 2];
}

/// A data path's kind without the borrow, naming a `DataPath` in `FastLane`'s loops:
/// `Two<K, W2>` (`FullPair`) or `One<K>` (`Single`).
pub(crate) trait PathKind {
    type Path<'a>: DataPath<'a>;
    /// The path with its first level staged (`FirstKind::Staged`).
    type Staged<'a>: DataPath<'a>;
    /// Whether `Staged` differs from `Path`.
    const STAGES: bool;
}

pub(crate) struct Two<K, const W2: usize, O = LruOrder>(PhantomData<(K, O)>);
pub(crate) struct One<K>(PhantomData<K>);

impl<K: FirstKind, const W2: usize, O: OrderKind> PathKind for Two<K, W2, O> {
    type Path<'a> = FullPair<'a, K::Level<'a>, W2, O::Order<'a>>;
    type Staged<'a> = FullPair<'a, K::Staged<'a>, W2, O::Order<'a>>;
    const STAGES: bool = K::STAGES;
}

impl<K: FirstKind> PathKind for One<K> {
    type Path<'a> = Single<K::Level<'a>>;
    type Staged<'a> = Single<K::Staged<'a>>;
    const STAGES: bool = K::STAGES;
}

/// A data path of one TLB level, borrowed for a stretch of references (the StrongARM's and
/// gem5's fully associative data TLBs): `FullPair` without the second level.
pub(crate) struct Single<F> {
    first: F,
    /// The tags of what a miss fills (`Payload::tags_word`).
    walk_tags: u64,
}

impl<'a, F: FirstLevel<'a>> DataPath<'a> for Single<F> {
    const LEVELS: usize = 1;

    fn borrow(first: &'a mut Tlb, second: Option<&'a mut Tlb>, walk_tags: u64) -> Self {
        debug_assert!(second.is_none() && F::fits(first) && level_ready(first));
        // The memo names no longer the most recent way once the path has run.
        first.memo_slot = usize::MAX;
        Single {
            first: F::borrow(first),
            walk_tags,
        }
    }

    #[inline(always)]
    fn translate<const ROOM: bool>(
        &mut self,
        vpn: u64,
        key: u64,
        req: Requester,
        frame: Pfn,
    ) -> (usize, Pfn) {
        let h = KeyHash::of(key);
        if let Some(pfn) = self.first.lookup(vpn, key, h, req) {
            return (SETTLED_FIRST, pfn);
        }
        let payload = Payload::from_words(frame, self.walk_tags);
        let slot = self.first.replace::<ROOM>(vpn, key, h);
        self.first.set_payload(slot, payload);
        (SETTLED_WALK, frame)
    }

    #[inline(always)]
    fn lookup_first(&mut self, vpn: u64, key: u64, req: Requester) -> Option<Pfn> {
        self.first.lookup(vpn, key, KeyHash::of(key), req)
    }

    #[inline(always)]
    fn lookup_second(&mut self, _vpn: u64, _key: u64, _req: Requester) -> Option<Payload> {
        None
    }

    #[inline(always)]
    fn fill(&mut self, vpn: u64, key: u64, payload: Payload, _second: bool) {
        self.first.fill(vpn, key, KeyHash::of(key), payload);
    }

    fn fills_into_room(&self) -> [u64; 2] {
        [self.first.fills_into_room(), 0]
    }
}

/// The two data levels, borrowed for a stretch of references (see the module comment): a
/// first level `F` over a second level of `W2`-way sets replaced by `O`.
pub(crate) struct FullPair<'a, F, const W2: usize, O = LruSets<'a>> {
    first: F,
    second: SetAssoc<'a, W2, O>,
    /// The tags of what a miss in both levels fills (`Payload::tags_word`).
    walk_tags: u64,
}

impl<'a, F: FirstLevel<'a>, const W2: usize, O: SetOrder<'a>> FullPair<'a, F, W2, O> {
    /// Whether `first` over `second` (of the shapes `FastLane` checked) has this geometry and
    /// `second` this replacement policy.
    pub(crate) fn fits(first: &Tlb, second: &Tlb) -> bool {
        F::fits(first) && <SetAssoc<'a, W2, O> as FirstLevel<'a>>::fits(second)
    }

    /// Borrows `first` and `second` (`fits`, `pair_ready`, and the caller's shape checks).
    /// A miss in both levels fills entries with the tags `walk_tags`.
    pub(crate) fn new(first: &'a mut Tlb, second: &'a mut Tlb, walk_tags: u64) -> Self {
        debug_assert!(Self::fits(first, second) && pair_ready(first, second));
        // Neither level's memo names the most recent way once the pair has run.
        first.memo_slot = usize::MAX;
        second.memo_slot = usize::MAX;
        FullPair {
            first: F::borrow(first),
            second: SetAssoc::borrow(second),
            walk_tags,
        }
    }
}

impl<'a, F: FirstLevel<'a>, const W2: usize, O: SetOrder<'a>> DataPath<'a>
    for FullPair<'a, F, W2, O>
{
    const LEVELS: usize = 2;

    fn borrow(first: &'a mut Tlb, second: Option<&'a mut Tlb>, walk_tags: u64) -> Self {
        FullPair::new(first, second.expect("a pair has a second level"), walk_tags)
    }

    /// One reference to page `vpn` (`key = pack(vpn, size)`) by `req`: the first level, then
    /// the second, then (a miss in both) the translation `frame` in the domain `new` was
    /// given; fills the levels above the one that hit. Returns where it settled (`SETTLED_*`)
    /// and the frame. (A TLB-only run: the translation is known before the levels are looked
    /// up. With walks, `lookup_first`, `lookup_second` and `fill` take the steps one by one.)
    #[inline(always)]
    fn translate<const ROOM: bool>(
        &mut self,
        vpn: u64,
        key: u64,
        req: Requester,
        frame: Pfn,
    ) -> (usize, Pfn) {
        let h = KeyHash::of(key);
        if let Some(pfn) = self.first.lookup(vpn, key, h, req) {
            return (SETTLED_FIRST, pfn);
        }
        // The first level's bookkeeping first, its payload once the second level has settled
        // the reference (measured: 12% faster and 13 instructions fewer than all after it).
        let slot1 = self.first.replace::<ROOM>(vpn, key, h);
        let set = self.second.set_of(vpn);
        match self.second.lookup_in_set(set, key, req) {
            Some(found) => {
                let payload = Payload::copied_for(found, req);
                self.first.set_payload(slot1, payload);
                (SETTLED_SECOND, found.pfn)
            }
            None => {
                let payload = Payload::from_words(frame, self.walk_tags);
                self.second.replace_in_set(set, key, payload, ROOM);
                self.first.set_payload(slot1, payload);
                (SETTLED_WALK, frame)
            }
        }
    }

    /// The first level's lookup: the frame of its entry of `key` for `req`, made the most
    /// recent, or None.
    #[inline(always)]
    fn lookup_first(&mut self, vpn: u64, key: u64, req: Requester) -> Option<Pfn> {
        self.first.lookup(vpn, key, KeyHash::of(key), req)
    }

    /// The second level's lookup (after a first-level miss): what its entry of `key` for `req`
    /// fills above it, the entry made the most recent, or None.
    #[inline(always)]
    fn lookup_second(&mut self, vpn: u64, key: u64, req: Requester) -> Option<Payload> {
        let found = self
            .second
            .lookup_in_set(self.second.set_of(vpn), key, req)?;
        Some(Payload::copied_for(found, req))
    }

    /// The fills after a first-level miss: `payload` under `key` in the first level and, when
    /// the second level missed too (`second`), in the second.
    #[inline(always)]
    fn fill(&mut self, vpn: u64, key: u64, payload: Payload, second: bool) {
        self.first.fill(vpn, key, KeyHash::of(key), payload);
        if second {
            self.second
                .replace_in_set(self.second.set_of(vpn), key, payload, true);
        }
    }

    fn fills_into_room(&self) -> [u64; 2] {
        [self.first.fills_into_room(), self.second.fills_into_room()]
    }
}

/// The way of a set holding `key` for `req`.
#[inline(always)]
fn find_in_set<const W: usize>(
    keys: &[u64; W],
    fps: &[u8; 16],
    payloads: &[Payload; W],
    tags: TagConfig,
    key: u64,
    req: Requester,
) -> Option<usize> {
    // Ways past W belong to the next sets: masked off (W ≤ 16).
    let mut candidates = row_matches(fps, fingerprint(key)) & ((1u64 << W) - 1);
    while candidates != 0 {
        let w = candidates.trailing_zeros() as usize % W;
        candidates &= candidates - 1;
        if keys[w] == key && tags_allow(tags, &payloads[w], req) {
            return Some(w);
        }
    }
    None
}
