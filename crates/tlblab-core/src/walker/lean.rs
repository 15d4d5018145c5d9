//! The state of an LRU page-walk cache of at most 16 ways and a power-of-two number of sets
//! (every preset's), each set's fingerprints, order, keys, address spaces and nodes side by
//! side: a walk looks up and fills it through one bounds check and no dispatch on the policy,
//! as `cache/lean.rs` does for caches (the general layout took about 80 instructions per
//! lookup; callgrind, zen3 full model on a random stream).
//!
//! Behaviour is the general layout's under LRU, exactly (`walker/mod.rs` tests both on the
//! same operations): a hit or refresh makes its way the most recent; a fill takes the set's
//! lowest invalid way, or when there is none its least recently used one, and makes it the
//! most recent. The order is only consulted when the set is full, and by then every way filled
//! since it was invalidated has been made the most recent, in the same sequence in both
//! layouts, while the ways never invalidated keep their relative order in both; so the
//! general layout's move of an invalidated way to the back has no lean counterpart.

use crate::replacement::order::{low_nibbles, packed_to_front, rotate_oldest};
use crate::tags::{fingerprint, row_matches};

const WAYS: usize = 16;
const INVALID: u64 = u64::MAX;

#[derive(Clone, Debug)]
struct PwcSet {
    fps: [u8; WAYS],
    /// LRU order, most recent in the lowest nibble (`order.rs`, packed form).
    order: u64,
    keys: [u64; WAYS],
    space: [u32; WAYS],
    node: [u32; WAYS],
}

#[derive(Clone, Debug)]
pub(super) struct LeanPwc {
    sets: Vec<PwcSet>,
    ways: usize,
    way_mask: u64,
    set_mask: u64,
    oldest_shift: u32,
    in_use: u64,
}

impl LeanPwc {
    /// Whether a cache of this geometry and policy can take this layout.
    pub(super) fn fits(sets: usize, ways: usize, lru: bool) -> bool {
        lru && ways <= WAYS && sets.is_power_of_two()
    }

    pub(super) fn new(sets: usize, ways: usize) -> LeanPwc {
        assert!(Self::fits(sets, ways, true) && ways > 0);
        LeanPwc {
            sets: vec![
                PwcSet {
                    fps: [fingerprint(INVALID); WAYS],
                    order: (0..ways).fold(0u64, |o, p| o | ((ways - 1 - p) as u64) << (4 * p)),
                    keys: [INVALID; WAYS],
                    space: [0; WAYS],
                    node: [0; WAYS],
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

    /// The way of `set` whose key is `key` (in `space`), if any.
    #[inline(always)]
    fn find(set: &PwcSet, way_mask: u64, space: u32, key: u64) -> Option<usize> {
        let mut candidates = row_matches(&set.fps, fingerprint(key)) & way_mask;
        while candidates != 0 {
            let w = candidates.trailing_zeros() as usize % WAYS;
            if set.keys[w] == key && set.space[w] == space {
                return Some(w);
            }
            candidates &= candidates - 1;
        }
        None
    }

    /// The lowest invalid way of `set`, if any.
    #[inline(always)]
    fn free(set: &PwcSet, way_mask: u64) -> Option<usize> {
        let mut candidates = row_matches(&set.fps, fingerprint(INVALID)) & way_mask;
        while candidates != 0 {
            let w = candidates.trailing_zeros() as usize % WAYS;
            if set.keys[w] == INVALID {
                return Some(w);
            }
            candidates &= candidates - 1;
        }
        None
    }

    #[inline(always)]
    pub(super) fn lookup(&mut self, space: u32, prefix: u64) -> Option<u32> {
        let set = &mut self.sets[(prefix & self.set_mask) as usize];
        let w = Self::find(set, self.way_mask, space, prefix)?;
        packed_to_front(&mut set.order, w);
        Some(set.node[w])
    }

    #[inline]
    pub(super) fn insert(&mut self, space: u32, prefix: u64, node: u32) {
        let set = &mut self.sets[(prefix & self.set_mask) as usize];
        if let Some(w) = Self::find(set, self.way_mask, space, prefix) {
            set.node[w] = node;
            packed_to_front(&mut set.order, w);
            return;
        }
        self.fill(space, prefix, node);
    }

    /// A fill of (`space`, `prefix`), known to be absent: `Pwc::insert_after_miss`.
    #[inline(always)]
    pub(super) fn fill(&mut self, space: u32, prefix: u64, node: u32) {
        let set = &mut self.sets[(prefix & self.set_mask) as usize];
        let w = match Self::free(set, self.way_mask) {
            Some(w) => {
                packed_to_front(&mut set.order, w);
                w
            }
            None => rotate_oldest(&mut set.order, self.oldest_shift, self.in_use) % WAYS,
        };
        set.keys[w] = prefix;
        set.fps[w] = fingerprint(prefix);
        set.space[w] = space;
        set.node[w] = node;
    }

    /// Drops every entry for which `drop(space)` holds.
    pub(super) fn flush_where(&mut self, drop: impl Fn(u32) -> bool) {
        for set in &mut self.sets {
            for w in 0..self.ways {
                if set.keys[w] != INVALID && drop(set.space[w]) {
                    set.keys[w] = INVALID;
                    set.fps[w] = fingerprint(INVALID);
                }
            }
        }
    }
}
