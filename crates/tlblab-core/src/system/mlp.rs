//! Memory-level parallelism of independent references (`timing.mlp`, `MlpConfig` has the
//! rules and their sources): per hardware thread, the long misses in flight and the charge of
//! each reference. Only the general path comes here, and only on a machine with `timing.mlp`;
//! from a trace's first independent mark on, no lane runs (`mlp_general_path`), so a machine
//! without it, or a trace without marks, executes what it did before.

use super::*;
use crate::machine::MlpConfig;
use std::collections::VecDeque;

/// One long miss in flight: when it completes, the hardware thread's reference count when it
/// issued, and when its walk ends (it holds a walker until then; 0: it did not walk).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct MissSlot {
    pub(crate) done: u64,
    pub(crate) issue: u64,
    pub(crate) walk_done: u64,
}

/// A hardware thread's outstanding long misses and its count of marked references. `slots` is a
/// ring allocated once with room for `miss_slots` that never grows past it (serialized as the
/// same sequence a `Vec` gives). The slots stay in the order they were issued (each is pushed
/// with the thread's next count, and retiring keeps the order), so the oldest is the first:
/// the reorder window reads it without a search, and the misses that complete in the order
/// they were issued leave from the front.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub(crate) struct MlpState {
    pub(crate) slots: VecDeque<MissSlot>,
    pub(crate) refs: u64,
    /// The instructions issued short of a whole cycle (`MlpConfig::issue_instructions`),
    /// carried to the next reference: below `issue_width`.
    #[serde(default)]
    pub(crate) issue_carry: u32,
    /// A lower bound on every slot's completion (`u64::MAX`: no slot), so that `retire` at an
    /// earlier time knows without a pass that nothing completes: most references under stream
    /// pressure retire nothing, and the pass over up to `miss_slots` slots was most of
    /// `charge`'s cost (issue 89). Exact after every pass and push; 0 in a state restored from
    /// a checkpoint (not saved: a bound that low only costs the next call its pass).
    #[serde(skip)]
    done_bound: u64,
    /// Whether the slots' completions rise from the front to the back (each new slot's is at
    /// or after the last's), so that the misses complete front first. False in a restored
    /// state until `retire`'s next pass finds it.
    #[serde(skip)]
    in_order: bool,
    /// When each of the last marked references completed, at its count (`refs`) modulo the
    /// ring's length (`depends_horizon`), for `Event::Depends`: a reference waits for the one
    /// its address came from. Empty in a state saved before the ring existed: no reference
    /// waits then.
    #[serde(default)]
    pub(crate) done_ring: Vec<u64>,
    /// The next record reference's producer, references back (`Event::Depends`; 0: none).
    #[serde(default)]
    pub(crate) depends: u32,
    /// When every marked reference up to each count had completed (the running maximum of
    /// their completions, at the count modulo the ring's length, as `done_ring`): when the
    /// reference retires from the reorder window, in order. Read only once a reference has
    /// waited for a producer (`waited`): before that, every reference but the long misses in
    /// the slots completed before the next issued, and the slots' rule is the same.
    #[serde(default)]
    pub(crate) retire_ring: Vec<u64>,
    /// A marked reference has had a producer (`Event::Depends`): from then on the reorder
    /// window and a drain also wait for the references that wait for their producers.
    #[serde(default)]
    pub(crate) waited: bool,
}

/// The references back that `Event::Depends` follows under `MlpConfig` `cfg`: the window
/// rounded up to a power of two, at most 4096. A producer further back than the window had to
/// complete before the reference could issue (the reorder window's rule), so the horizon loses
/// nothing while the window is at most 4096; past that, a producer 4096 or more back counts as
/// complete.
pub(crate) fn depends_horizon(cfg: &MlpConfig) -> u64 {
    (cfg.window as u64).next_power_of_two().min(4096)
}

