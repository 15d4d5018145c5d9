//! The second data-TLB level's sets and ways, seen past the first level: conflict sets of target
//! pages at a page stride, mixed with filler pages that keep the first level missing.
//!
//! Why: a stride sweep of plain chains (`levels::stride_sweep`) loses the second level once its
//! effective capacity at a stride falls near the first level's: on Zen 5, 4096 L2 entries over
//! 16 sets at a 16-page stride are 256 pages, at 32 pages 128, within reach of the 96-entry fully
//! associative L1, which then holds most of the chain. Here every chain also visits `F` filler
//! pages, in one random cycle with the targets, so the chain is always longer than the L1 and a
//! fully associative (or any) LRU-like L1 misses on every access; whether a *target* also misses
//! the L2 then depends only on how many targets share the L2's sets. Seed 003 Alg. 3 and TLBleed's
//! "w + 1 pages at stride s" find sets and ways the same way, with performance counters.
//!
//! Targets are pages `0, s, 2s, …` (even page numbers for every stride ≥ 2); fillers are odd
//! pages `1, 3, 5, …`, so with a set index of low page-number bits no filler lands in a target's
//! set. The control is a chain of as many consecutive pages elsewhere in the mapping (spread evenly
//! over every set, and kept under 0.8× the level's entries): same length, same L1 misses, L2 hits
//! only. The excess per *target* access is
//! `(test − control) · (T + F) / T`; it steps up when `T` passes the targets' capacity,
//! `ways · sets / s` while the stride still spreads them over several sets, and `ways` from the
//! stride that puts them all in one set.

use super::curve::{sweep, Instrument};
use crate::analysis::index::{infer_from_conflicts, Indexing, StrideCapacity};
use crate::analysis::knee::{monotone_floor, onset_by_threshold, trial_consensus, Confidence};
use crate::chase::{build_on_pages, time_chain};
use crate::measure::levels::StrideSweep;
use crate::sys::{Region, Thp, PAGE};

/// Filler pages: more than the Zen 5 L1 DTLB's 96 entries (and Zen 3's 64) with room to spare,
/// few enough to take under 1/8 of the L2's odd sets' capacity.
pub const FILLERS: usize = 160;

/// Chains of `T` targets `stride` pages apart plus [`FILLERS`] odd pages (test), or `T +`
/// [`FILLERS`] consecutive pages after both (control).
pub struct ConflictChains {
    region: Region,
    stride: usize,
    max_t: usize,
    seed: u64,
    built: Option<(usize, bool)>,
    start: *const usize,
}

impl ConflictChains {
    pub fn new(stride: usize, max_t: usize, seed: u64) -> std::io::Result<ConflictChains> {
        let pages = Self::control_base(stride, max_t) + max_t + FILLERS + 1;
        Ok(ConflictChains {
            region: Region::new(pages * PAGE, 2 << 20, Thp::Never)?,
            stride,
            max_t,
            seed,
            built: None,
            start: std::ptr::null(),
        })
    }

    /// First page of the control chains: past the targets and the fillers.
    fn control_base(stride: usize, max_t: usize) -> usize {
        (max_t * stride).max(2 * FILLERS) + 1
    }

    fn pages(&self, t: usize, control: bool) -> Vec<usize> {
        if control {
            let base = Self::control_base(self.stride, self.max_t);
            (base..base + t + FILLERS).collect()
        } else {
            let odd = (0..FILLERS).map(|j| 2 * j + 1);
            (0..t).map(|k| k * self.stride).chain(odd).collect()
        }
    }
}

impl Instrument for ConflictChains {
    /// ns per access of the whole chain (targets and fillers); `n` is the number of targets.
    fn time(&mut self, n: usize, control: bool, window_ns: u64) -> f64 {
        let t = n.clamp(1, self.max_t);
        if self.built != Some((t, control)) {
            let pages = self.pages(t, control);
            self.start = build_on_pages(&self.region, &pages, self.seed ^ t as u64);
            self.built = Some((t, control));
        }
        // SAFETY: `start` was just built in our region, which lives as long as `self`.
        unsafe { time_chain(self.start, t + FILLERS, window_ns) }
    }

    fn max_n(&self) -> usize {
        self.max_t
    }
}

/// Target counts from `lo` to `hi` in steps of ≈3% (at least 1).
fn target_points(lo: usize, hi: usize) -> Vec<usize> {
    let mut v = Vec::new();
    let mut t = lo.max(2);
    while t <= hi {
        v.push(t);
        t += ((t as f64) * 0.03).round().max(1.0) as usize;
    }
    v
}

