//! The twin of `fass`, from seed 002 (Wiggins, Tuch, Uhlig, Heiser 2003), naively:
//! - §2.1: 16 domains; a TLB entry carries its first-level descriptor's domain; the DACR
//!   enables some of them (`reference/domains.rs` checks every reference). `kernel_domains`
//!   are the kernel's (3 in ARM Linux, 1 in L4, §4.2); addresses at or above `kernel_base`
//!   are the kernel's, in domain 0.
//! - §2.2, §3.1: PID relocation into one of 64 slots of 32 MiB (slot 0 is the unrelocated
//!   window, so 63 for processes, taken round-robin after the last taken, one process each
//!   while there are free ones); a process's data, bss and stack go into its slot (its upper
//!   half, packed), what does not fit into 1 MiB blocks of the process's own in the top 2 GiB
//!   below the kernel. Done as a rewrite of the records before they run (as the placement and
//!   the relocation happen before the TLB sees an address).
//! - §2.3, Fig. 1: the caching page directory, one domain-tagged entry per 1 MiB section,
//!   loaded on a section fault from the running process's page directory; a process touching
//!   a section of another domain (a domain fault), or a section whose entry was dropped while
//!   another owner's lines may still be cached, collides: TLB and caches flushed, the entry
//!   reloaded, the access restarted.
//! - §3.1: a switch loads the DACR with the kernel's domains and the process's ("less than a
//!   dozen instructions", §1: `dacr_cycles`); a process without a domain gets a free one, else
//!   one is preempted (its CPD entries invalidated). Whenever the caches are flushed, every
//!   domain is clean; a domain is dirty once a process with writable mappings in it is
//!   scheduled; clean domains are revoked without a cache flush (the TLB, which the SA-1100
//!   only flushes whole, is flushed when it may hold entries of the domain).
//! - §4.2: an exiting process's domain is freed lazily, without a flush.
//!
//! What the seed leaves open, the catalog and docs/technique-fass.md decide (the interface):
//! the victim is the least recently scheduled domain not enabled by the incoming DACR, clean
//! ones first (one it enables only when there is no other); a free domain is taken preferring one that has no TLB entries since the last
//! flush, then a clean one, then the lowest; the kernel's knowledge of "the TLB may hold
//! entries of domain d" is: d was loaded into the DACR (a switch) or the CPD (a fault) since
//! the last TLB flush. A flush made while a process keeps running (a collision, a program's
//! flush) leaves that process's domain as if just scheduled.
//!
//! - §3.2, §2.3: TLB sharing. A shared object (`MapShared`) not wholly below 32 MiB is a
//!   shared region ("everything that is mmap()-ed", §2.3): with `sharing`, the first mapping
//!   places it in 1 MiB blocks of the shared area (at its traced address when the area is
//!   full, §2.3 item 3, or without `relocate`), and every later mapping of the object, by
//!   any process, at that same address ("provided the pages are mapped at the same address
//!   in both processes"), with a domain of its own ("a separate domain for each shared
//!   region"), which every mapper's DACR enables: the mappers hit each other's TLB entries.
//!   A shared object below 32 MiB is program text, relocated per process like any of its
//!   mappings and not shared (§3.2). Without `sharing`, a shared object is placed as the
//!   process's private mapping. The region's domain is taken when a mapper first touches a
//!   section of it (§3.1 "when a shared mapping is touched that has no domain allocated"),
//!   is preempted like any other, and is dirty when a process with a writable mapping of
//!   the region is scheduled (§3.1: "a process with writable mappings in that domain").
//!
//! What the seed leaves open about shared regions: a later mapping longer than the first
//! goes to the same address (over what follows it in the shared area: a collision there);
//! the region's domain counts as scheduled when any mapper is; it stays the region's when
//! every mapper has exited (the domain is "kept in the VMA data structure linked to the
//! in-memory inode", §3.2).

mod placement;

use super::{boolean, number, Twin};
use crate::machine::{MachineConfig, TechniqueSpec};
use crate::page_table::PageTableFormat;
use crate::reference::domains::{Fault, SECTIONS};
use crate::reference::ReferenceModel;
use tlblab_trace::record::{flush, prot};
use tlblab_trace::{Access, Event, Record};
use tlblab_types::VirtAddr;

