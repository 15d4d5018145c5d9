//! Development aid: prints a raw data-TLB sweep and its knees (`cargo run --release --example dev_sweep -- STRIDE ORDER`).
use tlblab_probe::chase::{Layout, Order};
use tlblab_probe::measure::curve::{capacity_of, grid, knees, sweep, Instrument};
use tlblab_probe::measure::dtlb::DataChains;
use tlblab_probe::sys::{pin_to, Thp};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let stride: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1);
    let order = if args.get(2).map(|s| s == "rand").unwrap_or(false) { Order::Random(1) } else { Order::Sequential };
    if let Ok(v) = std::env::var("THRASH") {
        let n: usize = v.parse().unwrap();
        std::thread::spawn(move || {
            pin_to(1).unwrap();
            let c = tlblab_probe::chase::OwnedChain::new(Layout::PerPage { stride: 1 }, Order::Random(5), n, Thp::Never).unwrap();
            loop { c.time(10_000_000); }
        });
    }
    pin_to(0).unwrap();
    if std::env::var("NICE").is_ok() { println!("prio {}", tlblab_probe::sys::raise_priority()); }
    let ns = grid(16, 8192, 4);
    let t = std::time::Instant::now();
    let mut inst = DataChains::new(8192 + 512, Layout::PerPage { stride }, order, Thp::Never).unwrap();
    let rows = sweep(&mut inst, &ns, 5, 1_000_000, 1);
    for r in &rows {
        println!("{:6} test {:6.2} ctl {:6.2} ex {:6.2} iqr {:5.2}", r.n, r.test.median, r.control.median, r.excess.median, r.excess.iqr());
    }
    let k = knees(&rows);
    println!("{:?}  ({:?}) windows {:?}", k, t.elapsed(), tlblab_probe::sys::window_counts());
    for kn in &k {
        let mut fresh = || -> Box<dyn Instrument> { Box::new(DataChains::new(kn.hi + 64, Layout::PerPage { stride }, order, Thp::Never).unwrap()) };
        let c = capacity_of(kn, 3, 5, 1_000_000, 7, &mut fresh);
        println!("capacity {} trials {:?} conf {:?} fit {:?} ({:?})", c.entries, c.trials, c.confidence, c.fit, t.elapsed());
    }
}
