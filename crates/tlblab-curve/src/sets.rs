//! `SetStacks`: every associativity up to 16 ways at several power-of-two set counts, in one
//! pass.
//!
//! Hill and Smith, "Evaluating associativity in CPU caches", IEEE Trans. Computers 38(12),
//! 1989, §III: with LRU and a set index of the low page-number bits, a TLB of `S` sets and `W`
//! ways holds in each set the `W` most recent pages of that set, so one LRU stack per set
//! answers every associativity at that set count (a reference at depth `d` of its set's stack
//! hits every TLB of `d` or more ways). Stacks are kept 16 deep (deeper pages hit no TLB of 16
//! ways or fewer), one row of 16 page keys per set, most recent first; each requested set
//! count has its own rows, all updated by the same reference. A repeat of the previous page
//! changes no stack and is counted by the caller.
//!
//! Invalidations leave holes in the rows, handled as in `fully.rs` (a hole keeps its depth;
//! a miss fills the shallowest hole of the set, a hit below a hole moves the hole to the
//! page's depth): the engine fills an invalid way before it evicts one. Until the first
//! invalidation the search skips the hole bookkeeping (`holes`).

use crate::keymap::EMPTY;

/// The deepest associativity kept.
pub const WAYS: usize = 16;
const HOLE: u64 = u64::MAX - 1;

#[derive(Clone)]
pub struct SetStacks {
    /// The set counts, powers of two.
    counts: Vec<usize>,
    /// Per set count: its rows, `sets × WAYS` keys.
    rows: Vec<Vec<[u64; WAYS]>>,
    /// Per set count: references by set-stack depth (`hist[d - 1]`), and `hist[WAYS]` those
    /// deeper than 16 or new.
    pub hist: Vec<[u64; WAYS + 1]>,
    /// Some row may hold a hole (since the last flush).
    holes: bool,
}

impl SetStacks {
    pub fn new(counts: &[usize]) -> Self {
        SetStacks {
            counts: counts.to_vec(),
            rows: counts.iter().map(|&s| vec![[EMPTY; WAYS]; s]).collect(),
            hist: vec![[0; WAYS + 1]; counts.len()],
            holes: false,
        }
    }

    pub fn counts(&self) -> &[usize] {
        &self.counts
    }

    #[inline]
    pub fn access(&mut self, key: u64) {
        if self.holes {
            self.access_with_holes(key);
            return;
        }
        for (rows, hist) in self.rows.iter_mut().zip(self.hist.iter_mut()) {
            let mask = rows.len() - 1;
            let row = &mut rows[key as usize & mask];
            let mut p = 0;
            while p < WAYS && row[p] != key {
                p += 1;
            }
            hist[p] += 1;
            let last = p.min(WAYS - 1);
            row.copy_within(0..last, 1);
            row[0] = key;
        }
    }

    #[cold]
    #[inline(never)]
    fn access_with_holes(&mut self, key: u64) {
        for (rows, hist) in self.rows.iter_mut().zip(self.hist.iter_mut()) {
            let mask = rows.len() - 1;
            let row = &mut rows[key as usize & mask];
            let mut hole = WAYS;
            let mut p = 0;
            while p < WAYS && row[p] != key {
                if row[p] == HOLE && hole == WAYS {
                    hole = p;
                }
                p += 1;
            }
            hist[p] += 1;
            if hole < p {
                // The pages above the hole move down into it; a hit leaves the hole where
                // the page was.
                row.copy_within(0..hole, 1);
                if p < WAYS {
                    row[p] = HOLE;
                }
            } else {
                let last = p.min(WAYS - 1);
                row.copy_within(0..last, 1);
            }
            row[0] = key;
        }
    }

    /// Invalidates `key` in every set count's row.
    pub fn invalidate(&mut self, key: u64) {
        for rows in &mut self.rows {
            let mask = rows.len() - 1;
            let row = &mut rows[key as usize & mask];
            if let Some(p) = row.iter().position(|&k| k == key) {
                row[p] = HOLE;
                self.holes = true;
            }
        }
    }

    /// Invalidates every page `pred` selects.
    pub fn invalidate_where(&mut self, pred: impl Fn(u64) -> bool) {
        for rows in &mut self.rows {
            for row in rows.iter_mut() {
                for k in row.iter_mut() {
                    if *k != EMPTY && *k != HOLE && pred(*k) {
                        *k = HOLE;
                        self.holes = true;
                    }
                }
            }
        }
    }

    pub fn flush(&mut self) {
        for rows in &mut self.rows {
            rows.fill([EMPTY; WAYS]);
        }
        self.holes = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_two_sets_when_three_pages_of_one_set_cycle_then_two_ways_miss_and_three_hit() {
        // Pages 0, 2, 4 share set 0 of 2 sets: depth 3 in their set on every reuse.
        let mut s = SetStacks::new(&[1, 2]);
        for _ in 0..4 {
            for k in [0u64, 2, 4] {
                s.access(k);
            }
        }
        assert_eq!(s.hist[1][2], 9);
        assert_eq!(s.hist[1][WAYS], 3);
        assert_eq!(s.hist[0][2], 9);
    }
}
