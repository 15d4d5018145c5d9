//! A tiny seeded pseudo-random generator (SplitMix64).
//!
//! Every random choice in tlblab (random replacement, random frame placement, workload generators)
//! draws from one of these, seeded from the run's seed, so a run is reproducible bit for bit on
//! every platform. We do not use `rand` because its algorithms may change between versions.

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub const fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// A generator for a named sub-stream, so adding a consumer does not shift the others' numbers.
    pub fn derive(seed: u64, stream: &str) -> Self {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325; // FNV-1a over the stream name
        for b in stream.bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x100_0000_01b3);
        }
        SplitMix64::new(seed ^ h)
    }

    /// The generator `draws` values further on: SplitMix64's state is a counter (each draw adds
    /// the same constant), so a stream can be cut into parts drawn apart, the same numbers.
    pub fn skip(&mut self, draws: u64) {
        self.state = self.state.wrapping_add(draws.wrapping_mul(Self::GAMMA));
    }

    const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(Self::GAMMA);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0), by Lemire's multiply-shift (bias < 2^-64·n, irrelevant here).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform in [0, 1).
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Fisher–Yates shuffle.
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence() {
        let mut a = SplitMix64::new(42);
        let mut b = SplitMix64::new(42);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        // First value of SplitMix64(0) from the reference implementation.
        assert_eq!(SplitMix64::new(0).next_u64(), 0xe220_a839_7b1d_cdaf);
    }

    #[test]
    fn a_skip_lands_where_the_draws_would() {
        for n in [0u64, 1, 2, 17, 1000] {
            let mut drawn = SplitMix64::derive(9, "skip");
            for _ in 0..n {
                drawn.next_u64();
            }
            let mut jumped = SplitMix64::derive(9, "skip");
            jumped.skip(n);
            for _ in 0..5 {
                assert_eq!(drawn.next_u64(), jumped.next_u64());
            }
        }
    }

    #[test]
    fn below_stays_in_range() {
        let mut r = SplitMix64::new(7);
        for n in 1..50 {
            for _ in 0..100 {
                assert!(r.below(n) < n);
            }
        }
    }
}
