//! zen3's two data TLB levels with none of the engine's generality, for both floors (the
//! TLB-only one, and `full.rs`): the L1D (64 entries, fully associative, LRU) over the
//! L2D (2048 entries, 16-way, LRU, indexed by low VPN bits); one page size, one address space,
//! no locked entries, payloads of one word (the frame). Exact for the counts it keeps: an LRU
//! level's hits depend on the recency order of its valid entries only, not on which slot holds
//! which, so an empty start agrees with the engine's.

const L1_WAYS: usize = 64;
const L2_SETS: usize = 128;
const L2_WAYS: usize = 16;
/// The L1's `present` filter: counts of valid keys per hash bucket; a zero proves a miss.
/// 4096 one-byte counts (4 KiB): a random page finds its bucket taken one time in 64, where
/// 1024 find it one time in 16 and then search (2026-11-24, later: with the set layout below,
/// 85 → 62 instructions per reference, 128 → 140 M refs/s). The engine's filters of small
/// levels have 4096 buckets too since 8f38be8 (two-byte counts: `tlb::present_len`).
const BUCKETS: usize = 4096;
const INVALID: u64 = u64::MAX;

/// Where `TlbPair::translate` settled a reference.
pub const SETTLED_FIRST: usize = 0;
pub const SETTLED_SECOND: usize = 1;
pub const SETTLED_WALK: usize = 2;

