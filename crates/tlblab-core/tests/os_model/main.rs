//! Model tier for the OS layer: closed-form answers for each policy (issue "The OS model").

#[path = "../common/mod.rs"]
mod common;

use common::*;
use tlblab_core::os::{OsConfig, SwitchPolicy};
use tlblab_core::page_table::PageTableFormat;
use tlblab_core::replacement::ReplacementKind;
use tlblab_core::sched::rm::{run_rate_monotonic, PeriodicTask};
use tlblab_core::sched::rr::{run_round_robin, RrConfig, RrThread};
use tlblab_core::{MachineConfig, RunOptions, System};
use tlblab_trace::record::flush;
use tlblab_trace::{Access, Event, Record, VecSource};
use tlblab_types::{AccessKind, CoreId, PageSize, ThreadId, VirtAddr};

fn sys_with(cfg: MachineConfig, os: OsConfig) -> System {
    System::new(
        cfg,
        RunOptions {
            data_accesses: false,
            os,
            ..RunOptions::default()
        },
    )
    .unwrap()
}

fn ld(t: u32, va: u64) -> Record {
    Record::Access(Access::new(ThreadId(t), AccessKind::Load, VirtAddr(va), 8))
}

/// Threads 0-3, each its own process, loading the same virtual address in turn for `rounds`
/// rounds: four address spaces taking turns on one core.
fn four_processes_in_rounds(rounds: usize) -> Vec<Record> {
    let mut recs = thread_starts(&[0, 1, 2, 3]);
    for _round in 0..rounds {
        for t in 0..4u32 {
            recs.push(ld(t, 0x1000_0000));
        }
    }
    recs
}

/// Two processes (threads 0 and 1) alternate on one core, each touching its 10 pages per turn.
fn alternate(policy: SwitchPolicy, turns: u32) -> tlblab_core::Stats {
    let mut sys = sys_with(
        fa(32),
        OsConfig {
            switch: policy,
            ..OsConfig::default()
        },
    );
    let mut recs = thread_starts(&[0, 1]);
    for turn in 0..turns {
        let t = turn % 2;
        for p in 0..10u64 {
            recs.push(ld(t, 0x1000_0000 + p * 4096)); // same virtual addresses in both processes
        }
    }
    sys.run(&mut VecSource::new(recs)).unwrap();
    sys.stats()
}

#[test]
fn given_two_processes_alternating_over_10_pages_on_a_32_entry_tlb_flush_all_misses_10_per_switch()
{
    let s = alternate(SwitchPolicy::FlushAll, 8);
    assert_eq!(s.total.tlb[0].misses, 80);
    assert_eq!(s.os.address_space_switches, 8);
}

#[test]
fn given_two_processes_alternating_with_asid_tagged_tlbs_then_only_first_touches_miss() {
    let s = alternate(SwitchPolicy::AsidTagged, 8);
    assert_eq!(s.total.tlb[0].misses, 20);
    assert_eq!(s.processes[&0].tlb[0].misses, 10);
    assert_eq!(s.processes[&1].tlb[0].misses, 10);
    assert_eq!(s.os.asid_rollovers, 0);
}

#[test]
fn given_2_bit_asids_when_four_processes_take_turns_then_asids_roll_over_and_flush() {
    let mut sys = sys_with(
        fa(64),
        OsConfig {
            asid_bits: 2,
            switch: SwitchPolicy::AsidTagged,
            ..OsConfig::default()
        },
    );
    let recs = four_processes_in_rounds(3);
    sys.run(&mut VecSource::new(recs)).unwrap();
    let s = sys.stats();
    // Three ASIDs for four spaces: the fourth space of every round forces a new generation.
    assert!(s.os.asid_rollovers >= 3, "{:?}", s.os);
    assert_eq!(
        s.total.tlb[0].misses, 12,
        "each rollover flushes, so every turn misses"
    );
}

