//! How a set-associative level replaces entries, as a random cyclic chain over every set sees
//! it: from the shape of the lower envelope past the level's rise.
//!
//! Why the shape tells: with the chain's pages spread evenly over S sets of W ways, a chain of
//! n = C + j·S pages (C where it starts losing pages) puts W' + j pages in each set the chain
//! can use. Under LRU (and tree-PLRU, FIFO) a cyclic chain one page longer than a set misses on
//! every access of that set, so the envelope climbs to a walk within one set count of pages,
//! C + S. Under random replacement a set of W' + j pages keeps most of itself: the miss share
//! grows slowly (≈ 10% of accesses at 1.05 C, ≈ 45% at 1.4 C for 24 ways, the engine's random
//! policy on the probe's chain), so by C + 1.5 S only a small part of the rise to 1.4 C is
//! taken. `share` is that part: ≈ 1 for LRU-like policies, 0.30-0.43 for random replacement
//! of 24-12 ways on the probe's TLB model (`model.rs`).
//!
//! Measured on the Zen 4 host (docs/probe.md): share 0.25-0.39 in 30 runs, and the envelope past the rise
//! follows the engine's random replacement within 0.05-0.09 of the miss share at every point
//! from 0.75 to 1.25 × 3072 pages (an L2 DTLB of 128 sets, the chain keeping 19 of the 24 ways).

use serde::{Deserialize, Serialize};

/// The verdict on a level's replacement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Shape {
    /// The whole step is taken within 1.5 set counts of the rise (LRU, tree-PLRU, FIFO).
    LruLike,
    /// The rise is spread over far more than a set count (random replacement).
    RandomLike,
    /// In between: neither reading holds.
    Unclear,
}

impl Shape {
    pub fn as_str(&self) -> &'static str {
        match self {
            Shape::LruLike => "LRU-like",
            Shape::RandomLike => "random-like",
            Shape::Unclear => "unclear",
        }
    }
}

/// The replacement reading: `share` of the envelope's rise from its plateau to `top_at` pages
/// (1.4 C) that it has taken at `at` pages (C + 1.5 S).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplacementShape {
    pub share: f64,
    pub shape: Shape,
    pub at: usize,
    pub top_at: usize,
    /// The plateau (ns of excess before the rise) and the envelope at `at` and `top_at`.
    pub plateau: f64,
    pub at_ns: f64,
    pub top_ns: f64,
}

/// At or above: LRU-like; at or below `RANDOM_MAX`: random-like. A random policy of 12-24 ways
/// takes 0.30-0.43 of the rise by C + 1.5 S (module doc); LRU all of it. Between the two, nothing
/// is said.
pub const LRU_MIN: f64 = 0.7;
pub const RANDOM_MAX: f64 = 0.5;

