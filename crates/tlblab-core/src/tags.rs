//! The tag store of a set-associative structure (TLB level, cache, page-walk cache): one `u64`
//! key per slot, sets stored one after another, and beside each key a one-byte fingerprint
//! (a hash of the key).
//!
//! Why fingerprints: the set search is the inner loop of every simulated access. Comparing a
//! set's 16 one-byte fingerprints is one 16-byte SIMD compare, where comparing 16 `u64` keys
//! takes eight; and a miss (the common case of a random footprint) then reads only the
//! fingerprints, an eighth of the keys' bytes, which keeps large simulated caches' state in
//! the host's caches. Fingerprint matches are only candidates: each is verified against its
//! key, so the answer is exact (the technique of SwissTable-style hash tables).
//!
//! Both vectors carry `PAD` spare slots past the end so a search may always read 16
//! fingerprints from any set's first slot; whatever it reads past the set is masked off.

/// Spare fingerprints past the last slot: a 16-byte read from any slot stays in bounds.
const PAD: usize = 15;

#[inline(always)]
pub(crate) fn fingerprint(key: u64) -> u8 {
    (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as u8
}

/// Bits 0..n set (n ≤ 64).
#[inline(always)]
fn low_bits(n: usize) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

#[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
pub(crate) struct TagArray {
    keys: Vec<u64>,
    fps: Vec<u8>,
}

impl TagArray {
    /// `len` slots, every key `fill`.
    pub(crate) fn new(len: usize, fill: u64) -> TagArray {
        TagArray {
            keys: vec![fill; len],
            fps: vec![fingerprint(fill); len + PAD],
        }
    }

    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    #[inline(always)]
    pub(crate) fn get(&self, slot: usize) -> u64 {
        self.keys[slot]
    }

    #[inline(always)]
    pub(crate) fn set(&mut self, slot: usize, key: u64) {
        self.keys[slot] = key;
        self.fps[slot] = fingerprint(key);
    }

    /// Every key, slot order.
    pub(crate) fn as_slice(&self) -> &[u64] {
        &self.keys
    }

    /// The keys and the fingerprints (`PAD` longer), for code that keeps them in step itself
    /// (`set`'s rule: the fingerprint of slot i is `fingerprint(keys[i])`; tlb/pair/).
    pub(crate) fn parts_mut(&mut self) -> (&mut [u64], &mut [u8]) {
        (&mut self.keys, &mut self.fps)
    }

    /// Bit w set where slot `base + w` holds `key`, for w < n (n ≤ 64): exact.
    #[inline(always)]
    pub(crate) fn matches(&self, base: usize, n: usize, key: u64) -> u64 {
        debug_assert!(n <= 64 && base + n <= self.keys.len());
        let [mut candidates] = self.fingerprint_matches(base, n, [fingerprint(key)]);
        let mut m = 0u64;
        while candidates != 0 {
            let w = candidates.trailing_zeros() as usize;
            candidates &= candidates - 1;
            m |= ((self.keys[base + w] == key) as u64) << w;
        }
        m
    }

    /// Bit w set where the fingerprint of slot `base + w` is that of `key`, for w < n (n ≤ 64):
    /// the candidates for `key`, to be verified against the keys (`get`) by a caller that
    /// checks more than the key per candidate (the page-walk caches' address space).
    #[inline(always)]
    pub(crate) fn candidates(&self, base: usize, n: usize, key: u64) -> u64 {
        debug_assert!(n <= 64 && base + n <= self.keys.len());
        let [candidates] = self.fingerprint_matches(base, n, [fingerprint(key)]);
        candidates
    }

    /// The first w < n (n ≤ 64) where slot `base + w` holds `key`.
    #[inline(always)]
    pub(crate) fn first(&self, base: usize, n: usize, key: u64) -> Option<usize> {
        debug_assert!(n <= 64 && base + n <= self.keys.len());
        let [mut candidates] = self.fingerprint_matches(base, n, [fingerprint(key)]);
        while candidates != 0 {
            let w = candidates.trailing_zeros() as usize;
            if self.keys[base + w] == key {
                return Some(w);
            }
            candidates &= candidates - 1;
        }
        None
    }

    /// One look at a set of `n` ways (n ≤ 64) for a fill: `Ok(w)` where slot `base + w` holds
    /// `key`, else `Err(Some(w))` for the first slot holding `free` (the empty key), else
    /// `Err(None)`. Same answers as `first(key)` then `first(free)`, with one read of the
    /// fingerprints.
    #[inline(always)]
    pub(crate) fn find_or_free(
        &self,
        base: usize,
        n: usize,
        key: u64,
        free: u64,
    ) -> Result<usize, Option<usize>> {
        let (mut hits, mut frees) = self
            .fingerprint_matches(base, n, [fingerprint(key), fingerprint(free)])
            .into();
        while hits != 0 {
            let w = hits.trailing_zeros() as usize;
            if self.keys[base + w] == key {
                return Ok(w);
            }
            hits &= hits - 1;
        }
        while frees != 0 {
            let w = frees.trailing_zeros() as usize;
            if self.keys[base + w] == free {
                return Err(Some(w));
            }
            frees &= frees - 1;
        }
        Err(None)
    }

    /// Host prefetch hint for the set of `n` slots at `base` (its fingerprints and keys).
    #[inline]
    pub(crate) fn prefetch(&self, base: usize, n: usize) {
        crate::simd::prefetch(&self.fps[base]);
        let keys = &self.keys[base..base + n];
        // The first key of every 8 (one host line's worth), as a counted loop: the chunk
        // iterator cost a dozen instructions per set (measured in `System::prefetch_cache_sets`).
        for w in (0..n).step_by(8) {
            crate::simd::prefetch(&keys[w]);
        }
    }

    /// For each of `fps`: bit w set where the fingerprint of slot `base + w` is that one, for
    /// w < n. Several fingerprints share one read of the set (`find_or_free`).
    #[inline(always)]
    fn fingerprint_matches<const K: usize>(&self, base: usize, n: usize, fps: [u8; K]) -> [u64; K] {
        fingerprint_matches_in(&self.fps, base, n, fps)
    }
}

/// `TagArray::fingerprint_matches` on a fingerprint vector (`PAD` past its last slot): for each
/// of `fps`, bit w set where the fingerprint of slot `base + w` is that one, for w < n ≤ 64.
#[inline(always)]
#[cfg(target_arch = "x86_64")]
pub(crate) fn fingerprint_matches_in<const K: usize>(
    all: &[u8],
    base: usize,
    n: usize,
    fps: [u8; K],
) -> [u64; K] {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
    };
    // SAFETY (both closures' callers): SSE2 is part of x86-64.
    let eq = |v: __m128i, fp: u8| unsafe {
        _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(fp as i8))) as u32 as u64
    };
    let mut out = [0u64; K];
    if n <= 16 {
        // Sets of up to 16 ways (nearly every structure): one read, no loop.
        let row: &[u8; 16] = all[base..base + 16].try_into().unwrap();
        // Here n ≤ 16: the mask of the set's ways is a plain shift, without `low_bits`' test
        // for 64 (measured: 5 instructions per search of a cache level).
        for (m, &fp) in out.iter_mut().zip(&fps) {
            *m = row_matches(row, fp) & ((1u64 << n) - 1);
        }
        return out;
    } else {
        // One bounds check for the whole read: base + 16·⌈n/16⌉ ≤ len + PAD.
        let row = &all[base..base + n.div_ceil(16) * 16];
        for (i, chunk) in row.chunks_exact(16).enumerate() {
            // SAFETY: SSE2 is part of x86-64; the load reads 16 bytes inside `row`.
            let v = unsafe { _mm_loadu_si128(chunk.as_ptr().cast()) };
            for (m, &fp) in out.iter_mut().zip(&fps) {
                *m |= eq(v, fp) << (16 * i);
            }
        }
    }
    out.map(|m| m & low_bits(n))
}

