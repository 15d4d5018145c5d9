//! Associativity and set-index-bit inference from a page-stride sweep.
//!
//! With pages `2^k` apart, VPN bits `0..k` are constant across the chain. If a level's set index
//! is the low `b` VPN bits, stride `2^k` (k ≤ b) reaches only `2^(b−k)` sets, so its effective
//! capacity is `entries / 2^k`: each doubling of the stride that halves the capacity marks one
//! index bit (seed 003 Alg. 3 finds the same bits from conflict sets; TLBleed §4 "linearly-mapped
//! TLB" searches w+1 pages at stride s). A fully associative level keeps its capacity at every
//! stride. An XOR-hashed index (TLBleed's XOR-7 on Skylake) keeps full capacity while the strides
//! still vary the folded-in high bits and then halves; because consecutive pages already reach every
//! set, the low bits must enter the index as well, folded with the high ones.

use serde::{Deserialize, Serialize};

/// Effective capacity (in pages) measured at a stride of `2^log2_stride` pages. `None` means the
/// capacity fell below what the method can see (below the next-smaller level's capacity).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct StrideCapacity {
    pub log2_stride: u32,
    pub capacity: Option<f64>,
}

/// What the stride sweep says about a level's organisation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Indexing {
    /// Capacity independent of stride up to the largest stride tried.
    FullyAssociative {
        entries: usize,
        max_log2_stride: u32,
    },
    /// Set index = the VPN bits listed (low bits, linear).
    Linear {
        sets: usize,
        ways: usize,
        index_bits: Vec<u32>,
    },
    /// Linear in the bits seen, but capacity dropped below the observable floor before the
    /// halving stopped: `sets ≥ min_sets`, `ways ≤ max_ways`.
    LinearAtLeast {
        min_sets: usize,
        max_ways: usize,
        index_bits: Vec<u32>,
        floor: usize,
    },
    /// Low bits folded with higher bits: with low bits zero the set is chosen by `high_bits`.
    XorFolded {
        sets: usize,
        ways: usize,
        high_bits: Vec<u32>,
        low_bits_enter: bool,
    },
    /// No consistent linear or XOR pattern (e.g. a skewed design); the raw capacities say more.
    Unclear { reason: String },
}

/// Infers indexing from capacities at strides 2^0, 2^1, … (must include stride 1). `tol` is the
/// relative tolerance when comparing a ratio with 1 or 1/2 (0.2 is sensible for timing data).
///
/// Each doubling of the stride must halve the capacity or keep it ([`infer_by_steps`]); when one
/// stride alone breaks that, a low-bits index that every other stride agrees with stands
/// ([`low_bits_but_one`]): on the Intel VM (2026-11-26, batch F) 2 of 12 runs read the L1 DTLB
/// as "unclear" from one stray stride each (96, 54, 27, 13, **12**, 6, 6 and 96, 53, 26, 13, 7,
/// 7, 6, 6, **12**, 6 for 16 sets × 6 ways), where the other ten read 16 × 6.
pub fn infer_indexing(caps: &[StrideCapacity], tol: f64, floor: Option<usize>) -> Indexing {
    let strict = infer_by_steps(caps, tol, floor);
    match &strict {
        Indexing::Unclear { reason }
            if reason.starts_with("capacity changed by neither")
                || reason.starts_with("the bits that halve")
                || reason.starts_with("halving resumed") =>
        {
            low_bits_but_one(caps, tol).unwrap_or(strict)
        }
        _ => strict,
    }
}