/// The second level's capacity at strides 2^from_log2 … 2^to_log2 pages by conflict sets, and the
/// organisation inferred from them and `entries`, its stride-1 capacity
/// ([`infer_from_conflicts`]).
///
/// Each stride scans T from 0.35× to 1.3× the previous stride's capacity (the first stride: as if
/// every bit below it halved the capacity), enough to tell "half" from "same", but no further than
/// 0.8 `entries` − [`FILLERS`] (the control must fit the level); each trial's capacity is the
/// last T before the excess per target rises by 12% of a full walk ([`onset_by_threshold`]);
/// `trials` trials (fresh memory) vote ([`trial_consensus`]).
///
/// Why a fixed share of a walk and not half of each scan's own rise: on Zen 5 the level is not
/// LRU; a set holding W + j targets misses on a share of its accesses that grows with j, to all
/// of them near 2W, so the rise within a scan depends on how far past the capacity the scan
/// runs (half-way read 290, 191, 111 pages at strides 16, 32, 64 in one run: ratios 0.66, 0.58;
/// a fifth of a walk read 249, 129, 66: halvings). Recorded on the development VM, a threshold
/// of 2-3 ns (of ≈ 11 ns per walk) read every stride's halving within 0.43-0.56.
///
/// Why not from stride 2: with hundreds to thousands of targets the per-target excess creeps up
/// long before the capacity (on Zen 5 at a 4-page stride from 700 targets, for 1024), as the
/// plain stride sweep's does; with a few hundred or fewer it rises within a few per cent of it.
pub fn conflict_sweep(
    entries: usize,
    from_log2: u32,
    to_log2: u32,
    reps: usize,
    window_ns: u64,
    trials: usize,
    seed: u64,
) -> StrideSweep {
    let mut caps = Vec::new();
    let mut confs = Vec::new();
    let mut prev = entries >> from_log2.saturating_sub(1);
    let mut failed = None;
    // The excess per target when every target walks: the top of the scans so far (the first
    // stride's scan runs to ≈ 2.6× its capacity, where on Zen 5 every target misses).
    let mut walk = 0.0f64;
    for k in from_log2.max(1)..=to_log2 {
        let stride = 1usize << k;
        let ts = target_points(
            (prev as f64 * 0.35) as usize,
            (prev as f64 * 1.3) as usize + 2,
        );
        let max_t = *ts.last().unwrap_or(&4);
        let mut curves = Vec::new();
        for trial in 0..trials.max(1) {
            let s = seed ^ ((k as u64) << 16) ^ trial as u64;
            let Ok(mut inst) = ConflictChains::new(stride, max_t, s) else {
                break;
            };
            let rows = sweep(&mut inst, &ts, reps, window_ns, s);
            let per_target: Vec<(usize, f64)> = rows
                .iter()
                .map(|r| (r.n, r.floor() * (r.n + FILLERS) as f64 / r.n as f64))
                .collect();
            let floor = monotone_floor(&per_target);
            if floor.len() >= 3 {
                let top: Vec<f64> = floor[floor.len() - 3..].iter().map(|p| p.1).collect();
                walk = walk.max(crate::stats::median(&top));
            }
            curves.push(floor);
        }
        // The capacity: the last T before the excess per target rises by 12% of a full walk
        // above where the scan started (`onset_by_threshold` takes twice the rise).
        let found: Vec<usize> = curves
            .iter()
            .filter_map(|c| onset_by_threshold(c, 5, 0.24 * walk))
            .collect();
        match trial_consensus(&found, 10.0) {
            Some(c) => {
                // Every trial within 10% (or one page) of the estimate: high (the inference
                // tells halves from equals with ±12.5% of slack); a majority: medium; a single
                // trial is a reading, not a confirmation: medium; else unclear.
                let close =
                    |x: usize| x.abs_diff(c.estimate) as f64 <= (0.1 * c.estimate as f64).max(1.0);
                let agree = found.iter().filter(|&&x| close(x)).count();
                let conf = if found.len() < 2 {
                    Confidence::Medium
                } else if agree == found.len() {
                    Confidence::High
                } else if 2 * agree > found.len() {
                    Confidence::Medium
                } else {
                    Confidence::Unclear
                };
                caps.push(StrideCapacity {
                    log2_stride: k,
                    capacity: Some(c.estimate as f64),
                });
                confs.push(conf);
                prev = c.estimate.max(2);
            }
            None => {
                // Recorded as missing, so `infer` keeps this reason.
                caps.push(StrideCapacity {
                    log2_stride: k,
                    capacity: None,
                });
                confs.push(Confidence::Unclear);
                failed = Some(format!(
                    "no step in the conflict sets at a stride of {stride} pages between {} and \
                     {} targets",
                    ts.first().unwrap_or(&0),
                    ts.last().unwrap_or(&0)
                ));
                break;
            }
        }
    }
    let mut ss = StrideSweep {
        capacities: caps,
        confidences: confs,
        indexing: Indexing::Unclear {
            reason: failed.clone().unwrap_or_default(),
        },
    };
    if failed.is_none() {
        ss.indexing = infer(&ss, entries);
    }
    ss
}

/// The organisation from a conflict sweep's capacities and the level's entries (again, when the
/// entries are measured once more later in the run); a sweep that lost its step keeps its reason.
pub fn infer(ss: &StrideSweep, entries: usize) -> Indexing {
    if ss.capacities.iter().any(|c| c.capacity.is_none()) || ss.capacities.is_empty() {
        return ss.indexing.clone();
    }
    // Tolerance 0.25 (same: 0.75-1.25×, half: 0.375-0.625×): at one or two sets the reading is
    // a few pages of 16 (on Zen 5, 13-16 at a 256-page stride, 15-17 at 512, run to run).
    infer_from_conflicts(entries as f64, &ss.capacities, 0.25)
}
