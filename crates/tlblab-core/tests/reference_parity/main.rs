//! Parity tier: the engine agrees with the naive reference model, access for access, on random
//! machine configurations and random access streams (ARCHITECTURE.md "Correctness tiers", docs/reference-model.md).

#[path = "../common/mod.rs"]
mod common;

use common::random::{plain_cache_level, plain_tlb_level, pwcs, repl};

use proptest::prelude::*;
use tlblab_core::machine::{MachineConfig, WalkerConfig};
use tlblab_core::memory::{MemoryConfig, Placement};
use tlblab_core::os::SwitchPolicy;
use tlblab_core::page_table::PageTableFormat;
use tlblab_core::reference::ReferenceModel;
use tlblab_core::replacement::ReplacementKind;
use tlblab_core::tlb::{TlbConfig, TlbKind, Ways};
use tlblab_core::{RunOptions, System};
use tlblab_trace::record::flush;
use tlblab_trace::{Access, Event, Record};
use tlblab_types::{AccessKind, CoreId, PageSize, SplitMix64, ThreadId, VirtAddr};

fn machine() -> impl Strategy<Value = (MachineConfig, bool)> {
    let format = prop_oneof![
        Just(PageTableFormat::X86_64_4level),
        Just(PageTableFormat::Armv8_4k),
        Just(PageTableFormat::Armv7Short)
    ];
    (
        format,
        1usize..4,
        0usize..4,
        proptest::collection::vec((0usize..3, 1usize..9, repl(), 0u64..4), 0..3),
        any::<bool>(),
        1u8..3,
        prop_oneof![Just(Placement::Sequential), Just(Placement::Random)],
    )
        .prop_flat_map(
            |(format, ntlb, ncache, pwc_specs, caches_on, first_cache, placement)| {
                let sizes = format.page_sizes();
                let tlbs: Vec<_> = (1..=ntlb as u8)
                    .map(|l| plain_tlb_level(l, sizes.clone()))
                    .collect();
                let caches: Vec<_> = (1..=ncache as u8).map(plain_cache_level).collect();
                (
                    Just(format),
                    tlbs,
                    caches,
                    Just(pwc_specs),
                    Just(caches_on),
                    Just(first_cache),
                    Just(placement),
                )
            },
        )
        .prop_map(
            |(format, mut tlbs, caches, pwc_specs, caches_on, first_cache, placement)| {
                // Both paths need a level: make the first unified if one path has none.
                let covers = |k: TlbKind| tlbs.iter().any(|t: &TlbConfig| t.kind != k);
                if !covers(TlbKind::Instr) || !covers(TlbKind::Data) {
                    tlbs[0].kind = TlbKind::Unified;
                }
                let pwcs = pwcs(&pwc_specs, format.levels().len());
                // Linux's ARMv7 table layout on the machines of one or three TLB levels.
                let linux = tlbs.len() != 2;
                let first_cache_level = if caches.iter().any(|c| c.level == first_cache) {
                    first_cache
                } else {
                    1
                };
                // A first level the caches lack: an uncached walker (ARMv4/v5).
                let uncached = !caches.iter().any(|c| c.level == first_cache);
                let cfg = MachineConfig {
                    name: "random".into(),
                    walker: WalkerConfig {
                        latency: 3,
                        first_cache_level,
                        uncached,
                        memory_latency: if uncached { 40 } else { 0 },
                        pwcs,
                        pwc_restart: Default::default(),
                    },
                    caches,
                    memory: MemoryConfig {
                        bytes: 256 << 20,
                        latency: 100,
                        placement,
                        source: String::new(),
                    },
                    ..common::machine(format, tlbs)
                };
                let cfg = common::with_linux_armv7_layout(cfg, linux);
                (cfg, caches_on)
            },
        )
}

/// Addresses concentrated on a few dozen pages, spread over a large range, with one huge-page
/// region, so hits, conflicts, walks and page-walk-cache hits all occur. A value below 4096 means
/// "this offset in the previous reference's page", so runs on one page and one line (the memo
/// fast paths of TLBs and caches) are common too. Kinds: load, store, instruction fetch.
fn stream() -> impl Strategy<Value = Vec<(u8, u64)>> {
    proptest::collection::vec(
        (
            0u8..3,
            prop_oneof![
                (0u64..4096),
                (0u64..48).prop_map(|p| 0x4000_0000 + p * 4096 + 8),
                (0u64..16).prop_map(|p| 0x7f00_0000 + p * 0x10_0000 + 64),
                (0u64..8).prop_map(|p| 0x2000_0000 + p * 0x1_0000),
                (0u64..(1 << 20)).prop_map(|w| 0x1000_0000 + w * 64),
            ],
        ),
        1..400,
    )
}

