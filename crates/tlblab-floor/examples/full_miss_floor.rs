//! What an exact simulation of the zen3 preset's full model costs on this host when it has none
//! of the engine's generality: the yardstick for the engine's full-model rate on streams that
//! miss every TLB level, as `all_miss_floor` is for TLB-only runs (ARCHITECTURE.md, "Where
//! all-miss time goes").
//!
//! `cargo run --release -p tlblab-floor --example full_miss_floor [-- ACCESSES [REPEATS]]`
//!
//! The stream is the engine benchmark's `random:pages=262144` (uniform random 8-byte loads over
//! 1 GiB, one thread); the floor is `tlblab_floor::full` (its module docs say what it models).
//!
//! It runs two ways, interleaved, `REPEATS` times each (medians and spread printed): `floor`,
//! over a vector of 8-byte addresses, and `engine`, `System::run_slice` on the zen3 preset's
//! full model. Before any timing the floor's counts (TLB misses per level, walks, page-walk-
//! cache hits, cache misses per level, cycles) must equal the engine's (`tlblab_floor::check`):
//! the floor is exact.
#[path = "floor/run.rs"]
mod run;

use tlblab_floor::Mode;

fn main() {
    let (accesses, repeats) = run::args();
    let (spec, records, addrs) = run::stream(accesses);

    // Exactness first: the floor's counts are the engine's.
    let c = tlblab_floor::check(Mode::Full, &records).unwrap_or_else(|e| panic!("{e}"));
    println!(
        "{spec}: TLB misses {:?}, walks {}, PWC hits {}, cache misses {:?}, cycles {} (floor = engine)",
        c.tlb_misses, c.walks, c.pwc_hits, c.cache_misses, c.cycles
    );

    let mut rates: [Vec<f64>; 2] = Default::default();
    for _ in 0..repeats {
        rates[0].push(accesses as f64 / tlblab_floor::run(Mode::Full, &addrs).1 / 1e6);
        let (_, secs) =
            tlblab_floor::engine(Mode::Full, &records).unwrap_or_else(|e| panic!("{e}"));
        rates[1].push(accesses as f64 / secs / 1e6);
    }
    run::report(&["floor", "engine"], rates.into());
}
