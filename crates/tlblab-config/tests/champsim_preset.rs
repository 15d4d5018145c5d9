//! The `champsim` preset (ChampSim's stock champsim_config.json, docs/champsim.md): closed-form
//! walk-reference counts of its 5-level walk with the four page-structure caches and ChampSim's
//! restart rule (`pwc_restart = "at_hit_level"`), and its DTLB/STLB geometry.

use tlblab_core::machine::PwcRestart;
use tlblab_core::{RunOptions, System};
use tlblab_trace::{Access, Record, VecSource};
use tlblab_types::{AccessKind, ThreadId, VirtAddr};

fn loads(addrs: &[u64]) -> Vec<Record> {
    addrs
        .iter()
        .map(|&a| Record::Access(Access::new(ThreadId(0), AccessKind::Load, VirtAddr(a), 8)))
        .collect()
}

fn run(restart: PwcRestart, records: Vec<Record>) -> tlblab_core::Stats {
    let mut cfg = tlblab_config::load_machine("champsim").unwrap();
    cfg.walker.pwc_restart = restart;
    let mut sys = System::new(cfg, RunOptions::no_caches(0)).unwrap();
    sys.run(&mut VecSource::new(records)).unwrap();
    sys.stats()
}

/// Given five pages, each new, the first cold and each later one sharing with the one before
/// it the table of one level fewer (the same 2 MiB region, then 1 GiB, 512 GiB, 256 TiB), when
/// walked, then the deepest page-structure cache that hits is pscl2, pscl3, pscl4, pscl5 in
/// turn: ChampSim's walker re-reads the entry of the level that hit (2, 3, 4, 5 references),
/// a walk that starts below it reads one fewer (1, 2, 3, 4); the cold walk reads all 5.
#[test]
fn a_pscl_hit_rereads_the_entry_of_its_level() {
    let pages = [
        0x1000_0000,
        0x1000_1000,     // same 2 MiB region: pscl2 (tlblab level 3) hits
        0x1020_0000,     // same 1 GiB: pscl3 (level 2)
        0x1_0000_0000,   // same 512 GiB: pscl4 (level 1)
        0x100_0000_0000, // same 256 TiB: pscl5 (level 0, the root's entries)
    ];
    let at_hit = run(PwcRestart::AtHitLevel, loads(&pages));
    let below = run(PwcRestart::BelowHit, loads(&pages));
    for s in [&at_hit, &below] {
        assert_eq!(s.total.walks, 5);
        assert_eq!(s.total.pwc_hits, 4);
    }
    assert_eq!(at_hit.total.walk_refs, 5 + 2 + 3 + 4 + 5);
    assert_eq!(below.total.walk_refs, 5 + 1 + 2 + 3 + 4);
}

/// Given four walks that fill pscl4 (1 set of 4 ways, tlblab's level 1, keyed by the VA above
/// bit 39) with four 512 GiB regions P0..P3, then a walk of a new page in P0's first 2 MiB
/// (pscl2 hits, and so do pscl3, pscl4 and pscl5 above it), then a walk in a fifth region P4
/// (pscl4 misses and fills, evicting its least recent entry), then a walk of a new page in
/// P0's second 1 GiB (pscl2 and pscl3 miss): ChampSim's `handle_read` looks up every PSCL and
/// each hit refreshes its LRU state (src/ptw.cc:76-79, inc/msl/lru_table.h:128-139 at
/// 2ff2501), so the fifth walk made P0 the most recent of pscl4, the sixth evicted P1, and the
/// seventh hits P0 in pscl4 and reads 4 entries (levels 1-4, the hit's re-read first).
/// Refreshing only the deepest hit (tlblab before 2026-11-26) would have evicted P0 and read 5
/// (a pscl5 hit re-reads the root's entry). Hand count: 5 + 5 + 5 + 5 + 2 + 5 + 4 = 31.
#[test]
fn a_pscl_lookup_refreshes_every_pscl_that_hits() {
    let p = |k: u64| k << 39;
    let addrs = [
        p(0) + 0x1000,
        p(1) + 0x1000,
        p(2) + 0x1000,
        p(3) + 0x1000,
        p(0) + 0x2000,      // P0's first 2 MiB again: pscl2 hits (2 references)
        p(4) + 0x1000,      // pscl4 full: evicts its least recent (P1 here, P0 if not refreshed)
        p(0) + 0x4000_1000, // P0, second 1 GiB: pscl4 hits (4 references)
    ];
    let s = run(PwcRestart::AtHitLevel, loads(&addrs));
    assert_eq!(s.total.walks, 7);
    assert_eq!(s.total.pwc_hits, 6);
    assert_eq!(s.total.walk_refs, 31);
}

/// Given 36 pages 2 MiB apart in one 1 GiB region, cycled three times, then every access
/// walks (all 36 fall in one 12-way STLB set), and every walk after the cold one misses pscl2
/// (36 keys over 4 sets of 8 ways: 9 per set, cycled, so LRU keeps none) and hits pscl3: 3
/// references under the restart rule (levels 2, 3, 4 of tlblab's numbering).
#[test]
fn walks_of_new_2_mib_regions_hit_pscl3_and_read_three_entries() {
    let pages: Vec<u64> = (0..36u64).map(|i| 0x4000_0000 + (i << 21)).collect();
    let mut addrs = Vec::new();
    for _ in 0..3 {
        addrs.extend(&pages);
    }
    let s = run(PwcRestart::AtHitLevel, loads(&addrs));
    assert_eq!(s.total.walks, 108);
    assert_eq!(s.total.pwc_hits, 107);
    assert_eq!(s.total.walk_refs, 5 + 107 * 3);
}

/// Given 5 pages 16 pages apart (one DTLB set of 4 ways; 5 STLB sets), when cycled three
/// times, then the DTLB misses every time and the STLB only on first touches.
#[test]
fn dtlb_is_16_sets_of_4_ways_over_a_128_set_stlb() {
    let pages: Vec<u64> = (0..5u64).map(|i| 0x7000_0000 + i * 16 * 4096).collect();
    let mut addrs = Vec::new();
    for _ in 0..3 {
        addrs.extend(&pages);
    }
    let s = run(PwcRestart::AtHitLevel, loads(&addrs));
    let level = |name: &str| s.tlb_levels.iter().position(|n| n == name).unwrap();
    assert_eq!(s.total.tlb[level("DTLB")].misses, 15);
    assert_eq!(s.total.tlb[level("STLB")].misses, 5);
}
