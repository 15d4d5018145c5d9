//! Least-recently-used: each slot remembers the time of its last use; the victim is the allowed
//! slot with the oldest stamp (never-used slots have stamp 0, so they go first, lowest way first).

#[derive(Clone, Debug)]
pub struct Lru {
    ways: usize,
    stamps: Vec<u64>,
    clock: u64,
}

impl Lru {
    pub fn new(sets: usize, ways: usize) -> Self {
        Lru {
            ways,
            stamps: vec![0; sets * ways],
            clock: 0,
        }
    }

    #[inline]
    pub fn touch(&mut self, set: usize, way: usize) {
        self.clock += 1;
        self.stamps[set * self.ways + way] = self.clock;
    }

    #[inline]
    pub fn forget(&mut self, set: usize, way: usize) {
        self.stamps[set * self.ways + way] = 0;
    }

    #[inline]
    pub fn victim(&self, set: usize, allowed: &[u64]) -> usize {
        let row = &self.stamps[set * self.ways..(set + 1) * self.ways];
        let mut best = usize::MAX;
        let mut best_stamp = u64::MAX;
        for w in super::mask_iter(allowed) {
            if row[w] < best_stamp {
                best_stamp = row[w];
                best = w;
            }
        }
        best
    }
}
