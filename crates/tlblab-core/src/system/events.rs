//! The OS events of a record stream as the engine applies them: thread starts and exits,
//! switches and migrations, mappings, shootdowns, flushes, jobs and phases (the context-switch
//! policies themselves are in `switch.rs`).

use super::*;

impl System {
    /// Moves `thread` to hardware thread `cpu`. What it meets there is the new core's TLB
    /// contents, unless the technique installed intervenes (`Technique::on_migrate`).
    pub fn migrate(&mut self, thread: ThreadId, cpu: usize) -> Result<(), SimError> {
        let st = self.thread_state(thread)?;
        let cpu = cpu % self.cpus.len();
        if cpu == st.cpu {
            return Ok(());
        }
        self.os_stats.migrations += 1;
        // The migration path on the old cpu (`OsConfig::migrate_kernel_pages`), before the
        // technique's save: its global entries are the newest the save finds.
        let (os, bytes) = (self.options.os, self.config.memory.bytes);
        let mut path = 0;
        let first = os.migrate_kernel_page(0);
        for pa in crate::os::kernel_path_pages(bytes, first, os.migrate_kernel_pages) {
            path += self.kernel_touch_as(st, pa, false);
        }
        self.charge(st.cpu, path);
        // The thread cannot run before the time it left its old cpu.
        let t = self.cpus[st.cpu].clock;
        if self.cpus[cpu].clock < t {
            self.cpus[cpu].clock = t;
        }
        if self.current[st.cpu] == Some(thread) {
            self.set_current(st.cpu, None);
        }
        self.threads[thread.0 as usize] = Some(ThreadState { cpu, ..st });
        let c =
            self.with_technique(0, |t, sys| t.on_migrate(sys, thread, st.space, st.cpu, cpu))?;
        self.charge(cpu, c);
        Ok(())
    }

    /// Unmaps `start..start+len` in `space` and shoots the range down: every core's TLBs lose
    /// the range's entries of that address space, the space's page-walk-cache entries are dropped,
    /// and every core but the initiator (`cpu`) takes an inter-processor interrupt
    /// (`os.ipi_cycles`). Returns the number of TLB entries invalidated.
    pub fn unmap_range(&mut self, space: usize, start: VirtAddr, len: u64, cpu: usize) -> usize {
        let end = start.0.saturating_add(len);
        let mut va = start.align_down(PageSize::Size4K).0;
        while va < end {
            self.spaces[space].pt.unmap(VirtAddr(va));
            va += 4096;
        }
        // Page-walk caches may point at tables of the range; drop this space's entries.
        let id = self.spaces[space].id;
        for p in &mut self.pwcs {
            p.flush_space(id);
        }
        self.shootdown(space, start, len, cpu)
    }

    /// The kernel's flush of `start..start+len` of `space` on `cpu` (a `FlushRange` event,
    /// seed 002: ARM Linux 2.4's `flush_cache_page`/`flush_tlb_page` and a short
    /// `flush_cache_range`): with `flush::TLB` the range's TLB entries of that space go (the
    /// shootdown of `Mprotect`, no unmapping), with `flush::CACHES` the range's lines in the
    /// core's virtually indexed data caches are cleaned and invalidated one by one, with
    /// `flush::INSTR_CACHES` its virtually indexed instruction caches are invalidated whole.
    /// Physically indexed caches keep their lines (a virtual range names none of them).
    /// Returns the cycles of the caches' part.
    pub(super) fn flush_range(
        &mut self,
        space: usize,
        cpu: usize,
        start: VirtAddr,
        len: u64,
        what: u8,
    ) -> u64 {
        if what & flush::TLB != 0 {
            self.shootdown(space, start, len, cpu);
        }
        let mut cycles = 0;
        if what & flush::CACHES != 0 {
            // A core's data path names each cache level once.
            let c = self.cpus[cpu].core;
            for i in 0..self.cores[c].dcache.len() {
                let k = self.cores[c].dcache[i].cache;
                if self.caches[k].is_virtual() {
                    let (c, dirty) = self.caches[k].flush_range_counted(start.0, len);
                    cycles += c;
                    self.settle_writebacks(cpu, dirty);
                }
            }
            self.os_stats.cache_flush_cycles += cycles;
        }
        if what & flush::INSTR_CACHES != 0 {
            cycles += super::switch::flush_virtual_caches(self, cpu, true);
        }
        cycles
    }