/// The stats index of the `n`-th TLB level on the path of `kind` (stats list every level in
/// (level, kind) order, as the engine does).
fn stat_index_on_path(cfg: &MachineConfig, kind: AccessKind, n: usize) -> usize {
    let mut order: Vec<usize> = (0..cfg.tlbs.len()).collect();
    order.sort_by_key(|&i| (cfg.tlbs[i].level, cfg.tlbs[i].kind as u8));
    let other = if kind == AccessKind::Instr {
        TlbKind::Data
    } else {
        TlbKind::Instr
    };
    order
        .iter()
        .enumerate()
        .filter(|(_, &i)| cfg.tlbs[i].kind != other)
        .map(|(stat, _)| stat)
        .nth(n)
        .expect("hit level on the path")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]

    #[test]
    fn engine_agrees_with_reference_access_for_access((cfg, caches_on) in machine(), accesses in stream(), seed in 0u64..1000, huge in any::<bool>(), tlb_only in proptest::bool::weighted(0.25)) {
        let opts = if tlb_only {
            RunOptions::tlb_only(seed)
        } else {
            RunOptions { seed, caches: caches_on, data_accesses: caches_on, ..RunOptions::default() }
        };
        let mut sys = System::new(cfg.clone(), opts).unwrap();
        let mut reference = ReferenceModel::new(&cfg, seed, caches_on, caches_on);
        if tlb_only {
            reference = reference.without_walks();
        }
        let space = sys.create_space().unwrap();
        sys.bind_thread(ThreadId(0), space, 0);
        // A region of the format's largest non-gigantic page size.
        let big = cfg.page_table.format.page_sizes().into_iter().filter(|s| *s != PageSize::Size1G && *s != PageSize::Size4K).max();
        if let (true, Some(size)) = (huge, big) {
            sys.set_region_page_size(space, VirtAddr(0x7f00_0000), 16 << 20, size).unwrap();
            reference.set_region(0x7f00_0000, 16 << 20, size);
        }
        let mut prev = 0x4000_0000u64;
        for (i, &(k, va)) in accesses.iter().enumerate() {
            let kind = [AccessKind::Load, AccessKind::Store, AccessKind::Instr][k as usize];
            let va = if va < 4096 { (prev & !0xfff) | va } else { va };
            prev = va;
            let before = sys.stats().total;
            let c = sys.access(Access::new(ThreadId(0), kind, VirtAddr(va), 1)).unwrap();
            let after = sys.stats().total;
            let r = reference.access(kind, va);
            prop_assert_eq!(c, r.cycles, "cycles differ at access {} ({:#x})", i, va);
            let walked = after.walks - before.walks;
            prop_assert_eq!(walked == 1, r.tlb_hit.is_none(), "walk/hit disagree at access {}", i);
            prop_assert_eq!(after.walk_refs - before.walk_refs, r.walk_sources.len() as u64, "walk refs differ at access {}", i);
            if let Some(level) = r.tlb_hit {
                // The reference counts levels along the path; stats index all levels.
                let stat = stat_index_on_path(&cfg, kind, level);
                prop_assert_eq!(after.tlb[stat].hits - before.tlb[stat].hits, 1, "hit level differs at access {}", i);
            }
        }
        // Every cache level's counters, evictions included, over the whole stream.
        let stats = sys.stats();
        for (name, [accesses, hits, misses, evictions]) in reference.cache_counts() {
            let i = stats.cache_levels.iter().position(|n| *n == name).unwrap();
            let c = &stats.total.cache[i];
            prop_assert_eq!((c.accesses, c.hits, c.misses, c.evictions), (accesses, hits, misses, evictions), "cache {} counters", name);
        }
    }
}

