//! Builders for small machines used by the behaviour tests, and the comparisons of the
//! engine with itself and with the reference model (random machines and traces: `random`).
#![allow(dead_code)]

pub mod random;
pub mod run;

use tlblab_core::cache::{CacheConfig, CacheKind, Indexing};
use tlblab_core::machine::{MachineConfig, WalkerConfig};
use tlblab_core::page_table::PageTableFormat;
use tlblab_core::replacement::ReplacementKind;
use tlblab_core::tlb::{TlbConfig, TlbKind, Ways};
use tlblab_core::{RunOptions, System};
use tlblab_trace::{Access, Event, Record};
use tlblab_types::{AccessKind, PageSize, ThreadId, VirtAddr};

pub fn tlb(name: &str, level: u8, entries: usize, ways: usize, repl: ReplacementKind) -> TlbConfig {
    TlbConfig {
        replacement: repl,
        page_sizes: vec![
            PageSize::Size4K,
            PageSize::Size64K,
            PageSize::Size1M,
            PageSize::Size2M,
            PageSize::Size1G,
        ],
        ..TlbConfig::plain(name, level, entries, Ways::N(ways))
    }
}

pub fn cache(name: &str, level: u8, size: u64, ways: usize, latency: u64) -> CacheConfig {
    CacheConfig {
        name: name.into(),
        level,
        kind: CacheKind::Unified,
        size,
        ways,
        line: 64,
        latency,
        replacement: ReplacementKind::Lru,
        shared: false,
        cores_per_instance: 0,
        indexing: Indexing::Physical,
        flush_cycles_base: 0,
        flush_cycles_per_line: 0,
        flush_cycles_per_dirty_line: 0,
        range_flush_cycles_per_line: 0,
        prefetch: None,
        source: String::new(),
    }
}

/// ARM Linux's layout of the second-level tables (`TableLayout::LinuxArmv7`) on an
/// `armv7_short` machine where `linux` says so, from a draw the machine already has (so the
/// stored regressions keep their other values); every other machine keeps its own.
pub fn with_linux_armv7_layout(mut m: MachineConfig, linux: bool) -> MachineConfig {
    if linux && m.page_table.format == PageTableFormat::Armv7Short {
        m.page_table.layout = tlblab_core::page_table::TableLayout::LinuxArmv7;
    }
    m
}

pub fn machine(format: PageTableFormat, tlbs: Vec<TlbConfig>) -> MachineConfig {
    MachineConfig {
        walker: WalkerConfig {
            first_cache_level: 1,
            ..WalkerConfig::default()
        },
        ..MachineConfig::minimal("test", format, tlbs)
    }
}

/// One 64-entry TLB answering in 0 cycles, no cache (every data line and every page-table
/// entry from memory, `memory_latency` cycles), a walker of no fixed cost: the machine of the
/// timing tests in closed form (`tests/mlp.rs`, `tests/dram.rs`).
pub fn uncached(memory_latency: u64) -> MachineConfig {
    let mut m = machine(
        PageTableFormat::X86_64_4level,
        vec![tlb("TLB", 1, 64, 64, ReplacementKind::Lru)],
    );
    m.tlbs[0].latency = 0;
    m.memory.latency = memory_latency;
    m.walker.latency = 0;
    m
}

/// A split two-level TLB of the shapes the fast lane specialises (tlb/fast.rs): an LRU first
/// level of `l1_sets` × `l1_ways` (fully associative when `l1_sets` is 1), a low-bit indexed
/// second level of `l2_sets` × `l2_ways` (none when `l2_sets` is 0) replaced by `l2_policy`
/// (LRU, or random as the Cortex-A9's main TLB), on each path; x86-64 4-level, 4 KiB pages.
pub fn shaped_machine(
    (l1_sets, l1_ways): (usize, usize),
    (l2_sets, l2_ways, l2_policy): (usize, usize, ReplacementKind),
    latency: u64,
    unified_l2: bool,
) -> MachineConfig {
    let level = |name: &str, level: u8, kind: TlbKind, sets: usize, ways: usize| TlbConfig {
        kind,
        latency: latency * (level as u64 - 1),
        ..tlb(
            name,
            level,
            sets * ways,
            ways,
            if level == 2 {
                l2_policy
            } else {
                ReplacementKind::Lru
            },
        )
    };
    let tlbs = if l2_sets == 0 {
        // One level per path (the SA-1100's and gem5's data TLBs).
        vec![
            level("L1I", 1, TlbKind::Instr, l1_sets, l1_ways),
            level("L1D", 1, TlbKind::Data, l1_sets, l1_ways),
        ]
    } else if unified_l2 {
        // One second level behind both paths: instruction references move its state (and its
        // memo) between the data path's shaped lookups.
        vec![
            level("L1I", 1, TlbKind::Instr, l1_sets, l1_ways),
            level("L1D", 1, TlbKind::Data, l1_sets, l1_ways),
            level("L2", 2, TlbKind::Unified, l2_sets, l2_ways),
        ]
    } else {
        vec![
            level("L1I", 1, TlbKind::Instr, l1_sets, l1_ways),
            level("L1D", 1, TlbKind::Data, l1_sets, l1_ways),
            level("L2I", 2, TlbKind::Instr, l2_sets, l2_ways),
            level("L2D", 2, TlbKind::Data, l2_sets, l2_ways),
        ]
    };
    let mut cfg = machine(PageTableFormat::X86_64_4level, tlbs);
    cfg.walker.latency = 5;
    cfg.memory.bytes = 64 << 20;
    cfg
}

