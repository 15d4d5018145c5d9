//! First-in first-out: the victim is the allowed slot filled longest ago (hits do not count).

#[derive(Clone, Debug)]
pub struct Fifo {
    ways: usize,
    filled_at: Vec<u64>,
    clock: u64,
}

impl Fifo {
    pub fn new(sets: usize, ways: usize) -> Self {
        Fifo {
            ways,
            filled_at: vec![0; sets * ways],
            clock: 0,
        }
    }

    #[inline]
    pub fn on_fill(&mut self, set: usize, way: usize) {
        self.clock += 1;
        self.filled_at[set * self.ways + way] = self.clock;
    }

    #[inline]
    pub fn forget(&mut self, set: usize, way: usize) {
        self.filled_at[set * self.ways + way] = 0;
    }

    #[inline]
    pub fn victim(&self, set: usize, allowed: &[u64]) -> usize {
        let row = &self.filled_at[set * self.ways..(set + 1) * self.ways];
        let mut best = usize::MAX;
        let mut best_t = u64::MAX;
        for w in super::mask_iter(allowed) {
            if row[w] < best_t {
                best_t = row[w];
                best = w;
            }
        }
        best
    }
}
