//! Model tier: behaviour with closed-form answers (ARCHITECTURE.md "Correctness tiers").

mod common;

use common::*;
use tlblab_core::machine::VirtualizationConfig;
use tlblab_core::memory::Placement;
use tlblab_core::page_table::PageTableFormat;
use tlblab_core::replacement::ReplacementKind;
use tlblab_core::tlb::{IndexFn, Requester, TlbEntry};
use tlblab_core::walker::PwcConfig;
use tlblab_core::{RunOptions, System};
use tlblab_trace::workloads::{build, Params};
use tlblab_types::{Asid, PageSize, Pfn, VirtAddr, Vpn};

#[test]
fn given_a_64_entry_fully_associative_lru_tlb_when_65_pages_are_swept_cyclically_then_every_access_misses(
) {
    let mut sys = system(fa(64));
    sweep(&mut sys, 0x1000_0000, 65, 4096, 10);
    let s = sys.stats().total;
    assert_eq!(s.tlb[0].misses, 650);
    assert_eq!(s.walks, 650);
}

#[test]
fn given_a_64_entry_fully_associative_lru_tlb_when_64_pages_are_swept_then_each_misses_once() {
    let mut sys = system(fa(64));
    sweep(&mut sys, 0x1000_0000, 64, 4096, 10);
    let s = sys.stats().total;
    assert_eq!(s.tlb[0].misses, 64);
    assert_eq!(s.tlb[0].hits, 576);
}

#[test]
fn given_an_empty_4_way_tlb_when_five_pages_of_one_set_are_touched_twice_then_the_second_round_misses_five_times(
) {
    // 64 entries, 4 ways → 16 sets indexed by the low VPN bits: pages 16 apart share a set.
    let mut sys = system(machine(
        PageTableFormat::X86_64_4level,
        vec![tlb("L1", 1, 64, 4, ReplacementKind::Lru)],
    ));
    sweep(&mut sys, 0x1000_0000, 5, 16 * 4096, 1);
    let first = sys.stats().total.tlb[0].misses;
    sweep(&mut sys, 0x1000_0000, 5, 16 * 4096, 1);
    assert_eq!(first, 5);
    assert_eq!(sys.stats().total.tlb[0].misses - first, 5);
    // Four pages of one set fit: the second round all hits.
    let mut sys = system(machine(
        PageTableFormat::X86_64_4level,
        vec![tlb("L1", 1, 64, 4, ReplacementKind::Lru)],
    ));
    sweep(&mut sys, 0x1000_0000, 4, 16 * 4096, 2);
    assert_eq!(sys.stats().total.tlb[0].misses, 4);
}

#[test]
fn given_an_explicit_bit_index_when_pages_differ_only_in_unused_bits_then_they_conflict() {
    // 2 sets selected by VA bit 20: pages that differ in bits 12..19 all map to set 0.
    let mut t = tlb("L1", 1, 2, 1, ReplacementKind::Lru);
    t.index = IndexFn::Bits { bits: vec![20] };
    let mut sys = system(machine(PageTableFormat::X86_64_4level, vec![t]));
    sweep(&mut sys, 0, 2, 4096, 3); // pages 0 and 1: same set, direct mapped → always miss
    assert_eq!(sys.stats().total.tlb[0].misses, 6);
    let mut t = tlb("L1", 1, 2, 1, ReplacementKind::Lru);
    t.index = IndexFn::Bits { bits: vec![20] };
    let mut sys = system(machine(PageTableFormat::X86_64_4level, vec![t]));
    sweep(&mut sys, 0, 2, 1 << 20, 3); // pages 1 MiB apart: different sets → 2 misses
    assert_eq!(sys.stats().total.tlb[0].misses, 2);
}

