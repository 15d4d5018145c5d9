//! The full-model floor: everything the zen3 preset simulates for a stream of one thread's
//! loads, and nothing more (crate docs).
//!
//! - the two data TLB levels (`tlb.rs`);
//! - on a miss in both, a walk of an x86-64 4-level page table held as data, built on first
//!   touch from a sequential frame allocator (the data frame first, then any missing tables,
//!   top down, as `System::first_touch` and `PageTable::map` take them), starting below the
//!   deepest page-walk-cache hit (the PDE cache: 64 entries, 4-way; the PDPTE cache: 16, fully
//!   associative; both LRU), filling the caches it missed;
//! - every entry the walk reads and then the data loaded through L1D (32 KiB, 8-way), L2
//!   (512 KiB, 8-way) and L3 (32 MiB, 16-way), LRU, non-inclusive, each miss filling the levels
//!   it looked up, each served at its level's load-to-use latency (memory 330);
//! - cycles as the preset's in-order sum (L2 DTLB 7, walker 5, a page-walk-cache hit 1).
//!
//! One page size, one address space, no dirty bits (the stream has loads only, and nothing is
//! ever flushed), no statistics but the counters the exactness check compares. Each cache
//! set's 32-bit tags fill a host line of their own; the sets' LRU order words sit apart,
//! side by side (`LruCache`).
//! Before each reference the host is asked to fetch the last-level page-table entry of the
//! reference `2 * AHEAD` records on, and the simulated L3 sets that of the one `AHEAD` records
//! on will touch (reading the table, changing nothing simulated), as the engine's
//! `prefetch_ahead` does: the L3's state outgrows the host's caches.

use crate::tlb::{packed_to_front, TlbPair, SETTLED_SECOND};
use std::time::Instant;

/// How many records ahead the floor hints the host to fetch the cache sets of a reference
/// (twice as far ahead, its last-level page-table entry), as the engine's `prefetch_ahead`.
/// 2026-11-24: 4, 8, 16 and 32 read 5.2-7.7 M refs/s, within the host's noise; 16 is the
/// engine's. 2026-11-25 (Xeon host, the kernel below): 8 → 17.2, 16 → 16.9, 32 → 16.5,
/// 64 → 16.0 M refs/s; 16 kept.
const AHEAD: usize = 16;

/// A tag row that never matches: a line's tag is `line >> set bits` of a physical address
/// below 2^44 (the floor's frames are numbered from 0 by first touch: `addresses` keeps its
/// streams far below that), so it is never all ones.
const NO_TAG: u32 = u32::MAX;

/// The `W` (8 or 16) tags of a cache set as one row of 32-bit words, compared four at a time
/// (SSE2: x86-64's baseline, as the engine's `tags.rs`).
#[inline(always)]
fn row_matches<const W: usize>(tags: &[u32; W], tag: u32) -> u32 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2 is part of x86-64; each load reads 16 bytes inside `tags` (W is a multiple
    // of 4: asserted at construction).
    unsafe {
        use std::arch::x86_64::*;
        let t = _mm_set1_epi32(tag as i32);
        let p = tags.as_ptr() as *const __m128i;
        let mut m = 0;
        for q in 0..W / 4 {
            let eq = _mm_cmpeq_epi32(_mm_loadu_si128(p.add(q)), t);
            m |= (_mm_movemask_ps(_mm_castsi128_ps(eq)) as u32) << (4 * q);
        }
        m
    }
    #[cfg(not(target_arch = "x86_64"))]
    tags.iter()
        .enumerate()
        .fold(0, |m, (w, &t)| m | (((t == tag) as u32) << w))
}

/// A cache set's tags, in a host line of their own.
#[derive(Clone)]
#[repr(C, align(64))]
struct TagRow<const W: usize>([u32; W]);

