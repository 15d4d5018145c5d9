//! Memory-level parallelism of independent references (`timing.mlp`, `MlpConfig` has the
//! rules and their sources): per hardware thread, the long misses in flight and the charge of
//! each reference. Only the general path comes here, and only on a machine with `timing.mlp`;
//! from a trace's first independent mark on, no lane runs (`mlp_general_path`), so a machine
//! without it, or a trace without marks, executes what it did before.

use super::*;
use crate::machine::MlpConfig;

/// One long miss in flight: when it completes, the hardware thread's reference count when it
/// issued, and when its walk ends (it holds a walker until then; 0: it did not walk).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct MissSlot {
    pub(crate) done: u64,
    pub(crate) issue: u64,
    pub(crate) walk_done: u64,
}

/// A hardware thread's outstanding long misses and its count of marked references. `slots` is allocated
/// once with room for `miss_slots` and never grows past it.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub(crate) struct MlpState {
    pub(crate) slots: Vec<MissSlot>,
    pub(crate) refs: u64,
    /// The instructions issued short of a whole cycle (`MlpConfig::issue_instructions`),
    /// carried to the next reference: below `issue_width`.
    #[serde(default)]
    pub(crate) issue_carry: u32,
}

impl MlpState {
    pub(crate) fn new(cfg: &MlpConfig) -> MlpState {
        MlpState {
            slots: Vec::with_capacity(cfg.miss_slots as usize),
            refs: 0,
            issue_carry: 0,
        }
    }

    /// The cycles the core takes to issue the program's instructions before its next
    /// reference (`MlpConfig::issue_instructions`, `issue_width` a cycle), the fraction
    /// carried: `n` calls return `floor(n * issue_instructions / issue_width)` in all.
    pub(crate) fn issue(&mut self, cfg: &MlpConfig) -> u64 {
        let total = self.issue_carry as u64 + cfg.issue_instructions as u64;
        let width = cfg.issue_width as u64;
        self.issue_carry = (total % width) as u32;
        total / width
    }

    /// Drops the misses complete at `now`.
    fn retire(&mut self, now: u64) {
        self.slots.retain(|s| s.done > now);
    }

    /// Waits for outstanding miss `i`, from `now`; returns the new
    /// time, with every miss complete by then retired.
    fn wait_for(&mut self, now: u64, i: usize) -> u64 {
        let t = now.max(self.slots[i].done);
        self.retire(t);
        t
    }

    /// The time every outstanding miss has completed, from `now`; none is left.
    pub(crate) fn drain(&mut self, now: u64) -> u64 {
        let t = self.slots.iter().fold(now, |t, s| t.max(s.done));
        self.slots.clear();
        t
    }

    /// The cycles a reference of in-order latency `latency` costs the core from `now`:
    /// `independent` (its thread's mark), `long` (memory served its data or an entry of its
    /// walk), `walk`: the cycles up to the end of its walk when it missed every TLB level
    /// (the part of `latency` a walker is held); `queue(issue)`: the cycles its lines from
    /// memory wait for the DRAM channels when it issues at `issue` (0 without `timing.dram`),
    /// added to its latency and to its walk's. See `MlpConfig`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn charge(
        &mut self,
        cfg: &MlpConfig,
        now: u64,
        latency: u64,
        independent: bool,
        long: bool,
        walk: Option<u64>,
        queue: impl FnOnce(u64) -> u64,
    ) -> u64 {
        if !independent {
            let t = self.drain(now);
            return t - now + latency + queue(t);
        }
        // Only marked references count: an unmarked one empties the window.
        self.refs += 1;
        let mut t = now;
        self.retire(t);
        // The reorder window: the oldest outstanding miss holds every reference after it.
        while let Some((i, issue)) = self
            .slots
            .iter()
            .enumerate()
            .map(|(i, s)| (i, s.issue))
            .min_by_key(|&(_, issue)| issue)
        {
            if self.refs - issue < cfg.window as u64 {
                break;
            }
            t = self.wait_for(t, i);
        }
        if !long {
            return t - now + latency + queue(t);
        }
        while self.slots.len() >= cfg.miss_slots as usize {
            let i = Self::earliest(&self.slots);
            t = self.wait_for(t, i);
        }
        if walk.is_some() {
            // A walker is free again when its walk ends (the miss goes on in its slot).
            loop {
                let busy = self.slots.iter().filter(|s| s.walk_done > t);
                if busy.clone().count() < cfg.walkers as usize {
                    break;
                }
                let first = busy
                    .map(|s| s.walk_done)
                    .min()
                    .expect("a walker to wait for");
                t = t.max(first);
                self.retire(t);
            }
        }
        let wait = queue(t);
        self.slots.push(MissSlot {
            done: t + latency + wait,
            issue: self.refs,
            walk_done: walk.map_or(0, |w| t + w + wait),
        });
        t - now
    }

    /// The index of the first-completing slot (one exists).
    fn earliest(slots: &[MissSlot]) -> usize {
        slots
            .iter()
            .enumerate()
            .min_by_key(|(_, s)| s.done)
            .map(|(i, _)| i)
            .expect("a slot to wait for")
    }
}

