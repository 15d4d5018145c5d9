//! Parity of the multi-core timeline: `run` against the order spelled out access by access
//! (smallest clock next, events after every queued access), limits, switches, runs apart,
//! slices read from memory.

use super::*;

/// What `System::run` does with a trace whose threads run on several hardware threads, spelled
/// out with `access` and `event` (ARCHITECTURE.md "The engine in one paragraph", the multi-core timeline): in trace
/// order while only the first hardware thread to have work has had any; from the first access
/// of another on, every access waits in its hardware thread's queue, and the hardware thread
/// with the smallest clock (the lowest index among equals) runs its oldest; an event first
/// runs every queued access. Valid for traces shorter than `run`'s look-ahead window (64 Ki
/// records), all of which it queues before running any.
fn scheduled_access_by_access(
    sys: &mut System,
    records: &[Record],
    cpu_of: impl Fn(ThreadId) -> usize,
    limit: u64,
) {
    use std::collections::VecDeque;
    let cpus = sys.config.cores * sys.config.threads_per_core;
    let mut queues: Vec<VecDeque<Access>> = vec![VecDeque::new(); cpus];
    let mut first_cpu = None;
    let mut multi = false;
    let drain = |sys: &mut System, queues: &mut Vec<VecDeque<Access>>| {
        while sys.stats().total.references < limit {
            let next = (0..cpus)
                .filter(|&c| !queues[c].is_empty())
                .min_by_key(|&c| (sys.clock(c), c));
            let Some(c) = next else { break };
            let a = queues[c].pop_front().unwrap();
            sys.access(a).unwrap();
        }
    };
    for &r in records {
        match r {
            Record::Access(a) => {
                let cpu = cpu_of(a.thread);
                if !multi && *first_cpu.get_or_insert(cpu) != cpu {
                    multi = true;
                }
                if multi {
                    queues[cpu].push_back(a);
                } else if sys.stats().total.references < limit {
                    sys.access(a).unwrap();
                }
            }
            Record::Event(e) => {
                drain(sys, &mut queues);
                // Nothing after the limit's reference runs, events included.
                if sys.stats().total.references >= limit {
                    break;
                }
                sys.event(e).unwrap();
            }
        }
    }
    drain(sys, &mut queues);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Threads on several hardware threads (two or three cores, with and without SMT siblings,
    /// TLB levels private or shared by the cores), in two address spaces: `run_slice` runs
    /// them on one timeline exactly as `scheduled_access_by_access` spells the timeline out,
    /// in every run mode, on random machines and on zen3-shaped ones (whose data paths become
    /// `FullPair`s once full), with cache flushes and accesses crossing a page between.
    #[test]
    fn runs_on_several_hardware_threads_agree_with_the_timeline_access_by_access(
        (random_cfg, caches_on) in machine(),
        shaped in any::<bool>(),
        l1 in first_levels(),
        l2_ways in prop_oneof![Just(4usize), Just(16)],
        cores in 2usize..4,
        smt in any::<bool>(),
        shared in proptest::collection::vec(any::<bool>(), 4),
        threads in 2u32..5,
        recs in proptest::collection::vec((0u32..4, 0u8..3, 0u64..200, prop_oneof![40 => Just(false), 1 => Just(true)], prop_oneof![60 => Just(false), 1 => Just(true)]), 1..1500),
        seed in 0u64..1000,
        mode in 0u8..3,
        limit in prop_oneof![3 => Just(0u64), 1 => 1u64..1500],
        started in any::<bool>(),
    ) {
        let mut cfg = if shaped {
            let mut cfg = common::shaped_machine(l1, (16, l2_ways, ReplacementKind::Lru), 1, false);
            cfg.caches = vec![common::cache("C1", 1, 4 << 10, 4, 4), common::cache("C2", 2, 32 << 10, 8, 12)];
            cfg
        } else {
            random_cfg
        };
        cfg.cores = cores;
        cfg.threads_per_core = 1 + smt as usize;
        for (t, s) in cfg.tlbs.iter_mut().zip(&shared) {
            t.shared = *s && !shaped;
        }
        for c in cfg.caches.iter_mut() {
            c.flush_cycles_per_dirty_line = 1000;
        }
        let opts = match mode {
            0 => RunOptions::tlb_only(seed),
            1 => RunOptions::no_caches(seed),
            _ => RunOptions { seed, caches: caches_on || shaped, data_accesses: caches_on || shaped, ..RunOptions::default() },
        };
        let opts = RunOptions { max_references: limit, ..opts };
        let cpus = cores * cfg.threads_per_core;
        let cpu_of = |t: ThreadId| t.0 as usize % cpus;
        let setup = || {
            let mut sys = System::new(cfg.clone(), opts).unwrap();
            let spaces = [sys.create_space().unwrap(), sys.create_space().unwrap()];
            for t in 0..threads {
                sys.bind_thread(ThreadId(t), spaces[t as usize % 2], cpu_of(ThreadId(t)));
            }
            sys
        };
        // `started`: every thread has run once before a flush, so that from there on each
        // hardware thread runs the thread it ran last (the TLB-only timeline then runs each
        // hardware thread's queue apart, `System::run_apart`, when no TLB level is shared).
        let start = (0..threads).map(|t| Record::Access(Access::new(ThreadId(t), AccessKind::Load, VirtAddr(0x7000_0000), 8)));
        let records: Vec<Record> = start
            .chain([Record::Event(Event::Flush { core: CoreId(0), what: flush::CACHES })])
            .filter(|_| started)
            .chain(recs.iter().map(|&(t, k, page, crossing, flush)| {
                if flush {
                    return Record::Event(Event::Flush { core: CoreId(0), what: flush::CACHES });
                }
                let kind = [AccessKind::Load, AccessKind::Store, AccessKind::Instr][k as usize];
                let offset = if crossing { 0xffc } else { (page * 72) & 0xff8 };
                let va = 0x4000_0000 + page * 4096 + offset;
                Record::Access(Access::new(ThreadId(t % threads), kind, VirtAddr(va), 8))
            }))
            .collect();
        let mut by_run = setup();
        by_run.run_slice(&records).unwrap();
        let mut by_access = setup();
        let limit = if limit == 0 { u64::MAX } else { limit };
        scheduled_access_by_access(&mut by_access, &records, cpu_of, limit);
        for sys in [&mut by_run, &mut by_access] {
            sys.event(Event::Flush { core: CoreId(0), what: flush::CACHES }).unwrap();
        }
        same_end_state(&by_run, &by_access)?;
        for cpu in 0..cpus {
            prop_assert_eq!(by_run.clock(cpu), by_access.clock(cpu), "clock of hardware thread {}", cpu);
        }
        prop_assert_eq!(by_run.os_stats(), by_access.os_stats());
        agrees_with_the_reference(&by_run, opts, (2, threads), |t| (t as usize % 2, cpu_of(ThreadId(t))), &records, true).map_err(TestCaseError::fail)?;
    }
}

/// The two-core machine of the tests below: one hardware thread per core, each with its own
/// shaped TLB levels (16-entry fully associative first level, 16 × 4 second level).
fn two_cores() -> MachineConfig {
    let mut cfg = common::shaped_machine((1, 16), (16, 4, ReplacementKind::Lru), 1, false);
    cfg.cores = 2;
    cfg.threads_per_core = 1;
    cfg
}

/// `records` run by `run_slice` and by `scheduled_access_by_access` on two systems made alike
/// (`cfg`, `opts`; thread t of `threads` in address space t % `spaces` on hardware thread
/// t % 2), asserting they end alike: statistics, TLB contents, clocks, OS counters. `what`
/// names the case in a failure. Returns the system `run_slice` ran.
fn agrees_with_the_timeline(
    cfg: &MachineConfig,
    opts: RunOptions,
    (spaces, threads): (usize, u32),
    records: &[Record],
    what: &str,
) -> System {
    let setup = || {
        let mut sys = System::new(cfg.clone(), opts).unwrap();
        let ids: Vec<_> = (0..spaces).map(|_| sys.create_space().unwrap()).collect();
        for t in 0..threads {
            sys.bind_thread(ThreadId(t), ids[t as usize % spaces], t as usize % 2);
        }
        sys
    };
    let limit = match opts.max_references {
        0 => u64::MAX,
        n => n,
    };
    let mut by_run = setup();
    by_run.run_slice(records).unwrap();
    let mut by_access = setup();
    scheduled_access_by_access(&mut by_access, records, |t| t.0 as usize % 2, limit);
    same_end_state(&by_run, &by_access).unwrap_or_else(|e| panic!("{what}: {e}"));
    for cpu in 0..2 {
        assert_eq!(by_run.clock(cpu), by_access.clock(cpu), "{what}, cpu {cpu}");
    }
    assert_eq!(by_run.os_stats(), by_access.os_stats(), "{what}");
    agrees_with_the_reference(
        &by_run,
        opts,
        (spaces, threads),
        |t| (t as usize % spaces, t as usize % 2),
        records,
        false,
    )
    .unwrap_or_else(|e| panic!("{what}, against the reference: {e}"));
    by_run
}

fn load(t: u32, va: u64) -> Record {
    Record::Access(Access::new(ThreadId(t), AccessKind::Load, VirtAddr(va), 8))
}

const FLUSH_CACHES: Record = Record::Event(Event::Flush {
    core: CoreId(0),
    what: flush::CACHES,
});

/// A reference limit that falls among the accesses queued on the timeline, on two independent
/// hardware threads (TLB-only, private levels), where every access crosses a page and so is
/// two references: the timeline cuts them off where the interleaving puts the limit, as
/// `scheduled_access_by_access` does, and not after the queued accesses' count (which would
/// let `System::run_apart` run all of them).
#[test]
fn a_limit_among_queued_page_crossing_accesses_cuts_where_the_timeline_does() {
    let access = |t: u32, page: u64, offset: u64| {
        load(t, 0x4000_0000 + (page + 1000 * t as u64) * 4096 + offset)
    };
    // Both threads run once (drained at the flush: from there on each hardware thread runs
    // the thread it ran last), then 1000 accesses, each crossing into the next page.
    let records: Vec<Record> = [access(0, 0, 0), access(1, 0, 0), FLUSH_CACHES]
        .into_iter()
        .chain((0..1000u64).map(|i| access((i % 2) as u32, i % 300, 0xffc)))
        .collect();
    for limit in [1200u64, 1501, 2001, 2004, 2005] {
        let opts = RunOptions {
            max_references: limit,
            ..RunOptions::tlb_only(3)
        };
        // (An access at the limit that crosses a page counts both its references, both ways.)
        agrees_with_the_timeline(
            &two_cores(),
            opts,
            (1, 2),
            &records,
            &format!("limit {limit}"),
        );
    }
}

/// Context switches among the queued accesses of independent hardware threads (TLB-only,
/// private levels): two cores each alternating between threads of five address spaces, under
/// `flush_all` and under `asid_tagged` with 2-bit ASIDs (three per generation, so new ASIDs
/// and rollovers come every few switches). The timeline runs them as
/// `scheduled_access_by_access` spells it out: apart only where a switch changes nothing
/// beyond its hardware thread (`System::switch_apart`), in timeline order where a new ASID's
/// number or a rollover's flush of every core depends on it.
#[test]
fn switches_among_queued_accesses_run_as_the_timeline_does() {
    for policy in [SwitchPolicy::FlushAll, SwitchPolicy::AsidTagged] {
        for (spaces, threads) in [(2usize, 4u32), (5, 10)] {
            let mut opts = RunOptions::tlb_only(7);
            opts.os.switch = policy;
            opts.os.asid_bits = 2;
            opts.os.switch_cycles = 100;
            let mut rng = SplitMix64::new(spaces as u64);
            let mut records = Vec::new();
            let mut t = 0u32;
            for i in 0..3000u64 {
                if i % 500 == 499 {
                    records.push(FLUSH_CACHES);
                }
                // Runs of about 20 accesses per thread, so each core switches now and then.
                if rng.below(20) == 0 {
                    t = rng.below(threads as u64) as u32;
                }
                records.push(load(
                    t,
                    0x4000_0000 + rng.below(96) * 4096 + 8 * rng.below(512),
                ));
            }
            let what = format!("{policy:?}, {spaces} spaces");
            let sys =
                agrees_with_the_timeline(&two_cores(), opts, (spaces, threads), &records, &what);
            assert!(
                sys.os_stats().context_switches > 40,
                "{what}: {:?}",
                sys.os_stats()
            );
        }
    }
}

/// Walks without caches on two independent hardware threads, two address spaces: a queue runs
/// apart only once every page it touches is mapped. First touches take frames from the
/// allocator both spaces share, so until then the frames, and the TLB entries that hold them,
/// follow the timeline's order (`System::all_mapped`); later, walks read their own space's
/// table and fill their own core's page-walk caches. Compared with the timeline spelled out
/// access by access, with pages first touched both before and among the queued accesses.
#[test]
fn walks_without_caches_run_apart_only_over_mapped_pages() {
    let access = |t: u32, page: u64, offset: u64| load(t, 0x4000_0000 + page * 4096 + offset);
    let mut rng = SplitMix64::new(9);
    // Every thread touches pages 0..60 (first touches, on the timeline); then random pages of
    // 0..120 in slices of a few dozen accesses (the first touches of 60..120 among them),
    // drained at a flush every 400 records.
    let mut records: Vec<Record> = (0..60u64)
        .flat_map(|p| (0..4u32).map(move |t| (t, p)))
        .map(|(t, p)| access(t, p, 0))
        .collect();
    records.push(FLUSH_CACHES);
    let mut t = 0u32;
    for i in 0..6000u64 {
        if i % 400 == 399 {
            records.push(FLUSH_CACHES);
        }
        if rng.below(30) == 0 {
            t = rng.below(4) as u32;
        }
        let offset = if rng.below(50) == 0 {
            0xffc
        } else {
            8 * rng.below(500)
        };
        records.push(access(t, rng.below(120), offset));
    }
    let sys = agrees_with_the_timeline(
        &two_cores(),
        RunOptions::no_caches(5),
        (2, 4),
        &records,
        "no caches",
    );
    assert!(sys.stats().total.walks > 1000);
}

/// Nothing after the reference limit runs, events included, wherever the limit falls: in
/// trace order before a second hardware thread has work (`run_direct`), or among the queued
/// accesses of several (the timeline), as `scheduled_access_by_access` does. Before, an event
/// after the limit ran when it came in the same batch of records as the accesses before it.
#[test]
fn events_after_the_reference_limit_do_not_run() {
    let access = |t: u32, page: u64| load(t, 0x4000_0000 + page * 4096);
    let flush = Record::Event(Event::Flush {
        core: CoreId(0),
        what: flush::TLB | flush::CACHES,
    });
    let records = [
        access(0, 0),
        flush,
        access(1, 1),
        access(0, 2),
        flush,
        access(1, 3),
        flush,
    ];
    for limit in 1..=5u64 {
        let opts = RunOptions {
            max_references: limit,
            ..RunOptions::default()
        };
        let sys = agrees_with_the_timeline(
            &two_cores(),
            opts,
            (1, 2),
            &records,
            &format!("limit {limit}"),
        );
        assert_eq!(sys.stats().total.references, limit.min(4), "limit {limit}");
    }
}

/// A long trace of two threads on two cores in the full model (not independent: the timeline
/// interleaves them access by access), more than the timeline's look-ahead, so that each
/// hardware thread's queue is refilled before it runs empty and drops the part already taken
/// (`CpuQueue::pop_front`) many times: the run ends as the timeline spelled out access by
/// access does, statistics, TLB contents, clocks and all.
#[test]
fn a_timeline_whose_queues_never_run_empty_runs_as_access_by_access() {
    let mut cfg = two_cores();
    cfg.caches = vec![
        common::cache("C1", 1, 4 << 10, 4, 4),
        common::cache("C2", 2, 32 << 10, 8, 12),
    ];
    let mut rng = SplitMix64::new(11);
    // Runs of a few accesses per thread over 3,000 pages each, as a scheduler's slices would
    // interleave them: neither queue empties while records keep coming.
    let mut t = 0u32;
    let records: Vec<Record> = (0..300_000u64)
        .map(|_| {
            if rng.below(4) == 0 {
                t ^= 1;
            }
            load(
                t,
                0x4000_0000 + (t as u64 * 4096 + rng.below(3000)) * 4096 + 8 * rng.below(512),
            )
        })
        .collect();
    let sys = agrees_with_the_timeline(&cfg, RunOptions::default(), (2, 2), &records, "full model");
    assert_eq!(sys.stats().total.references, 300_000);
    assert!(sys.stats().total.walks > 10_000);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// A program fetching on one code page between data references that miss the first level
    /// (a large random footprint): the memo lane's one-fetch runs count as failed tries
    /// (`System::run_direct`, `MEMO_SHORT`), the fast lane takes the stream, and its walking
    /// pair loop counts each fetch on the instruction path's previous page, with its cache
    /// access, without ending the stretch (`FastLane::walking_fetch_memo_hit`); a fetch on
    /// another page that hits the instruction path's first level is settled between two pair
    /// stretches (`FastLane::fetch_first_level_hit`). Streams with runs of fetches long enough
    /// to hand the stretch back, fetches taking turns on 1..4 code pages or moving to others,
    /// and stores, on zen3-shaped machines TLB-only and with walks, with and without caches
    /// (and a few random machines): `run_slice` agrees with `access` record by record.
    #[test]
    fn fetches_between_walking_data_references_agree_with_access_by_access(
        first in first_levels(),
        shaped in prop_oneof![4 => Just(true), 1 => Just(false)],
        (random_cfg, _) in machine(),
        refs in proptest::collection::vec((0u64..6000, 0u8..8, 0u8..4, 0u64..1024), 500..4000),
        seed in 0u64..1000,
        caches_on in any::<bool>(),
        tlb_only in prop_oneof![3 => Just(false), 1 => Just(true)],
        code_pages in 1u64..5,
    ) {
        let cfg = if shaped {
            let mut cfg = common::shaped_machine(first, (16, 16, ReplacementKind::Lru), 2, false);
            cfg.caches = vec![common::cache("C1", 1, 4 << 10, 4, 4), common::cache("C2", 2, 32 << 10, 8, 12)];
            cfg
        } else {
            random_cfg
        };
        let opts = if tlb_only {
            RunOptions::tlb_only(seed)
        } else {
            RunOptions { seed, caches: caches_on, data_accesses: caches_on, ..RunOptions::default() }
        };
        agrees_record_by_record(&cfg, opts, &fetch_stream(&refs, code_pages))?;
    }

    /// Fetches taking turns on 2..4 code pages between data references that miss the first
    /// level, on machines whose instruction path's first level is fully associative of 64
    /// ways (zen3's L1I) or 32 (the SA-1100's ITLB): the pair loops borrow it beside the data path and settle a fetch on
    /// another page that hits it without ending their stretch (`FastLane::instr_in_pair`,
    /// `instr_first_hit`; with walks `walking_fetch_other_hit`). TLB-only and with walks,
    /// with and without caches, a unified second level (where the lane does not borrow it) now
    /// and then: `run_slice` agrees with `access` record by record.
    #[test]
    fn fetches_on_other_code_pages_settled_in_the_pair_loop_agree_with_access_by_access(
        first_ways in prop_oneof![Just(64usize), Just(32usize)],
        refs in proptest::collection::vec((0u64..6000, 0u8..8, 0u8..4, 0u64..1024), 500..4000),
        seed in 0u64..1000,
        caches_on in any::<bool>(),
        tlb_only in any::<bool>(),
        unified_l2 in prop_oneof![4 => Just(false), 1 => Just(true)],
        code_pages in 2u64..5,
    ) {
        let mut cfg = common::shaped_machine((1, first_ways), (16, 16, ReplacementKind::Lru), 2, unified_l2);
        cfg.caches = vec![common::cache("C1", 1, 4 << 10, 4, 4), common::cache("C2", 2, 32 << 10, 8, 12)];
        let opts = if tlb_only {
            RunOptions::tlb_only(seed)
        } else {
            RunOptions { seed, caches: caches_on, data_accesses: caches_on, ..RunOptions::default() }
        };
        agrees_record_by_record(&cfg, opts, &fetch_stream(&refs, code_pages))?;
    }
}

/// The records of the fetch proptests: per (data page, fetches, kind, offset), mostly one
/// fetch before the data reference, sometimes none, sometimes a run of 40 (more than
/// `HAND_BACK` first-level hits in a row); the fetches take turns on `code_pages` code pages,
/// which now and then jump to others; a quarter of the data references are stores.
fn fetch_stream(refs: &[(u64, u8, u8, u64)], code_pages: u64) -> Vec<Record> {
    let mut code_page = 0u64;
    let mut turn = 0u64;
    let mut records = Vec::new();
    for &(page, fetches, kind, offset) in refs {
        let fetches = match fetches {
            0 => 0,
            1 => 40,
            _ => 1,
        };
        if kind == 3 {
            code_page = (code_page + 5) % 16;
        }
        for f in 0..fetches {
            turn += 1;
            let page = code_page + turn % code_pages;
            let va = 0x40_0000 + (page << 12) + ((offset + 4 * f) & 0xffc);
            records.push(Record::Access(Access::new(
                ThreadId(0),
                AccessKind::Instr,
                VirtAddr(va),
                4,
            )));
        }
        let kind = if kind == 0 {
            AccessKind::Store
        } else {
            AccessKind::Load
        };
        let va = 0x4000_0000 + (page << 12) + (offset & 0x1ff) * 8;
        records.push(Record::Access(Access::new(
            ThreadId(0),
            kind,
            VirtAddr(va),
            8,
        )));
    }
    records
}

/// A slice of more records than `run_slice` takes to be in the host's caches (64K): the lanes'
/// loops then run their copies that hint the records ahead (`System::records_in_memory`),
/// the memo lane's out of line. Phases that each lane takes in turn (runs on a few pages for
/// the memo lane; random pages over more than the second level holds, with fetches on one
/// code page, for the fast lane's pair loops; random pages within the first level), 100K
/// records, zen3's TLB shape: `run_slice` agrees with `access` record by record in every run
/// mode, and with `run` (batches from a source, the copies without hints).
#[test]
fn a_slice_read_from_memory_agrees_with_access_by_access_and_with_run() {
    let mut rng = SplitMix64::new(11);
    let mut records = Vec::new();
    for phase in 0..25u64 {
        for i in 0..4000u64 {
            let (kind, page) = match phase % 3 {
                0 => (AccessKind::Load, 7 + i / 500),
                1 if i % 3 == 0 => (AccessKind::Instr, 1),
                1 => (AccessKind::Load, 100 + rng.below(5000)),
                _ => (AccessKind::Store, 200 + rng.below(40)),
            };
            let va = 0x4000_0000 + page * 4096 + rng.below(64) * 8;
            records.push(Record::Access(Access::new(
                ThreadId(0),
                kind,
                VirtAddr(va),
                8,
            )));
        }
    }
    assert!(records.len() > 1 << 16);
    let mut cfg = common::shaped_machine((1, 64), (16, 16, ReplacementKind::Lru), 1, false);
    cfg.caches = vec![
        common::cache("C1", 1, 4 << 10, 4, 4),
        common::cache("C2", 2, 32 << 10, 8, 12),
    ];
    for opts in [
        RunOptions::tlb_only(3),
        RunOptions::no_caches(3),
        RunOptions::default(),
    ] {
        let mut by_slice = one_thread_system(&cfg, opts);
        by_slice.run_slice(&records).unwrap();
        let mut by_access = one_thread_system(&cfg, opts);
        for r in &records {
            let Record::Access(a) = *r else {
                unreachable!()
            };
            by_access.access(a).unwrap();
        }
        common::end_state_difference(&by_slice, &by_access).unwrap_or_else(|e| panic!("{e}"));
        let mut by_run = one_thread_system(&cfg, opts);
        by_run
            .run(&mut tlblab_trace::VecSource::new(records.clone()))
            .unwrap();
        common::end_state_difference(&by_slice, &by_run).unwrap_or_else(|e| panic!("{e}"));
        agrees_with_the_reference(&by_slice, opts, (1, 1), |_| (0, 0), &records, false)
            .unwrap_or_else(|e| panic!("against the reference: {e}"));
    }
}
