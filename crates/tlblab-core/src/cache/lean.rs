//! The state of an LRU cache of at most 16 ways and a power-of-two number of sets (zen3's, gem5-a7's
//! and cortex-a9's caches, and most configurations), laid out for its one hot operation: an
//! access that looks a line up and, on a miss, fills it (`System::load`, every level of every
//! walk reference and data access).
//!
//! Each set is one `LeanSet`: its 16 one-byte fingerprints, its LRU order (one word of 4-bit way
//! numbers, `replacement/order.rs`' packed form), its dirty bits and its keys, side by side. An
//! access then reads one place for all of them, through one bounds check, and dispatches on
//! nothing: the general layout (`TagArray`, `DirtyBits` and a `Replacement` in separate
//! vectors) took about twice the instructions per level looked up (callgrind, zen3 full model
//! on a random stream).
//!
//! Behaviour is the general layout's under LRU, exactly (`cache/mod.rs` tests both on the same
//! accesses): a hit makes its way the most recent; a miss takes the set's lowest invalid way,
//! or when there is none its least recently used one, and makes it the most recent. The order
//! of a set is only consulted when the set is full, and by then every way has been made the
//! most recent since the set was last empty, so neither the initial order nor a flush's needs
//! to match the general one's: a flush leaves the order as it is.

use super::{Outcome, INVALID};
use crate::replacement::order::{low_nibbles, packed_to_front, rotate_oldest};
use crate::tags::{fingerprint, row_matches};

/// Ways a lean set has room for.
pub(super) const LEAN_WAYS: usize = 16;

/// One set: 160 bytes, the first 26 (fingerprints, order, dirty bits) within one host line.
#[derive(Clone, Debug)]
#[repr(C)]
struct LeanSet {
    /// Fingerprint of each way's key (`tags::fingerprint`); ways past the cache's are never
    /// candidates (masked off).
    fps: [u8; LEAN_WAYS],
    /// The ways in LRU order, most recent in the lowest nibble (`order.rs`, packed form).
    order: u64,
    /// Bit w: way w holds a written line.
    dirty: u16,
    keys: [u64; LEAN_WAYS],
}

/// A slot as the lean layout names it: set × 16 + way.
#[inline(always)]
fn slot(set: usize, way: usize) -> usize {
    set * LEAN_WAYS + way
}

#[derive(Clone, Debug)]
pub(super) struct LeanSets {
    sets: Vec<LeanSet>,
    ways: usize,
    /// Bits 0..ways: the ways in use.
    way_mask: u64,
    set_mask: u64,
    /// The shift of the oldest position in an order word (`4 * (ways - 1)`) and the positions
    /// in use (`low_nibbles(ways)`), fixed by the geometry: a fill of a full set computes
    /// neither (`PackedOrder` keeps them for the same reason).
    oldest_shift: u32,
    in_use: u64,
}

impl LeanSets {
    /// `sets` (a power of two) sets of `ways` (1..=16) ways, all invalid.
    pub(super) fn new(sets: usize, ways: usize) -> LeanSets {
        assert!(sets.is_power_of_two() && (1..=LEAN_WAYS).contains(&ways));
        // Same initial order as `PackedOrder`: way 0 the oldest (never consulted, see above).
        let order = (0..ways).fold(0u64, |o, p| o | ((ways - 1 - p) as u64) << (4 * p));
        LeanSets {
            sets: vec![
                LeanSet {
                    fps: [fingerprint(INVALID); LEAN_WAYS],
                    order,
                    dirty: 0,
                    keys: [INVALID; LEAN_WAYS],
                };
                sets
            ],
            ways,
            way_mask: (1u64 << ways) - 1,
            set_mask: sets as u64 - 1,
            oldest_shift: 4 * (ways as u32 - 1),
            in_use: low_nibbles(ways),
        }
    }

