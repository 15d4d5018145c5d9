//! Exploration: the one-set curve of a second-level TLB with an XOR-7 set index (the Intel VM's
//! STLB: set = VPN bits 0-6 XOR 7-13, `measure::set_index`), under controlled placements of the
//! targets and the fillers, to tell apart what moves its first misses and its half-way point.
//! n targets share one STLB set; F filler pages outside that set make every access miss the
//! L1 DTLB; the control is n + F consecutive pages. Prints, per n, the per-target excess (ns) of
//! each curve (the probe's low order statistic of the windows) and the median window's.
//! `cargo run --release -p tlblab-probe --example stlb_ways -- LAYOUT FILL F REPS CURVES LO HI`
//! LAYOUT: `stride` (targets c·2^14: one L1 DTLB set, as `measure::set_index` step 3 places
//!   them) or `spread` (targets a·129, a = 1, 2, …: one STLB set, every L1 set);
//! FILL: `clean` (consecutive pages outside the STLB set), `nol1` (also outside L1 set 0, the
//!   stride targets' L1 set: no filler competes with them there), `l1heavy` (only pages of L1
//!   set 0: every L1 way of the stride targets' set is taken by fillers).
use tlblab_probe::measure::bench::{Bench, Host};
use tlblab_probe::measure::curve::low_order_stat;
use tlblab_probe::stats::median;
use tlblab_probe::sys;

fn set_of(p: usize) -> usize {
    (p & 127) ^ ((p >> 7) & 127)
}

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let layout = a[0].as_str();
    let fill = a[1].as_str();
    let (f, reps, curves, lo, hi): (usize, usize, usize, usize, usize) = (
        a[2].parse().unwrap(),
        a[3].parse().unwrap(),
        a[4].parse().unwrap(),
        a[5].parse().unwrap(),
        a[6].parse().unwrap(),
    );
    sys::pin_and_raise().unwrap();
    // OFF (environment): added to every target, which moves them to set s ^ OFF (OFF < 128).
    let off: usize = std::env::var("OFF").map_or(0, |s| s.parse().unwrap());
    let targets: Vec<usize> = match layout {
        "stride" => (1..=hi).map(|c| (c << 14) + off).collect(),
        "spread" => (1..=hi).map(|a| a * 129).collect(),
        _ => panic!("LAYOUT: stride or spread"),
    };
    let s0 = set_of(targets[0]);
    assert!(targets.iter().all(|&t| set_of(t) == s0));
    let fillers: Vec<usize> = (1..)
        .filter(|&p: &usize| set_of(p) != s0)
        .filter(|&p| match fill {
            "clean" => true,
            "nol1" => p & 15 != 0,
            "l1heavy" => p & 15 == 0,
            _ => panic!("FILL: clean, nol1 or l1heavy"),
        })
        .take(f)
        .collect();
    let cbase = 1 << 16;
    let span = if layout == "stride" {
        (hi + 2) << 14
    } else {
        cbase + hi + f + 2
    };
    let mut chain = Host.pages(span.max(cbase + hi + f + 2)).expect("mapping");
    let mut table: Vec<Vec<(f64, f64)>> = Vec::new();
    for rep in 0..curves as u64 {
        let mut row = Vec::new();
        for n in lo..=hi {
            let test: Vec<usize> = targets[..n]
                .iter()
                .copied()
                .chain(fillers.iter().copied())
                .collect();
            let control: Vec<usize> = (cbase..cbase + n + f).collect();
            let (mut xt, mut xc) = (Vec::new(), Vec::new());
            for r in 0..reps as u64 {
                let salt = 0x3a7 ^ (rep << 40) ^ ((n as u64) << 8) ^ r;
                xt.push(chain.time(&test, salt, 100_000));
                xc.push(chain.time(&control, salt, 100_000));
            }
            let k = (n + f) as f64 / n as f64;
            row.push((
                (low_order_stat(&xt) - low_order_stat(&xc)) * k,
                (median(&xt) - median(&xc)) * k,
            ));
        }
        table.push(row);
    }
    println!("layout {layout}, fill {fill}, {f} fillers, {reps} windows per point, offset {off}");
    for (i, n) in (lo..=hi).enumerate() {
        let lows: Vec<String> = table.iter().map(|r| format!("{:5.1}", r[i].0)).collect();
        let meds: Vec<String> = table.iter().map(|r| format!("{:5.1}", r[i].1)).collect();
        println!(
            "n {n:2}  low {}   median {}",
            lows.join(" "),
            meds.join(" ")
        );
    }
}
