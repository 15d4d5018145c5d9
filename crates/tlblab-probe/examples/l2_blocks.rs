//! Exploration: a random chain over pages in blocks of B consecutive pages every S pages
//! (`B = 1`: a page stride of S), scanned around what a low-bits set index of SETS sets and WAYS
//! ways lets it hold (`SETS · WAYS · B / S` pages). Tells whether the second level's early loss
//! follows the number of sets the chain spans or how its pages share page-table lines (8 PTEs
//! a 64-byte line).
//! `cargo run --release -p tlblab-probe --example l2_blocks -- SETS WAYS REPS B/S...` (e.g. 64/128)
//! Prints per layout and n (as a share of that capacity) the low order statistic of the ns per
//! access (no control: compare layouts at equal n, whose data footprints are equal).
use tlblab_probe::measure::bench::{Bench, Host};
use tlblab_probe::measure::curve::low_order_stat;
use tlblab_probe::sys;

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let (sets, ways, reps): (usize, usize, usize) = (
        a[0].parse().unwrap(),
        a[1].parse().unwrap(),
        a[2].parse().unwrap(),
    );
    sys::pin_and_raise().unwrap();
    for layout in &a[3..] {
        let (b, s) = layout.split_once('/').unwrap();
        let (b, s): (usize, usize) = (b.parse().unwrap(), s.parse().unwrap());
        let cap = (sets * ways * b / s) as f64;
        let shares: Vec<f64> = (0..=14).map(|i| 0.55 + 0.05 * i as f64).collect();
        let hi = (1.26 * cap) as usize;
        let pages: Vec<usize> = (0..).filter(|p| p % s < b).take(hi).collect();
        let span = pages.last().unwrap() + 1;
        let mut chain = Host.pages(span + 1).expect("mapping");
        let mut rows = Vec::new();
        for (i, sh) in shares.iter().enumerate() {
            let n = (sh * cap).round() as usize;
            let test = &pages[..n];
            let xt: Vec<f64> = (0..reps)
                .map(|r| chain.time(test, ((i as u64) << 8) ^ r as u64, 100_000))
                .collect();
            rows.push((sh, low_order_stat(&xt)));
        }
        print!("{b:3}/{s:<3}:");
        for (sh, t) in rows {
            print!(" {sh:.2}:{t:.1}");
        }
        println!();
    }
}
