//! Fast address-space switching (seed 002, `techniques::fass`) on the `sa1100` preset: the
//! closed forms of its behaviour.
//!
//! - two processes in distinct domains never flush (seed 002 §3.1);
//! - one process more than the free domains forces exactly one recycle (16 domains, §2.1/§3.1);
//! - a collision costs exactly one flush (§2.3), and PID relocation avoids it (§2.2);
//! - a domain fault comes from a TLB hit whose domain the DACR does not enable;
//! - processes sharing a region hit each other's TLB entries (§3.2);
//! - a run without the technique never turns domain checks on;
//! - a machine of several hardware threads is refused, by the model and its twin alike (§4.2).

mod common;

use common::assert_counters;
use tlblab_core::machine::MachineConfig;
use tlblab_core::{registry, techniques};
use tlblab_core::{RunOptions, Stats, System};
use tlblab_trace::record::{prot, NO_THREAD};
use tlblab_trace::{workloads, Access, Event, Record, VecSource};
use tlblab_types::{AccessKind, CoreId, ThreadId, VirtAddr};

fn sa1100() -> MachineConfig {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../presets/sa1100.toml"
    ))
    .unwrap();
    toml::from_str(&text).unwrap()
}

fn run_records(records: Vec<Record>, technique: Option<&str>) -> Stats {
    let mut sys = System::new(sa1100(), RunOptions::default()).unwrap();
    if let Some(t) = technique {
        registry::install(&mut sys, &techniques::parse_spec(t).unwrap()).unwrap();
    }
    sys.run(&mut VecSource::new(records)).unwrap();
    sys.stats()
}

fn run_workload(spec: &str, technique: Option<&str>) -> Stats {
    let (name, params) = workloads::parse_spec(spec).unwrap();
    let mut src = workloads::build(&name, &params, 1).unwrap();
    let mut sys = System::new(sa1100(), RunOptions::default()).unwrap();
    if let Some(t) = technique {
        registry::install(&mut sys, &techniques::parse_spec(t).unwrap()).unwrap();
    }
    sys.run(src.as_mut()).unwrap();
    sys.stats()
}

fn counter(s: &Stats, name: &str) -> u64 {
    s.technique.as_ref().unwrap().counters[name]
}

fn dtlb_misses(s: &Stats) -> u64 {
    let i = s.tlb_levels.iter().position(|n| n == "DTLB").unwrap();
    s.total.tlb[i].misses
}

#[test]
fn two_processes_in_distinct_domains_never_flush() {
    let s = run_workload("hot_potato:rounds=200", Some("fass"));
    assert!(s.os.address_space_switches >= 399);
    assert_eq!(s.os.tlb_flushes, 0);
    assert_eq!(s.os.cache_flushes, 0);
    assert_counters(&s, &[("collisions", 0), ("recycles", 0)]);
    // The same run on the stock kernel flushes at every switch but the first.
    let base = run_workload("hot_potato:rounds=200", None);
    assert_eq!(base.os.tlb_flushes, base.os.address_space_switches - 1);
}

#[test]
fn one_process_more_than_the_free_domains_forces_one_recycle() {
    // L4: one kernel domain, 15 for processes. Fifteen fit; the sixteenth process (the
    // seventeenth domain holder, with the kernel) takes one by recycling.
    let fit = run_workload(
        "lat_ctx:procs=15,kib=0,rounds=1,kernel=0",
        Some("fass:kernel_domains=1"),
    );
    assert_eq!(counter(&fit, "recycles"), 0);
    assert_eq!(fit.os.tlb_flushes, 0);
    let over = run_workload(
        "lat_ctx:procs=16,kib=0,rounds=1,kernel=0",
        Some("fass:kernel_domains=1"),
    );
    assert_eq!(counter(&over, "recycles"), 1);
    // The victim (process 0, least recently scheduled) is dirty: one TLB and cache flush.
    assert_eq!(over.os.tlb_flushes, 1);
    // Linux: three kernel domains, so the fourteenth process recycles.
    let linux = run_workload("lat_ctx:procs=14,kib=0,rounds=1,kernel=0", Some("fass"));
    assert_eq!(counter(&linux, "recycles"), 1);
    let linux13 = run_workload("lat_ctx:procs=13,kib=0,rounds=1,kernel=0", Some("fass"));
    assert_eq!(counter(&linux13, "recycles"), 0);
}

