//! The first-level data cache's stride prefetcher (`cache::prefetch`, the Cortex-A7's: TRM
//! DDI 0464D §6.5.2), in closed form: three misses one stride apart within four lines start a
//! stream whose lines then hit up to the page's end; a stride past four lines, or misses of two
//! streams interleaved (the 68k-benchmark's data and descriptor lines, seed 000 §4.3), start
//! none; and the engine agrees with the reference model, walks through the L1 included.

mod common;

use common::{cache, machine, tlb};
use tlblab_core::cache::prefetch::PrefetchConfig;
use tlblab_core::cache::CacheKind;
use tlblab_core::machine::MachineConfig;
use tlblab_core::page_table::PageTableFormat;
use tlblab_core::reference::ReferenceModel;
use tlblab_core::replacement::ReplacementKind;
use tlblab_core::{RunOptions, System};
use tlblab_trace::{Access, Record};
use tlblab_types::{AccessKind, SplitMix64, ThreadId, VirtAddr};

const MEMORY: u64 = 100;

/// One 64-entry TLB of no latency, an 8 KiB 4-way L1 data cache of 64-byte lines (1 cycle)
/// with the prefetcher (`degree` lines ahead, four lines of window), memory 100 cycles; the
/// walker reads memory directly (20 cycles a descriptor), so only the data lines train it.
fn prefetching(degree: u16) -> MachineConfig {
    let mut m = machine(
        PageTableFormat::Armv7Short,
        vec![tlb("TLB", 1, 64, 64, ReplacementKind::Lru)],
    );
    m.tlbs[0].latency = 0;
    let mut c = cache("L1D", 1, 8192, 4, 1);
    c.kind = CacheKind::Data;
    c.prefetch = Some(PrefetchConfig {
        degree,
        window_lines: 4,
        streams: 1,
    });
    m.caches = vec![c];
    m.memory.latency = MEMORY;
    m.walker.uncached = true;
    m.walker.memory_latency = 20;
    m.walker.latency = 0;
    m
}

fn load(va: u64) -> Access {
    Access::new(ThreadId(0), AccessKind::Load, VirtAddr(va), 4)
}

/// The data cache's (misses, hits) over `vas` after the first access, which walks and misses.
fn misses_and_hits(m: MachineConfig, vas: &[u64]) -> (u64, u64) {
    let mut s = System::new(m, RunOptions::default()).unwrap();
    s.access(load(vas[0])).unwrap();
    let l1 = |s: &System| {
        let st = s.stats();
        let i = st.cache_levels.iter().position(|n| n == "L1D").unwrap();
        (st.total.cache[i].misses, st.total.cache[i].hits)
    };
    let before = l1(&s);
    for &va in &vas[1..] {
        s.access(load(va)).unwrap();
    }
    let after = l1(&s);
    (after.0 - before.0, after.1 - before.1)
}

#[test]
fn given_a_line_by_line_stream_in_one_page_then_three_misses_and_the_rest_hit() {
    let base = 0x10_0000;
    let vas: Vec<u64> = (0..64).map(|i| base + i * 64).collect();
    // Lines 0 (walked), 1 and 2 miss; the third miss starts the stream: lines 3-5 filled,
    // then each hit on the line it expects fills one more, to the page's last line.
    assert_eq!(misses_and_hits(prefetching(3), &vas), (2, 61));
    // Descending, the same.
    let down: Vec<u64> = (0..64).rev().map(|i| base + i * 64).collect();
    assert_eq!(misses_and_hits(prefetching(3), &down), (2, 61));
    // Without the prefetcher every line misses.
    let mut m = prefetching(3);
    m.caches[0].prefetch = None;
    assert_eq!(misses_and_hits(m, &vas), (63, 0));
}

#[test]
fn given_a_stream_of_four_lines_stride_then_it_is_prefetched_and_of_five_not() {
    let base = 0x10_0000;
    let four: Vec<u64> = (0..16).map(|i| base + i * 4 * 64).collect();
    assert_eq!(misses_and_hits(prefetching(2), &four), (2, 13));
    let five: Vec<u64> = (0..12).map(|i| base + i * 5 * 64).collect();
    assert_eq!(misses_and_hits(prefetching(2), &five), (11, 0));
}

#[test]
fn given_two_line_by_line_streams_interleaved_then_nothing_is_prefetched() {
    // The 68k-benchmark's cold access (seed 000 §4.3) misses a descriptor line and a data line
    // in turn: each stream alone has a one-line stride, but no three consecutive misses do.
    let (a, b) = (0x10_0000, 0x20_0000);
    let vas: Vec<u64> = (0..32).flat_map(|i| [a + i * 64, b + i * 64]).collect();
    assert_eq!(misses_and_hits(prefetching(3), &vas), (63, 0));
}

#[test]
fn given_two_streams_interleaved_in_two_pages_then_a_prefetcher_of_a_stream_a_page_follows_both() {
    // The same two streams with one stream a 4 KiB page (Intel's streamer's rule): each
    // page's own misses train it. Page a: its first line walked (before the count), lines 1
    // and 2 miss, then its stream fills 3 lines ahead and every line after hits; page b:
    // lines 0-2 miss, then the same. 5 misses, 58 hits of 63.
    let (a, b) = (0x10_0000, 0x20_0000);
    let vas: Vec<u64> = (0..32).flat_map(|i| [a + i * 64, b + i * 64]).collect();
    let mut m = prefetching(3);
    m.caches[0].prefetch.as_mut().unwrap().streams = 2;
    assert_eq!(misses_and_hits(m.clone(), &vas), (5, 58));
    // Four streams in four pages with room for two: each page's misses push out a page whose
    // stream had begun, and nothing is followed.
    let pages = [0x10_0000u64, 0x20_0000, 0x30_0000, 0x40_0000];
    let vas: Vec<u64> = (0..16).flat_map(|i| pages.map(|p| p + i * 64)).collect();
    assert_eq!(misses_and_hits(m, &vas), (63, 0));
}

