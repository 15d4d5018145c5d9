//! The Cortex-A7 microbenchmarks the cost model is calibrated on (seed 000 §4.1-§4.2, Appendix
//! A.1): Table A.1's TLB read loop and Table A.2's loop of `pld` over N pages, with the model's
//! costs, so that the calibration can be checked against the tables (reproduction `000/a1_a2`).
//!
//! Table A.2's benchmark (§4.2): "a simple loop over a pld instruction preloading N different
//! consecutive pages with clean data caches and TLB, as well as data prefetching disabled". Here:
//! one thread of one address space touches the pages once (so that they are mapped: a preload
//! does not fault), the core's TLBs and caches are flushed (the shared level too), and
//! `pld_burst` preloads them back to back on that core. The counters are the core's during the
//! preloads alone.

use super::{pld_burst, Costs, Interface};
use crate::machine::MachineConfig;
use crate::stats::UnitStats;
use crate::system::{RunOptions, SimError, System};
use tlblab_trace::record::{flush, Access, Event, Record, NO_THREAD};
use tlblab_trace::VecSource;
use tlblab_types::{AccessKind, CoreId, ThreadId, VirtAddr};

/// Cycles of reading `entries` TLB entries through `interface`'s software read path without
/// storing them (Table A.1's benchmark): per entry a write of the operation register, the
/// interface's data-register reads and the loop (§4.1, Listing 3.1). The save charges this per
/// slot it reads, beside its filter tests and stores (`TlbMigration::save`).
pub fn read_cycles(costs: Costs, interface: Interface, entries: u64) -> u64 {
    entries * read_cycles_per_entry(costs, interface)
}

pub(super) fn read_cycles_per_entry(costs: Costs, interface: Interface) -> u64 {
    costs.op_write + interface.data_regs() * costs.data_reg + costs.read_loop
}

/// The first page of Table A.2's buffer and its spacing, and the most pages one run takes.
#[derive(Clone, Copy, Debug)]
pub struct PldBenchLayout {
    /// Virtual address of the first page (page-aligned).
    pub base: u64,
    /// Bytes from one preloaded page to the next (a multiple of 4096; 4096: consecutive pages).
    pub stride: u64,
}

/// Most pages `pld_benchmark` preloads in one run (Table A.2 goes to 64).
pub const PLD_BENCH_MAX_PAGES: u64 = 4096;

/// What Table A.2's benchmark counts on the model: the cycles of the preload loop
/// (`pld_burst`), and the core's counters during it.
#[derive(Clone, Debug)]
pub struct PldBench {
    pub cycles: u64,
    /// The core's counters during the preloads (walks, walk references by source, data
    /// references by source, per cache level accesses and misses of every source).
    pub stats: UnitStats,
    /// Cache level names (`stats.cache` order).
    pub cache_levels: Vec<String>,
    /// Source names (`stats.walk_refs_by_source`, `stats.data_by_source` order): caches, memory.
    pub sources: Vec<String>,
}

/// Runs Table A.2's benchmark on `machine` (seed 000 §4.2): `pages` pages at `layout`, preloaded
/// back to back by one thread on core 0 after the TLBs and caches were flushed, with `costs`.
pub fn pld_benchmark(
    machine: MachineConfig,
    costs: Costs,
    pages: u64,
    layout: PldBenchLayout,
) -> Result<PldBench, SimError> {
    if pages == 0 || pages > PLD_BENCH_MAX_PAGES {
        return Err(SimError(format!(
            "pld benchmark: pages expects 1 to {PLD_BENCH_MAX_PAGES}, found {pages}"
        )));
    }
    if layout.stride == 0 || !layout.stride.is_multiple_of(4096) {
        return Err(SimError(format!(
            "pld benchmark: stride expects a positive multiple of 4096 bytes, found {}",
            layout.stride
        )));
    }
    if !layout.base.is_multiple_of(4096) {
        return Err(SimError(format!(
            "pld benchmark: base expects a page-aligned address, found {:#x}",
            layout.base
        )));
    }
    if !(1..=4).contains(&costs.pld_slots) {
        return Err(SimError(format!(
            "pld benchmark: pld_slots expects 1 to 4, found {}",
            costs.pld_slots
        )));
    }
    let end = (pages - 1)
        .checked_mul(layout.stride)
        .and_then(|span| span.checked_add(layout.base))
        .filter(|&last| last < 1 << 32);
    if end.is_none() {
        return Err(SimError(format!(
            "pld benchmark: {pages} pages {} bytes apart from {:#x} do not fit a 32-bit address space",
            layout.stride, layout.base
        )));
    }
    let mut sys = System::new(machine, RunOptions::default())?;
    let thread = ThreadId(0);
    let vas: Vec<VirtAddr> = (0..pages)
        .map(|i| VirtAddr(layout.base + i * layout.stride))
        .collect();
    let mut records = vec![
        Record::Event(Event::ThreadStart { thread, process: 0 }),
        Record::Event(Event::ContextSwitch {
            core: CoreId(0),
            from: NO_THREAD,
            to: thread,
        }),
    ];
    // Mapped by a first touch, as the seed's buffer was before its loop ran.
    records.extend(
        vas.iter()
            .map(|&va| Record::Access(Access::new(thread, AccessKind::Load, va, 4))),
    );
    // "with clean data caches and TLB" (§4.2).
    records.push(Record::Event(Event::Flush {
        core: CoreId(0),
        what: flush::TLB | flush::CACHES,
    }));
    sys.run(&mut VecSource::new(records))?;
    let cpu = sys.thread_cpu(thread)?;
    let before = sys.stats();
    let cycles = pld_burst(&mut sys, costs, cpu, thread, &vas)?;
    let after = sys.stats();
    let core = sys.core_of_cpu(cpu);
    let mut stats = after.cores[core].clone();
    stats.sub(&before.cores[core]);
    Ok(PldBench {
        cycles,
        stats,
        cache_levels: after.cache_levels,
        sources: after.sources,
    })
}