const MIB: u64 = 1 << 20;
/// seed 002 §2.2: "Addresses less than 32MB can be transparently relocated into another 32MB
/// partition", of which there are 64.
const SLOT: u64 = 32 * MIB;
const SLOTS: u64 = 64;
/// seed 002 §2.3: the shared area is the upper 2 GB.
const SHARED_AREA: u64 = 0x8000_0000;

/// Who a section's CPD entry, or the lines cached under it, belong to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Owner {
    Kernel,
    Process(u32),
    /// A shared region: the shared object's (seed 002 §3.2).
    Shared(u32),
    /// Lines of more than one owner may be cached (collides with everyone).
    Many,
}

/// A mapping as placed: traced `start..start+len` moved to `to`.
#[derive(Clone, Copy)]
struct Mapping {
    start: u64,
    len: u64,
    to: u64,
    owner: Owner,
}

#[derive(Default)]
struct Process {
    slot: Option<u64>,
    mappings: Vec<Mapping>,
    /// Where the next private mapping goes in the slot's upper half (an offset in the slot).
    slot_next: u64,
    /// The process's current block in the shared area: next free address, end.
    block: (u64, u64),
    writable: bool,
    /// The shared regions the process maps, and whether it maps each writable.
    shared: Vec<(u32, bool)>,
    exited: bool,
}

/// A shared region (seed 002 §3.2): where it is placed (its domain is the one `holder` names
/// it the holder of, if any).
struct Region {
    at: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Holder {
    Kernel,
    Free,
    Of(Owner),
}

pub(crate) struct FassTwin {
    kernel_domains: u8,
    sharing: bool,
    relocate: bool,
    kernel_base: u64,
    dacr_cycles: u64,
    fault_cycles: u64,
    processes: Vec<Process>,
    /// (thread, process) as the `ThreadStart` records say (a thread not named: process 0).
    threads: Vec<(u32, u32)>,
    /// How many processes hold each slot.
    slot_users: Vec<u32>,
    last_slot: u64,
    /// 1 MiB blocks of the shared area handed out so far (`blocks`).
    area_blocks: u64,
    /// The shared regions by shared object.
    regions: std::collections::BTreeMap<u32, Region>,
    holder: Vec<Holder>,
    dirty: Vec<bool>,
    /// The TLB may hold entries of the domain (the kernel's mark, cleared by a TLB flush).
    maybe_in_tlb: Vec<bool>,
    /// When the domain's owner was last scheduled (a count of switches).
    scheduled: Vec<u64>,
    /// Per section: the owner of its CPD entry, and the owner whose lines may still be cached
    /// under it though its entry was dropped.
    cpd_owner: Vec<Option<Owner>>,
    stale: Vec<Option<Owner>>,
    /// Per hardware thread: the process whose DACR is loaded.
    running: Vec<Option<u32>>,
    switches: u64,
    /// The events the twin counts (the technique's counters of the same names), by name.
    counts: std::collections::BTreeMap<&'static str, u64>,
}

impl FassTwin {
    /// Counts one `event` (a counter the technique reports under the same name).
    fn bump(&mut self, event: &'static str) {
        *self.counts.entry(event).or_insert(0) += 1;
    }

    fn count(&self, event: &str) -> u64 {
        self.counts.get(event).copied().unwrap_or(0)
    }

    fn process(&mut self, p: u32) -> &mut Process {
        while self.processes.len() <= p as usize {
            self.processes.push(Process::default());
        }
        &mut self.processes[p as usize]
    }

    // ---- placement (seed 002 §2.2, §2.3, §3.1) ----

    // ---- domains (seed 002 §2.1, §3.1) ----

    /// The DACR of process `p` (None: no process): client access (01) to the kernel's
    /// domains, the process's and its shared regions' (§3.1: "as well as any shared domains
    /// used by that process").
    pub(super) fn dacr_of(&self, p: Option<u32>) -> u32 {
        let mut dacr = 0;
        for d in 0..self.kernel_domains as u32 {
            dacr |= 1 << (2 * d);
        }
        for d in p.map_or(Vec::new(), |p| self.domains_of(p)) {
            dacr |= 1 << (2 * d as u32);
        }
        dacr
    }

    /// The domains process `p` uses: its own and its shared regions', each with whether the
    /// process has writable mappings in it.
    fn domains_of_writable(&self, p: u32) -> Vec<(u8, bool)> {
        let Some(pr) = self.processes.get(p as usize) else {
            return Vec::new();
        };
        let own = self.domain_of(Owner::Process(p));
        let mut ds: Vec<(u8, bool)> = own.map(|d| (d, pr.writable)).into_iter().collect();
        for &(o, w) in &pr.shared {
            if let Some(d) = self.domain_of(Owner::Shared(o)) {
                ds.push((d, w));
            }
        }
        ds
    }