#[test]
fn flush_all_on_a_virtually_indexed_machine_pays_the_cache_flush_and_refills() {
    let cfg = tlblab_config_sa1100();
    let mut sys = System::new(cfg, RunOptions::default()).unwrap();
    let mut recs = thread_starts(&[0, 1]);
    for turn in 0..4u32 {
        for p in 0..8u64 {
            recs.push(Record::Access(Access::new(
                ThreadId(turn % 2),
                AccessKind::Store,
                VirtAddr(0x8000 + p * 4096),
                4,
            )));
        }
    }
    sys.run(&mut VecSource::new(recs)).unwrap();
    let s = sys.stats();
    assert_eq!(
        sys.switch_policy(),
        SwitchPolicy::FlushAll,
        "the SA-1100 TLBs have no ASIDs (seed 002 §2)"
    );
    assert_eq!(s.os.address_space_switches, 4);
    // Three switches flush both virtual caches: ≥ 1,000 cycles each (seed 002 §2), more with dirty lines.
    assert_eq!(s.os.cache_flushes, 6);
    assert!(
        s.os.cache_flush_cycles >= 6 * 1000 + 3 * 8 * 64,
        "{}",
        s.os.cache_flush_cycles
    );
    assert_eq!(s.total.tlb[1].misses, 32, "every turn refills its 8 pages");
}

fn tlblab_config_sa1100() -> MachineConfig {
    let mut cfg = fa(32);
    cfg.name = "vivt".into();
    cfg.tlbs[0].tags.asid = false;
    cfg.tlbs[0].kind = tlblab_core::tlb::TlbKind::Instr;
    let mut d = cfg.tlbs[0].clone();
    d.name = "D".into();
    d.kind = tlblab_core::tlb::TlbKind::Data;
    cfg.tlbs.push(d);
    let mut c = cache("DCache", 1, 8192, 32, 1);
    c.indexing = tlblab_core::cache::Indexing::Virtual;
    c.flush_cycles_base = 1000;
    c.flush_cycles_per_dirty_line = 64;
    c.kind = tlblab_core::cache::CacheKind::Data;
    let mut i = c.clone();
    i.name = "ICache".into();
    i.kind = tlblab_core::cache::CacheKind::Instr;
    cfg.caches = vec![i, c];
    cfg
}

#[test]
fn shared_objects_share_frames_across_processes() {
    let mut sys = sys_with(fa(32), OsConfig::default());
    let recs = [
        thread_starts(&[0, 1]),
        vec![
            Record::Event(Event::MapShared {
                process: 0,
                start: VirtAddr(0x1000_0000),
                len: 1 << 20,
                prot: 3,
                page_shift: 12,
                object: 7,
            }),
            Record::Event(Event::MapShared {
                process: 1,
                start: VirtAddr(0x5000_0000),
                len: 1 << 20,
                prot: 3,
                page_shift: 12,
                object: 7,
            }),
            ld(0, 0x1000_3000),
            ld(1, 0x5000_3000),
            ld(1, 0x5000_4000),
        ],
    ]
    .concat();
    sys.run(&mut VecSource::new(recs)).unwrap();
    let a = sys.spaces[0].pt.translate(VirtAddr(0x1000_3000)).unwrap();
    let b = sys.spaces[1].pt.translate(VirtAddr(0x5000_3000)).unwrap();
    let c = sys.spaces[1].pt.translate(VirtAddr(0x5000_4000)).unwrap();
    assert_eq!(a.pfn, b.pfn, "the same page of object 7");
    assert_ne!(b.pfn, c.pfn);
}

#[test]
fn munmap_shoots_the_range_down_on_every_core_with_ipis() {
    let mut cfg = fa(32);
    cfg.cores = 3;
    let mut sys = sys_with(
        cfg,
        OsConfig {
            ipi_cycles: 500,
            ..OsConfig::default()
        },
    );
    let mut recs = thread_starts(&[0, 0]);
    for p in 0..4u64 {
        recs.push(ld(0, 0x1000_0000 + p * 4096));
        recs.push(ld(1, 0x1000_0000 + p * 4096));
    }
    recs.push(Record::Event(Event::Munmap {
        process: 0,
        start: VirtAddr(0x1000_0000),
        len: 2 * 4096,
    }));
    sys.run(&mut VecSource::new(recs)).unwrap();
    let s = sys.stats();
    assert_eq!(s.os.shootdowns, 1);
    assert_eq!(s.os.ipis, 2, "every core but the initiator");
    assert_eq!(
        s.cores[0].invalidations + s.cores[1].invalidations,
        4,
        "2 pages × 2 cores"
    );
    assert_eq!(
        sys.clock(2),
        500,
        "the idle third core still took the interrupt"
    );
}

