//! Statistics: counters per core and per thread, per TLB level and per cache level.
//!
//! Every counter is a plain `u64` incremented on the hot path; nothing is derived until asked.
//! The hot path counts once, per hardware thread; per-thread and per-core numbers are derived
//! (see `System::stats`).
//! `Stats` serializes to JSON (the Python layer turns it into DataFrames).

use crate::os::{JobStats, OsStats};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Clone, Default, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct LevelStats {
    pub accesses: u64,
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
}

/// Counters of one core or one thread.
#[derive(Default, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct UnitStats {
    /// References (an access crossing a 4 KiB boundary counts twice).
    pub references: u64,
    pub instr_references: u64,
    /// Per TLB level, in `Stats::tlb_levels` order.
    pub tlb: Vec<LevelStats>,
    /// Page walks (misses in every TLB level of the path).
    pub walks: u64,
    /// Page-table entries read by walks.
    pub walk_refs: u64,
    /// Walk references by where they were served: `Stats::sources` order (caches, then memory).
    pub walk_refs_by_source: Vec<u64>,
    /// Walk references avoided by page-walk-cache hits.
    pub pwc_hits: u64,
    pub walk_cycles: u64,
    /// Data references by where they were served (same order as walk sources).
    pub data_by_source: Vec<u64>,
    /// Per cache level (all references, walks included), in `Stats::cache_levels` order.
    pub cache: Vec<LevelStats>,
    /// Pages mapped on first touch.
    pub page_faults: u64,
    /// TLB entries invalidated by shootdowns and flushes.
    pub invalidations: u64,
    pub cycles: u64,
    /// Per TLB level (`Stats::tlb_levels` order): cycles data references (loads, stores) stalled
    /// because they missed that level: the next level's lookup, or the walk after the path's
    /// last level (seed 004 §V: the Cortex-A9 PMU's micro and main data TLB miss stall
    /// cycles, Tables 2-3). Counted on the general path only (`System::reference_full`), and
    /// reported only by runs that ask for them and take that path throughout
    /// (`RunOptions::stall_cycles`, or a technique that reports them,
    /// `Declaration::reports_stall_cycles`); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub data_stall_cycles: Vec<u64>,
}

/// By hand for `clone_from`, which reuses the vectors' buffers: `System::set_current` takes a
/// snapshot of a hardware thread's counters at every context switch, and the derived
/// `clone_from` (a fresh clone, the old one freed) was a sixth of a switch-heavy run's host time
/// (seed 002's L4 IPC on the SA-1100). Both destructure every field, so a new one cannot be
/// forgotten.
impl Clone for UnitStats {
    fn clone(&self) -> Self {
        let mut copy = UnitStats::default();
        copy.clone_from(self);
        copy
    }

    fn clone_from(&mut self, source: &Self) {
        let UnitStats {
            references,
            instr_references,
            tlb,
            walks,
            walk_refs,
            walk_refs_by_source,
            pwc_hits,
            walk_cycles,
            data_by_source,
            cache,
            page_faults,
            invalidations,
            cycles,
            data_stall_cycles,
        } = source;
        self.references = *references;
        self.instr_references = *instr_references;
        self.tlb.clone_from(tlb);
        self.walks = *walks;
        self.walk_refs = *walk_refs;
        self.walk_refs_by_source.clone_from(walk_refs_by_source);
        self.pwc_hits = *pwc_hits;
        self.walk_cycles = *walk_cycles;
        self.data_by_source.clone_from(data_by_source);
        self.cache.clone_from(cache);
        self.page_faults = *page_faults;
        self.invalidations = *invalidations;
        self.cycles = *cycles;
        self.data_stall_cycles.clone_from(data_stall_cycles);
    }
}

impl UnitStats {
    pub fn new(tlb_levels: usize, cache_levels: usize) -> UnitStats {
        UnitStats {
            tlb: vec![LevelStats::default(); tlb_levels],
            walk_refs_by_source: vec![0; cache_levels + 1],
            data_by_source: vec![0; cache_levels + 1],
            cache: vec![LevelStats::default(); cache_levels],
            data_stall_cycles: vec![0; tlb_levels],
            ..UnitStats::default()
        }
    }

    /// Adds every counter of `o` to this one.
    pub fn add(&mut self, o: &UnitStats) {
        self.combine(o, |a, b| a + b);
    }