impl System {
    /// References served by memory so far on hardware thread `cpu` (data and walk), to tell
    /// a long reference by the difference.
    #[inline]
    pub(super) fn memory_served(&self, cpu: usize) -> u64 {
        let s = &self.cpu_stats[cpu];
        s.data_by_source[self.mem_source] + s.walk_refs_by_source[self.mem_source]
    }

    /// What a reference of in-order latency `cycles` costs the core under `timing.mlp` and
    /// `timing.dram`: its lines from memory queue for the DRAM channels from when it issues
    /// (`DramState::queue`; the wait adds to its latency), and then, under `timing.mlp`,
    /// `MlpState::charge` overlaps it. `served_before`: `memory_served` before it; `walk`:
    /// its cycles to the end of its walk, if it walked.
    #[cold]
    #[inline(never)]
    pub(super) fn timed_memory_cycles(
        &mut self,
        st: ThreadState,
        cycles: u64,
        served_before: u64,
        walk: Option<u64>,
    ) -> u64 {
        let lines = self.memory_served(st.cpu) - served_before;
        let now = self.cpus[st.cpu].clock;
        let Some(cfg) = self.config.timing.mlp else {
            return cycles + self.dram_wait(now, lines);
        };
        let independent = self.independent.get(st.stat).copied().unwrap_or(false);
        // A technique's reference (its companions') is made while it is at work; its loop
        // charges its own work.
        let records = !self.in_technique;
        let (mlp, dram, mem_latency) = (&mut self.mlp[st.cpu], &mut self.dram, self.mem_latency);
        // The program's instructions before the reference (`MlpConfig::issue_instructions`):
        // it issues after them, the misses in flight going on meanwhile.
        let work = if cfg.issue_instructions != 0 && records {
            mlp.issue(&cfg)
        } else {
            0
        };
        work + mlp.charge(
            &cfg,
            now + work,
            cycles,
            independent,
            lines > 0,
            walk,
            |issue| {
                dram.as_mut()
                    .map_or(0, |d| d.queue(issue, lines, mem_latency))
            },
        )
    }

    /// A technique's read of one line on hardware thread `cpu` (`read_page_table_line`) under
    /// `timing.mlp`: in-order latency `lat`, `lines` (0 or 1) from memory, no walk, charged as
    /// a reference of the software thread running there (marked independent or not). An
    /// `awaited` read in flight is waited for at once: it costs the thread up to its own
    /// line's arrival (it still holds its slot until then), not the other misses'.
    #[cold]
    #[inline(never)]
    pub(super) fn timed_read_cycles(
        &mut self,
        cpu: usize,
        lat: u64,
        lines: u64,
        awaited: bool,
    ) -> u64 {
        let cfg = self.config.timing.mlp.expect("timing.mlp");
        let now = self.cpus[cpu].clock;
        let independent = self.current[cpu]
            .and_then(|t| self.threads.get(t.0 as usize).copied().flatten())
            .is_some_and(|st| self.independent.get(st.stat).copied().unwrap_or(false));
        let (mlp, dram, mem_latency) = (&mut self.mlp[cpu], &mut self.dram, self.mem_latency);
        let c = mlp.charge(&cfg, now, lat, independent, lines > 0, None, |issue| {
            dram.as_mut()
                .map_or(0, |d| d.queue(issue, lines, mem_latency))
        });
        if awaited && independent && lines > 0 {
            // `charge` put it last in the slots.
            mlp.slots.last().expect("the read in flight").done - now
        } else {
            c
        }
    }

    /// `Event::Independent`: hardware thread of `thread` waits for its outstanding misses,
    /// and the thread's mark becomes `begin`.
    pub(super) fn set_independent(
        &mut self,
        thread: ThreadId,
        begin: bool,
    ) -> Result<(), SimError> {
        let st = self.thread_state(thread)?;
        self.drain_misses(st.cpu);
        if begin && !self.mlp.is_empty() && !self.mlp_marked {
            self.mlp_general_path();
        }
        if self.independent.len() <= st.stat {
            self.independent.resize(st.stat + 1, false);
        }
        self.independent[st.stat] = begin;
        Ok(())
    }

    /// From the first independent mark on a machine with `timing.mlp`: every reference takes
    /// `reference_full`, which charges it; the lanes stop (`run_direct` hands the rest of its
    /// batch back) and the memo and hint-table paths step aside, as under ARM domains
    /// (`domains.rs`). Before it, and on a run that never marks, the lanes run as on any
    /// machine: an unmarked reference costs its in-order latency either way.
    pub(crate) fn mlp_general_path(&mut self) {
        self.mlp_marked = true;
        self.lanes_allowed = false;
        for c in &mut self.cpus {
            c.first_tlb = [None, None];
        }
    }

    /// Hardware thread `cpu` waits for every outstanding long miss: the wait is charged to
    /// its cycles, and returned (0 on a machine without `timing.mlp`).
    pub(crate) fn drain_misses(&mut self, cpu: usize) -> u64 {
        let Some(m) = self.mlp.get_mut(cpu) else {
            return 0;
        };
        let now = self.cpus[cpu].clock;
        let wait = m.drain(now) - now;
        self.cpu_stats[cpu].cycles += wait;
        self.cpus[cpu].clock += wait;
        wait
    }
}
