//! What every section's summary lines (`ProbeReport::summary`) share: the "… entries" line of a
//! measured capacity, its headline number in words with its confidence, its spread and CPUID's
//! declared value beside it. Each section's own lines are in its file (`sections/`); why each
//! reading is taken over another is said at the function that takes it.

use super::*;
use crate::analysis::index::ConflictGeometry;
use crate::analysis::knee::Confidence;
use crate::cpuid;
use crate::measure::conflict::Arbitration;
use crate::measure::curve::Capacity;

/// The "… entries" line of a capacity `c`; for the L2 DTLB, `arb` is what the conflict sets say
/// of it ([`Arbitration`]): they decide between a rise before the ramp and the ramp, and
/// confirm or contradict any other reading.
pub(super) fn cap_measured(
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

impl Measured {
    /// A yes/no/unclear verdict's line (`measure::extras::Verdict`): "unclear" is its confidence,
    /// any other answer is read with high confidence; no CPUID value stands beside it.
    pub(super) fn verdict(
        name: String,
        value: Option<f64>,
        unit: &str,
        spread: Option<(f64, f64)>,
        answer: &str,
        note: String,
    ) -> Measured {
        Measured {
            name,
            value,
            unit: unit.into(),
            spread,
            confidence: if answer == "unclear" {
                Confidence::Unclear
            } else {
                Confidence::High
            },
            cpuid: None,
            disagrees: false,
            note,
        }
    }
}