/// Records for `run`: two threads of two processes on one hardware thread (so trace-driven
/// context switches), loads, stores and fetches, runs on one page and one line (the memo lane),
/// and accesses that cross a page boundary.
fn records() -> impl Strategy<Value = Vec<(u8, u8, u64, u32)>> {
    proptest::collection::vec(
        (
            0u8..2,
            // 3: a cache flush event instead of an access (its cost counts dirty lines).
            prop_oneof![30 => 0u8..3, 1 => Just(3u8)],
            prop_oneof![
                3 => 0u64..4096,
                1 => (0u64..48).prop_map(|p| 0x4000_0000 + p * 4096 + 8),
                1 => (0u64..16).prop_map(|p| 0x7f00_0000 + p * 0x10_0000 + 64),
                1 => (0u64..8).prop_map(|p| 0x2000_0ff8 + p * 0x1_0000),
            ],
            prop_oneof![Just(1u32), Just(4u32), Just(8u32), Just(16u32)],
        ),
        1..600,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 120, ..ProptestConfig::default() })]

    /// `System::run` (with its memo lane, system/lane.rs) leaves exactly the stats, clocks and
    /// per-thread counters that calling `access` record by record leaves, reference limit
    /// included; `run_slice` leaves what `run` leaves.
    #[test]
    fn run_agrees_with_access_by_access((cfg, caches_on) in machine(), recs in records(), seed in 0u64..1000, overlap in any::<bool>(), limit in prop_oneof![Just(0u64), 1u64..700], tlb_only in proptest::bool::weighted(0.3)) {
        let mut cfg = cfg;
        if overlap {
            cfg.timing.model = tlblab_core::machine::TimingModel::Overlap;
        }
        // TLB-only runs: the fast lane takes every reference the memo lane does not.
        let opts = if tlb_only {
            RunOptions { max_references: limit, ..RunOptions::tlb_only(seed) }
        } else {
            RunOptions { seed, caches: caches_on, data_accesses: caches_on, max_references: limit, ..RunOptions::default() }
        };
        for c in cfg.caches.iter_mut() {
            c.flush_cycles_per_dirty_line = 1000;
        }
        let mut prev = [0x4000_0000u64; 2];
        let records: Vec<Record> = recs
            .iter()
            .map(|&(t, k, va, size)| {
                if k == 3 {
                    return Record::Event(Event::Flush { core: CoreId(0), what: flush::CACHES });
                }
                let va = if va < 4096 { (prev[t as usize] & !0xfff) | va } else { va };
                prev[t as usize] = va;
                let kind = [AccessKind::Load, AccessKind::Store, AccessKind::Instr][k as usize];
                Record::Access(Access::new(ThreadId(t as u32), kind, VirtAddr(va), size))
            })
            .collect();
        let setup = |cfg: &MachineConfig| {
            let mut sys = System::new(cfg.clone(), opts).unwrap();
            for t in 0..2u32 {
                let space = sys.create_space().unwrap();
                sys.bind_thread(ThreadId(t), space, 0);
            }
            sys
        };
        let mut by_run = setup(&cfg);
        let mut src = tlblab_trace::VecSource::new(records.clone());
        by_run.run(&mut src).unwrap();
        let mut by_access = setup(&cfg);
        let limit = if limit == 0 { u64::MAX } else { limit };
        for &r in &records {
            if by_access.stats().total.references >= limit {
                break;
            }
            match r {
                Record::Access(a) => by_access.access(a).map(|_| ()).unwrap(),
                Record::Event(e) => by_access.event(e).unwrap(),
            }
        }
        let mut by_slice = setup(&cfg);
        by_slice.run_slice(&records).unwrap();
        // A final flush makes the dirty state of every line count (its cost).
        for sys in [&mut by_run, &mut by_access, &mut by_slice] {
            sys.event(Event::Flush { core: CoreId(0), what: flush::CACHES }).unwrap();
        }
        prop_assert_eq!(
            serde_json::to_value(by_run.stats()).unwrap(),
            serde_json::to_value(by_slice.stats()).unwrap()
        );
        prop_assert_eq!(by_run.os_stats(), by_access.os_stats());
        // The TLB levels end holding the same entries in the same slots.
        for (a, b) in by_run.tlbs.iter().zip(&by_access.tlbs) {
            prop_assert_eq!(a.entries().collect::<Vec<_>>(), b.entries().collect::<Vec<_>>());
        }
        prop_assert_eq!(by_run.clock(0), by_access.clock(0));
        prop_assert_eq!(
            serde_json::to_value(by_run.stats()).unwrap(),
            serde_json::to_value(by_access.stats()).unwrap()
        );
        agrees_with_the_reference(&by_run, opts, (2, 2), |t| (t as usize, 0), &records, true).map_err(TestCaseError::fail)?;
    }
}

/// The reference model (`reference/`) of `cfg` run with `opts` over `records`, set up as the
/// engine was: `spaces` address spaces, thread t in `bind(t)` = (space, hardware thread) for
/// t in 0..`threads`; then, if `flush_after`, a flush of core 0's caches (which counts their
/// dirty lines). The reference counterpart of a test comparing the engine with itself.
fn reference_run(
    cfg: &MachineConfig,
    opts: RunOptions,
    (spaces, threads): (usize, u32),
    bind: impl Fn(u32) -> (usize, usize),
    records: &[Record],
    flush_after: bool,
) -> Result<ReferenceModel, String> {
    let mut r = ReferenceModel::machine(cfg, opts);
    for _ in 0..spaces {
        r.create_space()?;
    }
    for t in 0..threads {
        let (space, cpu) = bind(t);
        r.bind_thread(ThreadId(t), space, cpu);
    }
    r.run(records)?;
    if flush_after {
        r.event(Event::Flush {
            core: CoreId(0),
            what: flush::CACHES,
        })?;
    }
    Ok(r)
}

