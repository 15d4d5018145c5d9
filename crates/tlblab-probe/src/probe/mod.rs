//! The orchestration of `tlblab probe`: which measurements run, with what budget, in what order,
//! and the result structure (serialised to JSON; the Python side prints it for people).
//!
//! Budget: `quick` ≤ 20 s, full ≤ 2 min on 2 shared cores. Every number is a median over
//! interleaved repetitions; each capacity is refined on fresh memory `trials` times.
//!
//! Files: the options and the report (this file), `budget`, `run` (a run: the sections in order,
//! within the budget), `sections/` (one file per measured section, with its summary lines) and
//! `summary` (what the sections' summary lines share).

mod budget;
mod run;
mod sections;
mod summary;

use budget::*;
pub use budget::{fillers_for, MIN_PAGES};
pub use run::{run, run_simulated};
use summary::*;

use crate::analysis::knee::Confidence;
use crate::analysis::replacement::ReplacementShape;
use crate::cpuid::{self, CpuidInfo};
use crate::measure::curve::{Capacity, SweepRow};
use crate::measure::extras::Verdict;
use crate::measure::levels::StrideSweep;
use crate::measure::walk::WalkLatency;
use crate::sys;
use serde::{Deserialize, Serialize};

/// Every section, in run order.
pub const SECTIONS: [&str; 11] = [
    "dtlb", "l1_assoc", "l2_index", "latency", "caches", "mlp", "itlb", "prefetch", "thp", "llc",
    "survival",
];

/// What to run (JSON from Python; every field optional).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProbeOptions {
    pub quick: bool,
    pub seed: u64,
    /// CPU to measure on (default: the first allowed CPU).
    pub cpu: Option<usize>,
    /// Second CPU for the sharing/migration tests (default: the next allowed CPU).
    pub other_cpu: Option<usize>,
    /// Sections to run (default: all); see [`SECTIONS`].
    pub sections: Vec<String>,
    /// Override: repetitions per point, ms per timing window, refinement trials.
    pub reps: Option<usize>,
    pub window_ms: Option<f64>,
    pub trials: Option<usize>,
    /// Raise this thread's priority (nice −10) while measuring, when allowed.
    pub raise_priority: bool,
    /// Also sweep a random-order chase (the simulator's `chase` workload) for `--validate`.
    pub validation_curve: bool,
}

impl Default for ProbeOptions {
    fn default() -> Self {
        ProbeOptions {
            quick: false,
            seed: 1,
            cpu: None,
            other_cpu: None,
            sections: Vec::new(),
            reps: None,
            window_ms: None,
            trials: None,
            raise_priority: true,
            validation_curve: false,
        }
    }
}

/// A measured number with its spread and confidence, and what CPUID declares beside it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Measured {
    pub name: String,
    pub value: Option<f64>,
    pub unit: String,
    /// Spread: (low, high) over trials or the IQR of repetitions.
    pub spread: Option<(f64, f64)>,
    pub confidence: Confidence,
    pub cpuid: Option<String>,
    /// True when the CPUID value is known and disagrees with the measured one.
    pub disagrees: bool,
    pub note: String,
}

impl Measured {
    /// A finding without a number (associativity, set index): the verdict is in `note`, beside
    /// CPUID's declared associativity.
    fn organisation(
        name: &str,
        confidence: Confidence,
        declared: Option<&cpuid::DeclaredTlb>,
        disagrees: bool,
        note: String,
    ) -> Measured {
        Measured {
            name: name.into(),
            value: None,
            unit: String::new(),
            spread: None,
            confidence,
            cpuid: declared.map(|d| d.assoc.to_string()),
            disagrees,
            note,
        }
    }
}

/// The L2 DTLB's replacement reading, and what a random chain over every set keeps of the level:
/// `chain_pages` (the stride-1 trials' rise) over `sets` sets.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct L2Replacement {
    pub shape: ReplacementShape,
    pub sets: usize,
    pub chain_pages: usize,
}