/// Bit w set where `row[w]` is `fp`: the compare of one set of up to 16 fingerprints.
#[inline(always)]
#[cfg(target_arch = "x86_64")]
pub(crate) fn row_matches(row: &[u8; 16], fp: u8) -> u64 {
    use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8};
    // SAFETY: SSE2 is part of x86-64; the load reads the 16 bytes of `row`.
    unsafe {
        let v = _mm_loadu_si128(row.as_ptr().cast());
        _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(fp as i8))) as u32 as u64
    }
}

/// Bit w set where `row[w]` is `fp`.
#[inline(always)]
#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn row_matches(row: &[u8; 16], fp: u8) -> u64 {
    row.iter()
        .enumerate()
        .fold(0, |m, (w, &f)| m | ((f == fp) as u64) << w)
}

#[inline(always)]
#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn fingerprint_matches_in<const K: usize>(
    all: &[u8],
    base: usize,
    n: usize,
    fps: [u8; K],
) -> [u64; K] {
    let mut out = [0u64; K];
    for (w, &f) in all[base..base + n].iter().enumerate() {
        for (m, &fp) in out.iter_mut().zip(&fps) {
            *m |= ((f == fp) as u64) << w;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tlblab_types::SplitMix64;

    /// `matches`, `first` and `find_or_free` agree with a plain scan of the keys, for every set width up to 64
    /// (across the 16-slot chunk edges), with keys drawn from a tiny range so that both real
    /// matches and fingerprint collisions are frequent.
    #[test]
    fn searches_agree_with_a_plain_scan() {
        let mut rng = SplitMix64::new(3);
        for n in 1..=64usize {
            let sets = 5;
            let mut t = TagArray::new(sets * n, u64::MAX);
            let mut plain = vec![u64::MAX; sets * n];
            for _ in 0..400 {
                let slot = rng.below((sets * n) as u64) as usize;
                let key = if rng.below(8) == 0 {
                    u64::MAX
                } else {
                    rng.below(40)
                };
                t.set(slot, key);
                plain[slot] = key;
                let base = rng.below(sets as u64) as usize * n;
                let probe = if rng.below(8) == 0 {
                    u64::MAX
                } else {
                    rng.below(40)
                };
                let want: u64 = (0..n)
                    .filter(|&w| plain[base + w] == probe)
                    .map(|w| 1u64 << w)
                    .sum();
                assert_eq!(t.matches(base, n, probe), want, "n {n}");
                let first = (0..n).find(|&w| plain[base + w] == probe);
                assert_eq!(t.first(base, n, probe), first, "n {n}");
                let free = (0..n).find(|&w| plain[base + w] == u64::MAX);
                assert_eq!(
                    t.find_or_free(base, n, probe, u64::MAX),
                    first.ok_or(free),
                    "n {n}"
                );
            }
            assert_eq!(t.as_slice(), &plain[..]);
        }
    }

    /// Colliding fingerprints are told apart by the keys.
    #[test]
    fn fingerprint_collisions_are_verified() {
        let a = 1u64;
        let b = (2..).find(|&k| fingerprint(k) == fingerprint(a)).unwrap();
        let mut t = TagArray::new(16, u64::MAX);
        t.set(3, a);
        assert_eq!(t.matches(0, 16, b), 0);
        assert_eq!(t.first(0, 16, a), Some(3));
        t.set(7, b);
        assert_eq!(t.matches(0, 16, b), 1 << 7);
    }
}
