//! Model tier for the lockdown technique (seed 004): closed forms on a Cortex-A9-shaped data
//! path (a 32-entry fully associative micro TLB over a 128-entry 2-way main TLB of random
//! replacement with 4 lockable entries, seed 004 §III).

mod common;

use common::*;
use tlblab_core::page_table::PageTableFormat;
use tlblab_core::registry::install;
use tlblab_core::replacement::ReplacementKind;
use tlblab_core::techniques::parse_spec;
use tlblab_core::tlb::TlbKind;
use tlblab_core::{RunOptions, System};
use tlblab_trace::record::{flush, ALL_CORES};
use tlblab_trace::{Access, Event};
use tlblab_types::{AccessKind, CoreId, SplitMix64, ThreadId, VirtAddr};

const MAIN_LATENCY: u64 = 3;

fn a9_like(cores: usize) -> tlblab_core::machine::MachineConfig {
    let mut micro = tlb("uTLB-D", 1, 32, 32, ReplacementKind::Lru);
    micro.kind = TlbKind::Data;
    micro.latency = 0;
    let mut main = tlb("main", 2, 128, 2, ReplacementKind::Random);
    main.latency = MAIN_LATENCY;
    main.lockable = 4;
    // seed 004 §V ran Linux on the Cortex-A9, whose TLB entries carry ASIDs.
    micro.tags.asid = true;
    main.tags.asid = true;
    let mut m = machine(PageTableFormat::Armv7Short, vec![micro, main]);
    m.walker.latency = 2;
    m.cores = cores;
    m
}

fn sys_with(cores: usize, spec: &str, stall_cycles: bool) -> System {
    let mut sys = System::new(
        a9_like(cores),
        RunOptions {
            stall_cycles,
            ..RunOptions::no_caches(0)
        },
    )
    .unwrap();
    if !spec.is_empty() {
        install(&mut sys, &parse_spec(spec).unwrap()).unwrap();
    }
    sys
}

fn access(sys: &mut System, thread: u32, va: u64) -> u64 {
    sys.access(Access::new(
        ThreadId(thread),
        AccessKind::Load,
        VirtAddr(va),
        4,
    ))
    .unwrap()
}

const LOCKED: [u64; 4] = [0x0010_0000, 0x0010_1000, 0x0020_0000, 0x0bef_f000];

