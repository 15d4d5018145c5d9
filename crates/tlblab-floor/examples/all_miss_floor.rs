//! What an exact TLB-only simulation of zen3's two data TLB levels costs on this host when it
//! has none of the engine's generality: the yardstick for the engine's rate on streams that miss
//! every level (ARCHITECTURE.md, "Where all-miss time goes"). `full_miss_floor` is the same for
//! the full model.
//!
//! `cargo run --release -p tlblab-floor --example all_miss_floor [-- ACCESSES [REPEATS]]`
//!
//! The stream is the engine benchmark's `random:pages=262144` (uniform random 4 KiB pages of
//! 1 GiB, one thread). The floor (`tlblab_floor::tlb`) models the zen3 preset's L1D (64 entries, fully associative, LRU)
//! over its L2D (2048 entries, 16-way, LRU, indexed by low VPN bits) and nothing else: one page
//! size, one address space, no locked entries, no statistics but two miss counters, payloads of
//! one word. It runs four ways, interleaved, `REPEATS` times each (medians and spread printed):
//!
//! - `floor/addresses`: over a vector of 8-byte addresses (`tlblab_floor::run`, what
//!   `tlblab bench engine` times);
//! - `floor/layered`: the same, one level at a time over chunks of 4096 pages
//!   (`TlbPair::translate_layered`): the first level over the chunk, then the second over
//!   what it missed;
//! - `floor/records`: over the engine's 32-byte records in place, with the checks the engine's
//!   pair loop makes on each (an access, a data reference, this thread, not crossing a page)
//!   and the engine's record prefetch (`tlblab_floor::run_records`, the bench's `slice` feed);
//! - `floor/batches`: the same over the records copied in the engine's batches, only the
//!   kernel timed (`tlblab_floor::run_batches`, the bench's `source` feed);
//! - `engine`: `System::run_slice` in a TLB-only run on the zen3 preset.
//!
//! Before any timing, the floor's miss counts must equal the engine's for both levels
//! (`tlblab_floor::check`, and the layered kernel's too): the floor is exact, not an estimate.
#[path = "floor/run.rs"]
mod run;

use std::time::Instant;
use tlblab_floor::tlb::TlbPair as Floor;
use tlblab_floor::Mode;
use tlblab_trace::record::Record;

/// The layered kernel's chunk: 4096 pages (32 KiB) and the misses of the first level over them
/// stay in the host's L1D. (2026-11-24: chunks of 1K, 4K and 64K ran within 2% of each other.)
const CHUNK: usize = 4096;

fn layered(addrs: &[u64]) -> (Floor, f64) {
    let mut f = Floor::new();
    let mut misses = Vec::with_capacity(CHUNK);
    let t = Instant::now();
    for chunk in addrs.chunks(CHUNK) {
        f.translate_layered(chunk, 12, &mut misses);
    }
    (f, t.elapsed().as_secs_f64())
}

/// `tlblab_floor::run_records` or `run_batches`.
type FloorOverRecords = fn(&[Record]) -> Result<(tlblab_floor::Counts, f64), String>;

const DISAGREE: &str = "floor and engine disagree on (L1D, L2D) misses";

fn main() {
    let (accesses, repeats) = run::args();
    let (spec, records, addrs) = run::stream(accesses);

    // Exactness first: every variant's misses are the engine's, level by level.
    let counts = tlblab_floor::check(Mode::TlbOnly, &records).unwrap_or_else(|e| panic!("{e}"));
    let [l1, l2] = counts.tlb_misses;
    let (f, _) = layered(&addrs);
    assert_eq!((f.l1_misses, f.l2_misses), (l1, l2), "{DISAGREE} (layered)");
    // (`check` compared the floors over the records with the engine too.)
    println!("{spec}: L1D misses {l1}, L2D misses {l2} (floor = engine)");

    let mut rates: [Vec<f64>; 5] = Default::default();
    let over = |run: FloorOverRecords, records| run(records).unwrap_or_else(|e| panic!("{e}")).1;
    let engine = |records| {
        tlblab_floor::engine(Mode::TlbOnly, records)
            .unwrap_or_else(|e| panic!("{e}"))
            .1
    };
    for _ in 0..repeats {
        rates[0].push(accesses as f64 / tlblab_floor::run(Mode::TlbOnly, &addrs).1 / 1e6);
        rates[1].push(accesses as f64 / layered(&addrs).1 / 1e6);
        rates[2].push(accesses as f64 / over(tlblab_floor::run_records, &records) / 1e6);
        rates[3].push(accesses as f64 / over(tlblab_floor::run_batches, &records) / 1e6);
        rates[4].push(accesses as f64 / engine(&records) / 1e6);
    }
    run::report(
        &[
            "floor/addresses",
            "floor/layered",
            "floor/records",
            "floor/batches",
            "engine",
        ],
        rates.into(),
    );
}
