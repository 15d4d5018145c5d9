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

use super::{DomainFault, SimError, System};
use crate::page_table::{Leaf, WalkPath};
use tlblab_trace::{Event, Record};
use tlblab_types::{AccessKind, PhysAddr, ThreadId, VirtAddr};

/// What a technique declares about itself, read when it is installed (and its name and levels
/// again for the statistics): properties, not events, so they are one answer rather than a
/// hook each. `Declaration::named(name)` is a technique that declares nothing else.
#[derive(Clone, Copy, Debug)]
pub struct Declaration {
    /// The catalog name (`tlblab techniques`).
    pub name: &'static str,
    /// Which of `counters` are levels (a setting or a state now: the helper's hardware thread,
    /// the entries held) rather than counts of events: a region of interest reports their
    /// value at its end, not a difference (`Stats::since`), and intervals that merge keep the
    /// later one (`Stats::then`).
    pub levels: &'static [&'static str],
    /// Whether the lanes may serve a run with this technique: true only when the parity tests
    /// run this technique with and without the lanes and find the same statistics.
    pub lanes_allowed: bool,
    /// Whether the run reports the per-level data TLB stall cycles
    /// (`UnitStats::data_stall_cycles`) without `RunOptions::stall_cycles`: a technique whose
    /// seed measures them (lockdown, seed 004 Tables 2-3). Others leave the statistics as a
    /// technique-free run's.
    pub reports_stall_cycles: bool,
    /// Whether the technique runs work of its own on hardware threads the records do not use
    /// (a helper thread, seed 001 §4; stressors, §5.3): the engine then calls `on_clock`
    /// before each access it simulates.
    pub has_companion: bool,
}

impl Declaration {
    /// A technique named `name` that declares nothing else (no levels, no lanes, no stall
    /// cycles, no companion).
    pub const fn named(name: &'static str) -> Declaration {
        Declaration {
            name,
            levels: &[],
            lanes_allowed: false,
            reports_stall_cycles: false,
            has_companion: false,
        }
    }
}

/// A technique as the engine sees it: what it declares, the events it answers (each hook is
/// named by the event it sees and does nothing unless the technique says otherwise), and its
/// counters.
pub trait Technique: Send {
    /// What the technique is (name, levels, lanes, stall cycles, companion); read at install.
    fn declaration(&self) -> Declaration;

    /// Installed: once, after the machine is built and before the first record (or on a
    /// machine restored from a checkpoint): set up state, lock entries, map pages.
    fn on_install(&mut self, _sys: &mut System) -> Result<(), SimError> {
        Ok(())
    }

    /// A batch of records, before the engine simulates it (the batch is the engine's own
    /// copy; records may be changed, added or removed). Placement techniques move accesses to
    /// the addresses their allocator would have given. Called for every batch, in order.
    fn on_batch(&mut self, _records: &mut Vec<Record>) -> Result<(), SimError> {
        Ok(())
    }