#[inline(always)]
fn hash(key: u64) -> u64 {
    key.wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// The filter bucket of a hash: its top 12 bits.
#[inline(always)]
fn bucket(h: u64) -> usize {
    (h >> 52) as usize % BUCKETS
}

/// An 8-bit fingerprint of a key, for the SIMD row searches (`full.rs`'s cache sets).
#[inline(always)]
pub fn fingerprint(key: u64) -> u8 {
    fingerprint_of(hash(key))
}

/// The fingerprint of a key whose hash is `h`.
#[inline(always)]
fn fingerprint_of(h: u64) -> u8 {
    (h >> 44) as u8
}

/// One L2 set: its fingerprints and LRU order (a word of 4-bit way numbers, most recent in the
/// lowest nibble) in one host cache line of their own, so a miss reads one line before the
/// fill writes the keys' and payloads'.
#[derive(Clone)]
#[repr(C, align(64))]
struct Set {
    fps: [u8; L2_WAYS],
    order: u64,
}

pub struct TlbPair {
    // L1: keys, payloads, the LRU order as a circular list (`prev` of the head is the oldest)
    keys: [u64; L1_WAYS],
    payload: [u64; L1_WAYS],
    prev: [u8; L1_WAYS],
    next: [u8; L1_WAYS],
    head: usize,
    present: [u8; BUCKETS],
    sets: Vec<Set>,
    set_keys: Vec<[u64; L2_WAYS]>,
    set_payload: Vec<[u64; L2_WAYS]>,
    pub l1_misses: u64,
    pub l2_misses: u64,
}

impl Default for TlbPair {
    fn default() -> Self {
        Self::new()
    }
}

impl TlbPair {
    pub fn new() -> TlbPair {
        let mut f = TlbPair {
            keys: [INVALID; L1_WAYS],
            payload: [0; L1_WAYS],
            prev: [0; L1_WAYS],
            next: [0; L1_WAYS],
            head: 0,
            present: [0; BUCKETS],
            sets: vec![
                Set {
                    fps: [0; L2_WAYS],
                    order: 0xfedc_ba98_7654_3210,
                };
                L2_SETS
            ],
            set_keys: vec![[INVALID; L2_WAYS]; L2_SETS],
            set_payload: vec![[0; L2_WAYS]; L2_SETS],
            l1_misses: 0,
            l2_misses: 0,
        };
        for w in 0..L1_WAYS {
            f.next[w] = ((w + 1) % L1_WAYS) as u8;
            f.prev[w] = ((w + L1_WAYS - 1) % L1_WAYS) as u8;
        }
        f
    }

    /// One data reference to page `vpn`: where it settled (`SETTLED_*`) and its frame;
    /// `walk(vpn)` gives the frame of a miss in both levels.
    #[inline(always)]
    pub fn translate(&mut self, vpn: u64, walk: impl FnOnce(u64) -> u64) -> (usize, u64) {
        let h = hash(vpn);
        if let Some(w) = self.first_level_hit(vpn, h) {
            return (SETTLED_FIRST, self.payload[w]);
        }
        let v = self.first_level_replace(vpn, h);
        let (settled, frame) = self.second_level(vpn, h, walk);
        self.payload[v] = frame;
        (settled, frame)
    }

    /// The first level's way holding `vpn` (hash `h`), made the most recent, or None.
    #[inline(always)]
    fn first_level_hit(&mut self, vpn: u64, h: u64) -> Option<usize> {
        if self.present[bucket(h)] == 0 {
            return None;
        }
        let w = self.keys.iter().position(|&k| k == vpn)?;
        self.move_to_front(w);
        Some(w)
    }

    /// A first-level miss of `vpn` (hash `h`): the oldest way becomes the head and holds
    /// `vpn`; its slot, for the payload.
    #[inline(always)]
    fn first_level_replace(&mut self, vpn: u64, h: u64) -> usize {
        self.l1_misses += 1;
        // In a circle, moving the head is the whole update.
        let v = self.prev[self.head] as usize % L1_WAYS;
        self.head = v;
        let old = self.keys[v];
        if old != INVALID {
            let ob = bucket(hash(old));
            self.present[ob] -= 1;
        }
        self.present[bucket(h)] += 1;
        self.keys[v] = vpn;
        v
    }

    /// The second level's reference to `vpn` (hash `h`) after a first-level miss: where it
    /// settled and its frame (`walk(vpn)` on a miss, filled).
    #[inline(always)]
    fn second_level(&mut self, vpn: u64, h: u64, walk: impl FnOnce(u64) -> u64) -> (usize, u64) {
        let fp = fingerprint_of(h);
        let s = vpn as usize % L2_SETS;
        let set = &mut self.sets[s];
        let keys = &mut self.set_keys[s];
        let payload = &mut self.set_payload[s];
        let mut candidates = fingerprint_matches(&set.fps, fp);
        while candidates != 0 {
            let w = candidates.trailing_zeros() as usize % L2_WAYS;
            candidates &= candidates - 1;
            if keys[w] == vpn {
                set.order = packed_to_front(set.order, w);
                return (SETTLED_SECOND, payload[w]);
            }
        }
        self.l2_misses += 1;
        let w = (set.order >> 60) as usize;
        set.order = (set.order << 4) | w as u64;
        keys[w] = vpn;
        set.fps[w] = fp;
        let frame = walk(vpn);
        payload[w] = frame;
        (SETTLED_WALK, frame)
    }

    /// The same references as `translate` on the page of each of `addrs` (`addr >> shift`) in
    /// turn, TLB-only (the frame is the page), one level at a time: the first level over all
    /// of them, then the second over the pages the first missed, in their order (`misses`: scratch). Exact because
    /// nothing the second level does changes the first's hits: a TLB-only payload is the
    /// page itself. The layered kernel's loops are shorter than the fused one's and carry
    /// fewer values; `all_miss_floor` times both.
    pub fn translate_layered(&mut self, addrs: &[u64], shift: u32, misses: &mut Vec<u64>) {
        misses.clear();
        for &va in addrs {
            let vpn = va >> shift;
            let h = hash(vpn);
            if self.first_level_hit(vpn, h).is_none() {
                let v = self.first_level_replace(vpn, h);
                self.payload[v] = vpn;
                misses.push(vpn);
            }
        }
        for &vpn in misses.iter() {
            self.second_level(vpn, hash(vpn), |vpn| vpn);
        }
    }

    fn move_to_front(&mut self, w: usize) {
        if w == self.head {
            return;
        }
        let (p, n) = (self.prev[w] as usize, self.next[w] as usize);
        self.next[p] = n as u8;
        self.prev[n] = p as u8;
        let tail = self.prev[self.head] as usize;
        self.next[tail] = w as u8;
        self.prev[w] = tail as u8;
        self.next[w] = self.head as u8;
        self.prev[self.head] = w as u8;
        self.head = w;
    }
}

/// The ways of a row of 16 fingerprints whose fingerprint is `fp`, as bits.
#[inline(always)]
pub fn fingerprint_matches(fps: &[u8; 16], fp: u8) -> u32 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2 is part of x86-64; the load reads exactly the 16 bytes of `fps`.
    unsafe {
        use std::arch::x86_64::*;
        let row = _mm_loadu_si128(fps.as_ptr().cast());
        _mm_movemask_epi8(_mm_cmpeq_epi8(row, _mm_set1_epi8(fp as i8))) as u32
    }
    #[cfg(not(target_arch = "x86_64"))]
    fps.iter()
        .enumerate()
        .fold(0, |m, (w, &f)| m | (((f == fp) as u32) << w))
}

/// Way `w` made the most recent in a packed LRU order (4-bit way numbers, most recent in the
/// lowest nibble; the first nibble equal to `w` is its place).
#[inline(always)]
pub fn packed_to_front(order: u64, w: usize) -> u64 {
    let x = order ^ (w as u64).wrapping_mul(0x1111_1111_1111_1111);
    let z = x.wrapping_sub(0x1111_1111_1111_1111) & !x & 0x8888_8888_8888_8888;
    let p = z.trailing_zeros() as usize / 4;
    if p == 0 {
        return order;
    }
    let below = u64::MAX >> (64 - 4 * p);
    let through = u64::MAX >> (60 - 4 * p);
    (order & !through) | ((order & below) << 4) | w as u64
}