impl MlpState {
    pub(crate) fn new(cfg: &MlpConfig) -> MlpState {
        MlpState {
            slots: VecDeque::with_capacity(cfg.miss_slots as usize),
            refs: 0,
            issue_carry: 0,
            done_bound: u64::MAX,
            in_order: true,
            done_ring: vec![0; depends_horizon(cfg) as usize],
            depends: 0,
            retire_ring: vec![0; depends_horizon(cfg) as usize],
            waited: false,
        }
    }

    /// When marked reference `refs - back` completed, if the ring still holds it (0: long
    /// complete, or none).
    fn producer_done(&self, back: u32) -> u64 {
        let (back, len) = (back as u64, self.done_ring.len() as u64);
        if back == 0 || back >= len || back >= self.refs {
            return 0;
        }
        self.done_ring[((self.refs - back) & (len - 1)) as usize]
    }

    /// Marked reference `refs` completes at `done`; it retires when every one before it has.
    fn completed(&mut self, done: u64) {
        let len = self.done_ring.len() as u64;
        if len != 0 {
            self.done_ring[(self.refs & (len - 1)) as usize] = done;
        }
        let len = self.retire_ring.len() as u64;
        if len != 0 {
            let before = self.retire_ring[(self.refs.wrapping_sub(1) & (len - 1)) as usize];
            self.retire_ring[(self.refs & (len - 1)) as usize] = before.max(done);
        }
    }

