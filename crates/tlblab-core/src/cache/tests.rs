//! Behaviour tests of one cache level: fills and evictions, dirty bits, flushes, and both
//! layouts (general and lean) against a scan of every slot.

use super::*;

fn cfg(size: u64, ways: usize) -> CacheConfig {
    CacheConfig {
        name: "L1".into(),
        level: 1,
        kind: CacheKind::Data,
        size,
        ways,
        line: 64,
        latency: 4,
        replacement: ReplacementKind::Lru,
        shared: false,
        cores_per_instance: 0,
        indexing: Indexing::Physical,
        flush_cycles_base: 1000,
        flush_cycles_per_line: 2,
        flush_cycles_per_dirty_line: 10,
        range_flush_cycles_per_line: 0,
        prefetch: None,
        source: String::new(),
    }
}

/// The fills after a ranged invalidation, in both layouts: the invalidated ways are
/// taken lowest first, then the least recently used of the lines left.
#[test]
fn given_a_full_lru_set_when_two_lines_are_range_flushed_then_fills_take_their_ways_lowest_first() {
    for lean in [true, false] {
        let mut config = cfg(256, 4); // one set of four ways
        config.range_flush_cycles_per_line = 5;
        let mut c = Cache::with_layout(config, 0, lean);
        for line in 0..4u64 {
            c.access(line * 64, line == 2); // ways 0-3; line 2 dirty
        }
        c.access(3 * 64, false); // LRU order, oldest first: 0, 1, 2, 3
                                 // Lines 2 and 0 go (ways 2 and 0): one dirty line written back.
        assert_eq!(c.flush_range(2 * 64, 64), 5 + 10, "lean={lean}");
        assert_eq!(c.flush_range(0, 1), 5, "lean={lean}");
        assert_eq!(c.valid_lines(), 2);
        assert_eq!(c.access_counted(4 * 64, false), Outcome::Filled); // way 0
        assert_eq!(c.access_counted(5 * 64, false), Outcome::Filled); // way 2
        assert_eq!(c.access_counted(6 * 64, false), Outcome::Evicted); // line 1, the LRU
        assert!(c.contains(3 * 64) && !c.contains(64), "lean={lean}");
        // A flush finds every line once, the refilled way-0 set listed again or not.
        assert_eq!(c.flush(), 1000 + 4 * 2, "lean={lean}");
        assert_eq!(c.valid_lines(), 0);
    }
}

#[test]
fn given_a_direct_mapped_cache_when_two_lines_share_a_set_then_they_evict_each_other() {
    let mut c = Cache::new(cfg(4096, 1), 0);
    assert!(!c.access(0, false));
    assert!(c.access(0, false));
    assert!(!c.access(4096, false));
    assert!(!c.access(0, false));
}

#[test]
fn a_miss_into_a_full_set_is_an_eviction_and_a_flush_empties_the_set() {
    let mut c = Cache::new(cfg(128, 2), 0); // one set of two ways
    assert_eq!(c.access_counted(0, false), Outcome::Filled);
    assert_eq!(c.access_counted(64, false), Outcome::Filled);
    assert_eq!(
        c.access_counted(128, false),
        Outcome::Evicted,
        "evicts line 0 (LRU)"
    );
    assert_eq!(c.access_counted(64, false), Outcome::Hit);
    assert_eq!(
        c.access_counted(0, false),
        Outcome::Evicted,
        "evicts line 2"
    );
    c.flush();
    assert_eq!(c.access_counted(64, false), Outcome::Filled);
}

#[test]
fn dirty_bits_of_neighbouring_slots_are_independent() {
    // 64 sets of 2 ways: slots 0..128 span two bit words.
    let mut c = Cache::new(cfg(64 * 128, 2), 0);
    for line in 0..128u64 {
        c.access(line * 64, line % 3 == 0);
    }
    // Each line is alone in its way of its set; 43 of the 128 were written.
    assert_eq!(c.flush(), 1000 + 128 * 2 + 43 * 10);
}

#[test]
fn flush_cost_counts_valid_and_dirty_lines() {
    let mut c = Cache::new(cfg(4096, 2), 0);
    c.access(0, true);
    c.access(64, false);
    assert_eq!(c.flush(), 1000 + 2 * 2 + 10);
    assert_eq!(c.valid_lines(), 0);
}

#[test]
fn the_line_of_the_last_access_misses_after_a_flush() {
    let mut c = Cache::new(cfg(4096, 2), 0);
    assert!(!c.access(128, true));
    assert!(
        c.access(136, false),
        "same line: a hit (through the last-line memo)"
    );
    c.flush();
    assert!(!c.access(136, false), "a flush empties the memo too");
    // A write hit through the memo still dirties the line: the flush pays for it.
    assert!(c.access(140, true));
    assert_eq!(c.flush(), 1000 + 2 + 10);
}