    fn domains_of(&self, p: u32) -> Vec<u8> {
        self.domains_of_writable(p)
            .into_iter()
            .map(|d| d.0)
            .collect()
    }

    /// The domain `o` holds: the kernel's is 0; a process's or a shared region's is whichever
    /// of the 16 the domain table (`holder`) names it the holder of (§2.3: a domain is
    /// allocated to each process, and one to each shared region), found by looking.
    fn domain_of(&self, o: Owner) -> Option<u8> {
        match o {
            Owner::Kernel => Some(0),
            Owner::Many => None,
            _ => (0..16u8).find(|&d| self.holder[d as usize] == Holder::Of(o)),
        }
    }

    /// Process `p` is scheduled: each of its domains (its own, its shared regions') is dirty
    /// if it has writable mappings in it, and may have TLB entries from now on.
    fn scheduled_marks(&mut self, p: u32) {
        for (d, writable) in self.domains_of_writable(p) {
            self.dirty[d as usize] |= writable;
            self.maybe_in_tlb[d as usize] = true;
        }
    }

    /// The TLB of `cpu`'s core flushed, and the caches when `caches` (§3.1: every domain
    /// clean then, no stale lines left). Returns the cycles of the cache flushes.
    fn flush(&mut self, r: &mut ReferenceModel, cpu: usize, caches: bool) -> u64 {
        let cycles = r.flush_core(cpu, caches);
        self.bump("tlb_flushes");
        self.maybe_in_tlb.iter_mut().for_each(|m| *m = false);
        if caches {
            self.bump("cache_flushes");
            self.flushed_caches(cpu);
        }
        cycles
    }

    fn flushed_caches(&mut self, cpu: usize) {
        self.dirty.iter_mut().for_each(|d| *d = false);
        self.stale.iter_mut().for_each(|s| *s = None);
        // The process whose DACR is loaded keeps running: as if scheduled again.
        if let Some(p) = self.running[cpu] {
            self.scheduled_marks(p);
        }
    }

    /// Drops every CPD entry of `o`: the lines cached under them are stale.
    fn drop_entries(&mut self, r: &mut ReferenceModel, o: Owner) {
        let cpd = &mut r.domains.as_mut().expect("on").cpd;
        for (s, entry) in cpd.iter_mut().enumerate() {
            if self.cpd_owner[s] == Some(o) {
                self.cpd_owner[s] = None;
                *entry = None;
                self.stale[s] = match self.stale[s] {
                    Some(x) if x != o => Some(Owner::Many),
                    _ => Some(o),
                };
            }
        }
    }

    /// A domain for `o`, never one of `keep` (the incoming DACR): a free one, else one
    /// preempted (§3.1). Returns the cycles of the flushes it took.
    fn allocate(&mut self, r: &mut ReferenceModel, cpu: usize, o: Owner, keep: u32) -> u64 {
        let mut free = None;
        for d in 0..16 {
            if self.holder[d] != Holder::Free {
                continue;
            }
            let better = match free {
                None => true,
                Some(f) => {
                    (self.maybe_in_tlb[d], self.dirty[d]) < (self.maybe_in_tlb[f], self.dirty[f])
                }
            };
            if better {
                free = Some(d);
            }
        }
        let d = match free {
            Some(d) => d,
            None => {
                // Never one the incoming DACR enables, while there is another; when every
                // process domain is one (a process with shared regions using all that the
                // kernel leaves, §2.3 item 4: "running out of domains"), one of those: "a
                // domain ID must be preempted" (§3.1), and the process's own sections or
                // regions fault again when touched.
                let mut victim: Option<usize> = None;
                for pass in [false, true] {
                    for d in self.kernel_domains as usize..16 {
                        if !pass && crate::reference::domains::enables(keep, d as u8) {
                            continue;
                        }
                        let better = match victim {
                            None => true,
                            Some(v) => {
                                (self.dirty[d], self.scheduled[d])
                                    < (self.dirty[v], self.scheduled[v])
                            }
                        };
                        if better {
                            victim = Some(d);
                        }
                    }
                    if victim.is_some() {
                        break;
                    }
                }
                let v = victim.expect("kernel_domains leaves one domain at least");
                self.bump("recycles");
                if !self.dirty[v] {
                    self.bump("recycles_clean");
                }
                // §3.1: "a domain ID must be preempted, and all CPD entries tagged with that
                // domain need to be invalidated"; its holder holds no domain from here on.
                if let Holder::Of(prev) = self.holder[v] {
                    self.drop_entries(r, prev);
                }
                self.holder[v] = Holder::Free;
                v
            }
        };
        // §3.1: "Clean domains can be revoked without flushing caches"; a dirty one's lines
        // are cleaned and flushed first (and every domain is clean after). The SA-1100 drops
        // TLB entries only all at once: a tag that may still be in the TLB costs a TLB flush.
        let cycles = match (self.dirty[d], self.maybe_in_tlb[d]) {
            (true, _) => self.flush(r, cpu, true),
            (false, true) => self.flush(r, cpu, false),
            (false, false) => 0,
        };
        if let Owner::Process(p) = o {
            // A process holding a domain is listed, so that its DACR names the domain.
            let _ = self.process(p);
        }
        self.holder[d] = Holder::Of(o);
        cycles
    }

