//! Hardware threads that cannot affect each other run apart (`run_apart`): each one's queue
//! to its end in turn, with no timeline between them, when `independent_cpus` says so.

use super::timeline::*;
use super::*;

impl System {
    /// Whether, in this run, no hardware thread's accesses can change what another's find,
    /// so that the timeline may run each hardware thread's queue on its own
    /// (`run_apart`): no TLB level is on two hardware threads' paths (no SMT siblings, no
    /// level shared by cores; the page-walk caches are per core), and either a TLB-only run
    /// (no page tables: a reference reads and changes only the TLB levels of its path) or one
    /// with walks but no caches and no nested translation, where a walk reads its address
    /// space's page table and changes its core's page-walk caches only. What such a walk may
    /// still share is the frame allocator, on a first touch: `run_apart` checks that none
    /// comes (`all_mapped`).
    pub(super) fn independent_cpus(&self) -> bool {
        if self.options.walks && (self.options.caches || self.host.is_some()) {
            return false;
        }
        let mut owner: Vec<Option<usize>> = vec![None; self.tlbs.len()];
        for (cpu, c) in self.cpus.iter().enumerate() {
            let core = &self.cores[c.core];
            for &(t, _) in core.itlb.iter().chain(&core.dtlb) {
                if owner[t].is_some_and(|o| o != cpu) {
                    return false;
                }
                owner[t] = Some(cpu);
            }
        }
        true
    }

    /// Runs every queued access, each hardware thread's queue on its own through
    /// `run_direct` (the memo lane and the fast lane, as for one thread), when the hardware
    /// threads are independent (`Timeline::independent`), every queued access is of the
    /// thread its hardware thread runs now or of one whose switch is independent too
    /// (`switch_apart`: not a new ASID, whose number would depend on the order, nor a
    /// switch hook), and the reference limit, if any, cannot fall among them; returns
    /// whether it did. Exact: each hardware
    /// thread's references, in their order, meet the same TLB state as on the interleaved
    /// timeline, its clock is the sum of their costs either way, and nothing else is shared.
    /// Two threads' random streams over 1 GiB each on zen3's two cores, TLB-only: 5.7-6.6 →
    /// 35-38 M refs/s (`profile_run`, three interleaved runs, 2026-11-24).
    /// `tests/reference_parity/` checks it against the timeline spelled out access by
    /// access.
    pub(super) fn run_apart(&mut self, tl: &mut Timeline, limit: u64) -> Result<bool, SimError> {
        // A reference limit that may fall among the queued accesses cuts them off where the
        // interleaving puts it, so those go access by access; one that cannot (an access is at
        // most two references, one per page it touches) leaves them all to run.
        if !tl.independent || self.references.saturating_add(2 * tl.queued as u64) > limit {
            return Ok(false);
        }
        // It runs each queue through `run_direct`, whose lanes count no stall cycles and run
        // no technique's companion: a run the lanes may not serve keeps to the timeline (a
        // drain before an event called it regardless until 2026-11-25, found by the
        // reference's stall-cycle counts).
        if !self.lanes_allowed {
            return Ok(false);
        }
        let policy = self.switch_policy();
        for (cpu, q) in tl.queues.iter().enumerate() {
            let current = self.current[cpu];
            // Accesses all of one thread need one look, not one each, unless walks must find
            // each page mapped.
            if let Sole::One(t) = q.sole() {
                if Some(t) != current && !self.switch_apart(policy, t) {
                    return Ok(false);
                }
                if !self.options.walks {
                    continue;
                }
            }
            for r in q.pending() {
                let Record::Access(a) = r else {
                    return Ok(false);
                };
                if Some(a.thread) != current && !self.switch_apart(policy, a.thread) {
                    return Ok(false);
                }
                if self.options.walks && !self.all_mapped(a) {
                    return Ok(false);
                }
            }
        }
        for cpu in 0..tl.queues.len() {
            let records = tl.queues[cpu].pending();
            let taken = self.run_direct(records, false, &mut Some(cpu), u64::MAX)?;
            // (`run_direct` takes all of them: every one is an access of `cpu`.)
            for r in &records[taken..] {
                if let Record::Access(a) = *r {
                    self.access(a)?;
                }
            }
            tl.queues[cpu].clear();
        }
        tl.queued = 0;
        Ok(true)
    }

    /// Whether every page access `a` touches (two when it crosses a page) is mapped in its
    /// thread's address space: its walk then allocates nothing. A first touch takes frames
    /// from the allocator all address spaces share, so the frames each page gets, and what
    /// the TLB levels then hold, follow the timeline's order of first touches.
    pub(super) fn all_mapped(&self, a: &Access) -> bool {
        let Some(Some(st)) = self.threads.get(a.thread.0 as usize) else {
            return false;
        };
        let pt = &self.spaces[st.space].pt;
        let va = a.vaddr.0;
        let last = va + (a.size.max(1) as u64 - 1);
        va < self.va_limit
            && last < self.va_limit
            && pt.translate(VirtAddr(va)).is_some()
            && (last >> 12 == va >> 12 || pt.translate(VirtAddr(last)).is_some())
    }

    /// Whether a switch to `thread` under `policy` (the run's, `switch_policy`; on the
    /// thread's hardware thread, in a run whose hardware threads are independent) changes
    /// nothing but that hardware thread's own state, whenever it comes: under `flush_all` it
    /// flushes only that core's TLB levels and page-walk caches (private here; the caches of
    /// such a run hold nothing, so their flush costs its fixed part whatever the order) and
    /// charges that hardware thread; under `asid_tagged` when the thread's address space
    /// holds an ASID of the current generation (the allocator then keeps it and does nothing;
    /// a new ASID would be numbered in the timeline's order, a rollover flushes every core).
    /// A switch hook may do anything: no.
    pub(super) fn switch_apart(&self, policy: SwitchPolicy, thread: ThreadId) -> bool {
        match policy {
            SwitchPolicy::FlushAll => true,
            SwitchPolicy::AsidTagged => match self.threads.get(thread.0 as usize) {
                Some(Some(st)) => self.space_generation[st.space] == self.asids.generation(),
                _ => false,
            },
            SwitchPolicy::Auto | SwitchPolicy::Hook => false,
        }
    }
}
