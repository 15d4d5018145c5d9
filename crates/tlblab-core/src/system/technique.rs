//! The engine's one extension point for techniques (`crate::techniques` holds the models).
//!
//! A technique is installed on a `System` before its first record (`System::install_technique`)
//! and is called at the OS events it acts on: a change of address space (it may replace the
//! switch policy: ARM domains, seed 002), a thread's switch-in (seed 000 §7 restores saved TLB
//! entries in `finish_task_switch`), a migration (seed 000 saves entries on the source core),
//! every event record (lock/unlock, phases), and once per batch of records before the engine
//! sees them (placement techniques such as seed 003's coloring rewrite the addresses). Every
//! call is made at an event or a batch, never per access, so a run without a technique pays
//! nothing, and a run with one takes the general path: the memo lane, the fast lane and the
//! independent-hardware-thread loop (`run_apart`) step aside unless the technique says that the
//! parity tests cover it (`lanes_allowed`).
//!
//! Contract: hooks may change any TLB, cache or page-walk cache, call the engine's operations
//! (`Tlb::insert`, `invalidate_*`, `lock`, `System::access`, …), and return the cycles they cost,
//! which the engine charges to the hardware thread named in the call. They must be
//! deterministic (draw randomness from a `SplitMix64` seeded from `RunOptions::seed`).

use super::{SimError, System};
use tlblab_trace::{Event, Record};
use tlblab_types::ThreadId;

pub trait Technique: Send {
    /// The catalog name (`tlblab techniques`).
    fn name(&self) -> &'static str;

    /// Once, after the machine is built and before the first record: set up state, lock
    /// entries, map pages.
    fn install(&mut self, _sys: &mut System) -> Result<(), SimError> {
        Ok(())
    }

    /// Rewrites a batch of records before the engine simulates them (the batch is the engine's
    /// own copy; records may be changed, added or removed). Placement techniques move accesses
    /// to the addresses their allocator would have given. Called for every batch, in order.
    fn transform(&mut self, _records: &mut Vec<Record>) -> Result<(), SimError> {
        Ok(())
    }

    /// A change of address space on hardware thread `cpu` from space `from` (None: the core
    /// held none) to `to`. `Some(cycles)` replaces the switch policy (it did what a switch does
    /// and costs `cycles` beyond `os.switch_cycles`); `None` lets the policy act. Under
    /// `os.switch = "hook"` a technique must answer `Some`.
    fn on_switch(
        &mut self,
        _sys: &mut System,
        _cpu: usize,
        _from: Option<usize>,
        _to: usize,
    ) -> Result<Option<u64>, SimError> {
        Ok(None)
    }

    /// After `thread` was switched in on `cpu` (any switch, the address space changed or not),
    /// before its first access there: Linux's `finish_task_switch`. Returns cycles.
    fn on_switch_in(
        &mut self,
        _sys: &mut System,
        _cpu: usize,
        _thread: ThreadId,
    ) -> Result<u64, SimError> {
        Ok(0)
    }

    /// `thread` of address space `space` moved from hardware thread `from` to `to`, after its
    /// clock was carried over and before it runs on `to`: Linux's `move_queued_task`. Returns
    /// the cycles it costs, charged to `to`.
    fn on_migrate(
        &mut self,
        _sys: &mut System,
        _thread: ThreadId,
        _space: usize,
        _from: usize,
        _to: usize,
    ) -> Result<u64, SimError> {
        Ok(0)
    }

    /// Every event record, after the engine applied it. Returns cycles, charged to
    /// hardware thread `cpu` (the event's core, or the core of its thread; 0 otherwise).
    fn on_event(
        &mut self,
        _sys: &mut System,
        _cpu: usize,
        _event: &Event,
    ) -> Result<u64, SimError> {
        Ok(0)
    }

    /// The technique's own counters (entries saved, restored, filtered, …), for `Stats::technique`.
    fn counters(&self) -> Vec<(String, u64)> {
        Vec::new()
    }

    /// Whether the lanes may serve a run with this technique: true only when the parity tests
    /// run this technique with and without the lanes and find the same statistics.
    fn lanes_allowed(&self) -> bool {
        false
    }
}

impl System {
    /// Installs `technique` for the rest of the run (replacing one installed before) and calls
    /// its `install`.
    pub fn install_technique(&mut self, mut technique: Box<dyn Technique>) -> Result<(), SimError> {
        technique.install(self)?;
        self.lanes_allowed = technique.lanes_allowed() && !self.options.stall_cycles;
        self.technique = Some(technique);
        Ok(())
    }

    /// The parameters the technique runs with, for `Stats::technique` (`techniques::install`).
    pub fn set_technique_params(&mut self, params: std::collections::BTreeMap<String, String>) {
        self.technique_params = params;
    }

    /// The name of the technique installed, if any.
    pub fn technique_name(&self) -> Option<&'static str> {
        self.technique.as_ref().map(|t| t.name())
    }

    /// Calls `f` with the technique taken out of the system (so that it may borrow the system
    /// mutably), then puts it back. Nothing installed: `default`.
    pub(super) fn with_technique<T>(
        &mut self,
        default: T,
        f: impl FnOnce(&mut dyn Technique, &mut System) -> Result<T, SimError>,
    ) -> Result<T, SimError> {
        let Some(mut t) = self.technique.take() else {
            return Ok(default);
        };
        let r = f(t.as_mut(), self);
        self.technique = Some(t);
        r
    }
}

