//! Memory-level parallelism: how many data misses and how many page walks the core keeps in
//! flight at once, by timing `k` independent chases followed in lockstep
//! ([`crate::chase::time_lanes`]).
//!
//! One chase's loads depend on each other, so its ns per access is a latency; `k` of them in
//! lockstep put up to `k` misses in flight, and the ns per access falls as 1/k until a resource is
//! full, then stays. Two chases over the same number of lines:
//! - `data`: the lines packed 64 to a page in few pages (transparent huge pages asked for), so the
//!   translations stay in the TLBs while the lines, more than the L2 cache holds, miss it: what
//!   fills is the first-level data cache's miss buffers. Their number is the chase's latency over
//!   its fastest time per access (Little's law: misses in flight = latency x throughput);
//! - `walks`: one line of each of as many 4 KiB pages, far past the TLBs' reach, so every access
//!   walks: what fills is the page walkers, each held for the walk's part of an access (the walk
//!   chase's latency less the data chase's, the same lines' cost without a walk). Their number is
//!   that part over the walk chase's fastest time per access, when the walkers and not the miss
//!   buffers bound it.
//!
//! These are the first-order model's two limits (Karkhanis and Smith, "A first-order superscalar
//! processor model", ISCA 2004; the engine's `timing.mlp` `miss_slots` and `walkers`), measured
//! where they bind, with no vendor figure.

use crate::chase::{build_lanes, span_bytes, time_lanes, Layout, Order};
use crate::sys::{Region, Thp};
use serde::{Deserialize, Serialize};

/// Lanes timed (`time_lanes` supports these).
pub const LANES: [usize; 8] = [1, 2, 4, 8, 12, 16, 24, 32];
/// Lanes timed by a quick run.
pub const QUICK_LANES: [usize; 6] = [1, 2, 4, 8, 16, 32];

/// One chase's time per access with `lanes` chases in lockstep: the fastest of its repetitions.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct LanePoint {
    pub lanes: usize,
    pub ns: f64,
}

/// What the two chases found.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Mlp {
    /// Lines each chase visits (the walk chase: as many 4 KiB pages).
    pub lines: usize,
    pub data: Vec<LanePoint>,
    pub walks: Vec<LanePoint>,
    /// Data misses in flight: the data chase's latency (`latency`) over its fastest time per
    /// access.
    pub miss_slots: f64,
    /// A walk's part of an access, ns: the walk chase's latency less the data chase's.
    pub walk_ns: f64,
    /// Page walks in flight: `walk_ns` over the walk chase's fastest time per access.
    pub walkers: f64,
    /// Whether the walkers bound the walk chase: its fastest time per access is above what the
    /// miss buffers alone allow (its latency over `miss_slots`, with 20% to spare). When false,
    /// `walkers` is a lower bound.
    pub walkers_bound: bool,
}

fn fastest(points: &[LanePoint]) -> Option<LanePoint> {
    points
        .iter()
        .copied()
        .filter(|p| p.ns.is_finite() && p.ns > 0.0)
        .min_by(|a, b| a.ns.total_cmp(&b.ns))
}

/// The chase's latency: the one-lane time, or twice the two-lane time if lower (two lanes cannot
/// beat half the latency, so the lower of the two is the closer; a one-lane window slowed by a
/// neighbour's burst is read past: 178 ns against 87 on the Intel guest once, 2026-12-01).
fn latency(points: &[LanePoint]) -> Option<f64> {
    let one = points.iter().find(|p| p.lanes == 1)?.ns;
    Some(
        points
            .iter()
            .find(|p| p.lanes == 2)
            .map_or(one, |p| one.min(2.0 * p.ns)),
    )
}

/// Reads the miss slots and walkers from the two chases' times (module docs); None when either
/// lacks its one-lane latency or its walk part is not positive.
pub fn analyse(lines: usize, data: Vec<LanePoint>, walks: Vec<LanePoint>) -> Option<Mlp> {
    let (d1, w1) = (latency(&data)?, latency(&walks)?);
    let (dmin, wmin) = (fastest(&data)?, fastest(&walks)?);
    let miss_slots = d1 / dmin.ns;
    let walk_ns = w1 - d1;
    if walk_ns <= 0.0 {
        return None;
    }
    let walkers = walk_ns / wmin.ns;
    let walkers_bound = wmin.ns > 1.2 * w1 / miss_slots;
    Some(Mlp {
        lines,
        data,
        walks,
        miss_slots,
        walk_ns,
        walkers,
        walkers_bound,
    })
}

