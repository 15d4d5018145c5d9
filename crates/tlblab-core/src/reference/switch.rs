//! The reference's threads, context switches and ASIDs: which space a thread runs in, the
//! switch policies (flush all, ASID-tagged with rollover), the cycles charged.

use super::*;

impl ReferenceModel {
    /// (address space, hardware thread) of `thread`; a thread first seen runs in the first
    /// address space (made if there is none) on hardware thread (id mod hardware threads).
    pub(super) fn thread(&mut self, thread: ThreadId) -> Result<(usize, usize), String> {
        if let Some(&s) = self.threads.get(&thread.0) {
            return Ok(s);
        }
        if thread.0 > 1 << 20 {
            return Err(format!("thread id {} is too large", thread.0));
        }
        if self.spaces.is_empty() {
            self.create_space()?;
        }
        let cpu = thread.0 as usize % self.cpus.len();
        self.bind_thread(thread, 0, cpu);
        Ok((0, cpu))
    }

    pub(super) fn ensure_space(&mut self, process: u32) -> Result<usize, String> {
        if process > 1 << 16 {
            return Err(format!("process id {process} is too large"));
        }
        while self.spaces.len() <= process as usize {
            self.create_space()?;
        }
        Ok(process as usize)
    }

    /// The hardware thread of the lowest-numbered thread of `process`, else 0.
    pub(super) fn cpu_of_process(&self, process: u32) -> usize {
        self.threads
            .values()
            .find(|&&(s, _)| s == process as usize)
            .map_or(0, |&(_, c)| c)
    }

    pub(super) fn charge(&mut self, cpu: usize, cycles: u64) {
        self.cpus[cpu].clock += cycles;
        self.core_os[self.cpus[cpu].core].cycles += cycles;
    }

    /// Hardware thread `cpu` now runs `to` (None: idle). Every switch costs
    /// `os.switch_cycles`; one that changes the address space whose translations the core
    /// holds (the last one that ran there, lazy TLB) also applies the policy: `flush_all`
    /// invalidates the core's unlocked TLB entries and page-walk caches and flushes its
    /// virtually indexed caches at their cost (nothing on a core that never ran anything);
    /// `asid_tagged` gives the space a valid ASID (seed 002 §2; seed 000 §3.3).
    pub(super) fn context_switch(&mut self, cpu: usize, to: Option<u32>) -> Result<u64, String> {
        if self.cpus[cpu].current == to {
            return Ok(0);
        }
        let from_space = self.cpus[cpu].last_space;
        let mut cycles = self.opts.os.switch_cycles;
        self.os.context_switches += 1;
        let mut space = None;
        if let Some(t) = to {
            let s = self.thread(ThreadId(t))?.0;
            space = Some(s);
            if from_space != Some(s) {
                self.os.address_space_switches += 1;
                // A twin that replaces the switch policy answers first (seed 002's DACR reload).
                let by_twin = self.twin_switch(cpu, from_space, s)?;
                cycles += match self.policy {
                    _ if by_twin.is_some() => by_twin.unwrap_or(0),
                    SwitchPolicy::FlushAll if from_space.is_none() => 0,
                    SwitchPolicy::FlushAll => self.flush_core(cpu, true),
                    SwitchPolicy::AsidTagged => {
                        let core = self.cpus[cpu].core;
                        self.flush_context_levels(core);
                        self.assign_asid(cpu, s);
                        0
                    }
                    _ => return Err("the reference models no switch hook".into()),
                };
            }
        }
        self.cpus[cpu].current = to;
        if space.is_some() {
            self.cpus[cpu].last_space = space;
        }
        if let Some(t) = to {
            let (os, bytes) = (self.opts.os, self.config.memory.bytes);
            for pa in kernel_path_pages(bytes, 0, os.kernel_pages) {
                cycles += self.kernel_touch(cpu, t, pa, false)?;
            }
            if let Some(mut twin) = self.twin.take() {
                // Linux's finish_task_switch: the thread is in, before its first access.
                let r = twin.on_switch_in(self, cpu, t);
                self.twin = Some(twin);
                cycles += r?;
            }
            // The kernel's way back to the thread, after finish_task_switch's work.
            for pa in kernel_path_pages(bytes, os.kernel_pages, os.kernel_return_pages) {
                cycles += self.kernel_touch(cpu, t, pa, false)?;
            }
        }
        self.os.switch_cycles += cycles;
        self.charge(cpu, cycles);
        Ok(cycles)
    }

    /// The Cortex-A9's micro TLBs (TRM DDI0388I §6.2.1): "any change of the Context ID
    /// Register causes the micro TLBs to be flushed", and Linux writes it on every change of
    /// address space; "all main TLB related operations" (a lock) flush them too. Every level
    /// of `core`'s paths marked so loses its unlocked entries, counted as invalidations.
    pub(super) fn flush_context_levels(&mut self, core: usize) {
        let c = &self.cores[core];
        let mut tlbs: Vec<usize> = c.itlb.iter().chain(&c.dtlb).map(|&(t, _)| t).collect();
        tlbs.sort();
        tlbs.dedup();
        for t in tlbs {
            if self.tlbs[t].flush_on_context {
                let n = self.tlbs[t].invalidate_unlocked();
                self.core_os[core].invalidations += n;
            }
        }
    }

    /// ASIDs as ARM Linux hands them out (seed 000 §3.3): a space keeps its ASID while its
    /// generation is current; else it takes the next free one; when none is left the
    /// generation advances, every core's TLB levels lose their unlocked entries and every
    /// page-walk cache empties, the space takes ASID 1, and the spaces the other hardware
    /// threads run take the next ones, in hardware-thread order.
    pub(super) fn assign_asid(&mut self, cpu: usize, space: usize) {
        if self.spaces[space].generation == self.generation {
            return;
        }
        if self.asid_next <= self.asid_max {
            self.set_asid(space);
            return;
        }
        self.generation += 1;
        self.asid_next = 1;
        self.os.asid_rollovers += 1;
        for core in 0..self.cores.len() {
            let c = &self.cores[core];
            let tlbs: Vec<usize> = c.itlb.iter().chain(&c.dtlb).map(|&(t, _)| t).collect();
            let n: u64 = tlbs
                .iter()
                .map(|&t| self.tlbs[t].invalidate_unlocked_non_global())
                .sum();
            self.core_os[core].invalidations += n;
            self.os.tlb_flushes += 1;
        }
        for p in &mut self.pwcs {
            p.flush_where(|_| true);
        }
        self.set_asid(space);
        for c in 0..self.cpus.len() {
            let Some(t) = self.cpus[c].current else {
                continue;
            };
            let Some(&(s, _)) = self.threads.get(&t) else {
                continue;
            };
            if c != cpu && s != space && self.spaces[s].generation != self.generation {
                self.set_asid(s);
            }
        }
    }

    pub(super) fn set_asid(&mut self, space: usize) {
        self.spaces[space].asid = self.asid_next;
        self.spaces[space].generation = self.generation;
        self.asid_next += 1;
    }

    pub(super) fn vmid(&self) -> u16 {
        self.host.is_some() as u16
    }
}