    /// Looks `line` up and fills it on a miss: what happened, its set and its way (a fill's
    /// way is the set's lowest invalid one, or with `full` — no invalid way in the whole
    /// cache — the least recently used). The line is then its set's most recent, dirty if
    /// `write` or if it was a dirty hit.
    #[inline(always)]
    pub(super) fn access(&mut self, line: u64, write: bool, full: bool) -> (Outcome, usize, usize) {
        let set_i = (line & self.set_mask) as usize;
        let set = &mut self.sets[set_i];
        let fp = fingerprint(line);
        let mut candidates = row_matches(&set.fps, fp) & self.way_mask;
        while candidates != 0 {
            let w = candidates.trailing_zeros() as usize % LEAN_WAYS;
            if set.keys[w] == line {
                packed_to_front(&mut set.order, w);
                set.dirty |= (write as u16) << w;
                return (Outcome::Hit, set_i, w);
            }
            candidates &= candidates - 1;
        }
        let (w, outcome) = match full {
            true => (
                rotate_oldest(&mut set.order, self.oldest_shift, self.in_use) % LEAN_WAYS,
                Outcome::Evicted,
            ),
            false => match Self::first_invalid(set, self.way_mask) {
                Some(w) => {
                    packed_to_front(&mut set.order, w);
                    (w, Outcome::Filled)
                }
                None => (
                    rotate_oldest(&mut set.order, self.oldest_shift, self.in_use) % LEAN_WAYS,
                    Outcome::Evicted,
                ),
            },
        };
        set.keys[w] = line;
        set.fps[w] = fp;
        set.dirty = (set.dirty & !(1 << w)) | (write as u16) << w;
        (outcome, set_i, w)
    }

    /// The lowest way of `set` holding no line.
    #[inline(always)]
    fn first_invalid(set: &LeanSet, way_mask: u64) -> Option<usize> {
        let mut candidates = row_matches(&set.fps, fingerprint(INVALID)) & way_mask;
        while candidates != 0 {
            let w = candidates.trailing_zeros() as usize % LEAN_WAYS;
            if set.keys[w] == INVALID {
                return Some(w);
            }
            candidates &= candidates - 1;
        }
        None
    }

    /// `access` for a line the cache holds (its effects, and its set and way); for any other
    /// line, None and nothing changed.
    #[inline(always)]
    pub(super) fn access_if_present(&mut self, line: u64, write: bool) -> Option<(usize, usize)> {
        let set_i = (line & self.set_mask) as usize;
        let set = &mut self.sets[set_i];
        let mut candidates = row_matches(&set.fps, fingerprint(line)) & self.way_mask;
        while candidates != 0 {
            let w = candidates.trailing_zeros() as usize % LEAN_WAYS;
            if set.keys[w] == line {
                packed_to_front(&mut set.order, w);
                set.dirty |= (write as u16) << w;
                return Some((set_i, w));
            }
            candidates &= candidates - 1;
        }
        None
    }

    /// The lean slot (`slot`) of way `way` of set `set`, for the cache's memo.
    #[inline(always)]
    pub(super) fn slot(set: usize, way: usize) -> usize {
        slot(set, way)
    }

    /// Marks the line in lean slot `s` dirty if `write`.
    #[inline(always)]
    pub(super) fn mark(&mut self, s: usize, write: bool) {
        if write {
            self.sets[s / LEAN_WAYS].dirty |= 1 << (s % LEAN_WAYS);
        }
    }

    /// Whether `line` is present, without changing state.
    pub(super) fn contains(&self, line: u64) -> bool {
        let set = &self.sets[(line & self.set_mask) as usize];
        set.keys[..self.ways].contains(&line)
    }

    /// Host prefetch hint for the set of `line`: its 160 bytes, three host lines at most.
    #[inline(always)]
    pub(super) fn prefetch(&self, line: u64) {
        let set = &self.sets[(line & self.set_mask) as usize];
        crate::simd::prefetch(&set.fps);
        crate::simd::prefetch(&set.keys[4]);
        crate::simd::prefetch(&set.keys[LEAN_WAYS - 1]);
    }

    /// Invalidates set `set`: (valid lines, dirty lines) it held.
    pub(super) fn flush_set(&mut self, set: usize) -> (u64, u64) {
        let ways = self.ways;
        let set = &mut self.sets[set];
        let valid = set.keys[..ways].iter().filter(|&&k| k != INVALID).count() as u64;
        let dirty = (set.dirty as u64 & self.way_mask).count_ones() as u64;
        set.keys = [INVALID; LEAN_WAYS];
        set.fps = [fingerprint(INVALID); LEAN_WAYS];
        set.dirty = 0;
        (valid, dirty)
    }
}
