//! Load-to-use latency of the data-cache levels past the L2 and of memory: a dependent chase
//! over footprints from 2 to 256 MiB whose TLB misses are rare, so that what it times is where
//! its lines are served from.
//!
//! Why a chase of its own: the capacity sweep's packed control (one line per element, 64 to a
//! page, in random order) gives the L2's latency (`tlblab probe`'s machine file), but past the
//! L2 DTLB's reach its random order misses the TLB on nearly every access, and a guest on a
//! hypervisor that backs it with 4 KiB pages cannot widen the reach with huge pages (a combined
//! translation covers the smaller page). Here the lines are visited window by window: all the
//! lines of one 2 MiB window in random order, then those of another window (the windows in
//! random order too), so a page is entered once for its 64 lines: at most one walk every 64
//! loads, and none at all where a 2 MiB translation holds. Inside a window the order is random,
//! so neither the stream nor the stride prefetchers can follow it, and its lines spread over
//! the window's DRAM rows. The footprint sets the level: a lap touches every line once, so a
//! footprint past a level's capacity finds almost nothing of it there on the next lap (random
//! order within a window, windows reshuffled: no line's reuse distance is short).

use crate::chase::{follow, Layout, Order, OwnedChain};
use crate::stats::Summary;
use crate::sys::{now_ns, undisturbed_window, Thp, LINE};
use serde::{Deserialize, Serialize};
use std::hint::black_box;

/// The lines a window holds: 2 MiB of them (512 pages).
pub const WINDOW_LINES: usize = (2 << 20) / LINE;

/// One footprint's latency.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct MemoryPoint {
    /// Bytes of lines the chase touches in a lap.
    pub bytes: usize,
    /// ns per access over the repetitions' windows.
    pub ns: Summary,
    /// Whether the region was backed by transparent huge pages (`AnonHugePages` is not read:
    /// this is what was asked).
    pub thp: bool,
    /// The median of each sweep's windows, in sweep order (`memory_latencies` times every
    /// footprint once a sweep, the sweeps one after the other); empty in a report written before
    /// 2026-11-30. A guest whose L3 is shared with other tenants' cores reads its L3 at two
    /// speeds, seconds apart (the Zen 4 guest, 2026-11-30: 2 MiB at 52.0 ns in one sweep, 13.1-13.9
    /// in the next two): the sweeps show which.
    #[serde(default)]
    pub sweeps: Vec<f64>,
}

/// Times the windowed chase over `bytes` of lines: `reps` windows of `window_ns` each, ns per
/// access. The warm-up is one lap (at most 2^20 loads: a lap of 256 MiB in memory is 4 Mi loads,
/// and its first lap is as cold as the rest).
pub fn memory_latency(
    bytes: usize,
    reps: usize,
    window_ns: u64,
    seed: u64,
) -> std::io::Result<MemoryPoint> {
    let (bytes, xs) = chase_windows(bytes, reps, window_ns, seed)?;
    Ok(MemoryPoint {
        bytes,
        ns: Summary::of(&xs),
        thp: true,
        sweeps: Vec::new(),
    })
}

/// `memory_latency`'s windows: the footprint chased (whole windows) and ns per access of each.
fn chase_windows(
    bytes: usize,
    reps: usize,
    window_ns: u64,
    seed: u64,
) -> std::io::Result<(usize, Vec<f64>)> {
    let n = (bytes / LINE).max(WINDOW_LINES);
    let order = Order::Windowed {
        seed,
        window: WINDOW_LINES,
    };
    let chain = OwnedChain::new(Layout::Packed, order, n, Thp::Always)?;
    // SAFETY: the chain of `n` elements lives in `chain`'s region until the end.
    let mut p = unsafe { follow(chain.start(), (n as u64).min(1 << 20)) };
    let mut xs = Vec::with_capacity(reps);
    for _ in 0..reps.max(1) {
        xs.push(undisturbed_window(|| {
            let chunk = 16_384u64;
            let mut total = 0u64;
            let t0 = now_ns();
            let mut t1;
            loop {
                // SAFETY: as above.
                p = unsafe { follow(p, chunk) };
                total += chunk;
                t1 = now_ns();
                if t1 - t0 >= window_ns {
                    break;
                }
            }
            (t1 - t0) as f64 / total as f64
        }));
    }
    black_box(p);
    Ok((n * LINE, xs))
}