    /// Subtracts every counter of `o` (an earlier snapshot of the same unit) from this one.
    pub fn sub(&mut self, o: &UnitStats) {
        self.combine(o, |a, b| a - b);
    }

    /// Applies `f(self, o)` to every pair of corresponding counters: the one list of fields
    /// that `add` and `sub` share.
    fn combine(&mut self, o: &UnitStats, f: impl Fn(u64, u64) -> u64) {
        let level = |a: &mut LevelStats, b: &LevelStats| {
            a.accesses = f(a.accesses, b.accesses);
            a.hits = f(a.hits, b.hits);
            a.misses = f(a.misses, b.misses);
            a.evictions = f(a.evictions, b.evictions);
        };
        for (a, b) in self.tlb.iter_mut().zip(&o.tlb) {
            level(a, b);
        }
        for (a, b) in self.cache.iter_mut().zip(&o.cache) {
            level(a, b);
        }
        let vec = |a: &mut Vec<u64>, b: &Vec<u64>| {
            for (x, y) in a.iter_mut().zip(b) {
                *x = f(*x, *y);
            }
        };
        vec(&mut self.walk_refs_by_source, &o.walk_refs_by_source);
        vec(&mut self.data_by_source, &o.data_by_source);
        vec(&mut self.data_stall_cycles, &o.data_stall_cycles);
        self.references = f(self.references, o.references);
        self.instr_references = f(self.instr_references, o.instr_references);
        self.walks = f(self.walks, o.walks);
        self.walk_refs = f(self.walk_refs, o.walk_refs);
        self.pwc_hits = f(self.pwc_hits, o.pwc_hits);
        self.walk_cycles = f(self.walk_cycles, o.walk_cycles);
        self.page_faults = f(self.page_faults, o.page_faults);
        self.invalidations = f(self.invalidations, o.invalidations);
        self.cycles = f(self.cycles, o.cycles);
    }
}

/// All counters of a run.
#[derive(Clone, Default, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Stats {
    pub machine: String,
    /// TLB level names, in the order of `UnitStats::tlb`.
    pub tlb_levels: Vec<String>,
    /// Cache level names, in the order of `UnitStats::cache`.
    pub cache_levels: Vec<String>,
    /// Where a reference can be served: cache level names, then "memory".
    pub sources: Vec<String>,
    pub cores: Vec<UnitStats>,
    pub threads: BTreeMap<u32, UnitStats>,
    /// Per process (address space): the sum of its threads.
    pub processes: BTreeMap<u32, UnitStats>,
    /// Sum over cores.
    pub total: UnitStats,
    /// OS events: switches, ASID rollovers, flushes, migrations, shootdowns.
    pub os: OsStats,
    /// Per job of periodic tasks (trace JobStart/JobEnd events or the RM scheduler).
    pub jobs: Vec<JobStats>,
    /// Simulated time: the largest core clock.
    pub cycles: u64,
    /// Per phase the workload marked (`PhaseBegin`/`PhaseEnd` events), in the order they ended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PhaseStats>,
    /// The technique of the run (`tlblab techniques`) and its own counters, when one is installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub technique: Option<TechniqueStats>,
    /// What a warm-up left out (`System::set_warmup`, or an instruction trace's `ROI_REGION`
    /// mark): every other counter covers the region of interest alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<WarmupStats>,
    /// Every miss of one TLB level with its set, page, thread, job and the page that evicted
    /// it, when the run asked for it (`System::log_misses`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub misses: Option<MissLog>,
    /// The DRAM channels' counts, on a machine with `timing.dram` (`DramStats`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dram: Option<DramStats>,
}

/// What the DRAM channels did (`timing.dram`, `DramConfig`): lines read (every agent's), how
/// many of them found every channel busy, and the cycles they waited in all; and the dirty
/// lines written back to memory (`DramConfig::writebacks`: every level's evictions that no
/// level below on the path held, a shared level's counted once, and flushes' dirty lines).
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct DramStats {
    pub lines: u64,
    pub queued_lines: u64,
    pub queue_cycles: u64,
    #[serde(default)]
    pub writeback_lines: u64,
    /// Row activations (`DramConfig`'s `ranks` ... `t_faw_ps`; 0 without them).
    #[serde(default)]
    pub activations: u64,
}

