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

use super::bench::Bench;
use super::curve::{sweep, Capacity, Instrument};
use crate::analysis::index::{
    geometry_from_conflicts, infer_from_conflicts, ConflictGeometry, Indexing, StrideCapacity,
};
use crate::analysis::knee::{monotone_floor, onset_by_threshold, trial_consensus, Confidence};
use crate::analysis::replacement::{replacement_shape, Shape};
use crate::chase::{build_on_pages, time_chain};
use crate::measure::levels::StrideSweep;
use crate::sys::{Region, Thp, PAGE};

/// Filler pages: more than the Zen 5 L1 DTLB's 96 entries (and Zen 3's 64) with room to spare,
/// few enough to take under 1/8 of the L2's odd sets' capacity.
pub const FILLERS: usize = 160;

/// What a conflict set's chains are: up to `max_t` targets `stride` pages apart plus `fillers`
/// odd filler pages (test), or as many consecutive pages past both (control), each in a random
/// cycle drawn from `seed` and the target count. The host's chains and the simulated host's
/// (`measure::simulated`) both take their pages from here, so they are the same pages.
#[derive(Clone, Copy, Debug)]
pub struct ConflictSet {
    pub stride: usize,
    pub max_t: usize,
    pub seed: u64,
    pub fillers: usize,
}

impl ConflictSet {
    /// First page of the control chains: past the targets and the fillers.
    fn control_base(&self) -> usize {
        (self.max_t * self.stride).max(2 * self.fillers) + 1
    }

    /// Pages a mapping for the set must hold.
    pub(crate) fn span(&self) -> usize {
        self.control_base() + self.max_t + self.fillers + 1
    }

    /// The pages (numbers within the mapping) of the chain of `t` targets, in chain order.
    pub(crate) fn pages(&self, t: usize, control: bool) -> Vec<usize> {
        if control {
            let base = self.control_base();
            (base..base + t + self.fillers).collect()
        } else {
            let odd = (0..self.fillers).map(|j| 2 * j + 1);
            (0..t).map(|k| k * self.stride).chain(odd).collect()
        }
    }
}

/// A [`ConflictSet`]'s chains in real memory.
pub struct ConflictChains {
    region: Region,
    set: ConflictSet,
    built: Option<(usize, bool)>,
    start: *const usize,
}

impl ConflictChains {
    pub fn new(stride: usize, max_t: usize, seed: u64) -> std::io::Result<ConflictChains> {
        Self::of(ConflictSet {
            stride,
            max_t,
            seed,
            fillers: FILLERS,
        })
    }

    /// Chains of any set (`examples/l2_conflict.rs` takes other filler counts than [`FILLERS`]:
    /// does the first level hold targets the fillers should have pushed out?).
    pub fn of(set: ConflictSet) -> std::io::Result<ConflictChains> {
        Ok(ConflictChains {
            region: Region::new(set.span() * PAGE, 2 << 20, Thp::Never)?,
            set,
            built: None,
            start: std::ptr::null(),
        })
    }
}

impl Instrument for ConflictChains {
    /// ns per access of the whole chain (targets and fillers); `n` is the number of targets.
    fn time(&mut self, n: usize, control: bool, window_ns: u64) -> f64 {
        let t = n.clamp(1, self.set.max_t);
        if self.built != Some((t, control)) {
            let pages = self.set.pages(t, control);
            self.start = build_on_pages(&self.region, &pages, self.set.seed ^ t as u64);
            self.built = Some((t, control));
        }
        // SAFETY: `start` was just built in our region, which lives as long as `self`.
        unsafe { time_chain(self.start, t + self.set.fillers, window_ns) }
    }

    fn max_n(&self) -> usize {
        self.set.max_t
    }
}