    /// A change of address space on hardware thread `cpu` from space `from` (None: the core
    /// held none) to `to`. `Some(cycles)` replaces the switch policy (it did what a switch does
    /// and costs `cycles` beyond `os.switch_cycles`); `None` lets the policy act. Under
    /// `os.switch = "hook"` a technique must answer `Some`.
    fn on_space_switch(
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

    /// An access faulted on ARM domains (`System::enable_domains`, seed 002 §2.3): thread of
    /// address space `space` on hardware thread `cpu` touched `va`, whose CPD entry is empty
    /// (`Section`) or whose TLB or CPD entry is tagged with a domain the DACR does not enable
    /// (`Domain`). The handler must make the restarted access pass (load the entry, flush,
    /// change the DACR) and returns the cycles the fault cost.
    fn on_domain_fault(
        &mut self,
        _sys: &mut System,
        _cpu: usize,
        _space: usize,
        _kind: AccessKind,
        va: VirtAddr,
        fault: DomainFault,
    ) -> Result<u64, SimError> {
        Err(SimError(format!(
            "{fault:?} fault at {va}: the technique that turned ARM domains on must handle it"
        )))
    }

    /// The clock reached `until` (the clock of the hardware thread whose access runs next on
    /// the timeline), for a technique that declares a companion: its own hardware threads run
    /// while their clocks are behind `until`, through the engine's operations
    /// (`System::access`, `read_page_table_line`, `charge`), so that their loads reach the
    /// shared caches in time order with the records'. Called on the general path only (a
    /// technique with a companion takes no lane).
    fn on_clock(&mut self, _sys: &mut System, _until: u64) -> Result<(), SimError> {
        Ok(())
    }

    /// The technique's own counters (entries saved, restored, filtered, …), for `Stats::technique`.
    fn counters(&self) -> Vec<(String, u64)> {
        Vec::new()
    }
}

impl System {
    /// Installs `technique` for the rest of the run (replacing one installed before) and calls
    /// its `on_install`.
    /// A technique installed mid-run (on a machine restored from a checkpoint) is told the
    /// regions the records announced before (`Event::Region`, as `on_event` would have seen
    /// them; their cycles, if any, are not charged: they were before it existed).
    pub fn install_technique(&mut self, mut technique: Box<dyn Technique>) -> Result<(), SimError> {
        self.in_technique = true;
        let r = self.tell_installed(technique.as_mut());
        self.in_technique = false;
        r?;
        let declared = technique.declaration();
        self.lanes_allowed = declared.lanes_allowed
            && Self::lanes_permitted(&self.options)
            && self.miss_log.is_none()
            && self.config.timing.write_buffer.is_none()
            && self.config.timing.dram.is_none()
            && !self.prefetching
            && self
                .config
                .timing
                .mlp
                .is_none_or(|m| m.issue_instructions == 0)
            && !self.mlp_marked;
        self.companion = declared.has_companion;
        self.technique = Some(technique);
        Ok(())
    }

    /// The parameters the technique runs with, for `Stats::technique` (`registry::install`).
    pub fn set_technique_params(&mut self, params: std::collections::BTreeMap<String, String>) {
        self.technique_params = params;
    }

    /// The name of the technique installed, if any.
    pub fn technique_name(&self) -> Option<&'static str> {
        self.technique.as_ref().map(|t| t.declaration().name)
    }

    /// `on_install`, then the regions announced before (`install_technique`).
    fn tell_installed(&mut self, technique: &mut dyn Technique) -> Result<(), SimError> {
        technique.on_install(self)?;
        for (region, start, len) in self.regions.clone() {
            let event = Event::Region {
                region,
                start: VirtAddr(start),
                len,
            };
            technique.on_event(self, 0, &event)?;
        }
        Ok(())
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
        self.in_technique = true;
        let r = f(t.as_mut(), self);
        self.in_technique = false;
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
        let kind = if write {
            AccessKind::Store
        } else {
            AccessKind::Load
        };
        let (lat, src) = self.load_on_core(cpu, core_i, kind, pa);
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
                let leaf = crate::page_table::Leaf {
                    pfn: h.pfn,
                    size: h.size,
                    domain: h.domain,
                };
                let global = tlb.is_global(h.slot);
                self.fill_levels(&path[..i], va, leaf, global, req);
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
        let global = self.translation_is_global(st.space, va);
        self.fill_levels(&path, va, leaf, global, req);
        let pa = (leaf.pfn.0 << 12) + (va.0 & (leaf.size.bytes() - 1));
        Ok((cycles, Some(pa)))
    }

