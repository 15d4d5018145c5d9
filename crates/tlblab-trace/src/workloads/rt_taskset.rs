//! Seed 003 §6: periodic real-time task sets under rate-monotonic scheduling on one core.
//!
//! Each task (phase, period, execution, pages) is a thread of one process (the seed's tasks are
//! pthreads, Alg. 4, pinned to one core with SCHED_FIFO, priority by period). Before time 0 every
//! task runs its *warm up phase* (job 0: one write to each allocated page); then jobs are
//! released periodically and the highest-priority ready job runs, preempting lower ones. A job's
//! *repeated access phase* touches its chosen pages in turn — one access per
//! 1/`accesses_per_ms` ms of execution — at offsets that fall in different L1 data-cache sets
//! (§6.0.8's modification). Events: `TaskRelease`, `JobStart`, `JobEnd`, `ContextSwitch`.
//!
//! Page placement (`layout`): 0 = malloc-like (each task's pool at a seeded, ASLR-like random
//! page — so conflicts vary from seed to seed as the seed's malloc runs vary); 1 = `tlb_malloc`
//! with a different color (DTLB set) per task; 2 = `tlb_malloc` with every page in one color
//! ("same set"). Colors are sets of an `tlb_sets`-set, `tlb_ways`-way DTLB (Xeon E5-2650 L1
//! DTLB: 16 × 4, seed §6); color 0 is left out (the seed avoided noisy sets, §6.0.7).

use super::gen::*;
use super::WorkloadInfo;
use crate::record::Event;
use tlblab_types::{SplitMix64, ThreadId};

/// (phase µs, period µs, execution µs, pages allocated, pages accessed)
type Task = (u64, u64, u64, u64, u64);

const P: &[(&str, u64, &str)] = &[
    (
        "layout",
        1,
        "0 = malloc-like, 1 = tlb_malloc (a color per task), 2 = tlb_malloc same color",
    ),
    (
        "hyperperiods",
        5,
        "hyperperiods simulated after the warm-up",
    ),
    (
        "accesses_per_ms",
        1000,
        "memory accesses per millisecond of execution time",
    ),
    ("tlb_sets", 16, "sets of the DTLB the colors refer to"),
    (
        "tlb_ways",
        4,
        "ways of that DTLB (pages per color a task may own)",
    ),
];

pub const INFO_TABLE: WorkloadInfo = WorkloadInfo {
    name: "rt_table6_1",
    summary: "the periodic task sets of seed 003 Table 6.1 (2, 3 or 4 tasks), rate-monotonic",
    source: "seed 003 §6.0.9, Table 6.1",
    params: &[
        ("tasks", 2, "which row group of Table 6.1: 2, 3 or 4 tasks"),
        (
            "layout",
            1,
            "0 = malloc-like, 1 = tlb_malloc (a color per task), 2 = tlb_malloc same color",
        ),
        (
            "hyperperiods",
            5,
            "hyperperiods simulated after the warm-up",
        ),
        (
            "accesses_per_ms",
            1000,
            "memory accesses per millisecond of execution time",
        ),
        ("tlb_sets", 16, "sets of the DTLB the colors refer to"),
        ("tlb_ways", 4, "ways of that DTLB"),
    ],
    in_default_set: true,
};

pub const INFO_SAME_DIFF: WorkloadInfo = WorkloadInfo {
    name: "rt_same_diff_set",
    summary:
        "T1 (1, 2, 0.392 ms) and T2 (0, 16, 7.88 ms), 4 pages each, same or different DTLB set",
    source: "seed 003 §6.0.8 (same set vs. different set, Figs. 6.2-6.3)",
    params: P,
    in_default_set: true,
};

pub const INFO_MALLOC: WorkloadInfo = WorkloadInfo {
    name: "rt_malloc_vs_tlb_malloc",
    summary: "T1 (1, 2, 0.385 ms), T2 (0, 16, 7.38 ms): 32 pages allocated, 14 random ones written",
    source: "seed 003 §6.0.8 (malloc vs. tlb_malloc, Figs. 6.4-6.8); variant=1: Appendix A.1 (0.39/7.8 ms, 16 pages)",
    params: &[
        ("variant", 0, "0 = §6.0.8 (14 of 32 pages), 1 = Appendix A.1 (16 of 32 pages)"),
        ("layout", 0, "0 = malloc-like, 1 = tlb_malloc (a color per task), 2 = tlb_malloc same color"),
        ("hyperperiods", 5, "hyperperiods simulated after the warm-up"),
        ("accesses_per_ms", 1000, "memory accesses per millisecond of execution time"),
        ("tlb_sets", 16, "sets of the DTLB the colors refer to"),
        ("tlb_ways", 4, "ways of that DTLB"),
    ],
    in_default_set: true,
};

const MS: u64 = 1000;

