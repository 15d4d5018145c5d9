//! Exploration: where a random chain over pages `STRIDE` apart starts losing second-level TLB
//! entries, as a share of what a low-bits set index lets it hold (entries / STRIDE for strides up
//! to the set count). If the loss starts at the same share of that at every stride, it is the
//! level's own (its replacement, or entries it holds for others in every set); if it starts late
//! at strides past some k, something of consecutive pages is involved.
//! `cargo run --release -p tlblab-probe --example l2_stride_chains -- ENTRIES REPS STRIDE...`
//! Prints per stride and n (as a share of ENTRIES / STRIDE) the lower envelope (ns).

mod common;
use tlblab_probe::chase::{Layout, Order};
use tlblab_probe::measure::curve::sweep;
use tlblab_probe::measure::dtlb::DataChains;
use tlblab_probe::sys::{self, Thp};

fn main() {
    let a = common::numbers();
    let (entries, reps) = (a[0], a[1]);
    // LANES (environment): independent chains followed in lockstep, the same pages in the same
    // cyclic order: the lap takes less time at the same n.
    let lanes: usize = std::env::var("LANES").map_or(1, |s| s.parse().unwrap());
    sys::pin_and_raise().unwrap();
    for &stride in &a[2..] {
        let cap = entries as f64 / stride as f64;
        let shares: Vec<f64> = (0..=14).map(|i| 0.55 + 0.05 * i as f64).collect();
        let ns: Vec<usize> = shares.iter().map(|s| (s * cap).round() as usize).collect();
        let hi = *ns.last().unwrap();
        let mut inst = DataChains::new(
            hi + 1,
            Layout::PerPage { stride },
            Order::Random(7),
            Thp::Never,
        )
        .unwrap()
        .with_lanes(lanes);
        let rows = sweep(&mut inst, &ns, reps, 100_000, 5);
        print!("stride {stride:3} lanes {lanes}:");
        for (s, r) in shares.iter().zip(&rows) {
            print!(" {:.2}:{:.1}", s, r.floor());
        }
        println!();
    }
}
