//! Where the data-TLB chains run: on this host (`Host`, real memory timed by the clock), or on a
//! simulated machine (`measure::simulated::SimulatedHost`, the simulator's own TLBs timed by the
//! simulator, with noise and intruders added). The capacity sweeps, stride sweeps and conflict
//! sets take a `Bench`, so the estimators that read the host are the ones tested on every
//! preset's geometry (`tests/simulated_hosts.rs`): that is how the probe is checked on hosts
//! nobody here has.

use super::conflict::{ConflictChains, ConflictSet};
use super::curve::Instrument;
use super::dtlb::DataChains;
use crate::chase::{Layout, Order};
use crate::sys::Thp;

/// A maker of fresh instruments ("fresh memory" on a host: new pages at new addresses).
pub trait Bench {
    /// Chains of one element per page, `stride` pages apart, of up to `max_n` pages (test), and
    /// their packed control, visited in a random cyclic order drawn from `seed`.
    fn data(&mut self, max_n: usize, stride: usize, seed: u64) -> Box<dyn Instrument>;
    /// A conflict set's chains (`measure::conflict`). `None` when they cannot be made (mapping
    /// failed).
    fn conflict(&mut self, set: ConflictSet) -> Option<Box<dyn Instrument>>;
    /// Chains over chosen pages of one fresh mapping of `span` pages, aligned to `span` rounded
    /// up to a power of two pages (`measure::set_index`: page p of the mapping then has the page
    /// number base | p, so XOR differences between pages are differences of page numbers).
    /// `None` when it cannot be made.
    fn pages(&mut self, span: usize) -> Option<Box<dyn PageChain>>;
}

/// One window over a chain of one element per listed page (page numbers within the mapping; no
/// page twice), on line (i + i/64) mod 64 of its page as `chase::build_on_pages` places them, in
/// a random cycle drawn from `seed`: ns per access.
pub trait PageChain {
    fn time(&mut self, pages: &[usize], seed: u64, window_ns: u64) -> f64;
}

/// [`PageChain`] in real memory.
struct HostPages {
    region: crate::sys::Region,
    built: Option<(Vec<usize>, u64)>,
    start: *const usize,
}

impl PageChain for HostPages {
    fn time(&mut self, pages: &[usize], seed: u64, window_ns: u64) -> f64 {
        if self
            .built
            .as_ref()
            .is_none_or(|(p, s)| p.as_slice() != pages || *s != seed)
        {
            self.start = crate::chase::build_on_pages(&self.region, pages, seed);
            self.built = Some((pages.to_vec(), seed));
        }
        // SAFETY: `start` was built in our region, which lives as long as `self`.
        unsafe { crate::chase::time_chain(self.start, pages.len(), window_ns) }
    }
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

    fn conflict(&mut self, set: ConflictSet) -> Option<Box<dyn Instrument>> {
        ConflictChains::of(set)
            .ok()
            .map(|c| Box::new(c) as Box<dyn Instrument>)
    }

    fn pages(&mut self, span: usize) -> Option<Box<dyn PageChain>> {
        let align = span.next_power_of_two() * crate::sys::PAGE;
        let region = crate::sys::Region::new(span * crate::sys::PAGE, align, Thp::Never).ok()?;
        Some(Box::new(HostPages {
            region,
            built: None,
            start: std::ptr::null(),
        }))
    }
}