pub fn table6_1(tasks: u64) -> Result<Vec<Task>, String> {
    // Table 6.1: phase, period, execution in ms; each task allocates ceil(64/j) pages.
    let rows: &[(f64, f64, f64, u64)] = match tasks {
        2 => &[(1.0, 2.0, 0.4, 16), (0.0, 54.0, 27.0, 16)],
        3 => &[(3.0, 2.0, 0.4, 4), (2.0, 3.0, 0.9, 7), (0.0, 15.0, 3.2, 2)],
        4 => &[
            (3.0, 2.0, 0.2, 2),
            (2.0, 3.0, 0.6, 2),
            (1.0, 5.0, 1.1, 1),
            (0.0, 15.0, 3.2, 2),
        ],
        _ => {
            return Err(format!(
                "rt_table6_1: tasks must be 2, 3 or 4 (the rows of Table 6.1), got {tasks}"
            ))
        }
    };
    let alloc = 64u64.div_ceil(tasks);
    Ok(rows
        .iter()
        .map(|&(ph, pe, ex, pg)| {
            (
                (ph * MS as f64) as u64,
                (pe * MS as f64) as u64,
                (ex * MS as f64).round() as u64,
                alloc,
                pg,
            )
        })
        .collect())
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

pub struct TaskSet {
    tasks: Vec<Task>,
    store: bool,
    /// Virtual addresses of the pages each task accesses.
    pages: Vec<Vec<u64>>,
    hyper: u64,
    end: u64,
    per_access_us: f64,
    layout: Layout,
    // simulation state
    t: u64,
    remaining: Vec<u64>,
    job: Vec<u32>,
    started_job: Vec<bool>,
    cursor: Vec<u64>,
    running: Option<usize>,
    warm: bool,
    credit: f64,
}

impl TaskSet {
    /// `random_choice`: a task accesses a seeded random subset of its allocated pages (the
    /// malloc vs. tlb_malloc experiment); otherwise the first `pages accessed` ones, and only
    /// those need a color (Table 6.1: 3 × 22 allocated pages would not fit 16 colors × 4 ways).
    pub fn new(
        name: &str,
        tasks: Vec<Task>,
        store: bool,
        random_choice: bool,
        get: &dyn Fn(&str) -> u64,
        seed: u64,
    ) -> Result<Self, String> {
        let layout_kind = get("layout");
        let sets = positive(name, "tlb_sets", get("tlb_sets"))?;
        let ways = positive(name, "tlb_ways", get("tlb_ways"))?;
        let rate = positive(name, "accesses_per_ms", get("accesses_per_ms"))?;
        let hyper = tasks.iter().fold(1, |h, t| h / gcd(h, t.1) * t.1);
        let mut rng = SplitMix64::derive(seed, "workload.rt_taskset");
        let mut layout = Layout::new(0x1000_0000);
        let heap_len = 1u64 << 30;
        let (_, heap) = layout.alloc("heap", heap_len, 1 << 21);
        let span = sets * 4096; // one "color cycle" of virtual pages
        let mut pages = Vec::new();
        let mut next_color = 1u64;
        let mut taken: Vec<u64> = Vec::new();
        for (i, t) in tasks.iter().enumerate() {
            let (alloc, used) = (t.3, t.4.min(t.3));
            let pool: Vec<u64> = match layout_kind {
                0 => {
                    // Non-overlapping pools at seeded random pages of a 1 GiB heap.
                    let slots = heap_len / 4096 / alloc.max(1);
                    let mut slot = rng.below(slots);
                    while taken.contains(&slot) {
                        slot = rng.below(slots);
                    }
                    taken.push(slot);
                    let start = heap + slot * alloc * 4096;
                    (0..alloc).map(|k| start + k * 4096).collect()
                }
                1 => {
                    // Colors from 1 upwards, wrapping to color 0 only when the set needs it.
                    let alloc = if random_choice { alloc } else { used };
                    let colors = alloc.div_ceil(ways);
                    if next_color - 1 + colors > sets {
                        return Err(format!("{name}: the task set needs more than the {sets} colors of a {sets}-set, {ways}-way DTLB"));
                    }
                    let c0 = next_color;
                    next_color += colors;
                    (0..alloc)
                        .map(|k| {
                            heap + ((c0 + k / ways) % sets) * 4096
                                + (k % ways + i as u64 * ways) * span
                        })
                        .collect()
                }
                2 => (0..alloc)
                    .map(|k| heap + 4096 + (i as u64 * alloc + k) * span)
                    .collect(),
                _ => {
                    return Err(format!(
                        "{name}: layout must be 0, 1 or 2 (got {layout_kind})"
                    ))
                }
            };
            // Which of the allocated pages the task accesses: the first `used`, or (when it
            // allocates more than it uses, as in the malloc experiment) a seeded random choice.
            let mut chosen = pool.clone();
            if used < alloc && random_choice {
                rng.shuffle(&mut chosen);
            }
            chosen.truncate(used as usize);
            pages.push(chosen);
        }
        let n = tasks.len();
        let hyperperiods = get("hyperperiods");
        Ok(TaskSet {
            end: hyper * hyperperiods,
            store,
            pages,
            hyper,
            per_access_us: MS as f64 / rate as f64,
            layout,
            t: 0,
            remaining: vec![0; n],
            job: vec![0; n],
            started_job: vec![false; n],
            cursor: vec![0; n],
            running: None,
            warm: false,
            credit: 0.0,
            tasks,
        })
    }

    pub fn hyperperiod_us(&self) -> u64 {
        self.hyper
    }

    fn access(&mut self, i: usize, out: &mut Vec<Record>) {
        let pg = &self.pages[i];
        if pg.is_empty() {
            return;
        }
        let k = self.cursor[i] as usize % pg.len();
        // Different L1D sets per page (§6.0.8): 64-byte steps through the page.
        let a = pg[k] + (k as u64 * 64) % 4096;
        out.push(if self.store {
            store(i as u32, a, 4)
        } else {
            load(i as u32, a, 4)
        });
        self.cursor[i] += 1;
    }

    fn switch_to(&mut self, to: Option<usize>, out: &mut Vec<Record>) {
        if to != self.running {
            out.push(switch(
                0,
                self.running.map(|x| x as u32),
                to.map(|x| x as u32),
            ));
            self.running = to;
        }
    }
}

impl Generator for TaskSet {
    fn regions(&self) -> Vec<String> {
        self.layout.names.clone()
    }
    fn step(&mut self, out: &mut Vec<Record>) -> bool {
        if !self.warm {
            self.warm = true;
            for i in 0..self.tasks.len() {
                out.push(ev(Event::ThreadStart {
                    thread: ThreadId(i as u32),
                    process: 0,
                }));
            }
            out.extend(self.layout.region_events());
            // Warm-up (job 0): each task touches each of its pages once, highest priority last
            // so it is the one whose entries are freshest (tasks start in creation order).
            for i in 0..self.tasks.len() {
                self.switch_to(Some(i), out);
                out.push(ev(Event::JobStart {
                    task: i as u32,
                    job: 0,
                }));
                for &p in &self.pages[i] {
                    out.push(store(i as u32, p, 4));
                }
                out.push(ev(Event::JobEnd {
                    task: i as u32,
                    job: 0,
                }));
            }
            return true;
        }
        if self.t >= self.end {
            return false;
        }
        // Simulate 1 ms of time per step, in 1 µs ticks.
        let stop = (self.t + MS).min(self.end);
        while self.t < stop {
            let t = self.t;
            for i in 0..self.tasks.len() {
                let (ph, pe, ex, _, _) = self.tasks[i];
                if t >= ph && (t - ph).is_multiple_of(pe) {
                    self.job[i] += 1;
                    out.push(ev(Event::TaskRelease {
                        task: i as u32,
                        job: self.job[i],
                    }));
                    // An unfinished job is abandoned at its next release (its deadline).
                    if self.remaining[i] > 0 && self.started_job[i] {
                        out.push(ev(Event::JobEnd {
                            task: i as u32,
                            job: self.job[i] - 1,
                        }));
                    }
                    self.remaining[i] = ex;
                    self.started_job[i] = false;
                }
            }
            // Rate monotonic: the ready task with the shortest period (ties: lower index).
            let pick = (0..self.tasks.len())
                .filter(|&i| self.remaining[i] > 0)
                .min_by_key(|&i| (self.tasks[i].1, i));
            self.switch_to(pick, out);
            if let Some(i) = pick {
                if !self.started_job[i] {
                    self.started_job[i] = true;
                    out.push(ev(Event::JobStart {
                        task: i as u32,
                        job: self.job[i],
                    }));
                }
                self.credit += 1.0;
                while self.credit >= self.per_access_us {
                    self.credit -= self.per_access_us;
                    self.access(i, out);
                }
                self.remaining[i] -= 1;
                if self.remaining[i] == 0 {
                    out.push(ev(Event::JobEnd {
                        task: i as u32,
                        job: self.job[i],
                    }));
                }
            } else {
                self.credit = 0.0;
            }
            self.t += 1;
        }
        true
    }
}

pub fn same_diff(get: &dyn Fn(&str) -> u64, seed: u64) -> Result<TaskSet, String> {
    let tasks = vec![(MS, 2 * MS, 392, 4, 4), (0, 16 * MS, 7880, 4, 4)];
    TaskSet::new("rt_same_diff_set", tasks, false, false, get, seed)
}

pub fn malloc_vs_tlb(get: &dyn Fn(&str) -> u64, seed: u64) -> Result<TaskSet, String> {
    let tasks = match get("variant") {
        0 => vec![(MS, 2 * MS, 385, 32, 14), (0, 16 * MS, 7380, 32, 14)],
        1 => vec![(MS, 2 * MS, 390, 32, 16), (0, 16 * MS, 7800, 32, 16)],
        v => {
            return Err(format!(
                "rt_malloc_vs_tlb_malloc: variant must be 0 or 1 (got {v})"
            ))
        }
    };
    TaskSet::new("rt_malloc_vs_tlb_malloc", tasks, true, true, get, seed)
}
