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