/// Times `starts` (built over `n` elements) `reps` times; the fastest.
fn time(starts: &[*const usize], n: usize, reps: usize, window_ns: u64) -> f64 {
    (0..reps.max(1))
        // SAFETY: `starts` were built by `build_lanes` over `n` elements of a live region.
        .map(|_| unsafe { time_lanes(starts, n, window_ns) })
        .fold(f64::INFINITY, f64::min)
}

/// Measures both chases over `lines` lines at each of `lanes` (module docs).
pub fn measure(
    lines: usize,
    lanes: &[usize],
    reps: usize,
    window_ns: u64,
    seed: u64,
) -> Option<Mlp> {
    let data_layout = Layout::Packed;
    let walk_layout = Layout::PerPage { stride: 1 };
    let data_region = Region::new(span_bytes(data_layout, lines), 2 << 20, Thp::Always).ok()?;
    let walk_region = Region::new(span_bytes(walk_layout, lines), 2 << 20, Thp::Never).ok()?;
    let mut data = Vec::new();
    let mut walks = Vec::new();
    for &k in lanes {
        let starts = build_lanes(&data_region, data_layout, Order::Random(seed), lines, k);
        data.push(LanePoint {
            lanes: k,
            ns: time(&starts, lines, reps, window_ns),
        });
        let starts = build_lanes(&walk_region, walk_layout, Order::Random(seed ^ 1), lines, k);
        walks.push(LanePoint {
            lanes: k,
            ns: time(&starts, lines, reps, window_ns),
        });
    }
    analyse(lines, data, walks)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chase whose accesses cost `latency` ns each alone and of which `limit` fit in flight.
    fn curve(latency: f64, limit: f64) -> Vec<LanePoint> {
        LANES
            .iter()
            .map(|&k| LanePoint {
                lanes: k,
                ns: (latency / k as f64).max(latency / limit),
            })
            .collect()
    }

    #[test]
    fn given_16_miss_buffers_and_4_walkers_then_both_are_read_back() {
        // Data: 35 ns a line, 16 in flight. Walks: 45 ns of walk before the same line, a walker
        // held for the walk: 4 walkers allow one access every 45/4 ns.
        let data = curve(35.0, 16.0);
        let walks: Vec<LanePoint> = LANES
            .iter()
            .map(|&k| LanePoint {
                lanes: k,
                ns: (80.0 / k as f64).max(45.0 / 4.0).max(80.0 / 16.0),
            })
            .collect();
        let m = analyse(65536, data, walks).unwrap();
        assert!((m.miss_slots - 16.0).abs() < 1e-9, "{m:?}");
        assert!((m.walk_ns - 45.0).abs() < 1e-9);
        assert!((m.walkers - 4.0).abs() < 1e-9, "{m:?}");
        assert!(m.walkers_bound);
    }

    #[test]
    fn given_walkers_enough_for_the_buffers_then_the_walkers_are_a_lower_bound() {
        // 16 walkers: the miss buffers bind first (80/16 ns an access), so the walkers read
        // 45/5 = 9 at least, and say so.
        let data = curve(35.0, 16.0);
        let walks = curve(80.0, 16.0);
        let m = analyse(65536, data, walks).unwrap();
        assert!(!m.walkers_bound, "{m:?}");
        assert!((m.walkers - 9.0).abs() < 1e-9);
    }

    #[test]
    fn given_a_disturbed_single_lane_then_the_two_lane_time_gives_the_latency() {
        let data = curve(35.0, 16.0);
        let mut walks: Vec<LanePoint> = LANES
            .iter()
            .map(|&k| LanePoint {
                lanes: k,
                ns: (80.0 / k as f64).max(45.0 / 4.0),
            })
            .collect();
        walks[0].ns = 180.0;
        let m = analyse(65536, data, walks).unwrap();
        assert!((m.walkers - 4.0).abs() < 1e-9, "{m:?}");
    }

    #[test]
    fn given_no_walk_part_or_no_latency_then_nothing_is_read() {
        assert!(analyse(1, curve(35.0, 16.0), curve(30.0, 4.0)).is_none());
        let no_single: Vec<LanePoint> = curve(35.0, 16.0).into_iter().skip(1).collect();
        assert!(analyse(1, no_single, curve(80.0, 4.0)).is_none());
    }
}
