//! Knee detection on latency-versus-working-set curves, and bisection of a knee to one page.
//!
//! Input: for each N (pages in the chase), the ns/access of the page-per-element chase (`test`),
//! of the packed control (`control`), and the spread of their paired difference (`noise`). The
//! *excess* `test − control` is the translation cost: it is flat while the N pages fit a TLB level
//! and steps up when they no longer do. Data-cache knees (L1D at 512 lines, L2 at 8192 lines) show
//! in both chains and cancel (the control's purpose: the chase module).
//!
//! A knee is a rise of the excess across at most two grid steps that is large against both the
//! measured noise and the test latency before it, and that persists at the next grid point. Slow
//! rises (the walk getting dearer as page-table lines spill out of the caches) are not knees.

use serde::{Deserialize, Serialize};

mod confidence;
mod fit;
#[cfg(test)]
pub(crate) mod synth;
#[cfg(test)]
mod tests;

pub use confidence::*;
pub use fit::*;

/// One N of a sweep, reduced to medians.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    pub n: usize,
    /// Median ns/access of the one-element-per-page chase.
    pub test: f64,
    /// Median ns/access of the packed control chase.
    pub control: f64,
    /// Spread (IQR) of the paired difference `test − control` over the repetitions.
    pub noise: f64,
}

impl CurvePoint {
    pub fn excess(&self) -> f64 {
        self.test - self.control
    }
}

/// Thresholds of [`find_knees`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct KneeParams {
    /// Smallest rise of the excess across the knee, relative to the test latency before it.
    pub min_rel_jump: f64,
    /// Smallest rise in ns, whatever the latencies.
    pub min_abs_jump_ns: f64,
    /// The rise must exceed this many times the local noise (the median IQR of the paired
    /// differences near the knee; the median of 5 repetitions has ≈0.4 IQR of standard error).
    pub noise_mult: f64,
    /// A single grid step counts towards a knee when it rises by at least this fraction.
    pub min_rel_step: f64,
    /// Largest number of grid steps a knee may spread over.
    pub max_steps: usize,
}

impl Default for KneeParams {
    fn default() -> Self {
        KneeParams {
            min_rel_jump: 0.35,
            min_abs_jump_ns: 0.5,
            noise_mult: 3.0,
            min_rel_step: 0.10,
            max_steps: 2,
        }
    }
}

/// A detected knee: the excess is `before` up to `lo` pages and `after` from `hi` pages on.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Knee {
    pub lo: usize,
    pub hi: usize,
    /// Excess at `lo` (ns).
    pub before: f64,
    /// Excess at `hi` (ns).
    pub after: f64,
    /// `(after − before) / test(lo)`.
    pub rel_jump: f64,
    /// `(after − before) / noise`; how clearly the knee stands out of the noise.
    pub snr: f64,
}

/// Finds the knees of a curve (points sorted by N or not; they are sorted here).
pub fn find_knees(points: &[CurvePoint], p: &KneeParams) -> Vec<Knee> {
    let mut pts: Vec<CurvePoint> = points
        .iter()
        .copied()
        .filter(|q| q.test.is_finite() && q.control.is_finite())
        .collect();
    pts.sort_by_key(|q| q.n);
    pts.dedup_by_key(|q| q.n);
    let mut knees = Vec::new();
    if pts.len() < 2 {
        return knees;
    }
    let d: Vec<f64> = pts.iter().map(|q| q.excess()).collect();
    // The latency a rise is measured against: the test's at the point before it, but with the
    // data at the cost of the cheapest control (the data-cache part the excess cancels must not
    // inflate the base either). With the test's own latency, a TLB level that overflows where
    // the L1D does (the Xeon E5-2650 preset: 512 L2 TLB entries, 512 lines of 32 KiB L1D) had
    // its 3.7 ns rise measured against a test latency the L1D misses had doubled, and was lost.
    let c0 = pts
        .iter()
        .map(|q| q.control)
        .fold(f64::INFINITY, f64::min)
        .max(0.0);
    let base_at = |i: usize| -> f64 { (d[i].max(0.0) + c0).min(pts[i].test).max(1e-9) };
    let step_is_rising = |i: usize| -> bool {
        let step = d[i] - d[i - 1];
        let base = base_at(i - 1);
        step / base >= p.min_rel_step && step > 0.0
    };
    let mut i = 1;
    while i < pts.len() {
        if !step_is_rising(i) {
            i += 1;
            continue;
        }
        // A run of rising steps [i, j).
        let mut j = i + 1;
        while j < pts.len() && step_is_rising(j) && j - i < p.max_steps {
            j += 1;
        }
        let (a, b) = (i - 1, j - 1);
        let jump = d[b] - d[a];
        let base = base_at(a);
        // Typical noise around the knee: the median IQR of the points near it. A single noisy
        // window (a neighbour's burst) must not veto a knee that every other point shows.
        let lo_i = a.saturating_sub(2);
        let hi_i = (b + 2).min(pts.len() - 1);
        let near: Vec<f64> = pts[lo_i..=hi_i].iter().map(|q| q.noise).collect();
        let noise = crate::stats::median(&near).max(1e-9);
        let persists = match d.get(b + 1) {
            Some(&next) => next >= d[a] + 0.6 * jump,
            None => true,
        };
        if jump / base >= p.min_rel_jump
            && jump >= p.min_abs_jump_ns
            && jump >= p.noise_mult * noise
            && persists
        {
            knees.push(Knee {
                lo: pts[a].n,
                hi: pts[b].n,
                before: d[a],
                after: d[b],
                rel_jump: jump / base,
                snr: jump / noise,
            });
        }
        i = j;
    }
    knees
}

/// The N values to scan around a knee found on the coarse grid: from 0.85·lo to 1.4·hi (a gradual
/// ramp may run well past the coarse knee; the fit needs both plateaus), in steps of about 1% of
/// N (at least 1 page), so the fit resolves the capacity to ≈1%.
pub fn scan_points(lo: usize, hi: usize) -> Vec<usize> {
    let start = ((lo as f64) * 0.85).floor().max(2.0) as usize;
    let end = ((hi as f64) * 1.4).ceil() as usize;
    super::geometric_points(start, end, 0.01)
}