    /// The state of a thread of `process` (the first bound), for events that name a process.
    pub(super) fn state_of_process(&self, process: u32) -> Option<ThreadState> {
        self.threads
            .iter()
            .flatten()
            .find(|s| s.space == process as usize)
            .copied()
    }

    /// The thread's hardware thread, for events that name a process rather than a core.
    pub(super) fn cpu_of_process(&self, process: u32) -> usize {
        self.threads
            .iter()
            .flatten()
            .find(|s| s.space == process as usize)
            .map(|s| s.cpu)
            .unwrap_or(0)
    }

    /// A `TlbLock` event (seed 004): lock or unlock `page` of `process` in the lockable data
    /// TLB level of `core` (or every core); the walk a lock makes is paid by the process's
    /// hardware thread (`lock_page` in system/lock.rs).
    fn tlb_lock_event(
        &mut self,
        process: u32,
        page: VirtAddr,
        core: tlblab_types::CoreId,
        lock: bool,
    ) -> Result<(), SimError> {
        let space = self.ensure_space(process)?;
        let cores: Vec<usize> = if core == tlblab_trace::record::ALL_CORES {
            (0..self.cores.len()).collect()
        } else if (core.0 as usize) < self.cores.len() {
            vec![core.0 as usize]
        } else {
            return Err(SimError(format!(
                "TlbLock event: core {} does not exist (the machine has {})",
                core.0,
                self.cores.len()
            )));
        };
        if lock {
            let cpu = self.cpu_of_process(process);
            let (cycles, _) = self.lock_page(space, page, cpu, &cores, "")?;
            self.charge(cpu, cycles);
        } else {
            self.unlock_page(page, &cores, "")?;
        }
        Ok(())
    }

    pub(super) fn ensure_space(&mut self, process: u32) -> Result<usize, SimError> {
        if process > 1 << 16 {
            return Err(SimError(format!(
                "process id {process} is too large (expected < 65536)"
            )));
        }
        while self.spaces.len() <= process as usize {
            self.create_space()?;
        }
        Ok(process as usize)
    }

    pub(super) fn page_size_of_shift(shift: u8) -> Result<PageSize, SimError> {
        PageSize::ALL
            .into_iter()
            .find(|s| s.shift() == shift as u32)
            .ok_or_else(|| SimError(format!("mapping event: page_shift {shift} is not a supported page size (12, 14, 16, 20, 21, 30)")))
    }

    /// Starts recording a job's statistics (trace `JobStart`, or the RM scheduler).
    pub(crate) fn job_start(&mut self, task: u32, job: u32, release: u64) -> Result<(), SimError> {
        let st = self.thread_state(ThreadId(task))?;
        let snapshot = self.thread_stats_now(ThreadId(task), st);
        let js = JobStats {
            task,
            job,
            release,
            start: self.cpus[st.cpu].clock,
            ..JobStats::default()
        };
        self.open_jobs.insert((task, job), (js, snapshot));
        Ok(())
    }

