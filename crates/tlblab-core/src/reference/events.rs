//! The reference's event records (switches, migrations, mappings, shootdowns, flushes, exits,
//! kernel entries, jobs, phases) and the flushes and shootdowns they make, written from the
//! record types' meaning (docs/formats/trace.md) and the OS model (ARCHITECTURE.md).

use super::*;

impl ReferenceModel {
    /// An event record (docs/formats/trace.md §6). Jobs, phases and regions change nothing the reference keeps.
    pub fn event(&mut self, e: Event) -> Result<(), String> {
        let n = self.cpus.len();
        match e {
            Event::ThreadStart { thread, process } => {
                let space = self.ensure_space(process)?;
                self.bind_thread(thread, space, thread.0 as usize % n);
            }
            Event::Independent { thread, begin } => {
                let cpu = self.thread(thread)?.1;
                self.wait_in_flight(cpu);
                if begin {
                    self.independent.insert(thread.0);
                } else {
                    self.independent.remove(&thread.0);
                }
            }
            Event::Depends { thread, back } => {
                let cpu = self.thread(thread)?.1;
                self.completions[cpu].1 = back;
            }
            Event::ThreadExit { thread } => {
                for c in &mut self.cpus {
                    if c.current == Some(thread.0) {
                        c.current = None;
                    }
                }
            }
            Event::ContextSwitch { core, to, .. } => {
                let cpu = core.0 as usize % n;
                if to == NO_THREAD {
                    self.context_switch(cpu, None)?;
                } else {
                    let (space, _) = self.thread(to)?;
                    self.threads.insert(to.0, (space, cpu));
                    self.context_switch(cpu, Some(to.0))?;
                }
            }
            Event::Migrate { thread, core } => {
                let (space, from) = self.thread(thread)?;
                let to = core.0 as usize % n;
                if to != from {
                    self.os.migrations += 1;
                    // The migration path's kernel pages on the old core, before the save.
                    let (os, bytes) = (self.opts.os, self.config.memory.bytes);
                    let mut path = 0;
                    let first = os.migrate_kernel_page(0);
                    for pa in kernel_path_pages(bytes, first, os.migrate_kernel_pages) {
                        path += self.kernel_touch(from, thread.0, pa, false)?;
                    }
                    self.charge(from, path);
                    // The thread cannot run before the time it left.
                    self.cpus[to].clock = self.cpus[to].clock.max(self.cpus[from].clock);
                    if self.cpus[from].current == Some(thread.0) {
                        self.cpus[from].current = None;
                    }
                    self.threads.insert(thread.0, (space, to));
                    if let Some(mut twin) = self.twin.take() {
                        // Linux's move_queued_task (seed 000 §7): charged to the new core.
                        let r = twin.on_migrate(self, thread.0, from, to);
                        self.twin = Some(twin);
                        let cycles = r?;
                        self.charge(to, cycles);
                    }
                }
            }
            Event::Mmap {
                process,
                start,
                len,
                page_shift,
                ..
            } => {
                let space = self.ensure_space(process)?;
                let size = page_size_of_shift(page_shift, "mmap")?;
                self.set_region_page_size(space, start.0, len, size);
            }
            Event::MapShared {
                process,
                start,
                len,
                prot,
                page_shift,
                object,
            } => {
                let space = self.ensure_space(process)?;
                let size = page_size_of_shift(page_shift, "map_shared")?;
                let global = prot & tlblab_trace::record::prot::GLOBAL != 0;
                self.map_shared(space, start.0, len, size, object, global);
            }
            Event::Munmap {
                process,
                start,
                len,
            } => {
                if (process as usize) < self.spaces.len() {
                    let space = process as usize;
                    let end = start.0.saturating_add(len);
                    let mut va = start.0 & !0xfff;
                    while va < end {
                        self.spaces[space].tables.unmap(va);
                        va += 4096;
                    }
                    let id = self.spaces[space].id;
                    for p in &mut self.pwcs {
                        p.flush_where(|s| s == id);
                    }
                    let cpu = self.cpu_of_process(process);
                    self.shootdown(space, start.0, len, cpu);
                    self.whole_itlb_after_range(len);
                }
            }
            Event::Mprotect {
                process,
                start,
                len,
                ..
            } => {
                if (process as usize) < self.spaces.len() {
                    let cpu = self.cpu_of_process(process);
                    self.shootdown(process as usize, start.0, len, cpu);
                    self.whole_itlb_after_range(len);
                }
            }
            Event::ProcessExit { process } => {
                if (process as usize) < self.spaces.len() {
                    let cpu = self.cpu_of_process(process);
                    self.exit_process(process as usize, cpu);
                }
            }
            Event::Flush { core, what } if what & flush::ADDRESS_SPACE != 0 => {
                self.flush_address_space(core.0 as usize % n, what);
            }
            Event::FlushRange { .. } => self.flush_part_of_space(e)?,
            Event::Flush { what, .. } if what & flush::INSTR_CACHES != 0 => {
                return Err(format!(
                    "Flush: INSTR_CACHES without ADDRESS_SPACE (what = {what})"
                ));
            }
            Event::Flush { core, what } => {
                let cpu = core.0 as usize % n;
                if what & flush::TLB != 0 {
                    self.flush_core(cpu, false);
                }
                if what & flush::CACHES != 0 {
                    let c = &self.cores[self.cpus[cpu].core];
                    let mut ids: Vec<usize> =
                        c.icache.iter().chain(&c.dcache).map(|&(k, _)| k).collect();
                    ids.sort_unstable();
                    ids.dedup();
                    for k in ids {
                        // Counted, and charged to no clock.
                        let (cost, dirty) = self.caches[k].flush();
                        self.settle_writebacks(cpu, dirty);
                        self.os.cache_flush_cycles += cost;
                        self.os.cache_flushes += 1;
                    }
                }
            }
            Event::TlbLock {
                process,
                page,
                core,
                lock,
            } => self.tlb_lock(process, page.0, core, lock)?,
            Event::KernelEntry { process, path } => {
                // The kernel entered on the process's (first) thread's hardware thread: its
                // path's kernel pages in order, busy time of the thread, as a fault's.
                let os = self.opts.os;
                let Some((first, pages)) = os.entry_kernel_pages(path) else {
                    return Err(format!(
                        "KernelEntry event: path {path} is not a kernel path"
                    ));
                };
                let thread = self
                    .threads
                    .values()
                    .find(|&&(s, _)| s == process as usize)
                    .copied();
                let text = os.entry_text_sections(path);
                let traced = pages > 0 || text != 0 || os.vectors_page;
                if let (Some((space, cpu)), true) = (thread, traced) {
                    let mut kernel = 0;
                    if os.vectors_page {
                        // A tick enters as an IRQ, through its stub's page; a call as an SVC.
                        let irq = path == tlblab_trace::record::kernel_entry::TICK;
                        kernel += self.kernel_vectors_in(cpu, space, irq);
                    }
                    for pa in kernel_text_sections(self.config.memory.bytes, text) {
                        kernel += self.kernel_fetch_in(cpu, space, pa);
                    }
                    for pa in kernel_path_pages(self.config.memory.bytes, first, pages) {
                        kernel += self.kernel_touch_in(cpu, space, pa, false);
                    }
                    self.counters[cpu].cycles += kernel;
                    self.cpus[cpu].clock += kernel;
                }
            }
            Event::TaskRelease { .. }
            | Event::JobStart { .. }
            | Event::JobEnd { .. }
            | Event::Region { .. }
            | Event::PhaseBegin { .. }
            | Event::PhaseEnd { .. } => {}
        }
        if let Some(mut twin) = self.twin.take() {
            // The technique sees every event after it was applied (`Technique::on_event`).
            let r = twin.on_event(self, &e);
            self.twin = Some(twin);
            r?;
        }
        Ok(())
    }

