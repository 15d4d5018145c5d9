//! The host prefetch hint the run loop uses (`tlblab_types::hint`), and a branch-free search of
//! sixteen words. (The set search is in `tags`.)

pub(crate) use tlblab_types::hint::{prefetch, prefetch_at};

/// The first i with `words[i] == x`, without a branch per word: for a search whose answer
/// changes from one call to the next at random (which of a few pages a program switched to,
/// `PathLane::find`), a chain of compare-and-branch mispredicts on most calls.
#[inline(always)]
pub(crate) fn position_of_16(words: &[u64; 16], x: u64) -> Option<usize> {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse4.1"))]
    // SAFETY: SSE4.1 is enabled at compile time (the cfg); each load reads two words of `words`.
    unsafe {
        use std::arch::x86_64::*;
        let key = _mm_set1_epi64x(x as i64);
        let p = words.as_ptr().cast::<__m128i>();
        let eq = |i: usize| _mm_cmpeq_epi64(_mm_loadu_si128(p.add(i)), key);
        // Each 64-bit lane is all ones or all zeros, so signed saturating packs keep it: two
        // mask bits per word, eight words a half.
        let half = |i: usize| {
            let lo = _mm_packs_epi32(eq(i), eq(i + 1));
            let hi = _mm_packs_epi32(eq(i + 2), eq(i + 3));
            _mm_movemask_epi8(_mm_packs_epi16(lo, hi)) as u32
        };
        let mask = half(0) | half(4) << 16;
        (mask != 0).then(|| mask.trailing_zeros() as usize / 2)
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse4.1")))]
    position_of_16_portable(words, x)
}

/// `position_of_16` without SSE4.1 (a mask built word by word, still no branch per word).
#[cfg_attr(
    all(target_arch = "x86_64", target_feature = "sse4.1"),
    allow(dead_code)
)]
#[inline(always)]
fn position_of_16_portable(words: &[u64; 16], x: u64) -> Option<usize> {
    let mut mask = 0u32;
    for (i, &w) in words.iter().enumerate() {
        mask |= ((w == x) as u32) << i;
    }
    (mask != 0).then(|| mask.trailing_zeros() as usize)
}

/// `position_of_16` over 32-bit words: four to an SSE2 register, so half the compares and
/// packs of the 64-bit search (`PathLane::find` searches the low halves of its page numbers
/// this way and checks the word it finds).
#[inline(always)]
pub(crate) fn position_of_16_u32(words: &[u32; 16], x: u32) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2 is part of x86-64; each load reads four words of `words`.
    unsafe {
        use std::arch::x86_64::*;
        let key = _mm_set1_epi32(x as i32);
        let p = words.as_ptr().cast::<__m128i>();
        let eq = |i: usize| _mm_cmpeq_epi32(_mm_loadu_si128(p.add(i)), key);
        // Each 32-bit lane is all ones or all zeros, so signed saturating packs keep it: one
        // mask bit per word.
        let lo = _mm_packs_epi32(eq(0), eq(1));
        let hi = _mm_packs_epi32(eq(2), eq(3));
        let mask = _mm_movemask_epi8(_mm_packs_epi16(lo, hi)) as u32;
        (mask != 0).then(|| mask.trailing_zeros() as usize)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut mask = 0u32;
        for (i, &w) in words.iter().enumerate() {
            mask |= ((w == x) as u32) << i;
        }
        (mask != 0).then(|| mask.trailing_zeros() as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::{position_of_16, position_of_16_portable, position_of_16_u32};

    #[test]
    fn position_of_16_finds_the_first_equal_word_or_none() {
        // Both forms, whichever the build's target features select.
        type Search = fn(&[u64; 16], u64) -> Option<usize>;
        let searches: [Search; 2] = [position_of_16, position_of_16_portable];
        let words = [
            3,
            u64::MAX,
            7,
            1 << 63,
            7,
            0,
            9,
            u64::MAX - 1,
            11,
            1 << 40,
            12,
            9,
            u64::MAX,
            13,
            14,
            15,
        ];
        for search in searches {
            for (i, &w) in words.iter().enumerate() {
                let first = words.iter().position(|&v| v == w).unwrap();
                assert_eq!(search(&words, w), Some(first), "word {i}");
            }
            for x in [1, 2, u64::MAX - 2, 1 << 62] {
                assert_eq!(search(&words, x), None, "{x}");
            }
        }
    }

    #[test]
    fn position_of_16_u32_finds_the_first_equal_word_or_none() {
        let words: [u32; 16] = [
            3,
            u32::MAX,
            7,
            1 << 31,
            7,
            0,
            9,
            u32::MAX - 1,
            11,
            1 << 20,
            12,
            9,
            u32::MAX,
            13,
            14,
            15,
        ];
        for (i, &w) in words.iter().enumerate() {
            let first = words.iter().position(|&v| v == w).unwrap();
            assert_eq!(position_of_16_u32(&words, w), Some(first), "word {i}");
        }
        for x in [1, 2, u32::MAX - 2, 1 << 30] {
            assert_eq!(position_of_16_u32(&words, x), None, "{x}");
        }
        // Every position, alone.
        for i in 0..16 {
            let mut one = [0u32; 16];
            one[i] = 5;
            assert_eq!(position_of_16_u32(&one, 5), Some(i));
        }
    }
}