fn ev(e: Event) -> Record {
    Record::Event(e)
}

fn load(t: u32, va: u64) -> Record {
    Record::Access(Access::new(ThreadId(t), AccessKind::Load, VirtAddr(va), 4))
}

fn switch(from: u32, to: u32) -> Record {
    ev(Event::ContextSwitch {
        core: CoreId(0),
        from: if from == u32::MAX {
            NO_THREAD
        } else {
            ThreadId(from)
        },
        to: ThreadId(to),
    })
}

/// Two processes with private data at the same address `x`, each touching it in turn `turns`
/// times.
fn same_address(x: u64, turns: u32) -> Vec<Record> {
    let mut r = Vec::new();
    for p in 0..2 {
        r.push(start(p));
        r.push(ev(Event::Mmap {
            process: p,
            start: VirtAddr(x),
            len: 4096,
            prot: prot::READ | prot::WRITE,
            page_shift: 12,
        }));
    }
    r.push(switch(u32::MAX, 0));
    r.push(load(0, x));
    for i in 1..turns {
        let (from, to) = ((i + 1) % 2, i % 2);
        r.push(switch(from, to));
        r.push(load(to, x));
    }
    r
}

#[test]
fn a_collision_costs_exactly_one_flush() {
    // Without relocation the two spaces overlap: the second touch hits the first process's TLB
    // entry, tagged with its domain: one domain fault, one TLB and cache flush (§2.3).
    let s = run_records(same_address(0x0100_0000, 2), Some("fass:relocate=false"));
    assert_counters(&s, &[("domain_faults", 1), ("collisions", 1)]);
    assert_eq!(s.os.tlb_flushes, 1);
    assert_eq!(counter(&s, "cache_flushes"), 1);
    // Each further turn collides again (the entry belongs to the other process): one each.
    let s = run_records(same_address(0x0100_0000, 6), Some("fass:relocate=false"));
    assert_eq!(counter(&s, "collisions"), 5);
    assert_eq!(s.os.tlb_flushes, 5);
    // PID relocation puts them in different 32 MiB slots: no collision, no flush (§2.2), and
    // a private mapping above 32 MiB moves into the slot too (§3.1).
    for x in [0x0100_0000, 0x1000_0000] {
        let s = run_records(same_address(x, 6), Some("fass"));
        assert_eq!(counter(&s, "collisions"), 0, "{x:#x}");
        assert_eq!(s.os.tlb_flushes, 0, "{x:#x}");
        // Each process loads one CPD entry once: two section faults, no domain fault.
        assert_eq!(counter(&s, "section_faults"), 2, "{x:#x}");
        assert_eq!(counter(&s, "domain_faults"), 0, "{x:#x}");
    }
}

#[test]
fn shared_regions_share_tlb_entries() {
    // extreme: two children read the same 8 pages, shared: with a shared domain the second
    // child hits the first one's D-TLB entries, so each page misses once (§3.2).
    let w = "extreme:procs=2,pages=8,shared=1,rounds=10,kernel=0";
    let shared = run_workload(w, Some("fass"));
    assert_eq!(dtlb_misses(&shared), 8);
    assert_eq!(counter(&shared, "shared_regions"), 1);
    // Without TLB sharing each child has its own entries: each page misses once per child.
    let apart = run_workload(w, Some("fass:sharing=false"));
    assert_eq!(dtlb_misses(&apart), 16);
    // Private mappings: the same, and no shared region.
    let private = run_workload(
        "extreme:procs=2,pages=8,shared=0,rounds=10,kernel=0",
        Some("fass"),
    );
    assert_eq!(dtlb_misses(&private), 16);
    assert_eq!(counter(&private, "shared_regions"), 0);
    // The stock kernel flushes at each switch: every page misses every turn.
    let base = run_workload(w, None);
    assert_eq!(dtlb_misses(&base), 8 * 20);
}