    /// When marked reference `refs - back` retired (every reference up to it complete), if
    /// the ring holds it (0 otherwise). Before `completed` for reference `refs`, its place
    /// still holds the one a whole ring back: `back` may be the ring's length.
    fn retired(&self, back: u64) -> u64 {
        let len = self.retire_ring.len() as u64;
        if len == 0 || back > len || back >= self.refs {
            return 0;
        }
        self.retire_ring[((self.refs - back) & (len - 1)) as usize]
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

    /// The cycles the core takes to issue one instruction fetch in the steady state
    /// (`MlpConfig::steady_state`): 1/`issue_width` of a cycle, the fraction carried.
    pub(crate) fn issue_fetch(&mut self, cfg: &MlpConfig) -> u64 {
        let total = self.issue_carry as u64 + 1;
        let width = cfg.issue_width as u64;
        self.issue_carry = (total % width) as u32;
        total / width
    }

    /// Drops the misses complete at `now` (none while `now` is below `done_bound`).
    fn retire(&mut self, now: u64) {
        if now < self.done_bound {
            return;
        }
        // The oldest misses most often complete first: they leave from the front. While the
        // completions rise along the ring (`in_order`), the front's is the bound; otherwise
        // one pass finds the bound, whether a later slot completed too, and whether the ones
        // kept are in order again.
        while self.slots.front().is_some_and(|s| s.done <= now) {
            self.slots.pop_front();
        }
        if self.in_order {
            self.done_bound = self.slots.front().map_or(u64::MAX, |s| s.done);
            return;
        }
        let (bound, later, in_order, _) = self.slots.iter().fold(
            (u64::MAX, false, true, 0),
            |(bound, later, in_order, last), s| {
                let keep = s.done > now;
                (
                    bound.min(if keep { s.done } else { u64::MAX }),
                    later | !keep,
                    in_order & (!keep | (s.done >= last)),
                    if keep { s.done } else { last },
                )
            },
        );
        if later {
            self.slots.retain(|s| s.done > now);
        }
        (self.done_bound, self.in_order) = (bound, in_order);
    }

    /// Waits for a miss that completes at `done`, from `now`; returns the new time, with
    /// every miss complete by then retired.
    fn wait_until(&mut self, now: u64, done: u64) -> u64 {
        let t = now.max(done);
        self.retire(t);
        t
    }

    /// The time every outstanding miss has completed, from `now`; none is left.
    pub(crate) fn drain(&mut self, now: u64) -> u64 {
        let mut t = self.slots.iter().fold(now, |t, s| t.max(s.done));
        if self.waited {
            // A reference waiting for its producer is in flight too.
            t = t.max(self.retired(0));
        }
        self.slots.clear();
        (self.done_bound, self.in_order) = (u64::MAX, true);
        t
    }

    /// A long miss issued now: the last slot (the order of issue).
    fn push(&mut self, slot: MissSlot) {
        debug_assert!(self.slots.back().is_none_or(|s| s.issue < slot.issue));
        self.done_bound = self.done_bound.min(slot.done);
        self.in_order &= self.slots.back().is_none_or(|s| s.done <= slot.done);
        self.slots.push_back(slot);
    }

    /// The cycles a reference of in-order latency `latency` costs the core from `now`:
    /// `independent` (its thread's mark), `long` (memory served its data or an entry of its
    /// walk), `walk`: the cycles up to the end of its walk when it missed every TLB level
    /// (the part of `latency` a walker is held); `queue(issue)`: the cycles its lines from
    /// memory wait for the DRAM channels when it issues at `issue` (0 without `timing.dram`),
    /// added to its latency and to its walk's; `depends`: the references back of the one its
    /// address came from (`Event::Depends`; 0: none), whose completion it waits for (alone,
    /// or, a `fetch`, holding the core); `steady`: Some(its issue cycles) when it is inside
    /// the steady state (`MlpConfig::steady_state`: a first-level hit), which it costs
    /// instead of its latency when marked. See `MlpConfig`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn charge(
        &mut self,
        cfg: &MlpConfig,
        now: u64,
        latency: u64,
        independent: bool,
        long: bool,
        walk: Option<u64>,
        depends: u32,
        steady: Option<u64>,
        fetch: bool,
        queue: impl FnOnce(u64) -> u64,
    ) -> u64 {
        if !independent {
            let t = self.drain(now);
            return t - now + latency + queue(t);
        }
        // Only marked references count: an unmarked one empties the window.
        self.refs += 1;
        // Its address comes from a load: it issues when that load's value is there. A data
        // reference waits alone (the core issues the ones after it meanwhile, out of order);
        // an instruction fetch holds the front end, and every reference after it, until then
        // (a fetch's producer is a mispredicted branch's load: nothing after the branch
        // issues before it resolves).
        let ready = self.producer_done(depends);
        self.waited |= depends != 0;
        let mut t = if fetch { now.max(ready) } else { now };
        self.retire(t);
        // The reorder window: the oldest outstanding miss (the first slot) holds every
        // reference after it; once references wait for producers, so does any reference that
        // has not retired (completed, with every one before it).
        while let Some(&oldest) = self.slots.front() {
            if self.refs - oldest.issue < cfg.window as u64 {
                break;
            }
            t = self.wait_until(t, oldest.done);
        }
        if self.waited {
            let back = (cfg.window as u64).min(self.retire_ring.len() as u64);
            t = self.wait_until(t, self.retired(back));
        }
        if !long {
            let issue = t.max(ready);
            let done = issue + latency + queue(issue);
            self.completed(done);
            return match steady {
                Some(cycles) => t - now + cycles,
                // Waiting for its producer, it takes its latency after the core goes on.
                None if issue > t => t - now,
                None => done - now,
            };
        }
        while self.slots.len() >= cfg.miss_slots as usize {
            // In order, the first to complete is the front (under stream pressure every
            // reference comes here with the slots full).
            let first_done = if self.in_order {
                self.slots.front().map(|s| s.done)
            } else {
                self.slots.iter().map(|s| s.done).min()
            };
            t = self.wait_until(t, first_done.expect("a slot to wait for"));
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
        // It holds its slot (and walker) from now, and goes to memory when its producer's
        // value is there.
        let issue = t.max(ready);
        let wait = queue(issue);
        self.completed(issue + latency + wait);
        self.push(MissSlot {
            done: issue + latency + wait,
            issue: self.refs,
            walk_done: walk.map_or(0, |w| issue + w + wait),
        });
        t - now
    }
}

impl System {
    /// What `timed_memory_cycles` compares with after a reference on hardware thread `cpu`
    /// of core `core_i`: `memory_served` before it (returned) and `first_cache_hits`
    /// (`first_hits_before`). Writebacks left by a technique's loads that placed nothing
    /// (`kernel_access`) go first, from this reference's start.
    #[cold]
    #[inline(never)]
    pub(super) fn timed_memory_before(
        &mut self,
        cpu: usize,
        core_i: usize,
        kind: AccessKind,
    ) -> u64 {
        if self
            .dram
            .as_ref()
            .is_some_and(|d| d.reads != 0 || !d.pending.is_empty())
        {
            self.settle_writebacks(cpu, 0);
        }
        self.first_hits_before = self.first_cache_hits(cpu, core_i, kind);
        self.memory_served(cpu)
    }