/// Seed 002's StrongARM (`os.range_flush_whole_itlb`): the SA-1100 has no I-TLB entry
/// operation, so ARM Linux's `flush_tlb_range` (munmap, mprotect) ends by invalidating the
/// whole I-TLB. Given 6 code pages in a 32-entry I-TLB and 5 data pages in a 32-entry D-TLB,
/// when one data page is mprotected and another unmapped, then with the flag the 6 code pages
/// miss again and without it none does; the 3 untouched data pages hit either way.
#[test]
fn given_the_sa1100_range_flush_when_data_pages_are_mprotected_then_the_whole_itlb_is_refilled() {
    let run = |whole: bool| {
        let mut cfg = fa(32);
        cfg.tlbs[0].kind = tlblab_core::tlb::TlbKind::Instr;
        let mut d = cfg.tlbs[0].clone();
        d.name = "D".into();
        d.kind = tlblab_core::tlb::TlbKind::Data;
        cfg.tlbs.push(d);
        let mut sys = sys_with(
            cfg,
            OsConfig {
                range_flush_whole_itlb: whole,
                ..OsConfig::default()
            },
        );
        let fetch = |p: u64| {
            Record::Access(Access::new(
                ThreadId(0),
                AccessKind::Instr,
                VirtAddr(0x8000 + p * 4096),
                4,
            ))
        };
        let data = |p: u64| ld(0, 0x4000_0000 + p * 4096);
        let mut recs = thread_starts(&[0]);
        recs.extend((0..6).map(fetch));
        recs.extend((0..5).map(data));
        recs.push(Record::Event(Event::Mprotect {
            process: 0,
            start: VirtAddr(0x4000_0000),
            len: 4096,
            prot: 1,
        }));
        recs.push(Record::Event(Event::Munmap {
            process: 0,
            start: VirtAddr(0x4000_1000),
            len: 4096,
        }));
        recs.push(Record::Event(Event::PhaseBegin { region: 0 }));
        recs.extend((0..6).map(fetch));
        recs.extend((2..5).map(data));
        recs.push(Record::Event(Event::PhaseEnd { region: 0 }));
        sys.run(&mut VecSource::new(recs)).unwrap();
        let s = sys.stats();
        let ph = &s.phases.last().unwrap().stats;
        (ph.tlb[0].misses, ph.tlb[1].misses, s.cores[0].invalidations)
    };
    // Invalidations: the two data pages' entries, and with the flag the 6 code pages twice
    // (the mprotect's and the munmap's I-TLB flush; the second finds it empty: 6 + 0).
    assert_eq!(run(true), (6, 0, 2 + 6));
    assert_eq!(run(false), (0, 0, 2));
}

#[test]
fn flush_events_empty_the_tlb_but_not_locked_entries() {
    let mut t = tlb("main", 1, 8, 8, ReplacementKind::Lru);
    t.lockable = 1;
    let mut sys = sys_with(
        machine(
            tlblab_core::page_table::PageTableFormat::X86_64_4level,
            vec![t],
        ),
        OsConfig::default(),
    );
    sys.run(&mut VecSource::new(vec![ld(0, 0x1000), ld(0, 0x2000)]))
        .unwrap();
    let req = tlblab_core::tlb::Requester {
        asid: sys.spaces[0].asid,
        ..Default::default()
    };
    assert!(sys.tlbs[0].lock(VirtAddr(0x1000), req));
    sys.run(&mut VecSource::new(vec![
        Record::Event(Event::Flush {
            core: CoreId(0),
            what: flush::TLB,
        }),
        ld(0, 0x1000),
        ld(0, 0x2000),
    ]))
    .unwrap();
    assert_eq!(
        sys.stats().total.tlb[0].misses,
        3,
        "only the unlocked page misses again"
    );
}

/// Thread `t` of process `t`, loading its `pages` pages in turn, `refs` loads in all.
fn looping_thread(t: u32, pinned: Option<usize>, refs: u64, pages: u64) -> RrThread {
    RrThread {
        thread: ThreadId(t),
        process: t,
        pinned,
        source: Box::new(VecSource::new(
            (0..refs)
                .map(|i| ld(t, 0x1000_0000 + (i % pages) * 4096))
                .collect(),
        )),
    }
}

fn run_rr(sys: &mut System, threads: Vec<RrThread>, quantum_cycles: u64, rotate: bool) {
    run_round_robin(
        sys,
        threads,
        RrConfig {
            quantum_cycles,
            rotate,
        },
    )
    .unwrap();
}

#[test]
fn round_robin_with_rotation_migrates_each_thread_every_quantum() {
    let mut cfg = fa(64);
    cfg.cores = 2;
    let mut sys = sys_with(cfg, OsConfig::default());
    let mk = |t: u32| looping_thread(t, Some(t as usize), 400, 8);
    run_rr(&mut sys, vec![mk(0), mk(1)], 1000, true);
    let s = sys.stats();
    assert_eq!(s.total.references, 800);
    assert!(s.os.migrations >= 4, "{:?}", s.os);
    // Each thread refills its 8 pages on each core once; after that both cores hold both
    // processes' pages (ASID-tagged), so rotation costs no more misses.
    assert_eq!(s.total.tlb[0].misses, 32);
}