    /// Finishes a job's statistics: what its thread did since `job_start`.
    pub(crate) fn job_end(
        &mut self,
        task: u32,
        job: u32,
        deadline: Option<u64>,
    ) -> Result<(), SimError> {
        let st = self.thread_state(ThreadId(task))?;
        let Some((mut js, before)) = self.open_jobs.remove(&(task, job)) else {
            return Err(SimError(format!(
                "JobEnd for task {task} job {job} without a JobStart"
            )));
        };
        let now = &self.thread_stats_now(ThreadId(task), st);
        js.end = self.cpus[st.cpu].clock;
        js.cycles = now.cycles - before.cycles;
        js.references = now.references - before.references;
        js.tlb_misses = now
            .tlb
            .iter()
            .zip(&before.tlb)
            .map(|(a, b)| a.misses - b.misses)
            .collect();
        js.walks = now.walks - before.walks;
        js.deadline_missed = deadline.is_some_and(|d| js.end > d);
        self.jobs.push(js);
        Ok(())
    }

    /// Handles an event record (conventions: docs/formats/trace.md §6).
    pub fn event(&mut self, e: Event) -> Result<(), SimError> {
        match e {
            Event::ThreadStart { thread, process } => {
                let space = self.ensure_space(process)?;
                let cpu = thread.0 as usize % self.cpus.len();
                self.bind_thread(thread, space, cpu);
            }
            Event::Independent { thread, begin } => self.set_independent(thread, begin)?,
            Event::Depends { thread, back } => self.set_depends(thread, back)?,
            Event::ThreadExit { thread } => {
                for c in 0..self.cpus.len() {
                    if self.current[c] == Some(thread) {
                        self.set_current(c, None);
                    }
                }
            }
            Event::ProcessExit { process } => {
                if (process as usize) < self.spaces.len() {
                    let cpu = self.cpu_of_process(process);
                    self.exit_process(process as usize, cpu);
                }
            }
            Event::KernelEntry { process, path } => {
                // The kernel entered on the process's thread (a system call, a timer tick):
                // its path's text (`OsConfig::syscall_text_sections`, `tick_text_sections`) and
                // global kernel pages (`OsConfig::syscall_kernel_pages`, `tick_kernel_pages`). A process without a thread has no core to enter on.
                let Some((first, pages)) = self.options.os.entry_kernel_pages(path) else {
                    return Err(SimError(format!(
                        "KernelEntry event: path {path} is not a kernel path (0 a system call, 1 a timer tick)"
                    )));
                };
                let text = self.options.os.entry_text_sections(path);
                if pages > 0 || text != 0 || self.options.os.vectors_page {
                    if let Some(st) = self.state_of_process(process) {
                        // A tick enters as an IRQ (its stub runs from the stubs page), a
                        // system call as an SVC (`OsConfig::vectors_page`).
                        let irq = path == tlblab_trace::record::kernel_entry::TICK;
                        self.kernel_path(st, irq, text, first, pages);
                    }
                }
            }
            Event::ContextSwitch { core, to, .. } => {
                let cpu = core.0 as usize % self.cpus.len();
                if to == NO_THREAD {
                    self.context_switch(cpu, None)?;
                } else {
                    // The thread now runs on this hardware thread.
                    let st = self.thread_state(to)?;
                    if st.cpu != cpu {
                        self.threads[to.0 as usize] = Some(ThreadState { cpu, ..st });
                    }
                    self.context_switch(cpu, Some(to))?;
                }
            }
            Event::Migrate { thread, core } => self.migrate(thread, core.0 as usize)?,
            Event::Mmap {
                process,
                start,
                len,
                page_shift,
                ..
            } => {
                let space = self.ensure_space(process)?;
                let size = Self::page_size_of_shift(page_shift)?;
                self.set_region_page_size(space, start, len, size)?;
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
                let size = Self::page_size_of_shift(page_shift)?;
                let global = prot & tlblab_trace::record::prot::GLOBAL != 0;
                self.map_shared(space, start, len, size, object, global)?;
            }
            Event::Munmap {
                process,
                start,
                len,
            } => {
                if (process as usize) < self.spaces.len() {
                    let cpu = self.cpu_of_process(process);
                    self.unmap_range(process as usize, start, len, cpu);
                    self.range_flush_itlbs(len);
                }
            }
            Event::Mprotect {
                process,
                start,
                len,
                ..
            } => {
                // Permissions are not modelled, but changing them invalidates the cached
                // translations everywhere: the same shootdown as munmap, without unmapping.
                if (process as usize) < self.spaces.len() {
                    let cpu = self.cpu_of_process(process);
                    self.shootdown(process as usize, start, len, cpu);
                    self.range_flush_itlbs(len);
                }
            }
            Event::Flush { core, what } if what & flush::ADDRESS_SPACE != 0 => {
                // The kernel's own flush for an address space (flush::ADDRESS_SPACE): the TLB
                // with its caches, the caches alone (flush_cache_range over 32 KiB), or the
                // instruction caches alone (the I-cache half of a shorter flush_cache_range),
                // on the core's clock.
                let cpu = core.0 as usize % self.cpus.len();
                let caches = what & flush::CACHES != 0;
                let mut cycles = 0;
                if what & flush::TLB != 0 {
                    cycles += super::switch::flush_core(self, cpu, caches);
                } else if caches {
                    cycles += super::switch::flush_virtual_caches(self, cpu, false);
                }
                if what & flush::INSTR_CACHES != 0 && !caches {
                    cycles += super::switch::flush_virtual_caches(self, cpu, true);
                }
                self.cpus[cpu].clock += cycles;
            }
            Event::FlushRange {
                process,
                start,
                len,
                what,
            } => {
                let space = self.ensure_space(process)?;
                let cpu = self.cpu_of_process(process);
                let cycles = self.flush_range(space, cpu, start, len, what);
                self.cpus[cpu].clock += cycles;
            }
            Event::Flush { what, .. } if what & flush::INSTR_CACHES != 0 => {
                return Err(SimError(format!(
                    "a Flush event's INSTR_CACHES bit ({}) goes with ADDRESS_SPACE ({}), the kernel's flush for an address space; found what = {what}",
                    flush::INSTR_CACHES,
                    flush::ADDRESS_SPACE
                )));
            }
            Event::Flush { core, what } => {
                let cpu = core.0 as usize % self.cpus.len();
                if what & flush::TLB != 0 {
                    super::switch::flush_core(self, cpu, false);
                }
                if what & flush::CACHES != 0 {
                    let c = self.cpus[cpu].core;
                    let mut caches: Vec<usize> = self.cores[c]
                        .icache
                        .iter()
                        .chain(&self.cores[c].dcache)
                        .map(|r| r.cache)
                        .collect();
                    caches.sort_unstable();
                    caches.dedup();
                    for i in caches {
                        let (cost, dirty) = self.caches[i].flush_counted();
                        self.settle_writebacks(cpu, dirty);
                        self.os_stats.cache_flushes += 1;
                        self.os_stats.cache_flush_cycles += cost;
                    }
                }
            }
            Event::TaskRelease { .. } => {}
            Event::JobStart { task, job } => {
                let st = self.thread_state(ThreadId(task))?;
                let now = self.cpus[st.cpu].clock;
                self.job_start(task, job, now)?;
            }
            Event::JobEnd { task, job } => self.job_end(task, job, None)?,
            Event::Region { region, start, len } => self.regions.push((region, start.0, len)),
            Event::PhaseBegin {
                region: tlblab_trace::record::ROI_REGION,
            } => self.begin_roi(),
            Event::PhaseBegin { region } => self.phase_begin(region),
            Event::PhaseEnd { region } => self.phase_end(region)?,
            Event::TlbLock {
                process,
                page,
                core,
                lock,
            } => self.tlb_lock_event(process, page, core, lock)?,
        }
        if self.technique.is_some() {
            let cpu = self.event_cpu(&e);
            let cycles = self.with_technique(0, |t, sys| t.on_event(sys, cpu, &e))?;
            self.charge(cpu, cycles);
        }
        Ok(())
    }

