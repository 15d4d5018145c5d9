//! Exactness: every point of an exact curve equals a separate tlblab-core TLB-only run of that
//! geometry (`RunOptions::tlb_only`, the engine's `--tlb-only`), miss for miss.
//!
//! Streams: random ones with what the engine must agree on (page crossings, instruction
//! fetches, three threads in two address spaces, a 2 MiB region among 4 KiB pages,
//! munmap/mprotect shootdowns, TLB flushes), and built-in workloads (gups, graph500 BFS).

mod common;

use proptest::prelude::*;
use tlblab_core::machine::MachineConfig;
use tlblab_core::page_table::PageTableFormat;
use tlblab_core::tlb::{TagConfig, TlbConfig, TlbKind, Ways};
use tlblab_core::{RunOptions, System};
use tlblab_curve::{Path, Spec, UpperGeometry};
use tlblab_trace::record::{Access, Event, Record};
use tlblab_trace::source::VecSource;
use tlblab_types::{AccessKind, PageSize, SplitMix64, ThreadId, VirtAddr};

fn tlb(name: &str, level: u8, kind: TlbKind, sets: usize, ways: usize, asid: bool) -> TlbConfig {
    TlbConfig {
        kind,
        page_sizes: PageSize::ALL.to_vec(),
        tags: TagConfig {
            asid,
            ..TagConfig::default()
        },
        ..TlbConfig::plain(name, level, sets * ways, Ways::N(ways))
    }
}

fn machine(tlbs: Vec<TlbConfig>) -> MachineConfig {
    MachineConfig::minimal("curve-test", PageTableFormat::X86_64_4level, tlbs)
}

/// The engine's misses in TLB level `name` over `records`, TLB-only.
fn engine_misses(cfg: MachineConfig, records: &[Record], name: &str) -> u64 {
    let mut sys = System::new(cfg, RunOptions::tlb_only(0)).unwrap();
    sys.run(&mut VecSource::new(records.to_vec())).unwrap();
    let st = sys.stats();
    let i = st.tlb_levels.iter().position(|n| n == name).unwrap();
    st.total.tlb[i].misses
}

/// The engine's misses of a single unified level of `sets × ways`.
fn one_level(records: &[Record], sets: usize, ways: usize, asid: bool) -> u64 {
    let cfg = machine(vec![tlb("T", 1, TlbKind::Unified, sets, ways, asid)]);
    engine_misses(cfg, records, "T")
}

const HUGE_BASE: u64 = 0x4000_0000;

/// A random stream of `n` records from `seed`: locality from a hot set, a wider pool, a
/// 2 MiB-page region, crossings, fetches, two address spaces, shootdowns and flushes (when
/// `events`).
fn random_stream(seed: u64, n: usize, events: bool) -> Vec<Record> {
    let mut rng = SplitMix64::new(seed);
    let mut out: Vec<Record> = vec![
        Event::ThreadStart {
            thread: ThreadId(0),
            process: 0,
        }
        .into(),
        Event::ThreadStart {
            thread: ThreadId(1),
            process: 1,
        }
        .into(),
        Event::ThreadStart {
            thread: ThreadId(2),
            process: 0,
        }
        .into(),
    ];
    for p in 0..2 {
        out.push(
            Event::Mmap {
                process: p,
                start: VirtAddr(HUGE_BASE),
                len: 8 << 21,
                prot: 3,
                page_shift: 21,
            }
            .into(),
        );
    }
    let hot = 1 + rng.below(40);
    let pool = hot + rng.below(600);
    for _ in 0..n {
        let r = rng.below(1000);
        if events && r < 4 {
            let start = 0x10_0000 + rng.below(pool) * 4096 + rng.below(4096);
            out.push(
                Event::Munmap {
                    process: rng.below(2) as u32,
                    start: VirtAddr(start),
                    len: rng.below(5) * 4096 + rng.below(100),
                }
                .into(),
            );
            continue;
        }
        if events && r < 6 {
            out.push(
                Event::Mprotect {
                    process: rng.below(2) as u32,
                    start: VirtAddr(HUGE_BASE + rng.below(8 << 21)),
                    len: 4096,
                    prot: 1,
                }
                .into(),
            );
            continue;
        }
        if events && r == 6 {
            out.push(common::tlb_flush());
            continue;
        }
        let thread = if events { rng.below(3) as u32 } else { 0 };
        let kind = match rng.below(10) {
            0..=1 => AccessKind::Instr,
            2..=3 => AccessKind::Store,
            _ => AccessKind::Load,
        };
        let va = match rng.below(20) {
            0..=11 => 0x10_0000 + rng.below(hot) * 4096,
            12..=17 => 0x10_0000 + rng.below(pool) * 4096,
            _ => HUGE_BASE + rng.below(8 << 21) / 4096 * 4096,
        };
        let (off, size) = if rng.below(16) == 0 {
            (4096 - 1 - rng.below(7), 8)
        } else {
            (rng.below(4000), 8)
        };
        // Runs of references to the same page, as real code makes them.
        for _ in 0..1 + rng.below(3) {
            out.push(Access::new(ThreadId(thread), kind, VirtAddr(va + off), size).into());
        }
    }
    out
}

