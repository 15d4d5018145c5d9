//! The orchestration of `tlblab probe`: which measurements run, with what budget, in what order,
//! and the result structure (serialised to JSON; the Python side prints it for people).
//!
//! Budget: `quick` ≤ 20 s, full ≤ 2 min on 2 shared cores. Every number is a median over
//! interleaved repetitions; each capacity is refined on fresh memory `trials` times.

use crate::analysis::index::{ConflictGeometry, Indexing};
use crate::analysis::knee::{latency_confidence, Confidence};
use crate::analysis::replacement::{replacement_shape, ReplacementShape, Shape};
use crate::cpuid::{self, Assoc, CpuidInfo};
use crate::measure::bench::{Bench, Host};
use crate::measure::conflict::{arbitrate_with, Arbitration};
use crate::measure::curve::{capacity_of, grid, sweep, Capacity, SweepRow};
use crate::measure::extras::{self, Verdict};
use crate::measure::levels::{data_levels, stride_sweep, Budget, StrideSweep};
use crate::measure::walk::{walk_latencies, WalkLatency};
use crate::stats::Summary;
use crate::sys;
use serde::{Deserialize, Serialize};

/// Every section, in run order.
pub const SECTIONS: [&str; 9] = [
    "dtlb", "l1_assoc", "l2_index", "latency", "itlb", "prefetch", "thp", "llc", "survival",
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
    pub walks: Vec<WalkLatency>,
    pub itlb_sweep: Vec<SweepRow>,
    /// Random-order chase over N consecutive pages (only with `validation_curve`).
    pub random_sweep: Vec<SweepRow>,
    pub itlb_levels: Vec<Capacity>,
    pub prefetch: Vec<(String, Verdict)>,
    pub thp: Option<Verdict>,
    pub llc_shared: Option<Verdict>,
    pub migration_survival: Option<Verdict>,
    pub context_switch_survival: Option<Verdict>,
    pub errors: Vec<String>,
}

