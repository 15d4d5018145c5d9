//! PT-Baker (seed 001): behaviour tests of the helper thread, in closed form.
//!
//! - a kernel-mode helper (§4.3) reads page-table entries as data: it never looks up or fills
//!   a TLB, while a user-mode one (§4.2) fills its core's;
//! - a helper on another CCX (Fig. 4.5: nothing shared) changes no walk reference's source of
//!   the application, nor anything else the application counts;
//! - with data accesses off, once the helper has swept a range whose page-table lines fit in
//!   the L3, no walk reference of that range is served by memory (and without it, after the
//!   caches were emptied, some are);
//! - mode=none with no pressure is the technique-free run, count for count.

mod common;

use common::tlb;
use tlblab_core::cache::{CacheConfig, CacheKind, Indexing};
use tlblab_core::machine::{MachineConfig, WalkerConfig};
use tlblab_core::memory::MemoryConfig;
use tlblab_core::page_table::PageTableFormat;
use tlblab_core::registry;
use tlblab_core::replacement::ReplacementKind;
use tlblab_core::stats::UnitStats;
use tlblab_core::techniques::{self, pt_baker};
use tlblab_core::tlb::{TagConfig, TlbKind};
use tlblab_core::walker::PwcConfig;
use tlblab_core::{RunOptions, System};
use tlblab_trace::record::flush;
use tlblab_trace::{Access, Event, Record};
use tlblab_types::{AccessKind, CoreId, PageSize, SplitMix64, ThreadId, VirtAddr};

fn cache(name: &str, level: u8, size: u64, ways: usize, latency: u64, shared: bool) -> CacheConfig {
    let mut c = common::cache(name, level, size, ways, latency);
    c.kind = if level == 1 {
        CacheKind::Data
    } else {
        CacheKind::Unified
    };
    c.shared = shared;
    c.indexing = Indexing::Physical;
    c
}

/// The zen3 preset's geometry and latencies (presets/zen3.toml), `cores` cores; the L3 shared by
/// groups of `l3_group` cores (0: all of them, one CCX).
fn zen3_like(cores: usize, l3_group: usize) -> MachineConfig {
    let tags = TagConfig {
        asid: true,
        vmid: true,
        hw_thread: true,
        ..TagConfig::default()
    };
    let mut l1 = tlb("L1D", 1, 64, 64, ReplacementKind::Lru);
    l1.kind = TlbKind::Data;
    l1.latency = 0;
    l1.tags = tags;
    // Unified, so that the machine translates instruction references too (none come here).
    let mut l2 = tlb("L2D", 2, 2048, 16, ReplacementKind::Lru);
    l2.latency = 7;
    l2.tags = tags;
    l2.page_sizes = vec![PageSize::Size4K, PageSize::Size2M];
    let base = MachineConfig::minimal("zen3-like", PageTableFormat::X86_64_4level, vec![l1, l2]);
    let mut l3 = cache("L3", 3, 32 << 20, 16, 46, true);
    l3.cores_per_instance = l3_group;
    MachineConfig {
        cores,
        frequency_mhz: 3700.0,
        walker: WalkerConfig {
            latency: 5,
            first_cache_level: 1,
            uncached: false,
            memory_latency: 0,
            pwcs: vec![
                PwcConfig {
                    level: 2,
                    entries: 64,
                    ways: Some(4),
                    latency: 1,
                    replacement: ReplacementKind::Lru,
                    source: String::new(),
                },
                PwcConfig {
                    level: 1,
                    entries: 16,
                    ways: None,
                    latency: 1,
                    replacement: ReplacementKind::Lru,
                    source: String::new(),
                },
            ],
            pwc_restart: Default::default(),
        },
        caches: vec![
            cache("L1D", 1, 32 << 10, 8, 4, false),
            cache("L2", 2, 512 << 10, 8, 12, false),
            l3,
        ],
        memory: MemoryConfig {
            latency: 330,
            ..base.memory.clone()
        },
        ..base
    }
}