    /// What owns `va` (a placed address) in process `space`.
    fn owner_of(&self, space: usize, va: u64) -> Owner {
        if va >= self.kernel_base {
            return Owner::Kernel;
        }
        if let Some(pr) = self.processes.get(space) {
            for m in pr.mappings.iter().rev() {
                if va >= m.to && va < m.to + m.len {
                    return m.owner;
                }
            }
        }
        Owner::Process(space as u32)
    }

    fn exit(&mut self, r: &mut ReferenceModel, p: u32) {
        if self.processes.get(p as usize).is_none_or(|pr| pr.exited) {
            return;
        }
        self.process(p).exited = true;
        self.drop_entries(r, Owner::Process(p));
        if let Some(d) = self.domain_of(Owner::Process(p)) {
            self.holder[d as usize] = Holder::Free;
            self.bump("lazy_frees");
        }
        if let Some(s) = self.process(p).slot {
            self.slot_users[s as usize] -= 1;
        }
    }
}

impl Twin for FassTwin {
    /// seed 002 §2.1: the domain checks are on from the start, the kernel's domains enabled.
    fn on_install(&mut self, r: &mut ReferenceModel) {
        r.enable_domains(self.dacr_of(None));
    }

    fn new(spec: &TechniqueSpec, m: &MachineConfig, _seed: u64) -> Result<FassTwin, String> {
        // Domains are in the ARMv7 short descriptors' first level (seed 002 §2.1).
        if m.page_table.format != PageTableFormat::Armv7Short {
            return Err("twin fass: ARM domains need the armv7_short format".into());
        }
        // One hardware thread, as the model (seed 002 §4.2: one SA-1100); the model's message,
        // word for word, so that a run refused by one is refused alike by the other.
        let threads = m.cores * m.threads_per_core.max(1);
        if threads > 1 {
            return Err(format!(
                "technique fass: models the seed's single-core machine (seed 002 §4.2); machine {} has {} hardware threads ({} cores x {}), and domains preempted across cores are not modelled",
                m.name, threads, m.cores, m.threads_per_core.max(1)
            ));
        }
        let kernel_domains = number(spec, "kernel_domains", "3")?;
        if !(1..=15).contains(&kernel_domains) {
            return Err("twin fass: kernel_domains from 1 to 15".into());
        }
        let kernel_base = number(spec, "kernel_base", "0xbf000000")?;
        if !(SHARED_AREA + MIB..=1 << 32).contains(&kernel_base) || kernel_base % MIB != 0 {
            return Err(
                "twin fass: kernel_base a 1 MiB multiple above the shared area's first".into(),
            );
        }
        let mut holder = vec![Holder::Free; 16];
        for h in holder.iter_mut().take(kernel_domains as usize) {
            *h = Holder::Kernel;
        }
        Ok(FassTwin {
            kernel_domains: kernel_domains as u8,
            sharing: boolean(spec, "sharing", "true")?,
            relocate: boolean(spec, "relocate", "true")?,
            kernel_base,
            dacr_cycles: number(spec, "dacr_cycles", "10")?,
            fault_cycles: number(spec, "fault_cycles", "200")?,
            processes: Vec::new(),
            threads: Vec::new(),
            slot_users: vec![0; SLOTS as usize],
            last_slot: 0,
            area_blocks: 0,
            regions: std::collections::BTreeMap::new(),
            holder,
            dirty: vec![false; 16],
            maybe_in_tlb: vec![false; 16],
            scheduled: vec![0; 16],
            cpd_owner: vec![None; SECTIONS],
            stale: vec![None; SECTIONS],
            running: vec![None; m.cores * m.threads_per_core],
            switches: 0,
            counts: std::collections::BTreeMap::new(),
        })
    }

