//! The instruction-TLB curves against both controls, for looking at knees by eye:
//! `cargo run --release -p tlblab-probe --example itlb_scan -- 8 1024 8 5`
//! (from, to, step in pages, repetitions). Prints ns per jump of the test chain (4 KiB pages),
//! the huge-page control, the packed control, and the two excesses.
use tlblab_probe::measure::curve::sweep;
use tlblab_probe::measure::itlb::{CodeChains, Control};
use tlblab_probe::sys::pin_to;

fn main() {
    let a: Vec<usize> = std::env::args()
        .skip(1)
        .map(|s| s.parse().expect("numbers: FROM TO STEP REPS"))
        .collect();
    let [lo, hi, step, reps] = a[..] else {
        eprintln!("usage: itlb_scan FROM TO STEP REPS");
        std::process::exit(2);
    };
    pin_to(1).or_else(|_| pin_to(0)).expect("pin");
    let ns: Vec<usize> = (lo..=hi).step_by(step).collect();
    let mut huge = CodeChains::with_control(hi + 1, Control::HugePages).expect("mmap");
    let mut packed = CodeChains::with_control(hi + 1, Control::Packed).expect("mmap");
    let (granted, len) = huge.control_huge_bytes();
    println!("huge-page control: {granted} of {len} bytes in huge pages");
    println!(
        "the probe's choice: {}",
        CodeChains::new(hi + 1).expect("mmap").choice()
    );
    let h = sweep(&mut huge, &ns, reps, 2_000_000, 1);
    let p = sweep(&mut packed, &ns, reps, 2_000_000, 1);
    println!("     n   test  huge packed  ex(huge) ex(packed)");
    for (h, p) in h.iter().zip(&p) {
        println!(
            "{:6} {:6.3} {:6.3} {:6.3} {:8.3} {:8.3}",
            h.n,
            h.test.median,
            h.control.median,
            p.control.median,
            h.excess.median,
            p.excess.median
        );
    }
}