pub fn fa(entries: usize) -> MachineConfig {
    machine(
        PageTableFormat::X86_64_4level,
        vec![tlb("L1", 1, entries, entries, ReplacementKind::Lru)],
    )
}

pub fn system(cfg: MachineConfig) -> System {
    System::new(
        cfg,
        RunOptions {
            data_accesses: false,
            ..RunOptions::default()
        },
    )
    .unwrap()
}

pub fn load(sys: &mut System, va: u64) -> u64 {
    sys.access(Access::new(ThreadId(0), AccessKind::Load, VirtAddr(va), 8))
        .unwrap()
}

pub fn sweep(sys: &mut System, base: u64, pages: u64, stride: u64, rounds: u64) {
    for _ in 0..rounds {
        for p in 0..pages {
            load(sys, base + p * stride);
        }
    }
}

/// Where `by_run` and `by_access` (the same records through `run`/`run_slice` and through
/// `access` one by one) ended in different states: every statistic, each TLB level's entries,
/// and the run's TLB bookkeeping; Ok if nowhere.
pub fn end_state_difference(by_run: &System, by_access: &System) -> Result<(), String> {
    let stats = |s: &System| serde_json::to_value(s.stats()).unwrap();
    let (a, b) = (stats(by_run), stats(by_access));
    if a != b {
        return Err(format!(
            "statistics differ\n  by run:    {a}\n  by access: {b}"
        ));
    }
    for (x, y) in by_run.tlbs.iter().zip(&by_access.tlbs) {
        let (ex, ey) = (
            x.entries().collect::<Vec<_>>(),
            y.entries().collect::<Vec<_>>(),
        );
        if ex != ey {
            return Err(format!(
                "TLB {} entries differ\n  by run:    {ex:?}\n  by access: {ey:?}",
                x.config.name
            ));
        }
        x.check_bookkeeping()
            .map_err(|e| format!("TLB {}: {e}", x.config.name))?;
    }
    Ok(())
}

/// An engine's `UnitStats` as the reference counts them.
pub fn ref_counters(u: &tlblab_core::stats::UnitStats) -> tlblab_core::reference::RefCounters {
    let four = |l: &tlblab_core::stats::LevelStats| [l.accesses, l.hits, l.misses, l.evictions];
    tlblab_core::reference::RefCounters {
        references: u.references,
        instr_references: u.instr_references,
        tlb: u.tlb.iter().map(four).collect(),
        walks: u.walks,
        walk_refs: u.walk_refs,
        walk_refs_by_source: u.walk_refs_by_source.clone(),
        pwc_hits: u.pwc_hits,
        walk_cycles: u.walk_cycles,
        data_by_source: u.data_by_source.clone(),
        cache: u.cache.iter().map(four).collect(),
        page_faults: u.page_faults,
        invalidations: u.invalidations,
        cycles: u.cycles,
        data_stall_cycles: u.data_stall_cycles.clone(),
    }
}

/// Each of the engine's TLB instances' valid entries, as the reference lists them.
pub fn ref_entries(sys: &System) -> Vec<Vec<tlblab_core::reference::RefEntry>> {
    sys.tlbs
        .iter()
        .map(|t| {
            t.entries()
                .map(|e| tlblab_core::reference::RefEntry {
                    vpn: e.vpn.0,
                    size: e.size,
                    pfn: e.pfn.0,
                    asid: e.asid.0,
                    hw_thread: e.hw_thread,
                    locked: e.locked,
                    global: e.global,
                })
                .collect()
        })
        .collect()
}

