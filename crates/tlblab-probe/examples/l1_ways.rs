//! Exploration: the one-set curve of a set-indexed first-level DTLB (the Intel VM's L1 DTLB:
//! 16 sets × 6 ways by VPN bits 0-3, docs/probe.md), to read its replacement: n targets
//! `STRIDE` pages apart share one L1 set (and each sits in another second-level set), no
//! fillers; the control is n consecutive pages (every L1 set: hits). Prints, per n, the
//! per-target excess (ns) of each curve (the probe's low order statistic of the windows).
//! LRU and FIFO miss on every access of a cyclic chain from W + 1 on; random replacement on a
//! share that grows with n (6 ways: 0.29, 0.47, 0.60 at 7, 8, 9), so the curve's shape between
//! W + 1 and 2W tells them apart.
//! `cargo run --release -p tlblab-probe --example l1_ways -- STRIDE REPS CURVES LO HI`
use tlblab_probe::measure::bench::{Bench, Host};
use tlblab_probe::measure::curve::low_order_stat;
use tlblab_probe::sys;

fn main() {
    let a: Vec<usize> = std::env::args()
        .skip(1)
        .map(|s| s.parse().expect("STRIDE REPS CURVES LO HI: numbers"))
        .collect();
    let [stride, reps, curves, lo, hi] = a[..] else {
        panic!("usage: l1_ways STRIDE REPS CURVES LO HI");
    };
    sys::pin_and_raise().unwrap();
    let cbase = (hi + 2) * stride;
    let mut chain = Host.pages(cbase + hi + 2).expect("mapping");
    let mut table: Vec<Vec<f64>> = Vec::new();
    for rep in 0..curves as u64 {
        let mut row = Vec::new();
        for n in lo..=hi {
            let test: Vec<usize> = (1..=n).map(|c| c * stride).collect();
            let control: Vec<usize> = (cbase..cbase + n).collect();
            let (mut xt, mut xc) = (Vec::new(), Vec::new());
            for r in 0..reps as u64 {
                let salt = 0x11 ^ (rep << 40) ^ ((n as u64) << 8) ^ r;
                xt.push(chain.time(&test, salt, 100_000));
                xc.push(chain.time(&control, salt, 100_000));
            }
            row.push(low_order_stat(&xt) - low_order_stat(&xc));
        }
        table.push(row);
    }
    println!("stride {stride}, {reps} windows per point, {curves} curves");
    for (i, n) in (lo..=hi).enumerate() {
        let v: Vec<String> = table.iter().map(|r| format!("{:5.2}", r[i])).collect();
        println!("n {n:2}  {}", v.join(" "));
    }
}