/// The footprints a run times, in MiB: 2, 4, 6, 8, 12, 16, 24, 32, then 64 to 256 by doubling
/// (quick: 4, 6, 8, 16, 128 and 256). Between the L2 and a 32 MiB L3 the steps are half of a
/// doubling, so that the footprint where a lap stops finding its lines in the L3 is located to
/// within 50%: on a guest whose L3 is shared with other tenants' cores that is well below the
/// size sysfs lists (the Zen 4 guest, 2026-11-30: 13.7 ns at 4 MiB, 116 ns at 8 MiB, of a 32 MiB
/// L3). The machine file's writer (`tlblab.probe`) reads the L3's latency and the share of it
/// this guest gets from the points between 4x the L2 and the L3's size, and memory's from those
/// of 4x the L3 on, by the sizes sysfs lists.
pub fn footprints(quick: bool) -> Vec<usize> {
    let mib: &[usize] = if quick {
        &[4, 6, 8, 16, 128, 256]
    } else {
        &[2, 4, 6, 8, 12, 16, 24, 32, 64, 128, 256]
    };
    mib.iter().map(|m| m << 20).collect()
}

/// Sweeps over the footprints: 3 (quick: 2), one after the other, each timing every footprint
/// with `reps` windows (module doc; `MemoryPoint::sweeps`).
pub const SWEEPS: [usize; 2] = [3, 2];

/// Every footprint's latency, its windows pooled over the sweeps (`SWEEPS`, each footprint timed
/// once a sweep, so that a phase of other tenants' load falls on all of them alike), with each
/// sweep's median; or the error of the one that could not be mapped.
pub fn memory_latencies(
    quick: bool,
    reps: usize,
    window_ns: u64,
    seed: u64,
) -> Result<Vec<MemoryPoint>, String> {
    let sizes = footprints(quick);
    let mut pooled: Vec<(usize, Vec<f64>, Vec<f64>)> = Vec::with_capacity(sizes.len());
    for sweep in 0..SWEEPS[quick as usize] {
        for (i, &b) in sizes.iter().enumerate() {
            let (bytes, xs) = chase_windows(b, reps, window_ns, seed)
                .map_err(|e| format!("memory latency chase over {} MiB: {e}", b >> 20))?;
            if sweep == 0 {
                pooled.push((bytes, Vec::new(), Vec::new()));
            }
            pooled[i].2.push(Summary::of(&xs).median);
            pooled[i].1.extend(xs);
        }
    }
    Ok(pooled
        .into_iter()
        .map(|(bytes, xs, sweeps)| MemoryPoint {
            bytes,
            ns: Summary::of(&xs),
            thp: true,
            sweeps,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chase::visit_order;

    #[test]
    fn windowed_order_visits_each_window_whole_then_the_next() {
        let (n, w) = (10 * 64 + 7, 64);
        let order = visit_order(Order::Windowed { seed: 3, window: w }, n);
        let mut seen = order.clone();
        seen.sort_unstable();
        assert_eq!(
            seen,
            (0..n).collect::<Vec<_>>(),
            "one visit of every element"
        );
        // Cut into runs of one window each: every run stays inside its window.
        let mut k = 0;
        while k < n {
            let win = order[k] / w;
            let len = if win == n / w { n % w } else { w };
            assert!(
                order[k..k + len].iter().all(|&e| e / w == win),
                "window {win} interleaved"
            );
            k += len;
        }
        assert_ne!(
            order[..w],
            (0..w).collect::<Vec<_>>()[..],
            "random inside a window"
        );
        assert_eq!(
            order,
            visit_order(Order::Windowed { seed: 3, window: w }, n),
            "the same for a seed"
        );
    }

    #[test]
    fn a_small_footprint_times_and_reports_its_bytes() {
        let p = memory_latency(WINDOW_LINES * LINE, 1, 200_000, 1).unwrap();
        assert_eq!(p.bytes, 2 << 20);
        assert!(p.ns.median > 0.0 && p.ns.median.is_finite());
        assert_eq!(p.ns.n, 1);
    }
}