#[test]
fn round_robin_time_slices_two_threads_on_one_core() {
    let mut sys = sys_with(
        fa(8),
        OsConfig {
            switch: SwitchPolicy::FlushAll,
            ..OsConfig::default()
        },
    );
    let mk = |t: u32| looping_thread(t, None, 1000, 4);
    run_rr(&mut sys, vec![mk(0), mk(1)], 2000, false);
    let s = sys.stats();
    assert_eq!(s.total.references, 2000);
    assert!(s.os.address_space_switches >= 4, "{:?}", s.os);
    // Every slice after a switch starts with a flushed TLB: 4 misses per slice.
    assert_eq!(s.total.tlb[0].misses, 4 * s.os.address_space_switches);
}

fn xeon_l1() -> MachineConfig {
    // A 64-entry 4-way L1 DTLB (16 sets) as on the Xeon E5-2650 (seed 003 Ch. 5), alone.
    let mut t = tlb("L1D", 1, 64, 4, ReplacementKind::Lru);
    t.page_sizes = vec![PageSize::Size4K];
    machine(
        tlblab_core::page_table::PageTableFormat::X86_64_4level,
        vec![t],
    )
}

fn two_tasks(t2_offset_pages: u64) -> Vec<tlblab_core::os::JobStats> {
    let mut sys = sys_with(xeon_l1(), OsConfig::default());
    // Each task: 3 pages of one set (16 pages apart). Same set → 6 pages in a 4-way set.
    let pages = |base: u64| (0..3).map(|i| base + i * 16 * 4096).collect::<Vec<_>>();
    let tasks = vec![
        PeriodicTask {
            name: "T1".into(),
            phase: 0,
            period: 4000,
            deadline: 0,
            pages: pages(0x1000_0000),
            passes: 5,
        },
        PeriodicTask {
            name: "T2".into(),
            phase: 0,
            period: 8000,
            deadline: 0,
            pages: pages(0x2000_0000 + t2_offset_pages * 4096),
            passes: 5,
        },
    ];
    run_rate_monotonic(&mut sys, &tasks, 6, 0).unwrap()
}

#[test]
fn rate_monotonic_tasks_on_the_same_tlb_set_interfere_and_on_different_sets_do_not() {
    let same = two_tasks(0);
    let diff = two_tasks(1);
    let t1_misses = |jobs: &[tlblab_core::os::JobStats]| -> u64 {
        jobs.iter()
            .filter(|j| j.task == 0 && j.job > 0)
            .map(|j| j.tlb_misses[0])
            .sum()
    };
    assert_eq!(
        t1_misses(&diff),
        0,
        "colored apart, T1 never misses after warm-up (seed 003 Fig. 6.3 'diff set')"
    );
    assert!(
        t1_misses(&same) > 0,
        "sharing a set, T2 evicts T1's entries"
    );
    let t1_jobs = same.iter().filter(|j| j.task == 0).count();
    assert_eq!(t1_jobs, 7, "warm-up + 6 jobs");
    assert!(same.iter().all(|j| !j.deadline_missed));
    // Rate-monotonic order: T1 (shorter period) always starts at its release.
    for j in same.iter().filter(|j| j.task == 0 && j.job > 0) {
        assert_eq!(j.start, j.release, "{j:?}");
    }
}

#[test]
fn smt_siblings_do_not_share_hw_thread_tagged_entries() {
    let run = |tagged: bool| {
        let mut cfg = fa(64);
        cfg.threads_per_core = 2;
        cfg.tlbs[0].tags.hw_thread = tagged;
        let mut sys = sys_with(cfg, OsConfig::default());
        let mut recs = thread_starts(&[0, 0]);
        for p in 0..10u64 {
            recs.push(ld(0, 0x1000_0000 + p * 4096));
        }
        for p in 0..10u64 {
            recs.push(ld(1, 0x1000_0000 + p * 4096));
        }
        sys.run(&mut VecSource::new(recs)).unwrap();
        sys.stats().total.tlb[0].misses
    };
    assert_eq!(
        run(true),
        20,
        "Zen 3: entries private to the hardware thread (seed 001 §4.4.5.1)"
    );
    assert_eq!(
        run(false),
        10,
        "shared: the sibling hits the other's entries"
    );
}