/// Cache sets of `W` ways (8 or 16), LRU, indexed by the low bits of the line: each set's
/// tags in a host line (`TagRow`), and the sets' LRU order words (`W` 4-bit way numbers, most
/// recent in the lowest nibble) side by side, apart from the tags, so that the L3's state
/// stays 2.25 MiB (2 MiB of tags, 256 KiB of order words).
///
/// 2026-11-25 (the Xeon host, `full_miss_floor 4000000 5`, each change against the one
/// before): 32-bit tags compared as one row, where the first floor kept one-byte fingerprints
/// beside 64-bit keys (160 bytes a set), with the page-walk caches' change below and the
/// order word in the tags' set (128 bytes a set for 16 ways): 11.9 → 11.4 M refs/s; the
/// prefetch of that second line too: 13.4; the order words apart (this layout): 17.4. The
/// state of the L3 (5 MiB before, 4 MiB with the order in the set, 2.25 MiB now) against the
/// host's 2 MiB L2 decides.
struct LruCache<const W: usize> {
    tags: Vec<TagRow<W>>,
    order: Vec<u64>,
    mask: u64,
    set_bits: u32,
}

impl<const W: usize> LruCache<W> {
    fn new(sets: usize) -> Self {
        assert!(sets.is_power_of_two() && W.is_multiple_of(4) && W <= 16);
        LruCache {
            tags: vec![TagRow([NO_TAG; W]); sets],
            order: vec![initial_order(W); sets],
            mask: sets as u64 - 1,
            set_bits: sets.trailing_zeros(),
        }
    }

    /// Looks `line` up; a hit makes its way the most recent, a miss fills the least recently
    /// used way (an empty set's ways are taken top down, as `initial_order` lists them, which
    /// the hit counts cannot tell from the engine's lowest-invalid-first). Whether it hit.
    #[inline(always)]
    fn access(&mut self, line: u64) -> bool {
        let tag = (line >> self.set_bits) as u32;
        debug_assert!(tag != NO_TAG);
        let s = (line & self.mask) as usize;
        // SAFETY: `s` is masked to the number of sets, the length of both vectors.
        let (row, order) = unsafe {
            (
                &mut self.tags.get_unchecked_mut(s).0,
                self.order.get_unchecked_mut(s),
            )
        };
        let m = row_matches(row, tag);
        if m != 0 {
            *order = packed_to_front(*order, m.trailing_zeros() as usize);
            return true;
        }
        let w = take_oldest(order, W);
        row[w % W] = tag;
        false
    }

    #[inline(always)]
    fn prefetch(&self, line: u64) {
        let s = (line & self.mask) as usize;
        prefetch(&self.tags[s]);
        prefetch(&self.order[s]);
    }
}

/// The order word of a set of `w` ways before any access: way 0 the most recent, way `w - 1`
/// the oldest, so the first fills take the top way, down.
fn initial_order(w: usize) -> u64 {
    (0..w as u64).fold(0, |o, way| o | way << (4 * way))
}

/// The least recently used way of a full order word of `w` ways, made the most recent.
#[inline(always)]
fn take_oldest(order: &mut u64, w: usize) -> usize {
    let top = 4 * (w - 1);
    let way = (*order >> top) as usize & 0xf;
    *order = ((*order << 4) | way as u64) & (u64::MAX >> (64 - 4 * w));
    way
}

#[inline(always)]
fn prefetch<T>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch hint reads nothing architecturally; the pointer is a valid reference.
    unsafe {
        use std::arch::x86_64::*;
        _mm_prefetch::<_MM_HINT_T0>((p as *const T).cast());
    }
}

/// A page-walk cache: (VA prefix) → table node, `W`-way sets of whole keys compared one by
/// one (a set holds at most 16, and the most recent is nearly always the one: the stream's
/// 1 GiB is one PDPTE prefix). The first floor compared one-byte fingerprints first, and the
/// invalid ways' zero fingerprints matched the prefix 0's: every lookup then compared all 16
/// keys of the PDPTE cache.
struct Pwc<const W: usize> {
    keys: Vec<[u64; W]>,
    node: Vec<[u32; W]>,
    order: Vec<u64>,
    mask: u64,
}

impl<const W: usize> Pwc<W> {
    fn new(entries: usize) -> Self {
        let sets = entries / W;
        assert!(sets.is_power_of_two() && W <= 16);
        Pwc {
            keys: vec![[u64::MAX; W]; sets],
            node: vec![[0; W]; sets],
            order: vec![initial_order(W); sets],
            mask: sets as u64 - 1,
        }
    }

    /// The node cached for `prefix` (made the most recent), searching its ways from the most
    /// recent down; or None.
    #[inline(always)]
    fn lookup(&mut self, prefix: u64) -> Option<u32> {
        let s = (prefix & self.mask) as usize;
        let keys = &self.keys[s];
        let mut order = self.order[s];
        for _ in 0..W {
            let w = order as usize & 0xf;
            if keys[w % W] == prefix {
                self.order[s] = packed_to_front(self.order[s], w);
                return Some(self.node[s][w % W]);
            }
            order >>= 4;
        }
        None
    }