fn budget(o: &ProbeOptions) -> Budget {
    let (reps, window_ms, trials) = if o.quick { (3, 0.5, 4) } else { (5, 1.0, 5) };
    // The capacity scans take the fastest of many 0.1 ms windows per N (see
    // `SweepRow::floor`): 0.1 ms still covers several passes over a 4096-page chain after its
    // warm-up, and is short enough that a fair share of windows escape every intruder. Quick
    // runs with 15 windows per N twice read the L2 DTLB near −5% (a staircase envelope); 21
    // still keeps `--quick` ≈ 11-13 s.
    let scan_reps = if o.quick { 21 } else { 31 };
    Budget {
        reps: o.reps.unwrap_or(reps).max(1),
        window_ns: (o.window_ms.unwrap_or(window_ms).max(0.05) * 1e6) as u64,
        scan_reps: o.reps.map(|r| r.max(1) * 3).unwrap_or(scan_reps),
        scan_window_ns: 100_000,
        max_trials: o
            .trials
            .map(|t| t.max(1))
            .unwrap_or(if o.quick { 8 } else { 12 }),
        stride_reps: o
            .reps
            .map(|r| r.max(1) * 2)
            .unwrap_or(if o.quick { 9 } else { 15 }),
        stride_trials: o
            .trials
            .map(|t| t.clamp(1, 2))
            .unwrap_or(if o.quick { 1 } else { 2 }),
        trials: o.trials.unwrap_or(trials).max(1),
        seed: o.seed,
        deadline: None,
    }
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

/// The "… entries" line of a capacity `c`; for the L2 DTLB, `arb` is what the conflict sets say
/// of it ([`Arbitration`]): they decide between a rise before the ramp and the ramp, and
/// confirm or contradict any other reading.
fn cap_measured(
    name: &str,
    c: &Capacity,
    declared: Option<&cpuid::DeclaredTlb>,
    note: &str,
    arb: Option<&Arbitration>,
) -> Measured {
    let mut value = c.entries as f64;
    let mut spread = (
        c.trials.iter().copied().min().unwrap_or(0) as f64,
        c.trials.iter().copied().max().unwrap_or(0) as f64,
    );
    let mut confidence = c.confidence;
    let geometry = |g: &ConflictGeometry| {
        format!(
            "{} sets × {} ways = {} (capacity × stride {:.0}..{:.0} at strides up to the sets; \
             capacity against the sets the targets spread over: {} ways and {:.1} pages beyond \
             them)",
            g.sets,
            g.ways,
            g.entries(),
            g.lo,
            g.hi,
            g.fitted_ways,
            g.beyond
        )
    };
    let rise = format!(
        "the trials read a smaller, sharper rise at {} before the ramp of the pooled envelope \
         ({}..{}), which carries most of the step",
        c.entries, c.onset, c.full_miss
    );
    let prefix = match (arb, c.before_ramp) {
        (
            Some(Arbitration::Ramp {
                geometry: g,
                half_way,
            }),
            before_ramp,
        ) => {
            value = g.entries() as f64;
            spread = (g.lo, g.hi);
            confidence = Confidence::Medium;
            let read = if before_ramp {
                rise.clone()
            } else {
                format!(
                    "the trials read a smaller rise at {} (the ramp fitted to the pooled \
                     envelope: {}..{})",
                    c.entries, c.onset, c.full_miss
                )
            };
            let half = half_way.map_or(String::new(), |n| {
                format!("; the pooled envelope is half-way up its step at {n} pages")
            });
            format!(
                "from the conflict sets: {}{half}; {read}: there the level starts losing pages \
                 of a random chain over every set before it is full; ",
                geometry(g)
            )
        }
        (Some(Arbitration::Agrees(g)), true) => {
            confidence = Confidence::Medium;
            format!(
                "{rise}; the conflict sets' {} agree with the rise; ",
                geometry(g)
            )
        }
        (Some(Arbitration::Agrees(g)), false) => {
            let e = g.entries() as f64;
            if (e - c.entries as f64).abs() > 0.02 * e {
                // Within 10% but not 2%: the level's structure is the conflict sets' (sets
                // exact, ways read two ways and chosen by the envelope), the trials' reading a
                // random chain's over every set, which a neighbour moves. On the Zen 4 host
                // (3072 = 128 × 24) one run's trials read 2387-2418 in its first measurement
                // and 2839-2935 in its second, seconds later: 2873 voted, 6.5% low.
                value = e;
                spread = (g.lo.min(c.entries as f64), g.hi.max(c.entries as f64));
                confidence = confidence.min(Confidence::Medium);
                format!(
                    "from the conflict sets: {}; the trials read {} ({:+.1}%: a random chain over \
                     every set loses pages before the level is full here); ",
                    geometry(g),
                    c.entries,
                    100.0 * (c.entries as f64 / e - 1.0)
                )
            } else {
                format!("the conflict sets agree: {}; ", geometry(g))
            }
        }
        (Some(Arbitration::Disagrees(g)), before_ramp) => {
            confidence = confidence.min(Confidence::Medium);
            let what = if before_ramp {
                "neither the rise nor the ramp"
            } else {
                "more than 10% off"
            };
            format!(
                "{}the conflict sets' {} is {what}; ",
                if before_ramp {
                    format!("unclear: {rise}; ")
                } else {
                    String::new()
                },
                geometry(g)
            )
        }
        (None, true) => {
            format!("unclear: {rise}; timing alone does not tell which is the overflow; ")
        }
        (None, false) => String::new(),
    };
    let (cpuid_s, disagrees) = match declared {
        Some(d) => (
            Some(format!("{} entries, {}", d.entries, d.assoc)),
            (value - d.entries as f64).abs() > 0.05 * d.entries as f64,
        ),
        None => (None, false),
    };
    Measured {
        name: name.into(),
        value: Some(value),
        unit: "entries".into(),
        spread: Some(spread),
        confidence,
        cpuid: cpuid_s,
        disagrees,
        note: format!(
            "{prefix}{note}{} of {} trials within 3% of the estimate (their upper median; each trial: \
             where the steepest rise of its fastest windows meets the line before it); the \
             trials' pooled envelope leaves the plateau after {}, is half-way at {}, ramp ends \
             at {} pages",
            c.agreeing,
            c.trials.len(),
            c.onset,
            c.midpoint,
            c.full_miss
        ),
    }
}

/// The L2 DTLB's two lines from its capacity `c` and, when it ran, the conflict sweep: the
/// entries line with what the conflict sets say of it ([`arbitrate`]), and the organisation
/// inferred again with the entries that line reports (its ways are entries / sets). A set index
/// measured by conflict pairs ([`set_index_lines`]) takes precedence.
fn l2_lines(r: &mut ProbeReport, c: &Capacity, note: &str) {
    if let Some(si) = r
        .l2_set_index
        .clone()
        .filter(|si| si.confidence != Confidence::Unclear || si.sets_and_ways_read)
    {
        set_index_lines(r, c, note, &si);
        return;
    }
    let one_set = r.l2_one_set.as_ref().and_then(|o| o.read());
    let arb = r
        .l2_strides
        .as_ref()
        .and_then(|ss| arbitrate_with(c, ss, one_set));
    let note = match (&r.l2_one_set, &arb) {
        (Some(o), Some(a)) => {
            let g = a.geometry();
            format!(
                "one-set curves: first misses after {:?} targets (the highest two share: {}; \
                 half of the accesses from {}){}; {note}",
                o.firsts,
                o.ways,
                o.half_way + 1,
                if o.read().is_none() {
                    ", most curves disagree: not taken"
                } else if g.ways == o.ways {
                    ", the ways taken"
                } else {
                    ", outside the conflict sets' readings: not taken"
                }
            )
        }
        _ => note.to_string(),
    };
    let note = note.as_str();
    let sets = arb.as_ref().map(|a| a.geometry().sets);
    let declared = r.cpuid.data_tlb(2);
    let mut m = cap_measured("L2 DTLB entries (4K)", c, declared, note, arb.as_ref());
    let entries = m.value.map_or(c.entries, |v| v.round() as usize);
    if let Some(ss) = r.l2_strides.as_mut() {
        ss.indexing = crate::measure::conflict::infer(ss, entries);
        // The conflict sets test the reading: a set-indexed level of these entries behind the L1
        // must overflow near entries / stride at each stride, halving up to its set count. When
        // they support no organisation, no such level was seen, and the stride-1 rise may be
        // something else: on the simulated SA-1100 (one 32-entry TLB, no second level) the
        // walks' page-table lines overflowing its 8 KiB data cache made a rise at 119 or 342
        // pages that the trials agreed on ("medium"), while the conflict sets read no step or
        // capacities that do not halve. The reading is then unclear, never confident.
        if let Indexing::Unclear { reason } = &ss.indexing {
            m.confidence = Confidence::Unclear;
            m.note = format!(
                "unclear: the conflict sets do not confirm a set-indexed level of these entries \
                 ({reason}); {}",
                m.note
            );
        }
        let org = l2_organisation(ss, r.cpuid.data_tlb(2));
        replace_or_push(&mut r.summary, m);
        replace_or_push(&mut r.summary, org);
    } else {
        replace_or_push(&mut r.summary, m);
    }
    replacement_line(r, c, sets);
}

/// The L2 DTLB's lines when its set-index function was measured (`measure::set_index`): the
/// entries are its sets × ways, the organisation the function.
///
/// Why the structure and not the stride-1 rise: on the Intel VM a random chain over every set
/// starts losing pages at ≈ 1500-1700 of the STLB's 2048 (its envelope climbs to a walk by
/// ≈ 2450, half-way at ≈ 2050-2150), though the function spreads consecutive pages evenly (an
/// aligned block of 128 consecutive pages fills the 128 sets once: no set holds more than its
/// 16 ways below ≈ 1920-2048 pages); so the chain shares the level with entries it does not own
/// (the host's other hardware thread, the hypervisor) or the replacement evicts before a set is
/// full. The trials' tangent then read 1847-2155 (−10% to +5%) over 20 runs of the previous
/// session. The conflict pairs touch 2J ≤ 1.5 W pages of one set at a time and read the sets
/// (128) exactly, the ways to a bracket (`SetIndex::ways_lo`..`ways_hi`). The stride-1 reading
/// is kept in the note.
fn set_index_lines(
    r: &mut ProbeReport,
    c: &Capacity,
    note: &str,
    si: &crate::measure::set_index::SetIndex,
) {
    let declared = r.cpuid.data_tlb(2);
    let mut m = cap_measured("L2 DTLB entries (4K)", c, declared, note, None);
    let e = si.entries();
    let (lo, hi) = (si.sets() * si.ways_lo, si.sets() * si.ways_hi);
    let reading = c.entries;
    let agree = (reading as f64 - e as f64).abs() <= 0.05 * e as f64;
    // The ways are the highest first misses two of five one-set curves share (entries the chain
    // does not own only bring them earlier): a reading when most curves read it, else not.
    let ways_read = si.ways_read();
    let all = si.ways_agree == si.ways_firsts.len();
    // Not read: the spread runs to the half-way point too (W for LRU, above it for a
    // replacement that keeps part of a set past its ways; disturbed curves read low).
    let hi = if ways_read {
        hi
    } else {
        hi.max(si.sets() * si.half_way)
    };
    // The function unclear (its folds fail the capacities' check) but the sets and the ways
    // read: the entries stand, never confidently.
    let function_unclear = si.confidence == Confidence::Unclear;
    m.value = Some(e as f64);
    m.spread = Some((lo.min(e) as f64, hi.max(e) as f64));
    m.confidence = if !ways_read || function_unclear {
        Confidence::Unclear
    } else if agree && all {
        // Two methods agree: at least medium.
        match c.confidence {
            Confidence::High => Confidence::High,
            _ => Confidence::Medium,
        }
    } else {
        Confidence::Medium
    };
    if let Some(d) = declared {
        m.disagrees = (e as f64 - d.entries as f64).abs() > 0.05 * d.entries as f64;
    }
    let curves = if si.ways_lo < si.ways_hi {
        format!(
            "{} of {} one-set curves miss first at n = {} ({:?} over the {})",
            si.ways_agree,
            si.ways_firsts.len(),
            si.ways + 1,
            si.ways_firsts.iter().map(|f| f + 1).collect::<Vec<_>>(),
            si.ways_firsts.len()
        )
    } else {
        format!(
            "{} one-set curves miss first at n = {}",
            si.ways_firsts.len(),
            si.ways + 1
        )
    };
    let half = if si.half_way > si.ways {
        format!(
            ", half of the accesses only from n = {} (the replacement keeps part of a set past \
             its ways: not LRU)",
            si.half_way + 1
        )
    } else {
        String::new()
    };
    let ways = if ways_read {
        format!("{} ways ({curves}{half})", si.ways)
    } else {
        format!(
            "at least {} ways ({curves}{half}; entries the chain does not own only bring the \
             first misses earlier, and a replacement that keeps part of a set past its ways \
             moves the half-way point later: entries {e}..{hi})",
            si.ways
        )
    };
    m.note = format!(
        "{}from the set index: {} sets × {ways} = {e} (conflict pairs{}); the random chain's \
         trials read {reading}{}; {}",
        match (ways_read, function_unclear) {
            (_, true) => format!(
                "unclear: the sets and the ways are read, the set-index function is not ({}); ",
                si.unclear.as_deref().unwrap_or("")
            ),
            (false, false) => "unclear: ".into(),
            (true, false) => String::new(),
        },
        si.sets(),
        if si.ways_fillers == 0 {
            ", the one-set curves without fillers: their targets overflow the L1's set"
        } else {
            ""
        },
        if agree {
            " (agrees within 5%)".to_string()
        } else {
            format!(
                " ({:+.0}%: a random chain over every set loses pages before the level is \
                 full here)",
                100.0 * (reading as f64 / e as f64 - 1.0)
            )
        },
        m.note
    );
    let caps = si
        .stride_capacities
        .iter()
        .map(|(k, c)| format!("2^{k}: {}", c.map_or("-".into(), |x| x.to_string())))
        .collect::<Vec<_>>()
        .join(", ");
    let text = format!(
        "{} (conflict pairs; pages 2^{} apart share a set; conflict capacity at strides {caps})",
        si.describe(),
        si.top_log2
    );
    // Ways not read (three curves, three values): the sets and the function are measured, the
    // ways are not.
    let text = match (ways_read, function_unclear) {
        (_, true) => format!(
            "unclear (the function: {}): {text}",
            si.unclear.as_deref().unwrap_or("")
        ),
        (false, false) => format!("unclear (the ways): {text}"),
        (true, false) => text,
    };
    let disagrees = declared.is_some_and(|d| match d.assoc {
        Assoc::Full => true,
        Assoc::Ways { ways } => ways as usize != si.ways,
        Assoc::Range { lo, hi } => !(lo as usize..=hi as usize).contains(&si.ways),
        _ => false,
    });
    let org = Measured::organisation(
        "L2 DTLB organisation",
        si.confidence
            .min(if r.quick || !all {
                Confidence::Medium
            } else {
                Confidence::High
            })
            .min(if ways_read {
                Confidence::High
            } else {
                Confidence::Unclear
            }),
        declared,
        disagrees,
        text,
    );
    replace_or_push(&mut r.summary, m);
    replace_or_push(&mut r.summary, org);
    replacement_line(r, c, Some(si.sets()));
}

const REPLACEMENT: &str = "L2 DTLB replacement (random chain)";

/// The "L2 DTLB replacement (random chain)" line and `ProbeReport::l2_replacement`: how the
/// stride-1 trials' pooled envelope rises past their rise `c.entries`, against the level's
/// `sets` (`analysis::replacement`). Without the sets, or an envelope that cannot tell, there is
/// no line (an earlier measurement's is removed).
///
/// Why the stride-1 envelope and not only the one-set curves: it is the chain over every set
/// that `--validate` and programs with large footprints run, and on the Zen 4 host it keeps fewer
/// pages a set (19 of 24: the trials' rise at 2401 of 3072) than one set alone does (24), with a
/// rise past that as gradual as random replacement's (docs/probe.md).
fn replacement_line(r: &mut ProbeReport, c: &Capacity, sets: Option<usize>) {
    r.summary.retain(|m| m.name != REPLACEMENT);
    r.l2_replacement = None;
    let Some(sets) = sets else { return };
    let Some(shape) = replacement_shape(&c.envelope, c.entries, sets) else {
        return;
    };
    let confidence = match shape.shape {
        Shape::Unclear => Confidence::Unclear,
        _ if r.quick => Confidence::Medium,
        Shape::LruLike if shape.share >= 0.85 => Confidence::High,
        Shape::RandomLike if shape.share <= 0.35 => Confidence::High,
        _ => Confidence::Medium,
    };
    let note = format!(
        "{}: by {} pages (the rise at {} plus 1.5 set counts) the stride-1 envelope took {:.2} of \
         its rise from {:.2} ns to {:.2} ns at {} pages (LRU, tree-PLRU and FIFO take all of it; \
         random replacement of 12-24 ways 0.3-0.45 on the probe's model); a random chain over \
         every set keeps {} pages, {:.1} a set of {sets}",
        shape.shape.as_str(),
        shape.at,
        c.entries,
        shape.share,
        shape.plateau,
        shape.top_ns,
        shape.top_at,
        c.entries,
        c.entries as f64 / sets as f64
    );
    r.summary.push(Measured {
        name: REPLACEMENT.into(),
        value: Some(shape.share),
        unit: String::new(),
        spread: None,
        confidence,
        cpuid: None,
        disagrees: false,
        note,
    });
    r.l2_replacement = Some(L2Replacement {
        shape,
        sets,
        chain_pages: c.entries,
    });
}

/// Replaces the summary line of the same name, or appends `m`.
fn replace_or_push(summary: &mut Vec<Measured>, m: Measured) {
    match summary.iter_mut().find(|x| x.name == m.name) {
        Some(old) => *old = m,
        None => summary.push(m),
    }
}

/// The "L2 DTLB organisation" line from the conflict sweep.
fn l2_organisation(ss: &StrideSweep, declared: Option<&cpuid::DeclaredTlb>) -> Measured {
    let (text, conf) = indexing_text(&ss.indexing);
    let disagrees = declared.is_some_and(|d| !assoc_matches(&ss.indexing, &d.assoc));
    // A stride read by one trial only (quick) or by disagreeing trials caps the verdict.
    let conf = ss.confidences.iter().fold(conf, |a, b| a.min(*b));
    // Trials that disagree at some stride: the reading is printed, but as unclear.
    let text = match ss
        .confidences
        .iter()
        .position(|c| *c == Confidence::Unclear)
    {
        Some(i) if conf == Confidence::Unclear && !text.starts_with("unclear") => format!(
            "unclear: the trials disagree at a stride of {} pages; their vote reads as {text}",
            1u32 << ss.capacities[i].log2_stride
        ),
        _ => text,
    };
    let text = format!(
        "{text} (conflict sets past the L1; capacity at strides 2^4..: {})",
        ss.capacities
            .iter()
            .map(|c| c.capacity.map_or("-".into(), |x| format!("{x:.0}")))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Measured::organisation("L2 DTLB organisation", conf, declared, disagrees, text)
}

fn lat_measured(name: &str, s: &Summary, note: &str) -> Measured {
    Measured {
        name: name.into(),
        value: Some(s.median),
        unit: "ns".into(),
        spread: Some((s.q1, s.q3)),
        confidence: latency_confidence(s),
        cpuid: None,
        disagrees: false,
        note: note.into(),
    }
}

fn indexing_text(ix: &Indexing) -> (String, Confidence) {
    match ix {
        Indexing::FullyAssociative { entries, max_log2_stride } => {
            (format!("fully associative ({entries} entries at every stride up to 2^{max_log2_stride} pages)"), Confidence::High)
        }
        Indexing::Linear { sets, ways, index_bits } => (format!("{ways}-way, {sets} sets, set = VPN bits {index_bits:?}"), Confidence::High),
        Indexing::LinearAtLeast { min_sets, max_ways, index_bits, floor } => (
            format!("set-indexed by VPN bits {index_bits:?} (and possibly more): ≥ {min_sets} sets, ≤ {max_ways} ways; smaller capacities hide behind the {floor}-entry level in front"),
            Confidence::Medium,
        ),
        Indexing::XorFolded { sets, ways, high_bits, .. } => (format!("{ways}-way, {sets} sets, XOR-folded index (high bits {high_bits:?} fold onto the low bits)"), Confidence::Medium),
        Indexing::Unclear { reason } => (format!("unclear: {reason}"), Confidence::Unclear),
    }
}

fn assoc_matches(ix: &Indexing, a: &Assoc) -> bool {
    match (ix, a) {
        (Indexing::FullyAssociative { .. }, Assoc::Full) => true,
        (
            Indexing::Linear { ways, .. } | Indexing::XorFolded { ways, .. },
            Assoc::Ways { ways: w },
        ) => *ways as u32 == *w,
        (
            Indexing::Linear { ways, .. } | Indexing::XorFolded { ways, .. },
            Assoc::Range { lo, hi },
        ) => (*lo..=*hi).contains(&(*ways as u32)),
        (Indexing::LinearAtLeast { max_ways, .. }, Assoc::Range { lo, .. }) => {
            *max_ways as u32 >= *lo
        }
        (Indexing::LinearAtLeast { max_ways, .. }, Assoc::Ways { ways }) => {
            *max_ways as u32 >= *ways
        }
        (Indexing::Unclear { .. }, _) => true,
        _ => false,
    }
}

/// Runs the probe. Errors are user errors (bad options); measurement failures are collected in
/// `errors` and the rest of the report still comes back.
pub fn run(o: &ProbeOptions) -> Result<ProbeReport, String> {
    validate(o)?;
    let t_start = std::time::Instant::now();
    let allowed = sys::allowed_cpus();
    let cpu = o.cpu.unwrap_or(allowed[0]);
    let other = o
        .other_cpu
        .or_else(|| allowed.iter().copied().find(|&c| c != cpu));
    // Time budget: the expensive sections run first; a later section is skipped (and named in
    // `errors`) once the run has used its budget, so a heavily loaded machine cannot stretch the
    // full run far past 2 minutes (or --quick past 20 s).
    let budget_s = if o.quick { 15.0 } else { 95.0 };
    let skipped = std::cell::RefCell::new(Vec::<String>::new());
    let want = |s: &str| {
        let asked = o.sections.is_empty() || o.sections.iter().any(|x| x == s);
        if asked && t_start.elapsed().as_secs_f64() > budget_s {
            skipped.borrow_mut().push(s.to_string());
            return false;
        }
        asked
    };
    let b = budget(o);
    let mut r = ProbeReport {
        version: env!("CARGO_PKG_VERSION").into(),
        quick: o.quick,
        cpu,
        other_cpu: other,
        ..Default::default()
    };
    r.cpuid = cpuid::read();
    r.loadavg_before = sys::loadavg1();
    sys::pin_to(cpu).map_err(|e| format!("cannot pin to CPU {cpu}: {e}"))?;
    r.priority_raised = o.raise_priority && sys::raise_priority();
    sys::reset_window_counts();

    let (l1, l2) = data_tlb_levels(&mut Host, o, b, Some(t_start), &want, &mut r);
    if o.validation_curve {
        let max_n = if o.quick { 6144 } else { 8192 };
        let ns = grid(16, max_n, if o.quick { 3 } else { 4 });
        match crate::measure::dtlb::DataChains::new(
            max_n + 64,
            crate::chase::Layout::PerPage { stride: 1 },
            crate::chase::Order::Random(b.seed),
            sys::Thp::Never,
        ) {
            Ok(mut inst) => {
                r.random_sweep = sweep(&mut inst, &ns, b.reps, b.window_ns, b.seed ^ 0x7a)
            }
            Err(e) => r
                .errors
                .push(format!("cannot map the validation chains: {e}")),
        }
    }
    r.started
        .push(("latency".into(), t_start.elapsed().as_secs_f64()));
    // 4. Latencies.
    if want("latency") {
        let rows = &r.dtlb_sweep;
        if let Some(c1) = &l1 {
            let hits: Vec<f64> = rows
                .iter()
                .filter(|x| x.n < c1.knee.lo)
                .map(|x| x.test.median)
                .collect();
            r.summary.push(lat_measured(
                "load, L1 DTLB hit (L1D hit)",
                &Summary::of(&hits),
                "the L1 DTLB lookup is part of the load-to-use latency",
            ));
            if let Some(c2) = &l2 {
                // Well inside the plateau: the median window near the L2's capacity is
                // disturbed by intruders (see `SweepRow::floor`).
                let lo = (c1.full_miss.max(c1.entries) as f64 * 1.3) as usize;
                let hi = (c2.onset as f64 * 0.3).max(lo as f64 * 2.0) as usize;
                let pen: Vec<f64> = rows
                    .iter()
                    .filter(|x| x.n >= lo && x.n <= hi)
                    .map(|x| x.excess.median)
                    .collect();
                r.summary.push(lat_measured(
                    "L1 DTLB miss, L2 DTLB hit (extra)",
                    &Summary::of(&pen),
                    &format!("excess over the control for {lo}..{hi} pages"),
                ));
            }
        }
        r.walks = walk_latencies(
            b.reps.max(3),
            b.window_ns * 2,
            !o.quick,
            l1.as_ref().map(|c| c.entries),
        );
        for w in &r.walks {
            r.summary.push(Measured {
                confidence: w.confidence,
                ..lat_measured(
                    &format!("walk, leaf PTEs in {} (extra)", w.pte_in),
                    &w.excess_ns,
                    &format!(
                        "{} pages, {} KiB of PTE lines; L1+L2 DTLB miss + nested walk",
                        w.pages,
                        w.pte_bytes >> 10
                    ),
                )
            });
        }
    }
    r.started
        .push(("itlb".into(), t_start.elapsed().as_secs_f64()));
    // 5. Instruction TLB.
    #[cfg(target_arch = "x86_64")]
    if want("itlb") {
        use crate::measure::itlb::CodeChains;
        let max_n = if o.quick { 2048 } else { 4096 };
        match CodeChains::new(max_n + 64) {
            Ok(mut inst) => {
                let ns = grid(8, max_n, if o.quick { 3 } else { 4 });
                let control = inst.control();
                let choice = inst.choice().to_string();
                // Two independent coarse sweeps: jumps run ahead of execution under branch
                // prediction, so an ITLB miss costs a fraction of a ns per jump and other
                // front-end structures (op cache, BTB) add steps of their own. A knee counts only
                // if both sweeps show it; sizes also get at most "medium" confidence.
                let rows = sweep(&mut inst, &ns, b.reps, b.window_ns, b.seed ^ 0x11b);
                let rows2 = sweep(&mut inst, &ns, b.reps, b.window_ns, b.seed ^ 0x22c);
                drop(inst);
                let p = crate::analysis::knee::KneeParams {
                    min_abs_jump_ns: 0.1,
                    ..Default::default()
                };
                let k1 = crate::measure::curve::knees_with(&rows, &p);
                let k2 = crate::measure::curve::knees_with(&rows2, &p);
                for (i, k) in k1.iter().take(2).enumerate() {
                    let confirmed = k2.get(i).is_some_and(|o| o.lo <= k.hi && k.lo <= o.hi);
                    let hi = ((k.hi as f64) * 1.15) as usize + 8;
                    let mut fresh = || -> Box<dyn crate::measure::curve::Instrument> {
                        Box::new(
                            CodeChains::with_control(hi, control).expect("mmap for code chains"),
                        )
                    };
                    let mut c = capacity_of(
                        k,
                        b.trials.min(2),
                        b.trials.min(2),
                        b.reps,
                        b.window_ns,
                        b.seed,
                        None,
                        &[],
                        &mut fresh,
                    );
                    // Experimental: on the development VM the knees moved between runs (64-80 and
                    // 260-870 pages against a documented 64 and 512) even when both sweeps agreed,
                    // so ITLB sizes are always reported as "unclear" (docs/probe.md).
                    c.confidence = Confidence::Unclear;
                    let mut m = cap_measured(
                        &format!("L{} ITLB entries (4K)", i + 1),
                        &c,
                        r.cpuid.instruction_tlb(i as u8 + 1),
                        &format!("experimental, {choice}; "),
                        None,
                    );
                    if !confirmed {
                        m.note = format!("a second sweep did not show this knee; {}", m.note);
                    }
                    r.summary.push(m);
                    r.itlb_levels.push(c);
                }
                if r.itlb_levels.is_empty() {
                    r.errors.push("no instruction-TLB knee found".into());
                }
                r.itlb_sweep = rows;
            }
            Err(e) => r
                .errors
                .push(format!("cannot map code pages for the ITLB test: {e}")),
        }
    }
    r.started
        .push(("prefetch".into(), t_start.elapsed().as_secs_f64()));
    // 6. Prefetch.
    if want("prefetch") {
        let n = l2.as_ref().map(|c| (c.onset / 2).max(256)).unwrap_or(512);
        for (k, v) in extras::prefetch_fills_tlb(n, if o.quick { 15 } else { 31 }) {
            r.summary.push(Measured {
                name: format!("{} fills the TLB", k.name()),
                value: v.fraction,
                unit: "fraction of a load's effect".into(),
                spread: None,
                confidence: if v.answer == "unclear" {
                    Confidence::Unclear
                } else {
                    Confidence::High
                },
                cpuid: None,
                disagrees: false,
                note: v.answer.clone(),
            });
            r.prefetch.push((k.name().into(), v));
        }
    }
    r.started
        .push(("thp".into(), t_start.elapsed().as_secs_f64()));
    // 7. THP reach.
    if want("thp") {
        let n = l1.as_ref().map(|c| (c.entries * 4).min(448)).unwrap_or(256);
        let v = extras::thp_reach(n, if o.quick { 5 } else { 9 }, b.window_ns);
        r.summary.push(Measured {
            name: "THP gives more TLB reach".into(),
            value: v.fraction,
            unit: "fraction of the 4K excess removed".into(),
            spread: None,
            confidence: if v.answer == "unclear" {
                Confidence::Unclear
            } else {
                Confidence::High
            },
            cpuid: None,
            disagrees: false,
            note: format!("{}: {}", v.answer, v.note),
        });
        r.thp = Some(v);
    }
    r.started
        .push(("llc, survival".into(), t_start.elapsed().as_secs_f64()));
    // 8. LLC sharing and 9. survival need a second CPU.
    let (want_llc, want_survival) = (want("llc"), want("survival"));
    if let Some(oc) = other {
        if want_llc {
            let v = extras::llc_sharing(cpu, oc, if o.quick { 5 } else { 11 });
            let _ = sys::pin_to(cpu);
            r.summary.push(Measured {
                name: format!("CPUs {cpu} and {oc} share a last-level cache now"),
                value: v.timings.get(1).map(|t| t.1.median),
                unit: "ns per line read by the other CPU".into(),
                spread: v.timings.get(1).map(|t| (t.1.q1, t.1.q3)),
                confidence: if v.answer == "unclear" {
                    Confidence::Unclear
                } else {
                    Confidence::High
                },
                cpuid: None,
                disagrees: false,
                note: v.answer.clone(),
            });
            r.llc_shared = Some(v);
        }
        if want_survival {
            let n = l2.as_ref().map(|c| (c.onset / 2).max(256)).unwrap_or(512);
            let (m, c) = extras::survival(cpu, oc, n, if o.quick { 15 } else { 31 });
            let _ = sys::pin_to(cpu);
            for (name, v) in [
                ("TLB entries survive a migration round trip", &m),
                ("TLB entries survive a context switch", &c),
            ] {
                r.summary.push(Measured {
                    name: name.into(),
                    value: v.fraction,
                    unit: "fraction surviving".into(),
                    spread: None,
                    confidence: if v.answer == "unclear" {
                        Confidence::Unclear
                    } else {
                        Confidence::High
                    },
                    cpuid: None,
                    disagrees: false,
                    note: v.answer.clone(),
                });
            }
            r.migration_survival = Some(m);
            r.context_switch_survival = Some(c);
        }
    } else if want_llc || want_survival {
        r.errors
            .push("only one CPU available: skipped the LLC-sharing and migration tests".into());
    }
    if want("dtlb") {
        l2_again(&mut Host, o.quick, b, Some(t_start), budget_s, &mut r);
    }
    let mut sk = skipped.into_inner();
    sk.dedup();
    if !sk.is_empty() {
        r.errors.push(format!(
            "skipped to stay within the {budget_s:.0} s budget: {}",
            sk.join(", ")
        ));
    }
    if r.priority_raised {
        sys::normal_priority();
    }
    r.windows = sys::window_counts();
    r.loadavg_after = sys::loadavg1();
    r.seconds = t_start.elapsed().as_secs_f64();
    Ok(r)
}

/// The smallest chain the capacity sweep times: below the smallest first-level data TLB of any
/// preset (the Cortex-A7's 10-entry micro TLB), so that level shows a knee too.
pub const MIN_PAGES: usize = 4;

/// Filler pages for the conflict sets behind a first level of `l1` entries: 2.5× its entries, so
/// every access misses it ([`crate::measure::conflict::FILLERS`] = 160 behind the 64- and 96-entry
/// levels of Zen 3-5), at least 24, at most 160 (few enough to take a small share of the L2).
pub fn fillers_for(l1: usize) -> usize {
    (l1 * 5)
        .div_ceil(2)
        .clamp(24, crate::measure::conflict::FILLERS)
}

/// Seconds since `clock` (0 on a simulated host, which has no wall-clock budget).
fn since(clock: Option<std::time::Instant>) -> f64 {
    clock.map_or(0.0, |t| t.elapsed().as_secs_f64())
}

/// Sections 1-3: the data-TLB levels (entries), the L1's associativity, the L2's organisation by
/// conflict sets, on `bench` (this host or a simulated one). Returns the first two levels.
/// `clock`: the run's start on a host (deadlines and budgets apply); `None` on a simulated host,
/// whose run must not depend on the wall clock (deterministic for a seed).
fn data_tlb_levels(
    bench: &mut dyn Bench,
    o: &ProbeOptions,
    b: Budget,
    clock: Option<std::time::Instant>,
    want: &dyn Fn(&str) -> bool,
    r: &mut ProbeReport,
) -> (Option<Capacity>, Option<Capacity>) {
    r.started.push(("dtlb".into(), since(clock)));
    // 1. Data-TLB levels.
    let mut l1 = None;
    let mut l2 = None;
    if want("dtlb") || want("l1_assoc") || want("l2_index") || want("latency") {
        // Extra trials of the first measurement (beyond `trials`) stop after a few seconds: the
        // second measurement at the end of the run gets the rest of the budget.
        let first = Budget {
            deadline: clock
                .map(|t| t + std::time::Duration::from_secs(if o.quick { 6 } else { 30 })),
            ..b
        };
        let lv = data_levels(
            bench,
            MIN_PAGES,
            if o.quick { 6144 } else { 8192 },
            4,
            2,
            first,
        );
        l1 = lv.levels.first().cloned();
        l2 = lv.levels.get(1).cloned();
        r.dtlb_sweep = lv.sweep;
        r.dtlb_levels = lv.levels;
        if let Some(c) = &l1 {
            r.summary.push(cap_measured(
                "L1 DTLB entries (4K)",
                c,
                r.cpuid.data_tlb(1),
                "",
                None,
            ));
        } else {
            r.errors
                .push("no first data-TLB knee found between 16 and 8192 pages".into());
        }
        if let Some(c) = &l2 {
            r.summary.push(cap_measured(
                "L2 DTLB entries (4K)",
                c,
                r.cpuid.data_tlb(2),
                "",
                None,
            ));
        } else {
            r.errors.push("no second data-TLB knee found".into());
        }
    }
    r.started.push(("l1_assoc".into(), since(clock)));
    // 2. L1 associativity and index bits.
    if want("l1_assoc") {
        if let Some(c) = &l1 {
            let step = c.fit.map(|f| f.high - f.low);
            let ss = stride_sweep(
                bench,
                0,
                c.entries,
                if o.quick { 6 } else { 9 },
                None,
                step,
                b,
            );
            let (text, conf) = indexing_text(&ss.indexing);
            let declared = r.cpuid.data_tlb(1);
            let disagrees = declared.is_some_and(|d| !assoc_matches(&ss.indexing, &d.assoc));
            let conf = ss
                .confidences
                .iter()
                .fold(conf, |a, b| a.min(*b).max_medium_if(a));
            r.summary.push(Measured::organisation(
                "L1 DTLB associativity",
                conf,
                declared,
                disagrees,
                text,
            ));
            r.l1_strides = Some(ss);
        }
    }
    r.started.push(("l2_index".into(), since(clock)));
    // 3. L2 sets and ways: conflict sets at page strides 2^4 … 2^9, with filler pages that keep
    // the L1 missing (`measure::conflict`), so small per-stride capacities do not hide behind it.
    if want("l2_index") {
        if let (Some(c1), Some(c2)) = (&l1, &l2) {
            let ss = crate::measure::conflict::conflict_sweep(
                bench,
                c2.entries,
                fillers_for(c1.entries),
                4,
                9,
                b.scan_reps,
                b.scan_window_ns,
                if o.quick { 1 } else { 3 },
                b.seed,
            );
            r.l2_strides = Some(ss);
            // With the L2's second measurement to come (`l2_again`), the set index is measured
            // after it: on a simulated host its draws then leave the measurements before it as
            // they were.
            if !want("dtlb") {
                l2_set_index(bench, o.quick, b, r);
            }
            l2_lines(r, c2, "");
        }
    }
    (l1, l2)
}

/// The L2 DTLB's set-index function (`measure::set_index`), when the conflict sweep ran and found
/// no low-bits index (a hashed index, or a disturbed sweep), or found one with trials that
/// disagree.
fn l2_set_index(bench: &mut dyn Bench, quick: bool, b: Budget, r: &mut ProbeReport) {
    let (Some(ss), Some(c1), Some(c2)) = (
        r.l2_strides.as_ref(),
        r.dtlb_levels.first(),
        r.dtlb_levels.get(1),
    ) else {
        return;
    };
    // A confident low-bits reading stands; one whose trials disagree at some stride does not
    // (on the Intel VM two full runs' three trials per stride voted for 256 sets × 6-7 ways,
    // "unclear", from capacities that did not halve cleanly).
    // And the conflict sweep is trusted only behind a fully associative L1: its odd filler pages
    // leave the targets' L1 sets to them when the L1 is set-indexed, so up to its ways of targets
    // hit there. On the Intel VM (L1 16 sets × 6 ways by VPN bits 0-3) a `--quick` sweep read
    // 79, 36, 16, 9, 5, 5 at strides 16..512: "6-way, 256 sets", the L1's ways.
    let ix = crate::measure::conflict::infer(ss, c2.entries);
    let l1_fa = r
        .l1_strides
        .as_ref()
        .is_some_and(|s| matches!(s.indexing, Indexing::FullyAssociative { .. }));
    let confident = l1_fa && ss.confidences.iter().all(|c| *c != Confidence::Unclear);
    // The conflict sets' own geometry (a halving run, then a plateau) is a low-bits index too,
    // whatever the stride-1 reading: on the Zen 4 host the trials read ≈ 2400 for 128 × 24, the
    // plateau (26-27) was then more than 25% over "the ways" 2400 / 128, `infer` said unclear,
    // and the pair tests ran (and read an implausible function) in every such run.
    let geometry = crate::analysis::index::geometry_from_conflicts(&ss.capacities, 0.25);
    let low_bits = match (&ix, geometry) {
        (Indexing::Linear { sets, ways, .. }, _) => Some((*sets, *ways)),
        (_, Some(g)) => Some((g.sets, g.ways)),
        _ => None,
    };
    if (confident && (low_bits.is_some() || matches!(ix, Indexing::FullyAssociative { .. })))
        || r.l2_set_index.is_some()
    {
        // A low-bits index: its ways from one-set curves too (`arbitrate_with`), once a run.
        if let (Some((sets, ways)), true, None) = (low_bits, confident, &r.l2_one_set) {
            r.l2_one_set = crate::measure::set_index::low_bits_ways(
                bench,
                fillers_for(c1.entries),
                sets,
                ways,
                index_budget(quick, b, 0x1e7),
            );
        }
        return;
    }
    // The first level's sets and ways when its index is low page-number bits (the Intel VM's
    // 16 × 6): the set index's one-set curves then overflow it with their own targets.
    let l1 = r.l1_strides.as_ref().and_then(|s| match s.indexing {
        Indexing::Linear { sets, ways, .. } => Some((sets, ways)),
        _ => None,
    });
    r.l2_set_index = crate::measure::set_index::measure_set_index(
        bench,
        fillers_for(c1.entries),
        c2.entries,
        l1,
        index_budget(quick, b, 0x1d5),
    );
}

/// The set index's budget (`measure::set_index`): windows per point and per pair test.
fn index_budget(quick: bool, b: Budget, salt: u64) -> crate::measure::set_index::IndexBudget {
    crate::measure::set_index::IndexBudget {
        reps: if quick { 7 } else { 9 },
        pair_reps: if quick { 5 } else { 7 },
        window_ns: b.scan_window_ns,
        seed: b.seed ^ salt,
    }
}

/// Section 10: the L2 DTLB's capacity once more, at the end of the run, pooled with the first
/// measurement (`merge_capacities`): the interference comes in phases of seconds.
fn l2_again(
    bench: &mut dyn Bench,
    quick: bool,
    b: Budget,
    clock: Option<std::time::Instant>,
    budget_s: f64,
    r: &mut ProbeReport,
) {
    r.started.push(("dtlb (L2 again)".into(), since(clock)));
    // 10. The L2 DTLB's capacity once more, at the end of the run, pooled with the first
    // measurement (`merge_capacities`): the interference comes in phases of seconds.
    {
        if let Some(c2) = r.dtlb_levels.get(1).cloned() {
            let hi = ((c2.knee.hi as f64) * 1.4).ceil() as usize + 8;
            let mut t = 200u64;
            let mut fresh = || -> Box<dyn crate::measure::curve::Instrument> {
                t += 1;
                bench.data(hi, 1, b.seed.wrapping_add(t))
            };
            // A run that got here late (a loaded machine) takes 2 trials, not `trials`, so that
            // `--quick` stays under 20 s: a trial of the L2 costs ≈ 1-1.5 s.
            let late = clock.is_some() && since(clock) > budget_s - 3.5;
            let again = capacity_of(
                &c2.knee,
                if late { b.trials.min(2) } else { b.trials },
                b.max_trials,
                b.scan_reps,
                b.scan_window_ns,
                b.seed ^ 0xa6a1,
                clock.map(|t| t + std::time::Duration::from_secs_f64(budget_s + 1.0)),
                &c2.trials,
                &mut fresh,
            );
            let merged = crate::measure::curve::merge_capacities(&c2, &again);
            r.dtlb_levels[1] = merged.clone();
            l2_set_index(bench, quick, b, r);
            l2_lines(
                r,
                &merged,
                &format!(
                    "measured twice, {} then {}, the trials of both taken together; ",
                    c2.entries, again.entries
                ),
            );
            r.dtlb_levels[1] = merged;
        }
    }
}

/// The data-TLB sections of the probe (1-3 and the L2's second measurement) on a simulated host:
/// `machine` timed by the simulator, disturbed by `noise` (`measure::simulated`). What a run on a
/// host with that machine's TLBs would read; deterministic for `o.seed`. The report's CPUID
/// fields declare the machine's own TLBs, so every line says whether the probe recovered them.
pub fn run_simulated(
    machine: &tlblab_core::machine::MachineConfig,
    noise: crate::measure::simulated::Noise,
    o: &ProbeOptions,
) -> Result<ProbeReport, String> {
    for s in &o.sections {
        if !["dtlb", "l1_assoc", "l2_index"].contains(&s.as_str()) {
            return Err(format!(
                "probe section '{s}' cannot run on a simulated host: expected dtlb, l1_assoc or l2_index"
            ));
        }
    }
    if o.reps == Some(0) || o.trials == Some(0) {
        return Err("reps and trials must be at least 1".into());
    }
    let mut host = crate::measure::simulated::SimulatedHost::new(machine, noise, o.seed)?;
    let b = budget(o);
    let mut r = ProbeReport {
        version: env!("CARGO_PKG_VERSION").into(),
        quick: o.quick,
        cpuid: declared_by(machine),
        ..Default::default()
    };
    let want = |s: &str| o.sections.is_empty() || o.sections.iter().any(|x| x == s);
    data_tlb_levels(&mut host, o, b, None, &want, &mut r);
    if want("dtlb") {
        l2_again(&mut host, o.quick, b, None, 0.0, &mut r);
    }
    if let Some(e) = host.error() {
        return Err(format!("simulated host '{}': {e}", machine.name));
    }
    r.windows = (host.loads(), 0);
    Ok(r)
}

/// The TLBs `m` has, as CPUID would declare them (brand: the machine's name).
fn declared_by(m: &tlblab_core::machine::MachineConfig) -> CpuidInfo {
    use tlblab_core::tlb::TlbKind;
    CpuidInfo {
        vendor: "tlblab".into(),
        brand: format!("simulated {}", m.name),
        tlbs: m
            .tlbs
            .iter()
            .map(|t| cpuid::DeclaredTlb {
                level: t.level,
                kind: match t.kind {
                    TlbKind::Data => "data",
                    TlbKind::Instr => "instruction",
                    _ => "unified",
                }
                .into(),
                page_sizes: vec!["4K".into()],
                entries: t.entries as u32,
                assoc: if t.ways() >= t.entries {
                    Assoc::Full
                } else {
                    Assoc::Ways {
                        ways: t.ways() as u32,
                    }
                },
            })
            .collect(),
        ..Default::default()
    }
}

trait MaxMedium {
    fn max_medium_if(self, base: Confidence) -> Confidence;
}

impl MaxMedium for Confidence {
    /// Stride points that were themselves only "medium" lower the verdict to medium at most, never
    /// to unclear: the inference tolerates a noisy stride.
    fn max_medium_if(self, base: Confidence) -> Confidence {
        if self == Confidence::Unclear && base != Confidence::Unclear {
            Confidence::Medium
        } else {
            self
        }
    }
}

#[cfg(test)]
mod tests {
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