#[test]
fn a_helper_thread_on_another_core_warms_page_table_entries_in_the_shared_cache() {
    use tlblab_core::sched::helper::{run_with_helpers, HelperThread};
    use tlblab_trace::workloads::{build, parse_spec};
    let run = |with_helper: bool| {
        let mut cfg = fa(64);
        cfg.cores = 2;
        cfg.caches = vec![
            cache("L1D", 1, 32 << 10, 8, 4),
            cache("L2", 2, 256 << 10, 8, 12),
            {
                let mut l3 = cache("L3", 3, 4 << 20, 16, 40);
                l3.shared = true;
                l3
            },
        ];
        let mut sys = System::new(cfg, RunOptions::default()).unwrap();
        let (n, p) = parse_spec("random:pages=32768,accesses=60000,base=0x40000000").unwrap();
        let mut app = build(&n, &p, 1).unwrap();
        let space = sys.create_space().unwrap();
        sys.bind_thread(ThreadId(0), space, 0);
        let helpers = if with_helper {
            // One load per page over the application's region, repeatedly (user-mode PT-Baker).
            let (n, p) =
                parse_spec("strided:pages=32768,stride=4096,rounds=40,base=0x40000000").unwrap();
            vec![HelperThread {
                thread: ThreadId(9),
                space,
                cpu: 1,
                burst: 64,
                pause_cycles: 0,
                source: build(&n, &p, 1).unwrap(),
            }]
        } else {
            vec![]
        };
        run_with_helpers(&mut sys, &mut app, helpers).unwrap();
        let s = sys.stats();
        let mem = s.sources.len() - 1;
        (
            s.threads[&0].walk_refs_by_source[mem],
            s.threads[&0].walk_refs,
        )
    };
    let (alone_mem, alone_refs) = run(false);
    let (helped_mem, helped_refs) = run(true);
    assert!(alone_refs > 0 && helped_refs > 0);
    assert!(
        helped_mem < alone_mem,
        "helper should cut walk references served by memory: {helped_mem} vs {alone_mem}"
    );
}

/// Per-thread counters are derived (what a hardware thread counted between a thread's switch-in
/// and switch-out), not counted twice; they must still add up: every reference of the trace is
/// some thread's, and the threads' TLB and walk counters sum to the machine's.
#[test]
fn per_thread_counters_add_up_to_the_total_across_switches_and_migrations() {
    let mut cfg = machine(
        PageTableFormat::X86_64_4level,
        vec![
            tlb("L1", 1, 16, 16, ReplacementKind::Lru),
            tlb("L2", 2, 64, 4, ReplacementKind::Lru),
        ],
    );
    cfg.cores = 2;
    cfg.caches = vec![cache("L1D", 1, 4096, 4, 2)];
    let mut sys = System::new(cfg, RunOptions::default()).unwrap();
    let mut recs = Vec::new();
    let mut expected = [0u64; 3];
    for round in 0..40u64 {
        for t in 0..3u32 {
            for p in 0..(5 + t as u64) {
                recs.push(ld(
                    t,
                    0x1000_0000 * (t as u64 + 1) + ((p * 7 + round) % 50) * 4096,
                ));
                expected[t as usize] += 1;
            }
        }
        if round % 7 == 3 {
            recs.push(Record::Event(Event::Migrate {
                thread: ThreadId((round % 3) as u32),
                core: CoreId((round % 2) as u16),
            }));
        }
    }
    sys.run(&mut VecSource::new(recs)).unwrap();
    let s = sys.stats();
    assert!(s.os.context_switches > 3 && s.os.migrations > 0);
    for t in 0..3u32 {
        assert_eq!(s.threads[&t].references, expected[t as usize], "thread {t}");
    }
    let sum = |f: &dyn Fn(&tlblab_core::stats::UnitStats) -> u64| -> u64 {
        s.threads.values().map(f).sum()
    };
    assert_eq!(sum(&|u| u.references), s.total.references);
    assert_eq!(sum(&|u| u.walks), s.total.walks);
    assert_eq!(sum(&|u| u.walk_refs), s.total.walk_refs);
    for l in 0..s.tlb_levels.len() {
        assert_eq!(
            sum(&|u| u.tlb[l].misses),
            s.total.tlb[l].misses,
            "level {l}"
        );
        assert_eq!(sum(&|u| u.tlb[l].hits), s.total.tlb[l].hits, "level {l}");
    }
    // Cycles: the threads' plus the OS work charged to cores (switch costs) make the total.
    assert_eq!(sum(&|u| u.cycles) + s.os.switch_cycles, s.total.cycles);
}

