//! What an exact TLB-only simulation of zen3's two data TLB levels costs on this host when it
//! has none of the engine's generality: the yardstick for the engine's rate on streams that miss
//! every level (ARCHITECTURE.md, "Where all-miss time goes").
//!
//! `cargo run --release -p tlblab-config --example all_miss_floor [-- ACCESSES [REPEATS]]`
//!
//! The stream is the engine benchmark's `random:pages=262144` (uniform random 4 KiB pages of
//! 1 GiB, one thread). `Floor` models the zen3 preset's L1D (64 entries, fully associative, LRU)
//! over its L2D (2048 entries, 16-way, LRU, indexed by low VPN bits) and nothing else: one page
//! size, one address space, no locked entries, no statistics but two miss counters, payloads of
//! one word. It runs three ways, interleaved, `REPEATS` times each (medians and spread printed):
//!
//! - `floor/addresses`: over a vector of 8-byte addresses;
//! - `floor/records`: over the engine's 32-byte records, with the checks the engine's pair loop
//!   makes on each (an access, a data reference, this thread, not crossing a page);
//! - `engine`: `System::run_slice` in a TLB-only run on the zen3 preset.
//!
//! Before any timing, the floor's miss counts must equal the engine's for both levels: the
//! floor is exact, not an estimate (an LRU level's hits depend on the recency order of its valid
//! entries only, not on which slot holds which, so an empty start agrees with the engine's).
use std::time::Instant;
use tlblab_core::{RunOptions, System};
use tlblab_trace::record::Record;
use tlblab_trace::workloads;
use tlblab_types::ThreadId;

const L1_WAYS: usize = 64;
const L2_SETS: usize = 128;
const L2_WAYS: usize = 16;
/// The L1's `present` filter: counts of valid keys per hash bucket; a zero proves a miss.
/// 4096 one-byte counts (4 KiB): a random page finds its bucket taken one time in 64, where
/// the engine's 1024 find it one time in 16 and then search (2026-11-24, later: with the set layout
/// below, 85 → 62 instructions per reference, 128 → 140 M refs/s).
const BUCKETS: usize = 4096;
const INVALID: u64 = u64::MAX;

#[inline(always)]
fn hash(key: u64) -> u64 {
    key.wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// The filter bucket of a hash: its top 12 bits.
#[inline(always)]
fn bucket(h: u64) -> usize {
    (h >> 52) as usize % BUCKETS
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

struct Floor {
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
    l1_misses: u64,
    l2_misses: u64,
}

impl Floor {
    fn new() -> Floor {
        let mut f = Floor {
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

    /// One data reference to page `vpn`.
    #[inline(always)]
    fn reference(&mut self, vpn: u64) {
        let h = hash(vpn);
        let b = bucket(h);
        let fp = (h >> 44) as u8;
        if self.present[b] != 0 {
            if let Some(w) = self.keys.iter().position(|&k| k == vpn) {
                self.move_to_front(w);
                return;
            }
        }
        self.l1_misses += 1;
        // The oldest way becomes the head: in a circle, moving the head is the whole update.
        let v = self.prev[self.head] as usize % L1_WAYS;
        self.head = v;
        let old = self.keys[v];
        if old != INVALID {
            let ob = bucket(hash(old));
            self.present[ob] -= 1;
        }
        self.present[b] += 1;
        self.keys[v] = vpn;
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
                self.payload[v] = payload[w];
                return;
            }
        }
        self.l2_misses += 1;
        let w = (set.order >> 60) as usize;
        set.order = (set.order << 4) | w as u64;
        keys[w] = vpn;
        set.fps[w] = fp;
        let frame = vpn; // TLB-only: the translation is the page itself
        payload[w] = frame;
        self.payload[v] = frame;
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

/// The ways of a set whose fingerprint is `fp`, as bits.
#[inline(always)]
fn fingerprint_matches(fps: &[u8; 16], fp: u8) -> u32 {
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

/// Way `w` made the most recent in a packed LRU order.
#[inline(always)]
fn packed_to_front(order: u64, w: usize) -> u64 {
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

fn over_addresses(addrs: &[u64]) -> (Floor, f64) {
    let mut f = Floor::new();
    let t = Instant::now();
    for &va in addrs {
        f.reference(va >> 12);
    }
    (f, t.elapsed().as_secs_f64())
}

fn over_records(records: &[Record], thread: ThreadId) -> (Floor, f64) {
    let mut f = Floor::new();
    let t = Instant::now();
    for r in records {
        let Record::Access(a) = r else { break };
        let va = a.vaddr.0;
        if a.kind.is_instr() || a.thread != thread || (va & 0xfff) + a.size as u64 > 4096 {
            break;
        }
        f.reference(va >> 12);
    }
    (f, t.elapsed().as_secs_f64())
}

fn engine(records: &[Record]) -> (System, f64) {
    let cfg = tlblab_config::load_machine("zen3").unwrap_or_else(|e| panic!("{e}"));
    let mut sys = System::new(cfg, RunOptions::tlb_only(0)).unwrap_or_else(|e| panic!("{}", e.0));
    let t = Instant::now();
    sys.run_slice(records).unwrap_or_else(|e| panic!("{}", e.0));
    (sys, t.elapsed().as_secs_f64())
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("ACCESSES and REPEATS are numbers"))
        .collect();
    let (accesses, repeats) = (
        *args.first().unwrap_or(&4_000_000),
        *args.get(1).unwrap_or(&5),
    );
    let spec = format!("random:pages=262144,accesses={accesses}");
    let (name, params) = workloads::parse_spec(&spec).unwrap();
    let mut source = workloads::build(&name, &params, 0).unwrap();
    let mut records = Vec::new();
    while source.fill(&mut records, 1 << 16).unwrap() > 0 {}
    let Some(Record::Access(first)) = records.first() else {
        panic!("{spec}: no accesses")
    };
    let thread = first.thread;
    let addrs: Vec<u64> = records
        .iter()
        .map(|r| match r {
            Record::Access(a) => a.vaddr.0,
            _ => panic!("{spec}: a record that is not an access"),
        })
        .collect();

    // Exactness first: the floor's misses are the engine's, level by level.
    let (f, _) = over_records(&records, thread);
    let (sys, _) = engine(&records);
    let stats = sys.stats();
    let level = |name: &str| {
        let i = stats.tlb_levels.iter().position(|n| n == name);
        stats.total.tlb[i.unwrap_or_else(|| panic!("zen3 has no TLB level {name}"))].misses
    };
    let (l1, l2) = (level("L1D"), level("L2D"));
    assert_eq!(
        (f.l1_misses, f.l2_misses),
        (l1, l2),
        "floor and engine disagree on (L1D, L2D) misses"
    );
    println!("{spec}: L1D misses {l1}, L2D misses {l2} (floor = engine)");

    let mut rates: [Vec<f64>; 3] = Default::default();
    for _ in 0..repeats {
        rates[0].push(accesses as f64 / over_addresses(&addrs).1 / 1e6);
        rates[1].push(accesses as f64 / over_records(&records, thread).1 / 1e6);
        rates[2].push(accesses as f64 / engine(&records).1 / 1e6);
    }
    for (name, mut r) in ["floor/addresses", "floor/records", "engine"]
        .into_iter()
        .zip(rates)
    {
        r.sort_by(f64::total_cmp);
        println!(
            "{name:16} median {:6.1} M refs/s (min {:.1}, max {:.1})",
            r[r.len() / 2],
            r[0],
            r[r.len() - 1]
        );
    }
}
