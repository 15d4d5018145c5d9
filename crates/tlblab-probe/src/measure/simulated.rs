//! A simulated host: the probe's chains run on one of the simulator's machines (a preset, whose
//! TLB geometry, index function and replacement are known), timed by the simulator instead of
//! the clock, with the disturbances a shared VM adds (window jitter, intruder pages between and
//! inside windows, a few pages touched on every pass, occasional slow windows). The probe's
//! estimators run unchanged on it (`measure::bench::Bench`), so each preset's geometry is a
//! known answer they must recover (`tests/simulated_hosts.rs`, `tlblab probe --simulate`).
//!
//! Timing: the cycles `System::access` returns for each load (TLB lookups, walks through the
//! caches, the data access: the engine's in-order sum, ARCHITECTURE.md "Timing"), divided by the
//! loads of the timed passes and converted to ns by the preset's clock.

use super::bench::{Bench, PageChain};
use super::conflict::ConflictSet;
use super::curve::Instrument;
use crate::chase::{element_offset, visit_order, Layout, Order};
use std::cell::RefCell;
use std::rc::Rc;
use tlblab_core::machine::MachineConfig;
use tlblab_core::system::{RunOptions, System};
use tlblab_trace::record::Access;
use tlblab_types::rng::SplitMix64;

const PAGE: u64 = 4096;
const LINE: u64 = 64;
/// Fewest timed loads per window (see `Shared::window`).
const MIN_TIMED: usize = 512;

/// What the simulated machine adds to the undisturbed timing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Noise {
    /// Relative standard deviation of a window's time (Gaussian).
    pub jitter: f64,
    /// Foreign pages touched between windows (the kernel, the rebuild of the next chain).
    pub between: usize,
    /// Mean bursts of foreign pages per timed window (Poisson; an interrupt, a TLB-shootdown
    /// IPI) and the pages each touches.
    pub bursts_per_window: f64,
    pub burst_pages: usize,
    /// Foreign pages touched once per pass. None in `VM`: the timing loop touches nothing but
    /// the chain inside a window (the clock is read at its ends), and the hosts' first levels
    /// read whole (96 of 96 on Zen 5, 72 of 72 on Zen 4, docs/probe.md); a test sets it to show
    /// what persistent intruders do.
    pub per_pass: usize,
    /// Share of windows that come back slower by `slow_factor` (preempted, a host-side event).
    pub slow_windows: f64,
    pub slow_factor: f64,
}

impl Noise {
    /// No disturbance at all: the undisturbed curve.
    pub const NONE: Noise = Noise {
        jitter: 0.0,
        between: 0,
        bursts_per_window: 0.0,
        burst_pages: 0,
        per_pass: 0,
        slow_windows: 0.0,
        slow_factor: 1.0,
    };

    /// Harsher than the development VM (docs/probe.md "How it measures"): there ≈ 300
    /// TLB-shootdown IPIs and ≈ 250 timer interrupts a second land on the probe's CPU while a
    /// neighbour builds, ≈ 0.055 per 0.1 ms window; here a burst of 40 foreign pages (as in the
    /// model of `analysis/model.rs`) hits one window in two (0.5 per window, whose timed pass is
    /// far shorter than 0.1 ms). Also: the packed control's window-to-window jitter there (IQR
    /// ≈ 1-3%: σ = 2%), two persistent pages, one window in 30 slowed by half.
    pub const VM: Noise = Noise {
        jitter: 0.02,
        between: 16,
        bursts_per_window: 0.5,
        burst_pages: 40,
        per_pass: 0,
        slow_windows: 1.0 / 30.0,
        slow_factor: 1.5,
    };
}

/// The simulator's machine behind the probe's instruments.
struct Shared {
    sys: System,
    rng: SplitMix64,
    noise: Noise,
    ns_per_cycle: f64,
    /// Untimed and timed passes per window (`chase::time_window` warms up with 2 passes).
    warmup: usize,
    passes: usize,
    /// Loads simulated so far (the cost of a simulated probe run).
    loads: u64,
    /// The top of the user address space (2^32 under ARMv7's short descriptors, 2^47 on
    /// x86-64 and ARMv8): chains live in [top/16, 3/4 top), the foreign pages above.
    top: u64,
    /// The first error the engine returned (a load it refused); the run reports it.
    error: Option<String>,
}

impl Shared {
    fn foreign(&mut self) -> u64 {
        // A pool of 16 Ki pages above every chain: the kernel's and the neighbours' working
        // set, which comes back (a fresh page each time would map new page tables without end).
        self.top / 4 * 3 + self.rng.below(1 << 14) * PAGE + self.rng.below(64) * LINE
    }

    fn load(&mut self, va: u64) -> u64 {
        self.loads += 1;
        match self.sys.access(Access::load(va)) {
            Ok(c) => c,
            Err(e) => {
                self.error
                    .get_or_insert_with(|| format!("a load of {va:#x} failed: {e}"));
                0
            }
        }
    }

