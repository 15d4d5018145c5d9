//! Per-set miss attribution (`System::log_misses`): for one TLB level, every miss with the set
//! it fell in, the page that missed, the software thread and job that took it, and the page
//! (and thread) whose fill last evicted that page from the level. Seed 003 names inter-task
//! DTLB conflicts by set and page (§2.1, §6.0.6); the counters say only how many misses a job
//! took, this says which set and which other task's page caused each.
//!
//! Off unless asked: a run that logs takes the general path throughout (the lanes step aside,
//! as for stall cycles), and its fills turn off behind the look for a global translation
//! (`System::any_global`, which logging sets), so a run that does not ask executes what it did.
//! What is logged: references through `reference_full` (every miss of a run that logs) and the
//! evictions of the kernel's own fills (`kernel_touch`, cause `KERNEL_THREAD`). Not logged:
//! entries a technique inserts or removes through the System's operations, and invalidations
//! (a page invalidated, then missed, counts as never evicted: `evicted_by` empty).

use crate::stats::{MissLog, MissRecord, KERNEL_THREAD};
use std::collections::HashMap;

/// The log's state in the engine: the records, and per page evicted its last evictor.
#[derive(Clone, Debug)]
pub(crate) struct MissLogState {
    /// Index of the level in `Stats::tlb_levels` (the `stat` of the paths).
    pub(crate) stat: usize,
    pub(crate) log: MissLog,
    /// (TLB instance, page evicted) -> (the page whose fill evicted it, that fill's thread).
    /// Keyed by page number: the log attributes one address space's pages (seed 003's tasks
    /// are threads of one process); pages of several spaces with one number share a key.
    pub(crate) evicted_by: HashMap<(usize, u64), (u64, u32)>,
}

impl MissLogState {
    /// Starts the records over (a region of interest begins): the evictions seen before still
    /// attribute the misses after.
    pub(crate) fn restart(&mut self) {
        self.log.records.clear();
        self.log.per_set.iter_mut().for_each(|c| *c = 0);
    }

    pub(crate) fn new(stat: usize, level: String, sets: usize) -> MissLogState {
        MissLogState {
            stat,
            log: MissLog {
                level,
                records: Vec::new(),
                per_set: vec![0; sets],
            },
            evicted_by: HashMap::new(),
        }
    }

    /// Notes that filling `filler` (by thread `thread`) into TLB instance `tlb` evicted `victim`.
    pub(crate) fn evicted(&mut self, tlb: usize, victim: u64, filler: u64, thread: u32) {
        self.evicted_by.insert((tlb, victim), (filler, thread));
    }

    /// Logs a miss of `page` (its address) in `set` of TLB instance `tlb` by `thread` (job `job`); its fill
    /// evicted `victim`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn miss(
        &mut self,
        tlb: usize,
        reference: u64,
        thread: Option<u32>,
        job: Option<u32>,
        set: usize,
        page: u64,
        victim: Option<u64>,
    ) {
        let evicted_by = self.evicted_by.remove(&(tlb, page));
        if let Some(v) = victim {
            self.evicted(tlb, v, page, thread.unwrap_or(KERNEL_THREAD));
        }
        if let Some(c) = self.log.per_set.get_mut(set) {
            *c += 1;
        }
        self.log.records.push(MissRecord {
            reference,
            thread,
            job,
            set: set as u32,
            page,
            evicted_by,
            victim,
        });
    }
}

use super::{SimError, System, ThreadState};
use crate::tlb::TlbEntry;

/// The virtual address of an entry's page.
fn page_of(e: &TlbEntry) -> u64 {
    e.vpn.0 << e.size.shift()
}

impl System {
    /// Logs every miss of TLB level `level` (a name of `Stats::tlb_levels`) from now on, with
    /// its set, page, thread, job and the page that evicted it (`Stats::misses`). The run
    /// takes the general path from now on (the lanes count no such thing); every other
    /// counter is what it would have been.
    pub fn log_misses(&mut self, level: &str) -> Result<(), SimError> {
        let Some(stat) = self.tlb_names.iter().position(|n| n == level) else {
            return Err(SimError(format!(
                "miss log: the machine has no TLB level '{level}' (expected one of {})",
                self.tlb_names.join(", ")
            )));
        };
        let sets = self
            .cores
            .iter()
            .flat_map(|c| c.dtlb.iter().chain(&c.itlb))
            .find(|&&(_, s)| s == stat)
            .map_or(0, |&(t, _)| self.tlbs[t].sets());
        self.miss_log = Some(Box::new(MissLogState::new(stat, level.to_string(), sets)));
        self.lanes_allowed = false;
        // The general path's fills branch to `fill_logging` behind the look for a global
        // translation (`any_global`), which answers as before (false where nothing is mapped
        // global): a run that does not log pays nothing for the log.
        self.any_global = true;
        Ok(())
    }

    /// `reference_full`'s fills of the levels above `filled_below` when misses are logged:
    /// the same fills, each level's victim reported, the logged level's miss recorded.
    #[cold]
    #[inline(never)]
    pub(super) fn fill_logging(
        &mut self,
        st: ThreadState,
        core_i: usize,
        is_instr: bool,
        filled_below: usize,
        e: TlbEntry,
    ) {
        let thread = self.current[st.cpu].map(|t| t.0);
        let job = thread.and_then(|t| {
            self.open_jobs
                .keys()
                .filter(|k| k.0 == t)
                .map(|k| k.1)
                .max()
        });
        let reference = self.references;
        let core = &self.cores[core_i];
        let path = if is_instr { &core.itlb } else { &core.dtlb };
        for &(t, stat) in &path[..filled_below] {
            let victim = self.tlbs[t].fill_after_miss_reporting(e);
            if victim.is_some() {
                self.cpu_stats[st.cpu].tlb[stat].evictions += 1;
            }
            let Some(log) = self.miss_log.as_deref_mut() else {
                continue;
            };
            if stat == log.stat {
                let set = self.tlbs[t].set_of(e.vpn);
                log.miss(
                    t,
                    reference,
                    thread,
                    job,
                    set,
                    page_of(&e),
                    victim.as_ref().map(page_of),
                );
            }
        }
    }

    /// `kernel_touch`'s fill of TLB instance `t` (level `stat`) when misses are logged: the
    /// same fill (`Tlb::fill`, reporting), its eviction noted as the kernel's.
    #[cold]
    #[inline(never)]
    pub(super) fn kernel_fill_logging(&mut self, t: usize, stat: usize, e: TlbEntry) {
        let victim = self.tlbs[t].insert(e);
        if let (Some(log), Some(v)) = (self.miss_log.as_deref_mut(), victim) {
            if stat == log.stat {
                log.evicted(t, page_of(&v), page_of(&e), KERNEL_THREAD);
            }
        }
    }
}