    #[inline(always)]
    fn insert(&mut self, prefix: u64, node: u32) {
        let s = (prefix & self.mask) as usize;
        let w = take_oldest(&mut self.order[s], W);
        self.keys[s][w % W] = prefix;
        self.node[s][w % W] = node;
    }
}

/// The cache levels walks and data go through, with the preset's latencies.
pub(crate) struct Caches {
    l1: LruCache<8>,
    l2: LruCache<8>,
    l3: LruCache<16>,
    pub(crate) misses: [u64; 3],
}

impl Caches {
    /// The load of physical address `pa`: its cycles.
    #[inline(always)]
    fn load(&mut self, pa: u64) -> u64 {
        let line = pa >> 6;
        if self.l1.access(line) {
            return 4;
        }
        self.misses[0] += 1;
        if self.l2.access(line) {
            return 12;
        }
        self.misses[1] += 1;
        if self.l3.access(line) {
            return 46;
        }
        self.misses[2] += 1;
        330
    }

    /// Hints the host to fetch the set `pa` will touch in the L3, the one level whose state
    /// outgrows the host's caches (the engine's `Cache::worth_prefetching`: tags over 1 MiB).
    #[inline(always)]
    fn prefetch(&self, pa: u64) {
        self.l3.prefetch(pa >> 6);
    }
}

/// An x86-64 4-level page table as data: node n's 512 entries at `entries[512 n..]`, each the
/// child node + 1 (levels 0-2) or the frame + 1 (level 3), 0 when invalid; node 0 the root.
struct PageTable {
    entries: Vec<u64>,
    bases: Vec<u64>,
    next_frame: u64,
}

const SHIFTS: [u32; 4] = [39, 30, 21, 12];

#[inline(always)]
fn index(level: usize, va: u64) -> usize {
    (va >> SHIFTS[level]) as usize & 511
}

impl PageTable {
    fn new() -> PageTable {
        let mut pt = PageTable {
            entries: Vec::new(),
            bases: Vec::new(),
            next_frame: 0,
        };
        pt.new_node();
        pt
    }

    fn alloc(&mut self) -> u64 {
        self.next_frame += 1;
        self.next_frame - 1
    }

    fn new_node(&mut self) -> u64 {
        let frame = self.alloc();
        self.bases.push(frame << 12);
        self.entries.resize(self.entries.len() + 512, 0);
        self.bases.len() as u64 - 1
    }

    /// Maps the page of `va` to a new frame, making the tables on its path.
    fn first_touch(&mut self, va: u64) {
        let frame = self.alloc();
        let mut node = 0;
        for level in 0..3 {
            let e = node as usize * 512 + index(level, va);
            if self.entries[e] == 0 {
                self.entries[e] = self.new_node() + 1;
            }
            node = self.entries[e] - 1;
        }
        self.entries[node as usize * 512 + index(3, va)] = frame + 1;
    }

    /// Entry `i` (< 512) of node `node`. (Bounds-checked: unchecked reads measured the same,
    /// 13.4 against 13.3 M refs/s.)
    #[inline(always)]
    fn entry(&self, node: u64, i: usize) -> u64 {
        self.entries[node as usize * 512 + i]
    }

    /// The position in `entries` of the last-level entry of `va`, if its tables exist.
    #[inline(always)]
    fn leaf_slot(&self, va: u64) -> Option<(usize, usize)> {
        let mut node = 0;
        for level in 0..3 {
            let e = self.entry(node, index(level, va));
            if e == 0 {
                return None;
            }
            node = e - 1;
        }
        let i = index(3, va);
        Some((node as usize, i))
    }

    /// The frame of `va` and the physical address of its last-level entry, if mapped.
    #[inline(always)]
    fn leaf(&self, va: u64) -> Option<(u64, u64)> {
        let (node, i) = self.leaf_slot(va)?;
        let e = self.entries[node * 512 + i];
        (e != 0).then(|| (e - 1, self.bases[node] + 8 * i as u64))
    }
}

