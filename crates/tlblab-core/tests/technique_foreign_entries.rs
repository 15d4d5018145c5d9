//! Model tier for `foreign_entries` (a shared TLB level's other tenants, docs/probe.md): closed
//! forms on one fully associative LRU level, where a page re-referenced after D distinct other
//! entries hits iff D < ways (the module's doc comment derives them).

mod common;

use common::*;
use tlblab_core::page_table::PageTableFormat;
use tlblab_core::registry::{build, install};
use tlblab_core::replacement::ReplacementKind;
use tlblab_core::techniques::parse_spec;
use tlblab_core::{RunOptions, System};
use tlblab_trace::{Access, Record, VecSource};
use tlblab_types::{AccessKind, ThreadId, VirtAddr};

const WAYS: usize = 8;

/// One set of 8 ways, LRU, TLB-only.
fn one_set() -> tlblab_core::MachineConfig {
    machine(
        PageTableFormat::X86_64_4level,
        vec![tlb("STLB", 1, WAYS, WAYS, ReplacementKind::Lru)],
    )
}

/// `refs` references of a cyclic chain over `k` pages (page t mod k at reference t).
fn chain(k: u64, refs: u64) -> Vec<Record> {
    (0..refs)
        .map(|t| {
            Record::Access(Access::new(
                ThreadId(0),
                AccessKind::Load,
                VirtAddr(0x4000_0000 + (t % k) * 4096),
                8,
            ))
        })
        .collect()
}

fn run(cfg: tlblab_core::MachineConfig, records: Vec<Record>, spec: Option<&str>) -> System {
    let mut sys = System::new(cfg, RunOptions::tlb_only(3)).unwrap();
    if let Some(s) = spec {
        install(&mut sys, &parse_spec(s).unwrap()).unwrap();
    }
    sys.run(&mut VecSource::new(records)).unwrap();
    sys
}

fn misses(sys: &System) -> u64 {
    sys.stats().total.tlb[0].misses
}

fn counter(sys: &System, name: &str) -> u64 {
    let c = sys.stats().technique.unwrap().counters;
    c[name]
}

#[test]
fn given_7_pages_in_8_ways_and_a_foreign_entry_every_4_references_then_3_of_4_references_miss() {
    // Reference t re-references page t mod 7 after the 6 other chain pages and the insertions
    // made before references t-6..t, those at multiples of 4: two of them when t mod 4 is 0, 1
    // or 2 (6 + 2 = 8 others: a miss), one when it is 3 (7 others: a hit). Reference 7 has only
    // the insertion before reference 4 behind page 0 (a hit); from reference 8 on the pattern is
    // periodic. 1428 references: 7 first touches, 15 misses in 8..28, then 50 periods of 28
    // references with 21 misses each.
    let refs = 28 + 28 * 50;
    let sys = run(one_set(), chain(7, refs), Some("foreign_entries:every=4"));
    assert_eq!(misses(&sys), 7 + 15 + 21 * 50);
    // One insertion before each reference whose index is a positive multiple of 4.
    assert_eq!(counter(&sys, "foreign_inserted"), (refs - 1) / 4);
    // Without the technique the same chain misses only its first touches.
    let plain = run(one_set(), chain(7, refs), None);
    assert_eq!(misses(&plain), 7);
}

#[test]
fn given_k_plus_the_most_foreign_entries_within_the_ways_then_only_first_touches_miss() {
    // k + ceil(k/N) <= W: 6 + ceil(6/4) = 8, 4 + ceil(4/1) = 8.
    for (k, every) in [(6, 4), (4, 1)] {
        assert_eq!(chain_misses(k, every), k, "k={k} every={every}");
    }
}

#[test]
fn given_k_plus_the_fewest_foreign_entries_beyond_the_ways_then_every_reference_misses() {
    // k + floor(k/N) > W: 7 + floor(7/3) = 9, 5 + floor(5/1) = 10.
    for (k, every) in [(7, 3), (5, 1)] {
        assert_eq!(chain_misses(k, every), 4000, "k={k} every={every}");
    }
}

/// The misses of 4000 references of a `k`-page chain in one 8-way set, with a foreign entry
/// before every `every`th.
fn chain_misses(k: u64, every: u64) -> u64 {
    let spec = format!("foreign_entries:every={every}");
    misses(&run(one_set(), chain(k, 4000), Some(&spec)))
}

#[test]
fn given_several_sets_then_the_foreign_entries_reach_every_set_and_the_run_is_deterministic() {
    // 16 sets x 4 ways: 2000 foreign entries drawn at random fill every set, so each evicts
    // once its set is full: at most 64 insertions find room. A chain of 16 pages (one per set,
    // 1 + foreign <= 4 ways most of the time) then misses only when 4 foreign entries land in
    // its set within one lap of 16 references (every=1).
    let cfg = machine(
        PageTableFormat::X86_64_4level,
        vec![tlb("STLB", 1, 64, 4, ReplacementKind::Lru)],
    );
    let a = run(
        cfg.clone(),
        chain(16, 2001),
        Some("foreign_entries:every=1"),
    );
    assert_eq!(counter(&a, "foreign_inserted"), 2000);
    assert!(counter(&a, "foreign_evicted") >= 2000 - 64);
    let b = run(cfg, chain(16, 2001), Some("foreign_entries:every=1"));
    assert_eq!(misses(&a), misses(&b));
    // Binomial(16, 1/16) >= 4 has probability 0.017: some misses beyond the 16 first touches,
    // far fewer than the references.
    assert!(misses(&a) > 16 && misses(&a) < 400, "{}", misses(&a));
}

#[test]
fn given_bad_parameters_then_the_error_names_the_parameter() {
    let m = one_set();
    let err = |s: &str| build(&parse_spec(s).unwrap(), &m, 0).err().unwrap();
    assert!(
        err("foreign_entries").contains("'every'"),
        "{}",
        err("foreign_entries")
    );
    assert!(err("foreign_entries:every=0").contains("'every'"));
    let e = err("foreign_entries:every=4,level=L9");
    assert!(e.contains("'level'") && e.contains("STLB"), "{e}");
}