impl DramStats {
    fn zip(self, o: DramStats, f: fn(u64, u64) -> u64) -> DramStats {
        DramStats {
            lines: f(self.lines, o.lines),
            queued_lines: f(self.queued_lines, o.queued_lines),
            queue_cycles: f(self.queue_cycles, o.queue_cycles),
            writeback_lines: f(self.writeback_lines, o.writeback_lines),
            activations: f(self.activations, o.activations),
        }
    }
}

/// The warm-up of a run whose statistics cover its region of interest only: how much was
/// simulated before the statistics began (the counters of `Stats` exclude it).
#[derive(Clone, Default, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct WarmupStats {
    /// References simulated in the warm-up (an access crossing a page counts twice, as in
    /// `UnitStats::references`).
    pub references: u64,
    /// The machine's time (the largest hardware-thread clock) when the region of interest began.
    pub cycles: u64,
}

impl Stats {
    /// Applies `op` (`UnitStats::sub` or `add`) to every core's, thread's, process's and the
    /// total counters of `self` with `other`'s of the same unit; units `other` lacks are left.
    fn combine_counters(&mut self, other: &Stats, op: fn(&mut UnitStats, &UnitStats)) {
        for (c, o) in self.cores.iter_mut().zip(&other.cores) {
            op(c, o);
        }
        for (units, others) in [
            (&mut self.threads, &other.threads),
            (&mut self.processes, &other.processes),
        ] {
            for (k, u) in units.iter_mut() {
                if let Some(o) = others.get(k) {
                    op(u, o);
                }
            }
        }
        op(&mut self.total, &other.total);
    }

    /// The counters of `self` less those of `earlier`, a snapshot of the same run (the start
    /// of a region of interest): exactly what two runs that stop at those two points differ
    /// by. Units (threads, processes) that `earlier` did not have are counted whole; jobs and
    /// phases are those that ended since; a technique's levels (`TechniqueStats::levels`) are
    /// `self`'s, its other counters saturate at 0.
    pub fn since(&self, earlier: &Stats) -> Stats {
        let mut s = self.clone();
        s.combine_counters(earlier, UnitStats::sub);
        s.os = self.os.since(&earlier.os);
        s.jobs.drain(..earlier.jobs.len().min(s.jobs.len()));
        s.phases.drain(..earlier.phases.len().min(s.phases.len()));
        s.cycles -= earlier.cycles;
        if let (Some(d), Some(e)) = (&mut s.dram, earlier.dram) {
            *d = d.zip(e, u64::saturating_sub);
        }
        // `misses` is kept: the log starts over when a region of interest begins
        // (`System::begin_roi`), so what it holds is the region's.
        if let (Some(t), Some(e)) = (&mut s.technique, &earlier.technique) {
            for (k, v) in t.counters.iter_mut() {
                if !t.levels.contains(k) {
                    *v = v.saturating_sub(e.counters.get(k).copied().unwrap_or(0));
                }
            }
        }
        s
    }
}

impl Stats {
    /// The statistics of a run that went on from `self` (its counters up to a point) and did
    /// `later` there (`now.since(self)`, a snapshot pair of the same run): the inverse of
    /// `since`, so that `earlier.then(&now.since(&earlier)) == now` in every counter. An
    /// interval-parallel run merges its intervals' counters with it (`tlblab.intervals`): the
    /// units (threads, processes) are `later`'s, each with the counts `self` had for it added;
    /// jobs and phases that ended in `later` follow `self`'s; the simulated time adds up, as
    /// the largest clock's growth; what is not a count (`warmup`, the miss log) is `self`'s.
    /// Technique counters add, but for levels, which are `later`'s.
    pub fn then(&self, later: &Stats) -> Stats {
        let mut s = later.clone();
        s.combine_counters(self, UnitStats::add);
        s.os = later.os.plus(&self.os);
        s.jobs = self.jobs.iter().chain(&later.jobs).cloned().collect();
        s.phases = self.phases.iter().chain(&later.phases).cloned().collect();
        s.cycles += self.cycles;
        s.warmup = self.warmup.clone();
        s.misses = self.misses.clone();
        if let (Some(d), Some(e)) = (&mut s.dram, self.dram) {
            *d = d.zip(e, |a, b| a + b);
        }
        if let (Some(t), Some(e)) = (&mut s.technique, &self.technique) {
            for (k, v) in e.counters.iter() {
                if !t.levels.contains(k) {
                    *t.counters.entry(k.clone()).or_insert(0) += v;
                }
            }
        }
        s
    }
}