/// Everything a walk touches besides the TLB levels.
pub(crate) struct Memory {
    pt: PageTable,
    pde: Pwc<4>,
    pdpte: Pwc<16>,
    pub(crate) caches: Caches,
    pub(crate) walks: u64,
    pub(crate) pwc_hits: u64,
}

impl Memory {
    /// The walk of `va`: its frame and cycles (`System::walk`).
    #[inline(always)]
    fn walk(&mut self, va: u64) -> (u64, u64) {
        let mut cycles = 5;
        self.walks += 1;
        let (start, start_node) = if let Some(node) = self.pde.lookup(va >> 21) {
            (3, node as u64)
        } else if let Some(node) = self.pdpte.lookup(va >> 30) {
            (2, node as u64)
        } else {
            (0, 0)
        };
        if start > 0 {
            cycles += 1;
            self.pwc_hits += 1;
        }
        // The entries read, top down, and the nodes below each.
        let mut refs = [0u64; 4];
        let mut nodes = [0u64; 4];
        let frame = loop {
            let mut node = start_node;
            let mut found = None;
            for level in start..4 {
                let i = index(level, va);
                refs[level] = self.pt.bases[node as usize] + 8 * i as u64;
                let e = self.pt.entry(node, i);
                if e == 0 {
                    break;
                }
                if level == 3 {
                    found = Some(e - 1);
                } else {
                    node = e - 1;
                    nodes[level + 1] = node;
                }
            }
            match found {
                Some(frame) => break frame,
                None => self.pt.first_touch(va),
            }
        };
        if start <= 1 {
            self.pdpte.insert(va >> 30, nodes[2] as u32);
        }
        if start <= 2 {
            self.pde.insert(va >> 21, nodes[3] as u32);
        }
        for &pa in &refs[start..] {
            cycles += self.caches.load(pa);
        }
        (frame, cycles)
    }
}

/// The full-model floor's state: the TLB pair, everything a walk touches, and the cycles.
pub struct Floor {
    pub(crate) tlb: TlbPair,
    pub(crate) mem: Memory,
    pub(crate) cycles: u64,
}

impl Floor {
    pub(crate) fn new() -> Floor {
        Floor {
            tlb: TlbPair::new(),
            mem: Memory {
                pt: PageTable::new(),
                pde: Pwc::new(64),
                pdpte: Pwc::new(16),
                caches: Caches {
                    l1: LruCache::new(64),
                    l2: LruCache::new(1024),
                    l3: LruCache::new(32768),
                    misses: [0; 3],
                },
                walks: 0,
                pwc_hits: 0,
            },
            cycles: 0,
        }
    }

    /// One load of `va`.
    #[inline(always)]
    fn reference(&mut self, va: u64) {
        let mem = &mut self.mem;
        let mut walk_cycles = 0;
        let (level, frame) = self.tlb.translate(va >> 12, |_| {
            let (frame, c) = mem.walk(va);
            walk_cycles = c;
            frame
        });
        let tlb_cycles = if level >= SETTLED_SECOND { 7 } else { 0 };
        let data = self.mem.caches.load((frame << 12) | (va & 0xfff));
        self.cycles += tlb_cycles + walk_cycles + data;
    }

    /// Hints for the load of `va` twice as far ahead: its last-level entry (host memory).
    #[inline(always)]
    fn prefetch_entry(&self, va: u64) {
        if let Some((node, i)) = self.mem.pt.leaf_slot(va) {
            prefetch(&self.mem.pt.entries[node * 512 + i]);
        }
    }

    /// Hints for the load of `va` some records ahead: its leaf entry's sets and its data's.
    #[inline(always)]
    fn prefetch(&self, va: u64) {
        if let Some((frame, pte)) = self.mem.pt.leaf(va) {
            self.mem.caches.prefetch(pte);
            self.mem.caches.prefetch((frame << 12) | (va & 0xfff));
        }
    }
}

/// The floor over the loads of `addrs`, from an empty start: its state and the seconds taken.
pub fn run(addrs: &[u64]) -> (Floor, f64) {
    let mut f = Floor::new();
    let t = Instant::now();
    for (i, &va) in addrs.iter().enumerate() {
        if let Some(&far) = addrs.get(i + 2 * AHEAD) {
            f.prefetch_entry(far);
        }
        if let Some(&ahead) = addrs.get(i + AHEAD) {
            f.prefetch(ahead);
        }
        f.reference(va);
    }
    (f, t.elapsed().as_secs_f64())
}
