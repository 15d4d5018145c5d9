//! Where the data-TLB chains run: on this host (`Host`, real memory timed by the clock), or on a
//! simulated machine (`measure::simulated::SimulatedHost`, the simulator's own TLBs timed by the
//! simulator, with noise and intruders added). The capacity sweeps, stride sweeps and conflict
//! sets take a `Bench`, so the estimators that read the host are the ones tested on every
//! preset's geometry (`tests/simulated_hosts.rs`): that is how the probe is checked on hosts
//! nobody here has.

use super::conflict::ConflictChains;
use super::curve::Instrument;
use super::dtlb::DataChains;
use crate::chase::{Layout, Order};
use crate::sys::Thp;

/// A maker of fresh instruments ("fresh memory" on a host: new pages at new addresses).
pub trait Bench {
    /// Chains of one element per page, `stride` pages apart, of up to `max_n` pages (test), and
    /// their packed control, visited in a random cyclic order drawn from `seed`.
    fn data(&mut self, max_n: usize, stride: usize, seed: u64) -> Box<dyn Instrument>;
    /// Conflict chains (`measure::conflict`): up to `max_t` targets `stride` pages apart plus
    /// `fillers` odd filler pages, against as many consecutive pages. `None` when they cannot be
    /// made (mapping failed).
    fn conflict(
        &mut self,
        stride: usize,
        max_t: usize,
        seed: u64,
        fillers: usize,
    ) -> Option<Box<dyn Instrument>>;
}

/// This machine: chains in real memory (4 KiB pages, no THP), timed by the clock.
pub struct Host;

impl Bench for Host {
    /// The pages are visited in a random cyclic order: on Zen 5 a sequential page walk (a
    /// constant 4160-byte stride) is partly prefetched, translations included, so that at some N
    /// the test chain ran *faster* than its control. A random cycle is still one fixed order per
    /// pass, so each set sees its pages cyclically and the capacity argument (no misses until a
    /// set holds more pages than ways) is unchanged.
    fn data(&mut self, max_n: usize, stride: usize, seed: u64) -> Box<dyn Instrument> {
        Box::new(
            DataChains::new(
                max_n,
                Layout::PerPage { stride },
                Order::Random(seed),
                Thp::Never,
            )
            .expect("mmap for the probe's chains failed"),
        )
    }

    fn conflict(
        &mut self,
        stride: usize,
        max_t: usize,
        seed: u64,
        fillers: usize,
    ) -> Option<Box<dyn Instrument>> {
        ConflictChains::with_fillers(stride, max_t, seed, fillers)
            .ok()
            .map(|c| Box::new(c) as Box<dyn Instrument>)
    }
}