fn curves(records: &[Record], spec: Spec) -> tlblab_curve::Curves {
    tlblab_curve::curves(&mut VecSource::new(records.to_vec()), spec).unwrap()
}

fn unified(max_entries: usize, sets: &[usize]) -> Spec {
    Spec {
        path: Path::Unified,
        ..Spec::new(max_entries, sets)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, failure_persistence: None, .. ProptestConfig::default() })]

    /// Given a random stream and a random geometry (power-of-two sets, 1..16 ways, LRU), the
    /// curve's point equals the engine's run of that geometry.
    #[test]
    fn every_set_associative_point_is_the_engines_run(seed in any::<u64>(), sets_log in 0u32..7, ways in 1usize..=16, events in any::<bool>()) {
        let recs = random_stream(seed, 3000, events);
        let sets = 1usize << sets_log;
        let c = curves(&recs, unified(64, &[1, 2, 4, 8, 16, 32, 64]));
        let all = c.group("all").unwrap();
        prop_assert_eq!(all.misses(sets, ways).unwrap(), one_level(&recs, sets, ways, true));
    }

    /// The fully associative curve at a random size up to 600 entries.
    #[test]
    fn every_fully_associative_point_is_the_engines_run(seed in any::<u64>(), entries in 1usize..600, events in any::<bool>()) {
        let recs = random_stream(seed, 3000, events);
        let c = curves(&recs, unified(600, &[]));
        prop_assert_eq!(c.group("all").unwrap().misses(1, entries).unwrap(), one_level(&recs, 1, entries, true));
    }

    /// A second level's curve on the first level's misses: a random first level (fixed) over
    /// a random second-level geometry, both unified; and split first levels over a unified
    /// second.
    #[test]
    fn every_second_level_point_is_the_engines_run(seed in any::<u64>(), l1_sets_log in 0u32..4, l1_ways in 1usize..9, sets_log in 0u32..6, ways in 1usize..=16, split in any::<bool>(), events in any::<bool>()) {
        let recs = random_stream(seed, 3000, events);
        let (l1_sets, sets) = (1usize << l1_sets_log, 1usize << sets_log);
        let g = UpperGeometry { sets: l1_sets, ways: l1_ways, sizes: 0x3f };
        let (spec, tlbs) = if split {
            let gi = UpperGeometry { sets: 1, ways: 4, sizes: 0x3f };
            (Spec { upper: vec![g, gi], upper_data: vec![0], upper_instr: vec![1], ..unified(0, &[sets]) },
             vec![tlb("L1D", 1, TlbKind::Data, l1_sets, l1_ways, true), tlb("L1I", 1, TlbKind::Instr, 1, 4, true), tlb("L2", 2, TlbKind::Unified, sets, ways, true)])
        } else {
            (Spec { upper: vec![g], upper_data: vec![0], upper_instr: vec![0], ..unified(0, &[sets]) },
             vec![tlb("L1", 1, TlbKind::Unified, l1_sets, l1_ways, true), tlb("L2", 2, TlbKind::Unified, sets, ways, true)])
        };
        let c = curves(&recs, spec);
        prop_assert_eq!(c.group("all").unwrap().misses(sets, ways).unwrap(), engine_misses(machine(tlbs), &recs, "L2"));
    }

    /// A level without ASID tags is flushed at each change of address space (the engine's
    /// `auto` policy then is `flush_all`).
    #[test]
    fn flushing_at_each_address_space_switch_is_the_engines_run(seed in any::<u64>(), sets_log in 0u32..5, ways in 1usize..=16) {
        let recs = random_stream(seed, 3000, true);
        let sets = 1usize << sets_log;
        let c = curves(&recs, Spec { flush_on_switch: true, ..unified(0, &[sets]) });
        prop_assert_eq!(c.group("all").unwrap().misses(sets, ways).unwrap(), one_level(&recs, sets, ways, false));
    }
}