/// A low-bits index of b bits predicts entries / 2^min(k, b) at stride 2^k. The b (1 or more)
/// that all strides but one agree with (within `tol`, relative), with at least six strides
/// measured and at least two strides of the plateau (k ≥ b) agreeing; None when no b does, or
/// when two do (96, 54, 27, 13, 12, 6 is 16 × 6 with 2^4 astray or 8 × 12 with 2^5 astray).
fn low_bits_but_one(caps: &[StrideCapacity], tol: f64) -> Option<Indexing> {
    let mut caps: Vec<StrideCapacity> = caps.to_vec();
    caps.sort_by_key(|c| c.log2_stride);
    if caps.len() < 6 || caps.iter().any(|c| c.capacity.is_none()) || caps[0].log2_stride != 0 {
        return None;
    }
    let entries = caps[0].capacity?;
    let max_k = caps.last()?.log2_stride;
    // (b, the strides that disagree with it, the plateau's strides that agree).
    let fits: Vec<(u32, usize, usize)> = (1..max_k)
        .map(|b| {
            let off: Vec<u32> = caps
                .iter()
                .filter(|c| {
                    let want = entries / (1u64 << c.log2_stride.min(b)) as f64;
                    (c.capacity.unwrap() / want - 1.0).abs() > tol
                })
                .map(|c| c.log2_stride)
                .collect();
            let plateau = caps
                .iter()
                .filter(|c| c.log2_stride >= b && !off.contains(&c.log2_stride))
                .count();
            (b, off.len(), plateau)
        })
        .filter(|&(_, off, _)| off <= 1)
        .collect();
    // One b only: two that each need one stray stride are two readings, not one.
    let [(b, _, plateau)] = fits[..] else {
        return None;
    };
    if plateau < 2 {
        return None;
    }
    let sets = 1usize << b;
    Some(Indexing::Linear {
        sets,
        ways: (entries / sets as f64).round().max(1.0) as usize,
        index_bits: (0..b).collect(),
    })
}

