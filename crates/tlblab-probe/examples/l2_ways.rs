//! Exploration: conflict sets for the L2 DTLB past the L1. T target pages `stride` pages apart
//! (all even VPNs) plus F filler pages on odd VPNs (never in a target's set for a linear index of
//! ≥ 2 sets), in one random cycle: T + F > the L1's 96 entries, so every access misses the L1,
//! and the targets miss the L2 once more than (ways × sets/stride) of them share sets.
//! Control: the same with T more fillers instead of targets.
//! `cargo run --release -p tlblab-probe --example l2_ways -- FILLERS REPS STRIDE...`
use tlblab_probe::chase::{build_on_pages, time_chain};
use tlblab_probe::measure::curve::low_order_stat;
use tlblab_probe::sys::{self, Region, Thp, PAGE};

fn main() {
    let a: Vec<usize> = std::env::args()
        .skip(1)
        .map(|s| s.parse().unwrap())
        .collect();
    let (fillers, reps) = (a[0], a[1]);
    sys::pin_to(sys::allowed_cpus()[0]).unwrap();
    let _ = sys::raise_priority();
    for &stride in &a[2..] {
        let tmax = (6000 / stride).clamp(24, 400);
        let span = (tmax * stride).max(2 * (fillers + tmax) + 2) + 2;
        let region = Region::new(span * PAGE, 2 << 20, Thp::Never).unwrap();
        let mut line = Vec::new();
        let mut t = 4usize;
        while t <= tmax {
            let targets: Vec<usize> = (0..t).map(|k| k * stride).collect();
            let fill: Vec<usize> = (0..fillers).map(|j| 2 * j + 1).collect();
            let ctrl_fill: Vec<usize> = (0..fillers + t).map(|j| 2 * j + 1).collect();
            let test_pages: Vec<usize> = targets.iter().chain(&fill).copied().collect();
            let (mut xs, mut cs) = (Vec::new(), Vec::new());
            for r in 0..reps {
                let s = build_on_pages(&region, &test_pages, 7 + r as u64);
                xs.push(unsafe { time_chain(s, test_pages.len(), 100_000) });
                let c = build_on_pages(&region, &ctrl_fill, 9 + r as u64);
                cs.push(unsafe { time_chain(c, ctrl_fill.len(), 100_000) });
            }
            // ns per target access of excess
            let ex = (low_order_stat(&xs) - low_order_stat(&cs)) * (t + fillers) as f64 / t as f64;
            line.push(format!("{t}:{ex:.1}"));
            t = ((t as f64) * 1.12).ceil() as usize;
        }
        println!("stride {stride}: {}", line.join(" "));
    }
}
