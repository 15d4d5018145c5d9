//! Exploration: is a page-number difference `d` in the kernel of the second-level TLB's set
//! index? Chains of 2·J pages `{0, d} + j·2^K` (J copies K bits apart: bits ≥ K must be outside
//! the index, as a `stlb_sets stride:2^K` capacity of one set's ways shows) plus the fillers of
//! `measure::conflict` (the L1 misses on every access), against a packed control: when `d` maps to
//! set 0 the 2·J pages share one set of W < 2·J ways and miss; otherwise J + J fit.
//! `cargo run --release -p tlblab-probe --example stlb_hash -- K J REPS HIGHBIT...`: for each
//! HIGHBIT h, tests d = 2^h ⊕ y for y < 2^LOW (LOW = env LOW, default 7) and prints the y whose
//! excess is nearest the all-in-one-set reference.

mod common;
use tlblab_probe::chase::{build_on_pages, time_chain};
use tlblab_probe::measure::conflict::FILLERS;
use tlblab_probe::stats::median;
use tlblab_probe::sys::{self, Region, Thp, PAGE};

fn main() {
    let a = common::numbers();
    let (k, j, reps) = (a[0], a[1], a[2]);
    let low: usize = std::env::var("LOW").map_or(7, |s| s.parse().unwrap());
    let base = 1usize << (k + 5);
    let top = base + (1 << k) * (j + 1) + (1 << k);
    let control_base = top + 64;
    let region = Region::new(
        (control_base + 2 * j + FILLERS + 128) * PAGE,
        2 << 20,
        Thp::Never,
    )
    .unwrap();
    sys::pin_and_raise().unwrap();
    let n = 2 * j + FILLERS;
    let ctl: Vec<usize> = (0..n).map(|i| control_base + i / 64).collect();
    let cstart = build_on_pages(&region, &ctl, 5);
    let excess = |d: usize, seed: u64| -> f64 {
        let odd = (0..FILLERS).map(|f| 2 * f + 1);
        let pages: Vec<usize> = (0..j)
            .flat_map(|c| [base + c * (1 << k), (base ^ d) + c * (1 << k)])
            .chain(odd)
            .collect();
        let s = build_on_pages(&region, &pages, seed);
        let mut xs = Vec::new();
        for _ in 0..reps {
            // SAFETY: both chains were built in `region`, alive here.
            let t = unsafe { time_chain(s, n, 100_000) };
            let c = unsafe { time_chain(cstart, n, 100_000) };
            xs.push((t - c) * n as f64 / (2 * j) as f64);
        }
        xs.sort_by(|a, b| a.total_cmp(b));
        // The lower quartile: a window without intruders.
        xs[xs.len() / 4].min(median(&xs))
    };
    let _ = excess(1 << (k - 1), 9);
    let same = excess(1 << (k + 1), 1);
    let diff = excess(1 << (k - 1), 2);
    println!("reference: same set {same:.2} ns/target, different sets {diff:.2}");
    for &h in &a[3..] {
        let mut v: Vec<(usize, f64)> = (0..1usize << low)
            .map(|y| (y, excess((1 << h) ^ y, 3 + y as u64)))
            .collect();
        v.sort_by(|a, b| b.1.total_cmp(&a.1));
        let hits: Vec<String> = v
            .iter()
            .take(4)
            .map(|(y, e)| format!("y={y:#x}({y:07b}):{e:.2}"))
            .collect();
        let rest = median(&v.iter().map(|x| x.1).collect::<Vec<_>>());
        println!("bit {h}: {} (median of all {rest:.2})", hits.join(" "));
    }
}
