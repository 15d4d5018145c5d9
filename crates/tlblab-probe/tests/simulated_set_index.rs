//! The L2 set index's ways (`measure::set_index`, step 3) on a simulated host shaped like the
//! Intel VM's: a 96-entry L1 DTLB of 16 sets × 6 ways (low VPN bits) in front of a 2048-entry,
//! 16-way second level indexed by VPN bits 0-6 XOR 7-13 (docs/lab/probe-findings.md).
//! The other fields are the zen3 preset's; noise and intruders as on a VM (`Noise::VM`).
//!
//! Criteria (written before the runs, issue 49): with random replacement (a set of W + 1 pages
//! misses on ≈ 12% of its accesses, half of them only at ≈ W + 8) the ways read 16, the sets
//! 128, and the reading is not called certain (the half-way point is the replacement's, not
//! the ways', so nothing checks the first misses); with LRU the ways read 16 and are read. The
//! previous estimator took the middle of the first misses and the half-way point, which a
//! replacement that keeps part of a set past its ways moves up: on this machine it is ≥ 2 ways
//! above 16 (the test prints both), as the Intel VM's 17 was one above.

use tlblab_core::replacement::ReplacementKind;
use tlblab_core::tlb::{IndexFn, Ways};
use tlblab_probe::measure::set_index::{measure_set_index, IndexBudget};
use tlblab_probe::measure::simulated::{Noise, SimulatedHost};

fn intel_like(repl: ReplacementKind) -> tlblab_core::MachineConfig {
    let mut m = tlblab_config::load_machine("zen3").unwrap();
    for t in &mut m.tlbs {
        if t.name == "L1D" {
            t.entries = 96;
            t.ways = Ways::N(6);
        }
        if t.name == "L2D" {
            t.entries = 2048;
            t.ways = Ways::N(16);
            t.index = IndexFn::Xor {
                a: (12, 18),
                b: (19, 25),
            };
            t.replacement = repl;
        }
    }
    m
}

fn read(repl: ReplacementKind) -> tlblab_probe::measure::set_index::SetIndex {
    read_with(repl, Noise::VM)
}

fn read_with(repl: ReplacementKind, noise: Noise) -> tlblab_probe::measure::set_index::SetIndex {
    let m = intel_like(repl);
    let mut host = SimulatedHost::new(&m, noise, 7).unwrap();
    let si = measure_set_index(
        &mut host,
        160,
        2048,
        Some((16, 6)),
        IndexBudget {
            reps: 5,
            pair_reps: 3,
            window_ns: 100_000,
            seed: 11,
        },
    )
    .expect("a set index");
    eprintln!(
        "{repl:?}: {} sets x {} ways, firsts {:?}, half-way {}, read {}, fillers {}, {:?}",
        si.sets(),
        si.ways,
        si.ways_firsts,
        si.half_way,
        si.ways_read(),
        si.ways_fillers,
        si.unclear
    );
    assert!(host.error().is_none(), "{:?}", host.error());
    si
}

#[test]
fn random_replacement_reads_16_ways_and_says_the_half_way_point_is_not_them() {
    let si = read(ReplacementKind::Random);
    assert_eq!(si.sets(), 128);
    assert_eq!(si.basis, (0..7).collect::<Vec<u32>>());
    assert_eq!(si.ways, 16, "{si:?}");
    assert_eq!(si.entries(), 2048);
    assert_eq!(si.ways_fillers, 0);
    // The previous reading, the middle of the first misses and the half-way point.
    let old = (si.ways + si.half_way).div_ceil(2);
    assert!(
        old >= 18,
        "the half-way point {} would not have moved it",
        si.half_way
    );
    assert!(!si.ways_read(), "{si:?}");
}

#[test]
fn lru_reads_16_ways() {
    let si = read(ReplacementKind::Lru);
    assert_eq!(si.sets(), 128);
    assert_eq!(si.ways, 16, "{si:?}");
    assert!(si.ways_read(), "{si:?}");
}

/// A busy phase as the Intel VM shows them (docs/probe.md: for minutes the one-set curves miss
/// from 13-14 pages of 16 ways in every set): 384 foreign pages (3 a set) touched on every pass,
/// untimed, as a sibling hardware thread's working set would be. Criteria (written before the
/// run): the sets and the XOR-7 function are still read exactly (the pair tests' J of 11 fits
/// the 13 ways the chain gets; the previous J, 3/4 of step 1's higher capacity, did not on the
/// host), the first misses are a lower bound of the 16 ways, and the reading is not called
/// certain, its bracket (first misses to half-way point) holding the 16.
#[test]
fn a_foreign_working_set_in_every_set_leaves_the_function_and_a_bracket_of_the_ways() {
    let si = read_with(
        ReplacementKind::Random,
        Noise {
            per_pass: 384,
            ..Noise::VM
        },
    );
    assert_eq!(si.sets(), 128, "{si:?}");
    assert_eq!(si.basis, (0..7).collect::<Vec<u32>>(), "{si:?}");
    let xor7: Vec<u64> = (0..7).map(|j| (1u64 << j) | (1u64 << (j + 7))).collect();
    assert_eq!(si.xor_masks(), xor7, "{si:?}");
    assert!(si.ways_lo <= 16 && si.ways <= 16, "{si:?}");
    assert!(si.ways.max(si.half_way) >= 16, "{si:?}");
    assert!(!si.ways_read(), "{si:?}");
    assert!(si.sets_and_ways_read, "{si:?}");
}
