//! The scan of a group of 16 tags that finds the run of plain accesses at its start and the
//! data bytes the run needs: SSE2 compares on x86-64, a portable 64-bit word-at-a-time scan
//! elsewhere (`Scan` forces either).

#[cfg(test)]
/// A plain tag: an access whose size is in the tag (not an escape, not a varint data size).
#[inline]
pub(super) fn is_plain(t: u8) -> bool {
    t & 0x1f != 0 && t & 0x1d != 0x1d
}

const LO7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
const HI: u64 = 0x8080_8080_8080_8080;
const ONES: u64 = 0x0101_0101_0101_0101;

/// Word scan of 8 tags (little-endian, lane i = byte i): the high bit of each byte that is not a
/// plain tag, and each lane's address bytes in its byte.
#[inline(always)]
pub(super) fn scan_word(w: u64) -> (u64, u64) {
    // Bytes are at most 0x1f after masking, so adding 0x7f sets a byte's high bit exactly when
    // it is non-zero, with no carry into the next byte.
    let a = w & (0x1f * ONES);
    let esc = !(a.wrapping_add(LO7)) & HI;
    let c = (w & (0x1d * ONES)) ^ (0x1d * ONES);
    let vsz = !(c.wrapping_add(LO7)) & HI;
    let ac = (w >> 5) & (0x07 * ONES);
    // n = ac, except 8 for ac = 7: add bit 3 of ac + 1.
    let n = ac + (((ac + ONES) >> 3) & ONES);
    (esc | vsz, n)
}

/// Sum of the low `k` bytes (k in 0..=8) of a word of byte counts (each at most 8).
#[inline(always)]
pub(super) fn sum_low(n: u64, k: usize) -> usize {
    let m = if k >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * k)) - 1
    };
    ((n & m).wrapping_mul(ONES) >> 56) as usize
}

/// Scans the 16 tags at `g`: how many plain tags lead the group (0..=16), and two words holding
/// each tag's address-field length in its byte (lanes 0..8, 8..16), for `run_bytes`.
#[inline(always)]
pub(super) fn scan_group_word(g: &[u8; 16]) -> (usize, u64, u64) {
    let w0 = u64::from_le_bytes(g[..8].try_into().unwrap());
    let w1 = u64::from_le_bytes(g[8..].try_into().unwrap());
    let (b0, n0) = scan_word(w0);
    let (b1, n1) = scan_word(w1);
    let run = if b0 != 0 {
        b0.trailing_zeros() as usize / 8
    } else if b1 != 0 {
        8 + b1.trailing_zeros() as usize / 8
    } else {
        16
    };
    (run, n0, n1)
}

/// Address bytes used by the first `r` (0..=16) tags of a scanned group.
#[inline(always)]
pub(super) fn run_bytes(n0: u64, n1: u64, r: usize) -> usize {
    if r <= 8 {
        sum_low(n0, r)
    } else {
        sum_low(n0, 8) + sum_low(n1, r - 8)
    }
}

/// SSE2 variant of the run search (SSE2 is part of x86-64, so no runtime detection is needed);
/// the byte counts come from the word scan, which is cheap next to the compare.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn scan_group_sse2(g: &[u8; 16]) -> (usize, u64, u64) {
    use std::arch::x86_64::*;
    // SAFETY: SSE2 is always available on x86-64; the load reads exactly the 16 bytes of `g`
    // (unaligned load allowed).
    let mask = unsafe {
        let v = _mm_loadu_si128(g.as_ptr() as *const __m128i);
        let esc = _mm_cmpeq_epi8(_mm_and_si128(v, _mm_set1_epi8(0x1f)), _mm_setzero_si128());
        let vsz = _mm_cmpeq_epi8(_mm_and_si128(v, _mm_set1_epi8(0x1d)), _mm_set1_epi8(0x1d));
        _mm_movemask_epi8(_mm_or_si128(esc, vsz)) as u32
    };
    let run = (mask | 0x1_0000).trailing_zeros() as usize;
    let w0 = u64::from_le_bytes(g[..8].try_into().unwrap());
    let w1 = u64::from_le_bytes(g[8..].try_into().unwrap());
    let ac0 = (w0 >> 5) & (0x07 * ONES);
    let ac1 = (w1 >> 5) & (0x07 * ONES);
    (
        run,
        ac0 + (((ac0 + ONES) >> 3) & ONES),
        ac1 + (((ac1 + ONES) >> 3) & ONES),
    )
}
