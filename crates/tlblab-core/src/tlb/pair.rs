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

/// A fully associative first level's entries and LRU order, borrowed from its `Tlb`: keys,
/// fingerprints, payloads, the linked order's links and head, each in a vector of its own.
pub(crate) struct InPlace<'a, const W: usize> {
    keys: &'a mut [u64; W],
    fps: &'a mut [u8; W],
    payload: &'a mut [Payload; W],
    links: &'a mut [[u32; 2]; W],
    head: &'a mut u32,
}

/// Where a `FullyAssoc` level's entries and LRU order are while it is borrowed: in place
/// (`InPlace`), or copied into one block for the stretch (`Staged`).
pub(crate) trait FaStore<'a, const W: usize>: Sized {
    fn new(parts: InPlace<'a, W>) -> Self;
    fn keys(&mut self) -> &mut [u64; W];
    fn fps(&mut self) -> &mut [u8; W];
    fn payload(&mut self) -> &mut [Payload; W];
    /// The links and the head.
    fn order(&mut self) -> (&mut [[u32; 2]; W], &mut u32);
    /// The `present` bucket (`KeyHash::present`, truncated to 16 bits) of way `w`'s key `key`.
    fn present_of(&mut self, w: usize, key: u64) -> usize;
    /// Way `w` now holds a key of hash `h`.
    fn set_present_of(&mut self, w: usize, h: KeyHash);
}

impl<'a, const W: usize> FaStore<'a, W> for InPlace<'a, W> {
    fn new(parts: InPlace<'a, W>) -> Self {
        parts
    }

    #[inline(always)]
    fn keys(&mut self) -> &mut [u64; W] {
        self.keys
    }

    #[inline(always)]
    fn fps(&mut self) -> &mut [u8; W] {
        self.fps
    }

    #[inline(always)]
    fn payload(&mut self) -> &mut [Payload; W] {
        self.payload
    }

    #[inline(always)]
    fn order(&mut self) -> (&mut [[u32; 2]; W], &mut u32) {
        (self.links, self.head)
    }

    #[inline(always)]
    fn present_of(&mut self, _w: usize, key: u64) -> usize {
        KeyHash::of(key).present()
    }

    #[inline(always)]
    fn set_present_of(&mut self, _w: usize, _h: KeyHash) {}
}

/// The five parts of `InPlace` copied into one block for a long stretch of references, and
/// copied back when it ends (on drop): the pair loop then reaches all of them from one
/// pointer at constant offsets, not five pointers that outnumber the host's registers with
/// the second level's and the loop's own. Measured (`profile_run zen3 … tlb-only`, 4M
/// references, interleaved medians of 9, 2026-11-25): random:pages=262144 100.6 → 114.2 M
/// refs/s, strided:pages=65536 103.2 → 111.1. The copies are 2.2 KiB each way for 64 ways, so
/// `FastLane` stages only a stretch it expects to be long (`FastLane::alternate`,
/// `worth_staging`).
pub(crate) struct Staged<'a, const W: usize> {
    block: Box<Block<W>>,
    home: InPlace<'a, W>,
}

#[repr(C)]
struct Block<const W: usize> {
    keys: [u64; W],
    payload: [Payload; W],
    links: [[u32; 2]; W],
    /// Each way's `present` bucket, truncated to 16 bits (the filter is at most 2^16 long),
    /// kept beside the keys so that a fill finds its victim's bucket without hashing the
    /// victim's key again (4 instructions of ~104 per all-miss reference). Derived from the
    /// keys: not copied back.
    present_of: [u16; W],
    fps: [u8; W],
    head: u32,
}