/// The whole result.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ProbeReport {
    pub version: String,
    pub quick: bool,
    pub cpu: usize,
    pub other_cpu: Option<usize>,
    pub cpuid: CpuidInfo,
    pub loadavg_before: Option<f64>,
    pub loadavg_after: Option<f64>,
    /// Timing windows run / re-run because the thread was switched out.
    pub windows: (u64, u64),
    pub priority_raised: bool,
    pub seconds: f64,
    /// (section, seconds since the start of the run) when each section began: where the time
    /// went.
    #[serde(default)]
    pub started: Vec<(String, f64)>,
    /// The headline numbers, in print order.
    pub summary: Vec<Measured>,
    pub dtlb_sweep: Vec<SweepRow>,
    pub dtlb_levels: Vec<Capacity>,
    pub l1_strides: Option<StrideSweep>,
    pub l2_strides: Option<StrideSweep>,
    /// The L2 DTLB's set-index function by conflict pairs (`measure::set_index`), measured when
    /// the conflict sweep finds no low-bits index.
    #[serde(default)]
    pub l2_set_index: Option<crate::measure::set_index::SetIndex>,
    /// The L2 DTLB's replacement as the stride-1 chain sees it (`analysis::replacement`), with
    /// the set count it was read against; None when the level's sets are not measured or the
    /// envelope cannot tell.
    #[serde(default)]
    pub l2_replacement: Option<L2Replacement>,
    /// The L2 DTLB's ways by one-set curves when its index is the low page-number bits
    /// (`measure::set_index::low_bits_ways`).
    #[serde(default)]
    pub l2_one_set: Option<crate::measure::set_index::OneSetWays>,
    /// What a `--quick` run on a host measured once more because its first L2 readings left it
    /// unsettled (`analysis::second_look`), each with what it read, in order.
    #[serde(default)]
    pub l2_second_look: Vec<String>,
    pub walks: Vec<WalkLatency>,
    /// The windowed chase's latency per footprint (`measure::memory`): the L3's and memory's.
    #[serde(default)]
    pub memory_chase: Vec<crate::measure::memory::MemoryPoint>,
    pub itlb_sweep: Vec<SweepRow>,
    /// Random-order chase over N consecutive pages (only with `validation_curve`).
    pub random_sweep: Vec<SweepRow>,
    pub itlb_levels: Vec<Capacity>,
    pub prefetch: Vec<(String, Verdict)>,
    pub thp: Option<Verdict>,
    pub llc_shared: Option<Verdict>,
    pub migration_survival: Option<Verdict>,
    pub context_switch_survival: Option<Verdict>,
    /// Data misses and page walks in flight (`measure::mlp`).
    #[serde(default)]
    pub mlp: Option<crate::measure::mlp::Mlp>,
    pub errors: Vec<String>,
}

