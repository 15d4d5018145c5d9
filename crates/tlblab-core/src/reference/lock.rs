//! The reference's TLB locking (seed 004 §III): a page's walk, then its entry inserted and
//! locked in the lockable data level of each core named.

use super::*;

impl ReferenceModel {
    /// A `TlbLock` event (seed 004): the page is translated (a walk, paid by the process's
    /// hardware thread) and put, locked, into the first lockable level of the data path of
    /// each core named; an unlock leaves the entries valid and replaceable.
    pub(super) fn tlb_lock(
        &mut self,
        process: u32,
        page: u64,
        core: tlblab_types::CoreId,
        lock: bool,
    ) -> Result<(), String> {
        let space = self.ensure_space(process)?;
        let cores: Vec<usize> = if core == ALL_CORES {
            (0..self.cores.len()).collect()
        } else if (core.0 as usize) < self.cores.len() {
            vec![core.0 as usize]
        } else {
            return Err(format!("TlbLock event: core {} does not exist", core.0));
        };
        if !lock {
            for c in cores {
                let t = self.lockable_level(c, "")?;
                self.tlbs[t].unlock(page);
            }
            return Ok(());
        }
        let cpu = self.cpu_of_process(process);
        let (cycles, _) = self.lock_page(space, page, cpu, &cores, "")?;
        self.charge(cpu, cycles);
        Ok(())
    }

    /// The TLB instance of core `c`'s data path with lockable entries named `level` (empty:
    /// the first on the path).
    pub(super) fn lockable_level(&self, c: usize, level: &str) -> Result<usize, String> {
        self.cores[c]
            .dtlb
            .iter()
            .map(|&(t, _)| t)
            .find(|&t| {
                self.tlbs[t].lockable > 0 && (level.is_empty() || self.tlbs[t].name == level)
            })
            .ok_or_else(|| format!("core {c} has no lockable data TLB level"))
    }

    /// Translates `page` of `space` on hardware thread `cpu` (its counters; a walk, or the
    /// walker's latency in a TLB-only run) and puts the translation, locked, into the lockable
    /// level of each of `cores`, the entry tagged with the core's first hardware thread (0).
    /// Returns (the translation's cycles, not charged; how many entries took a new lock).
    pub(super) fn lock_page(
        &mut self,
        space: usize,
        page: u64,
        cpu: usize,
        cores: &[usize],
        level: &str,
    ) -> Result<(u64, usize), String> {
        let mut out = RefOutcome::default();
        let (pfn, size, cycles) = self.translate(cpu, space, page, &mut out)?;
        let mut n = 0;
        for &c in cores {
            let t = self.lockable_level(c, level)?;
            let who = Who {
                asid: self.spaces[space].asid,
                vmid: self.vmid(),
                hw_thread: 0,
            };
            // Seed 004's lockdown on ARM: the address is invalidated before the entry is
            // loaded and locked, so no entry of another page size over the page stays beside
            // it (on a level without ASID tags, another address space's).
            let dropped = self.tlbs[t].drop_overlapping(page, who, size);
            self.core_os[c].invalidations += dropped;
            let before = self.tlbs[t].locked_count();
            self.tlbs[t].insert(Entry {
                hw_thread: 0,
                locked: true,
                ..Entry::filled(page >> size.shift(), size, pfn, who)
            });
            if !self.tlbs[t].lock(page, who) {
                return Err(format!(
                    "cannot lock page {page:#x} into {} of core {c}",
                    self.tlbs[t].name
                ));
            }
            n += (self.tlbs[t].locked_count() > before) as usize;
            // A lock is a main-TLB operation: the Cortex-A9 flushes its micro TLBs (§6.2.1).
            self.flush_context_levels(c);
        }
        Ok((cycles, n))
    }
}