#[test]
fn without_the_technique_nothing_changes() {
    let w = "lat_ctx:procs=3,kib=4,rounds=5";
    let a = run_workload(w, None);
    let mut sys = System::new(sa1100(), RunOptions::default()).unwrap();
    assert!(sys.domains().is_none());
    let (name, params) = workloads::parse_spec(w).unwrap();
    let mut src = workloads::build(&name, &params, 1).unwrap();
    sys.run(src.as_mut()).unwrap();
    assert!(sys.domains().is_none());
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&sys.stats()).unwrap()
    );
    assert!(a.technique.is_none());
}

#[test]
fn bad_machines_and_parameters_are_refused() {
    let mut zen = sa1100();
    zen.page_table.format = tlblab_core::page_table::PageTableFormat::X86_64_4level;
    let e = registry::build(&techniques::parse_spec("fass").unwrap(), &zen, 0)
        .err()
        .unwrap();
    assert!(e.contains("armv7_short"), "{e}");
    let e = registry::build(
        &techniques::parse_spec("fass:kernel_domains=16").unwrap(),
        &sa1100(),
        0,
    )
    .err()
    .unwrap();
    assert!(e.contains("'kernel_domains'"), "{e}");
}

/// The seed's machine has one core (§4.2): given sa1100 with two cores, when fass is installed
/// on the engine and its twin on the reference model, then both refuse it with one message.
#[test]
fn a_multi_core_machine_is_refused_alike_by_the_model_and_its_twin() {
    let mut two = sa1100();
    two.cores = 2;
    // The preset's write buffer is modelled for one hardware thread only (its own refusal).
    two.timing.write_buffer = None;
    let spec = techniques::parse_spec("fass").unwrap();
    let model = registry::build(&spec, &two, 0).err().unwrap();
    assert!(
        model.contains("2 hardware threads (2 cores x 1)"),
        "{model}"
    );
    let mut r = tlblab_core::reference::ReferenceModel::machine(&two, RunOptions::default());
    let twin = r.install_twin(&spec).err().unwrap();
    assert_eq!(twin, model);
    // One core is accepted by both.
    let one = sa1100();
    assert!(registry::build(&spec, &one, 0).is_ok());
    let mut r = tlblab_core::reference::ReferenceModel::machine(&one, RunOptions::default());
    assert_eq!(r.install_twin(&spec), Ok(()));
}

/// Process creation (seed 002 §4.1 proc_create, Table 1): the stock kernel flushes four times
/// a fork round (the parent's `flush_cache_mm` at fork and the child's at exit, and the two
/// switches), besides the child's per-VMA `flush_cache_range` at exit; the fast kernel defers
/// the address-space and range cache flushes (§4.2 lazy flushing) and, with free domains and
/// round-robin slots, flushes no cache at all.
#[test]
fn forks_flush_four_times_a_round_on_the_stock_kernel_and_never_on_the_fast_one() {
    let rounds = 5;
    let spec = format!("proc_create:mode=0,rounds={rounds},kernel_instrs=4000");
    let stock = run_workload(&spec, None);
    assert_eq!(stock.os.tlb_flushes, 4 * rounds);
    // Each flush empties both virtual caches (I and D), each counted; the exit's per-VMA
    // range flushes add both caches once (libc's 256 KiB text) and the I-cache four times.
    assert_eq!(stock.os.cache_flushes, (2 * 4 + 2 + 4) * rounds);
    let fast = run_workload(&spec, Some("fass"));
    assert_eq!(fast.os.cache_flushes, 0);
    assert_counters(&fast, &[("collisions", 0), ("lazy_frees", rounds)]);
    // The address-space flushes still empty the TLB (fork write-protects the parent).
    assert_eq!(fast.os.tlb_flushes, 2 * rounds);
    assert!(fast.cycles < stock.cycles);
}

