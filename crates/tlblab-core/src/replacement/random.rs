//! Random replacement: a uniformly random allowed way, drawn from a seeded generator
//! (the Cortex-A7's caches use pseudo-random replacement, seed 000 §2.2).

use tlblab_types::SplitMix64;

#[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
pub struct RandomRepl {
    ways: usize,
    rng: SplitMix64,
}

impl RandomRepl {
    pub fn new(ways: usize, seed: u64) -> Self {
        RandomRepl {
            ways,
            rng: SplitMix64::derive(seed, "replacement.random"),
        }
    }

    #[inline]
    pub fn victim_any(&mut self) -> usize {
        self.rng.below(self.ways as u64) as usize
    }

    /// A uniform draw of 0..n from the policy's generator: the victim among a set's ways and a
    /// lockable array's slots (`TlbConfig::array_holds_unlocked`).
    #[inline]
    pub fn draw(&mut self, n: usize) -> usize {
        self.rng.below(n as u64) as usize
    }

    #[inline]
    pub fn victim(&mut self, allowed: &[u64]) -> usize {
        let n: u32 = allowed.iter().map(|w| w.count_ones()).sum();
        let k = self.rng.below(n as u64) as usize;
        super::mask_iter(allowed)
            .nth(k)
            .expect("allowed mask is never empty")
    }
}