    fn gauss(&mut self) -> f64 {
        let u1 = self.rng.next_f64().max(1e-12);
        let u2 = self.rng.next_f64();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// ns per load of one window over `chain` (a cyclic list of addresses).
    fn window(&mut self, chain: &[u64]) -> f64 {
        if chain.is_empty() {
            return 0.0;
        }
        let nz = self.noise;
        for _ in 0..nz.between {
            let v = self.foreign();
            self.load(v);
        }
        let persistent: Vec<u64> = (0..nz.per_pass as u64)
            // At odd page numbers (the stack and code of a host's timing loop sit anywhere); an
            // even one would fall in the targets' set of the conflict chains at some stride.
            .map(|i| self.top / 8 * 7 + (2 * i + 11) * PAGE)
            .collect();
        for _ in 0..self.warmup {
            for &v in &persistent {
                self.load(v);
            }
            for &a in chain {
                self.load(a);
            }
        }
        // Poisson number of bursts at uniformly random positions of the timed passes. A host's
        // 0.1 ms window holds thousands of passes over a short chain, so a burst costs it a
        // small share; the timed passes here cover at least `MIN_TIMED` loads for the same
        // reason (one pass over 10 pages after a 40-page burst would be all misses).
        let passes = self.passes.max(MIN_TIMED.div_ceil(chain.len()));
        let total = passes * chain.len();
        let mut at = Vec::new();
        let (l, mut p) = ((-nz.bursts_per_window).exp(), 1.0);
        loop {
            p *= self.rng.next_f64();
            if p <= l {
                break;
            }
            at.push(self.rng.below(total as u64) as usize);
        }
        at.sort_unstable();
        let (mut cycles, mut next) = (0u64, 0usize);
        for i in 0..total {
            while next < at.len() && at[next] == i {
                for _ in 0..nz.burst_pages {
                    let v = self.foreign();
                    // The burst's own time is the interrupt's, not the chain's: the chain pays
                    // only for the entries it loses.
                    self.load(v);
                }
                next += 1;
            }
            if i % chain.len() == 0 {
                for &v in &persistent {
                    self.load(v);
                }
            }
            cycles += self.load(chain[i % chain.len()]);
        }
        let mut ns = cycles as f64 * self.ns_per_cycle / total as f64;
        ns *= 1.0 + nz.jitter * self.gauss();
        if self.rng.next_f64() < nz.slow_windows {
            ns *= nz.slow_factor;
        }
        ns
    }
}

/// A preset (or any machine file) as the probe's host.
pub struct SimulatedHost {
    shared: Rc<RefCell<Shared>>,
    /// The next chain's base address: each instrument gets fresh addresses, 2 MiB-aligned as
    /// the probe's mappings are, after the last one's (from the bottom again when the chains'
    /// part of the address space is used up, as a host's mmap reuses freed ranges).
    next_base: u64,
}

impl SimulatedHost {
    /// `machine` simulated in full (TLBs, walks through the caches, data accesses), one
    /// hardware thread of its first core; `seed` seeds the engine and the noise.
    pub fn new(machine: &MachineConfig, noise: Noise, seed: u64) -> Result<SimulatedHost, String> {
        let top = match machine.page_table.format {
            tlblab_core::page_table::PageTableFormat::Armv7Short => 1u64 << 32,
            _ => 1u64 << 47,
        };
        let mut cfg = machine.clone();
        // The probe's loads come from one thread; a technique would change what is measured.
        cfg.technique = None;
        // A probe run maps up to ≈ 1-2 GiB of pages over its fresh chains; a preset's RAM may
        // be smaller (the SA-1100's 32 MB). Physical memory does not change the TLBs measured.
        cfg.memory.bytes = cfg.memory.bytes.max(2 << 30);
        let sys = System::new(
            cfg,
            RunOptions {
                seed,
                ..RunOptions::default()
            },
        )
        .map_err(|e| format!("machine '{}': {e}", machine.name))?;
        Ok(SimulatedHost {
            shared: Rc::new(RefCell::new(Shared {
                sys,
                rng: SplitMix64::derive(seed, "simulated-host-noise"),
                noise,
                ns_per_cycle: 1000.0 / machine.frequency_mhz,
                warmup: 2,
                passes: 1,
                loads: 0,
                top,
                error: None,
            })),
            next_base: top / 16,
        })
    }

    /// Loads simulated so far.
    pub fn loads(&self) -> u64 {
        self.shared.borrow().loads
    }

    /// The first error the engine returned, if any.
    pub fn error(&self) -> Option<String> {
        self.shared.borrow().error.clone()
    }