/// exec (proc_create mode 1): besides the six whole flushes of a round (fork's, exec's and
/// exit's `flush_cache_mm` and three switches), the dynamic loader's four mapping calls each
/// run `flush_cache_range` on the stock kernel: every range is at most 32 KiB, so the I-cache
/// alone is invalidated and the TLB kept. The fast kernel defers them with the rest (§4.2).
#[test]
fn the_range_flushes_empty_the_icache_on_the_stock_kernel_only() {
    let rounds = 3;
    let spec = format!("proc_create:mode=1,rounds={rounds},kernel_instrs=2000");
    let stock = run_workload(&spec, None);
    assert_eq!(stock.os.tlb_flushes, 6 * rounds);
    // Six whole flushes of both caches (the switches and flush_cache_mm), the loader's four
    // range flushes (the I-cache each), and two teardowns' per-VMA flush_cache_range each
    // (libc's 256 KiB text: both caches whole; the text, data, libc's data and stack: the
    // I-cache each, their D-cache lines one by one, which no whole flush counts).
    assert_eq!(stock.os.cache_flushes, (6 * 2 + 4 + 2 * (2 + 4)) * rounds);
    let fast = run_workload(&spec, Some("fass"));
    assert_eq!(fast.os.cache_flushes, 0);
    assert_eq!(fast.os.tlb_flushes, 3 * rounds);
    assert!(fast.cycles < stock.cycles);
}

/// A `Flush` with `ADDRESS_SPACE` is the kernel's work: its cost is on the thread's clock,
/// exactly the cycles the cache flushes cost; a plain `Flush` (a benchmark's) costs none.
#[test]
fn an_address_space_flush_is_charged_to_the_core_and_a_plain_one_is_not() {
    use tlblab_trace::record::flush;
    let records = |what: u8| -> Vec<Record> {
        let mut r = process_0_running_with_64k_at(0x10_0000);
        r.extend((0..256).map(|i| {
            Record::Access(Access::new(
                ThreadId(0),
                AccessKind::Store,
                VirtAddr(0x10_0000 + i * 32),
                4,
            ))
        }));
        r.push(ev(Event::Flush {
            core: CoreId(0),
            what,
        }));
        r
    };
    let none = run_records(records(0), None);
    let plain = run_records(records(flush::TLB | flush::CACHES), None);
    let kernel = run_records(
        records(flush::TLB | flush::CACHES | flush::ADDRESS_SPACE),
        None,
    );
    assert_eq!(plain.cycles, none.cycles);
    assert!(kernel.os.cache_flush_cycles > 1000, "dirty lines to clean");
    assert_eq!(kernel.cycles, none.cycles + kernel.os.cache_flush_cycles);
    // flush_cache_range over 32 KiB: the caches alone, the TLB kept, charged the same way.
    let range = run_records(records(flush::CACHES | flush::ADDRESS_SPACE), None);
    assert_eq!(range.os.tlb_flushes, none.os.tlb_flushes);
    assert_eq!(range.os.cache_flush_cycles, kernel.os.cache_flush_cycles);
    assert_eq!(range.cycles, none.cycles + range.os.cache_flush_cycles);
    // A shorter flush_cache_range: the I-cache alone (one CP15 operation on sa1100, 1 cycle);
    // the D-cache keeps its 256 dirty lines, the TLB its entries.
    let icache = run_records(records(flush::INSTR_CACHES | flush::ADDRESS_SPACE), None);
    assert_eq!(icache.os.cache_flushes, none.os.cache_flushes + 1);
    assert_eq!(icache.os.cache_flush_cycles, 1);
    assert_eq!(icache.os.tlb_flushes, none.os.tlb_flushes);
    assert_eq!(icache.cycles, none.cycles + 1);
    // INSTR_CACHES is the kernel's flush only: without ADDRESS_SPACE it is refused.
    let mut sys = System::new(sa1100(), RunOptions::default()).unwrap();
    let e = sys
        .run(&mut VecSource::new(records(flush::INSTR_CACHES)))
        .unwrap_err();
    assert!(e.0.contains("ADDRESS_SPACE"), "{e}");
}