    /// References served so far on hardware thread `cpu` by core `core_i`'s first cache for
    /// `kind` (0 without one), to tell a first-level hit by the difference.
    #[inline]
    pub(super) fn first_cache_hits(&self, cpu: usize, core_i: usize, kind: AccessKind) -> u64 {
        self.cores[core_i]
            .cache_path(kind)
            .first()
            .map_or(0, |c| self.cpu_stats[cpu].data_by_source[c.stat])
    }

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
    /// `MlpState::charge` overlaps it. `(cycles, served_before)`: its in-order latency and
    /// `timed_memory_before`'s count (and `first_hits_before`); `walk`: its cycles to the end of its walk,
    /// if it walked; `first_tlb`: whether its first TLB level hit (with its first cache, a
    /// first-level hit: `MlpConfig::steady_state`).
    #[cold]
    #[inline(never)]
    pub(super) fn timed_memory_cycles(
        &mut self,
        st: ThreadState,
        (cycles, served_before): (u64, u64),
        walk: Option<u64>,
        first_tlb: bool,
        kind: AccessKind,
    ) -> u64 {
        let lines = self.memory_served(st.cpu) - served_before;
        let core_i = self.cpus[st.cpu].core;
        let first_level = first_tlb
            && (!self.options.data_accesses
                || self.first_cache_hits(st.cpu, core_i, kind) > self.first_hits_before);
        let fetch = kind.is_instr();
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
        // The record's producer (`Event::Depends`); a companion's reference has none and
        // leaves it for the record.
        let depends = if records {
            std::mem::take(&mut mlp.depends)
        } else {
            0
        };
        // The steady state (`MlpConfig::steady_state`): a marked first-level hit costs its
        // issue, a fetch 1/width of a cycle.
        let steady = (cfg.steady_state && independent && first_level && lines == 0).then(|| {
            if fetch {
                mlp.issue_fetch(&cfg)
            } else {
                0
            }
        });
        work + mlp.charge(
            &cfg,
            now + work,
            cycles,
            independent,
            lines > 0,
            walk,
            depends,
            steady,
            fetch,
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
        let c = mlp.charge(
            &cfg,
            now,
            lat,
            independent,
            lines > 0,
            None,
            0,
            None,
            false,
            |issue| {
                dram.as_mut()
                    .map_or(0, |d| d.queue(issue, lines, mem_latency))
            },
        );
        if awaited && independent && lines > 0 {
            // `charge` put it last in the slots.
            mlp.slots.back().expect("the read in flight").done - now
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

    /// `Event::Depends`: the next record reference of `thread` waits for its producer, `back`
    /// references before it on its hardware thread (only while marked independent, under
    /// `timing.mlp`; otherwise nothing changes).
    pub(super) fn set_depends(&mut self, thread: ThreadId, back: u32) -> Result<(), SimError> {
        let st = self.thread_state(thread)?;
        if let Some(m) = self.mlp.get_mut(st.cpu) {
            m.depends = back;
        }
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