    /// Flushes the TLB levels (each once) and page-walk caches of `cpu`'s core, and its
    /// virtually indexed caches if `virtual_caches`; returns the cache flushes' cost.
    pub(super) fn flush_core(&mut self, cpu: usize, virtual_caches: bool) -> u64 {
        let core = self.cpus[cpu].core;
        let c = &self.cores[core];
        let mut tlbs: Vec<usize> = c.itlb.iter().chain(&c.dtlb).map(|&(t, _)| t).collect();
        tlbs.sort_unstable();
        tlbs.dedup();
        let n: u64 = tlbs
            .iter()
            .map(|&t| self.tlbs[t].invalidate_unlocked())
            .sum();
        for &p in &c.pwcs {
            self.pwcs[p].flush_where(|_| true);
        }
        self.core_os[core].invalidations += n;
        self.os.tlb_flushes += 1;
        if !virtual_caches {
            return 0;
        }
        self.flush_virtual_caches(cpu, false)
    }

    /// Flushes the virtually indexed caches of `cpu`'s core, each once; with `instr_only`
    /// only those on its instruction path and not on its data path. Returns their cost.
    pub(super) fn flush_virtual_caches(&mut self, cpu: usize, instr_only: bool) -> u64 {
        let c = &self.cores[self.cpus[cpu].core];
        let data: Vec<usize> = c.dcache.iter().map(|&(k, _)| k).collect();
        let mut ids: Vec<usize> = c.icache.iter().map(|&(k, _)| k).collect();
        if instr_only {
            ids.retain(|k| !data.contains(k));
        } else {
            ids.extend(&data);
        }
        ids.sort_unstable();
        ids.dedup();
        let (mut cycles, mut written) = (0, 0);
        for k in ids {
            if self.caches[k].virtual_indexed {
                let (cost, dirty) = self.caches[k].flush();
                cycles += cost;
                written += dirty;
                self.os.cache_flushes += 1;
            }
        }
        self.settle_writebacks(cpu, written);
        self.os.cache_flush_cycles += cycles;
        cycles
    }

