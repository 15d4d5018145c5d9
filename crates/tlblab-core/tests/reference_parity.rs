//! Parity tier: the engine agrees with the naive reference model, access for access, on random
//! machine configurations and random access streams (ARCHITECTURE.md "Correctness tiers", docs/reference-model.md).

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

/// Second-level replacement for `shaped_machine`: LRU (most machines' second levels), and
/// random (the Cortex-A9's main TLB), whose pairs draw their victims from the level's
/// generator (`RandomSets`, tlb/pair.rs): compiled over 32- and 64-way first levels of 2 and
/// 4 ways, the shaped calls elsewhere.
fn second_level_policies() -> impl Strategy<Value = ReplacementKind> {
    prop_oneof![
        2 => Just(ReplacementKind::Lru),
        1 => Just(ReplacementKind::Random),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// TLB-only runs of machines whose data levels take the lane's shaped paths (zen3's L1D and
    /// L2D are one such pair) agree with the naive reference model, level by level, and leave
    /// the same TLB contents as `access` called record by record.
    #[test]
    fn shaped_tlb_only_runs_agree_with_the_reference(
        l1 in first_levels(),
        l2_sets in prop_oneof![Just(0usize), Just(1), Just(4), Just(16)],
        l2_ways in prop_oneof![Just(2usize), Just(4), Just(8), Just(12), Just(16)],
        l2_policy in second_level_policies(),
        latency in 0u64..8,
        pages in 40u64..400,
        refs in proptest::collection::vec((0u64..1000, 0u8..8), 1..3000),
        seed in 0u64..1000,
        unified_l2 in any::<bool>(),
    ) {
        let cfg = common::shaped_machine(l1, (l2_sets, l2_ways, l2_policy), latency, unified_l2);
        let records = common::shaped_records(pages, &refs);
        tlb_only_run_agrees_with_the_reference(&cfg, seed, &records)?;
    }
}

/// A TLB-only `run_slice` of `records` (one thread's accesses) on `cfg` agrees with the naive
/// reference model, level by level (hits, walks, cycles), and leaves the same state as
/// `access` called record by record.
fn tlb_only_run_agrees_with_the_reference(
    cfg: &MachineConfig,
    seed: u64,
    records: &[Record],
) -> Result<(), TestCaseError> {
    let mut by_run = one_thread_system(cfg, RunOptions::tlb_only(seed));
    by_run.run_slice(records).unwrap();
    let mut by_access = one_thread_system(cfg, RunOptions::tlb_only(seed));
    let mut reference = ReferenceModel::new(cfg, seed, false, false).without_walks();
    let mut expected_hits = vec![0u64; cfg.tlbs.len()];
    let mut expected_walks = 0;
    let mut expected_cycles = 0;
    for r in records {
        let Record::Access(a) = *r else {
            unreachable!()
        };
        by_access.access(a).unwrap();
        let out = reference.access(a.kind, a.vaddr.0);
        expected_cycles += out.cycles;
        match out.tlb_hit {
            Some(level) => expected_hits[stat_index_on_path(cfg, a.kind, level)] += 1,
            None => expected_walks += 1,
        }
    }
    let stats = by_run.stats().total;
    prop_assert_eq!(
        stats.tlb.iter().map(|l| l.hits).collect::<Vec<_>>(),
        expected_hits
    );
    prop_assert_eq!(stats.walks, expected_walks);
    prop_assert_eq!(stats.cycles, expected_cycles);
    same_end_state(&by_run, &by_access)
}

/// A stream for `staged_runs_agree_with_the_reference`: segments of long runs of data
/// references on random pages among `pages` (a stretch the fast lane stages its first level
/// for: tlb/pair.rs `Staged`), runs of references on a few pages (first-level hits, which hand
/// the stretch back after `HAND_BACK` of them), and single fetches on random pages (which end
/// a stretch).
fn staged_stream() -> impl Strategy<Value = Vec<(u8, u64)>> {
    let segment = prop_oneof![
        3 => (256usize..1200, any::<u64>()).prop_map(|(n, s)| (0u8, n, s)),
        1 => (20usize..120, any::<u64>()).prop_map(|(n, s)| (1u8, n, s)),
        1 => any::<u64>().prop_map(|s| (2u8, 1, s)),
    ];
    proptest::collection::vec(segment, 1..8).prop_map(|segments| {
        let mut out = Vec::new();
        for (kind, n, seed) in segments {
            let mut rng = tlblab_types::SplitMix64::new(seed);
            for _ in 0..n {
                out.push((kind, rng.next_u64()));
            }
        }
        out
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// TLB-only runs whose fully associative first level the fast lane stages into one block
    /// for long stretches (tlb/pair.rs `Staged`, `FastLane::worth_staging`), between stretches
    /// it does not stage (short ones, ones handed back after first-level hits), agree with the
    /// naive reference model and leave the TLBs as `access` record by record does. The levels
    /// fill first (every page once), so the pair runs from then on.
    #[test]
    fn staged_runs_agree_with_the_reference(
        l1_ways in prop_oneof![Just(32usize), Just(48), Just(64)],
        l2_sets in prop_oneof![Just(0usize), Just(4), Just(16)],
        l2_ways in prop_oneof![Just(2usize), Just(4), Just(16)],
        l2_policy in second_level_policies(),
        pages in 400u64..3000,
        stream in staged_stream(),
        seed in 0u64..1000,
    ) {
        let cfg = common::shaped_machine((1, l1_ways), (l2_sets, l2_ways, l2_policy), 7, false);
        let data = |p: u64, off: u64| {
            Record::Access(Access::new(ThreadId(0), AccessKind::Load, VirtAddr(0x4000_0000 + p * 4096 + off), 8))
        };
        let mut records: Vec<Record> = (0..pages).map(|p| data(p, 0)).collect();
        for &(kind, r) in &stream {
            records.push(match kind {
                0 => data(r % pages, r >> 52 << 3),
                1 => data(r % 3, 0),
                _ => Record::Access(Access::new(ThreadId(0), AccessKind::Instr, VirtAddr(0x8000_0000 + (r % 64) * 4096), 4)),
            });
        }
        tlb_only_run_agrees_with_the_reference(&cfg, seed, &records)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Two processes taking turns on one core, on the same virtual pages: with ASID tags the
    /// TLB levels hold both processes' entries for one page, so which of them a lookup may use
    /// is up to the tags. Runs of zen3-shaped machines (64-way first level over 16-way sets,
    /// whose data path becomes a `FullPair` once full; other second levels keep the shaped
    /// calls) agree with `access` and `event` record by record, in every run mode.
    #[test]
    fn shaped_runs_of_two_address_spaces_agree_with_access_by_access(
        l2_sets in prop_oneof![Just(0usize), Just(1), Just(4), Just(16)],
        l1 in first_levels(),
        l2_ways in prop_oneof![Just(2usize), Just(4), Just(8), Just(12), Just(16)],
        l2_policy in second_level_policies(),
        mode in 0u8..3,
        turns in proptest::collection::vec((1usize..400, 0u64..1000), 1..12),
        pages in 70u64..300,
        seed in 0u64..1000,
        unified_l2 in any::<bool>(),
    ) {
        let mut cfg = common::shaped_machine(l1, (l2_sets, l2_ways, l2_policy), 1, unified_l2);
        cfg.caches = vec![common::cache("C1", 1, 4 << 10, 4, 4), common::cache("C2", 2, 32 << 10, 8, 12)];
        let opts = match mode {
            0 => RunOptions::tlb_only(seed),
            1 => RunOptions::no_caches(seed),
            _ => RunOptions { seed, ..RunOptions::default() },
        };
        let kinds = [AccessKind::Load, AccessKind::Store, AccessKind::Instr];
        let records = two_processes_taking_turns(&turns, seed, |rng, first, i| {
            let kind = kinds[rng.below(3) as usize];
            let page = if rng.below(4) == 0 { (first + i) % pages } else { rng.below(pages) };
            (kind, 0x4000_0000 + page * 4096 + 16)
        });
        let by_run = run_and_compare_record_by_record(&cfg, opts, &records)?;
        agrees_with_the_reference(&by_run, opts, (0, 0), |_| (0, 0), &records, false).map_err(TestCaseError::fail)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// The fast lanes beside what they do not model themselves: a second level with the
    /// Cortex-A9's lockable array (TRM DDI0388 §6.2.2: 4 fully associative entries after the
    /// sets, empty while nothing is locked, which the lanes borrow around), and global kernel
    /// entries (`System::kernel_touch` on every switch, `OsConfig::kernel_pages`) that user
    /// references to the kernel's linear map share: a level above that copies one must keep it
    /// global, or another ASID misses where the general path hits. Two processes taking turns
    /// on ASID-tagged levels; `run_slice` agrees with `access` and `event` record by record in
    /// every run mode, and with the reference model when no user reference touches the kernel's
    /// quarter. (One that does can leave two entries for one page in a level: its own
    /// first-touch mapping, under its ASID, and the kernel's global entry. Which one a lookup
    /// takes is then the engine's slot order, which the reference does not model; hardware
    /// would raise a TLB conflict abort.)
    #[test]
    fn lanes_beside_a_lockable_array_and_global_kernel_entries_agree_with_access_by_access(
        l1 in first_levels(),
        l2_ways in prop_oneof![Just(2usize), Just(4), Just(16)],
        l2_sets in prop_oneof![Just(1usize), Just(4), Just(32)],
        array in any::<bool>(),
        kernel_pages in 0u32..3,
        user_touches_kernel in any::<bool>(),
        mode in 0u8..3,
        turns in proptest::collection::vec((1usize..600, 0u64..1000), 2..10),
        pages in 70u64..300,
        seed in 0u64..1000,
    ) {
        let mut cfg = common::shaped_machine(l1, (l2_sets, l2_ways, ReplacementKind::Lru), 1, false);
        for t in &mut cfg.tlbs {
            t.tags.asid = true;
            if array && t.level == 2 && t.kind != TlbKind::Instr {
                t.lockable = 4;
                t.lockable_array = true;
            }
        }
        let mut opts = match mode {
            0 => RunOptions::tlb_only(seed),
            1 => RunOptions::no_caches(seed),
            _ => RunOptions { seed, ..RunOptions::default() },
        };
        opts.os.switch = SwitchPolicy::AsidTagged;
        opts.os.kernel_pages = kernel_pages;
        let kernel_va = |page: u32| {
            let pa = tlblab_core::os::kernel_switch_page(cfg.memory.bytes, page);
            tlblab_core::os::kernel_linear(cfg.page_table.format.va_limit(), cfg.memory.bytes, pa).va
        };
        let records = two_processes_taking_turns(&turns, seed, |rng, first, i| {
            let kind = [AccessKind::Load, AccessKind::Store][rng.below(2) as usize];
            let va = if kernel_pages > 0 && user_touches_kernel && rng.below(16) == 0 {
                kernel_va(rng.below(kernel_pages as u64) as u32) + 64
            } else {
                let page = if rng.below(4) == 0 { (first + i) % pages } else { rng.below(pages) };
                0x4000_0000 + page * 4096 + 16
            };
            (kind, va)
        });
        let by_run = run_and_compare_record_by_record(&cfg, opts, &records)?;
        if !user_touches_kernel {
            agrees_with_the_reference(&by_run, opts, (0, 0), |_| (0, 0), &records, false).map_err(TestCaseError::fail)?;
        }
    }
}

/// Streams of first touches on a small memory, zen3's TLB geometry, each new page followed by
/// a reference to the page touched 40 earlier (out of the first level, usually still in the
/// second): every reference misses the first level, so the fast lane runs, and once both
/// levels are full its data path is a `FullPair`. With 2 MiB pages by default, 2 MiB runs run
/// out and first touches fall back to 4 KiB frames (a walk finds a page of another size: the
/// pair's stretch and the lane end there) before memory does; with 4 KiB pages memory runs out
/// while the pair runs (the walk fails). With and without caches, `run_slice` agrees with
/// `access` record by record, up to and including the error.
#[test]
fn pair_stretches_ending_in_other_sizes_and_exhausted_memory_agree_with_access_by_access() {
    for (page_size, memory) in [
        (PageSize::Size2M, 512u64 << 20),
        (PageSize::Size4K, 4 << 20),
    ] {
        let mut cfg = common::shaped_machine((1, 64), (4, 16, ReplacementKind::Lru), 2, false);
        cfg.page_table.page_size = page_size;
        cfg.memory.bytes = memory;
        cfg.caches = vec![common::cache("C1", 1, 4 << 10, 4, 4)];
        let mut rng = SplitMix64::new(5);
        let shift = page_size.shift();
        let page = |n: u64, offset: u64| VirtAddr(0x4000_0000 + (n << shift) + offset * 8);
        let mut records = Vec::new();
        for n in 0..2000u64 {
            let fresh = page(n, rng.below(512));
            records.push(Record::Access(Access::new(
                ThreadId(0),
                AccessKind::Load,
                fresh,
                8,
            )));
            if n >= 40 {
                let back = page(n - 40, rng.below(512));
                records.push(Record::Access(Access::new(
                    ThreadId(0),
                    AccessKind::Store,
                    back,
                    8,
                )));
            }
        }
        for caches_on in [false, true] {
            let opts = RunOptions {
                seed: 1,
                caches: caches_on,
                data_accesses: caches_on,
                ..RunOptions::default()
            };
            let mut by_run = one_thread_system(&cfg, opts);
            let run_error = by_run.run_slice(&records).err();
            let mut by_access = one_thread_system(&cfg, opts);
            let mut access_error = None;
            for r in &records {
                let Record::Access(a) = *r else {
                    unreachable!()
                };
                if let Err(e) = by_access.access(a) {
                    access_error = Some(e);
                    break;
                }
            }
            assert!(run_error.is_some(), "memory runs out");
            let r = reference_run(&cfg, opts, (1, 1), |_| (0, 0), &records, false);
            assert!(r.is_err(), "the reference runs out of memory too");
            assert_eq!(run_error.map(|e| e.0), access_error.map(|e| e.0));
            // With 2 MiB pages, the 4 KiB fallbacks are what the TLBs end with.
            assert!(by_access
                .tlbs
                .iter()
                .flat_map(|t| t.entries())
                .any(|e| e.size == PageSize::Size4K));
            same_end_state(&by_run, &by_access).unwrap();
        }
    }
}

proptest! {
    // Many streams use one page size only (rejected below): allow for them at high case counts.
    #![proptest_config(ProptestConfig { cases: 24, max_global_rejects: 1 << 20, ..ProptestConfig::default() })]

    /// 2 MiB pages by default on fragmented memory: some huge-page allocations fail and fall
    /// back to 4 KiB pages (first touch), so walks return pages of another size than the
    /// address space's, which the fast lane leaves to the general fill. `run_slice` agrees
    /// with `access` record by record, with and without caches.
    #[test]
    fn runs_with_huge_pages_falling_back_agree_with_access_by_access(
        refs in proptest::collection::vec((0u64..64, 0u64..512, 0u8..3), 1..1500),
        seed in 0u64..1000,
        caches_on in any::<bool>(),
        // 64 ways over 16-way sets: the data path becomes a `FullPair` once full (also with
        // random replacement in the second level, over 2-way sets as the Cortex-A9's).
        geometry in 0u8..3,
        // A few frames held at random: some 2 MiB runs stay free, most do not.
        fragmentation in prop_oneof![Just(0.001f64), Just(0.002), Just(0.004)],
    ) {
        let mut cfg = match geometry {
            0 => common::shaped_machine((1, 64), (2, 16, ReplacementKind::Lru), 2, false),
            1 => common::shaped_machine((1, 32), (16, 2, ReplacementKind::Random), 2, false),
            _ => common::shaped_machine((1, 32), (4, 8, ReplacementKind::Lru), 2, false),
        };
        cfg.page_table.page_size = PageSize::Size2M;
        cfg.memory.bytes = 512 << 20;
        cfg.memory.placement = Placement::Fragmented { fragmentation };
        cfg.caches = vec![common::cache("C1", 1, 32 << 10, 8, 4)];
        let opts = RunOptions { seed, caches: caches_on, data_accesses: caches_on, ..RunOptions::default() };
        let records: Vec<Record> = refs
            .iter()
            .map(|&(huge, small, k)| {
                let kind = [AccessKind::Load, AccessKind::Store, AccessKind::Instr][k as usize];
                let va = 0x4000_0000 + (huge << 21) + small * 4096 + 8;
                Record::Access(Access::new(ThreadId(0), kind, VirtAddr(va), 4))
            })
            .collect();
        let mut by_run = one_thread_system(&cfg, opts);
        by_run.run_slice(&records).unwrap();
        let mut by_access = one_thread_system(&cfg, opts);
        for r in &records {
            let Record::Access(a) = *r else { unreachable!() };
            by_access.access(a).unwrap();
        }
        let sizes = |sys: &System| sys.tlbs.iter().flat_map(|t| t.entries()).map(|e| e.size).collect::<std::collections::BTreeSet<_>>();
        prop_assume!(sizes(&by_access).len() == 2, "both page sizes in use");
        same_end_state(&by_run, &by_access)?;
        agrees_with_the_reference(&by_run, opts, (1, 1), |_| (0, 0), &records, false).map_err(TestCaseError::fail)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Programs touch more pages in a loop than the memo lane holds per path (8): a path whose
    /// lane pages are all taken lets go of the one touched longest ago, keeps its last touch
    /// for the settle, and after 128 let-gos the run ends and the next goes on (lane.rs). Long
    /// streams over a pool of 9..96 pages (some beyond a 64-entry first level, so its
    /// replacement order shows in later misses), on random machines whose first level has 64
    /// entries (unified: both paths' touches replayed as one sequence; or split), with every
    /// replacement policy, and caches whose first level the lane looks up itself
    /// (`Cache::access_if_present`), a few page-crossing accesses taking the general path
    /// between lane runs (which keeps the lanes when the access missed no first level):
    /// `run_slice` agrees with `access` record by record, dirty lines included (a final flush
    /// counts them).
    #[test]
    fn lane_runs_over_more_pages_than_it_holds_agree_with_access_by_access(
        (cfg, caches_on) in machine(),
        (_pages, refs) in (9u64..96).prop_flat_map(|pages| (
            Just(pages),
            // (kind, another page than the path's previous, page, offset, crossing into the
            // next page: the general path, between memo-lane runs)
            proptest::collection::vec(
                (
                    0u8..3,
                    any::<bool>(),
                    0..pages,
                    // Mostly the first lines of a page: the first cache level's memo line and
                    // a few sets, which the crossing accesses touch too.
                    prop_oneof![3 => 0u64..256, 1 => 0u64..4096],
                    proptest::bool::weighted(0.05),
                ),
                300..3000,
            ),
        )),
        seed in 0u64..1000,
        tlb_only in proptest::bool::weighted(0.5),
    ) {
        let mut cfg = cfg;
        let first = &mut cfg.tlbs[0];
        let sets = first.entries / first.ways.resolve(first.entries);
        first.entries = 64;
        first.ways = Ways::N(64 / sets);
        // The final flush's cost counts the dirty lines: stores must mark the lines they hit.
        // A first cache level of two sets: the lane's lines share them with everything else.
        for c in cfg.caches.iter_mut() {
            c.flush_cycles_per_dirty_line = 1000;
            if c.level == 1 {
                c.size = 2 * 64 * c.ways as u64;
            }
        }
        let opts = if tlb_only {
            RunOptions::tlb_only(seed)
        } else {
            RunOptions { seed, caches: caches_on, data_accesses: caches_on, ..RunOptions::default() }
        };
        let mut prev = [0u64; 2];
        let records: Vec<Record> = refs
            .iter()
            .map(|&(k, moves, page, offset, crossing)| {
                let kind = [AccessKind::Load, AccessKind::Store, AccessKind::Instr][k as usize];
                let path = kind.is_instr() as usize;
                if moves {
                    prev[path] = page;
                }
                let offset = if crossing { 0xffc } else { offset & !7 };
                let va = 0x4000_0000 + (prev[path] << 12) + offset;
                Record::Access(Access::new(ThreadId(0), kind, VirtAddr(va), 8))
            })
            .collect();
        agrees_record_by_record(&cfg, opts, &records)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// A stream of first-level hits over more pages than the memo lane holds, in no order it
    /// follows, makes its runs poor (a new page more often than one reference in 8): the run
    /// loop then gives the fast lane stretches that hand back only after 1,024 and more
    /// first-level hits in a row, growing while the memo lane stays poor and dropping back once
    /// it pays again (`System::run_direct`). Phases of 1,500..5,000 references over pools of
    /// 2..8 pages (the memo lane pays) and 12..60 pages (it does not), with or without
    /// instruction fetches on a code page every few references, on random machines whose first
    /// level holds 64 entries, TLB-only and with walks (and caches): `run_slice` agrees with
    /// `access` record by record.
    #[test]
    fn phases_the_memo_lane_does_and_does_not_pay_for_agree_with_access_by_access(
        (cfg, caches_on) in machine(),
        phases in proptest::collection::vec((prop_oneof![2u64..=8, 12u64..=60], 1500usize..5000), 2..5),
        fetch_every in prop_oneof![Just(0usize), 3usize..10],
        seed in 0u64..1000,
        tlb_only in any::<bool>(),
    ) {
        let mut cfg = cfg;
        let first = &mut cfg.tlbs[0];
        let sets = first.entries / first.ways.resolve(first.entries);
        first.entries = 64;
        first.ways = Ways::N(64 / sets);
        let opts = if tlb_only {
            RunOptions::tlb_only(seed)
        } else {
            RunOptions { seed, caches: caches_on, data_accesses: caches_on, ..RunOptions::default() }
        };
        // A small LCG (Knuth's MMIX constants): the pages and offsets follow from `seed`.
        let mut x = seed.wrapping_mul(2) + 1;
        let mut next = |n: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) % n
        };
        let mut records = Vec::new();
        for &(pool, len) in &phases {
            for n in 0..len {
                if fetch_every > 0 && n % fetch_every == 0 {
                    let va = 0x40_0000 + next(1024) * 4;
                    records.push(Record::Access(Access::new(ThreadId(0), AccessKind::Instr, VirtAddr(va), 4)));
                }
                let kind = if next(4) == 0 { AccessKind::Store } else { AccessKind::Load };
                let va = 0x4000_0000 + (next(pool) << 12) + next(512) * 8;
                records.push(Record::Access(Access::new(ThreadId(0), kind, VirtAddr(va), 8)));
            }
        }
        agrees_record_by_record(&cfg, opts, &records)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// The pair loops fill a set with room as a full one, with its oldest way; the general fill
    /// takes its lowest invalid way. They agree because an LRU level keeps its invalid ways its
    /// oldest, the lowest the oldest (`Tlb::invalidate_slot`), also after shootdowns of a few
    /// pages (`mprotect`) and flushes of every TLB level, which leave sets with room anywhere
    /// in their order. Streams over 16..400 pages (often fewer than the second level holds, so
    /// its sets keep room) with such events between the references, on machines of the shapes
    /// the pair loops are compiled for (and a few they are not): `run_slice` agrees with
    /// `access` and `event` record by record.
    #[test]
    fn fills_of_sets_with_room_after_shootdowns_agree_with_access_by_access(
        first in first_levels(),
        second in prop_oneof![
            Just((0usize, 0usize)),
            (prop_oneof![Just(8usize), Just(32), Just(128)], prop_oneof![Just(2usize), Just(4), Just(8), Just(16)]),
        ],
        pages in 16u64..400,
        refs in proptest::collection::vec((0u64..400, 0u8..3, 0u8..40, 0u64..16), 200..2500),
        seed in 0u64..1000,
        caches_on in any::<bool>(),
        tlb_only in any::<bool>(),
    ) {
        let cfg = common::shaped_machine(first, (second.0, second.1, ReplacementKind::Lru), 2, false);
        let opts = if tlb_only {
            RunOptions::tlb_only(seed)
        } else {
            RunOptions { seed, caches: caches_on, data_accesses: caches_on, ..RunOptions::default() }
        };
        let base = 0x4000_0000u64;
        let records: Vec<Record> = refs
            .iter()
            .map(|&(page, k, event, len)| {
                let page = page % pages;
                match event {
                    0 => Record::Event(Event::Mprotect {
                        process: 0,
                        start: VirtAddr(base + (page << 12)),
                        len: (len + 1) << 12,
                        prot: 1,
                    }),
                    1 => Record::Event(Event::Flush { core: CoreId(0), what: flush::TLB }),
                    _ => {
                        let kind = [AccessKind::Load, AccessKind::Store, AccessKind::Instr][k as usize];
                        Record::Access(Access::new(ThreadId(0), kind, VirtAddr(base + (page << 12) + 64), 8))
                    }
                }
            })
            .collect();
        agrees_record_by_record(&cfg, opts, &records)?;
    }
}

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