    /// The hardware thread an event concerns: its core, its thread's, its process's, else 0.
    fn event_cpu(&self, e: &Event) -> usize {
        let n = self.cpus.len();
        let of_thread = |t: ThreadId| {
            self.threads
                .get(t.0 as usize)
                .copied()
                .flatten()
                .map_or(0, |st| st.cpu)
        };
        match *e {
            Event::ContextSwitch { core, .. }
            | Event::Migrate { core, .. }
            | Event::Flush { core, .. } => core.0 as usize % n,
            Event::ThreadStart { thread, .. } | Event::ThreadExit { thread } => of_thread(thread),
            Event::Mmap { process, .. }
            | Event::MapShared { process, .. }
            | Event::Munmap { process, .. }
            | Event::Mprotect { process, .. }
            | Event::FlushRange { process, .. }
            | Event::ProcessExit { process }
            | Event::KernelEntry { process, .. }
            | Event::TlbLock { process, .. } => self.cpu_of_process(process),
            Event::JobStart { task, .. } | Event::JobEnd { task, .. } => of_thread(ThreadId(task)),
            _ => 0,
        }
    }

    /// A phase begins: snapshot the machine's counters and time (`Stats::phases`).
    fn phase_begin(&mut self, region: u32) {
        let counter = match self.phase_counts.iter_mut().find(|c| c.0 == region) {
            Some(c) => c,
            None => {
                self.phase_counts.push((region, 0));
                self.phase_counts.last_mut().expect("just pushed")
            }
        };
        let occurrence = counter.1;
        counter.1 += 1;
        let snap = (
            region,
            occurrence,
            self.now(),
            self.machine_counters(),
            self.os_stats.clone(),
        );
        self.open_phases.push(snap);
    }

