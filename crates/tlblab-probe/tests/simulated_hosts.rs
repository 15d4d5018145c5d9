//! The probe's data-TLB estimators on the simulator's own machines: every preset, timed by the
//! simulator with noise and intruders (`measure::simulated`), must be read back. This is how the
//! probe is tested on hosts nobody here has (issue 49).
//!
//! Criteria (written before the first run, docs/probe.md "Simulated hosts"):
//! * L1 DTLB entries within 5% of the preset's first data level, not "unclear";
//! * with a second level (data or unified): the reading within [0.95 L2, 1.05 (L2 + L1)] — the
//!   engine's levels are not inclusive, so a random chain can keep L1 + L2 pages between them
//!   (Zen 5's host reads of 4100-4190 for 4096 behind 96 are the same effect);
//! * without one (SA-1100, gem5's A7): no second level, or one the probe calls "unclear";
//! * every organisation line the probe does not call "unclear" names the preset's geometry.
//! * the L2's replacement line (`analysis::replacement`; 2026-11-26, written before its first run
//!   on the presets), where the probe gives one and does not call it "unclear", names the
//!   second data level's policy: "LRU-like" for LRU, tree-PLRU and FIFO, "random-like" for
//!   random replacement.

use tlblab_core::replacement::ReplacementKind;
use tlblab_core::tlb::TlbKind;
use tlblab_probe::analysis::knee::Confidence;
use tlblab_probe::measure::simulated::Noise;
use tlblab_probe::probe::{run_simulated, Measured, ProbeOptions, ProbeReport};

fn line<'a>(r: &'a ProbeReport, name: &str) -> Option<&'a Measured> {
    r.summary.iter().find(|m| m.name == name)
}

/// Data-path levels of a preset: (entries, ways, sets), first level first.
fn data_levels(m: &tlblab_core::machine::MachineConfig) -> Vec<(usize, usize, usize)> {
    let mut v: Vec<_> = m
        .tlbs
        .iter()
        .filter(|t| t.kind != TlbKind::Instr)
        .map(|t| (t.level, t.entries, t.ways(), t.sets()))
        .collect();
    v.sort();
    v.into_iter().map(|(_, e, w, s)| (e, w, s)).collect()
}

fn organisation_text(entries: usize, ways: usize, sets: usize) -> String {
    if ways >= entries {
        "fully associative".into()
    } else {
        format!("{ways}-way, {sets} sets")
    }
}

pub fn check(preset: &str, seed: u64) -> Vec<String> {
    check_machine(
        preset,
        &tlblab_config::load_machine(preset).unwrap(),
        seed,
        2,
    )
    .0
}

/// The second data level's replacement policy, as the replacement line names it.
fn policy_text(m: &tlblab_core::machine::MachineConfig) -> Option<&'static str> {
    let mut data: Vec<_> = m.tlbs.iter().filter(|t| t.kind != TlbKind::Instr).collect();
    data.sort_by_key(|t| t.level);
    data.get(1).map(|t| match t.replacement {
        ReplacementKind::Random => "random-like",
        _ => "LRU-like",
    })
}

pub fn check_machine(
    preset: &str,
    m: &tlblab_core::machine::MachineConfig,
    seed: u64,
    reps: usize,
) -> (Vec<String>, ProbeReport) {
    // `--quick`, with fewer windows per point and trials than on a host: the simulated windows
    // are cheaper to disturb less often, and the test must stay within seconds.
    let o = ProbeOptions {
        quick: true,
        seed,
        reps: Some(reps),
        trials: Some(3),
        ..Default::default()
    };
    let r = run_simulated(m, Noise::VM, &o).unwrap();
    let levels = data_levels(m);
    let mut bad = Vec::new();
    let (e1, w1, s1) = levels[0];
    match line(&r, "L1 DTLB entries (4K)") {
        Some(l) => {
            let v = l.value.unwrap_or(0.0);
            if (v - e1 as f64).abs() > 0.05 * e1 as f64 || l.confidence == Confidence::Unclear {
                bad.push(format!(
                    "{preset}: L1 read {v} [{:?}] for {e1}",
                    l.confidence
                ));
            }
        }
        None => bad.push(format!("{preset}: no L1 reading ({:?})", r.errors)),
    }
    let l2 = line(&r, "L2 DTLB entries (4K)");
    match (levels.get(1), l2) {
        (Some(&(e2, _, _)), Some(l)) => {
            let v = l.value.unwrap_or(0.0);
            if v < 0.95 * e2 as f64 || v > 1.05 * (e2 + e1) as f64 {
                bad.push(format!(
                    "{preset}: L2 read {v} [{:?}] for {e2} behind {e1}",
                    l.confidence
                ));
            }
        }
        (Some(&(e2, _, _)), None) => bad.push(format!("{preset}: no L2 reading for {e2}")),
        (None, Some(l)) if l.confidence != Confidence::Unclear => bad.push(format!(
            "{preset}: a confident L2 reading {:?} [{:?}] on a machine with one data level",
            l.value, l.confidence
        )),
        (None, _) => {}
    }
    let orgs = [
        ("L1 DTLB associativity", Some((e1, w1, s1))),
        ("L2 DTLB organisation", levels.get(1).copied()),
    ];
    for (name, geometry) in orgs {
        let Some(l) = line(&r, name) else { continue };
        if l.confidence == Confidence::Unclear || l.note.starts_with("unclear") {
            continue;
        }
        let right =
            geometry.is_some_and(|(e, w, s)| l.note.starts_with(&organisation_text(e, w, s)));
        if !right {
            bad.push(format!(
                "{preset}: {name} reads '{}' [{:?}] for {:?}",
                l.note, l.confidence, geometry
            ));
        }
    }
    if let Some(l) = line(&r, "L2 DTLB replacement (random chain)") {
        let want = policy_text(m);
        if l.confidence != Confidence::Unclear && want.is_none_or(|w| !l.note.starts_with(w)) {
            bad.push(format!(
                "{preset}: the replacement line reads '{}' [{:?}] for {want:?}",
                l.note, l.confidence
            ));
        }
    }
    (bad, r)
}

