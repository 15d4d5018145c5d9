//! Exploration: the per-target excess of conflict-set chains (`measure::conflict`) at one stride.
//! `cargo run --release -p tlblab-probe --example l2_conflict -- STRIDE LO HI REPS [FILLERS]`
use tlblab_probe::measure::conflict::{ConflictChains, ConflictSet, FILLERS};
use tlblab_probe::measure::curve::sweep;
use tlblab_probe::sys;

fn main() {
    let a: Vec<usize> = std::env::args()
        .skip(1)
        .map(|s| s.parse().unwrap())
        .collect();
    let (stride, lo, hi, reps) = (a[0], a[1], a[2], a[3]);
    sys::pin_to(sys::allowed_cpus()[0]).unwrap();
    let _ = sys::raise_priority();
    let mut ts = Vec::new();
    let mut t = lo;
    while t <= hi {
        ts.push(t);
        t += ((t as f64) * 0.03).round().max(1.0) as usize;
    }
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