/// The general layout's state of `c`.
fn general(c: &mut Cache) -> &mut GeneralLines {
    match &mut c.lines {
        Lines::General(g) => g,
        Lines::Lean(_) => panic!("a cache in the general layout was expected"),
    }
}

/// `flush` as it was before `filled_sets`: every slot scanned (general layout).
fn flush_by_scan(c: &mut Cache) -> u64 {
    c.memo_line = INVALID;
    c.empty_slots = c.slots;
    c.filled_sets.clear();
    let ways = c.ways;
    let g = general(c);
    let (mut valid, mut dirty) = (0u64, 0u64);
    for slot in 0..g.tags.len() {
        if g.tags.get(slot) != INVALID {
            valid += 1;
            dirty += g.dirty.get(slot) as u64;
            g.tags.set(slot, INVALID);
            g.dirty.set(slot, false);
            g.repl.on_invalidate(slot / ways, slot % ways);
        }
    }
    c.config.flush_cycles_base
        + valid * c.config.flush_cycles_per_line
        + dirty * c.config.flush_cycles_per_dirty_line
}

#[test]
fn every_layout_and_flush_leaves_what_a_scan_of_every_slot_leaves() {
    // Every policy, geometries from 1 to 80 ways (past 64: the wide search) and sets in
    // and out of the lean layout's reach, random lines over a footprint from a few sets to
    // many times the cache, flushes in between. Three caches see the same accesses: the
    // general layout flushed through `filled_sets`, the general layout flushed by a scan
    // of every slot, and the layout `Cache::new` picks (the lean one for LRU over at most
    // 16 ways and a power-of-two number of sets). All three answer every access and every
    // lookup the same way and cost the same at each flush.
    let mut rng = tlblab_types::SplitMix64::new(7);
    let mut lean_seen = 0;
    for policy in [
        ReplacementKind::Lru,
        ReplacementKind::Plru,
        ReplacementKind::Fifo,
        ReplacementKind::Random,
    ] {
        for (size, ways) in [
            (4096u64, 2usize),
            (64 * 64 * 8, 8),
            (64 * 32 * 16, 16),
            (64 * 8 * 3, 3),
            (64 * 16 * 12, 12),
            (64 * 3 * 8, 8),
            (64 * 80 * 4, 80),
            (64 * 20 * 4, 20),
            (128, 1),
            (1024, 16),
        ] {
            if policy == ReplacementKind::Plru && !ways.is_power_of_two() {
                continue;
            }
            let mut config = cfg(size, ways);
            config.replacement = policy;
            let mut picked = Cache::new(config.clone(), 3);
            lean_seen += matches!(picked.lines, Lines::Lean(_)) as u32;
            let mut by_sets = Cache::with_layout(config, 3, false);
            let mut by_scan = by_sets.clone();
            for round in 0..20 {
                let lines = 1 + rng.below(4 * size / 64);
                for _ in 0..rng.below(3 * size / 64 + 2) {
                    let addr = rng.below(lines) * 64 + rng.below(64);
                    let write = rng.below(3) == 0;
                    let what = format!("{policy:?} {size}/{ways} round {round}");
                    let want = by_scan.access_counted(addr, write);
                    assert_eq!(by_sets.access_counted(addr, write), want, "{what}");
                    assert_eq!(picked.access_counted(addr, write), want, "{what}");
                    if rng.below(4) == 0 {
                        // The memo lane's lookup: a hit has an access's effects.
                        let probe = rng.below(lines) * 64;
                        let hit = by_scan.contains(probe);
                        assert_eq!(picked.contains(probe), hit, "{what}");
                        assert_eq!(picked.access_if_present(probe, write), hit, "{what}");
                        assert_eq!(by_sets.access_if_present(probe, write), hit, "{what}");
                        if hit {
                            by_scan.access_counted(probe, write);
                        }
                    }
                }
                let valid = general(&mut by_scan)
                    .tags
                    .as_slice()
                    .iter()
                    .filter(|&&t| t != INVALID)
                    .count();
                assert_eq!(by_sets.valid_lines(), valid);
                assert_eq!(picked.valid_lines(), valid);
                if rng.below(2) == 0 {
                    // A write through the memo dirties the line the last access left.
                    picked.write_memo_line();
                    by_sets.write_memo_line();
                    by_scan.write_memo_line();
                }
                let cost = flush_by_scan(&mut by_scan);
                assert_eq!(by_sets.flush(), cost, "{policy:?} {size}/{ways}");
                assert_eq!(picked.flush(), cost, "{policy:?} {size}/{ways}");
                assert_eq!(by_sets.valid_lines(), 0);
                assert_eq!(picked.valid_lines(), 0);
            }
        }
    }
    assert_eq!(
        lean_seen, 7,
        "LRU, power-of-two sets of 2, 8, 16, 3, 12, 1 and 16 ways"
    );
}

#[test]
fn impossible_geometry_names_the_field() {
    let e = cfg(1000, 4).validate().unwrap_err();
    assert!(e.starts_with("cache[L1].size"), "{e}");
}