    fn on_records(&mut self, records: &[Record]) -> Result<Vec<Record>, String> {
        let mut out = Vec::with_capacity(records.len());
        for &r in records {
            out.push(match r {
                Record::Access(a) => {
                    let p = super::process_of(&self.threads, a.thread.0);
                    let va = self.moved(p, a.vaddr.0);
                    Record::Access(Access {
                        vaddr: VirtAddr(va),
                        ..a
                    })
                }
                Record::Event(e) => Record::Event(match e {
                    Event::ThreadStart { thread, process } => {
                        self.threads.push((thread.0, process));
                        self.process(process);
                        e
                    }
                    Event::Mmap {
                        process,
                        start,
                        len,
                        prot: pr,
                        page_shift,
                    } => {
                        let m = self.place(process, start.0, len);
                        let p = self.process(process);
                        p.writable |= pr & prot::WRITE != 0;
                        p.mappings.push(m);
                        Event::Mmap {
                            process,
                            start: VirtAddr(m.to),
                            len,
                            prot: pr,
                            page_shift,
                        }
                    }
                    Event::MapShared {
                        process,
                        start,
                        len,
                        prot: pr,
                        page_shift,
                        object,
                    } => {
                        let m = self.place_shared(process, start.0, len, object);
                        let w = pr & prot::WRITE != 0;
                        let p = self.process(process);
                        match m.owner {
                            Owner::Shared(o) => match p.shared.iter_mut().find(|s| s.0 == o) {
                                Some(s) => s.1 |= w,
                                None => p.shared.push((o, w)),
                            },
                            _ => p.writable |= w,
                        }
                        p.mappings.push(m);
                        Event::MapShared {
                            process,
                            start: VirtAddr(m.to),
                            len,
                            prot: pr,
                            page_shift,
                            object,
                        }
                    }
                    // §4.2 lazy flushing: the kernel's cache flush for an address space it
                    // forks, tears down, unmaps from or reprotects (flush_cache_mm,
                    // flush_cache_range) waits for the domain's next use; its TLB flush stays.
                    Event::Flush { core, what } if what & flush::ADDRESS_SPACE != 0 => {
                        Event::Flush {
                            core,
                            what: what & !(flush::CACHES | flush::INSTR_CACHES),
                        }
                    }
                    // A range moves with its process (`moved`). The same lazy flushing for
                    // part of an address space (flush_cache_page at a copy-on-write fault, a
                    // short flush_cache_range): the range's lines wait, its TLB entries go
                    // (flush_tlb_page).
                    mut e @ (Event::Munmap { .. }
                    | Event::Mprotect { .. }
                    | Event::FlushRange { .. }) => {
                        if let Event::Munmap { process, start, .. }
                        | Event::Mprotect { process, start, .. }
                        | Event::FlushRange { process, start, .. } = &mut e
                        {
                            *start = VirtAddr(self.moved(*process, start.0));
                        }
                        if let Event::FlushRange { what, .. } = &mut e {
                            *what &= !(flush::CACHES | flush::INSTR_CACHES);
                        }
                        e
                    }
                    e => e,
                }),
            });
        }
        Ok(out)
    }

    /// A change of address space on `cpu` to `to` (seed 002 §3.1): the DACR reloaded, a
    /// domain found first if the process has none.
    fn on_space_switch(
        &mut self,
        r: &mut ReferenceModel,
        cpu: usize,
        _from: Option<usize>,
        to: usize,
    ) -> Result<Option<u64>, String> {
        let p = to as u32;
        self.switches += 1;
        let mut cycles = self.dacr_cycles;
        // Listed from its first switch-in on, so that its domain counts in its DACR.
        let _ = self.process(p);
        if self.domain_of(Owner::Process(p)).is_none() {
            let keep = self.dacr_of(Some(p));
            cycles += self.allocate(r, cpu, Owner::Process(p), keep);
        }
        self.running[cpu] = Some(p);
        // Its own domain and its shared regions' are used from now on.
        for d in self.domains_of(p) {
            self.scheduled[d as usize] = self.switches;
        }
        self.scheduled_marks(p);
        r.domains.as_mut().expect("on").dacr[cpu] = self.dacr_of(Some(p));
        Ok(Some(cycles))
    }