#[test]
fn given_four_locked_pages_when_thrashed_flushed_and_switched_then_they_never_miss_the_main_tlb() {
    let spec = format!(
        "lockdown:pages={}",
        LOCKED.map(|p| format!("{p:#x}")).join("+")
    );
    let mut sys = sys_with(1, &spec, false);
    sys.event(Event::ThreadStart {
        thread: ThreadId(0),
        process: 0,
    })
    .unwrap();
    sys.event(Event::ThreadStart {
        thread: ThreadId(1),
        process: 1,
    })
    .unwrap();
    let mut rng = SplitMix64::derive(4, "test.lockdown");
    // The first access switches thread 0 in: the program's start, when the pages are locked.
    access(&mut sys, 0, 0x0300_0000);
    let main = sys.data_tlbs_of(0)[1];
    assert_eq!(sys.tlbs[main].locked_count(), 4);
    let mut checked = 0;
    for round in 0..4000u64 {
        // Thrash: random pages over 1 GiB, pages of the locked pages' own main-TLB sets
        // (64 sets: VPNs 64 apart), sequential sweeps past both TLBs' reach.
        let va = match round % 4 {
            0 => rng.below(1 << 30) & !0xfff,
            1 => LOCKED[(round / 4 % 4) as usize] + (1 + rng.below(4096)) * 64 * 4096,
            _ => 0x4000_0000 + (round % 512) * 4096,
        };
        access(&mut sys, 0, va);
        if round % 97 == 0 {
            sys.event(Event::Flush {
                core: CoreId(0),
                what: flush::TLB,
            })
            .unwrap();
        }
        if round % 131 == 0 {
            // Another process runs for a while (an address-space switch), then thread 0 again.
            for k in 0..200 {
                access(&mut sys, 1, 0x0010_0000 + k * 4096);
            }
        }
        // A locked page costs at most the main TLB's lookup: never a walk.
        for &p in &LOCKED {
            let c = access(&mut sys, 0, p + 8 * (round % 512));
            assert!(
                c <= MAIN_LATENCY,
                "round {round}: page {p:#x} cost {c} cycles"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 16000);
    assert_eq!(sys.tlbs[main].locked_count(), 4);
    let counters = sys.stats().technique.unwrap().counters;
    assert_eq!(counters["entries_locked"], 4);
}

#[test]
fn given_a_locked_page_when_its_range_is_shot_down_then_it_misses_once_and_is_no_longer_locked() {
    let mut sys = sys_with(1, "lockdown:pages=0x100000+0x101000", false);
    access(&mut sys, 0, 0x0300_0000);
    let main = sys.data_tlbs_of(0)[1];
    assert_eq!(sys.tlbs[main].locked_count(), 2);
    protect_page(&mut sys, 0x10_0000);
    assert_eq!(sys.tlbs[main].locked_count(), 1, "its own range only");
    let walks = sys.stats().total.walks;
    access(&mut sys, 0, 0x10_0000);
    access(&mut sys, 0, 0x10_1000);
    assert_eq!(
        sys.stats().total.walks,
        walks + 1,
        "only the shot-down page walks"
    );
}

#[test]
fn given_more_pages_than_lockable_entries_then_building_is_a_clear_error() {
    let m = a9_like(1);
    let spec = parse_spec("lockdown:pages=0x1000+0x2000+0x3000+0x4000+0x5000").unwrap();
    let e = tlblab_core::registry::build(&spec, &m, 0).err().unwrap();
    assert!(
        e.contains("5 pages given") && e.contains("main has 4 lockable entries"),
        "{e}"
    );
    let spec = parse_spec("lockdown:count=5").unwrap();
    let e = tlblab_core::registry::build(&spec, &m, 0).err().unwrap();
    assert!(e.contains("'count' asks for 5"), "{e}");
    let mut no_lock = a9_like(1);
    no_lock.tlbs[1].lockable = 0;
    let spec = parse_spec("lockdown:pages=0x1000").unwrap();
    let e = tlblab_core::registry::build(&spec, &no_lock, 0)
        .err()
        .unwrap();
    assert!(e.contains("no data TLB level with lockable entries"), "{e}");
    let e = tlblab_core::registry::build(&parse_spec("lockdown:pages=lots").unwrap(), &m, 0)
        .err()
        .unwrap();
    assert!(e.contains("'pages' expects addresses"), "{e}");
}

/// Process 0's lock (or unlock) of `page` on `core` (`ALL_CORES`: on every core).
fn tlb_lock(page: u64, core: CoreId, lock: bool) -> Event {
    Event::TlbLock {
        process: 0,
        page: VirtAddr(page),
        core,
        lock,
    }
}

/// The locked entries of each of the first `cores` cores' main TLB.
fn locked_per_core(sys: &System, cores: usize) -> Vec<usize> {
    (0..cores)
        .map(|c| sys.tlbs[sys.data_tlbs_of(c)[1]].locked_count())
        .collect()
}

#[test]
fn given_cores_all_then_every_core_locks_and_a_lock_event_does_the_same_without_the_technique() {
    let mut sys = sys_with(4, "lockdown:pages=0x100000+0x200000,cores=all", false);
    access(&mut sys, 0, 0x0300_0000);
    for c in 0..4 {
        let main = sys.data_tlbs_of(c)[1];
        assert_eq!(sys.tlbs[main].locked_count(), 2, "core {c}");
    }
    let mut sys = sys_with(4, "", false);
    sys.event(tlb_lock(0x10_0000, ALL_CORES, true)).unwrap();
    sys.event(tlb_lock(0x20_0000, CoreId(2), true)).unwrap();
    let locked = locked_per_core(&sys, 4);
    assert_eq!(locked, vec![1, 1, 2, 1]);
    sys.event(tlb_lock(0x10_0000, ALL_CORES, false)).unwrap();
    let locked = locked_per_core(&sys, 4);
    assert_eq!(locked, vec![0, 0, 1, 0]);
    let e = sys.event(tlb_lock(0x10_0000, CoreId(9), true)).unwrap_err();
    assert!(e.0.contains("core 9 does not exist"), "{e}");
}

/// 300 new pages, then the same pages again (8 bytes further in each): the second round misses
/// the micro TLB (32 entries) and hits or misses the main TLB (128 entries).
fn two_rounds_of_300_pages() -> Vec<tlblab_trace::Record> {
    (0..2u64)
        .flat_map(|round| {
            (0..300u64).map(move |p| {
                tlblab_trace::Record::Access(Access::new(
                    ThreadId(0),
                    AccessKind::Load,
                    VirtAddr(0x100_0000 + p * 4096 + round * 8),
                    4,
                ))
            })
        })
        .collect()
}

#[test]
fn stall_cycles_are_the_main_lookup_per_micro_miss_and_the_walk_per_main_miss() {
    // 300 new pages, then the same again: the second round misses the micro TLB (32 entries)
    // and hits or misses the main TLB (128 entries, random replacement).
    let run = |stall: bool| {
        let mut sys = sys_with(1, "", stall);
        sys.run_slice(&two_rounds_of_300_pages()).unwrap();
        sys.stats()
    };
    let with = run(true);
    let t = &with.total;
    assert_eq!(t.data_stall_cycles.len(), 2);
    assert_eq!(t.data_stall_cycles[0], t.tlb[0].misses * MAIN_LATENCY);
    assert_eq!(t.data_stall_cycles[1], t.walk_cycles);
    assert!(t.tlb[1].hits > 0 && t.walks > 300);
    let mut without = run(false);
    assert!(
        without.total.data_stall_cycles.is_empty(),
        "not counted: not reported"
    );
    // Counting them changes nothing else.
    let mut with = with;
    for s in [&mut with, &mut without] {
        s.total.data_stall_cycles.clear();
        for c in &mut s.cores {
            c.data_stall_cycles.clear();
        }
        for u in s.threads.values_mut().chain(s.processes.values_mut()) {
            u.data_stall_cycles.clear();
        }
    }
    assert_eq!(with, without);
}

#[test]
fn with_a_refill_latency_every_walk_adds_it_to_the_cycles_and_to_the_micro_stall() {
    // The same two rounds of 300 pages, with the main TLB refilling the micro TLB in REFILL
    // cycles after each walk (`TlbConfig::refill_latency`, the Cortex-A9 preset's reading of
    // its PMU event 0x85): the micro stall is the main lookup per micro miss plus REFILL per
    // walk, the main stall still the walk alone, and the run REFILL x walks cycles longer.
    const REFILL: u64 = 5;
    let run = |refill: u64, stall: bool| {
        let mut m = a9_like(1);
        m.tlbs[1].refill_latency = refill;
        let mut sys = System::new(
            m,
            RunOptions {
                stall_cycles: stall,
                ..RunOptions::no_caches(0)
            },
        )
        .unwrap();
        sys.run_slice(&two_rounds_of_300_pages()).unwrap();
        sys.stats()
    };
    let plain = run(0, true).total;
    let t = run(REFILL, true).total;
    assert!(t.walks > 300);
    assert_eq!(
        t.data_stall_cycles[0],
        t.tlb[0].misses * MAIN_LATENCY + t.walks * REFILL
    );
    assert_eq!(t.data_stall_cycles[1], t.walk_cycles);
    // The same lookups and walks (the main TLB's random choices do not depend on time).
    assert_eq!(
        (t.walks, t.tlb[1].misses),
        (plain.walks, plain.tlb[1].misses)
    );
    assert_eq!(t.cycles, plain.cycles + t.walks * REFILL);
    // The fast lanes (no stall counting) charge the same cycles as the general path.
    assert_eq!(run(REFILL, false).total.cycles, t.cycles);
}

/// A unified main TLB of 4 sets x 2 ways (LRU), the only level, with `lockable` lockable
/// entries, in an array of their own (`array`) or in the sets' ways; walks of 2 cycles.
fn one_level(lockable: usize, array: bool) -> System {
    one_level_of(ReplacementKind::Lru, lockable, array, false)
}

/// `one_level` under `replacement`, its array holding unlocked entries too or not (`holds`).
fn one_level_of(replacement: ReplacementKind, lockable: usize, array: bool, holds: bool) -> System {
    // Unified: the machine needs a level for instruction fetches; the test makes none.
    let mut main = tlb("main", 1, 8, 2, replacement);
    main.latency = 0;
    main.lockable = lockable;
    main.lockable_array = array;
    main.array_holds_unlocked = holds;
    main.tags.asid = true;
    let mut m = machine(PageTableFormat::Armv7Short, vec![main]);
    m.walker.latency = 2;
    m.cores = 1;
    System::new(m, RunOptions::no_caches(0)).unwrap()
}

/// Pages of set 0 of `one_level`'s 4 sets (VPNs 4 apart), the `n` from `first` on.
fn set0_pages(first: u64, n: u64) -> Vec<u64> {
    (0..n).map(|i| (first + 4 * i) << 12).collect()
}

#[test]
fn a_lockable_array_leaves_every_way_of_the_sets_to_the_unlocked_pages() {
    // The Cortex-A9's main TLB keeps its 4 lockable entries in "a fully-associative, lockable
    // array of four elements" beside its 2-way sets (TRM DDI0388 §6.2.2). Closed forms, after
    // the program's first access (the locks' walks, then its own, of the first unlocked page),
    // R rounds over the locked pages and k unlocked pages, all of one set: with the array, the
    // locked pages never walk and the set's 2 ways hold k = 2 unlocked pages (1 more walk),
    // while k = 3 miss every time under LRU but the first (3R - 1). Locks in the ways (2
    // lockable, both ways of the set) leave the k pages no way: k R walks.
    const R: u64 = 50;
    for (lockable, array, locked, k, walks_after_start) in [
        (4, true, 4, 2, 1),
        (4, true, 4, 3, 3 * R - 1),
        (4, true, 2, 2, 1),
        (2, false, 2, 2, 2 * R),
        (2, false, 2, 1, R),
    ] {
        let what = format!("lockable {lockable}, array {array}, {locked} locked, k = {k}");
        let mut sys = one_level(lockable, array);
        let locked_pages = set0_pages(0x100, locked);
        let spec = format!(
            "lockdown:pages={}",
            locked_pages
                .iter()
                .map(|p| format!("{p:#x}"))
                .collect::<Vec<_>>()
                .join("+")
        );
        install(&mut sys, &parse_spec(&spec).unwrap()).unwrap();
        let others = set0_pages(0x200, k);
        // The first access starts the program: the locks' walks, then its own.
        access(&mut sys, 0, others[0]);
        let walks = sys.stats().total.walks;
        assert_eq!(
            walks,
            locked + 1,
            "{what}: one walk per lock, one for the access"
        );
        assert_eq!(sys.tlbs[0].locked_count() as u64, locked, "{what}");
        for _ in 0..R {
            for &p in locked_pages.iter().chain(&others) {
                access(&mut sys, 0, p);
            }
        }
        assert_eq!(sys.stats().total.walks - walks, walks_after_start, "{what}");
        sys.tlbs[0].check_bookkeeping().unwrap();
    }
}

#[test]
fn a_lockable_array_holds_four_pages_of_one_set_which_the_ways_cannot() {
    // Four locks into one 2-way set: the array takes them; locks in the ways cannot.
    let pages = set0_pages(0x100, 4)
        .iter()
        .map(|p| format!("{p:#x}"))
        .collect::<Vec<_>>()
        .join("+");
    let spec = parse_spec(&format!("lockdown:pages={pages}")).unwrap();
    let mut sys = one_level(4, true);
    install(&mut sys, &spec).unwrap();
    access(&mut sys, 0, 0x30_0000);
    assert_eq!(sys.tlbs[0].locked_count(), 4);
    // A flush leaves them; a shootdown of one takes it out of the array, and it misses once.
    sys.event(Event::Flush {
        core: CoreId(0),
        what: flush::TLB,
    })
    .unwrap();
    assert_eq!(sys.tlbs[0].locked_count(), 4);
    protect_page(&mut sys, 0x10_0000);
    assert_eq!(sys.tlbs[0].locked_count(), 3);
    let walks = sys.stats().total.walks;
    for p in set0_pages(0x100, 4) {
        access(&mut sys, 0, p);
    }
    assert_eq!(sys.stats().total.walks, walks + 1);
    sys.tlbs[0].check_bookkeeping().unwrap();

    let mut ways = one_level(4, false);
    install(&mut ways, &spec).unwrap();
    let err = ways
        .access(Access::new(
            ThreadId(0),
            AccessKind::Load,
            VirtAddr(0x30_0000),
            4,
        ))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("every way of the page's set is locked"),
        "{err}"
    );
}

/// An `mprotect` of process 0's page at `va` to read-only: a shootdown of that page alone.
fn protect_page(sys: &mut System, va: u64) {
    sys.event(Event::Mprotect {
        process: 0,
        start: VirtAddr(va),
        len: 4096,
        prot: 1,
    })
    .unwrap();
}

/// Two processes on two cores of the A9-shaped path: process 0 (core 0) with 8 pages, the first
/// locked in core 0's main TLB, process 1 (core 1) with 8 pages of its own; then `e` under the
/// given TLB maintenance (IPIs cost 100 cycles).
fn two_cores_then(maintenance: tlblab_core::os::TlbMaintenance, e: Event) -> System {
    let mut sys = System::new(
        a9_like(2),
        RunOptions {
            caches: false,
            data_accesses: false,
            os: tlblab_core::os::OsConfig {
                tlb_maintenance: maintenance,
                ipi_cycles: 100,
                ..Default::default()
            },
            ..RunOptions::default()
        },
    )
    .unwrap();
    for t in 0..2u32 {
        sys.event(Event::ThreadStart {
            thread: ThreadId(t),
            process: t,
        })
        .unwrap();
    }
    for k in 0..8 {
        access(&mut sys, 0, 0x10_0000 + k * 4096);
        access(&mut sys, 1, 0x40_0000 + k * 4096);
    }
    // Locked once the process runs (its ASID assigned), as the technique locks at its start.
    sys.event(tlb_lock(0x10_0000, CoreId(0), true)).unwrap();
    sys.event(e).unwrap();
    sys
}

/// (micro valid, main valid, main locked) of each core.
fn tlb_state(sys: &System) -> Vec<(usize, usize, usize)> {
    (0..2)
        .map(|c| {
            let d = sys.data_tlbs_of(c);
            (
                sys.tlbs[d[0]].valid_count(),
                sys.tlbs[d[1]].valid_count(),
                sys.tlbs[d[1]].locked_count(),
            )
        })
        .collect()
}

#[test]
fn broadcast_maintenance_flushes_every_micro_tlb_keeps_other_asids_and_sends_no_ipi() {
    use tlblab_core::os::TlbMaintenance::{Broadcast, Ipi};
    let exit1 = Event::ProcessExit { process: 1 };
    // Before: each core's micro and main TLB hold their process's 8 pages, core 0's first locked.
    let before = two_cores_then(Broadcast, Event::PhaseBegin { region: 0 });
    assert_eq!(tlb_state(&before), vec![(8, 8, 1), (8, 8, 0)]);
    // ARM: process 1's exit (TLBIASIDIS) flushes both micro TLBs; the main TLBs lose process
    // 1's entries only; no core is interrupted.
    let sys = two_cores_then(Broadcast, exit1);
    assert_eq!(tlb_state(&sys), vec![(0, 8, 1), (0, 0, 0)]);
    assert_eq!((sys.stats().os.shootdowns, sys.stats().os.ipis), (1, 0));
    // Process 0 then refills its micro TLB from the main TLB: 8 micro misses, no walk.
    let mut sys = sys;
    let walks = sys.stats().total.walks;
    let micro_misses = sys.stats().total.tlb[0].misses;
    for k in 0..8 {
        access(&mut sys, 0, 0x10_0000 + k * 4096);
    }
    assert_eq!(sys.stats().total.tlb[0].misses, micro_misses + 8);
    assert_eq!(sys.stats().total.walks, walks);
    // x86-style: only process 1's entries go, everywhere; core 0 takes the IPI.
    let sys = two_cores_then(Ipi, exit1);
    assert_eq!(tlb_state(&sys), vec![(8, 8, 1), (0, 0, 0)]);
    assert_eq!((sys.stats().os.shootdowns, sys.stats().os.ipis), (1, 1));
    assert_eq!(sys.clock(0), before.clock(0) + 100);
    // ARM munmap of one page of process 1 (TLBIMVAIS): both micro TLBs flushed, one main entry.
    let sys = two_cores_then(
        Broadcast,
        Event::Munmap {
            process: 1,
            start: VirtAddr(0x40_0000),
            len: 4096,
        },
    );
    assert_eq!(tlb_state(&sys), vec![(0, 8, 1), (0, 7, 0)]);
    // The ASID's own locked entry goes too (Cortex-A9 TRM Table 4-26, note b).
    let sys = two_cores_then(Broadcast, Event::ProcessExit { process: 0 });
    assert_eq!(tlb_state(&sys), vec![(0, 0, 0), (0, 8, 0)]);
}

/// `a9_like(1)` with its micro TLB flushed on every address-space change and every lock
/// (`flush_on_context_change`, the Cortex-A9's micro TLBs: TRM DDI0388I §6.2.1), or not, after
/// thread 0 (process 0) touched the `EIGHT` pages.
fn a9_micro_flushing_after_eight(flushing: bool) -> System {
    let mut m = a9_like(1);
    m.tlbs[0].flush_on_context_change = flushing;
    let mut sys = System::new(m, RunOptions::no_caches(0)).unwrap();
    for (thread, process) in [(0, 0), (1, 1)] {
        sys.event(Event::ThreadStart {
            thread: ThreadId(thread),
            process,
        })
        .unwrap();
    }
    for &p in &EIGHT {
        access(&mut sys, 0, p);
    }
    sys
}

/// Eight pages in eight distinct main-TLB sets (VPNs 0x10000..0x10007 of 64 sets).
const EIGHT: [u64; 8] = [
    0x1000_0000,
    0x1000_1000,
    0x1000_2000,
    0x1000_3000,
    0x1000_4000,
    0x1000_5000,
    0x1000_6000,
    0x1000_7000,
];

#[test]
fn given_a_context_flushed_micro_tlb_when_another_process_runs_then_the_pages_miss_it_once_each_and_hit_the_main_tlb(
) {
    // A touches 8 pages; B runs (an address-space switch, the CONTEXTIDR write); A again. With
    // the A9's rule each of A's 8 pages misses the micro TLB once and hits the main TLB: 8
    // lookups of MAIN_LATENCY. Without it (ASIDs alone) all 8 are micro hits: 0 cycles.
    for (flushing, per_page) in [(true, MAIN_LATENCY), (false, 0)] {
        let mut sys = a9_micro_flushing_after_eight(flushing);
        access(&mut sys, 1, 0x2000_0000 + 40 * 4096);
        let first = access(&mut sys, 0, EIGHT[0] + 8);
        let rest: Vec<u64> = EIGHT[1..]
            .iter()
            .map(|&p| access(&mut sys, 0, p + 8))
            .collect();
        // The first access of A also pays the switch (os.switch_cycles); the other 7 are the
        // TLB alone.
        let switch = RunOptions::default().os.switch_cycles;
        assert_eq!(first, switch + per_page, "flushing {flushing}");
        assert_eq!(rest, vec![per_page; 7], "flushing {flushing}");
        // A third touch of each, with no switch between, hits the micro TLB either way.
        let again: Vec<u64> = EIGHT.iter().map(|&p| access(&mut sys, 0, p + 16)).collect();
        assert_eq!(again, vec![0; 8], "flushing {flushing}");
    }
}

#[test]
fn given_pages_in_a_flushing_micro_tlb_when_one_page_is_locked_then_each_misses_it_on_its_next_touch(
) {
    // A lock is a main-TLB operation, which the A9 answers by flushing its micro TLBs
    // (§6.2.1): after it, each of the 8 pages costs one main-TLB lookup (the locked one too,
    // now in the main TLB's lockable entries), then nothing.
    for (flushing, per_page) in [(true, MAIN_LATENCY), (false, 0)] {
        let mut sys = a9_micro_flushing_after_eight(flushing);
        let inv = sys.stats().cores[0].invalidations;
        sys.event(tlb_lock(EIGHT[3], CoreId(0), true)).unwrap();
        let main = sys.data_tlbs_of(0)[1];
        assert_eq!(sys.tlbs[main].locked_count(), 1);
        let next: Vec<u64> = EIGHT.iter().map(|&p| access(&mut sys, 0, p + 8)).collect();
        assert_eq!(next, vec![per_page; 8], "flushing {flushing}");
        // The flush's 8 entries count as the core's invalidations (the lock itself drops only
        // entries of other page sizes over the page: none here).
        let flushed = sys.stats().cores[0].invalidations - inv;
        assert_eq!(flushed, 8 * flushing as u64, "flushing {flushing}");
    }
}

/// `one_level`'s 4 x 2 main TLB under random replacement (the Cortex-A9's), with an array of 4
/// lockable slots that holds unlocked entries while none is locked (`holds`,
/// `TlbConfig::array_holds_unlocked`: Cortex-A9 TRM DDI0388I §6.2.2), or only locked ones.
fn one_level_random(holds: bool) -> System {
    one_level_of(ReplacementKind::Random, 4, true, holds)
}

/// The lockable array's valid entries of `sys`'s one level: (page, locked), slot order.
fn array_entries(sys: &System) -> Vec<(u64, bool)> {
    let t = &sys.tlbs[0];
    let base = t.capacity() - 4;
    t.entries_with_slots()
        .filter(|&(s, _)| s >= base)
        .map(|(_, e)| (e.vpn.0 << 12, e.locked))
        .collect()
}

#[test]
fn given_no_locks_and_an_array_that_holds_unlocked_entries_when_six_pages_of_one_set_are_touched_twice_then_the_second_round_hits(
) {
    // "As long as the lockable region does not contain any locked entries, it can be allocated
    // with non-locked entries to increase overall main TLB storage size" (Cortex-A9 TRM
    // DDI0388I §6.2.2). Six pages of one 2-way set: the set takes 2, the free array slots the
    // other 4 (a fill of a full set takes a free slot before it draws a victim), so the second
    // round walks no more. Without it the 2 ways hold at most 2 of the 6: at least 4 walks.
    let pages = set0_pages(0x200, 6);
    let mut walks = Vec::new();
    for holds in [true, false] {
        let mut sys = one_level_random(holds);
        for _ in 0..2 {
            for &p in &pages {
                access(&mut sys, 0, p);
            }
            walks.push(sys.stats().total.walks);
        }
        sys.tlbs[0].check_bookkeeping().unwrap();
        if holds {
            let held: Vec<u64> = array_entries(&sys).iter().map(|e| e.0).collect();
            assert_eq!(
                held,
                pages[2..].to_vec(),
                "the array holds the four fills after the set's two"
            );
        }
    }
    assert_eq!(
        walks[..2],
        [6, 6],
        "with the array: 6 first touches, then all hits"
    );
    assert!(walks[3] - walks[2] >= 4, "without it: {walks:?}");
}

#[test]
fn given_an_array_of_unlocked_entries_when_a_page_is_locked_then_it_replaces_the_first_and_the_array_takes_no_more_fills(
) {
    let mut sys = one_level_random(true);
    let pages = set0_pages(0x200, 6);
    for &p in &pages {
        access(&mut sys, 0, p);
    }
    // A lock (a page of set 1, walked for it) takes slot 0 over the unlocked entry there (the
    // lockdown register's victim counts up the slots, TRM §4.3.15); the other three stay.
    sys.event(tlb_lock(0x301 << 12, CoreId(0), true)).unwrap();
    assert_eq!(sys.tlbs[0].locked_count(), 1);
    assert_eq!(
        array_entries(&sys),
        vec![
            (0x301 << 12, true),
            (pages[3], false),
            (pages[4], false),
            (pages[5], false)
        ]
    );
    // With a lock in the array, fills of a full set stay in the set: two more pages of set 0,
    // touched twice, leave the array as it was.
    for _ in 0..2 {
        for p in set0_pages(0x400, 2) {
            access(&mut sys, 0, p);
        }
    }
    assert_eq!(array_entries(&sys)[0], (0x301 << 12, true));
    assert_eq!(array_entries(&sys).len(), 4);
    // A flush takes the unlocked entries of the array, not the lock.
    sys.event(Event::Flush {
        core: CoreId(0),
        what: flush::TLB,
    })
    .unwrap();
    assert_eq!(array_entries(&sys), vec![(0x301 << 12, true)]);
    sys.tlbs[0].check_bookkeeping().unwrap();
}

#[test]
fn given_a_full_array_of_unlocked_entries_when_a_full_set_fills_then_the_victim_is_one_of_six() {
    // The fill of a full set with the array full draws its victim among the set's 2 ways and
    // the array's 4 slots: over many fills both kinds are replaced, and every fill evicts one
    // entry (the level keeps 2 + 4 of the set's pages).
    let mut sys = one_level_random(true);
    let pages = set0_pages(0x200, 40);
    for &p in &pages {
        access(&mut sys, 0, p);
    }
    let st = sys.stats().total;
    assert_eq!(st.walks, 40);
    assert_eq!(st.tlb[0].evictions, 40 - 6);
    let in_array = array_entries(&sys);
    assert_eq!(in_array.len(), 4);
    // Some of the array's first four (pages 2-5) were replaced by later pages.
    assert!(in_array.iter().any(|e| e.0 > pages[5]), "{in_array:?}");
    sys.tlbs[0].check_bookkeeping().unwrap();
}