/// Target counts from `lo` to `hi` in steps of ≈3% (at least 1).
fn target_points(lo: usize, hi: usize) -> Vec<usize> {
    crate::analysis::geometric_points(lo.max(2), hi, 0.03)
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
#[allow(clippy::too_many_arguments)]
pub fn conflict_sweep(
    bench: &mut dyn Bench,
    entries: usize,
    fillers: usize,
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
            let set = ConflictSet {
                stride,
                max_t,
                seed: s,
                fillers,
            };
            let Some(mut inst) = bench.conflict(set) else {
                break;
            };
            let rows = sweep(inst.as_mut(), &ts, reps, window_ns, s);
            let per_target: Vec<(usize, f64)> = rows
                .iter()
                .map(|r| (r.n, r.floor() * (r.n + fillers) as f64 / r.n as f64))
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

/// What the conflict sets say of the level's stride-1 capacity reading ([`arbitrate`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arbitration {
    /// Their sets × ways is within 10% of the reading: two methods agree.
    Agrees(ConflictGeometry),
    /// Sets × ways lies above the reading, in the pooled envelope's ramp (from where it leaves
    /// its plateau to where it ends, 10% of slack): the level holds that many pages, and
    /// starts losing pages of the stride-1 scan's random chain before it is full. Typically the
    /// reading was a rise before the ramp (`Capacity::before_ramp`, two candidates that timing
    /// alone cannot choose between), or the pooled envelope is half-way up its step near
    /// sets × ways (`half_way`, N pages) though the ramp fitted to it took an earlier rise.
    Ramp {
        geometry: ConflictGeometry,
        half_way: Option<usize>,
    },
    /// Sets × ways is neither the reading nor, for a reading before the ramp, in the ramp.
    Disagrees(ConflictGeometry),
}

impl Arbitration {
    /// The conflict sets' geometry the verdict is about.
    pub fn geometry(&self) -> &ConflictGeometry {
        match self {
            Arbitration::Agrees(g) | Arbitration::Disagrees(g) => g,
            Arbitration::Ramp { geometry, .. } => geometry,
        }
    }
}

/// The conflict sets' sets × ways ([`geometry_from_conflicts`]) set against `c`, the level's
/// capacity read at stride 1; None when the sweep gives no geometry (no halving run with a
/// plateau after it).
///
/// Why it can arbitrate: the stride-1 scan times random chains over consecutive pages, every
/// set filling at once, and reads where the excess first rises; a structure that starts losing
/// pages of such a chain before it is full (a replacement that is not LRU, a second structure's
/// smaller step) reads early there. The conflict sets fill a few sets at a time and read the
/// sets and ways from how the capacity scales with the stride, not from one rise. On the Zen 3
/// host (2048 entries, AMD) the stride-1 trials of some runs agree on a ~2 ns rise at
/// ~1440-1460 pages ahead of the ramp at ~1900-2200, while the conflict sets read 129, 64, 32,
/// 16, 16, 16 at strides 16..512, i.e. 128 × 16 = 2048.
///
/// Of the conflict sets' two readings of the ways (`ConflictGeometry::ways`, `fitted_ways`),
/// the one whose sets × ways is nearer the stride-1 scan's pooled envelope half-way point
/// (`Capacity::midpoint`) is taken, the median one on a tie or without an envelope fit: on the
/// Zen 4 host the envelopes were half-way at 2921-3045 pages, the median read 3200-3328 and
/// the fit 3072 (CPUID: 3072).
pub fn arbitrate(c: &Capacity, ss: &StrideSweep) -> Option<Arbitration> {
    arbitrate_with(c, ss, None)
}

/// [`arbitrate`], with the ways the one-set curves read (`measure::set_index::low_bits_ways`)
/// when they lie from the lowest of the conflict sets' readings (the median, the fit, and every
/// stride's capacity × stride / sets) to a way above the highest: they then are the ways, and
/// the envelope does not choose. Outside that bracket the conflict sets' two readings stand as
/// before. Not below the lowest: a neighbour holding ways of the set only brings the one-set
/// first misses earlier, while every conflict reading sits at sets × ways or above unless a
/// disturbance lowered it too. On the Zen 4 host (2026-11-26, batch 5 f4) the curves read
/// [21, 24, 23, 21, 23], i.e. 23, against conflict readings of 24-27, and 2944 was reported.
pub fn arbitrate_with(
    c: &Capacity,
    ss: &StrideSweep,
    one_set_ways: Option<usize>,
) -> Option<Arbitration> {
    let g = geometry_from_conflicts(&ss.capacities, 0.25)?;
    let lo = g
        .ways
        .min(g.fitted_ways)
        .min((g.lo / g.sets as f64).floor() as usize);
    let hi = g
        .ways
        .max(g.fitted_ways)
        .max((g.hi / g.sets as f64).ceil() as usize);
    let off = |g: &ConflictGeometry| (g.entries() as f64 - c.midpoint as f64).abs();
    let g = match one_set_ways {
        Some(w) if w >= lo && w <= hi + 1 => ConflictGeometry { ways: w, ..g },
        _ if c.midpoint > 0 && off(&g.as_fitted()) < off(&g) => g.as_fitted(),
        _ => g,
    };
    let e = g.entries() as f64;
    let read = c.entries as f64;
    let in_fitted_ramp = e >= 0.9 * c.onset as f64 && e <= 1.1 * c.full_miss as f64;
    let half_way =
        half_rise(&c.envelope, e).filter(|&n| n as f64 >= 0.85 * e && n as f64 <= 1.1 * e);
    // A random-like rise (`analysis::replacement`) from the reading up: the chain keeps losing
    // pages gradually from where it starts to past the level's sets × ways, so a structure up
    // to 1.4× the reading lies on it. On the Zen 4 host one run of ten (2026-11-26, f2) read
    // 2416 with the conflict sets' 128 × 24 = 3072 and a fitted ramp that ended before 2800:
    // "disagrees", and the stride-1 reading (−21%) stood.
    let random_like = e <= 1.4 * read
        && replacement_shape(&c.envelope, c.entries, g.sets)
            .is_some_and(|s| s.shape == Shape::RandomLike);
    Some(if (e - read).abs() <= 0.1 * read {
        Arbitration::Agrees(g)
    } else if e > read && (in_fitted_ramp || half_way.is_some() || random_like) {
        Arbitration::Ramp {
            geometry: g,
            half_way,
        }
    } else {
        Arbitration::Disagrees(g)
    })
}

/// Where the pooled envelope (non-decreasing) first reaches half-way from its first value to
/// its value at 1.2 `e`: the N by which most of the step up to just past `e` is taken. None if
/// the envelope stops short of 1.1 `e` (it cannot tell what happens at `e`).
///
/// Why not only the ramp fitted to the envelope (`Capacity::onset..full_miss`): one ramp is
/// fitted, and when the envelope has two rises it may take either. On the Zen 3 host a ~3 ns
/// rise at ~1450 pages is followed by the climb to a full walk (13-15 ns more) at ~1800-2150;
/// the fit took the first rise in two of four runs, whose envelopes were half-way at 1882 and
/// 1905-1982 pages.
fn half_rise(envelope: &[(usize, f64)], e: f64) -> Option<usize> {
    let &(_, first) = envelope.first()?;
    let &(last_n, _) = envelope.last()?;
    if (last_n as f64) < 1.1 * e {
        return None;
    }
    let top = envelope
        .iter()
        .take_while(|(n, _)| *n as f64 <= 1.2 * e)
        .last()?
        .1;
    let half = first + 0.5 * (top - first);
    envelope.iter().find(|(_, x)| *x >= half).map(|(n, _)| *n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `c` with the fastest windows' envelope `envelope` (the ramp fit reads it).
    fn enveloped(envelope: Vec<(usize, f64)>, c: Capacity) -> Capacity {
        Capacity { envelope, ..c }
    }

    /// Whether the conflict sets contradict the reading (and do not replace it).
    fn disagrees(c: &Capacity, sets: &StrideSweep) -> bool {
        matches!(arbitrate(c, sets), Some(Arbitration::Disagrees(_)))
    }

    fn capacity(entries: usize, onset: usize, full_miss: usize, before_ramp: bool) -> Capacity {
        Capacity::example(entries, onset, full_miss, before_ramp)
    }

    fn sweep_of(caps: &[f64]) -> StrideSweep {
        StrideSweep::conflict_example(caps)
    }

    #[test]
    fn given_a_rise_before_the_ramp_and_conflict_sets_in_the_ramp_then_the_ramp() {
        // The Zen 3 host's run of 2026-11-24: trials at 1451, pooled ramp 1901..2207.
        let zen3 = sweep_of(&[129.0, 64.0, 32.0, 16.0, 16.0, 16.0]);
        match arbitrate(&capacity(1451, 1901, 2207, true), &zen3) {
            Some(Arbitration::Ramp { geometry, .. }) => {
                assert_eq!((geometry.sets, geometry.ways), (128, 16))
            }
            other => panic!("{other:?}"),
        }
        // The same conflict sets behind a reading at the ramp agree with it.
        assert!(matches!(
            arbitrate(&capacity(2041, 1950, 2150, false), &zen3),
            Some(Arbitration::Agrees(_))
        ));
        // ... a reading at the start of a wide ramp that reaches 2048 is the ramp too ...
        assert!(matches!(
            arbitrate(&capacity(1438, 1500, 2150, false), &zen3),
            Some(Arbitration::Ramp { .. })
        ));
        // ... and a clean reading of 1451 (a short ramp after it) is contradicted, not replaced.
        assert!(disagrees(&capacity(1451, 1440, 1580, false), &zen3));
        // Conflict sets below the reading never replace it, whatever the ramp.
        let small = sweep_of(&[64.0, 32.0, 16.0, 16.0]);
        assert!(disagrees(&capacity(1451, 900, 2200, false), &small));
    }

    #[test]
    fn given_ways_read_two_ways_then_the_stride_1_envelope_chooses() {
        // The Zen 4 host's run of 2026-11-24 (CPUID: 3072 entries): trials at 2431, pooled ramp
        // 2418..3673 (half-way at 3045); capacity × stride reads 26 ways, the fit 24.
        let zen4 = sweep_of(&[197.0, 102.0, 54.0, 27.0, 26.0, 26.0]);
        match arbitrate(&capacity(2431, 2418, 3673, false), &zen4) {
            Some(Arbitration::Ramp { geometry, .. }) => {
                assert_eq!(
                    (geometry.sets, geometry.ways, geometry.entries()),
                    (128, 24, 3072)
                )
            }
            other => panic!("{other:?}"),
        }
        // Zen 5's conflict sets (the fit reads 15 ways of 256 sets, the median 16) behind a
        // reading at 4104 whose envelope is half-way at 4140: 16.
        let zen5 = sweep_of(&[242.0, 125.0, 64.0, 31.0, 14.0, 15.0]);
        match arbitrate(&capacity(4104, 4050, 4230, false), &zen5) {
            Some(Arbitration::Agrees(g)) => assert_eq!((g.sets, g.ways), (256, 16)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn given_one_set_ways_within_the_conflict_sets_bracket_then_they_are_the_ways() {
        // The Zen 4 host's `--quick` run q4 of 2026-11-26: a disturbed 256-page stride, the
        // envelope half-way at 2881 chose the fit's 22 ways; the one-set curves read 24.
        let zen4 = sweep_of(&[178.0, 96.0, 50.0, 25.0, 20.0, 25.0]);
        let c = Capacity {
            midpoint: 2881,
            ..capacity(2416, 2408, 2481, false)
        };
        let ways = |a: Option<Arbitration>| a.expect("a geometry").geometry().ways;
        assert_eq!(ways(arbitrate(&c, &zen4)), 22);
        assert_eq!(ways(arbitrate_with(&c, &zen4, Some(24))), 24);
        // A busy phase's early first misses (19) are outside the bracket: the envelope chooses.
        assert_eq!(ways(arbitrate_with(&c, &zen4, Some(19))), 22);
        // Run f4 of batch 5 (2026-11-26): one-set curves [21, 24, 23, 21, 23] read 23, below
        // every conflict reading (24-27): the conflict sets' 24 stand.
        let f4 = sweep_of(&[192.0, 103.0, 54.0, 26.0, 25.0, 26.0]);
        let c = Capacity {
            midpoint: 2892,
            ..capacity(2376, 2324, 3292, false)
        };
        assert_eq!(ways(arbitrate(&c, &f4)), 24);
        assert_eq!(ways(arbitrate_with(&c, &f4, Some(23))), 24);
        assert_eq!(ways(arbitrate_with(&c, &f4, Some(25))), 25);
    }

    #[test]
    fn given_a_random_like_rise_below_the_conflict_sets_then_the_ramp() {
        // The Zen 4 host's run f2 of 2026-11-26: trials at 2416, a ramp fitted to its first
        // step (2432..2456), the pooled envelope (every fourth point) climbing gradually to
        // 3378; conflict sets 128 × 24.
        let zen4 = sweep_of(&[194.0, 103.0, 52.0, 26.0, 27.0, 26.0]);
        let env = vec![
            (1463, 2.2),
            (1649, 2.2),
            (1858, 2.2),
            (2013, 2.2),
            (2095, 2.2),
            (2180, 2.2),
            (2268, 2.2),
            (2360, 2.2),
            (2456, 2.7),
            (2556, 4.1),
            (2660, 4.2),
            (2768, 4.5),
            (2881, 5.1),
            (2998, 6.3),
            (3120, 7.7),
            (3247, 8.6),
            (3378, 9.6),
        ];
        let c = enveloped(env.clone(), capacity(2416, 2432, 2456, false));
        match arbitrate(&c, &zen4) {
            Some(Arbitration::Ramp { geometry, .. }) => assert_eq!(geometry.entries(), 3072),
            other => panic!("{other:?}"),
        }
        // The same reading with an LRU-like step (all of it by 2608 pages) disagrees.
        let sharp: Vec<(usize, f64)> = env
            .iter()
            .map(|&(n, y)| (n, if n > 2416 { 9.6 } else { y }))
            .collect();
        let c = enveloped(sharp, capacity(2416, 2432, 2456, false));
        assert!(disagrees(&c, &zen4));
    }

    #[test]
    fn given_an_envelope_that_takes_most_of_its_step_at_the_conflict_sets_then_the_ramp() {
        let zen3 = sweep_of(&[130.0, 64.0, 32.0, 16.0, 16.0, 16.0]);
        // Pooled envelopes of two Zen 3 host runs (2026-11-24, every fourth point) whose ramp
        // fit took the ~3 ns rise at ~1450 (ramp 1467..1497 and 1442..1486), not the climb.
        type Run<'a> = (usize, usize, usize, &'a [(usize, f64)]);
        let runs: [Run; 2] = [
            (
                1452,
                1467,
                1497,
                &[
                    (1035, 2.4),
                    (1077, 2.4),
                    (1121, 2.4),
                    (1166, 2.4),
                    (1214, 2.4),
                    (1263, 2.4),
                    (1315, 2.5),
                    (1368, 2.5),
                    (1424, 2.5),
                    (1482, 3.3),
                    (1542, 6.3),
                    (1605, 6.4),
                    (1670, 6.6),
                    (1738, 6.8),
                    (1809, 7.2),
                    (1882, 8.5),
                    (1958, 9.8),
                    (2038, 11.7),
                    (2121, 13.3),
                    (2207, 14.4),
                    (2297, 15.1),
                    (2390, 15.2),
                ],
            ),
            (
                1442,
                1442,
                1486,
                &[
                    (1230, 2.4),
                    (1280, 2.4),
                    (1332, 2.4),
                    (1386, 2.5),
                    (1442, 2.6),
                    (1501, 5.7),
                    (1561, 6.7),
                    (1625, 6.7),
                    (1691, 7.0),
                    (1759, 7.4),
                    (1831, 8.2),
                    (1905, 9.2),
                    (1982, 10.8),
                    (2062, 12.4),
                    (2146, 13.9),
                    (2233, 15.3),
                    (2324, 15.6),
                    (2418, 16.3),
                    (2516, 17.7),
                    (2618, 19.7),
                    (2724, 20.7),
                    (2835, 22.2),
                    (2950, 24.2),
                ],
            ),
        ];
        for (entries, onset, full_miss, env) in runs {
            let c = Capacity {
                envelope: env.to_vec(),
                ..capacity(entries, onset, full_miss, false)
            };
            assert!(
                matches!(arbitrate(&c, &zen3), Some(Arbitration::Ramp { .. })),
                "{entries}"
            );
            // Cut short of 1.1 × 2048, the envelope tells nothing there.
            let short = Capacity {
                envelope: env.iter().copied().filter(|p| p.0 < 2200).collect(),
                ..c
            };
            assert!(disagrees(&short, &zen3));
        }
        // A level that is full at 1451 (all-miss 128 pages later) against the same conflict
        // sets: its envelope is half-way at ~1515, far from 2048.
        let clean: Vec<(usize, f64)> = (1000..2600)
            .step_by(20)
            .map(|n| {
                let x = (n as f64 - 1451.0) / 128.0;
                (
                    n,
                    2.4 + 13.0 * x.clamp(0.0, 1.0) + 0.002 * (n as f64 - 1451.0).max(0.0),
                )
            })
            .collect();
        let c = enveloped(clean, capacity(1451, 1451, 1579, false));
        assert!(disagrees(&c, &zen3));
    }

    #[test]
    fn given_conflict_sets_that_side_with_the_rise_then_they_agree_with_it() {
        // A 96 × 16 = 1536 level: the rise is the overflow, the later ramp something else.
        let s = sweep_of(&[96.0, 48.0, 24.0, 12.0, 16.0, 16.0]);
        let s = StrideSweep {
            capacities: s.capacities[..4].to_vec(),
            ..s
        };
        // Still halving at the last stride: no geometry, nothing said.
        assert_eq!(arbitrate(&capacity(1536, 1901, 2207, true), &s), None);
        let s = sweep_of(&[96.0, 48.0, 24.0, 12.0, 12.0]);
        assert!(matches!(
            arbitrate(&capacity(1500, 1901, 2207, true), &s),
            Some(Arbitration::Agrees(_))
        ));
        // Neither the rise nor the ramp: 64 × 16 = 1024.
        let s = sweep_of(&[64.0, 32.0, 16.0, 16.0]);
        assert!(disagrees(&capacity(1451, 1901, 2207, true), &s));
    }
}
