//! The tag search shared by TLB levels and caches (which ways of a set hold a key), and the
//! host prefetch hint the run loop uses.

/// Bit w set where `row[w] == key` (row.len() ≤ 64): two keys per SSE4.1 compare where the
/// target has it (x86-64-v2, see .cargo/config.toml), a branch-free scalar loop elsewhere.
#[inline]
#[cfg(all(target_arch = "x86_64", target_feature = "sse4.1"))]
pub(crate) fn match_mask(row: &[u64], key: u64) -> u64 {
    use std::arch::x86_64::{_mm_cmpeq_epi64, _mm_castsi128_pd, _mm_loadu_si128, _mm_movemask_pd, _mm_set1_epi64x};
    let mut m = 0u64;
    let mut pairs = row.chunks_exact(2);
    // SAFETY: SSE4.1 is enabled for this target (cfg above); each load reads exactly the two
    // u64s of a chunk that `chunks_exact` guarantees exist (unaligned loads are allowed).
    unsafe {
        let k = _mm_set1_epi64x(key as i64);
        for (i, p) in (&mut pairs).enumerate() {
            let v = _mm_loadu_si128(p.as_ptr().cast());
            let bits = _mm_movemask_pd(_mm_castsi128_pd(_mm_cmpeq_epi64(v, k))) as u64;
            m |= bits << (2 * i);
        }
    }
    if let [last] = pairs.remainder() {
        m |= ((*last == key) as u64) << (row.len() - 1);
    }
    m
}

/// Bit w set where `row[w] == key` (row.len() ≤ 64), without branches (portable fallback).
#[inline]
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse4.1")))]
pub(crate) fn match_mask(row: &[u64], key: u64) -> u64 {
    let mut m = 0u64;
    let mut chunks = row.chunks_exact(8);
    let mut base = 0;
    for c in &mut chunks {
        let mut b = 0u64;
        for (i, &k) in c.iter().enumerate() {
            b |= ((k == key) as u64) << i;
        }
        m |= b << base;
        base += 8;
    }
    for (i, &k) in chunks.remainder().iter().enumerate() {
        m |= ((k == key) as u64) << (base + i);
    }
    m
}


/// Asks the host to bring the cache line of `x` into its caches (a no-op off x86-64). A hint:
/// it never faults and changes nothing the program can observe.
#[inline(always)]
pub(crate) fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint and never faults; `x` is a valid reference anyway.
    unsafe {
        std::arch::x86_64::_mm_prefetch(
            (x as *const T).cast::<i8>(),
            std::arch::x86_64::_MM_HINT_T0,
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}