    fn fill_levels(
        &mut self,
        levels: &[(usize, usize)],
        va: tlblab_types::VirtAddr,
        leaf: crate::page_table::Leaf,
        global: bool,
        req: crate::tlb::Requester,
    ) {
        let size = leaf.size;
        let mut e = crate::tlb::TlbEntry::new(
            tlblab_types::Vpn(va.0 >> size.shift()),
            size,
            leaf.pfn,
            req.asid,
        );
        e.vmid = req.vmid;
        e.domain = leaf.domain;
        e.hw_thread = req.hw_thread;
        e.global = global;
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

/// Operations for techniques that run work of their own (`Technique::on_clock`). None of
/// them is on the per-access path of a run without a technique.
impl System {
    /// The page-table entries a software walk of `va` in address space `space` reads, root
    /// first, as the table's own (guest-)physical addresses, and the leaf if `va` is mapped;
    /// the path ends at the first invalid entry when it is not (`len` then counts it). No
    /// page-walk cache, TLB or cache is touched: this is where the entries are, not a load.
    pub fn page_table_path(&self, space: usize, va: VirtAddr) -> (WalkPath, Option<Leaf>) {
        let mut path = WalkPath::default();
        let leaf = self.spaces[space].pt.walk_from(va, 0, 0, &mut path);
        (path, leaf)
    }

    /// Reads the page-table entry at `pa` as data through the data-cache path of hardware
    /// thread `cpu`'s core, with no TLB lookup or fill and no walk: what seed 001's kernel-level
    /// PT-Baker system call does (§4.3, Alg. 3: the kernel dereferences the entries through
    /// its direct map). Under virtualization `pa` is guest-physical and the guest kernel's
    /// direct map is taken to be TLB-resident (huge pages): it becomes host-physical at no
    /// cost, or None when the host has not mapped that guest frame yet. Counts the cache
    /// levels' accesses on `cpu` (not as a reference, a walk or a walk reference) and advances
    /// its clock. Returns (cycles, source index: a cache level, or `Stats::sources`' last,
    /// memory).
    ///
    /// On a machine with `timing.mlp` the read is a load of the software thread running on
    /// `cpu` (`MlpState::charge`, with no walk): when that thread is marked independent
    /// (`Event::Independent`) a read from memory goes in flight in a miss slot and costs the
    /// thread only its waits, as Alg. 3's loop, whose PTE addresses come from a counter, lets an
    /// out-of-order core do. `awaited`: the reads after it need its value (an upper-level
    /// entry, whose next table the following reads index): the thread waits for this read's
    /// line, not for the others in flight. Without `timing.mlp`, or on an unmarked thread, the
    /// read costs its whole latency in order (`awaited` changes nothing).
    pub fn read_page_table_line(
        &mut self,
        cpu: usize,
        pa: PhysAddr,
        awaited: bool,
    ) -> Option<(u64, usize)> {
        let addr = self.host_physical(pa)?;
        let core_i = self.cpus[cpu].core;
        let (lat, src) = self.load_on_core(cpu, core_i, AccessKind::Load, addr);
        let lat = if self.config.timing.mlp.is_some() {
            self.timed_read_cycles(cpu, lat, (src == self.mem_source) as u64, awaited)
        } else {
            // A line from memory shares the DRAM channels (`timing.dram`), from the read's
            // start, and so do its evictions' writebacks.
            let from_memory = (src == self.mem_source) as u64;
            lat + self.dram_wait(self.cpus[cpu].clock, from_memory)
        };
        self.cpu_stats[cpu].cycles += lat;
        self.cpus[cpu].clock += lat;
        self.keep_in_shared_levels(cpu, PhysAddr(addr));
        Some((lat, src))
    }

    /// `pa` (host-)physical: itself natively; under virtualization the host's translation of
    /// the guest-physical `pa`, None when the host has not mapped it.
    pub fn host_physical(&self, pa: PhysAddr) -> Option<u64> {
        match &self.host {
            None => Some(pa.0),
            Some(h) => {
                let leaf = h.pt.translate(VirtAddr(pa.0))?;
                Some(leaf.pfn.base().0 + (pa.0 & (leaf.size.bytes() - 1)))
            }
        }
    }

    /// Keeps the line of host-physical `pa`, which hardware thread `cpu` has just read, present
    /// in the shared cache levels of its core's data path (looked up there: filled if absent,
    /// made most recent), counting nothing. Zen 3's L3 keeps shadow tags of every L2 of its
    /// CCX, so a line that one core holds in its L2 is served to another core as an L3 hit
    /// (seed 001 Table 5.3: event 0x5B mask 0x12, 'L3 cache hit on local or remote CCX'); the
    /// engine has no probe of another core's private levels, so a companion whose reads hit
    /// its own L1/L2 would otherwise stop refreshing the lines the application looks for in
    /// the L3.
    pub fn keep_in_shared_levels(&mut self, cpu: usize, pa: PhysAddr) {
        let core_i = self.cpus[cpu].core;
        let path = &self.cores[core_i].dcache;
        for (i, r) in path.iter().enumerate() {
            if !self.caches[r.cache].config.shared {
                continue;
            }
            match &mut self.dram {
                Some(d) if d.writebacks => {
                    // A dirty line it evicts is written back as a load's is.
                    if let (_, Some(v)) = self.caches[r.cache].access_victim(pa.0, false) {
                        let below = &path[i + 1..];
                        if !below
                            .iter()
                            .any(|b| self.caches[b.cache].mark_dirty_if_present(v))
                        {
                            d.pending.push((0, v));
                        }
                    }
                }
                _ => {
                    self.caches[r.cache].access_counted(pa.0, false);
                }
            }
        }
        self.settle_writebacks(cpu, 0);
    }

    /// Charges `cycles` of a technique's own work (a loop's instructions, NOPs) to hardware
    /// thread `cpu`: its clock and its counted cycles advance.
    pub fn charge_busy(&mut self, cpu: usize, cycles: u64) {
        self.cpu_stats[cpu].cycles += cycles;
        self.cpus[cpu].clock += cycles;
    }

    /// Hardware thread `cpu` idles (sleeps) until time `t`: its clock advances, no cycles are
    /// counted as work.
    pub fn idle_until(&mut self, cpu: usize, t: u64) {
        let c = &mut self.cpus[cpu].clock;
        *c = (*c).max(t);
    }

    /// Takes back `cycles` of the reference hardware thread `cpu` just ran: the part that
    /// overlapped its later work (a non-blocking prefetch, an access among many in flight).
    /// At most what the clock holds beyond 0.
    pub fn overlap_last(&mut self, cpu: usize, cycles: u64) {
        let c = cycles
            .min(self.cpus[cpu].clock)
            .min(self.cpu_stats[cpu].cycles);
        self.cpus[cpu].clock -= c;
        self.cpu_stats[cpu].cycles -= c;
    }

    /// Takes one reference a companion made (`System::access` on its own thread) out of the
    /// count `RunOptions::max_references` limits: the limit is on the records' references, so
    /// that runs with and without a companion cover the same prefix of the trace.
    pub fn uncount_companion_reference(&mut self) {
        self.references = self.references.saturating_sub(1);
    }

    /// Whether `va` is mapped in address space `space` (a walk of it would find a leaf).
    pub fn is_mapped(&self, space: usize, va: VirtAddr) -> bool {
        va.0 < self.va_limit && self.spaces[space].pt.translate(va).is_some()
    }

    /// The address space software thread `thread` runs in, if it is known.
    pub fn space_of(&self, thread: ThreadId) -> Option<usize> {
        match self.threads.get(thread.0 as usize) {
            Some(Some(st)) => Some(st.space),
            _ => None,
        }
    }

    /// The names of the regions the source's `Region` and phase events refer to.
    pub fn region_names(&self) -> &[String] {
        &self.region_names
    }

    /// The core of hardware thread `cpu`.
    pub fn core_of(&self, cpu: usize) -> usize {
        self.cpus[cpu].core
    }

    /// Whether cores `a` and `b` share an instance of some cache level (`cache_level` with its
    /// name), i.e. lines one loads can serve the other.
    pub fn cores_share_cache(&self, a: usize, b: usize) -> bool {
        let (pa, pb) = (&self.cores[a].dcache, &self.cores[b].dcache);
        pa.iter().any(|x| pb.iter().any(|y| x.cache == y.cache))
    }
}
