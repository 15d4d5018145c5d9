//! Locking TLB entries: the engine's side of lockdown (seed 004 §III; ARM's lockdown sequence,
//! Cortex-A9 TRM DDI0388 §4.3.15). `Event::TlbLock` (system/events.rs) and the lockdown
//! technique (techniques/lockdown.rs) both lock and unlock through these, so the operation
//! lives with the engine and no engine file calls into a technique.

use super::{SimError, System, ThreadState};
use crate::tlb::{Requester, TlbEntry};
use tlblab_types::{VirtAddr, Vpn};

impl System {
    /// The core hardware thread `cpu` belongs to.
    pub fn cpu_core(&self, cpu: usize) -> usize {
        self.cpus[cpu].core
    }

    /// Locks the translation of `page` in address space `space` into the lockable data level
    /// (named `level`, or the first with lockable entries if empty) of each core of `cores`:
    /// hardware thread `cpu` walks for it (mapping the page on first touch) and pays the walk;
    /// the entry is inserted and locked. Returns (cycles, entries locked). Fails when a core
    /// has no such level, its lockable entries are taken, or the page's set is all locked.
    pub fn lock_page(
        &mut self,
        space: usize,
        page: VirtAddr,
        cpu: usize,
        cores: &[usize],
        level: &str,
    ) -> Result<(u64, usize), SimError> {
        let st = ThreadState {
            space,
            cpu,
            stat: 0,
        };
        let core_i = self.cpus[cpu].core;
        let (leaf, cycles) = if self.options.walks {
            self.walk(core_i, st, page)?
        } else {
            self.translate_without_walk(st, page)
        };
        let sp = &self.spaces[space];
        let mut e = TlbEntry::new(
            Vpn(page.0 >> leaf.size.shift()),
            leaf.size,
            leaf.pfn,
            sp.asid,
        );
        e.vmid = sp.vmid;
        e.domain = leaf.domain;
        e.locked = true;
        let mut n = 0;
        for &c in cores {
            let t = self.lockable_tlb(c, level)?;
            let hw = self
                .cpus
                .iter()
                .find(|p| p.core == c)
                .map_or(0, |p| p.hw_thread);
            e.hw_thread = hw;
            let tlb = &mut self.tlbs[t];
            let req = Requester {
                asid: e.asid,
                vmid: e.vmid,
                hw_thread: hw,
            };
            // Entries of other page sizes over the locked page's range go first (ARM's
            // lockdown sequence invalidates the address before it locks it; no address keeps
            // two translations: `Tlb::invalidate_overlapping`).
            let dropped = tlb.invalidate_overlapping(page, req, e.size);
            let before = tlb.locked_count();
            tlb.insert(e);
            if !tlb.lock(page, req) {
                return Err(SimError(format!(
                    "lockdown: cannot lock page {:#x} into {} of core {c}: {} of its {} lockable entries are taken{}",
                    page.0,
                    tlb.config.name,
                    before,
                    tlb.config.lockable,
                    if before < tlb.config.lockable {
                        " and every way of the page's set is locked"
                    } else {
                        ""
                    }
                )));
            }
            n += (tlb.locked_count() > before) as usize;
            self.core_os[c].invalidations += dropped as u64;
            // A lock is a main-TLB operation, and on the Cortex-A9 "All main TLB related
            // operations affect both the instruction and data micro TLBs, causing them to be
            // flushed" (TRM DDI0388I §6.2.1): the core's levels so marked empty.
            super::switch::flush_context_levels(self, c);
        }
        Ok((cycles, n))
    }

    /// Unlocks `page`'s entries in the lockable data level of each core of `cores` (they stay
    /// valid, now replaceable). Returns how many were unlocked.
    pub fn unlock_page(
        &mut self,
        page: VirtAddr,
        cores: &[usize],
        level: &str,
    ) -> Result<usize, SimError> {
        let mut n = 0;
        for &c in cores {
            let t = self.lockable_tlb(c, level)?;
            n += self.tlbs[t].unlock(page);
        }
        Ok(n)
    }

    /// The TLB instance of core `c`'s data path with lockable entries (named `level`, or the
    /// first such if empty).
    fn lockable_tlb(&self, c: usize, level: &str) -> Result<usize, SimError> {
        let core = self
            .cores
            .get(c)
            .ok_or_else(|| SimError(format!("lockdown: core {c} does not exist")))?;
        core.dtlb
            .iter()
            .map(|&(t, _)| t)
            .find(|&t| {
                let cfg = &self.tlbs[t].config;
                cfg.lockable > 0 && (level.is_empty() || cfg.name == level)
            })
            .ok_or_else(|| {
                SimError(format!(
                    "lockdown: core {c} has no lockable data TLB level{}",
                    if level.is_empty() {
                        String::new()
                    } else {
                        format!(" named {level}")
                    }
                ))
            })
    }
}