#[test]
fn given_an_xor_index_when_pages_collide_in_the_hash_then_they_share_a_set() {
    // 4 sets, set = VA[13:12] ^ VA[15:14]: page 0 and page 5 (0b0101) both hash to 0.
    let mut t = tlb("L1", 1, 4, 1, ReplacementKind::Lru);
    t.index = IndexFn::Xor {
        a: (12, 13),
        b: (14, 15),
    };
    let mut sys = system(machine(PageTableFormat::X86_64_4level, vec![t]));
    for _ in 0..3 {
        load(&mut sys, 0);
        load(&mut sys, 5 * 4096);
    }
    assert_eq!(sys.stats().total.tlb[0].misses, 6);
}

fn refs_per_walk(format: PageTableFormat, size: PageSize) -> u64 {
    let mut sys = system(machine(
        format,
        vec![tlb("L1", 1, 1, 1, ReplacementKind::Lru)],
    ));
    let space = sys.create_space().unwrap();
    sys.bind_thread(tlblab_types::ThreadId(0), space, 0);
    sys.set_region_page_size(space, VirtAddr(0), 1 << 40, size)
        .unwrap();
    // Two pages far apart in a 1-entry TLB: every access walks.
    for i in 0..10u64 {
        load(&mut sys, (i % 2) * 0x4000_0000 + 0x40_0000);
    }
    let s = sys.stats().total;
    assert_eq!(s.walks, 10);
    s.walk_refs / s.walks
}

#[test]
fn walk_references_per_miss_match_each_format() {
    use PageSize::*;
    use PageTableFormat::*;
    // (format, page size, levels a walk of that page reads)
    for (format, size, refs) in [
        (X86_64_4level, Size4K, 4),
        (X86_64_4level, Size2M, 3),
        (X86_64_4level, Size1G, 2),
        (X86_64_5level, Size4K, 5),
        (Armv8_4k, Size4K, 4),
        (Armv8_4k, Size64K, 4),
        (Armv7Short, Size4K, 2),
        (Armv7Short, Size64K, 2),
        (Armv7Short, Size1M, 1),
    ] {
        assert_eq!(refs_per_walk(format, size), refs, "{format:?} {size:?}");
    }
}

/// A one-entry TLB on a 4-level guest over a 4-level host of 4 KiB pages and no host page-walk
/// cache, the guest's memory `guest_bytes` placed by `guest`.
fn nested_system(guest: Option<Placement>, guest_bytes: u64) -> System {
    let mut cfg = machine(
        PageTableFormat::X86_64_4level,
        vec![tlb("L1", 1, 1, 1, ReplacementKind::Lru)],
    );
    cfg.virtualization = Some(VirtualizationConfig {
        host_format: PageTableFormat::X86_64_4level,
        host_page_size: PageSize::Size4K,
        host_pwcs: vec![],
        guest_memory_bytes: guest_bytes,
        guest_placement: guest,
        guest_placement_source: String::new(),
    });
    system(cfg)
}

#[test]
fn given_a_nested_4_level_guest_on_a_4_level_host_then_a_cold_walk_reads_24_entries() {
    let mut sys = nested_system(None, 256 << 20);
    for i in 0..10u64 {
        load(&mut sys, (i % 2) * 0x4000_0000 + 0x40_0000);
    }
    let s = sys.stats().total;
    assert_eq!(s.walks, 10);
    // (4 guest levels × (4 host refs + 1)) + 4 host refs for the data page = 24 (seed 001 §2.3).
    assert_eq!(s.walk_refs, 240);
}

/// The guest-physical 2 MiB frames that `pages` consecutive guest pages from `base` land in,
/// after one load of each, on a nested machine whose guest places its frames by `guest`.
fn guest_2m_frames(guest: Option<Placement>, guest_bytes: u64, base: u64, pages: u64) -> usize {
    let mut sys = nested_system(guest, guest_bytes);
    let mut frames = std::collections::BTreeSet::new();
    for i in 0..pages {
        let va = base + i * 4096;
        load(&mut sys, va);
        let (_, leaf) = sys.page_table_path(0, VirtAddr(va));
        frames.insert(leaf.expect("mapped by its load").pfn.0 >> 9);
    }
    frames.len()
}

