//! `Upper`: a TLB level of fixed geometry above the level whose curves are drawn (an L1 over
//! the L2 being sized), simulated exactly as the engine does, so the level below sees the
//! engine's stream.
//!
//! What the engine does (`tlblab-core` `reference.rs` `ReferenceModel::access`, the
//! specification its fast paths are tested against): the levels of a path are looked up in
//! order; a hit at level `i` fills every level above `i`, a miss in every level fills them
//! all; nothing is ever moved between levels on an eviction (neither inclusive nor exclusive:
//! no back-invalidation, no victim fill). So the level below an LRU level sees exactly that
//! level's misses, and each level is an LRU of its own over the misses of the one above.
//! A level fills only the page sizes it holds (`TlbConfig::page_sizes`); a reference of another
//! size misses it every time. Only LRU with the low-bit set index is modelled.

use crate::keymap::EMPTY;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct UpperGeometry {
    pub sets: usize,
    pub ways: usize,
    /// Bit `PageSize::index()` set for each page size the level holds.
    pub sizes: u8,
}

#[derive(Clone)]
pub struct Upper {
    geom: UpperGeometry,
    /// `sets × ways` keys, each set's most recent first; invalid ways (`EMPTY`) at the end.
    slots: Vec<u64>,
    /// The page this level last hit or filled: a repeat hits and changes nothing.
    last: u64,
}

impl Upper {
    pub fn new(geom: UpperGeometry) -> Self {
        Upper {
            geom,
            slots: vec![EMPTY; geom.sets * geom.ways],
            last: EMPTY,
        }
    }

    /// Looks `key` (of page size index `size`) up; on a miss fills it. Returns whether it hit.
    #[inline]
    pub fn access(&mut self, key: u64, size: usize) -> bool {
        if key == self.last {
            return true;
        }
        let w = self.geom.ways;
        let set = key as usize & (self.geom.sets - 1);
        let row = &mut self.slots[set * w..set * w + w];
        let pos = row.iter().position(|&k| k == key);
        let hit = pos.is_some();
        if !hit && self.geom.sizes >> size & 1 == 0 {
            return false;
        }
        let p = pos.unwrap_or(w - 1);
        row.copy_within(0..p, 1);
        row[0] = key;
        self.last = key;
        hit
    }

    /// Invalidates `key`: the set's later entries move up, so the invalid way is the one the
    /// next miss fills (the engine fills an invalid way before evicting).
    pub fn invalidate_where(&mut self, pred: impl Fn(u64) -> bool) {
        let w = self.geom.ways;
        for row in self.slots.chunks_mut(w) {
            let mut out = 0;
            for i in 0..w {
                let k = row[i];
                if k != EMPTY && !pred(k) {
                    row[out] = k;
                    out += 1;
                }
            }
            row[out..].fill(EMPTY);
        }
        self.last = EMPTY;
    }

    pub fn flush(&mut self) {
        self.slots.fill(EMPTY);
        self.last = EMPTY;
    }
}