impl<'a, const W: usize> FaStore<'a, W> for Staged<'a, W> {
    fn new(home: InPlace<'a, W>) -> Self {
        // The fingerprint search reads whole rows of 16 (`fingerprint_matches_in`), and the
        // block's fingerprints have no padding after them (the compiled sizes: 32, 48, 64).
        const { assert!(W.is_multiple_of(16)) };
        let block = Box::new(Block {
            keys: *home.keys,
            payload: *home.payload,
            links: *home.links,
            present_of: home.keys.map(|key| KeyHash::of(key).present() as u16),
            fps: *home.fps,
            head: *home.head,
        });
        Staged { block, home }
    }

    #[inline(always)]
    fn keys(&mut self) -> &mut [u64; W] {
        &mut self.block.keys
    }

    #[inline(always)]
    fn fps(&mut self) -> &mut [u8; W] {
        &mut self.block.fps
    }

    #[inline(always)]
    fn payload(&mut self) -> &mut [Payload; W] {
        &mut self.block.payload
    }

    #[inline(always)]
    fn order(&mut self) -> (&mut [[u32; 2]; W], &mut u32) {
        let b = &mut *self.block;
        (&mut b.links, &mut b.head)
    }

    #[inline(always)]
    fn present_of(&mut self, w: usize, _key: u64) -> usize {
        self.block.present_of[w % W] as usize
    }

    #[inline(always)]
    fn set_present_of(&mut self, w: usize, h: KeyHash) {
        self.block.present_of[w % W] = h.present() as u16;
    }
}

impl<const W: usize> Drop for Staged<'_, W> {
    fn drop(&mut self) {
        let (b, home) = (&*self.block, &mut self.home);
        *home.keys = b.keys;
        *home.payload = b.payload;
        *home.links = b.links;
        *home.fps = b.fps;
        *home.head = b.head;
    }
}

/// A fully associative first level of `W` ways (`SHAPE_FULLY_ASSOC`: the linked LRU order, the
/// hint table and the `present` filter). A way number read from its order or its hints indexes
/// as `w % W`: they only ever hold way numbers below it, and the remainder spares the bounds
/// check.
pub(crate) struct FullyAssoc<'a, const W: usize, S> {
    /// The entries and the LRU order.
    store: S,
    // `Self::HINT_LEN` and `Self::PRESENT_LEN` long (`borrow` asserts it): indexed unchecked
    // through `% LEN`, a mask.
    hint: &'a mut [u32],
    present: &'a mut [u16],
    tags: TagConfig,
    room: Room<'a>,
}

impl<'a, const W: usize, S: FaStore<'a, W>> FullyAssoc<'a, W, S> {
    /// The hint table and `present` filter of a level of `W` entries (`Tlb::new`).
    const HINT_LEN: usize = hint_len(W);
    const PRESENT_LEN: usize = present_len(W);

    /// The hint-table bucket of hash `h`.
    #[inline(always)]
    fn hint_at(&mut self, h: usize) -> &mut u32 {
        // SAFETY: `borrow` asserts that the table is HINT_LEN long, a power of two, so the
        // remainder (a mask) is in bounds.
        unsafe { self.hint.get_unchecked_mut(h % Self::HINT_LEN) }
    }

    /// The `present` count of hash `h`.
    #[inline(always)]
    fn present_at(&mut self, h: usize) -> &mut u16 {
        // SAFETY: as `hint_at`, for PRESENT_LEN.
        unsafe { self.present.get_unchecked_mut(h % Self::PRESENT_LEN) }
    }

    /// The way holding `key` for `req`: through the hint table, else a search (which then
    /// points the hint at it), as `lookup_shaped` finds it.
    #[inline(always)]
    fn find(&mut self, key: u64, hash: KeyHash, req: Requester) -> Option<usize> {
        let h = hash.hint();
        let hinted = *self.hint_at(h) as usize;
        let w = hinted.wrapping_sub(1) % W;
        if hinted != 0
            && self.store.keys()[w] == key
            && tags_allow(self.tags, &self.store.payload()[w], req)
        {
            return Some(w);
        }
        let [mut candidates] = fingerprint_matches_in(self.store.fps(), 0, W, [hash.fingerprint()]);
        while candidates != 0 {
            let w = candidates.trailing_zeros() as usize % W;
            candidates &= candidates - 1;
            if self.store.keys()[w] == key && tags_allow(self.tags, &self.store.payload()[w], req) {
                *self.hint_at(h) = w as u32 + 1;
                return Some(w);
            }
        }
        None
    }
}

impl<'a, const W: usize, S: FaStore<'a, W>> FirstLevel<'a> for FullyAssoc<'a, W, S> {
    fn fits(tlb: &Tlb) -> bool {
        tlb.sets == 1 && tlb.ways == W
    }