    /// A phase ends: its counters are the difference from its begin. An end without a begin
    /// is the trace's error.
    fn phase_end(&mut self, region: u32) -> Result<(), SimError> {
        let Some(at) = self.open_phases.iter().rposition(|p| p.0 == region) else {
            return Err(SimError(format!(
                "PhaseEnd of region {region} ({}) with no PhaseBegin before it",
                self.region_name(region)
            )));
        };
        let (_, occurrence, begin_cycle, begin, os_begin) = self.open_phases.remove(at);
        let mut stats = self.machine_counters();
        stats.sub(&begin);
        self.phases.push(crate::stats::PhaseStats {
            name: self.region_name(region),
            region,
            occurrence,
            begin_cycle,
            end_cycle: self.now(),
            stats,
            os: self.os_stats.since(&os_begin),
        });
        Ok(())
    }

    /// A region's name from the source, else `region N`.
    pub(super) fn region_name(&self, region: u32) -> String {
        self.region_names
            .get(region as usize)
            .cloned()
            .unwrap_or_else(|| match region {
                tlblab_trace::record::WINDOW_REGION => "window".to_string(),
                _ => format!("region {region}"),
            })
    }

    /// The TLBs of `core`'s paths, each once (a unified level is on both), each with whether
    /// it lies in front of the core's last level (a micro TLB in front of the main TLB).
    pub(super) fn core_tlbs(&self, core: usize) -> Vec<(usize, bool)> {
        let c = &self.cores[core];
        let mut tlbs: Vec<usize> = c.itlb.iter().chain(&c.dtlb).map(|&(t, _)| t).collect();
        tlbs.sort_unstable();
        tlbs.dedup();
        let last = tlbs
            .iter()
            .map(|&t| self.tlbs[t].config.level)
            .max()
            .unwrap_or(0);
        tlbs.into_iter()
            .map(|t| (t, self.tlbs[t].config.level < last))
            .collect()
    }

