//! Fast address-space switching on the StrongARM (seed 002, Wiggins, Tuch, Uhlig, Heiser 2003):
//! ARM domains used as address-space tags, so that a context switch reloads the Domain Access
//! Control Register instead of flushing the untagged TLBs and the virtually indexed caches.
//!
//! The model, all of seed 002 §2.3 and §3:
//! - **Domains** (§2.1, §3.1): 16, of which `kernel_domains` are the kernel's (3 in ARM Linux,
//!   §4.2; 1 in L4, §4.2 Fig. 5); the kernel's mappings (at or above `kernel_base`) are in
//!   domain 0. Each process gets a domain when it is first scheduled; the switch loads the DACR
//!   with client access to the kernel's domains, the process's and its shared regions'
//!   (`on_switch`, 10 cycles: "less than a dozen instructions", §1).
//! - **Checks** (`System::enable_domains`): every TLB hit and every CPD entry read by a walk is
//!   checked against the DACR, and the cache access that follows is validated by that lookup
//!   (§2 note 4). The CPD (caching page directory, §2.3 Fig. 1) holds one domain-tagged entry per
//!   1 MiB section, loaded on a section fault from the running process's page directory.
//! - **PID relocation** (§2.2, §3.1): each process gets one of the 63 relocated 32 MiB slots
//!   (slot 0 is the unrelocated window); its mappings below 32 MiB move into its slot, and its
//!   other private mappings (data, bss, stack: "allocated in the 32MB region", §3.1) are packed
//!   into the slot's upper half while they fit. What does not fit goes to 1 MiB blocks of its
//!   own in the shared area (the top 2 GiB below the kernel, §2.3, §3.1). The model rewrites
//!   the addresses of the record stream (`transform`), as the kernel's placement and the
//!   hardware's relocation do before the TLB sees an address.
//! - **Collisions** (§2.3): a process touching a section whose CPD entry is another domain's
//!   takes a domain fault; the kernel flushes the TLB and the caches, reloads the entry from the
//!   process's page directory and restarts the access: one flush per collision. A section whose
//!   entry was dropped while another space's lines may still be cached collides too.
//! - **Recycling** (§3.1): when no domain is free, one is preempted (least recently scheduled,
//!   clean ones first), all CPD entries tagged with it are invalidated and the TLB flushed (the
//!   SA-1100 flushes its TLBs whole); its caches are cleaned and flushed only when it is dirty.
//!   A cache flush marks every domain clean; a domain is marked dirty when a process with
//!   writable mappings in it is scheduled.
//! - **Lazy flushing** (§4.2): an exiting process's domain and slot are freed without a flush;
//!   its lines are cleaned when the domain is next taken while still dirty, or for free by any
//!   flush in between.
//! - **Shared regions and TLB sharing** (§3.2): a `MapShared` object mapped above 32 MiB (a
//!   `mmap`-ed shared region) is placed once, 1 MiB aligned, at the same address in every
//!   process, with a domain of its own that every mapper's DACR enables, so the mappers hit the
//!   same TLB entries. Executables (shared objects below 32 MiB) are relocated per process and
//!   not shared (§3.2). `sharing=false` gives each mapper a private placement instead (the
//!   "fast" kernel of Fig. 3 without TLB sharing).

mod placement;

use super::{Model, ParamInfo, Params, TechniqueInfo};
use crate::machine::MachineConfig;
use crate::system::{Declaration, DomainFault, SimError, System, Technique, SECTIONS};
use std::collections::HashMap;
use tlblab_trace::record::flush;
use tlblab_trace::{Access, Event, Record};
use tlblab_types::{AccessKind, Domain, ThreadId, VirtAddr};

pub const INFO: TechniqueInfo = TechniqueInfo {
    name: "fass",
    summary: "fast address-space switching: ARM domains as address-space tags, PID relocation, a caching page directory, TLB sharing",
    seed: "seed 002 §2.1-2.3 (domains, PID relocation, CPD), §3.1 (switch, collisions, recycling, clean/dirty), §3.2 (TLB sharing), §4.2",
    params: &[
        ParamInfo {
            name: "kernel_domains",
            default: "3",
            meaning: "domains reserved for the kernel: 3 in ARM Linux, 1 in L4 (seed 002 §4.2)",
        },
        ParamInfo {
            name: "sharing",
            default: "true",
            meaning: "shared regions get a domain of their own and share TLB entries (§3.2); false: placed per process",
        },
        ParamInfo {
            name: "relocate",
            default: "true",
            meaning: "PID relocation and the collision-avoiding placement (§2.2, §3.1); false: addresses as traced",
        },
        ParamInfo {
            name: "kernel_base",
            default: "0xbf000000",
            meaning: "addresses at or above are the kernel's (ARM Linux TASK_SIZE), in domain 0",
        },
        ParamInfo {
            name: "dacr_cycles",
            default: "10",
            meaning: "cycles to reload the DACR on a switch (less than a dozen instructions, §1)",
        },
        ParamInfo {
            name: "fault_cycles",
            default: "200",
            meaning: "cycles of the kernel's abort handler for a section or domain fault (a few hundred instructions, §1)",
        },
    ],
};