/// Operations for techniques that act on the machine as software would (seed 000's TLB
/// migration: a kernel reading and storing TLB entries, preloading pages). None of these is on
/// the per-access path.
impl System {
    /// Counts the uses of every TLB entry from now on (`Tlb::track_use`): the general path
    /// counts each access an entry translates. For seed 000 §5.2's used bit; the hint tables
    /// and memos step aside so that every access reaches the count.
    pub fn track_tlb_use(&mut self) {
        self.track_use = true;
        for t in &mut self.tlbs {
            t.track_use();
        }
    }

    /// The engine's reference count (the clock of `Tlb::uses_of`'s last use).
    pub fn references_so_far(&self) -> u64 {
        self.references
    }

    /// One kernel load or store of physical address `pa` by hardware thread `cpu`, through its
    /// core's data-cache path (a kernel's linear map: no TLB lookup is modelled). Counted in the
    /// caches' statistics like any data access; returns its latency in cycles.
    pub fn kernel_access(&mut self, cpu: usize, pa: u64, write: bool) -> u64 {
        let core_i = self.cpus[cpu].core;
        let (lat, src) = Self::load(
            &mut self.caches,
            &self.cores[core_i].dcache,
            &mut self.cpu_stats[cpu],
            pa,
            write,
            self.mem_source,
            self.mem_latency,
        );
        self.cpu_stats[cpu].data_by_source[src] += 1;
        lat
    }

    /// Translates `va` for `thread` on hardware thread `cpu` as a preload instruction does
    /// (ARM `pld`, seed 000 §3.3): the core's data TLB levels are looked up and, on a miss in
    /// all of them, the page is walked (its descriptors loaded through the caches, counted as a
    /// walk) and every level filled. No reference is counted. Returns (cycles, physical
    /// address), or None for the address when the page is not mapped (a preload does not
    /// fault: nothing happens).
    pub fn preload_translate(
        &mut self,
        cpu: usize,
        thread: ThreadId,
        va: tlblab_types::VirtAddr,
    ) -> Result<(u64, Option<u64>), SimError> {
        let st = self.thread_state(thread)?;
        let st = super::ThreadState { cpu, ..st };
        let req = self.requester(st);
        let core_i = self.cpus[cpu].core;
        let path = self.cores[core_i].dtlb.clone();
        let mut cycles = 0;
        for (i, &(t, _)) in path.iter().enumerate() {
            let tlb = &mut self.tlbs[t];
            cycles += tlb.config.latency;
            if let Some(h) = tlb.lookup(va, req) {
                let pa = (h.pfn.0 << 12) + (va.0 & (h.size.bytes() - 1));
                self.fill_levels(&path[..i], va, h.pfn, h.size, h.domain, req);
                return Ok((cycles, Some(pa)));
            }
        }
        if va.0 >= self.va_limit || self.spaces[st.space].pt.translate(va).is_none() {
            return Ok((cycles, None));
        }
        let (leaf, wc) = if self.options.walks {
            self.walk(core_i, st, va)?
        } else {
            self.translate_without_walk(st, va)
        };
        cycles += wc;
        self.fill_levels(&path, va, leaf.pfn, leaf.size, leaf.domain, req);
        let pa = (leaf.pfn.0 << 12) + (va.0 & (leaf.size.bytes() - 1));
        Ok((cycles, Some(pa)))
    }

    fn fill_levels(
        &mut self,
        levels: &[(usize, usize)],
        va: tlblab_types::VirtAddr,
        pfn: tlblab_types::Pfn,
        size: tlblab_types::PageSize,
        domain: tlblab_types::Domain,
        req: crate::tlb::Requester,
    ) {
        let mut e =
            crate::tlb::TlbEntry::new(tlblab_types::Vpn(va.0 >> size.shift()), size, pfn, req.asid);
        e.vmid = req.vmid;
        e.domain = domain;
        e.hw_thread = req.hw_thread;
        for &(t, _) in levels {
            self.tlbs[t].fill(e);
        }
    }

    /// The physical addresses of the page-table entries a walk of `va` in `thread`'s address
    /// space reads, top level first (empty when `va` is not mapped). Nothing is loaded.
    pub fn descriptor_addresses(
        &mut self,
        thread: ThreadId,
        va: tlblab_types::VirtAddr,
    ) -> Result<Vec<u64>, SimError> {
        let st = self.thread_state(thread)?;
        let mut path = self.path;
        let leaf = self.spaces[st.space].pt.walk_from(va, 0, 0, &mut path);
        Ok(match leaf {
            Some(_) => path.refs[..path.len].iter().map(|p| p.0).collect(),
            None => Vec::new(),
        })
    }

    /// The address space of `thread` and its ASID generation (seed 000 §3.3: ARM Linux's
    /// rollover gives spaces new ASIDs; a saved entry of an older generation is stale).
    pub fn space_and_generation(&mut self, thread: ThreadId) -> Result<(usize, u64), SimError> {
        let st = self.thread_state(thread)?;
        Ok((st.space, self.space_generation[st.space]))
    }

    /// The hardware threads of the machine.
    pub fn hardware_threads(&self) -> usize {
        self.cpus.len()
    }

    /// The SMT index of hardware thread `cpu` within its core (a TLB entry's `hw_thread` tag).
    pub fn hw_thread_of(&self, cpu: usize) -> u8 {
        self.cpus[cpu].hw_thread
    }

    /// The machine's memory latency in cycles (what a load served by memory costs).
    pub fn memory_latency(&self) -> u64 {
        self.mem_latency
    }

    /// The core of hardware thread `cpu`.
    pub fn core_of_cpu(&self, cpu: usize) -> usize {
        self.cpus[cpu].core
    }
}