/// One test per preset, so that the test threads share the work.
macro_rules! preset_tests {
    ($($name:ident => $preset:literal),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                // TLBLAB_SIM_SEED=N runs the same criteria on another seed (docs/probe.md).
                let seed = std::env::var("TLBLAB_SIM_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(1);
                let bad = check($preset, seed);
                assert!(bad.is_empty(), "{}", bad.join("\n"));
            }
        )*
        #[test]
        fn every_preset_has_its_test() {
            let mut tested = vec![$($preset),*];
            let mut all = tlblab_config::preset_names();
            tested.sort();
            all.sort();
            assert_eq!(tested, all);
        }
    };
}

preset_tests! {
    champsim_is_read_back => "champsim",
    cortex_a7_is_read_back => "cortex-a7",
    cortex_a9_is_read_back => "cortex-a9",
    gem5_a7_is_read_back => "gem5-a7",
    sa1100_is_read_back => "sa1100",
    xeon_e5_2650_is_read_back => "xeon-e5-2650",
    zen3_is_read_back => "zen3",
    zen3_virt_is_read_back => "zen3-virt",
}

/// No preset's second level is both random and wide enough for the replacement line (the
/// Cortex-A9's is 2-way): the zen3-virt preset (nested walks) with a random L2 DTLB is read as
/// random-like, and every other criterion holds on it too. Not plain zen3: its walks cost ≈ 2 ns
/// over an L2 hit, and under random replacement's gradual rise the probe found no second
/// data-TLB knee at all there in seeds 2 and 3 (seed 1 read it), which the criteria count as a
/// failure; zen3-virt's nested walks cost ≈ 4 ns (seeds 1-3: 2048, 2176, 2048, random-like
/// with shares 0.41, 0.41, 0.44).
#[test]
fn a_random_second_level_is_read_random_like() {
    let mut m = tlblab_config::load_machine("zen3-virt").unwrap();
    for t in m.tlbs.iter_mut() {
        if t.kind != TlbKind::Instr && t.level == 2 {
            t.replacement = ReplacementKind::Random;
        }
    }
    let seed = std::env::var("TLBLAB_SIM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let (bad, r) = check_machine("zen3-virt with a random L2", &m, seed, 2);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    let l = line(&r, "L2 DTLB replacement (random chain)").expect("a replacement line");
    assert!(l.note.starts_with("random-like"), "{}", l.note);
}

#[test]
fn the_simulated_host_is_deterministic_for_a_seed() {
    let m = tlblab_config::load_machine("xeon-e5-2650").unwrap();
    let o = ProbeOptions {
        quick: true,
        seed: 7,
        reps: Some(1),
        trials: Some(1),
        sections: vec!["dtlb".into()],
        ..Default::default()
    };
    let a = run_simulated(&m, Noise::VM, &o).unwrap();
    let b = run_simulated(&m, Noise::VM, &o).unwrap();
    assert_eq!(
        serde_json::to_string(&a.summary).unwrap(),
        serde_json::to_string(&b.summary).unwrap()
    );
}

#[test]
fn sections_that_need_the_host_are_refused_by_name() {
    let m = tlblab_config::load_machine("zen3").unwrap();
    let o = ProbeOptions {
        sections: vec!["itlb".into()],
        ..Default::default()
    };
    let e = run_simulated(&m, Noise::VM, &o).unwrap_err();
    assert!(e.contains("'itlb'"), "{e}");
}