#[test]
fn given_a_guest_placement_then_the_guest_frames_scatter_as_the_placement_says() {
    // Sequential (the machine's placement, no guest placement): 4096 pages fill 8 frames of
    // 2 MiB, and the guest's own page tables share the first. Random over R = 4096 frames of
    // 2 MiB (8 GiB): n = 4096 uniform pages fall in R (1 - (1 - 1/R)^n) = 2589.5 distinct
    // frames, standard deviation ~ 20 (occupancy of n balls in R bins); 4.5 deviations apart.
    let n = 4096;
    assert!(guest_2m_frames(None, 8 << 30, 0x4000_0000, n) <= 9);
    let r = 4096.0_f64;
    let expected = r * (1.0 - (1.0 - 1.0 / r).powf(n as f64));
    let got = guest_2m_frames(Some(Placement::Random), 8 << 30, 0x4000_0000, n) as f64;
    assert!(
        (got - expected).abs() < 90.0,
        "random guest placement: {got} distinct 2 MiB frames, expected {expected:.1}"
    );
}

#[test]
fn given_a_page_directory_cache_when_neighbouring_pages_miss_then_walks_read_one_entry() {
    let mut cfg = fa(1);
    cfg.walker.pwcs = vec![PwcConfig {
        level: 2,
        entries: 16,
        ways: None,
        latency: 1,
        replacement: ReplacementKind::Lru,
        source: String::new(),
    }];
    let mut sys = system(cfg);
    sweep(&mut sys, 0x1000_0000, 8, 4096, 1); // 8 pages in one 2 MiB region
    let s = sys.stats().total;
    assert_eq!(s.walks, 8);
    assert_eq!(s.walk_refs, 4 + 7); // the first walk is cold, the others start at the PT level
    assert_eq!(s.pwc_hits, 7);
}

#[test]
fn given_an_armv7_walk_cache_when_a_walk_skips_the_first_level_then_the_entry_keeps_its_domain() {
    // The domain lives in the first-level descriptor (ARMv7 short descriptors); a walk that
    // a walk-cache hit starts at the second level does not read that descriptor, but its
    // TLB entry still carries the domain the cache holds with the table pointer.
    let mut cfg = machine(
        PageTableFormat::Armv7Short,
        vec![tlb("L1", 1, 16, 16, ReplacementKind::Lru)],
    );
    cfg.walker.pwcs = vec![PwcConfig {
        level: 0,
        entries: 4,
        ways: None,
        latency: 1,
        replacement: ReplacementKind::Lru,
        source: String::new(),
    }];
    let mut sys = system(cfg);
    let space = sys.create_space().unwrap();
    sys.spaces[space].domain = tlblab_types::Domain(3);
    load(&mut sys, 0x10_0000); // cold: both levels read
    load(&mut sys, 0x10_1000); // same 1 MiB section: the walk cache gives the second level
    let s = sys.stats().total;
    assert_eq!((s.walks, s.pwc_hits, s.walk_refs), (2, 1, 3));
    let req = Requester {
        asid: Asid(1),
        ..Requester::default()
    };
    for va in [0x10_0000, 0x10_1000] {
        let e = sys.tlbs[0].probe(VirtAddr(va), req).expect("filled");
        assert_eq!(e.domain, tlblab_types::Domain(3), "{va:#x}");
    }
}