const BASE: u64 = 0x1000_0000;

fn load(va: u64) -> Record {
    Record::Access(Access::new(ThreadId(0), AccessKind::Load, VirtAddr(va), 8))
}

fn region(pages: u64) -> Record {
    Record::Event(Event::Region {
        region: 0,
        start: VirtAddr(BASE),
        len: pages * 4096,
    })
}

/// The application: announces its region of `pages` pages, touches each page once in order
/// (populating it), then makes `accesses` random loads over it.
fn app(pages: u64, accesses: u64, seed: u64) -> Vec<Record> {
    let mut out = vec![region(pages)];
    out.extend((0..pages).map(|p| load(BASE + p * 4096)));
    let mut rng = SplitMix64::new(seed);
    out.extend((0..accesses).map(|_| load(BASE + rng.below(pages) * 4096 + 8 * rng.below(512))));
    out
}

fn run(
    cfg: MachineConfig,
    options: RunOptions,
    technique: Option<&str>,
    records: &[Record],
) -> System {
    let mut sys = System::new(cfg, options).unwrap();
    if let Some(t) = technique {
        registry::install(&mut sys, &techniques::parse_spec(t).unwrap()).unwrap();
    }
    sys.run_slice(records).unwrap();
    sys
}

fn app_stats(sys: &System) -> UnitStats {
    sys.stats().threads[&0].clone()
}

/// The walks alone: no data accesses reach the caches, so what the helper leaves in them shows.
fn without_data() -> RunOptions {
    RunOptions {
        data_accesses: false,
        ..RunOptions::default()
    }
}

fn counter(sys: &System, name: &str) -> u64 {
    sys.stats().technique.unwrap().counters[name]
}

#[test]
fn given_a_kernel_mode_helper_when_it_sweeps_then_no_tlb_is_looked_up_or_filled_on_its_core() {
    let records = app(8192, 100_000, 1);
    let sys = run(
        zen3_like(2, 0),
        RunOptions::default(),
        Some("pt_baker:mode=kernel,stride=8"),
        &records,
    );
    assert!(counter(&sys, "sweeps") >= 1, "the helper swept the range");
    assert!(counter(&sys, "pte_reads") > 1024);
    let stats = sys.stats();
    let helper = &stats.threads[&pt_baker::HELPER_THREAD.0];
    assert_eq!(helper.references, 0);
    assert_eq!(helper.walks, 0);
    assert!(helper
        .tlb
        .iter()
        .all(|l| l.accesses == 0 && l.hits == 0 && l.misses == 0));
    for t in sys.data_tlbs_of(1) {
        assert_eq!(
            sys.tlbs[t].entries().count(),
            0,
            "the helper's core holds no translation"
        );
    }
    // The control: a user-mode helper (loads) walks and fills its core's TLBs.
    let user = run(
        zen3_like(2, 0),
        RunOptions::default(),
        Some("pt_baker:mode=user,stride=8"),
        &records,
    );
    assert!(user.stats().threads[&pt_baker::HELPER_THREAD.0].walks > 0);
    assert!(user
        .data_tlbs_of(1)
        .iter()
        .any(|&t| user.tlbs[t].entries().count() > 0));
}

#[test]
fn given_a_helper_on_another_ccx_then_no_walk_reference_of_the_application_changes_source() {
    let records = app(16384, 60_000, 2);
    // Two CCXs of one core each: the helper's L3 is not the application's.
    let base = app_stats(&run(zen3_like(2, 1), RunOptions::default(), None, &records));
    assert!(base.walk_refs_by_source.last().copied().unwrap() > 0);
    for mode in ["kernel", "user", "prefetch"] {
        let t = format!("pt_baker:mode={mode},place=other_ccx");
        let sys = run(zen3_like(2, 1), RunOptions::default(), Some(&t), &records);
        assert_eq!(counter(&sys, "helper_cpu"), 1);
        assert!(
            counter(&sys, "sweeps") >= 1,
            "{mode}: the helper swept the range"
        );
        let with = app_stats(&sys);
        assert_eq!(with.walk_refs_by_source, base.walk_refs_by_source, "{mode}");
        assert_eq!(with.data_by_source, base.data_by_source, "{mode}");
        assert_eq!(with.cycles, base.cycles, "{mode}");
    }
    // The control: on the same CCX the kernel-mode helper does change them.
    let same = app_stats(&run(
        zen3_like(2, 0),
        RunOptions::default(),
        Some("pt_baker:mode=kernel"),
        &records,
    ));
    let base_same = app_stats(&run(zen3_like(2, 0), RunOptions::default(), None, &records));
    assert_ne!(same.walk_refs_by_source, base_same.walk_refs_by_source);
}

