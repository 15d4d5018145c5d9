//! The probe's budget: repetitions, windows and trials per measurement for `--quick` and the
//! full run, the smallest chain, the conflict sets' fillers, the set index's windows, and the
//! clock the deadlines read.

use super::*;
use crate::measure::levels::Budget;

pub(super) fn budget(o: &ProbeOptions) -> Budget {
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
pub(super) fn since(clock: Option<std::time::Instant>) -> f64 {
    clock.map_or(0.0, |t| t.elapsed().as_secs_f64())
}

/// The set index's budget (`measure::set_index`): windows per point and per pair test.
pub(super) fn index_budget(
    quick: bool,
    b: Budget,
    salt: u64,
) -> crate::measure::set_index::IndexBudget {
    crate::measure::set_index::IndexBudget {
        reps: if quick { 7 } else { 9 },
        pair_reps: if quick { 5 } else { 7 },
        window_ns: b.scan_window_ns,
        seed: b.seed ^ salt,
    }
}