#[test]
fn given_locked_entries_when_the_tlb_is_flushed_and_thrashed_then_they_survive() {
    let mut t = tlb("main", 1, 8, 8, ReplacementKind::Lru);
    t.lockable = 2;
    let mut sys = system(machine(PageTableFormat::X86_64_4level, vec![t]));
    load(&mut sys, 0x1000);
    load(&mut sys, 0x2000);
    let req = Requester {
        asid: Asid(1),
        ..Requester::default()
    };
    assert!(sys.tlbs[0].lock(VirtAddr(0x1000), req));
    assert!(sys.tlbs[0].lock(VirtAddr(0x2000), req));
    load(&mut sys, 0x3000);
    assert!(
        !sys.tlbs[0].lock(VirtAddr(0x3000), req),
        "only two entries are lockable"
    );
    sys.tlbs[0].invalidate_all();
    sweep(&mut sys, 0x10_0000, 100, 4096, 1);
    let before = sys.stats().total.tlb[0].misses;
    load(&mut sys, 0x1000);
    load(&mut sys, 0x2000);
    assert_eq!(
        sys.stats().total.tlb[0].misses,
        before,
        "locked pages still hit"
    );
    assert_eq!(sys.tlbs[0].unlock(VirtAddr(0x1000)), 1);
    assert_eq!(sys.tlbs[0].locked_count(), 1);
}

#[test]
fn invalidation_by_asid_keeps_other_address_spaces_and_global_entries() {
    let mut sys = system(fa(16));
    let t = &mut sys.tlbs[0];
    t.insert(TlbEntry::new(Vpn(1), PageSize::Size4K, Pfn(10), Asid(1)));
    t.insert(TlbEntry::new(Vpn(2), PageSize::Size4K, Pfn(11), Asid(2)));
    let mut g = TlbEntry::new(Vpn(3), PageSize::Size4K, Pfn(12), Asid(1));
    g.global = true;
    t.insert(g);
    assert_eq!(t.invalidate_asid(Asid(1)), 1);
    assert_eq!(t.valid_count(), 2);
    let other = Requester {
        asid: Asid(7),
        ..Requester::default()
    };
    assert!(
        t.probe(VirtAddr(3 << 12), other).is_some(),
        "global entries match any ASID"
    );
    assert!(t.probe(VirtAddr(2 << 12), other).is_none());
    assert_eq!(t.invalidate_va(VirtAddr(2 << 12), None), 1);
    assert_eq!(t.invalidate_all(), 1);
}

#[test]
fn given_a_two_level_hierarchy_when_l1_misses_and_l2_hits_then_no_walk_and_l1_is_filled() {
    let cfg = machine(
        PageTableFormat::X86_64_4level,
        vec![
            tlb("L1", 1, 4, 4, ReplacementKind::Lru),
            tlb("L2", 2, 64, 4, ReplacementKind::Lru),
        ],
    );
    let mut sys = system(cfg);
    sweep(&mut sys, 0x1000_0000, 8, 4096, 3);
    let s = sys.stats().total;
    assert_eq!(s.walks, 8);
    assert_eq!(s.tlb[0].misses, 24);
    assert_eq!(s.tlb[1].hits, 16);
}

#[test]
fn with_caches_a_walk_reference_is_served_by_the_cache_once_warm() {
    let mut cfg = fa(1);
    cfg.caches = vec![
        cache("L1D", 1, 32 << 10, 8, 4),
        cache("L2", 2, 512 << 10, 8, 12),
    ];
    let mut sys = System::new(
        cfg,
        RunOptions {
            data_accesses: false,
            ..RunOptions::default()
        },
    )
    .unwrap();
    for i in 0..20u64 {
        load(&mut sys, 0x1000_0000 + (i % 2) * 4096);
    }
    let s = sys.stats();
    let t = &s.total;
    // First walk: 4 references from memory; second: the 3 upper entries hit L1 (same lines), the
    // PTE is on the same line as the first page's PTE, so it hits too.
    assert_eq!(t.walk_refs, 80);
    assert_eq!(
        t.walk_refs_by_source[2], 4,
        "only the cold walk goes to memory: {:?}",
        t.walk_refs_by_source
    );
    assert_eq!(t.walk_refs_by_source[0], 76);
    assert_eq!(s.sources, vec!["L1D", "L2", "memory"]);
}