/// A range populated, then left: 64 MiB (16,384 pages, their leaf PTEs 128 KiB = 2,048 lines,
/// far below the 32 MiB L3) touched once, the caches emptied (core 0's and the L3 it shares:
/// the range's PTE lines are gone), then the application working elsewhere (4,096 other pages in
/// turn, beyond the L2 TLB, so the range's translations leave its TLBs too) long enough for the
/// helper to sweep. Returns (pages, those records, 20,000 loads of random pages of the range
/// drawn from `seed`).
fn populated_then_elsewhere(seed: u64) -> (u64, Vec<Record>, Vec<Record>) {
    let pages = 16384;
    let mut before = vec![region(pages)];
    before.extend((0..pages).map(|p| load(BASE + p * 4096)));
    before.push(Record::Event(Event::Flush {
        core: CoreId(0),
        what: flush::CACHES,
    }));
    let other = BASE + (1 << 30);
    for i in 0..200_000u64 {
        before.push(load(other + (i % 4096) * 4096));
    }
    let mut rng = SplitMix64::new(seed);
    let after: Vec<Record> = (0..20_000)
        .map(|_| load(BASE + rng.below(pages) * 4096))
        .collect();
    (pages, before, after)
}

#[test]
fn given_data_accesses_off_when_the_helper_has_swept_a_range_that_fits_the_l3_then_no_walk_of_it_goes_to_memory(
) {
    let (_, before, after) = populated_then_elsewhere(3);
    let options = without_data();
    let memory_walk_refs = |technique: Option<&str>| {
        let mut sys = run(zen3_like(2, 0), options, technique, &before);
        if technique.is_some() {
            assert!(counter(&sys, "sweeps") >= 1, "the helper swept the range");
        }
        let a = app_stats(&sys);
        sys.run_slice(&after).unwrap();
        let b = app_stats(&sys);
        assert!(b.walks - a.walks > 10_000, "the range's pages walk again");
        let m = a.walk_refs_by_source.len() - 1;
        b.walk_refs_by_source[m] - a.walk_refs_by_source[m]
    };
    assert!(
        memory_walk_refs(None) > 1000,
        "without the helper the flushed lines come from memory"
    );
    assert_eq!(memory_walk_refs(Some("pt_baker:mode=kernel,stride=8")), 0);
}

#[test]
fn given_mode_none_without_pressure_then_the_run_is_the_technique_free_one() {
    let records = app(4096, 30_000, 4);
    let base = run(zen3_like(2, 0), RunOptions::default(), None, &records).stats();
    let none = run(
        zen3_like(2, 0),
        RunOptions::default(),
        Some("pt_baker:mode=none"),
        &records,
    )
    .stats();
    assert_eq!(none.total, base.total);
    assert_eq!(none.threads, base.threads);
    assert_eq!(none.cycles, base.cycles);
}

#[test]
fn given_a_placement_the_machine_cannot_give_then_install_names_it() {
    for (cores, spec, named) in [
        (1, "pt_baker", "place=ccx"),
        (2, "pt_baker:place=other_ccx", "cores_per_instance"),
        (2, "pt_baker:pressure=stream", "pressure=stream needs 2"),
    ] {
        let mut sys = System::new(zen3_like(cores, 0), RunOptions::default()).unwrap();
        let e = registry::install(&mut sys, &techniques::parse_spec(spec).unwrap()).unwrap_err();
        assert!(e.0.contains(named), "{spec} on {cores} cores: {e}");
    }
}

