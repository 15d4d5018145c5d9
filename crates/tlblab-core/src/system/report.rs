//! What a run reports: the statistics (`Stats`) derived from the per-hardware-thread
//! counters, per core and per process, and the warm-up that starts the region of interest.

use super::*;

impl System {
    /// The OS event counters so far.
    pub fn os_stats(&self) -> &OsStats {
        &self.os_stats
    }

    /// Jobs completed so far.
    pub fn jobs(&self) -> &[JobStats] {
        &self.jobs
    }

    /// A software thread's counters including what it has done since it was last switched in.
    pub(super) fn thread_stats_now(&self, thread: ThreadId, st: ThreadState) -> UnitStats {
        let mut unit = self.thread_stats[st.stat].1.clone();
        for cpu in 0..self.cpus.len() {
            if self.current[cpu] == Some(thread) {
                unit.add(&self.cpu_stats[cpu]);
                unit.sub(&self.cpu_snap[cpu]);
            }
        }
        unit
    }

    /// Per core: its hardware threads' references plus the OS work charged to it.
    pub(super) fn core_stats(&self) -> Vec<UnitStats> {
        let mut cores = self.core_os.clone();
        for (cpu, c) in self.cpus.iter().enumerate() {
            cores[c.core].add(&self.cpu_stats[cpu]);
        }
        cores
    }

    /// The statistics so far.
    /// Warms the machine up with the first `references` references of the next `run`: the
    /// statistics then cover what follows only (the region of interest), and
    /// `RunOptions::max_references` still counts from the start of the run. The run loop stops
    /// at that count exactly as a run with `max_references = references` stops, takes a
    /// snapshot of every counter (`begin_roi`) and goes on, so the statistics are exactly the
    /// difference of two runs stopped at the two counts (`tests/warmup.rs`); nothing is added
    /// to the per-access path. 0 = no warm-up.
    pub fn set_warmup(&mut self, references: u64) {
        self.warmup = references;
    }

    /// Begins the region of interest now: every counter restarts from here (`stats` reports
    /// the difference from this point). Called by the run loop at the end of a reference
    /// warm-up, and by a `PhaseBegin` event of `ROI_REGION` (an instruction trace's warm-up,
    /// marked by its reader). Only the first call counts.
    pub fn begin_roi(&mut self) {
        if self.roi_begin.is_none() {
            self.roi_begin = Some(Box::new(self.whole_stats()));
            if let Some(log) = self.miss_log.as_deref_mut() {
                log.restart();
            }
        }
        self.warmup = 0;
    }

    /// Whether the region of interest has begun (false after a run shorter than its warm-up).
    pub fn roi_begun(&self) -> bool {
        self.roi_begin.is_some()
    }

    /// The statistics of the run, or of its region of interest after a warm-up (`set_warmup`):
    /// then `Stats::warmup` says what was left out.
    pub fn stats(&self) -> Stats {
        let whole = self.whole_stats();
        match &self.roi_begin {
            None => whole,
            Some(begin) => {
                let mut s = whole.since(begin);
                s.warmup = Some(crate::stats::WarmupStats {
                    references: begin.total.references,
                    cycles: begin.cycles,
                });
                s
            }
        }
    }

    /// Every counter since the start of the run.
    pub(super) fn whole_stats(&self) -> Stats {
        let cores = self.core_stats();
        let mut total = UnitStats::new(self.tlb_names.len(), self.cache_names.len());
        for c in &cores {
            total.add(c);
        }
        let mut sources = self.cache_names.clone();
        sources.push("memory".into());
        let threads: BTreeMap<u32, UnitStats> = self
            .threads
            .iter()
            .enumerate()
            .filter_map(|(t, st)| {
                st.map(|st| (t as u32, self.thread_stats_now(ThreadId(t as u32), st)))
            })
            .collect();
        let mut processes: BTreeMap<u32, UnitStats> = BTreeMap::new();
        for (t, unit) in &threads {
            let space = self.threads[*t as usize].expect("listed thread").space as u32;
            processes
                .entry(space)
                .or_insert_with(|| UnitStats::new(self.tlb_names.len(), self.cache_names.len()))
                .add(unit);
        }
        let mut stats = Stats {
            machine: self.config.name.clone(),
            tlb_levels: self.tlb_names.clone(),
            cache_levels: self.cache_names.clone(),
            sources,
            cores,
            threads,
            processes,
            total,
            os: self.os_stats.clone(),
            jobs: self.jobs.clone(),
            cycles: self.now(),
            phases: self.phases.clone(),
            technique: self.technique.as_ref().map(|t| {
                let declared = t.declaration();
                crate::stats::TechniqueStats {
                    name: declared.name.to_string(),
                    params: self.technique_params.clone(),
                    counters: t.counters().into_iter().collect(),
                    levels: declared.levels.iter().map(|l| l.to_string()).collect(),
                }
            }),
            warmup: None,
            misses: self.miss_log.as_ref().map(|m| m.log.clone()),
            dram: self.dram_stats(),
        };
        let stall_reported = self.options.stall_cycles
            || self
                .technique
                .as_ref()
                .is_some_and(|t| t.declaration().reports_stall_cycles);
        if self.lanes_allowed || !stall_reported {
            // The lanes do not count stall cycles: a run they may have served reports none
            // rather than a part; and a run that did not ask for them reports none, as a
            // technique-free run does (`UnitStats::data_stall_cycles`).
            let units = stats
                .cores
                .iter_mut()
                .chain(stats.threads.values_mut())
                .chain(stats.processes.values_mut())
                .chain(std::iter::once(&mut stats.total))
                .chain(stats.phases.iter_mut().map(|p| &mut p.stats));
            for u in units {
                u.data_stall_cycles.clear();
            }
        }
        stats
    }

    /// Every counter of the machine so far, summed over its cores (what `Stats::total` holds).
    pub(crate) fn machine_counters(&self) -> UnitStats {
        // What `core_stats` sums per core, summed at once: no vector of cores built per call
        // (phases may come every few hundred references).
        let mut total = UnitStats::new(self.tlb_names.len(), self.cache_names.len());
        for c in self.core_os.iter().chain(&self.cpu_stats) {
            total.add(c);
        }
        total
    }
}