/// Slot size of PID relocation and the relocated window (seed 002 §2.2: 32 MB, 64 slots).
const SLOT: u64 = 32 << 20;
const SLOTS: usize = 64;
/// The shared area: the top 2 GB (seed 002 §2.3), below the kernel.
const SHARED_AREA: u64 = 0x8000_0000;
const MIB: u64 = 1 << 20;

/// Who owns a section's CPD entry (and the lines cached under it).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Owner {
    Kernel,
    Space(u32),
    Shared(u32),
    /// Lines of more than one space may be cached: collides with everyone.
    Many,
}

/// One mapping as placed: traced `start..end` of the process moved to `to`.
#[derive(Clone, Copy, Debug)]
struct Placed {
    start: u64,
    end: u64,
    to: u64,
    owner: Owner,
}

#[derive(Clone, Debug, Default)]
struct Proc {
    slot: Option<usize>,
    domain: Option<u8>,
    placed: Vec<Placed>,
    /// Next free offset in the slot's upper half for moved private mappings.
    slot_next: u64,
    /// The process's current 1 MiB block in the shared area for mappings that do not fit.
    block_next: u64,
    block_end: u64,
    shared: Vec<u32>,
    /// The shared regions it maps writable: their domains are dirty when it is scheduled
    /// (seed 002 §3.1: "a process with writable mappings in that domain"; before 2026-11-26
    /// any mapper's writable mapping made every mapper dirty them, its twin found it).
    shared_writable: Vec<u32>,
    writable: bool,
    started: bool,
    exited: bool,
}

