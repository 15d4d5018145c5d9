//! The L2 DTLB's ways by one-set curves for a low-bits index of SETS sets (what `tlblab probe`
//! runs after its conflict sweep): `cargo run --release -p tlblab-probe --example l2_one_set --
//! SETS WAYS_GUESS FILLERS [PAIR_REPS]`. Prints each curve's first misses, the reading and the
//! half-way point.

mod common;
use tlblab_probe::measure::bench::Host;
use tlblab_probe::measure::set_index::{low_bits_ways, IndexBudget};
use tlblab_probe::sys;

fn main() {
    let a = common::numbers();
    sys::pin_and_raise().unwrap();
    let b = IndexBudget {
        reps: 7,
        pair_reps: a.get(3).copied().unwrap_or(5),
        window_ns: 100_000,
        seed: 1,
    };
    println!("{:?}", low_bits_ways(&mut Host, a[2], a[0], a[1], b));
}