    fn borrow(tlb: &'a mut Tlb) -> Self {
        let geometry = "FullyAssoc::fits checked the geometry";
        // What the unchecked indexing of the hint table and the filter relies on.
        assert!(tlb.hint.len() == Self::HINT_LEN && tlb.present.len() == Self::PRESENT_LEN);
        assert!(Self::HINT_LEN.is_power_of_two() && Self::PRESENT_LEN.is_power_of_two());
        // What `Staged`'s 16-bit buckets rely on.
        const { assert!(Self::PRESENT_LEN <= 1 << 16) };
        // The set is slots `0..array_base` (see `SetAssoc::borrow`).
        let sets_end = tlb.array_base;
        let (keys, fps) = tlb.keys.parts_mut();
        let (links, head) = match tlb.repl.lru_order() {
            Some(OrderList::Linked(o)) => o.first_set_mut(),
            _ => unreachable!("the first level's shape was checked (SHAPE_FULLY_ASSOC)"),
        };
        FullyAssoc {
            store: S::new(InPlace {
                keys: (&mut keys[..sets_end]).try_into().expect(geometry),
                fps: (&mut fps[..W]).try_into().expect(geometry),
                payload: (&mut tlb.payload[..sets_end]).try_into().expect(geometry),
                links: links.try_into().expect(geometry),
                head,
            }),
            hint: &mut tlb.hint[..],
            present: &mut tlb.present[..],
            tags: tlb.config.tags,
            room: Room::borrow(&mut tlb.set_valid, &mut tlb.size_count, &mut tlb.live_sizes),
        }
    }

    #[inline(always)]
    fn lookup(&mut self, _vpn: u64, key: u64, h: KeyHash, req: Requester) -> Option<Pfn> {
        if *self.present_at(h.present()) == 0 {
            return None;
        }
        let w = self.find(key, h, req)?;
        let (links, head) = self.store.order();
        linked_to_front(links, head, w);
        Some(self.store.payload()[w].pfn)
    }

    /// The hint, `present` counts and fingerprint follow the new key.
    #[inline(always)]
    fn replace<const ROOM: bool>(&mut self, _vpn: u64, key: u64, h: KeyHash) -> usize {
        let (links, head) = self.store.order();
        let w = linked_recycle_oldest_of(links, head);
        *self.hint_at(h.hint()) = w as u32 + 1;
        let old = self.store.keys()[w];
        if !ROOM || old != INVALID {
            let bucket = self.store.present_of(w, old);
            *self.present_at(bucket) -= 1;
        } else {
            self.room.fill_room(0, key);
        }
        *self.present_at(h.present()) += 1;
        self.store.set_present_of(w, h);
        self.store.keys()[w] = key;
        self.store.fps()[w] = h.fingerprint();
        w
    }

    #[inline(always)]
    fn set_payload(&mut self, slot: usize, payload: Payload) {
        self.store.payload()[slot % W] = payload;
    }

    fn fills_into_room(&self) -> u64 {
        self.room.filled()
    }
}

/// The replacement state of a `SetAssoc` level, borrowed: what a hit and the fill of a full
/// set do to it. `LruSets` (the packed LRU order, `SHAPE_SET_ASSOC`) or `RandomSets` (random
/// replacement: the Cortex-A9's main TLB, seed 004 §V).
pub(crate) trait SetOrder<'a>: Sized {
    /// Whether `tlb` runs this policy.
    fn fits(tlb: &Tlb) -> bool;
    /// Borrows the replacement state of a level that `fits`, of `sets` sets.
    fn borrow_order(repl: &'a mut Replacement, sets: usize) -> Self;
    /// A hit on way `w` of `set` (`set` < sets).
    fn hit(&mut self, set: usize, w: usize);
    /// The way the fill of full `set` (of `ways` ways) takes, its fill recorded, as
    /// `Replacement::fill_victim` does it.
    fn fill_victim(&mut self, set: usize, ways: usize) -> usize;
}

/// The packed LRU order of each set (one word per set: `replacement/order.rs`).
pub(crate) struct LruSets<'a> {
    words: &'a mut [u64],
}