/// The user mode (§4.2, Alg. 2) on the regime the seed measured: the region populated before the
/// helper's work matters (Alg. 1 spawns it after `init_workload`), its page-table lines then
/// evicted. The helper's loads walk on its own core, fill that core's TLBs with the range's
/// pages, and leave the lines they walked in the shared L3: afterwards no walk reference of the
/// application to the range is served by memory, while without the helper thousands are. (A
/// user-mode helper passes over pages not yet mapped, so a run whose walks are all first touches
/// gives it nothing to do: the quick reproductions' graph500 prefix, whose 611 walks are 611
/// page faults, shows exactly zero effect for that reason, not for a fault of the mode.)
#[test]
fn given_a_user_mode_helper_on_a_populated_range_then_its_core_tlb_holds_the_range_and_the_app_walks_hit_the_l3(
) {
    let (pages, before, after) = populated_then_elsewhere(5);
    let options = without_data();
    // (walk references of the range served by memory, by the L3; the system)
    let run_it = |technique: Option<&str>| {
        let mut sys = run(zen3_like(2, 0), options, technique, &before);
        let a = app_stats(&sys);
        sys.run_slice(&after).unwrap();
        let b = app_stats(&sys);
        assert!(b.walks - a.walks > 10_000, "the range's pages walk again");
        let m = a.walk_refs_by_source.len() - 1;
        let l3 = m - 1;
        (
            b.walk_refs_by_source[m] - a.walk_refs_by_source[m],
            b.walk_refs_by_source[l3] - a.walk_refs_by_source[l3],
            sys,
        )
    };
    let (mem_base, l3_base, _) = run_it(None);
    assert!(
        mem_base > 1000,
        "without the helper the flushed lines come from memory"
    );
    let (mem, l3, sys) = run_it(Some("pt_baker:mode=user,stride=8"));
    assert!(counter(&sys, "sweeps") >= 1, "the helper swept the range");
    assert!(counter(&sys, "pages_touched") >= pages / 8);
    assert_eq!(
        counter(&sys, "pte_reads"),
        0,
        "a user-mode helper reads no entry in software"
    );
    assert_eq!(
        mem, 0,
        "every walk reference of the range is served by a cache"
    );
    assert!(
        l3 >= l3_base + mem_base,
        "what came from memory comes from the L3 (shadow tags of the helper's L2): {l3} vs {l3_base} + {mem_base}"
    );
    // The helper's own loads walked on its core (§4.2) and filled that core's TLBs: each of
    // them holds pages of the range, tagged with the helper's hardware thread.
    let stats = sys.stats();
    let helper = &stats.threads[&pt_baker::HELPER_THREAD.0];
    assert!(helper.walks >= pages / 8, "{} walks", helper.walks);
    let range = BASE >> 12..(BASE >> 12) + pages;
    for t in sys.data_tlbs_of(1) {
        let n = sys.tlbs[t]
            .entries()
            .filter(|e| range.contains(&e.vpn.0))
            .count();
        assert!(
            n > 0,
            "TLB {t} of the helper's core holds pages of the range"
        );
    }
}

/// The application populates `pages` pages from BASE, then announces them as its region (the
/// helper is spawned only then, Alg. 1), then makes `accesses` random loads.
fn populated_region(pages: u64, accesses: u64) -> Vec<Record> {
    let mut out: Vec<Record> = (0..pages).map(|p| load(BASE + p * 4096)).collect();
    out.push(region(pages));
    let mut rng = SplitMix64::new(9);
    out.extend((0..accesses).map(|_| load(BASE + rng.below(pages) * 4096)));
    out
}