/// A `FlushRange` (ARM Linux 2.4's flush_cache_page + flush_tlb_page at a copy-on-write fault)
/// on the stock kernel cleans and invalidates the page's D-cache lines one by one, at the
/// preset's 5 cycles a line and 64 a dirty one, on the thread's clock, and drops the page's
/// TLB entry; the fass kernel defers the cache part (lazy flushing, seed 002 §4.2) and keeps
/// the TLB part.
#[test]
fn a_page_flush_cleans_the_pages_lines_on_the_stock_kernel_and_waits_on_the_fast_one() {
    use tlblab_trace::record::flush;
    let page = 0x10_0000;
    let records = |what: u8| -> Vec<Record> {
        let mut r = process_0_running_with_64k_at(page);
        // The page's 128 lines read, then written: in the read-allocate D-cache, dirty. The
        // D-cache holds 256 lines: the next page's first 64 lines stay clean.
        for i in 0..128 {
            for kind in [AccessKind::Load, AccessKind::Store] {
                r.push(Record::Access(Access::new(
                    ThreadId(0),
                    kind,
                    VirtAddr(page + i * 32),
                    4,
                )));
            }
        }
        for i in 0..64 {
            r.push(Record::Access(Access::new(
                ThreadId(0),
                AccessKind::Load,
                VirtAddr(page + 4096 + i * 32),
                4,
            )));
        }
        r.push(ev(Event::FlushRange {
            process: 0,
            start: VirtAddr(page),
            len: 4096,
            what,
        }));
        r
    };
    let none = run_records(records(0), None);
    let stock = run_records(records(flush::CACHES | flush::TLB), None);
    assert_eq!(stock.os.cache_flush_cycles, 128 * 5 + 128 * 64);
    assert_eq!(stock.cycles, none.cycles + stock.os.cache_flush_cycles);
    assert_eq!(
        stock.os.tlb_flushes, none.os.tlb_flushes,
        "a page, not the TLB"
    );
    let fast_none = run_records(records(0), Some("fass"));
    let fast = run_records(records(flush::CACHES | flush::TLB), Some("fass"));
    assert_eq!(fast.os.cache_flush_cycles, 0);
    assert_eq!(fast.cycles, fast_none.cycles);
}

/// Process 0 started, 64 KiB mapped writable at `x`, scheduled on core 0.
fn process_0_running_with_64k_at(x: u64) -> Vec<Record> {
    vec![
        start(0),
        ev(Event::Mmap {
            process: 0,
            start: VirtAddr(x),
            len: 64 << 10,
            prot: prot::READ | prot::WRITE,
            page_shift: 12,
        }),
        ev(Event::ContextSwitch {
            core: CoreId(0),
            from: NO_THREAD,
            to: ThreadId(0),
        }),
    ]
}

/// Processes 0..n, each with a 4 KiB mapping at `x` (writable when `writable[p]`).
fn processes_at(x: u64, writable: &[bool]) -> Vec<Record> {
    let mut r = Vec::new();
    for (p, &w) in writable.iter().enumerate() {
        let p = p as u32;
        r.push(start(p));
        r.push(ev(Event::Mmap {
            process: p,
            start: VirtAddr(x),
            len: 4096,
            prot: if w {
                prot::READ | prot::WRITE
            } else {
                prot::READ
            },
            page_shift: 12,
        }));
    }
    r
}

fn flush_event(what: u8) -> Record {
    ev(Event::Flush {
        core: CoreId(0),
        what,
    })
}

/// Thread `p` of process `p` starts.
fn start(p: u32) -> Record {
    ev(Event::ThreadStart {
        thread: ThreadId(p),
        process: p,
    })
}

/// Process `p` maps 1 MiB of shared object 1 at `x` (4 KiB pages), writable or read-only.
fn map_shared(p: u32, x: u64, writable: bool) -> Record {
    ev(Event::MapShared {
        process: p,
        start: VirtAddr(x),
        len: 1 << 20,
        prot: if writable {
            prot::READ | prot::WRITE
        } else {
            prot::READ
        },
        page_shift: 12,
        object: 1,
    })
}

