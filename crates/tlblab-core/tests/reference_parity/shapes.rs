//! Parity of the fast lane's compiled shapes: pair geometries of every first level the pairs
//! are compiled for, second-level policies, staged TLB-only stretches, page sizes and
//! exhausted memory, each against the reference or against access by access.

use super::*;

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
    /// counts them). A record moves its path's page, or (`by_kind`) its kind's: loads and
    /// stores then stay each on its own page, in turn, as a program's loads of its heap and
    /// stores to its stack do (the TLB-only loop keeps a frame per kind).
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
        by_kind in any::<bool>(),
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
        let mut prev = [0u64; 3];
        let records: Vec<Record> = refs
            .iter()
            .map(|&(k, moves, page, offset, crossing)| {
                let kind = [AccessKind::Load, AccessKind::Store, AccessKind::Instr][k as usize];
                let at = if by_kind { k as usize } else { kind.is_instr() as usize };
                if moves {
                    prev[at] = page;
                }
                let offset = if crossing { 0xffc } else { offset & !7 };
                let va = 0x4000_0000 + (prev[at] << 12) + offset;
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