/// `sys` (which ran `records` as `reference_run` sets up) ended as the reference did.
fn agrees_with_the_reference(
    sys: &System,
    opts: RunOptions,
    setup: (usize, u32),
    bind: impl Fn(u32) -> (usize, usize),
    records: &[Record],
    flush_after: bool,
) -> Result<(), String> {
    let r = reference_run(&sys.config, opts, setup, bind, records, flush_after)?;
    common::reference_difference(sys, &r)
}

/// A machine with one thread (0) bound to hardware thread 0 in a fresh address space.
fn one_thread_system(cfg: &MachineConfig, opts: RunOptions) -> System {
    let mut sys = System::new(cfg.clone(), opts).unwrap();
    let space = sys.create_space().unwrap();
    sys.bind_thread(ThreadId(0), space, 0);
    sys
}

/// `run_slice` over `records` (one thread's) leaves the state `access` and `event` called
/// record by record leave, dirty lines included (a final flush of the caches counts them), and
/// the same clock.
fn agrees_record_by_record(
    cfg: &MachineConfig,
    opts: RunOptions,
    records: &[Record],
) -> Result<(), TestCaseError> {
    let mut by_run = one_thread_system(cfg, opts);
    by_run.run_slice(records).unwrap();
    let mut by_access = one_thread_system(cfg, opts);
    for &r in records {
        match r {
            Record::Access(a) => by_access.access(a).map(|_| ()).unwrap(),
            Record::Event(e) => by_access.event(e).unwrap(),
        }
    }
    for sys in [&mut by_run, &mut by_access] {
        sys.event(Event::Flush {
            core: CoreId(0),
            what: flush::CACHES,
        })
        .unwrap();
    }
    same_end_state(&by_run, &by_access)?;
    prop_assert_eq!(by_run.clock(0), by_access.clock(0));
    agrees_with_the_reference(&by_run, opts, (1, 1), |_| (0, 0), records, true)
        .map_err(TestCaseError::fail)
}

/// `by_run` and `by_access` ended in the same state (`common::end_state_difference`).
fn same_end_state(by_run: &System, by_access: &System) -> Result<(), TestCaseError> {
    common::end_state_difference(by_run, by_access).map_err(TestCaseError::fail)
}

/// Threads 0 and 1 of processes 0 and 1 taking `turns` on core 0: turn k is a switch to
/// thread k % 2, then `len` references, the i-th of them `reference(rng, first, i)`.
fn two_processes_taking_turns(
    turns: &[(usize, u64)],
    seed: u64,
    mut reference: impl FnMut(&mut SplitMix64, u64, u64) -> (AccessKind, u64),
) -> Vec<Record> {
    let mut records = common::thread_starts(&[0, 1]);
    let mut rng = SplitMix64::new(seed);
    let mut current = ThreadId(0);
    for (turn, &(len, first)) in turns.iter().enumerate() {
        let next = ThreadId(turn as u32 % 2);
        records.push(Record::Event(Event::ContextSwitch {
            core: CoreId(0),
            from: current,
            to: next,
        }));
        current = next;
        for i in 0..len as u64 {
            let (kind, va) = reference(&mut rng, first, i);
            records.push(Record::Access(Access::new(next, kind, VirtAddr(va), 8)));
        }
    }
    records
}

/// `run_slice` over `records` on a fresh `cfg` machine, checked against `access` and `event`
/// called record by record (`same_end_state`); the run's system.
fn run_and_compare_record_by_record(
    cfg: &MachineConfig,
    opts: RunOptions,
    records: &[Record],
) -> Result<System, TestCaseError> {
    let mut by_run = System::new(cfg.clone(), opts).unwrap();
    by_run.run_slice(records).unwrap();
    let mut by_record = System::new(cfg.clone(), opts).unwrap();
    for r in records {
        match *r {
            Record::Access(a) => {
                by_record.access(a).unwrap();
            }
            Record::Event(e) => by_record.event(e).unwrap(),
        }
    }
    same_end_state(&by_run, &by_record)?;
    Ok(by_run)
}

/// First levels (sets, ways) for `shaped_machine`: fully associative of the sizes the fast
/// lane's pairs are compiled for (32, 48, 64 ways; zen3's L1D is 64) and one they are not
/// (40), 4-way set associative (Intel's L1 DTLBs: 16 sets) with a 2-way one beside it (no
/// pair), and a 10-entry fully associative micro TLB (the Cortex-A7's; set-associative shape).
fn first_levels() -> impl Strategy<Value = (usize, usize)> {
    prop_oneof![
        Just((1usize, 32usize)),
        Just((1, 40)),
        Just((1, 48)),
        Just((1, 64)),
        Just((1, 64)),
        Just((4, 4)),
        Just((16, 4)),
        Just((8, 2)),
        Just((1, 10)),
    ]
}

mod shapes;
mod timeline;