#[test]
fn a_domain_refilled_after_a_programs_tlb_flush_is_flushed_before_it_is_recycled() {
    use tlblab_trace::record::flush;
    // One domain for processes (L4's kernel_domains=1 less 14 more): process 0 touches x,
    // the program flushes the TLB, process 0 touches x again (a walk; its CPD entry stays, so
    // no fault), then process 1 takes the domain. Process 0's entry carries that domain: had
    // the TLB not been flushed at the recycle, process 1 would hit it and read process 0's
    // frame (seed 002 §2.3: protection is maintained). Before 2026-11-26 the program's flush
    // dropped the kernel's mark for the running process's domain and it was (twin found it).
    let x = 0x0100_0000;
    let mut r = processes_at(x, &[false, false]);
    r.push(switch(u32::MAX, 0));
    r.push(load(0, x));
    r.push(flush_event(flush::TLB));
    r.push(load(0, x));
    r.push(switch(0, 1));
    r.push(load(1, x));
    let s = run_records(r, Some("fass:kernel_domains=15,relocate=false"));
    assert_eq!(counter(&s, "recycles"), 1);
    // All three touches walk: process 1 does not hit process 0's entry.
    assert_eq!(dtlb_misses(&s), 3);
    // The recycle flushes the TLB; process 1's section was process 0's: a collision.
    assert_counters(&s, &[("collisions", 1), ("tlb_flushes", 2)]);
}

#[test]
fn a_programs_cache_flush_makes_every_domain_clean() {
    use tlblab_trace::record::flush;
    // Two domains for processes. Process 0 (writable) runs, then process 1 (read-only); the
    // program flushes the caches while 1 runs: every domain is clean (seed 002 §3.1 "Whenever
    // caches are flushed, all domains are marked clean"). Process 2 then preempts the least
    // recently scheduled clean domain, process 0's, and process 1 keeps its own. Before
    // 2026-11-26 process 0's domain stayed dirty, so process 2 took process 1's and process 1
    // took another one back: two recycles (its twin found it).
    let x = 0x0100_0000;
    let mut r = processes_at(x, &[true, false, false]);
    r.push(switch(u32::MAX, 0));
    r.push(load(0, x));
    r.push(switch(0, 1));
    r.push(load(1, x));
    r.push(flush_event(flush::CACHES));
    r.push(switch(1, 2));
    r.push(load(2, x));
    r.push(switch(2, 1));
    r.push(load(1, x));
    let s = run_records(r, Some("fass:kernel_domains=14"));
    assert_counters(
        &s,
        &[("recycles", 1), ("recycles_clean", 1), ("cache_flushes", 0)],
    );
}

#[test]
fn a_process_needing_more_domains_than_are_left_preempts_its_own() {
    // One domain for processes (kernel_domains=15) and a process with a private section and a
    // shared region (seed 002 §3.2: a domain of its own): the region's first touch preempts
    // the process's domain, the next touch of its private page takes it back (§3.1 "a domain
    // ID must be preempted"; §2.3 item 4, running out of domains). Each preemption drops the
    // other's CPD entries and flushes the TLB (both maybe in it), so every load walks; the
    // read-only domains are clean, so no cache flush. Before 2026-11-26 the engine panicked
    // at the region's touch (no domain outside the running DACR; its twin found it).
    let (private, shared) = (0x0100_0000, 0x1000_0000);
    let r = vec![
        start(0),
        map_shared(0, shared, false),
        switch(u32::MAX, 0),
        load(0, private),
        load(0, shared),
        load(0, private),
    ];
    let s = run_records(r, Some("fass:kernel_domains=15"));
    assert_counters(
        &s,
        &[
            ("shared_regions", 1),
            ("recycles", 2),
            ("recycles_clean", 2),
            ("tlb_flushes", 2),
            ("cache_flushes", 0),
            ("collisions", 0),
        ],
    );
    assert_eq!(dtlb_misses(&s), 3);
}

