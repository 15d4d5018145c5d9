//! Fine scan of the data-TLB excess between two N, for looking at a knee by eye:
//! `cargo run --release -p tlblab-probe --example scan -- 1300 2500 64 seq 7` (ORDER: seq or rand).
use tlblab_probe::chase::{Layout, Order};
use tlblab_probe::measure::curve::sweep;
use tlblab_probe::measure::dtlb::DataChains;
use tlblab_probe::sys::{pin_to, Thp};

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let lo: usize = a[1].parse().unwrap();
    let hi: usize = a[2].parse().unwrap();
    let step: usize = a[3].parse().unwrap();
    let order = if a[4] == "rand" {
        Order::Random(3)
    } else {
        Order::Sequential
    };
    let reps: usize = a[5].parse().unwrap();
    // The first CPU this process may run on (`taskset -c 1 ...` keeps CPU 0 for others).
    pin_to(tlblab_probe::sys::allowed_cpus()[0]).unwrap();
    let ns: Vec<usize> = (lo..=hi).step_by(step).collect();
    let mut inst =
        DataChains::new(hi + 1, Layout::PerPage { stride: 1 }, order, Thp::Never).unwrap();
    let rows = sweep(&mut inst, &ns, reps, 2_000_000, 1);
    for r in &rows {
        println!(
            "{:6} ex {:6.2} [{:6.2} {:6.2}] test {:6.2}",
            r.n, r.excess.median, r.excess.q1, r.excess.q3, r.test.median
        );
    }
}