/// The replacement shape from a non-decreasing lower envelope (N, ns of excess), the level's
/// rise `c` (where the chain starts losing pages) and its set count. None when the envelope does
/// not reach 1.3 `c`, holds no plateau point in [0.85, 0.97] `c`, the level has fewer than 12
/// ways' worth of pages a set (`c / sets`: past C + 1.5 S the LRU ramp and random replacement
/// are then too close), or the rise is under 0.5 ns (no walk to see).
pub fn replacement_shape(
    envelope: &[(usize, f64)],
    c: usize,
    sets: usize,
) -> Option<ReplacementShape> {
    if sets == 0 || c < 12 * sets {
        return None;
    }
    let at = c + 3 * sets / 2;
    // 1.4 C, or the envelope's last point if it stops between 1.3 and 1.4 C (the probe's fine
    // scan ends at 1.4 × the coarse knee's upper end, on its own grid).
    let last = envelope.last()?.0;
    if (last as f64) < 1.3 * c as f64 {
        return None;
    }
    let top_at = last.min((1.4 * c as f64).round() as usize);
    // The first point at or past `n` (the envelope is non-decreasing, so the lowest there).
    let value_at = |n: usize| envelope.iter().find(|p| p.0 >= n).map(|p| p.1);
    let plateau_points: Vec<f64> = envelope
        .iter()
        .filter(|p| p.0 as f64 >= 0.85 * c as f64 && p.0 as f64 <= 0.97 * c as f64)
        .map(|p| p.1)
        .collect();
    if plateau_points.is_empty() {
        return None;
    }
    let plateau = crate::stats::median(&plateau_points);
    let (at_ns, top_ns) = (value_at(at)?, value_at(top_at)?);
    if top_ns - plateau < 0.5 {
        return None;
    }
    let share = ((at_ns - plateau) / (top_ns - plateau)).clamp(0.0, 1.0);
    let shape = if share >= LRU_MIN {
        Shape::LruLike
    } else if share <= RANDOM_MAX {
        Shape::RandomLike
    } else {
        Shape::Unclear
    };
    Some(ReplacementShape {
        share,
        shape,
        at,
        top_at,
        plateau,
        at_ns,
        top_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::knee::{monotone_floor, pooled_envelope, scan_points};
    use crate::analysis::model::{model_scan, Disturbance, Policy};

    fn envelope(sets: usize, ways: usize, p: Policy, seed: u64) -> Vec<(usize, f64)> {
        let c = sets * ways;
        let d = Disturbance {
            between: c / 16,
            bursts_per_window: 1.0,
            burst_pages: 40,
            per_pass: 2,
            warmup: 2,
        };
        let ns = scan_points(c * 9 / 10, c);
        let scans: Vec<_> = (0..3)
            .map(|t| monotone_floor(&model_scan(sets, ways, p, &d, &ns, 9, seed * 10 + t).0))
            .collect();
        pooled_envelope(&scans)
    }

    #[test]
    fn lru_reads_lru_like_and_random_replacement_random_like() {
        // Shares on this model (2026-11-26): LRU 1.00 everywhere; random 0.42-0.43 (12 ways),
        // 0.37-0.38 (16), 0.30-0.31 (24).
        for (sets, ways) in [(64, 12), (64, 16), (32, 24)] {
            for seed in 1..=2 {
                let c = sets * ways;
                let lru = replacement_shape(&envelope(sets, ways, Policy::Lru, seed), c, sets)
                    .expect("lru");
                assert_eq!(lru.shape, Shape::LruLike, "{sets}x{ways} lru {lru:?}");
                let random =
                    replacement_shape(&envelope(sets, ways, Policy::Random, seed), c, sets)
                        .expect("random");
                assert_eq!(
                    random.shape,
                    Shape::RandomLike,
                    "{sets}x{ways} random {random:?}"
                );
            }
        }
    }

    #[test]
    fn too_few_ways_a_short_envelope_or_no_rise_say_nothing() {
        let env: Vec<(usize, f64)> = (100..=2000).step_by(10).map(|n| (n, 1.0)).collect();
        // 8 pages a set: too few.
        assert_eq!(replacement_shape(&env, 1024, 128), None);
        // No rise.
        assert_eq!(replacement_shape(&env, 1024, 64), None);
        // Short of 1.4 C.
        let short: Vec<(usize, f64)> = env.iter().copied().filter(|p| p.0 < 1400).collect();
        assert_eq!(replacement_shape(&short, 1024, 64), None);
    }

    #[test]
    fn the_zen4_hosts_envelope_reads_random_like() {
        // The stride-1 chain's lower envelope on the Zen 4 host (2026-11-26,
        // `examples/l2_stride_chains 3072 21 1`, shares of 3072 pages, ns of excess), read
        // against the trials' rise at 2401 pages and 128 sets.
        let zen4: Vec<(usize, f64)> = [
            (0.55, 2.2),
            (0.70, 2.2),
            (0.75, 2.2),
            (0.80, 2.6),
            (0.85, 3.7),
            (0.90, 3.7),
            (0.95, 4.7),
            (1.00, 5.9),
            (1.05, 7.8),
            (1.10, 8.7),
            (1.15, 10.0),
        ]
        .iter()
        .map(|&(s, y)| ((s * 3072.0) as usize, y))
        .collect();
        let r = replacement_shape(&zen4, 2401, 128).expect("reading");
        assert_eq!(r.shape, Shape::RandomLike, "{r:?}");
        assert!(r.share < 0.3, "{r:?}");
    }
}
