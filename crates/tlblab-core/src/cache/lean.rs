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
//! or when there is none its least recently used one, and makes it the most recent. Here a miss
//! always takes the oldest way of the order: a set's invalid ways are always its oldest, the
//! lowest of them the oldest. That holds from the initial order (way 0 the oldest, up), a hit
//! only ever moves a valid way, a fill takes the oldest way, and a flush, which invalidates a
//! whole set, puts the initial order back. So a miss needs no search for an invalid way, and
//! nothing to tell a full cache from one with room (measured: a fill of a set with room took
//! ~40 instructions more, the search and a move to the front from anywhere in the order).

use super::{Outcome, INVALID};
use crate::lean_row::{row_find, LeanGeometry, ROW as LEAN_WAYS};
use crate::replacement::order::packed_to_front;
use crate::tags::fingerprint;

/// One set: 160 bytes, the first 26 (fingerprints, order, dirty bits) within one host line.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
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

#[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
pub(super) struct LeanSets {
    sets: Vec<LeanSet>,
    geometry: LeanGeometry,
}

impl LeanSets {
    /// Whether `sets` sets of `ways` ways can take this layout (`lru`: the policy is LRU).
    pub(super) fn fits(sets: usize, ways: usize, lru: bool) -> bool {
        lru && LeanGeometry::fits(sets, ways)
    }

    /// `sets` (a power of two) sets of `ways` (1..=16) ways, all invalid.
    pub(super) fn new(sets: usize, ways: usize) -> LeanSets {
        let geometry = LeanGeometry::new(sets, ways);
        LeanSets {
            sets: vec![
                LeanSet {
                    fps: [fingerprint(INVALID); LEAN_WAYS],
                    order: geometry.initial_order(),
                    dirty: 0,
                    keys: [INVALID; LEAN_WAYS],
                };
                sets
            ],
            geometry,
        }
    }

    /// Looks `line` up and fills it on a miss: what happened, its set and its way (a fill's
    /// way is the set's oldest: its lowest invalid one, or when there is none its least
    /// recently used; see the module comment). The line is then its set's most recent, dirty
    /// if `write` or if it was a dirty hit.
    /// With `VICTIM`, also the line an eviction replaced if it was dirty (`INVALID` otherwise,
    /// and always without `VICTIM`, which then costs nothing).
    #[inline(always)]
    pub(super) fn access<const VICTIM: bool>(
        &mut self,
        line: u64,
        write: bool,
    ) -> (Outcome, usize, usize, u64) {
        let g = &self.geometry;
        let set_i = g.set_of(line);
        let set = &mut self.sets[set_i];
        if let Some(w) = row_find(&set.fps, &set.keys, g.way_mask, line, |_| true) {
            packed_to_front(&mut set.order, w);
            set.dirty |= (write as u16) << w;
            return (Outcome::Hit, set_i, w, INVALID);
        }
        let w = g.take_oldest(&mut set.order);
        let outcome = match set.keys[w] {
            INVALID => Outcome::Filled,
            _ => Outcome::Evicted,
        };
        let victim = if VICTIM && set.dirty >> w & 1 == 1 {
            set.keys[w]
        } else {
            INVALID
        };
        set.keys[w] = line;
        set.fps[w] = fingerprint(line);
        set.dirty = (set.dirty & !(1 << w)) | (write as u16) << w;
        (outcome, set_i, w, victim)
    }

    /// Marks `line` dirty if present; whether it was. Nothing else changes (no replacement
    /// state: a writeback from the level above is not a use).
    pub(super) fn mark_if_present(&mut self, line: u64) -> bool {
        let g = &self.geometry;
        let set = &mut self.sets[g.set_of(line)];
        match row_find(&set.fps, &set.keys, g.way_mask, line, |_| true) {
            Some(w) => {
                set.dirty |= 1 << w;
                true
            }
            None => false,
        }
    }

    /// `access` for a line the cache holds (its effects, and its set and way); for any other
    /// line, None and nothing changed.
    #[inline(always)]
    pub(super) fn access_if_present(&mut self, line: u64, write: bool) -> Option<(usize, usize)> {
        let set_i = self.geometry.set_of(line);
        let set = &mut self.sets[set_i];
        let w = row_find(&set.fps, &set.keys, self.geometry.way_mask, line, |_| true)?;
        packed_to_front(&mut set.order, w);
        set.dirty |= (write as u16) << w;
        Some((set_i, w))
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
        let set = &self.sets[self.geometry.set_of(line)];
        set.keys[..self.geometry.ways].contains(&line)
    }

    /// Host prefetch hint for the set of `line`: its 160 bytes, three host lines at most.
    #[inline(always)]
    pub(super) fn prefetch(&self, line: u64) {
        let set = &self.sets[self.geometry.set_of(line)];
        crate::simd::prefetch(&set.fps);
        crate::simd::prefetch(&set.keys[4]);
        crate::simd::prefetch(&set.keys[LEAN_WAYS - 1]);
    }

    /// Invalidates `line` if present: Some(whether it was dirty). The set's order is rebuilt
    /// so that its invalid ways are its oldest, lowest way oldest (the order `flush_set` leaves
    /// and a fill expects: module comment), its valid ways keeping their recency.
    pub(super) fn invalidate(&mut self, line: u64) -> Option<bool> {
        let g = &self.geometry;
        let set = &mut self.sets[g.set_of(line)];
        let w = row_find(&set.fps, &set.keys, g.way_mask, line, |_| true)?;
        let dirty = set.dirty & (1 << w) != 0;
        set.keys[w] = INVALID;
        set.fps[w] = fingerprint(INVALID);
        set.dirty &= !(1 << w);
        let ways = g.ways;
        // Positions 0 (most recent) .. ways - 1 (oldest) of the packed order.
        let newest_first: Vec<usize> = (0..ways)
            .map(|p| ((set.order >> (4 * p)) & 0xf) as usize)
            .collect();
        // Moved to the front oldest first: the lowest invalid way ends up the oldest.
        let invalid = (0..ways).filter(|&v| set.keys[v] == INVALID);
        let valid_oldest_first = newest_first
            .iter()
            .rev()
            .copied()
            .filter(|&v| set.keys[v] != INVALID);
        for v in invalid.chain(valid_oldest_first).collect::<Vec<_>>() {
            packed_to_front(&mut set.order, v);
        }
        Some(dirty)
    }

    /// Invalidates set `set`: (valid lines, dirty lines) it held. Its order is the initial
    /// one again, so that its invalid ways are taken lowest first (module comment).
    pub(super) fn flush_set(&mut self, set: usize) -> (u64, u64) {
        let (ways, way_mask) = (self.geometry.ways, self.geometry.way_mask);
        let order = self.geometry.initial_order();
        let set = &mut self.sets[set];
        set.order = order;
        let valid = set.keys[..ways].iter().filter(|&&k| k != INVALID).count() as u64;
        let dirty = (set.dirty as u64 & way_mask).count_ones() as u64;
        set.keys = [INVALID; LEAN_WAYS];
        set.fps = [fingerprint(INVALID); LEAN_WAYS];
        set.dirty = 0;
        (valid, dirty)
    }
}