/// Given a populated region of 4 last-level tables (2048 pages from a 2 MiB boundary) and a
/// kernel-mode stride of 1024 pages, when the helper sweeps once (a long sleep after it), then
/// it reads the first PTE of every table, 4, and each upper entry once (PML4, PDPT, 4 PDs): 10
/// reads. Seed 001 Alg. 3: `walk_pte_range` runs per table from the table's first address and
/// stops at the table's end, so no table is skipped whatever the stride (found by the
/// reference's twin, 2026-11-26: the engine ran the stride on from the range's start, reading
/// 2 PTEs, of tables 0 and 2).
#[test]
fn given_a_kernel_stride_above_a_table_then_every_table_of_the_range_is_read_once() {
    let sys = run(
        zen3_like(2, 0),
        RunOptions::default(),
        Some("pt_baker:mode=kernel,stride=1024,sleep_us=100000"),
        &populated_region(2048, 4000),
    );
    assert_eq!(counter(&sys, "sweeps"), 1);
    assert_eq!(counter(&sys, "pages_touched"), 4);
    assert_eq!(counter(&sys, "pte_reads"), 10);
}

/// Given a region that was never touched (no last-level table under it), when a kernel-mode
/// helper with NOPs sweeps it, then its work is the same as without NOPs: Alg. 3 runs its NOPs
/// after each PTE read (lines 5-11), and an empty upper entry is passed over without any
/// (found by the twin, 2026-11-26: the engine charged them at every step).
#[test]
fn given_a_range_without_page_tables_then_kernel_nops_cost_nothing() {
    let records = [
        region(4096),
        Record::Event(Event::Region {
            region: 1,
            start: VirtAddr(BASE + (1 << 30)),
            len: 16 << 20,
        }),
    ]
    .into_iter()
    .chain((0..2000).map(|i| load(BASE + (i % 64) * 4096)))
    .collect::<Vec<_>>();
    let busy = |nops: u64| {
        let spec = format!("pt_baker:mode=kernel,range=0x50000000:16M,nops={nops},nop_cycles=10");
        let sys = run(
            zen3_like(2, 0),
            RunOptions::default(),
            Some(&spec),
            &records,
        );
        assert!(counter(&sys, "sweeps") > 0);
        assert_eq!(counter(&sys, "pages_touched"), 0);
        (counter(&sys, "helper_busy_cycles"), counter(&sys, "sweeps"))
    };
    assert_eq!(busy(100), busy(0));
}

/// Given the helper's own hardware thread and no switch cost, then the cycles counted on its
/// core are exactly its `helper_busy_cycles` in every mode: a user load's cycles, a prefetch's
/// waited part and a kernel read's are charged once (found by the twin, 2026-11-26: a user
/// load and a prefetch were charged twice, once by the access and once more with the loop).
#[test]
fn given_each_mode_then_the_helpers_core_counts_its_busy_cycles_once() {
    let records = app(2048, 20_000, 5);
    let mut opts = RunOptions::default();
    opts.os.switch_cycles = 0;
    for mode in ["user", "prefetch", "kernel"] {
        let spec = format!("pt_baker:mode={mode},stride=8,nops=2");
        let sys = run(zen3_like(2, 0), opts, Some(&spec), &records);
        let busy = counter(&sys, "helper_busy_cycles");
        assert!(counter(&sys, "pages_touched") > 0, "{mode}");
        assert_eq!(sys.stats().cores[1].cycles, busy, "{mode}");
    }
}

