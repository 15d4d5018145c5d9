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

use crate::lean_row::{row_find, LeanGeometry, ROW as WAYS};
use crate::replacement::order::packed_to_front;
use crate::tags::fingerprint;

const INVALID: u64 = u64::MAX;

#[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
struct PwcSet {
    fps: [u8; WAYS],
    /// LRU order, most recent in the lowest nibble (`order.rs`, packed form).
    order: u64,
    keys: [u64; WAYS],
    space: [u32; WAYS],
    node: [u32; WAYS],
}

#[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
pub(super) struct LeanPwc {
    sets: Vec<PwcSet>,
    geometry: LeanGeometry,
    /// The entry of the last lookup hit or fill: (space, key, node), `key` INVALID for none.
    /// It is the most recent of its set (every operation that makes another way of a set
    /// the most recent, or drops entries, replaces or clears it), so a lookup of it again
    /// changes nothing and needs no search: a stream of walks within one table's reach (a
    /// strided or sequential one) looks up the same entry again and again.
    memo: (u32, u64, u32),
}

impl LeanPwc {
    /// Whether `sets` sets of `ways` ways can take this layout (`lru`: the policy is LRU).
    pub(super) fn fits(sets: usize, ways: usize, lru: bool) -> bool {
        lru && LeanGeometry::fits(sets, ways)
    }

    pub(super) fn new(sets: usize, ways: usize) -> LeanPwc {
        let geometry = LeanGeometry::new(sets, ways);
        LeanPwc {
            sets: vec![
                PwcSet {
                    fps: [fingerprint(INVALID); WAYS],
                    order: geometry.initial_order(),
                    keys: [INVALID; WAYS],
                    space: [0; WAYS],
                    node: [0; WAYS],
                };
                sets
            ],
            geometry,
            memo: (0, INVALID, 0),
        }
    }

    /// The way of `set` whose key is `key` (in `space`), if any.
    #[inline(always)]
    fn find(set: &PwcSet, way_mask: u64, space: u32, key: u64) -> Option<usize> {
        row_find(&set.fps, &set.keys, way_mask, key, |w| {
            set.space[w] == space
        })
    }

    /// The lowest invalid way of `set`, if any.
    #[inline(always)]
    fn free(set: &PwcSet, way_mask: u64) -> Option<usize> {
        row_find(&set.fps, &set.keys, way_mask, INVALID, |_| true)
    }

    #[inline(always)]
    pub(super) fn lookup(&mut self, space: u32, prefix: u64) -> Option<u32> {
        let (memo_space, memo_key, memo_node) = self.memo;
        if memo_key == prefix && memo_space == space {
            return Some(memo_node);
        }
        let set = &mut self.sets[self.geometry.set_of(prefix)];
        let w = Self::find(set, self.geometry.way_mask, space, prefix)?;
        packed_to_front(&mut set.order, w);
        self.memo = (space, prefix, set.node[w]);
        Some(set.node[w])
    }

    #[inline]
    pub(super) fn insert(&mut self, space: u32, prefix: u64, node: u32) {
        let set = &mut self.sets[self.geometry.set_of(prefix)];
        if let Some(w) = Self::find(set, self.geometry.way_mask, space, prefix) {
            set.node[w] = node;
            packed_to_front(&mut set.order, w);
            self.memo = (space, prefix, node);
            return;
        }
        self.fill(space, prefix, node);
    }

    /// A fill of (`space`, `prefix`), known to be absent: `Pwc::insert_after_miss`.
    #[inline(always)]
    pub(super) fn fill(&mut self, space: u32, prefix: u64, node: u32) {
        let set = &mut self.sets[self.geometry.set_of(prefix)];
        let w = match Self::free(set, self.geometry.way_mask) {
            Some(w) => {
                packed_to_front(&mut set.order, w);
                w
            }
            None => self.geometry.take_oldest(&mut set.order),
        };
        set.keys[w] = prefix;
        set.fps[w] = fingerprint(prefix);
        set.space[w] = space;
        set.node[w] = node;
        self.memo = (space, prefix, node);
    }

    /// Drops every entry for which `drop(space)` holds.
    pub(super) fn flush_where(&mut self, drop: impl Fn(u32) -> bool) {
        self.memo.1 = INVALID;
        for set in &mut self.sets {
            for w in 0..self.geometry.ways {
                if set.keys[w] != INVALID && drop(set.space[w]) {
                    set.keys[w] = INVALID;
                    set.fps[w] = fingerprint(INVALID);
                }
            }
        }
    }
}