    /// A section or domain fault (seed 002 §2.3): the CPD entry loaded from the running
    /// process's page directory; a collision (another domain's entry, or another owner's
    /// lines maybe cached in the section) flushes the TLB and the caches first.
    fn on_domain_fault(
        &mut self,
        r: &mut ReferenceModel,
        cpu: usize,
        space: usize,
        va: u64,
        fault: Fault,
    ) -> Result<u64, String> {
        let s = (va >> 20) as usize;
        let o = self.owner_of(space, va);
        let mut cycles = self.fault_cycles;
        if self.domain_of(o).is_none() {
            let keep = self.dacr_of(Some(space as u32));
            cycles += self.allocate(r, cpu, o, keep);
            // A shared region's domain taken by the running process (§3.1): in use since
            // that process was scheduled, the last switch.
            let d = self
                .domain_of(o)
                .ok_or("twin fass: no domain after allocation")?;
            self.scheduled[d as usize] = self.switches;
            self.scheduled_marks(space as u32);
            r.domains.as_mut().expect("on").dacr[cpu] = self.dacr_of(Some(space as u32));
        }
        let d = self
            .domain_of(o)
            .ok_or("twin fass: no domain after allocation")?;
        let collision = match fault {
            Fault::Domain(_) => {
                self.bump("domain_faults");
                true
            }
            Fault::Section => {
                self.bump("section_faults");
                matches!(self.stale[s], Some(x) if x != o)
            }
        };
        if collision {
            self.bump("collisions");
            cycles += self.flush(r, cpu, true);
        }
        self.cpd_owner[s] = Some(o);
        self.stale[s] = None;
        self.maybe_in_tlb[d as usize] = true;
        r.domains.as_mut().expect("on").cpd[s] = Some(d);
        Ok(cycles)
    }

    /// Every event after the reference applied it: a program's TLB flush clears the marks
    /// (the running process's domain stays marked, it keeps filling the TLB); its cache flush
    /// makes every domain clean (§3.1 "whenever caches are flushed"); a process whose last
    /// thread exits frees its domain and slot without a flush (§4.2).
    fn on_event(&mut self, r: &mut ReferenceModel, e: &Event) -> Result<(), String> {
        match *e {
            Event::Flush { core, what } => {
                let cpu = core.0 as usize % self.running.len();
                if what & flush::TLB != 0 {
                    self.maybe_in_tlb.iter_mut().for_each(|m| *m = false);
                    if let Some(p) = self.running[cpu] {
                        for d in self.domains_of(p) {
                            self.maybe_in_tlb[d as usize] = true;
                        }
                    }
                }
                if what & flush::CACHES != 0 {
                    self.flushed_caches(cpu);
                }
            }
            Event::ThreadExit { thread } => {
                let Some(i) = self.threads.iter().rposition(|t| t.0 == thread.0) else {
                    return Ok(());
                };
                let p = self.threads[i].1;
                self.threads.retain(|t| t.0 != thread.0);
                if self.threads.iter().all(|t| t.1 != p) {
                    self.exit(r, p);
                    for run in self.running.iter_mut() {
                        if *run == Some(p) {
                            *run = None;
                        }
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn counters(&self) -> Vec<(String, u64)> {
        // The catalog's counters in its order: counted events by name, and the states now
        // (domains held, shared regions placed).
        let now = |name: &str| match name {
            "switches" => self.switches,
            "domains_in_use" => self
                .holder
                .iter()
                .filter(|h| matches!(h, Holder::Of(_)))
                .count() as u64,
            "shared_regions" => self.regions.len() as u64,
            event => self.count(event),
        };
        [
            "switches",
            "section_faults",
            "domain_faults",
            "collisions",
            "recycles",
            "recycles_clean",
            "tlb_flushes",
            "cache_flushes",
            "lazy_frees",
            "domains_in_use",
            "shared_regions",
            "slots_doubled",
        ]
        .into_iter()
        .map(|name| (name.to_string(), now(name)))
        .collect()
    }
}