fn infer_by_steps(caps: &[StrideCapacity], tol: f64, floor: Option<usize>) -> Indexing {
    let mut caps: Vec<StrideCapacity> = caps.to_vec();
    caps.sort_by_key(|c| c.log2_stride);
    let Some(first) = caps.first() else {
        return Indexing::Unclear {
            reason: "no strides measured".into(),
        };
    };
    if first.log2_stride != 0 || first.capacity.is_none() {
        return Indexing::Unclear {
            reason: "stride 1 (consecutive pages) was not measured".into(),
        };
    }
    let entries = first.capacity.unwrap();
    // Classify each doubling: same, half, or something else.
    #[derive(PartialEq, Clone, Copy, Debug)]
    enum Step {
        Same,
        Half,
        Hidden,
        Other,
    }
    let mut steps = Vec::new();
    for w in caps.windows(2) {
        if w[1].log2_stride != w[0].log2_stride + 1 {
            return Indexing::Unclear {
                reason: "strides must be consecutive powers of two".into(),
            };
        }
        let s = match (w[0].capacity, w[1].capacity) {
            (Some(a), Some(b)) => {
                let r = b / a;
                if (r - 1.0).abs() <= tol {
                    Step::Same
                } else if (r - 0.5).abs() <= 0.5 * tol {
                    Step::Half
                } else {
                    Step::Other
                }
            }
            (Some(_), None) | (None, None) => Step::Hidden,
            (None, Some(_)) => Step::Other,
        };
        steps.push((w[0].log2_stride, s));
    }
    if steps.iter().any(|(_, s)| *s == Step::Other) {
        return Indexing::Unclear {
            reason: format!(
                "capacity changed by neither 1× nor ½× between some strides ({})",
                caps.iter()
                    .map(|c| format!(
                        "2^{}: {}",
                        c.log2_stride,
                        c.capacity
                            .map(|x| format!("{x:.0}"))
                            .unwrap_or("hidden".into())
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
    }
    // Bits whose doubling halved the capacity; bit k-1 → between stride 2^(k-1) and 2^k.
    let halving: Vec<u32> = steps
        .iter()
        .filter(|(_, s)| *s == Step::Half)
        .map(|(k, _)| *k)
        .collect();
    let hidden = steps.iter().any(|(_, s)| *s == Step::Hidden);
    let max_log2 = caps.last().unwrap().log2_stride;
    if halving.is_empty() && !hidden {
        return Indexing::FullyAssociative {
            entries: entries.round() as usize,
            max_log2_stride: max_log2,
        };
    }
    // Halving bits must be one contiguous run.
    let contiguous = halving.windows(2).all(|w| w[1] == w[0] + 1);
    if !contiguous {
        return Indexing::Unclear {
            reason: format!("the bits that halve the capacity are not contiguous: {halving:?}"),
        };
    }
    // After the run, the capacity must stay (or become hidden).
    if let Some(&last) = halving.last() {
        let after_run_bad = steps.iter().any(|(k, s)| *k > last && *s == Step::Half);
        if after_run_bad {
            return Indexing::Unclear {
                reason: "halving resumed after stopping".into(),
            };
        }
    }
    let start = halving.first().copied();
    let sets = 1usize << halving.len();
    let ways_f = entries / sets as f64;
    if hidden {
        // We lost sight of the capacity while it was still (presumably) halving.
        let floor = floor.unwrap_or(0);
        if start.is_some_and(|s| s > 0) {
            return Indexing::Unclear {
                reason: "capacity became hidden after a stride-invariant stretch".into(),
            };
        }
        return Indexing::LinearAtLeast {
            min_sets: sets * 2,
            max_ways: ((entries / (sets * 2) as f64).round() as usize).max(1),
            index_bits: halving,
            floor,
        };
    }
    let ways = ways_f.round().max(1.0) as usize;
    // Still halving at the largest stride tried: only a lower bound on the set count.
    if steps.last().is_some_and(|(_, s)| *s == Step::Half) && start == Some(0) {
        return Indexing::LinearAtLeast {
            min_sets: sets,
            max_ways: ways,
            index_bits: halving,
            floor: floor.unwrap_or(0),
        };
    }
    match start {
        Some(0) => Indexing::Linear {
            sets,
            ways,
            index_bits: halving,
        },
        Some(_) => Indexing::XorFolded {
            sets,
            ways,
            high_bits: halving,
            low_bits_enter: true,
        },
        None => unreachable!(),
    }
}

/// Sets and ways from conflict-set capacities at strides 2^k0 … 2^kmax (k0 ≥ 1, consecutive;
/// `measure::conflict`) and the level's stride-1 capacity `entries`.
///
/// A linear index of the low `b` VPN bits gives `entries / 2^k` at strides 2^k with k ≤ b (the
/// targets reach 2^(b−k) sets) and `ways` from 2^b on (all in one set). So the capacities must
/// halve (within `tol`) up to some stride and then stay (at least one step) — the first stride of
/// the plateau is the set count; `ways` is `entries / sets`, and the plateau must agree with it
/// within 25% (the conflict capacity at one set reads a page or two high when the replacement
/// is not LRU: the extra pages miss only now and then); the first capacity times its stride
/// must be within 25% of `entries` (else the low bits below 2^k0 are not all in the index, or
/// the index is hashed: unclear). Still halving at the largest stride: only `sets ≥ 2^kmax`.
pub fn infer_from_conflicts(entries: f64, caps: &[StrideCapacity], tol: f64) -> Indexing {
    let listing = || {
        caps.iter()
            .map(|c| {
                format!(
                    "2^{}: {}",
                    c.log2_stride,
                    c.capacity.map_or("-".into(), |x| format!("{x:.0}"))
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let unclear = |why: &str| Indexing::Unclear {
        reason: format!("{why} (conflict-set capacities {})", listing()),
    };
    let Some(first) = caps.first() else {
        return unclear("no strides measured");
    };
    let vals: Option<Vec<f64>> = caps.iter().map(|c| c.capacity).collect();
    let Some(vals) = vals else {
        return unclear("a stride gave no capacity");
    };
    if first.log2_stride == 0
        || caps
            .windows(2)
            .any(|w| w[1].log2_stride != w[0].log2_stride + 1)
    {
        return unclear("strides must be consecutive powers of two from 2^1 on");
    }
    let k0 = first.log2_stride;
    let spread = vals[0] * (1u64 << k0) as f64 / entries;
    if !(0.75..=1.25).contains(&spread) {
        return unclear("the first stride does not reach entries/stride pages");
    }
    // Halvings first, then the plateau.
    let ratios: Vec<f64> = vals.windows(2).map(|w| w[1] / w[0]).collect();
    let halves = ratios
        .iter()
        .take_while(|r| (**r - 0.5).abs() <= 0.5 * tol)
        .count();
    let rest = &ratios[halves..];
    if !rest.iter().all(|r| (r - 1.0).abs() <= tol) {
        return unclear("capacity changed by neither 1× nor ½× between some strides");
    }
    let kb = k0 + halves as u32; // first stride of the plateau (or the last stride)
    let index_bits: Vec<u32> = (0..kb).collect();
    let sets = 1usize << kb;
    let ways = (entries / sets as f64).round().max(1.0) as usize;
    if rest.is_empty() {
        return Indexing::LinearAtLeast {
            min_sets: sets,
            max_ways: ways,
            index_bits,
            floor: 0,
        };
    }
    let plateau = crate::stats::median(&vals[halves..]);
    if !(0.75..=1.25).contains(&(plateau / ways as f64)) {
        return unclear("the plateau does not match entries / sets");
    }
    Indexing::Linear {
        sets,
        ways,
        index_bits,
    }
}

/// A level's sets and ways as conflict sets alone give them, without its stride-1 capacity.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConflictGeometry {
    pub sets: usize,
    /// The ways: the median over the strides up to the sets of capacity × stride / sets, each
    /// stride's own reading of them.
    pub ways: usize,
    /// The lowest and highest capacity × stride over the strides that still halve: each is a
    /// reading of `sets × ways` of its own.
    pub lo: f64,
    pub hi: f64,
    /// The ways as the slope of a least-squares line through the capacities against the
    /// number of sets the targets spread over (`sets / stride`, 1 from the sets on), and its
    /// intercept: pages the targets keep beyond the ways whatever the number of sets, which
    /// capacity × stride multiplies by the stride (`geometry_from_conflicts`).
    pub fitted_ways: usize,
    pub beyond: f64,
}

impl ConflictGeometry {
    pub fn entries(&self) -> usize {
        self.sets * self.ways
    }

    /// This geometry with the fitted ways instead of the median ones.
    pub fn as_fitted(&self) -> ConflictGeometry {
        ConflictGeometry {
            ways: self.fitted_ways,
            ..*self
        }
    }
}

/// Sets and ways from conflict-set capacities only, without the level's stride-1 capacity:
/// the sets are where the capacities stop halving ([`infer_from_conflicts`], given the first
/// stride's capacity × stride as the entries, so its check against the stride-1 capacity holds
/// by construction); every stride up to the sets reads `sets × ways` as its capacity × stride,
/// and the ways are their median over the sets. Only when the capacities halve at least once
/// and then stay: None for a sweep that lost a step, no plateau, a plateau from the first
/// stride (the sets are then only bounded), a hashed or folded index.
///
/// The ways are also fitted (`fitted_ways`, `beyond`): capacity = ways × sets spread over +
/// pages beyond. The two differ where the targets keep a few pages beyond the ways at every
/// stride, which capacity × stride multiplies by the stride: on the Zen 4 host (AMD EPYC
/// family 25 model 17; CPUID: 3072 L2 DTLB entries) the capacities at strides 16..512 read
/// 191-197, 99-102, 50-54, 25-27, 25-27, 25-26 in three runs, i.e. 24 ways and 2-6 pages
/// beyond at every stride: the median read 26 ways, the fit 24. Neither is right everywhere:
/// on Zen 5 (242, 125, 64, 31, 14, 15: 16 ways) the most spread stride reads low and the fit
/// says 15. [`crate::measure::conflict::arbitrate`] takes the one the stride-1 scan is nearer.
pub fn geometry_from_conflicts(caps: &[StrideCapacity], tol: f64) -> Option<ConflictGeometry> {
    let first = caps.first()?;
    let e0 = first.capacity? * (1u64 << first.log2_stride) as f64;
    let Indexing::Linear { sets, .. } = infer_from_conflicts(e0, caps, tol) else {
        return None;
    };
    if sets <= 1usize << first.log2_stride {
        return None;
    }
    let products: Vec<f64> = caps
        .iter()
        .filter(|c| (1usize << c.log2_stride) <= sets)
        .filter_map(|c| c.capacity.map(|x| x * (1u64 << c.log2_stride) as f64))
        .collect();
    let ways = (crate::stats::median(&products) / sets as f64)
        .round()
        .max(1.0) as usize;
    // Capacity against the sets the targets spread over (at least two distinct: the
    // capacities halve once before the plateau).
    let points: Vec<(usize, f64)> = caps
        .iter()
        .filter_map(|c| {
            let spread = (sets >> c.log2_stride.min(usize::BITS - 1)).max(1);
            c.capacity.map(|x| (spread, x))
        })
        .collect();
    let (slope, mean_spread, mean_capacity) = crate::analysis::knee::line_fit(&points);
    let beyond = mean_capacity - slope * mean_spread;
    Some(ConflictGeometry {
        sets,
        ways,
        lo: products.iter().copied().fold(f64::INFINITY, f64::min),
        hi: products.iter().copied().fold(0.0, f64::max),
        fitted_ways: slope.round().max(1.0) as usize,
        beyond,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Capacity at stride 2^k of a TLB with `sets` sets, `ways` ways and a given index function.
    fn simulate(
        entries_sets: usize,
        ways: usize,
        index: impl Fn(u64) -> u64,
        max_k: u32,
        floor: Option<f64>,
    ) -> Vec<StrideCapacity> {
        (0..=max_k)
            .map(|k| {
                // Count distinct sets among the first `entries` pages at this stride; the
                // effective capacity is (distinct sets) × ways, capped by the pages available.
                let n = entries_sets * ways;
                let distinct: std::collections::HashSet<u64> = (0..n as u64)
                    .map(|i| index(i << k) % entries_sets as u64)
                    .collect();
                let cap = (distinct.len() * ways) as f64;
                let capacity = match floor {
                    Some(f) if cap < f => None,
                    _ => Some(cap),
                };
                StrideCapacity {
                    log2_stride: k,
                    capacity,
                }
            })
            .collect()
    }

    #[test]
    fn given_a_fully_associative_64_entry_level_then_it_is_recognised() {
        let caps: Vec<_> = (0..=9)
            .map(|k| StrideCapacity {
                log2_stride: k,
                capacity: Some(64.0),
            })
            .collect();
        assert_eq!(
            infer_indexing(&caps, 0.2, None),
            Indexing::FullyAssociative {
                entries: 64,
                max_log2_stride: 9
            }
        );
    }

    #[test]
    fn given_skylake_l1_16_sets_4_ways_then_bits_0_to_3_index() {
        let caps = simulate(16, 4, |v| v & 15, 8, None);
        assert_eq!(infer_indexing(&caps, 0.2, None), linear(16, 4));
    }

    /// `sets` × `ways` indexed by the page number's low bits (`sets` a power of two).
    fn linear(sets: usize, ways: usize) -> Indexing {
        Indexing::Linear {
            sets,
            ways,
            index_bits: (0..sets.trailing_zeros()).collect(),
        }
    }

    fn strides(v: &[f64]) -> Vec<StrideCapacity> {
        conflicts(v, 0)
    }

    #[test]
    fn given_one_stray_stride_among_a_low_bits_index_then_the_index_stands() {
        let l1 = linear(16, 6);
        // The Intel VM's L1 DTLB, 2026-11-26: two runs of batch F.
        let a = strides(&[96.0, 54.0, 27.0, 13.0, 12.0, 6.0, 6.0]);
        assert_eq!(infer_indexing(&a, 0.2, None), l1);
        let b = strides(&[96.0, 53.0, 26.0, 13.0, 7.0, 7.0, 6.0, 6.0, 12.0, 6.0]);
        assert_eq!(infer_indexing(&b, 0.2, None), l1);
        // Two stray strides, or too few strides, stay unclear.
        let c = strides(&[96.0, 54.0, 27.0, 13.0, 12.0, 6.0, 12.0, 6.0]);
        assert!(matches!(
            infer_indexing(&c, 0.2, None),
            Indexing::Unclear { .. }
        ));
        let d = strides(&[96.0, 54.0, 13.0, 12.0, 6.0]);
        assert!(matches!(
            infer_indexing(&d, 0.2, None),
            Indexing::Unclear { .. }
        ));
        // Two readings with one stray stride each (16 × 6 or 8 × 12).
        let e = strides(&[96.0, 54.0, 27.0, 13.0, 12.0, 6.0]);
        assert_eq!(low_bits_but_one(&e, 0.2), None);
    }

    #[test]
    fn given_skylake_stlb_xor7_then_folding_is_detected() {
        let caps = simulate(128, 12, |v| (v & 127) ^ ((v >> 7) & 127), 16, None);
        assert_eq!(
            infer_indexing(&caps, 0.2, None),
            Indexing::XorFolded {
                sets: 128,
                ways: 12,
                high_bits: vec![7, 8, 9, 10, 11, 12, 13],
                low_bits_enter: true
            }
        );
    }

    #[test]
    fn given_a_2048_entry_level_hidden_below_64_then_only_bounds_are_given() {
        // Zen 3 L2 DTLB as seen behind a 64-entry L1: 128 sets × 16 ways (vendor: "8–15 ways").
        let caps = simulate(128, 16, |v| v & 127, 9, Some(64.0));
        match infer_indexing(&caps, 0.2, Some(64)) {
            Indexing::LinearAtLeast {
                min_sets,
                max_ways,
                index_bits,
                ..
            } => {
                assert_eq!(index_bits, vec![0, 1, 2, 3, 4]);
                assert_eq!(min_sets, 64);
                assert_eq!(max_ways, 32);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn given_halving_up_to_the_last_stride_then_only_a_lower_bound_is_claimed() {
        let v = [1600.0, 880.0, 520.0, 257.0, 132.0];
        let caps = strides(&v);
        match infer_indexing(&caps, 0.2, Some(64)) {
            Indexing::LinearAtLeast {
                min_sets,
                index_bits,
                ..
            } => {
                assert_eq!(min_sets, 16);
                assert_eq!(index_bits, vec![0, 1, 2, 3]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn given_noisy_capacities_within_tolerance_then_the_answer_holds() {
        let caps = strides(&[64.0, 33.5, 15.2, 8.4, 3.9, 4.1, 4.0]);
        assert_eq!(infer_indexing(&caps, 0.2, None), linear(16, 4));
    }

    fn conflicts(v: &[f64], k0: u32) -> Vec<StrideCapacity> {
        v.iter()
            .enumerate()
            .map(|(i, &c)| StrideCapacity {
                log2_stride: k0 + i as u32,
                capacity: Some(c),
            })
            .collect()
    }

    #[test]
    fn given_zen5_like_conflict_capacities_then_256_sets_of_16_ways() {
        // Read on the development VM (half-rise of the per-target excess, strides 16..512).
        let caps = conflicts(&[290.0, 135.0, 66.0, 35.0, 18.0, 18.0], 4);
        assert_eq!(infer_from_conflicts(4130.0, &caps, 0.2), linear(256, 16));
        // Exact values of a 128-set, 12-way level from stride 2 on.
        let caps = conflicts(
            &[768.0, 384.0, 192.0, 96.0, 48.0, 24.0, 12.0, 12.0, 12.0],
            1,
        );
        assert_eq!(infer_from_conflicts(1536.0, &caps, 0.2), linear(128, 12));
    }

    #[test]
    fn given_conflict_capacities_still_halving_then_only_a_lower_bound() {
        let caps = conflicts(&[256.0, 128.0, 64.0, 32.0], 4);
        match infer_from_conflicts(4096.0, &caps, 0.2) {
            Indexing::LinearAtLeast { min_sets, .. } => assert_eq!(min_sets, 128),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn given_conflict_capacities_that_do_not_fit_then_unclear() {
        let unclear = |e: f64, v: &[f64]| {
            matches!(
                infer_from_conflicts(e, &conflicts(v, 4), 0.2),
                Indexing::Unclear { .. }
            )
        };
        // The first stride reaches far more than entries/16: low bits hashed or not indexed.
        assert!(unclear(4096.0, &[1024.0, 512.0, 256.0, 128.0]));
        // A ratio of 0.7 between two strides.
        assert!(unclear(4096.0, &[256.0, 180.0, 90.0, 45.0]));
        // Halving again after a plateau.
        assert!(unclear(4096.0, &[256.0, 128.0, 128.0, 64.0]));
        // Errors adding up: a plateau at 43 where entries/sets says 32.
        assert!(unclear(4096.0, &[250.0, 140.0, 77.0, 43.0, 43.0]));
        // A stride without a reading.
        let mut caps = conflicts(&[256.0, 128.0], 4);
        caps[1].capacity = None;
        assert!(matches!(
            infer_from_conflicts(4096.0, &caps, 0.2),
            Indexing::Unclear { .. }
        ));
    }

    #[test]
    fn given_conflict_capacities_alone_then_sets_times_ways_is_the_entries() {
        // Read on the Zen 3 host (2026-11-24, strides 16..512), whose stride-1 scan that run read
        // a rise at 1451 before the ramp at ~2050: the conflict sets say 128 × 16 = 2048.
        let g =
            geometry_from_conflicts(&conflicts(&[129.0, 64.0, 32.0, 16.0, 16.0, 16.0], 4), 0.25)
                .expect("a halving run and a plateau");
        assert_eq!((g.sets, g.ways, g.entries()), (128, 16, 2048));
        // The readings of sets × ways: 129·16, 64·32, 32·64 and 16·128.
        assert_eq!((g.lo, g.hi), (2048.0, 2064.0));
        assert_eq!(g.fitted_ways, 16);
        assert!(g.beyond.abs() < 1.0, "{}", g.beyond);
        // Zen 5 (docs/probe.md, full run 8): 256 × 16; the one-set reading 14 · 256 is the lowest.
        let g =
            geometry_from_conflicts(&conflicts(&[242.0, 125.0, 64.0, 31.0, 14.0, 15.0], 4), 0.25)
                .unwrap();
        assert_eq!((g.sets, g.ways, g.entries()), (256, 16, 4096));
        assert_eq!((g.lo, g.hi), (3584.0, 4096.0));
        // Its most spread stride reads low: the fit says 15.
        assert_eq!(g.fitted_ways, 15);
        // Zen 4 (2026-11-24, three runs): 24 ways and a few pages beyond at every stride. The
        // median of capacity × stride reads 25-26; the fit, 24 (3072, as CPUID declares).
        for caps in [
            [191.0, 102.0, 52.0, 27.0, 27.0, 25.0],
            [191.0, 99.0, 50.0, 25.0, 25.0, 26.0],
            [197.0, 102.0, 54.0, 27.0, 26.0, 26.0],
        ] {
            let g = geometry_from_conflicts(&conflicts(&caps, 4), 0.25).unwrap();
            assert_eq!((g.sets, g.fitted_ways), (128, 24), "{caps:?}");
            assert!((25..=26).contains(&g.ways), "{caps:?}");
            assert_eq!(g.as_fitted().entries(), 3072);
            assert!((1.0..4.0).contains(&g.beyond), "{}", g.beyond);
        }
    }

    #[test]
    fn given_conflict_capacities_without_a_plateau_or_a_halving_then_no_geometry() {
        let none = |v: &[f64]| geometry_from_conflicts(&conflicts(v, 4), 0.25).is_none();
        // Still halving at the largest stride: the ways are not seen.
        assert!(none(&[256.0, 128.0, 64.0, 32.0]));
        // No halving at all: fully associative or hashed, no sets to multiply.
        assert!(none(&[64.0, 64.0, 64.0]));
        // Halving after a plateau.
        assert!(none(&[256.0, 128.0, 128.0, 64.0]));
        // A stride without a reading.
        let mut caps = conflicts(&[256.0, 128.0, 128.0], 4);
        caps[1].capacity = None;
        assert!(geometry_from_conflicts(&caps, 0.25).is_none());
        assert!(geometry_from_conflicts(&[], 0.25).is_none());
    }

    #[test]
    fn given_an_inconsistent_sweep_then_it_says_unclear() {
        let v = [64.0, 40.0, 64.0, 64.0];
        let caps = strides(&v);
        assert!(matches!(
            infer_indexing(&caps, 0.2, None),
            Indexing::Unclear { .. }
        ));
        assert!(matches!(
            infer_indexing(&[], 0.2, None),
            Indexing::Unclear { .. }
        ));
    }
}