impl LruSets<'_> {
    #[inline(always)]
    fn word(&mut self, set: usize) -> &mut u64 {
        // SAFETY: callers pass a set number below `sets`, the length of `words` (`borrow`).
        unsafe { self.words.get_unchecked_mut(set) }
    }
}

impl<'a> SetOrder<'a> for LruSets<'a> {
    fn fits(tlb: &Tlb) -> bool {
        matches!(tlb.repl.lru_order_ref(), Some(OrderList::Packed(_)))
    }

    fn borrow_order(repl: &'a mut Replacement, sets: usize) -> Self {
        let words = match repl.lru_order() {
            Some(OrderList::Packed(o)) => o.words_mut(),
            _ => unreachable!("the level's policy was checked (LruSets::fits)"),
        };
        assert!(words.len() == sets);
        LruSets { words }
    }

    #[inline(always)]
    fn hit(&mut self, set: usize, w: usize) {
        packed_to_front(self.word(set), w);
    }

    #[inline(always)]
    fn fill_victim(&mut self, set: usize, ways: usize) -> usize {
        packed_recycle_oldest(self.word(set), ways)
    }
}

/// Random replacement: hits change nothing; a fill draws the way from the level's seeded
/// generator, the one draw `Replacement::fill_victim` makes, so the stream of draws (and of
/// victims) is the general path's.
pub(crate) struct RandomSets<'a> {
    repl: &'a mut RandomRepl,
}

impl<'a> SetOrder<'a> for RandomSets<'a> {
    fn fits(tlb: &Tlb) -> bool {
        matches!(tlb.repl, Replacement::Random(_))
    }

    fn borrow_order(repl: &'a mut Replacement, _sets: usize) -> Self {
        match repl {
            Replacement::Random(repl) => RandomSets { repl },
            _ => unreachable!("the level's policy was checked (RandomSets::fits)"),
        }
    }

    #[inline(always)]
    fn hit(&mut self, _set: usize, _w: usize) {}

    #[inline(always)]
    fn fill_victim(&mut self, _set: usize, _ways: usize) -> usize {
        self.repl.victim_any()
    }
}

/// A `SetOrder` without the borrow, naming one in a `PathKind` (`Two<K, W2, O>`).
pub(crate) trait OrderKind {
    type Order<'a>: SetOrder<'a>;
}

pub(crate) struct LruOrder;
pub(crate) struct RandomOrder;

impl OrderKind for LruOrder {
    type Order<'a> = LruSets<'a>;
}

impl OrderKind for RandomOrder {
    type Order<'a> = RandomSets<'a>;
}

/// A level of sets of `W` ways indexed by low VPN bits, replaced by `O` (`SHAPE_SET_ASSOC`
/// with `LruSets`; no hint table or filter below 32 ways): every pair's second level, and an
/// Intel-like first level. Every vector has one element per set (`borrow` asserts it), so a
/// set number (`vpn & low_mask`) indexes them unchecked.
pub(crate) struct SetAssoc<'a, const W: usize, O = LruSets<'a>> {
    keys: &'a mut [[u64; W]],
    // The fingerprints with their padding (at least 15 bytes past the last set, `TagArray`):
    // set `set`'s row starts at `set * W`, and a 16-byte read from there stays in bounds.
    fps: &'a mut [u8],
    payload: &'a mut [[Payload; W]],
    order: O,
    low_mask: u64,
    tags: TagConfig,
    room: Room<'a>,
}