/// Checks options; the message names the bad field.
pub fn validate(o: &ProbeOptions) -> Result<(), String> {
    for s in &o.sections {
        if !SECTIONS.contains(&s.as_str()) {
            return Err(format!(
                "unknown probe section '{s}': expected one of {}",
                SECTIONS.join(", ")
            ));
        }
    }
    let allowed = sys::allowed_cpus();
    for (name, c) in [("cpu", o.cpu), ("other_cpu", o.other_cpu)] {
        if let Some(c) = c {
            if !allowed.contains(&c) {
                return Err(format!(
                    "{name} {c} is not a CPU this process may run on (allowed: {allowed:?})"
                ));
            }
        }
    }
    if o.reps == Some(0) || o.trials == Some(0) {
        return Err("reps and trials must be at least 1".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::sections::l2_lines;
    use super::*;
    use crate::measure::curve::Capacity;

    /// The Intel VM's reading at 08:16 on 2026-11-26 (a `--quick` run in a busy phase): the sets
    /// (bits 0-6) and the one-set curves read, the folds of bits 10 and 11 wrong, so the function
    /// failed the capacities' check.
    fn busy_phase_index(sets_and_ways_read: bool) -> crate::measure::set_index::SetIndex {
        serde_json::from_value(serde_json::json!({
            "ways": 13, "ways_lo": 12, "ways_hi": 13, "ways_agree": 4, "half_way": 17,
            "ways_firsts": [13, 13, 12, 13, 13], "ways_fillers": 0, "top_log2": 14,
            "basis": [0, 1, 2, 3, 4, 5, 6],
            "folds": [[7, 1], [8, 2], [9, 4], [10, 1], [11, 0], [12, 32], [13, 64]],
            "stride_capacities": [[12, null], [13, 31], [14, 16], [15, 19]],
            "ways_curve": [], "confidence": "unclear",
            "unclear": "the pair tests' function does not predict the stride capacities (2^15: 19 read, 13 predicted)",
            "sets_and_ways_read": sets_and_ways_read
        }))
        .unwrap()
    }

    fn line<'a>(r: &'a ProbeReport, name: &str) -> &'a Measured {
        r.summary.iter().find(|m| m.name == name).unwrap()
    }

    #[test]
    fn given_an_unclear_function_but_read_sets_and_ways_then_the_entries_are_their_product_and_unclear(
    ) {
        let mut r = ProbeReport {
            l2_set_index: Some(busy_phase_index(true)),
            ..Default::default()
        };
        l2_lines(&mut r, &Capacity::example(1731, 1650, 2400, false), "");
        let m = line(&r, "L2 DTLB entries (4K)");
        assert_eq!(m.value, Some(128.0 * 13.0));
        assert_eq!(m.confidence, Confidence::Unclear);
        let (lo, hi) = m.spread.unwrap();
        assert!(lo <= 1664.0 && hi >= 128.0 * 17.0, "{:?}", m.spread);
        assert!(
            m.note.starts_with(
                "unclear: the sets and the ways are read, the set-index function is not"
            ),
            "{}",
            m.note
        );
        let org = line(&r, "L2 DTLB organisation");
        assert_eq!(org.confidence, Confidence::Unclear);
        assert!(
            org.note.starts_with("unclear (the function"),
            "{}",
            org.note
        );
    }

    #[test]
    fn given_an_unclear_index_whose_sets_and_ways_are_not_read_then_the_stride_1_reading_stands() {
        let mut r = ProbeReport {
            l2_set_index: Some(busy_phase_index(false)),
            ..Default::default()
        };
        l2_lines(&mut r, &Capacity::example(1731, 1650, 2400, false), "");
        let m = line(&r, "L2 DTLB entries (4K)");
        assert_eq!(m.value, Some(1731.0));
        assert!(!m.note.contains("from the set index"), "{}", m.note);
    }

    #[test]
    fn given_trials_within_10_but_not_2_percent_of_the_conflict_sets_then_the_conflict_sets() {
        // The Zen 4 host's run of 2026-11-26 13:55 (seed 6): conflict capacities 194, 103, 52,
        // 27, 26, 26 at strides 16..512 (128 × 24, CPUID's 3072), the trials of two measurements
        // voting 2873 (2387-2418 in the first, 2839-2935 in the second), the pooled envelope
        // half-way at 3094.
        let ss = StrideSweep::conflict_example(&[194.0, 103.0, 52.0, 27.0, 26.0, 26.0]);
        let mut r = ProbeReport {
            l2_strides: Some(ss),
            ..Default::default()
        };
        let c = Capacity {
            midpoint: 3094,
            ..Capacity::example(2873, 2442, 3747, false)
        };
        l2_lines(&mut r, &c, "");
        let m = line(&r, "L2 DTLB entries (4K)");
        assert_eq!(m.value, Some(3072.0), "{}", m.note);
        assert!(m.note.contains("the trials read 2873 (-6.5%"), "{}", m.note);
        assert!(
            line(&r, "L2 DTLB organisation")
                .note
                .starts_with("24-way, 128 sets"),
            "{}",
            line(&r, "L2 DTLB organisation").note
        );
        // Within 2% the trials' reading stands (Zen 5: 4104 read, 256 × 16 = 4096).
        let mut r = ProbeReport {
            l2_strides: r.l2_strides.clone(),
            ..Default::default()
        };
        l2_lines(&mut r, &Capacity::example(3100, 3000, 3200, false), "");
        assert_eq!(line(&r, "L2 DTLB entries (4K)").value, Some(3100.0));
    }
}