/// Where the engine `sys` and the reference model `r` (the same records run on both) ended
/// differently: every counter of every core (`UnitStats` as the reference keeps it, of the
/// region of interest after a warm-up), every hardware thread's clock, the OS counters, every
/// TLB entry, the references a warm-up left out, and a technique's counters against its
/// twin's; Ok if nowhere.
pub fn reference_difference(
    sys: &System,
    r: &tlblab_core::reference::ReferenceModel,
) -> Result<(), String> {
    let stats = sys.stats();
    for (i, (u, mine)) in stats.cores.iter().zip(r.core_counters()).enumerate() {
        let theirs = ref_counters(u);
        if theirs != mine {
            return Err(format!(
                "core {i} counters differ\n  engine:    {theirs:?}\n  reference: {mine:?}"
            ));
        }
    }
    let clocks: Vec<u64> = (0..sys.cpu_count()).map(|c| sys.clock(c)).collect();
    if clocks != r.clocks() {
        return Err(format!(
            "clocks differ: engine {clocks:?}, reference {:?}",
            r.clocks()
        ));
    }
    let (os, ro) = (&stats.os, r.os_counters());
    if *os != ro {
        return Err(format!(
            "OS counters differ: engine {os:?}, reference {ro:?}"
        ));
    }
    let (mine, contents) = (ref_entries(sys), r.tlb_contents());
    for (i, (a, b)) in mine.iter().zip(&contents).enumerate() {
        if a != b {
            return Err(format!(
                "TLB {} ({i}) entries differ\n  engine:    {a:?}\n  reference: {b:?}",
                sys.tlbs[i].config.name
            ));
        }
    }
    // The DRAM channels' counts (`timing.dram`): the reference keeps them from the start.
    let dram = stats.dram.map(|d| {
        [
            d.lines,
            d.queued_lines,
            d.queue_cycles,
            d.writeback_lines,
            d.activations,
        ]
    });
    if stats.warmup.is_none() && dram != r.dram_counts() {
        return Err(format!(
            "DRAM counts (lines, waited, cycles, written back, activations) differ: engine {dram:?}, reference {:?}",
            r.dram_counts()
        ));
    }
    let warm = stats.warmup.as_ref().map(|w| w.references);
    if warm != r.warmup_references() {
        return Err(format!(
            "warm-up references differ: engine {warm:?}, reference {:?}",
            r.warmup_references()
        ));
    }
    let twin = r.twin_counters();
    if !twin.is_empty() {
        let engine: Vec<(String, u64)> = stats
            .technique
            .as_ref()
            .map(|t| t.counters.iter().map(|(k, v)| (k.clone(), *v)).collect())
            .unwrap_or_default();
        let mut twin = twin;
        twin.sort();
        if engine != twin {
            return Err(format!(
                "technique counters differ: engine {engine:?}, twin {twin:?}"
            ));
        }
    }
    Ok(())
}

/// The start of threads `0..processes.len()`, thread t in process `processes[t]`.
pub fn thread_starts(processes: &[u32]) -> Vec<Record> {
    (0..)
        .zip(processes)
        .map(|(t, &process)| {
            Record::Event(Event::ThreadStart {
                thread: ThreadId(t),
                process,
            })
        })
        .collect()
}

/// The shaped parity tests' references: (page, k) over `pages` pages from 0x4000_0000, kind
/// k % 3 (mostly data, some fetches), offset 8k, all of thread 0.
pub fn shaped_records(pages: u64, refs: &[(u64, u8)]) -> Vec<Record> {
    refs.iter()
        .map(|&(p, k)| {
            let kind = [AccessKind::Load, AccessKind::Store, AccessKind::Instr][(k % 3) as usize];
            let va = 0x4000_0000 + (p % pages) * 4096 + (k as u64) * 8;
            Record::Access(Access::new(ThreadId(0), kind, VirtAddr(va), 4))
        })
        .collect()
}

/// Checks a run's technique counters by name, all in one comparison: a failure shows every
/// counter asked for, the ones that agree beside the ones that do not.
pub fn assert_counters(st: &tlblab_core::Stats, want: &[(&str, u64)]) {
    let counters = &st
        .technique
        .as_ref()
        .expect("a technique's counters")
        .counters;
    let got: Vec<(&str, u64)> = want.iter().map(|&(n, _)| (n, counters[n])).collect();
    assert_eq!(got, want, "technique counters");
}
