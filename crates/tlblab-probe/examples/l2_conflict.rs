//! Exploration: the per-target excess of conflict-set chains (`measure::conflict`) at one stride.
//! `cargo run --release -p tlblab-probe --example l2_conflict -- STRIDE LO HI REPS [FILLERS]`

mod common;
use tlblab_probe::analysis::geometric_points;
use tlblab_probe::measure::conflict::{ConflictChains, ConflictSet, FILLERS};
use tlblab_probe::measure::curve::sweep;
use tlblab_probe::sys;

fn main() {
    let a = common::numbers();
    let (stride, lo, hi, reps) = (a[0], a[1], a[2], a[3]);
    sys::pin_and_raise().unwrap();
    let ts = geometric_points(lo, hi, 0.03);
    let fillers = a.get(4).copied().unwrap_or(FILLERS);
    let set = ConflictSet {
        stride,
        max_t: hi,
        seed: 3,
        fillers,
    };
    let mut inst = ConflictChains::of(set).unwrap();
    let rows = sweep(&mut inst, &ts, reps, 100_000, 3);
    for r in &rows {
        let per = r.floor() * (r.n + fillers) as f64 / r.n as f64;
        print!(
            "{}:{:.1}({:.1}/{:.1}) ",
            r.n, per, r.test_low, r.control_low
        );
    }
    println!();
}