/// The helper's busy cycles and PTE reads from memory for one kernel-mode sweep (stride 8) of
/// `pages` populated pages whose lines were flushed from every cache, on `cfg`: the
/// application populates them, the caches are emptied, the region is announced (the helper
/// is spawned), and the application then loads 16 pages elsewhere (TLB and L1 hits, so that
/// none of the range's lines comes back but the helper's) long enough for one sweep (a long
/// sleep after it).
fn one_cold_kernel_sweep(cfg: MachineConfig, pages: u64) -> (u64, u64) {
    let mut records: Vec<Record> = (0..pages).map(|p| load(BASE + p * 4096)).collect();
    for core in 0..cfg.cores as u16 {
        records.push(Record::Event(Event::Flush {
            core: CoreId(core),
            what: flush::CACHES,
        }));
    }
    records.push(region(pages));
    let other = BASE + (1 << 30);
    records.extend((0..100_000u64).map(|i| load(other + (i % 16) * 4096)));
    let sys = run(
        cfg,
        RunOptions::default(),
        Some("pt_baker:mode=kernel,stride=8,sleep_us=1000000"),
        &records,
    );
    assert_eq!(counter(&sys, "sweeps"), 1);
    (
        counter(&sys, "helper_busy_cycles"),
        counter(&sys, "pte_reads_from_memory"),
    )
}

/// Given 4,096 populated pages (8 last-level tables: 512 PTE lines at stride 8) flushed from
/// the caches, when a kernel-mode helper sweeps them once, then in order each of the 512 reads
/// from memory costs its 330 cycles (at least 512 × 330 in all), and on a machine with
/// `timing.mlp` of k miss slots the reads overlap (Alg. 3's PTE addresses come from a loop
/// counter): the sweep takes about 512 × 330 / k cycles, no less (k lines at a time), and no
/// more than that plus the upper entries each awaited once from memory (PML4, PDPT, the PD
/// line of the 8 tables), the loop's cycle a step and the system calls' entries and exits.
#[test]
fn given_timing_mlp_when_a_kernel_helper_sweeps_cold_pte_lines_then_k_slots_take_a_kth_of_the_time()
{
    let lines = 512u64;
    let latency = 330u64;
    let (in_order, from_memory) = one_cold_kernel_sweep(zen3_like(2, 0), 4096);
    assert!(from_memory >= lines, "{from_memory} reads from memory");
    assert!(in_order >= lines * latency, "{in_order} cycles in order");
    for slots in [4u32, 24] {
        let mut cfg = zen3_like(2, 0);
        cfg.timing.mlp = Some(tlblab_core::machine::MlpConfig {
            miss_slots: slots,
            walkers: slots.min(6),
            window: 44,
            issue_instructions: 0,
            issue_width: 1,
            steady_state: false,
        });
        let (busy, mem) = one_cold_kernel_sweep(cfg, 4096);
        assert_eq!(
            mem, from_memory,
            "the same lines from memory ({slots} slots)"
        );
        let floor = lines * latency / slots as u64;
        // 3 awaited upper lines, the loop's 1 cycle a step (512 steps and the sweep's end),
        // the kernel's entry and exit and the sleep's (168.7 ns at 3.7 GHz: 624 cycles each),
        // the PD entries of the next 7 tables from the L1 (4 cycles each).
        let overheads = 3 * latency + (lines + 1) + 2 * 624 + 7 * 4;
        assert!(
            busy >= floor && busy <= floor + overheads,
            "{slots} slots: {busy} cycles, expected {floor}..={} (in order {in_order})",
            floor + overheads
        );
    }
}

/// A region of interest reports the helper's settings (its hardware thread, its range, the L3
/// it sizes the stressors by) as they are, not as a difference of two equal values (0).
#[test]
fn given_a_region_of_interest_then_the_helpers_settings_are_reported_whole() {
    let mut records = app(1024, 2_000, 1);
    let roi = tlblab_trace::record::ROI_REGION;
    records.insert(1 + 1024, Record::Event(Event::PhaseBegin { region: roi }));
    let sys = run(
        zen3_like(2, 0),
        RunOptions::default(),
        Some("pt_baker:mode=kernel,stride=8"),
        &records,
    );
    assert!(sys.roi_begun(), "the region of interest began");
    assert_eq!(counter(&sys, "helper_cpu"), 1);
    assert_eq!(counter(&sys, "range_pages"), 1024);
    assert!(counter(&sys, "l3_bytes") > 0);
    let whole = sys.stats().technique.unwrap().levels;
    assert!(whole.contains(&"helper_cpu".to_string()), "{whole:?}");
}