#[test]
fn overlap_timing_hides_the_first_level_tlb_behind_the_l1_cache() {
    let mut cfg = fa(8);
    cfg.tlbs[0].latency = 1;
    cfg.caches = vec![cache("L1D", 1, 32 << 10, 8, 4)];
    let mut a = System::new(cfg.clone(), RunOptions::default()).unwrap();
    cfg.timing.model = tlblab_core::machine::TimingModel::Overlap;
    let mut b = System::new(cfg, RunOptions::default()).unwrap();
    load(&mut a, 0x1000);
    load(&mut b, 0x1000);
    assert_eq!(load(&mut a, 0x1008), 5);
    assert_eq!(load(&mut b, 0x1008), 4);
}

#[test]
fn same_seed_same_numbers_and_random_replacement_depends_on_the_seed() {
    let run = |seed: u64| {
        let mut cfg = machine(
            PageTableFormat::X86_64_4level,
            vec![tlb("L1", 1, 64, 64, ReplacementKind::Random)],
        );
        cfg.memory.placement = tlblab_core::memory::Placement::Random;
        let mut sys = System::new(
            cfg,
            RunOptions {
                seed,
                data_accesses: false,
                ..RunOptions::default()
            },
        )
        .unwrap();
        let mut params = Params::new();
        params.insert("pages".into(), 200);
        params.insert("accesses".into(), 20_000);
        let mut w = build("random", &params, seed).unwrap();
        sys.run(&mut w).unwrap();
        sys.stats()
    };
    assert_eq!(run(7), run(7));
    assert_ne!(run(7).total.tlb[0].misses, run(8).total.tlb[0].misses);
}

#[test]
fn an_impossible_geometry_is_rejected_naming_the_field() {
    let mut cfg = fa(64);
    cfg.tlbs[0].ways = tlblab_core::tlb::Ways::N(5);
    let e = System::new(cfg, RunOptions::default()).err().unwrap().0;
    assert_eq!(e, "tlb[L1].ways: 64 entries are not divisible by 5 ways");
    let mut cfg = fa(64);
    cfg.tlbs[0].ways = tlblab_core::tlb::Ways::N(8);
    cfg.tlbs[0].index = IndexFn::Bits { bits: vec![12, 13] };
    let e = System::new(cfg, RunOptions::default()).err().unwrap().0;
    assert!(
        e.starts_with("tlb[L1].index: index.bits: expected 3 bits for 8 sets, found 2"),
        "{e}"
    );
}

#[test]
fn an_address_beyond_the_format_is_an_error_not_a_panic() {
    let mut sys = system(machine(
        PageTableFormat::Armv7Short,
        vec![tlb("L1", 1, 8, 8, ReplacementKind::Lru)],
    ));
    let e = sys
        .access(tlblab_trace::Access::load(0x1_0000_0000))
        .unwrap_err();
    assert!(e.0.contains("outside the 32-bit address space"), "{}", e.0);
}

fn two_thread_sweep(cores: usize) -> tlblab_core::Stats {
    use tlblab_trace::{Access, Record, VecSource};
    use tlblab_types::{AccessKind, ThreadId};
    let mut cfg = fa(64);
    cfg.cores = cores;
    let mut sys = system(cfg);
    let mut recs = Vec::new();
    for _ in 0..10 {
        for p in 0..64u64 {
            for t in 0..2u32 {
                let va = 0x1000_0000 + t as u64 * 0x100_0000 + p * 4096;
                recs.push(Record::Access(Access::new(
                    ThreadId(t),
                    AccessKind::Load,
                    VirtAddr(va),
                    8,
                )));
            }
        }
    }
    sys.run(&mut VecSource::new(recs)).unwrap();
    sys.stats()
}

#[test]
fn given_two_threads_on_two_cores_with_private_tlbs_then_they_do_not_evict_each_other() {
    let s = two_thread_sweep(2);
    assert_eq!(s.cores[0].tlb[0].misses, 64);
    assert_eq!(s.cores[1].tlb[0].misses, 64);
    assert_eq!(s.threads[&1].references, 640);
    // On one core the same two sweeps share 64 entries: 128 pages cycle through LRU, all miss.
    let s = two_thread_sweep(1);
    assert_eq!(s.total.tlb[0].misses, 1280);
}