    /// After a range's shootdown (`Munmap`, `Mprotect`) of `len` bytes, with
    /// `os.range_flush_whole_itlb` (the SA-1100's `flush_tlb_range`, see `OsConfig`): every
    /// core's instruction-only TLB levels invalidated whole (a level on the data path too is
    /// not one). Nothing for an empty range, as the shootdown's loop does nothing then.
    fn range_flush_itlbs(&mut self, len: u64) {
        if !self.options.os.range_flush_whole_itlb || len == 0 {
            return;
        }
        for core in 0..self.cores.len() {
            let c = &self.cores[core];
            let only: Vec<usize> = c
                .itlb
                .iter()
                .map(|&(t, _)| t)
                .filter(|t| !c.dtlb.iter().any(|&(d, _)| d == *t))
                .collect();
            let mut n = 0;
            for t in only {
                n += self.tlbs[t].invalidate_all();
            }
            self.core_os[core].invalidations += n as u64;
        }
    }

    /// Whether the kernel's TLB maintenance is ARM's broadcast (`TlbMaintenance::Broadcast`).
    pub(super) fn broadcast_maintenance(&self) -> bool {
        self.options.os.tlb_maintenance == crate::os::TlbMaintenance::Broadcast
    }

    /// After a maintenance operation reached every core: x86-style (`TlbMaintenance::Ipi`),
    /// every core but the initiator (`cpu`) takes an interrupt (`os.ipi_cycles`); broadcast,
    /// none (the hardware carries it).
    fn maintenance_done(&mut self, cpu: usize) {
        self.os_stats.shootdowns += 1;
        if self.broadcast_maintenance() {
            return;
        }
        let ipi = self.options.os.ipi_cycles;
        for c in 0..self.cpus.len() {
            if c != cpu % self.cpus.len() {
                self.os_stats.ipis += 1;
                self.charge(c, ipi);
            }
        }
    }

    /// Invalidates a range's translations of `space` on every core, keeping the mappings.
    /// x86-style (`TlbMaintenance::Ipi`): the range's entries of the space's ASID go from every
    /// level, with IPIs. ARM broadcast: the same in each core's last level (TLBIMVAIS per page,
    /// locked entries too when they match), and the levels in front of it flushed whole.
    pub fn shootdown(&mut self, space: usize, start: VirtAddr, len: u64, cpu: usize) -> usize {
        let asid = self.spaces[space].asid;
        let end = start.0.saturating_add(len);
        let first = start.align_down(PageSize::Size4K).0;
        let broadcast = self.broadcast_maintenance();
        let mut total = 0;
        for core in 0..self.cores.len() {
            let mut n = 0;
            for (t, front) in self.core_tlbs(core) {
                if broadcast && front {
                    if first < end {
                        n += self.tlbs[t].invalidate_all();
                    }
                    continue;
                }
                let mut va = first;
                while va < end {
                    n += self.tlbs[t].shoot_down_va(VirtAddr(va), Some(asid));
                    va += 4096;
                }
            }
            self.core_os[core].invalidations += n as u64;
            total += n;
        }
        self.maintenance_done(cpu);
        total
    }

    /// A `ProcessExit`: `space`'s address space is torn down (Linux's `exit_mmap` →
    /// `flush_tlb_mm`): its non-global entries go from every core's TLBs (locked ones too when
    /// they match; ARM: one TLBIASIDIS, whose receiving cores flush the levels in front of the
    /// last, `TlbMaintenance::Broadcast`), its page-walk-cache entries are dropped, and the
    /// maintenance reaches the other cores as `shootdown`'s does. Returns the TLB entries
    /// invalidated.
    pub fn exit_process(&mut self, space: usize, cpu: usize) -> usize {
        let asid = self.spaces[space].asid;
        let id = self.spaces[space].id;
        for p in &mut self.pwcs {
            p.flush_space(id);
        }
        let broadcast = self.broadcast_maintenance();
        let mut total = 0;
        for core in 0..self.cores.len() {
            let mut n = 0;
            for (t, front) in self.core_tlbs(core) {
                n += if broadcast && front {
                    self.tlbs[t].invalidate_all()
                } else {
                    self.tlbs[t].shoot_down_asid(asid)
                };
            }
            self.core_os[core].invalidations += n as u64;
            total += n;
        }
        self.maintenance_done(cpu);
        total
    }
}