impl<'a, const W: usize, O: SetOrder<'a>> SetAssoc<'a, W, O> {
    /// The rows of set `set` (`vpn & low_mask`): keys, fingerprints, payloads.
    #[inline(always)]
    fn set_rows(&mut self, set: usize) -> (&mut [u64; W], &mut [u8; 16], &mut [Payload; W]) {
        debug_assert!(set <= self.low_mask as usize);
        // SAFETY: callers pass vpn & low_mask ≤ low_mask < sets, the length of each vector
        // (`borrow`); the fingerprint row's 16 bytes from set * W end at most at
        // (sets - 1) * W + 16, within `fps` (`borrow`). (For W < 16 the row runs into the next
        // sets' fingerprints: only its first W are read as this set's, or written.)
        unsafe {
            (
                self.keys.get_unchecked_mut(set),
                &mut *self.fps.as_mut_ptr().add(set * W).cast::<[u8; 16]>(),
                self.payload.get_unchecked_mut(set),
            )
        }
    }

    #[inline(always)]
    fn set_of(&self, vpn: u64) -> usize {
        (vpn & self.low_mask) as usize
    }

    /// The lookup in set `set`: the entry of `key` for `req`, made the most recent, or None.
    #[inline(always)]
    fn lookup_in_set(&mut self, set: usize, key: u64, req: Requester) -> Option<Payload> {
        let tags = self.tags;
        let (keys, fps, payloads) = self.set_rows(set);
        let w = find_in_set(keys, fps, payloads, tags, key, req)?;
        let found = payloads[w];
        self.order.hit(set, w);
        Some(found)
    }

    /// Set `set`'s least recently used way, made the most recent and given `key`; its way.
    /// `room`: the way may be invalid (a constant where it is inlined).
    #[inline(always)]
    fn replace_way(&mut self, set: usize, key: u64, room: bool) -> usize {
        let w = self.order.fill_victim(set, W) % W;
        let (keys, fps, _) = self.set_rows(set);
        let old = keys[w];
        keys[w] = key;
        fps[w] = fingerprint(key);
        if room && old == INVALID {
            self.room.fill_room(set, key);
        }
        w
    }

    /// `replace_way`, with the payload.
    #[inline(always)]
    fn replace_in_set(&mut self, set: usize, key: u64, payload: Payload, room: bool) {
        let w = self.replace_way(set, key, room);
        self.set_rows(set).2[w] = payload;
    }
}

impl<'a, const W: usize, O: SetOrder<'a>> FirstLevel<'a> for SetAssoc<'a, W, O> {
    fn fits(tlb: &Tlb) -> bool {
        tlb.ways == W && O::fits(tlb)
    }

    fn borrow(tlb: &'a mut Tlb) -> Self {
        let sets = tlb.sets;
        let geometry = "SetAssoc::fits checked the geometry";
        // What the unchecked set indexing relies on: `low_mask + 1` sets.
        assert!(sets == tlb.low_mask as usize + 1);
        // The sets are slots `0..array_base`; a lockable array's slots after them are empty
        // while the level is `fast_ready` (no entry locked), and the lanes never touch them.
        let sets_end = tlb.array_base;
        let (keys, fps) = tlb.keys.parts_mut();
        let order = O::borrow_order(&mut tlb.repl, sets);
        let (keys, []) = keys[..sets_end].as_chunks_mut() else {
            unreachable!("{geometry}")
        };
        let (payload, []) = tlb.payload[..sets_end].as_chunks_mut() else {
            unreachable!("{geometry}")
        };
        assert!(keys.len() == sets && payload.len() == sets);
        // What `set_rows`' 16-byte fingerprint rows rely on.
        assert!(W <= 16 && fps.len() >= (sets - 1) * W + 16);
        SetAssoc {
            keys,
            fps,
            payload,
            order,
            low_mask: tlb.low_mask,
            tags: tlb.config.tags,
            room: Room::borrow(&mut tlb.set_valid, &mut tlb.size_count, &mut tlb.live_sizes),
        }
    }

    #[inline(always)]
    fn lookup(&mut self, vpn: u64, key: u64, _h: KeyHash, req: Requester) -> Option<Pfn> {
        Some(self.lookup_in_set(self.set_of(vpn), key, req)?.pfn)
    }

    /// The slot is `set * W + way`.
    #[inline(always)]
    fn replace<const ROOM: bool>(&mut self, vpn: u64, key: u64, _h: KeyHash) -> usize {
        let set = self.set_of(vpn);
        set * W + self.replace_way(set, key, ROOM)
    }

    #[inline(always)]
    fn set_payload(&mut self, slot: usize, payload: Payload) {
        self.set_rows(slot / W).2[slot % W] = payload;
    }

    fn fills_into_room(&self) -> u64 {
        self.room.filled()
    }
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
