//! Exploration: many fine scans of the L2 DTLB's knee, one after another, each trial's lower
//! envelope printed as one JSON line with its start time (for studying how interference varies
//! over seconds). `cargo run --release -p tlblab-probe --example l2_trials -- TRIALS REPS LO HI LANES...`
//! (LANES: 1 for the probe's one chain; 4 or 8 for independent chains in lockstep, see
//! `DataChains::with_lanes`; each trial runs once per LANES value).

mod common;
use tlblab_probe::analysis::geometric_points;
use tlblab_probe::chase::{Layout, Order};
use tlblab_probe::measure::curve::sweep;
use tlblab_probe::measure::dtlb::DataChains;
use tlblab_probe::sys::{self, Thp};

fn main() {
    let a = common::numbers();
    let (trials, reps, lo, hi) = (a[0], a[1], a[2], a[3]);
    let lanes: Vec<usize> = a[4..].to_vec();
    sys::pin_and_raise().unwrap();
    let ns = geometric_points(lo, hi, 0.01);
    let t0 = std::time::Instant::now();
    for t in 0..trials {
        for &l in &lanes {
            let start = t0.elapsed().as_secs_f64();
            let mut inst = DataChains::new(
                hi + 8,
                Layout::PerPage { stride: 1 },
                Order::Random(77 + t as u64),
                Thp::Never,
            )
            .unwrap()
            .with_lanes(l);
            let rows = sweep(&mut inst, &ns, reps, 100_000, 5 + t as u64);
            let pts: Vec<(usize, f64, f64)> = rows
                .iter()
                .map(|r| (r.n, r.floor(), r.excess.median))
                .collect();
            println!(
                "{}",
                serde_json::json!({"t": start, "lanes": l, "dur": t0.elapsed().as_secs_f64() - start, "pts": pts})
            );
        }
    }
}