/// The kernel's global mappings (`os.kernel_pages`): every switch touches the kernel's pages
/// through the TLB; they miss once and then hit for every ASID, across rollovers (a rollover
/// flushes the retired ASIDs' entries only). With no caches, a kernel touch costs the level's
/// latency and the word's load (memory latency), plus the descriptor's load after a miss: the
/// switch cycles are closed-form, and a rollover that also dropped the global entries would
/// add a descriptor load per kernel page per rollover.
#[test]
fn given_kernel_pages_when_asids_roll_over_then_the_global_kernel_entries_stay() {
    const KERNEL: u32 = 2;
    let mut cfg = fa(64);
    cfg.tlbs[0].latency = 1;
    let mut sys = sys_with(
        cfg,
        OsConfig {
            asid_bits: 2,
            switch: SwitchPolicy::AsidTagged,
            kernel_pages: KERNEL,
            ..OsConfig::default()
        },
    );
    let recs = four_processes_in_rounds(3);
    sys.run(&mut VecSource::new(recs)).unwrap();
    let s = sys.stats();
    assert!(s.os.asid_rollovers >= 3, "{:?}", s.os);
    let switches = s.os.context_switches;
    assert_eq!(switches, 12, "{:?}", s.os);
    let memory = 100;
    let touch_hit = 1 + memory;
    assert_eq!(
        s.os.switch_cycles,
        switches * KERNEL as u64 * touch_hit + KERNEL as u64 * memory,
        "the kernel's pages walk once, on the first switch, and hit ever after ({} rollovers)",
        s.os.asid_rollovers
    );
    let globals: Vec<_> = sys.tlbs[0].entries().filter(|e| e.global).collect();
    assert_eq!(globals.len(), KERNEL as usize, "{globals:?}");
    assert_eq!(
        s.total.tlb[0].misses, 12,
        "each rollover still flushes the threads' own entries"
    );
}

/// A traced kernel path's image (`MapShared` with `prot::GLOBAL`, as seed 002's workloads map
/// ARM Linux's kernel): four processes take turns on one core with 2-bit ASIDs, each loading
/// its own page and the kernel's. The kernel page walks once, for the first process: its
/// entry is global, so it hits for every other ASID and survives every rollover; each
/// process's own page misses at every turn after a rollover flushed it. The same trace with
/// the kernel mapped without the bit walks the kernel page once per process and rollover.
#[test]
fn given_a_global_kernel_image_when_processes_take_turns_then_its_entry_serves_every_asid() {
    const KERNEL_VA: u64 = 0xc000_0000;
    let run = |prot: u8| {
        let cfg = machine(
            PageTableFormat::Armv7Short,
            vec![tlb("L1", 1, 64, 64, ReplacementKind::Lru)],
        );
        let mut sys = sys_with(
            cfg,
            OsConfig {
                asid_bits: 2,
                switch: SwitchPolicy::AsidTagged,
                ..OsConfig::default()
            },
        );
        let mut recs = Vec::new();
        for t in 0..4u32 {
            recs.push(Record::Event(Event::ThreadStart {
                thread: ThreadId(t),
                process: t,
            }));
            recs.push(Record::Event(Event::MapShared {
                process: t,
                start: VirtAddr(KERNEL_VA),
                len: 1 << 20,
                prot,
                page_shift: 20,
                object: 7,
            }));
        }
        for _round in 0..3 {
            for t in 0..4u32 {
                recs.push(ld(t, 0x1000_0000));
                recs.push(ld(t, KERNEL_VA + 0x40));
            }
        }
        sys.run(&mut VecSource::new(recs)).unwrap();
        let globals = sys.tlbs[0].entries().filter(|e| e.global).count();
        (sys.stats(), globals)
    };
    use tlblab_trace::record::prot;
    let (global, globals) = run(prot::READ | prot::GLOBAL);
    assert!(global.os.asid_rollovers >= 3, "{:?}", global.os);
    assert_eq!(globals, 1, "the kernel's one section entry");
    assert_eq!(
        global.total.tlb[0].misses,
        12 + 1,
        "each turn's own page, and the kernel's once"
    );
    let (private, globals) = run(prot::READ);
    assert_eq!(globals, 0);
    assert_eq!(
        private.total.tlb[0].misses,
        12 + 12,
        "without the global bit the kernel's entry is each ASID's, flushed with it"
    );
}

mod kernel;