    /// The kernel's flush for an address space (seed 002's flush_cache_mm), on hardware thread
    /// `cpu`'s clock: the TLBs, and with CACHES the virtually indexed caches. Without TLB:
    /// flush_cache_range, the caches alone (CACHES) or the instruction caches alone
    /// (INSTR_CACHES).
    pub(super) fn flush_address_space(&mut self, cpu: usize, what: u8) {
        let caches = what & flush::CACHES != 0;
        let mut cycles = 0;
        if what & flush::TLB != 0 {
            cycles += self.flush_core(cpu, caches);
        } else if caches {
            cycles += self.flush_virtual_caches(cpu, false);
        }
        if what & flush::INSTR_CACHES != 0 && !caches {
            cycles += self.flush_virtual_caches(cpu, true);
        }
        self.cpus[cpu].clock += cycles;
    }

    /// The kernel's flush of part of an address space (seed 002's flush_cache_page,
    /// flush_tlb_page, a short flush_cache_range), on hardware thread `cpu`'s clock: the
    /// range's TLB entries (TLB), the range's lines of the virtually indexed data caches one
    /// line address at a time (CACHES), the virtually indexed instruction caches whole
    /// (INSTR_CACHES).
    pub(super) fn flush_part_of_space(&mut self, e: Event) -> Result<(), String> {
        let Event::FlushRange {
            process,
            start: VirtAddr(start),
            len,
            what,
        } = e
        else {
            unreachable!("flush_part_of_space is given FlushRange events")
        };
        let space = self.ensure_space(process)?;
        let cpu = self.cpu_of_process(process);
        if what & flush::TLB != 0 {
            self.shootdown(space, start, len, cpu);
        }
        let mut cycles = 0;
        if what & flush::CACHES != 0 {
            let data: Vec<usize> = self.cores[self.cpus[cpu].core]
                .dcache
                .iter()
                .map(|&(k, _)| k)
                .collect();
            for k in data {
                if self.caches[k].virtual_indexed {
                    let (cost, dirty) = self.caches[k].flush_range(start, len);
                    cycles += cost;
                    self.settle_writebacks(cpu, dirty);
                }
            }
            self.os.cache_flush_cycles += cycles;
        }
        if what & flush::INSTR_CACHES != 0 {
            cycles += self.flush_virtual_caches(cpu, true);
        }
        self.cpus[cpu].clock += cycles;
        Ok(())
    }