/// The data path alone: instruction fetches go to their own level and never reach it.
#[test]
fn given_a_data_level_then_fetches_do_not_reach_it() {
    let recs = random_stream(11, 4000, false);
    let c = curves(&recs, Spec::new(0, &[4]));
    for ways in 1..=16 {
        let cfg = machine(vec![
            tlb("L1I", 1, TlbKind::Instr, 1, 8, true),
            tlb("D", 1, TlbKind::Data, 4, ways, true),
        ]);
        assert_eq!(
            c.group("all").unwrap().misses(4, ways).unwrap(),
            engine_misses(cfg, &recs, "D"),
            "4 sets x {ways} ways"
        );
    }
}

/// Per page size and per address space: each group's curve is the engine's run over that
/// group's references alone.
#[test]
fn given_two_sizes_and_two_spaces_then_each_group_is_its_references_alone() {
    let recs = random_stream(5, 4000, false);
    // Thread 0 only (`events` off): one address space; add process 1 by hand.
    let mut recs2 = recs.clone();
    for r in recs.iter().skip(5).step_by(3) {
        if let Record::Access(a) = r {
            recs2.push(
                Access {
                    thread: ThreadId(1),
                    ..*a
                }
                .into(),
            );
        }
    }
    let c = curves(&recs2, unified(64, &[4]));
    let only = |keep: &dyn Fn(&Access) -> bool| -> Vec<Record> {
        recs2
            .iter()
            .filter(|r| match r {
                Record::Access(a) => keep(a),
                Record::Event(_) => true,
            })
            .copied()
            .collect()
    };
    let huge = |a: &Access| a.vaddr.0 >= HUGE_BASE && a.vaddr.0 < HUGE_BASE + (8 << 21);
    let cases: Vec<(&str, Vec<Record>)> = vec![
        ("2MiB", only(&|a| huge(a))),
        ("4KiB", only(&|a| !huge(a))),
        ("process 0", only(&|a| a.thread == ThreadId(0))),
        ("process 1", only(&|a| a.thread == ThreadId(1))),
    ];
    for (name, sub) in cases {
        let g = c.group(name).unwrap_or_else(|| panic!("no group {name}"));
        for (sets, ways) in [(1, 1), (1, 7), (1, 64), (4, 1), (4, 3), (4, 16)] {
            assert_eq!(
                g.misses(sets, ways).unwrap(),
                one_level(&sub, sets, ways, true),
                "{name}: {sets} x {ways}"
            );
        }
    }
}

/// Built-in workloads: every point at 1..64 sets x 1..16 ways and the fully associative curve
/// at sizes up to 4096.
#[test]
fn given_builtin_workloads_then_every_point_is_the_engines_run() {
    for spec in ["gups:log2_words=19,updates=20000", "graph500_bfs:scale=10"] {
        let (name, params) = tlblab_trace::workloads::parse_spec(spec).unwrap();
        let mut src = tlblab_trace::workloads::build(&name, &params, 1).unwrap();
        let mut recs = Vec::new();
        while src.fill(&mut recs, 1 << 16).unwrap() > 0 {}
        recs.truncate(60_000);
        let c = curves(&recs, unified(4096, &[2, 4, 8, 16, 32, 64]));
        let all = c.group("all").unwrap();
        for sets in [2, 4, 8, 16, 32, 64] {
            for ways in 1..=16 {
                assert_eq!(
                    all.misses(sets, ways).unwrap(),
                    one_level(&recs, sets, ways, true),
                    "{spec}: {sets} x {ways}"
                );
            }
        }
        for entries in [1, 2, 3, 16, 64, 100, 500, 1000, 4096] {
            assert_eq!(
                all.misses(1, entries).unwrap(),
                one_level(&recs, 1, entries, true),
                "{spec}: fully associative {entries}"
            );
        }
    }
}