impl Proc {
    /// The process maps shared region `o` (writable or not).
    fn maps_shared(&mut self, o: u32, writable: bool) {
        if !self.shared.contains(&o) {
            self.shared.push(o);
        }
        if writable && !self.shared_writable.contains(&o) {
            self.shared_writable.push(o);
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct SharedObj {
    base: u64,
    len: u64,
    domain: Option<u8>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Holder {
    Free,
    Kernel,
    Owner(Owner),
}

pub struct Fass {
    kernel_domains: u8,
    sharing: bool,
    relocate: bool,
    kernel_base: u64,
    dacr_cycles: u64,
    fault_cycles: u64,
    procs: Vec<Proc>,
    process_of: HashMap<ThreadId, u32>,
    slot_user: [u32; SLOTS],
    area_next: u64,
    objects: HashMap<u32, SharedObj>,
    holder: [Holder; 16],
    dirty: [bool; 16],
    /// The TLB may hold entries tagged with the domain (cleared by a TLB flush).
    in_tlb: [bool; 16],
    last_use: [u64; 16],
    tick: u64,
    /// Per section: the owner of its CPD entry, and the owner whose lines may still be cached
    /// though its entry was dropped (`stale`).
    section_owner: Vec<Option<Owner>>,
    stale: Vec<Option<Owner>>,
    running: Vec<Option<u32>>,
    // counters
    switches: u64,
    section_faults: u64,
    domain_faults: u64,
    collisions: u64,
    recycles: u64,
    recycles_clean: u64,
    flushes_tlb: u64,
    flushes_cache: u64,
    lazy_frees: u64,
    /// The slot taken last (`slot_of` goes round from it).
    last_slot: usize,
    slots_doubled: u64,
}

impl Model for Fass {
    fn build(p: &Params, machine: &MachineConfig, _seed: u64) -> Result<Self, String> {
        if machine.page_table.format != crate::page_table::PageTableFormat::Armv7Short {
            return Err(format!(
                "technique fass: ARM domains need the armv7_short page-table format (machine {} has {})",
                machine.name,
                machine.page_table.format.name()
            ));
        }
        // The seed's machine has one core (§4.2: "a 200MHz SA-1100 CPU"). On several, a domain
        // preempted on one core while its process runs on another would leave that process's TLB entries to
        // the next owner there, and its DACR would still enable the domain: 2 cores, a recycled
        // domain, 3 DTLB hits of another process's pages without a domain fault (sa1100 with 2
        // cores, `kernel_domains=14`, `relocate=false`, 2026-11-26). Which rule the seed would
        // take across cores (never preempt a domain another core enables, or flush and reload
        // every core that may hold it) it does not say, so several hardware threads are
        // refused rather than modelled without protection.
        let threads = machine.cores * machine.threads_per_core.max(1);
        if threads > 1 {
            return Err(format!(
                "technique fass: models the seed's single-core machine (seed 002 §4.2); machine {} has {} hardware threads ({} cores x {}), and domains preempted across cores are not modelled",
                machine.name, threads, machine.cores, machine.threads_per_core.max(1)
            ));
        }
        let kernel_domains = p.u64_in("kernel_domains", 1, 15)? as u8;
        let kernel_base = p.u64("kernel_base")?;
        if !(SHARED_AREA + MIB..=1 << 32).contains(&kernel_base) || kernel_base % MIB != 0 {
            return Err(format!(
                "technique fass: parameter 'kernel_base' expects a 1 MiB multiple above 0x80100000 and at most 4 GiB, found '{}'",
                p.text("kernel_base")
            ));
        }
        let mut holder = [Holder::Free; 16];
        for h in holder.iter_mut().take(kernel_domains as usize) {
            *h = Holder::Kernel;
        }
        Ok(Fass {
            kernel_domains,
            sharing: p.bool("sharing")?,
            relocate: p.bool("relocate")?,
            kernel_base,
            dacr_cycles: p.u64("dacr_cycles")?,
            fault_cycles: p.u64("fault_cycles")?,
            procs: Vec::new(),
            process_of: HashMap::new(),
            slot_user: [0; SLOTS],
            area_next: SHARED_AREA,
            objects: HashMap::new(),
            holder,
            dirty: [false; 16],
            in_tlb: [false; 16],
            last_use: [0; 16],
            tick: 0,
            section_owner: vec![None; SECTIONS],
            stale: vec![None; SECTIONS],
            running: Vec::new(),
            switches: 0,
            section_faults: 0,
            domain_faults: 0,
            collisions: 0,
            recycles: 0,
            recycles_clean: 0,
            flushes_tlb: 0,
            flushes_cache: 0,
            lazy_frees: 0,
            last_slot: 0,
            slots_doubled: 0,
        })
    }
}

impl Fass {
    fn proc(&mut self, p: u32) -> &mut Proc {
        let i = p as usize;
        if self.procs.len() <= i {
            self.procs.resize_with(i + 1, Proc::default);
        }
        &mut self.procs[i]
    }

    fn domain_of(&self, o: Owner) -> Option<u8> {
        match o {
            Owner::Kernel => Some(0),
            Owner::Space(p) => self.procs.get(p as usize).and_then(|pr| pr.domain),
            Owner::Shared(obj) => self.objects.get(&obj).and_then(|s| s.domain),
            Owner::Many => None,
        }
    }

    /// The DACR of process `p`: client access (01) to the kernel's domains, its own and its
    /// shared regions' (seed 002 §2.1, §3.1).
    fn dacr_of(&self, p: u32) -> u32 {
        let mut v = 0u32;
        for d in 0..self.kernel_domains {
            v |= 1 << (2 * d);
        }
        if let Some(pr) = self.procs.get(p as usize) {
            if let Some(d) = pr.domain {
                v |= 1 << (2 * d);
            }
            for o in &pr.shared {
                if let Some(d) = self.objects.get(o).and_then(|s| s.domain) {
                    v |= 1 << (2 * d);
                }
            }
        }
        v
    }

    /// Flushes the TLB, and the caches when `caches` (every domain then clean, no stale lines).
    fn flush(&mut self, sys: &mut System, cpu: usize, caches: bool) -> u64 {
        let cycles = sys.flush_core(cpu, caches);
        self.flushes_tlb += 1;
        self.in_tlb = [false; 16];
        if caches {
            self.flushes_cache += 1;
            self.dirty = [false; 16];
            self.stale.iter_mut().for_each(|s| *s = None);
            // The running process keeps writing (§3.1: dirty when scheduled).
            if let Some(Some(p)) = self.running.get(cpu).copied() {
                self.mark_dirty(p);
            }
        }
        cycles
    }

    fn mark_dirty(&mut self, p: u32) {
        let Some(pr) = self.procs.get(p as usize) else {
            return;
        };
        if let Some(d) = pr.domain {
            self.dirty[d as usize] |= pr.writable;
            self.in_tlb[d as usize] = true;
        }
        for o in pr.shared.clone() {
            if let Some(s) = self.objects.get(&o) {
                if let Some(d) = s.domain {
                    self.dirty[d as usize] |= pr.shared_writable.contains(&o);
                    self.in_tlb[d as usize] = true;
                }
            }
        }
    }

    /// Marks the domains process `p` enables as possibly in the TLB.
    fn mark_in_tlb(&mut self, p: u32) {
        let Some(pr) = self.procs.get(p as usize) else {
            return;
        };
        let mut ds: Vec<u8> = pr.domain.into_iter().collect();
        ds.extend(
            pr.shared
                .iter()
                .filter_map(|o| self.objects.get(o).and_then(|s| s.domain)),
        );
        for d in ds {
            self.in_tlb[d as usize] = true;
        }
    }

    /// Drops every CPD entry of owner `o`; the lines cached under them become stale.
    fn drop_entries(&mut self, sys: &mut System, o: Owner) {
        for s in 0..SECTIONS {
            if self.section_owner[s] == Some(o) {
                self.section_owner[s] = None;
                sys.set_cpd(s, None);
                self.stale[s] = match self.stale[s] {
                    None => Some(o),
                    Some(x) if x == o => Some(o),
                    Some(_) => Some(Owner::Many),
                };
            }
        }
    }

    /// A domain for `o` (seed 002 §3.1): a free one, else one preempted from another owner
    /// (least recently used, clean first), never one of `keep` (the running DACR). Returns the
    /// cycles of the flushes it needed.
    fn allocate(&mut self, sys: &mut System, cpu: usize, o: Owner, keep: u32) -> (u8, u64) {
        let free: Vec<u8> = (0..16u8)
            .filter(|&d| self.holder[d as usize] == Holder::Free)
            .collect();
        // Free and never in the TLB since the last flush, free and clean, then any free one.
        let pick = free
            .iter()
            .copied()
            .min_by_key(|&d| (self.in_tlb[d as usize], self.dirty[d as usize], d));
        let mut cycles = 0;
        let d = match pick {
            Some(d) => d,
            None => {
                // Not one the incoming DACR enables while there is another. When every
                // process domain is one (a process whose own and shared regions' domains
                // take all the kernel leaves: seed 002 §2.3 item 4, "running out of
                // domains"), one of those is preempted (§3.1 "a domain ID must be
                // preempted"); its sections fault again when touched. Before 2026-11-26 this
                // panicked (its twin found it: `kernel_domains=15` and a shared region).
                let by_age = |&d: &u8| (self.dirty[d as usize], self.last_use[d as usize], d);
                let victim = (self.kernel_domains..16)
                    .filter(|&d| (keep >> (2 * d)) & 3 == 0)
                    .min_by_key(by_age)
                    .or_else(|| (self.kernel_domains..16).min_by_key(by_age))
                    .expect("kernel_domains leaves one domain at least");
                self.recycles += 1;
                if let Holder::Owner(prev) = self.holder[victim as usize] {
                    self.drop_entries(sys, prev);
                    match prev {
                        Owner::Space(p) => self.proc(p).domain = None,
                        Owner::Shared(obj) => {
                            if let Some(s) = self.objects.get_mut(&obj) {
                                s.domain = None;
                            }
                        }
                        _ => {}
                    }
                }
                victim
            }
        };
        let di = d as usize;
        if pick.is_none() && !self.dirty[di] {
            self.recycles_clean += 1;
        }
        if self.dirty[di] {
            // Its lines are dirty: clean and flush before another owner uses the tag.
            cycles += self.flush(sys, cpu, true);
        } else if self.in_tlb[di] {
            // Clean: no cache flush (§3.1), but the SA-1100 drops TLB entries only all at once.
            cycles += self.flush(sys, cpu, false);
        }
        self.holder[di] = Holder::Owner(o);
        match o {
            Owner::Space(p) => self.proc(p).domain = Some(d),
            Owner::Shared(obj) => {
                if let Some(s) = self.objects.get_mut(&obj) {
                    s.domain = Some(d);
                }
            }
            _ => {}
        }
        (d, cycles)
    }

    fn free_process(&mut self, sys: &mut System, p: u32) {
        let Some(pr) = self.procs.get(p as usize) else {
            return;
        };
        if pr.exited {
            return;
        }
        let (domain, slot) = (pr.domain, pr.slot);
        self.proc(p).exited = true;
        self.drop_entries(sys, Owner::Space(p));
        if let Some(d) = domain {
            // Lazy flushing (§4.2): the domain is free, its lines stay until a flush.
            self.holder[d as usize] = Holder::Free;
            self.proc(p).domain = None;
            self.lazy_frees += 1;
        }
        if let Some(s) = slot {
            self.slot_user[s] -= 1;
        }
    }
}

impl Technique for Fass {
    fn declaration(&self) -> Declaration {
        Declaration::named(INFO.name)
    }

    fn on_install(&mut self, sys: &mut System) -> Result<(), SimError> {
        sys.enable_domains()?;
        self.running = vec![None; sys.cpu_count()];
        let dacr = self.dacr_of(u32::MAX);
        for c in 0..sys.cpu_count() {
            sys.set_dacr(c, dacr);
        }
        Ok(())
    }

    fn on_batch(&mut self, records: &mut Vec<Record>) -> Result<(), SimError> {
        for r in records.iter_mut() {
            match r {
                Record::Access(a) => {
                    let p = self.process_of.get(&a.thread).copied().unwrap_or(0);
                    let va = self.moved(p, a.vaddr.0);
                    *a = Access {
                        vaddr: VirtAddr(va),
                        ..*a
                    };
                }
                Record::Event(e) => match e {
                    Event::ThreadStart { thread, process } => {
                        self.process_of.insert(*thread, *process);
                        let pr = self.proc(*process);
                        pr.started = true;
                    }
                    Event::Mmap {
                        process,
                        start,
                        len,
                        prot,
                        ..
                    } => {
                        let w = *prot & tlblab_trace::record::prot::WRITE != 0;
                        let m = self.place(*process, start.0, *len, None, w);
                        let pr = self.proc(*process);
                        pr.writable |= w;
                        pr.placed.push(m);
                        *start = VirtAddr(m.to);
                    }
                    Event::MapShared {
                        process,
                        start,
                        len,
                        prot,
                        object,
                        ..
                    } => {
                        let w = *prot & tlblab_trace::record::prot::WRITE != 0;
                        let m = self.place(*process, start.0, *len, Some(*object), w);
                        let pr = self.proc(*process);
                        pr.writable |= w && !matches!(m.owner, Owner::Shared(_));
                        pr.placed.push(m);
                        *start = VirtAddr(m.to);
                    }
                    Event::Munmap { process, start, .. }
                    | Event::Mprotect { process, start, .. } => {
                        *start = VirtAddr(self.moved(*process, start.0));
                    }
                    Event::Flush { what, .. } if *what & flush::ADDRESS_SPACE != 0 => {
                        // §4.2 lazy flushing: the stock kernel's cache flush for an address
                        // space it forks or tears down is deferred; the space's lines are
                        // cleaned when its domain is next taken while dirty (`allocate`), or
                        // for free by any flush before. The TLB flush stays (the SA-1100
                        // invalidates its TLBs whole, and fork write-protects the parent).
                        // So is flush_cache_range's at munmap and mprotect (INSTR_CACHES, or
                        // CACHES without the TLB): the space's addresses are its own, and the
                        // TLB still checks every cache hit (§2 note 4).
                        *what &= !(flush::CACHES | flush::INSTR_CACHES);
                    }
                    Event::FlushRange {
                        process,
                        start,
                        what,
                        ..
                    } => {
                        // The same lazy flushing for part of the space (flush_cache_page at a
                        // copy-on-write fault, a short flush_cache_range at munmap and
                        // mprotect): its lines wait for the domain's next flush; its TLB
                        // entries still go (flush_tlb_page), at the relocated address.
                        *start = VirtAddr(self.moved(*process, start.0));
                        *what &= !(flush::CACHES | flush::INSTR_CACHES);
                    }
                    _ => {}
                },
            }
        }
        Ok(())
    }

    fn on_space_switch(
        &mut self,
        sys: &mut System,
        cpu: usize,
        _from: Option<usize>,
        to: usize,
    ) -> Result<Option<u64>, SimError> {
        self.switches += 1;
        self.tick += 1;
        let p = to as u32;
        self.proc(p);
        let mut cycles = self.dacr_cycles;
        if self.procs[to].domain.is_none() {
            let keep = self.dacr_of(p);
            let (_, c) = self.allocate(sys, cpu, Owner::Space(p), keep);
            cycles += c;
        }
        if let Some(r) = self.running.get_mut(cpu) {
            *r = Some(p);
        }
        let d = self.procs[to].domain.expect("allocated") as usize;
        self.last_use[d] = self.tick;
        for o in self.procs[to].shared.clone() {
            if let Some(sd) = self.objects.get(&o).and_then(|s| s.domain) {
                self.last_use[sd as usize] = self.tick;
            }
        }
        self.mark_dirty(p);
        sys.set_dacr(cpu, self.dacr_of(p));
        Ok(Some(cycles))
    }

    fn on_domain_fault(
        &mut self,
        sys: &mut System,
        cpu: usize,
        space: usize,
        _kind: AccessKind,
        va: VirtAddr,
        fault: DomainFault,
    ) -> Result<u64, SimError> {
        let s = (va.0 >> 20) as usize;
        let o = self.owner_of(space, va.0);
        let mut cycles = self.fault_cycles;
        // A shared region touched before it has a domain gets one now (§3.1).
        if self.domain_of(o).is_none() {
            let keep = self.dacr_of(space as u32);
            let (d, c) = self.allocate(sys, cpu, o, keep);
            cycles += c;
            // In use since the running process was scheduled (the last switch), not since
            // the domain's previous holder was: before 2026-11-26 it kept that one's (or 0),
            // so the region just taken was the next victim (its twin found it).
            self.last_use[d as usize] = self.tick;
            self.mark_dirty(space as u32);
            sys.set_dacr(cpu, self.dacr_of(space as u32));
        }
        let d = self.domain_of(o).expect("allocated");
        let collision = match fault {
            DomainFault::Domain(_) => true,
            // The entry is empty, but another space's lines may still be cached there.
            DomainFault::Section => matches!(self.stale[s], Some(x) if x != o),
        };
        match fault {
            DomainFault::Section => self.section_faults += 1,
            DomainFault::Domain(_) => self.domain_faults += 1,
        }
        if collision {
            // §2.3: flush TLB and caches, reload the entry, restart.
            self.collisions += 1;
            cycles += self.flush(sys, cpu, true);
        }
        self.section_owner[s] = Some(o);
        self.stale[s] = None;
        self.in_tlb[d as usize] = true;
        sys.set_cpd(s, Some(Domain(d)));
        Ok(cycles)
    }

    fn on_event(&mut self, sys: &mut System, cpu: usize, event: &Event) -> Result<u64, SimError> {
        if let Event::Flush { what, .. } = *event {
            let running = self.running.get(cpu).copied().flatten();
            if what & flush::TLB != 0 {
                self.in_tlb = [false; 16];
                // The running process keeps filling the TLB with its domains' entries, with no
                // fault to mark them (its CPD entries stay): without the mark, its domain could
                // be preempted with no TLB flush, and the next owner would hit its entries
                // (seed 002 §2.3: protection is maintained). Its twin found this.
                if let Some(p) = running {
                    self.mark_in_tlb(p);
                }
            }
            if what & flush::CACHES != 0 {
                // seed 002 §3.1: "Whenever caches are flushed, all domains are marked clean";
                // no line is left under a dropped CPD entry either. Its twin found this.
                self.dirty = [false; 16];
                self.stale.iter_mut().for_each(|s| *s = None);
                if let Some(p) = running {
                    self.mark_dirty(p);
                }
            }
        }
        if let Event::ThreadExit { thread } = *event {
            if let Some(&p) = self.process_of.get(&thread) {
                self.process_of.remove(&thread);
                if !self.process_of.values().any(|&q| q == p) {
                    self.free_process(sys, p);
                    for r in self.running.iter_mut() {
                        if *r == Some(p) {
                            *r = None;
                        }
                    }
                }
            }
        }
        Ok(0)
    }

    fn counters(&self) -> Vec<(String, u64)> {
        let used = self
            .holder
            .iter()
            .filter(|h| matches!(h, Holder::Owner(_)))
            .count() as u64;
        vec![
            ("switches".into(), self.switches),
            ("section_faults".into(), self.section_faults),
            ("domain_faults".into(), self.domain_faults),
            ("collisions".into(), self.collisions),
            ("recycles".into(), self.recycles),
            ("recycles_clean".into(), self.recycles_clean),
            ("tlb_flushes".into(), self.flushes_tlb),
            ("cache_flushes".into(), self.flushes_cache),
            ("lazy_frees".into(), self.lazy_frees),
            ("domains_in_use".into(), used),
            ("shared_regions".into(), self.objects.len() as u64),
            ("slots_doubled".into(), self.slots_doubled),
        ]
    }
}
