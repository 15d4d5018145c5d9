//! Step three: how far a capacity or a latency can be trusted, from repeated bisections and
//! the knee's signal-to-noise ratio (`Confidence`, `trial_consensus`).

use serde::{Deserialize, Serialize};

/// How far a reported number can be trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    High,
    Medium,
    /// The noise was too high to give a number: the value beside it is a best guess at most.
    Unclear,
}

impl Confidence {
    pub fn as_str(&self) -> &'static str {
        match self {
            Confidence::High => "high",
            Confidence::Medium => "medium",
            Confidence::Unclear => "unclear",
        }
    }

    pub fn min(self, other: Confidence) -> Confidence {
        use Confidence::*;
        match (self, other) {
            (Unclear, _) | (_, Unclear) => Unclear,
            (Medium, _) | (_, Medium) => Medium,
            _ => High,
        }
    }
}

/// Confidence in a capacity from independent repetitions of the bisection (each on fresh memory)
/// and the knee's signal-to-noise ratio: high when every repetition lands within 2% of the median
/// and the knee stands ≥ 4× out of the noise; medium within 5% and ≥ 2×; otherwise unclear.
pub fn capacity_confidence(caps: &[usize], snr: f64, ambiguous_fraction: f64) -> Confidence {
    // `ambiguous_fraction`: share of decisions that fell close to the threshold (0 when unused).
    if caps.is_empty() {
        return Confidence::Unclear;
    }
    let xs: Vec<f64> = caps.iter().map(|&c| c as f64).collect();
    let med = crate::stats::median(&xs);
    let worst = xs
        .iter()
        .map(|x| (x - med).abs() / med.max(1.0))
        .fold(0.0, f64::max);
    if worst <= 0.02 && snr >= 4.0 && ambiguous_fraction <= 0.25 && caps.len() >= 2 {
        Confidence::High
    } else if worst <= 0.05 && snr >= 2.0 && ambiguous_fraction <= 0.5 {
        Confidence::Medium
    } else {
        Confidence::Unclear
    }
}

/// What independent trials of one capacity agree on ([`trial_consensus`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Consensus {
    /// The upper median of the trials' own estimates.
    pub estimate: usize,
    /// Trials within 3% of `estimate`.
    pub agreeing: usize,
    pub trials: usize,
    pub confidence: Confidence,
}

impl Consensus {
    /// Enough trials agree that more would not change the answer: at least 3, and at least three
    /// quarters of them.
    pub fn settled(&self) -> bool {
        self.agreeing >= 3 && 4 * self.agreeing >= 3 * self.trials
    }
}

/// The capacity several independent trials agree on: the upper median of their own estimates
/// (for an even count the upper of the middle two), with the share of trials within 3% of it.
///
/// Why not the estimate read off the trials' envelopes pooled: interference on a shared VM comes
/// in phases, and a trial that falls into a busy phase overflows early (on the development VM
/// 3350-3900 pages for a 4096-entry level, in runs of a few seconds). Pooling takes, per N, the
/// lowest of the trials; below a disturbed trial's early overflow its envelope can be lower than a
/// clean trial's creep, so the pooled envelope becomes a staircase whose first step is read as
/// the knee. On 80 consecutive trials recorded on that VM, the pooled envelope of 4 consecutive
/// trials was outside 5% of the level 7 times in 77; the median of the same trials' own
/// estimates never was (3936-4149). Disturbances lower a trial's estimate far more often than
/// they raise it, hence the upper median.
///
/// Confidence: high when at least 3 trials, three quarters of them within 3%, and the knee
/// stands ≥ 4× out of the noise; medium when a majority is within 3% (snr ≥ 2); else unclear
/// (the trials do not agree: the value is the best reading, not a measurement to rely on).
pub fn trial_consensus(estimates: &[usize], snr: f64) -> Option<Consensus> {
    if estimates.is_empty() {
        return None;
    }
    let mut v = estimates.to_vec();
    v.sort_unstable();
    let estimate = v[v.len() / 2];
    let agreeing = v
        .iter()
        .filter(|&&x| (x as f64 - estimate as f64).abs() <= 0.03 * estimate.max(1) as f64)
        .count();
    let trials = v.len();
    let confidence = if trials >= 3 && 4 * agreeing >= 3 * trials && snr >= 4.0 {
        Confidence::High
    } else if 2 * agreeing > trials && snr >= 2.0 {
        Confidence::Medium
    } else {
        Confidence::Unclear
    };
    Some(Consensus {
        estimate,
        agreeing,
        trials,
        confidence,
    })
}

/// Confidence in a latency from its repetitions: high when the IQR is ≤ 10% of the median,
/// medium ≤ 25%, else unclear.
pub fn latency_confidence(s: &crate::stats::Summary) -> Confidence {
    let r = s.rel_spread();
    if s.n == 0 || !s.median.is_finite() {
        Confidence::Unclear
    } else if r <= 0.10 {
        Confidence::High
    } else if r <= 0.25 {
        Confidence::Medium
    } else {
        Confidence::Unclear
    }
}