    /// Fresh addresses for `pages` pages, or None when they would not fit the chains' part of
    /// the address space (a host's mmap of such a span fails the same way).
    fn base_within(&mut self, pages: usize) -> Option<u64> {
        let top = self.shared.borrow().top;
        if (pages as u64).saturating_mul(PAGE) > top / 2 {
            return None;
        }
        Some(self.base(pages))
    }

    /// Fresh addresses for `pages` pages.
    fn base(&mut self, pages: usize) -> u64 {
        let top = self.shared.borrow().top;
        let span = (pages as u64 * PAGE).next_multiple_of(2 << 20) + (2 << 20);
        if self.next_base + span > top / 4 * 3 {
            self.next_base = top / 16;
        }
        let b = self.next_base;
        self.next_base += span;
        b
    }
}

/// Chains over fixed addresses: `test(n)` and `control(n)` give the n-element chain's addresses
/// in visiting order.
struct SimChains {
    shared: Rc<RefCell<Shared>>,
    max_n: usize,
    test: Box<dyn Fn(usize) -> Vec<u64>>,
    control: Box<dyn Fn(usize) -> Vec<u64>>,
    built: Option<(usize, bool)>,
    chain: Vec<u64>,
}

impl Instrument for SimChains {
    fn time(&mut self, n: usize, control: bool, _window_ns: u64) -> f64 {
        let n = n.clamp(1, self.max_n);
        if self.built != Some((n, control)) {
            self.chain = if control {
                (self.control)(n)
            } else {
                (self.test)(n)
            };
            self.built = Some((n, control));
        }
        self.shared.borrow_mut().window(&self.chain)
    }

    fn max_n(&self) -> usize {
        self.max_n
    }
}

impl Bench for SimulatedHost {
    fn data(&mut self, max_n: usize, stride: usize, seed: u64) -> Box<dyn Instrument> {
        let (tb, cb) = (self.base(max_n * stride + 1), self.base(max_n / 64 + 1));
        let layout = Layout::PerPage { stride };
        let control_order = Order::Random(0x5eed ^ max_n as u64);
        Box::new(SimChains {
            shared: self.shared.clone(),
            max_n,
            // As `DataChains`: the same layouts, orders and seeds, so the same addresses.
            test: Box::new(move |n| {
                visit_order(Order::Random(seed), n)
                    .into_iter()
                    .map(|i| tb + element_offset(layout, i) as u64)
                    .collect()
            }),
            control: Box::new(move |n| {
                visit_order(control_order, n)
                    .into_iter()
                    .map(|i| cb + element_offset(Layout::Packed, i) as u64)
                    .collect()
            }),
            built: None,
            chain: Vec::new(),
        })
    }

    fn conflict(&mut self, set: ConflictSet) -> Option<Box<dyn Instrument>> {
        let base = self.base_within(set.span())?;
        // As `ConflictChains` + `chase::build_on_pages`: the set's pages, element i on line
        // (i + i/64) mod 64 of its page, a random cycle drawn from `seed ^ t`.
        let on_pages = move |t: usize, control: bool| -> Vec<u64> {
            let pages = set.pages(t, control);
            visit_order(Order::Random(set.seed ^ t as u64), pages.len())
                .into_iter()
                .map(|i| base + pages[i] as u64 * PAGE + (((i + (i >> 6)) & 63) as u64) * LINE)
                .collect()
        };
        Some(Box::new(SimChains {
            shared: self.shared.clone(),
            max_n: set.max_t,
            test: Box::new(move |t| on_pages(t, false)),
            control: Box::new(move |t| on_pages(t, true)),
            built: None,
            chain: Vec::new(),
        }))
    }

    fn pages(&mut self, span: usize) -> Option<Box<dyn PageChain>> {
        // Aligned as the host's mapping is: a whole aligned block of the next power of two.
        let align = span.next_power_of_two();
        let raw = self.base_within(2 * align)?;
        let base = raw.next_multiple_of(align as u64 * PAGE);
        Some(Box::new(SimPages {
            shared: self.shared.clone(),
            base,
            built: None,
            chain: Vec::new(),
        }))
    }
}

/// [`PageChain`] on the simulated machine.
struct SimPages {
    shared: Rc<RefCell<Shared>>,
    base: u64,
    built: Option<(Vec<usize>, u64)>,
    chain: Vec<u64>,
}

impl PageChain for SimPages {
    fn time(&mut self, pages: &[usize], seed: u64, _window_ns: u64) -> f64 {
        if self
            .built
            .as_ref()
            .is_none_or(|(p, s)| p.as_slice() != pages || *s != seed)
        {
            // As `chase::build_on_pages`.
            let base = self.base;
            self.chain = visit_order(Order::Random(seed), pages.len())
                .into_iter()
                .map(|i| base + pages[i] as u64 * PAGE + (((i + (i >> 6)) & 63) as u64) * LINE)
                .collect();
            self.built = Some((pages.to_vec(), seed));
        }
        self.shared.borrow_mut().window(&self.chain)
    }
}