    /// Invalidates `start..start+len` of `space` (its current ASID) in every core's TLB
    /// levels, locked entries included, 4 KiB at a time; every hardware thread but `cpu`
    /// takes an inter-processor interrupt (`os.ipi_cycles`).
    pub(super) fn shootdown(&mut self, space: usize, start: u64, len: u64, cpu: usize) {
        let asid = self.spaces[space].asid;
        let end = start.saturating_add(len);
        let broadcast = self.opts.os.tlb_maintenance == crate::os::TlbMaintenance::Broadcast;
        for core in 0..self.cores.len() {
            let mut n = 0;
            for (t, micro) in self.tlbs_of(core) {
                if broadcast && micro {
                    // ARM: a main-TLB maintenance operation flushes the micro TLBs whole.
                    if (start & !0xfff) < end {
                        n += self.tlbs[t].invalidate_unlocked();
                    }
                    continue;
                }
                let mut va = start & !0xfff;
                while va < end {
                    n += self.tlbs[t].shoot_down(va, asid);
                    va += 4096;
                }
            }
            self.core_os[core].invalidations += n;
        }
        self.maintenance_reaches_all(cpu);
    }

    /// `os.range_flush_whole_itlb`: a non-empty range's invalidation (munmap, mprotect) ends
    /// with the SA-1100's one I-TLB operation, invalidate all, on every core: each TLB only the
    /// instruction side reaches is emptied (locked entries stay, as every flush leaves them).
    fn whole_itlb_after_range(&mut self, len: u64) {
        if !self.opts.os.range_flush_whole_itlb || len == 0 {
            return;
        }
        for core in 0..self.cores.len() {
            let mut n = 0;
            for &(t, _) in &self.cores[core].itlb.clone() {
                if self.cores[core].dtlb.iter().all(|&(d, _)| d != t) {
                    n += self.tlbs[t].invalidate_unlocked();
                }
            }
            self.core_os[core].invalidations += n;
        }
    }

    /// The TLBs of `core`'s paths, each once, each with whether its level is below the
    /// deepest of them (a micro TLB in front of the main TLB).
    pub(super) fn tlbs_of(&self, core: usize) -> Vec<(usize, bool)> {
        let c = &self.cores[core];
        let mut tlbs: Vec<usize> = c.itlb.iter().chain(&c.dtlb).map(|&(t, _)| t).collect();
        tlbs.sort_unstable();
        tlbs.dedup();
        let deepest = tlbs.iter().map(|&t| self.tlbs[t].level).max().unwrap_or(0);
        tlbs.into_iter()
            .map(|t| (t, self.tlbs[t].level < deepest))
            .collect()
    }

    /// A maintenance operation has reached every core: one shootdown; x86-style, an IPI on
    /// every core but `cpu`; ARM broadcast, none.
    pub(super) fn maintenance_reaches_all(&mut self, cpu: usize) {
        self.os.shootdowns += 1;
        if self.opts.os.tlb_maintenance == crate::os::TlbMaintenance::Broadcast {
            return;
        }
        let (ipi, n) = (self.opts.os.ipi_cycles, self.cpus.len());
        for c in (0..n).filter(|&c| c != cpu % n) {
            self.os.ipis += 1;
            self.charge(c, ipi);
        }
    }

    /// A `ProcessExit`: the space's non-global entries leave every core's TLBs, locked ones
    /// too; its page-walk-cache entries go; broadcast, the micro TLBs are flushed whole.
    pub(super) fn exit_process(&mut self, space: usize, cpu: usize) {
        let asid = self.spaces[space].asid;
        let id = self.spaces[space].id;
        for p in &mut self.pwcs {
            p.flush_where(|s| s == id);
        }
        let broadcast = self.opts.os.tlb_maintenance == crate::os::TlbMaintenance::Broadcast;
        for core in 0..self.cores.len() {
            let tlbs = self.tlbs_of(core);
            let dropped = tlbs.into_iter().map(|(t, micro)| match broadcast && micro {
                true => self.tlbs[t].invalidate_unlocked(),
                false => self.tlbs[t].shoot_down_asid(asid),
            });
            self.core_os[core].invalidations += dropped.sum::<u64>();
        }
        self.maintenance_reaches_all(cpu);
    }
}