#[test]
fn without_relocation_a_shared_region_at_one_address_shares_tlb_entries() {
    // relocate=false keeps the traced addresses; two processes mapping one object at the same
    // address above 32 MiB still give it a domain of its own (seed 002 §3.2), so the second
    // hits the first one's TLB entry: one walk, no collision. Before 2026-11-26 the engine
    // panicked at the first touch (the object was never registered; its twin found it).
    let x = 0x1000_0000;
    let mut r = Vec::new();
    for p in 0..2 {
        r.push(start(p));
        r.push(map_shared(p, x, false));
    }
    r.push(switch(u32::MAX, 0));
    r.push(load(0, x));
    r.push(switch(0, 1));
    r.push(load(1, x));
    let s = run_records(r, Some("fass:relocate=false"));
    assert_eq!(counter(&s, "shared_regions"), 1);
    assert_eq!(dtlb_misses(&s), 1);
    assert_counters(&s, &[("collisions", 0), ("section_faults", 1)]);
    assert_eq!(s.os.tlb_flushes, 0);
}

#[test]
fn a_shared_region_is_dirtied_only_by_a_scheduled_writer() {
    // Two domains for processes (kernel_domains=14). Process 0 maps region 1 writable but
    // never runs; process 1 maps it read-only and has writable private data: scheduled, it
    // dirties its own domain, not the region's (seed 002 §3.1: "A domain is marked dirty if
    // a process with writable mappings in that domain is scheduled"). Process 2 then
    // preempts the clean one, the region's, with no cache flush. Before 2026-11-26 process
    // 0's writable mapping made the region dirty for every mapper: both domains dirty, the
    // older (the region's) taken with a cache flush (its twin found it).
    let (x, data) = (0x1000_0000, 0x0100_0000);
    let mut r = Vec::new();
    for (p, w) in [(0, true), (1, false)] {
        r.push(start(p));
        r.push(map_shared(p, x, w));
    }
    r.push(ev(Event::Mmap {
        process: 1,
        start: VirtAddr(data),
        len: 4096,
        prot: prot::READ | prot::WRITE,
        page_shift: 12,
    }));
    r.push(start(2));
    r.push(switch(u32::MAX, 1));
    r.push(load(1, x));
    r.push(switch(1, 2));
    r.push(load(2, data));
    let s = run_records(r, Some("fass:kernel_domains=14"));
    assert_counters(
        &s,
        &[("recycles", 1), ("recycles_clean", 1), ("cache_flushes", 0)],
    );
}

#[test]
fn a_shared_region_taken_at_a_fault_counts_as_scheduled_with_its_toucher() {
    // Three domains for processes (kernel_domains=13): process 0 runs, then process 1, which
    // touches its shared region (a domain taken at the fault). Process 2 then preempts the
    // least recently scheduled domain: process 0's, not the region's, which process 1, the
    // last scheduled, uses. Process 0 back takes one again: two recycles. Before 2026-11-26
    // the region's domain kept the recency of its previous holder (never scheduled: 0), so
    // process 2 took it and process 0 kept its own: one recycle (its twin found it).
    let (x, data) = (0x1000_0000, 0x0100_0000);
    let mut r: Vec<Record> = (0..3).map(start).collect();
    r.push(map_shared(1, x, false));
    r.push(switch(u32::MAX, 0));
    r.push(load(0, data));
    r.push(switch(0, 1));
    r.push(load(1, x));
    r.push(switch(1, 2));
    r.push(load(2, data));
    r.push(switch(2, 0));
    r.push(load(0, data));
    let s = run_records(r, Some("fass:kernel_domains=13"));
    assert_eq!(counter(&s, "recycles"), 2);
}

/// Several hardware threads are refused, with the reason (a domain preempted on one core while
/// its process runs on another is not modelled: no protection across cores), not run
/// unprotected.
#[test]
fn a_machine_of_several_hardware_threads_is_refused_with_the_reason() {
    let mut m = sa1100();
    m.cores = 2;
    let err = registry::build(&techniques::parse_spec("fass").unwrap(), &m, 1)
        .err()
        .expect("refused");
    assert!(
        err.contains("2 hardware threads") && err.contains("single-core"),
        "{err}"
    );
}