/// What happened between a `PhaseBegin` and its `PhaseEnd` (seed 000's first and second
/// access, a measured loop): every counter as the difference of two snapshots of the whole
/// machine's counters (all cores, OS work included), and the simulated time it took.
#[derive(Clone, Default, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct PhaseStats {
    /// The region's name from the source (`RecordSource::region_names`), else `region N`.
    pub name: String,
    pub region: u32,
    /// Which occurrence of this region's phase (0 for the first).
    pub occurrence: u32,
    /// The machine's time (the largest hardware-thread clock) at the begin and end events.
    pub begin_cycle: u64,
    pub end_cycle: u64,
    /// Counters of the phase, over every core.
    pub stats: UnitStats,
    /// OS events in the phase.
    pub os: OsStats,
}

impl PhaseStats {
    /// Simulated time the phase took, in cycles.
    pub fn elapsed_cycles(&self) -> u64 {
        self.end_cycle - self.begin_cycle
    }
}

/// The technique installed in a run and its counters.
#[derive(Clone, Default, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct TechniqueStats {
    pub name: String,
    /// The parameters it ran with (every one, defaults included), as `key=value` strings.
    pub params: BTreeMap<String, String>,
    pub counters: BTreeMap<String, u64>,
    /// Which counters are levels, not counts (`Declaration::levels`): never differenced or added.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_technique(counters: &[(&str, u64)]) -> Stats {
        Stats {
            technique: Some(TechniqueStats {
                name: "t".to_string(),
                params: BTreeMap::new(),
                counters: counters.iter().map(|&(k, v)| (k.to_string(), v)).collect(),
                levels: vec!["helper_cpu".to_string(), "entries_locked".to_string()],
            }),
            ..Stats::default()
        }
    }

    /// A region of interest reports a technique's levels as they are at its end and its
    /// counts as differences; merging the two parts back gives the whole run's.
    #[test]
    fn given_technique_levels_then_since_keeps_them_and_then_inverts_it() {
        let earlier = with_technique(&[("helper_cpu", 3), ("entries_locked", 5), ("sweeps", 4)]);
        let now = with_technique(&[("helper_cpu", 3), ("entries_locked", 2), ("sweeps", 10)]);
        let roi = now.since(&earlier);
        let c = &roi.technique.as_ref().unwrap().counters;
        assert_eq!(
            (c["helper_cpu"], c["entries_locked"], c["sweeps"]),
            (3, 2, 6)
        );
        assert_eq!(earlier.then(&roi), now);
    }
}

// The miss log's records (`System::log_misses`, system/miss_log.rs keeps them during a run):
// data a run returns in `Stats::misses`, so they live with the other counters.

/// The thread an eviction by the kernel's own fill (`kernel_touch`) is attributed to.
pub const KERNEL_THREAD: u32 = u32::MAX;

/// One miss of the logged level.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct MissRecord {
    /// The engine's reference count when the miss was taken (its 0-based index in the run).
    pub reference: u64,
    /// The software thread that missed (`None`: no thread was current on the hardware thread).
    pub thread: Option<u32>,
    /// The job of that thread's task open at the miss (trace `JobStart`/`JobEnd`, the RM
    /// scheduler), if any.
    pub job: Option<u32>,
    /// The level's set the page maps to.
    pub set: u32,
    /// The virtual address of the page that missed (its first byte, in the page size filled).
    pub page: u64,
    /// The page (its virtual address) whose fill last evicted this page from the level, and the thread that filled
    /// it (`KERNEL_THREAD` for the kernel's own fills); `None` when the page was never evicted
    /// there: its first touch, or an invalidation removed it.
    pub evicted_by: Option<(u64, u32)>,
    /// The page (its virtual address) this miss's fill evicted from the level, if any.
    pub victim: Option<u64>,
}

/// The log of one run: the level it watches and its misses in order.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct MissLog {
    /// The level's name (`Stats::tlb_levels`).
    pub level: String,
    pub records: Vec<MissRecord>,
    /// Per set of the level, the misses logged (the same records, counted).
    pub per_set: Vec<u64>,
}