#[test]
fn given_streams_out_of_range_then_the_machine_is_refused_naming_the_field() {
    for n in [0, 65] {
        let mut m = prefetching(3);
        m.caches[0].prefetch.as_mut().unwrap().streams = n;
        let e = m.validate().unwrap_err();
        assert!(e.contains("prefetch.streams"), "{e}");
    }
}

#[test]
fn given_a_prefetcher_on_a_second_level_cache_then_the_machine_is_refused() {
    let mut m = prefetching(3);
    let mut l2 = cache("L2", 2, 65536, 8, 10);
    l2.prefetch = m.caches[0].prefetch;
    m.caches[0].prefetch = None;
    m.caches.push(l2);
    let e = m.validate().unwrap_err();
    assert!(e.contains("cache[L2].prefetch"), "{e}");
}

/// The Cortex-A7's shape: walks read through the L1 data cache (TRM §5.2), random
/// replacement, an L2 behind.
fn a7_shape() -> MachineConfig {
    let mut m = prefetching(3);
    m.walker.uncached = false;
    m.walker.first_cache_level = 1;
    m.caches[0].replacement = ReplacementKind::Random;
    m.caches.push(cache("L2", 2, 65536, 8, 10));
    m
}

#[test]
fn the_engine_agrees_with_the_reference_with_walks_through_the_prefetching_l1() {
    // Streams, the 68k stride, stores and random lines.
    let m = a7_shape();
    let records = mixed_records();
    agrees(&m, &records);
    // The prefetcher acted: without it the L1 misses more.
    let misses = |m: &MachineConfig| run(m, &records).stats().total.cache[0].misses;
    let mut off = m.clone();
    off.caches[0].prefetch = None;
    assert!(
        misses(&m) + 150 < misses(&off),
        "{} {}",
        misses(&m),
        misses(&off)
    );
}

#[test]
fn the_engine_agrees_with_the_reference_with_a_stream_a_page_under_memory_level_parallelism() {
    // Eight streams a page each, the thread marked independent under `timing.mlp`, every
    // fifth load's address from the one two before (`Depends`).
    let mut m = a7_shape();
    m.caches[0].prefetch.as_mut().unwrap().streams = 8;
    m.timing.mlp = Some(tlblab_core::machine::MlpConfig {
        miss_slots: 6,
        walkers: 2,
        window: 24,
        issue_instructions: 0,
        issue_width: 1,
        steady_state: false,
    });
    let mut records = vec![Record::Event(tlblab_trace::Event::Independent {
        thread: ThreadId(0),
        begin: true,
    })];
    for (i, r) in mixed_records().into_iter().enumerate() {
        if i % 5 == 4 {
            records.push(Record::Event(tlblab_trace::Event::Depends {
                thread: ThreadId(0),
                back: 2,
            }));
        }
        records.push(r);
    }
    agrees(&m, &records);
    let misses = |m: &MachineConfig| run(m, &records).stats().total.cache[0].misses;
    let mut one = m.clone();
    one.caches[0].prefetch.as_mut().unwrap().streams = 1;
    assert!(misses(&m) < misses(&one), "{} {}", misses(&m), misses(&one));
}

fn run(m: &MachineConfig, records: &[Record]) -> System {
    let mut s = System::new(m.clone(), RunOptions::default()).unwrap();
    let space = s.create_space().unwrap();
    s.bind_thread(ThreadId(0), space, 0);
    s.run_slice(records).unwrap();
    s
}

/// The engine and the reference model give the same counters and clocks.
fn agrees(m: &MachineConfig, records: &[Record]) {
    let s = run(m, records);
    let mut r = ReferenceModel::machine(m, RunOptions::default());
    let rs = r.create_space().unwrap();
    r.bind_thread(ThreadId(0), rs, 0);
    r.run(records).unwrap();
    common::reference_difference(&s, &r).unwrap();
}

/// A stream the prefetcher follows (its lines and the walks' descriptor lines), then mixes:
/// interleaved streams, the 68k stride, a descending stream, stores and random lines.
fn mixed_records() -> Vec<Record> {
    let mut rng = SplitMix64::new(87);
    // A stream the prefetcher follows (its lines and the walks' descriptor lines), then mixes.
    let mut records: Vec<Record> = (0..256u64)
        .map(|i| Record::Access(load(0x20_0000 + i * 64)))
        .collect();
    for round in 0..3u64 {
        for i in 0..200u64 {
            let va = match i % 4 {
                0 => 0x10_0000 + (i + round) * 64,
                1 => 0x40_0000 + i * 69_632,
                2 => 0x80_0000 - i * 128,
                _ => 0x100_0000 + (rng.next_u64() % (1 << 22)),
            };
            let kind = if i % 7 == 0 {
                AccessKind::Store
            } else {
                AccessKind::Load
            };
            records.push(Record::Access(Access::new(
                ThreadId(0),
                kind,
                VirtAddr(va),
                4,
            )));
        }
    }
    records
}