#[test]
fn a_migrated_thread_meets_the_new_cores_cold_tlb() {
    let mut cfg = fa(64);
    cfg.cores = 2;
    let mut sys = system(cfg);
    sweep(&mut sys, 0x1000_0000, 32, 4096, 2);
    assert_eq!(sys.stats().total.tlb[0].misses, 32);
    sys.migrate(tlblab_types::ThreadId(0), 1).unwrap();
    sweep(&mut sys, 0x1000_0000, 32, 4096, 1);
    let s = sys.stats();
    assert_eq!(
        s.cores[1].tlb[0].misses, 32,
        "every page misses again on the new core"
    );
    assert_eq!(s.cores[1].walks, 32);
    assert!(
        sys.clock(1) >= sys.clock(0),
        "the thread resumes no earlier than it left"
    );
}

/// A cache level counts an eviction for each miss that replaces a valid line: a cyclic sweep of
/// 12 lines over one 8-way LRU set misses every time and evicts on all but the 8 cold fills;
/// 8 lines miss once each and evict nothing.
#[test]
fn a_cache_counts_an_eviction_for_each_miss_into_a_full_set() {
    for (lines, misses, evictions) in [(12u64, 36u64, 28u64), (8, 8, 0)] {
        let mut cfg = fa(64);
        cfg.caches = vec![
            cache("L1D", 1, 8 * 64, 8, 4),
            cache("L2", 2, 64 << 10, 8, 12),
        ];
        // Walks enter at the L2: only data lines fill the L1D.
        cfg.walker.first_cache_level = 2;
        let mut sys = System::new(cfg, RunOptions::default()).unwrap();
        for _ in 0..3 {
            for l in 0..lines {
                load(&mut sys, 0x4000_0000 + l * 64);
            }
        }
        let s = sys.stats();
        assert_eq!(s.cache_levels[0], "L1D");
        let c = &s.total.cache[0];
        assert_eq!((c.accesses, c.misses), (3 * lines, misses), "{lines} lines");
        assert_eq!(c.evictions, evictions, "{lines} lines");
    }
}

/// An uncached walker (ARMv4/v5: the SA-1100's table walk reads memory, not the data cache)
/// pays `walker.memory_latency` for every entry of every walk and leaves the data cache alone;
/// a cached walker's repeated walks of the same two pages hit the cache after the first two.
#[test]
fn given_an_uncached_walker_when_two_pages_alternate_in_a_one_entry_tlb_then_every_walk_reads_memory(
) {
    for uncached in [false, true] {
        let mut cfg = machine(
            PageTableFormat::Armv7Short,
            vec![tlb("L1", 1, 1, 1, ReplacementKind::Lru)],
        );
        cfg.caches = vec![cache("L1D", 1, 32 << 10, 8, 2)];
        cfg.walker.latency = 3;
        cfg.walker.uncached = uncached;
        cfg.walker.memory_latency = 22;
        let mut sys = System::new(cfg, RunOptions::default()).unwrap();
        for i in 0..10u64 {
            load(&mut sys, (i % 2) * 0x4000_0000 + 0x40_0000);
        }
        let s = sys.stats().total;
        assert_eq!((s.walks, s.walk_refs), (10, 20), "uncached {uncached}");
        // Sources: the L1D, then memory.
        if uncached {
            assert_eq!(s.walk_refs_by_source, vec![0, 20]);
            assert_eq!(s.walk_cycles, 10 * (3 + 2 * 22));
            assert_eq!(s.cache[0].accesses, 10, "only the data loads reach the L1D");
        } else {
            // The two pages' first- and second-level entries: four lines read from memory once.
            assert_eq!(s.walk_refs_by_source, vec![16, 4]);
            assert_eq!(s.walk_cycles, 10 * 3 + 4 * 22 + 16 * 2);
            assert_eq!(s.cache[0].accesses, 30);
        }
    }
}
