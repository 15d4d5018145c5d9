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
//! Page placement (`layout`, per task with `layout_t1`..`layout_t4`): 0 = contiguous (each
//! task's pool at a seeded, ASLR-like random page); 1 = `tlb_malloc` with different colors
//! (DTLB sets) per task; 2 = `tlb_malloc` with every page in one color ("same set"); 3 = glibc
//! `malloc` as the seed's machine did it (`rt_glibc`: thread arenas aligned to 64 MiB, 16-byte
//! chunk headers, the mmap threshold); 4 = random pages. Colors are sets of a `tlb_sets`-set,
//! `tlb_ways`-way DTLB (Xeon E5-2650 L1 DTLB: 16 × 4, seed §5); the sets in the `avoid_sets`
//! mask are never handed out (the seed avoided noisy sets, §6.0.6; by default set 0).
//!
//! `noise = 1` adds the OS noise of §6.0.6 (`rt_noise`: vsyscall, GOT, globals, libc data on
//! every job; each task's stack top on every switch-in). Jobs run the seed's synthetic page
//! writes or, in `rt_table6_1` (`kernels = 1`) and `rt_benchmark_pair`, the benchmark kernels
//! of §6.0.9-6.0.10 (`rt_kernels`) on their real access patterns.

use super::gen::*;
use super::rt_glibc::GlibcArena;
use super::rt_kernels::{Kernel, Ref};
use super::rt_noise::{push_refs, tick, Noise, PapiRead};
use super::WorkloadInfo;
use crate::record::Event;
use tlblab_types::{CoreId, SplitMix64, ThreadId};

/// (phase µs, period µs, execution µs, pages allocated, pages accessed)
type Task = (u64, u64, u64, u64, u64);

/// The `layout` parameter with its default.
const fn layout(default: u64) -> (&'static str, u64, &'static str) {
    (
        "layout",
        default,
        "0 = contiguous, 1 = tlb_malloc (colors per task), 2 = tlb_malloc same color, 3 = glibc malloc, 4 = random pages",
    )
}

/// Parameters every task-set workload has besides `layout`.
macro_rules! common_params {
    () => {
        [
            ("hyperperiods", 5, "hyperperiods simulated after the warm-up"),
            ("accesses_per_ms", 1000, "memory accesses per millisecond of execution time"),
            ("tlb_sets", 16, "sets of the DTLB the colors refer to"),
            ("tlb_ways", 4, "ways of that DTLB (pages per color a task may own)"),
            ("noise", 0, "1 = OS noise pages (seed 003 §6.0.6): vsyscall, GOT, globals, libc data per job, the stack per switch-in"),
            ("kernel_pages", 0, "4 KiB kernel pages on the entry path, touched on every switch-in (noise = 1)"),
            ("aslr", 0, "1 = address-space randomization moves libc, libpapi and the stacks by a seeded number of pages, and the brk heap by another (noise = 1)"),
            ("tick_hz", 0, "timer ticks a second while a task runs (noise = 1; 0 = none): each stores to the local APIC's 4 KiB fixmap page (Linux 2.6.32 x86-64, xAPIC: rt_noise::tick)"),
            ("idle_flush", 0, "1 = every idle gap of the core runs another process, whose switch-in flushes the TLB (Linux 2.6.32 x86-64 has no PCID: switch_mm reloads CR3): this source's upper bound"),
            ("papi", 0, "PAPI_read around every job (noise = 1): 0 = none, 1 = PAPI's per-thread objects allocated in the task's arena before its buffers, 2 = after them (PAPI 5.3 on Linux 2.6.32: rt_noise::PapiRead)"),
            ("avoid_sets", 1, "bit mask of the DTLB sets tlb_malloc never hands out (noisy sets, §6.0.6)"),
            ("offsets", 1, "where a synthetic job's write falls in each page: 1 = each page at its own L1 data-cache set (§6.0.8's modification, Fig. 6.8), 0 = the first four bytes of every page (the seed's set-up before it, Appendix A.2: every write in L1D set 0)"),
            ("layout_t1", 9, "T1's layout (9 = as layout)"),
            ("layout_t2", 9, "T2's layout (9 = as layout)"),
            ("layout_t3", 9, "T3's layout (9 = as layout)"),
            ("layout_t4", 9, "T4's layout (9 = as layout)"),
        ]
    };
}

const fn cat<const A: usize, const B: usize, const C: usize>(
    a: [(&'static str, u64, &'static str); A],
    b: [(&'static str, u64, &'static str); B],
) -> [(&'static str, u64, &'static str); C] {
    let mut out = [("", 0, ""); C];
    let mut i = 0;
    while i < A {
        out[i] = a[i];
        i += 1;
    }
    while i < C {
        out[i] = b[i - A];
        i += 1;
    }
    out
}

/// A workload's own parameters, then the common ones (`&[...]` of both, in that order).
macro_rules! with_common {
    ($($p:expr),+ $(,)?) => {
        &cat::<{ [$(stringify!($p)),+].len() }, 16, { [$(stringify!($p)),+].len() + 16 }>(
            [$($p),+],
            common_params!(),
        )
    };
}

const P: &[(&str, u64, &str)] = with_common!(layout(1));

pub const INFO_TABLE: WorkloadInfo = WorkloadInfo {
    name: "rt_table6_1",
    summary: "the periodic task sets of seed 003 Table 6.1 (2, 3 or 4 tasks), rate-monotonic",
    source: "seed 003 §6.0.9, Table 6.1",
    in_default_set: true,
    params: with_common!(
        ("tasks", 2, "which row group of Table 6.1: 2, 3 or 4 tasks"),
        ("kernels", 1, "0 = synthetic page writes, 1 = the benchmark kernels (T1 statistics, T2 bubble sort, T3 insertion sort, T4 nth largest)"),
        ("variant", 0, "0 = Table 6.1's rows, 1 = Appendix A.2's Malardalen pair (tasks = 2 only): T1 statistics (1, 2, 0.45 ms), T2 bubble sort (0, 54, 20 ms), 14 pages each of the 32 allocated"),
        layout(1),
    ),
};

pub const INFO_SAME_DIFF: WorkloadInfo = WorkloadInfo {
    name: "rt_same_diff_set",
    summary:
        "T1 (1, 2, 0.392 ms) and T2 (0, 16, 7.88 ms), 4 pages each, same or different DTLB set",
    source: "seed 003 §6.0.8 (same set vs. different set, Figs. 6.2-6.3)",
    in_default_set: true,
    params: P,
};

pub const INFO_MALLOC: WorkloadInfo = WorkloadInfo {
    name: "rt_malloc_vs_tlb_malloc",
    summary: "T1 (1, 2, 0.385 ms), T2 (0, 16, 7.38 ms): 32 pages allocated, 14 random ones written",
    source: "seed 003 §6.0.8 (malloc vs. tlb_malloc, Figs. 6.4-6.8); variant=1: Appendix A.1 (0.39/7.8 ms, 16 pages)",
    in_default_set: true,
    params: with_common!(
        ("variant", 0, "0 = §6.0.8 (14 of 32 pages), 1 = Appendix A.1 (16 of 32 pages)"),
        layout(0),
    ),
};

pub const INFO_PAIR: WorkloadInfo = WorkloadInfo {
    name: "rt_benchmark_pair",
    summary: "two benchmark tasks: fft (1, 4, 2 ms) with adpcm (0, 20, 4.6 ms), or FIR (1, 7, 2.5 ms) with Mi adpcm (0, 14, 5.3 ms)",
    source: "seed 003 §6.0.9 (Fig. 6.13), §6.0.10 (Fig. 6.14)",
    in_default_set: false,
    params: with_common!(
        ("set", 0, "0 = fft + adpcm (Fig. 6.13), 1 = FIR + Mi adpcm (Fig. 6.14)"),
        layout(3),
    ),
};

pub const INFO_NOISY: WorkloadInfo = WorkloadInfo {
    name: "rt_noisy_sets",
    summary: "the noisy-set probe: T1 (1, 2, 0.392 ms) and T2 (0, 16, 7.88 ms), each writing `pages` pages of one color",
    source: "seed 003 §6.0.6 (identifying noisy DTLB sets)",
    in_default_set: false,
    params: with_common!(
        ("color", 1, "the DTLB set both tasks allocate in"),
        ("pages", 1, "pages each task allocates in that color"),
        ("layout", 2, "kept at 2 (tlb_malloc, one color for both tasks)"),
    ),
};

const MS: u64 = 1000;

/// Appendix A.2's task set (Figs. A.11-A.12): "T1 (1ms, 2ms, 0.45ms), T2 (0 ms, 54ms, 20ms).
/// Each task accesses 14 pages. T1 and T2 represent the statistics and the bubble sort
/// benchmarks". The appendix does not say how many pages a task allocates: §6.0.9's rule for
/// its Table 6.1 sets, ⌈64/j⌉ = 32 for two tasks (an assumption: "a similar experiment").
pub fn appendix_a2_malardalen() -> Vec<Task> {
    vec![(MS, 2 * MS, 450, 32, 14), (0, 54 * MS, 20 * MS, 32, 14)]
}

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

/// One task of a set: timing in µs, pages allocated and accessed, and what its jobs run.
#[derive(Clone, Copy, Debug)]
pub struct TaskSpec {
    pub phase: u64,
    pub period: u64,
    pub exec: u64,
    pub alloc: u64,
    pub used: u64,
    pub kernel: Kernel,
}

impl From<Task> for TaskSpec {
    fn from(t: Task) -> Self {
        TaskSpec {
            phase: t.0,
            period: t.1,
            exec: t.2,
            alloc: t.3,
            used: t.4,
            kernel: Kernel::Pages,
        }
    }
}

/// Where glibc's thread arenas are handed out below (64 MiB-aligned, one below the other: the
/// first at 0x7fffec000000); any 64 MiB-aligned base gives the same sets.
const ARENA_TOP: u64 = 0x7fff_f000_0000;
/// Where a thread's large (`mmap`ed) chunks go, below the arenas.
const MMAP_TOP: u64 = 0x7fff_c000_0000;

pub struct TaskSet {
    tasks: Vec<TaskSpec>,
    store: bool,
    /// Start of each buffer a task's jobs access (page-aligned except under glibc placement,
    /// where a page-sized buffer straddles two pages).
    pages: Vec<Vec<u64>>,
    /// Per task, one run of its kernel (empty for the synthetic page writes).
    runs: Vec<Vec<Ref>>,
    noise: Option<Noise>,
    /// µs between timer ticks (0: none); a tick while a task runs touches the local APIC's page (`rt_noise::tick`).
    tick_us: u64,
    /// Per task, what its `PAPI_read`s touch (empty: no PAPI reads).
    papi: Vec<PapiRead>,
    /// Flush the TLB whenever the core goes idle (another process runs there).
    idle_flush: bool,
    /// Synthetic writes at 64-byte steps through the pages (each page its own L1D set, §6.0.8's
    /// modification); `false`: at each page's first bytes (Appendix A.2's original set-up).
    l1d_spread: bool,
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
        Self::with_specs(
            name,
            tasks.into_iter().map(TaskSpec::from).collect(),
            store,
            random_choice,
            get,
            seed,
        )
    }

    pub fn with_specs(
        name: &str,
        tasks: Vec<TaskSpec>,
        store: bool,
        random_choice: bool,
        get: &dyn Fn(&str) -> u64,
        seed: u64,
    ) -> Result<Self, String> {
        let layout_kind = get("layout");
        let sets = positive(name, "tlb_sets", get("tlb_sets"))?;
        let ways = positive(name, "tlb_ways", get("tlb_ways"))?;
        let rate = positive(name, "accesses_per_ms", get("accesses_per_ms"))?;
        let avoid = get("avoid_sets");
        if tasks.len() > 8 {
            return Err(format!("{name}: at most 8 tasks (got {})", tasks.len()));
        }
        let hyper = tasks.iter().fold(1, |h, t| h / gcd(h, t.period) * t.period);
        let mut rng = SplitMix64::derive(seed, "workload.rt_taskset");
        let mut kernel_rng = SplitMix64::derive(seed, "workload.rt_taskset.kernels");
        let mut layout = Layout::new(0x1000_0000);
        let heap_len = 1u64 << 30;
        let (_, heap) = layout.alloc("heap", heap_len, 1 << 21);
        let mut random_region = None;
        let span = sets * 4096; // one "color cycle" of virtual pages
                                // The colors tlb_malloc hands out, in order: every set not marked noisy (§6.0.6), then
                                // (only when a set needs more) the noisy ones.
        let noisy = |c: u64| c < 64 && avoid & (1 << c) != 0;
        let clean: Vec<u64> = (0..sets)
            .filter(|&c| !noisy(c))
            .chain((0..sets).filter(|&c| noisy(c)))
            .collect();
        let kinds: Vec<u64> = (0..tasks.len())
            .map(|i| match i {
                0..=3 => match get(&format!("layout_t{}", i + 1)) {
                    9 => layout_kind,
                    k => k,
                },
                _ => layout_kind,
            })
            .collect();
        let colored_pages = |t: &TaskSpec| {
            if random_choice {
                t.alloc
            } else {
                t.used.min(t.alloc)
            }
        };
        // When the tlb_malloc tasks need more colors at `ways` pages each than the clean sets
        // offer (the §6.0.8 tasks allocate 32 pages each: the whole 64-entry DTLB), each still
        // gets clean colors of its own, a share in proportion to its pages, and its pages fill
        // them period after period (the allocator's arena has more periods than ways): the
        // seed kept tlb_malloc off the noisy sets (§6.0.6) and only the pages a job touches
        // occupy ways.
        let n_clean = (0..sets).filter(|&c| !noisy(c)).count() as u64;
        let demand: u64 = tasks
            .iter()
            .zip(&kinds)
            .filter(|(_, &k)| k == 1)
            .map(|(t, _)| colored_pages(t).div_ceil(ways))
            .sum();
        let shared = demand > n_clean;
        let mut next_color = 0usize;
        let mut pages = Vec::new();
        let mut taken: Vec<u64> = Vec::new();
        let papi_order = match (get("papi"), get("noise")) {
            (0, _) => 0,
            (o @ (1 | 2), 1) => o,
            (o @ (1 | 2), _) => return Err(format!("{name}: papi ({o}) needs noise = 1")),
            (o, _) => return Err(format!("{name}: papi must be 0, 1 or 2 (got {o})")),
        };
        let mut papi = Vec::new();
        for (i, t) in tasks.iter().enumerate() {
            let (alloc, used) = (t.alloc, t.used.min(t.alloc));
            let kind = kinds[i];
            // The task thread's glibc arena: its malloc'd buffers (layout 3) and PAPI's
            // per-thread objects, in the order the thread allocated them.
            let mut arena = GlibcArena::new(ARENA_TOP, i as u64, MMAP_TOP - i as u64 * (1 << 30));
            if papi_order == 1 {
                papi.push(PapiRead::allocate(&mut arena, aslr_shift(get, seed)));
            }
            let pool: Vec<u64> = match kind {
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
                1 if shared => {
                    let alloc = colored_pages(t);
                    let share = ((n_clean * alloc.div_ceil(ways)) / demand).max(1) as usize;
                    if next_color + share > clean.len() {
                        return Err(format!("{name}: the task set needs more than the {sets} colors of a {sets}-set, {ways}-way DTLB"));
                    }
                    let mine = &clean[next_color..next_color + share];
                    next_color += share;
                    let share = share as u64;
                    (0..alloc)
                        .map(|k| {
                            heap + mine[(k % share) as usize] * 4096
                                + (k / share + i as u64 * 256) * span
                        })
                        .collect()
                }
                1 => {
                    // tlb_malloc: each task its own clean colors, `ways` pages per color.
                    let alloc = if random_choice { alloc } else { used };
                    let colors = alloc.div_ceil(ways) as usize;
                    if next_color + colors > clean.len() {
                        return Err(format!("{name}: the task set needs more than the {sets} colors of a {sets}-set, {ways}-way DTLB"));
                    }
                    let mine = &clean[next_color..next_color + colors];
                    next_color += colors;
                    (0..alloc)
                        .map(|k| {
                            heap + mine[(k / ways) as usize] * 4096
                                + (k % ways + i as u64 * ways) * span
                        })
                        .collect()
                }
                2 => {
                    let c = clean.first().copied().unwrap_or(0);
                    (0..alloc)
                        .map(|k| heap + c * 4096 + (i as u64 * alloc + k) * span)
                        .collect()
                }
                3 => {
                    // glibc malloc: `alloc` calls malloc(4096) in the task's thread arena.
                    (0..alloc).map(|_| arena.malloc(4096)).collect()
                }
                4 => {
                    // Random placement: every page at a seeded random page of its own 1 GiB.
                    let base = *random_region
                        .get_or_insert_with(|| layout.alloc("random", heap_len, 1 << 21).1);
                    let mut seen = std::collections::HashSet::new();
                    (0..alloc)
                        .map(|_| loop {
                            let p = base + rng.below(heap_len / 4096) * 4096;
                            if seen.insert(p) {
                                break p;
                            }
                        })
                        .collect()
                }
                _ => {
                    return Err(format!(
                        "{name}: layout must be 0 (contiguous), 1 (tlb_malloc), 2 (same color), 3 (glibc malloc) or 4 (random) (got {kind})"
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
            if papi_order == 2 {
                papi.push(PapiRead::allocate(&mut arena, aslr_shift(get, seed)));
            }
        }
        let runs = tasks
            .iter()
            .zip(&pages)
            .map(|(t, p)| match t.kernel {
                Kernel::Pages => Vec::new(),
                k => k.run(p.len() as u32 * 64, &mut kernel_rng),
            })
            .collect();
        let noise = match (get("noise"), get("aslr")) {
            (0, _) => None,
            (1, 0 | 1) => {
                // ASLR moves the mmap base by a random number of pages, and with it libc and
                // the thread stacks (the arenas stay 64 MiB-aligned, the executable and the
                // vsyscall page stay put): the seed's malloc runs differ in which sets those
                // land in; its noisy-set runs had randomization off (§6.0.6).
                Some(Noise::new(
                    tasks.len(),
                    get("kernel_pages"),
                    aslr_shift(get, seed).0,
                ))
            }
            (1, a) => return Err(format!("{name}: aslr must be 0 or 1 (got {a})")),
            (v, _) => return Err(format!("{name}: noise must be 0 or 1 (got {v})")),
        };
        let tick_us = match get("tick_hz") {
            0 => 0,
            hz if noise.is_none() => {
                return Err(format!("{name}: tick_hz ({hz}) needs noise = 1"))
            }
            hz if hz <= MS * 1000 && (MS * 1000).is_multiple_of(hz) => MS * 1000 / hz,
            hz => {
                return Err(format!(
                    "{name}: tick_hz must divide 1000000 (a whole number of µs between ticks), got {hz}"
                ))
            }
        };
        let n = tasks.len();
        let hyperperiods = get("hyperperiods");
        Ok(TaskSet {
            end: hyper * hyperperiods,
            store,
            pages,
            runs,
            noise,
            tick_us,
            papi,
            idle_flush: match get("idle_flush") {
                0 => false,
                1 => true,
                v => return Err(format!("{name}: idle_flush must be 0 or 1 (got {v})")),
            },
            l1d_spread: match get("offsets") {
                0 => false,
                1 => true,
                v => return Err(format!("{name}: offsets must be 0 or 1 (got {v})")),
            },
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

    /// The buffers each task's jobs access (for the isolation verifier and tests).
    pub fn task_pages(&self) -> &[Vec<u64>] {
        &self.pages
    }

    fn access(&mut self, i: usize, out: &mut Vec<Record>) {
        let pg = &self.pages[i];
        if pg.is_empty() {
            return;
        }
        let run = &self.runs[i];
        let (a, write) = if run.is_empty() {
            let k = self.cursor[i] as usize % pg.len();
            // Different L1D sets per page (§6.0.8): 64-byte steps through the page; or the
            // first four bytes of every page, as the seed's experiments were "originally set up"
            // (Appendix A.2: "This results in L1 data cache conflicts").
            let off = if self.l1d_spread {
                (k as u64 * 64) % 4096
            } else {
                0
            };
            (pg[k] + off, self.store)
        } else {
            let (line, w) = run[self.cursor[i] as usize % run.len()];
            (pg[(line / 64) as usize] + (line as u64 % 64) * 64, w)
        };
        out.push(if write {
            store(i as u32, a, 4)
        } else {
            load(i as u32, a, 4)
        });
        self.cursor[i] += 1;
    }

    /// The noise of a job start of task `i` (Alg. 4 lines 14-18 and the return from nanosleep).
    fn job_noise(&self, i: usize, out: &mut Vec<Record>) {
        if let Some(n) = &self.noise {
            push_refs(i, &n.per_job, out);
        }
    }

    /// Task `i`'s job boundary `mark` with its `PAPI_read` around it (`PapiRead::around`); a
    /// start then runs the job's own noise.
    fn job_mark(&self, i: usize, mark: Event, out: &mut Vec<Record>) {
        let start = matches!(mark, Event::JobStart { .. });
        PapiRead::around(self.papi.get(i), i, mark, out);
        if start {
            self.job_noise(i, out);
        }
    }

    fn switch_to(&mut self, to: Option<usize>, out: &mut Vec<Record>) {
        let was_running = self.running.is_some();
        if switch_running(&mut self.running, to, out) {
            // The core idles: under SCHED_FIFO only now may another process run (§5), and its
            // switch-in writes CR3, which without PCID flushes every TLB entry (Linux 2.6.32,
            // arch/x86/include/asm/mmu_context.h `switch_mm` → `load_cr3`; a deep C-state's
            // `leave_mm` does the same). Global kernel entries survive a CR3 write; this flush
            // takes them too, so it is the source's upper bound.
            if to.is_none() && was_running && self.idle_flush {
                out.push(ev(Event::Flush {
                    core: CoreId(0),
                    what: crate::record::flush::TLB,
                }));
            }
            // A switch-in returns to the task's code, which works on its stack (§6.0.6).
            if let (Some(i), Some(n)) = (to, &self.noise) {
                for &p in &n.per_switch[i] {
                    out.push(store(i as u32, p + 0xe00, 8));
                }
            }
        }
    }
}

/// What address-space randomization (`aslr` = 1) moves, in bytes down: the `mmap` base (libc,
/// libpapi, the thread stacks) and the `brk` heap (Linux 2.6.32's `arch_randomize_brk`: a page in
/// the 32 MiB above the executable's end); (0, 0) without it.
fn aslr_shift(get: &dyn Fn(&str) -> u64, seed: u64) -> (u64, u64) {
    if get("aslr") != 1 {
        return (0, 0);
    }
    let mmap = SplitMix64::derive(seed, "workload.rt_taskset.aslr").below(1 << 16) * 4096;
    let brk = SplitMix64::derive(seed, "workload.rt_taskset.aslr.brk").below(1 << 13) * 4096;
    (mmap, brk)
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
                self.job_mark(
                    i,
                    Event::JobStart {
                        task: i as u32,
                        job: 0,
                    },
                    out,
                );
                for &p in &self.pages[i] {
                    out.push(store(i as u32, p, 4));
                }
                self.job_mark(
                    i,
                    Event::JobEnd {
                        task: i as u32,
                        job: 0,
                    },
                    out,
                );
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
                let TaskSpec {
                    phase: ph,
                    period: pe,
                    exec: ex,
                    ..
                } = self.tasks[i];
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
                .min_by_key(|&i| (self.tasks[i].period, i));
            self.switch_to(pick, out);
            if let (Some(i), true) = (pick, self.tick_us > 0 && t.is_multiple_of(self.tick_us)) {
                // The timer tick, taken in the running task's time (and counted in its job, as
                // PAPI counted the seed's jobs): see `rt_noise::tick`. With NO_HZ an idle core
                // stops its tick (kernel/time/tick-sched.c, `tick_nohz_stop_sched_tick`), so
                // only ticks that find a task running are emitted.
                for (a, w) in tick() {
                    out.push(if w {
                        store(i as u32, a, 4)
                    } else {
                        load(i as u32, a, 4)
                    });
                }
            }
            if let Some(i) = pick {
                if !self.started_job[i] {
                    self.started_job[i] = true;
                    let job = self.job[i];
                    self.job_mark(
                        i,
                        Event::JobStart {
                            task: i as u32,
                            job,
                        },
                        out,
                    );
                }
                self.credit += 1.0;
                while self.credit >= self.per_access_us {
                    self.credit -= self.per_access_us;
                    self.access(i, out);
                }
                self.remaining[i] -= 1;
                if self.remaining[i] == 0 {
                    let job = self.job[i];
                    self.job_mark(
                        i,
                        Event::JobEnd {
                            task: i as u32,
                            job,
                        },
                        out,
                    );
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

/// Table 6.1's task set with the benchmark kernels (§6.0.9: "bubble sort, insertion sort, nth
/// largest and statistics"; the table does not say which task runs which: Appendix A.2 pairs
/// T1 with statistics and T2 with bubble sort, and we give T3 insertion sort and T4 nth largest).
pub fn table6_1_set(get: &dyn Fn(&str) -> u64, seed: u64) -> Result<TaskSet, String> {
    let kernels = [
        Kernel::Statistics,
        Kernel::Bubble,
        Kernel::Insertion,
        Kernel::Nth,
    ];
    let rows = match (get("variant"), get("tasks")) {
        (0, n) => table6_1(n)?,
        (1, 2) => appendix_a2_malardalen(),
        (1, n) => {
            return Err(format!(
                "rt_table6_1: variant = 1 (Appendix A.2's pair) needs tasks = 2, got {n}"
            ))
        }
        (v, _) => return Err(format!("rt_table6_1: variant must be 0 or 1 (got {v})")),
    };
    let mut specs: Vec<TaskSpec> = rows.into_iter().map(TaskSpec::from).collect();
    match get("kernels") {
        0 => {}
        1 => {
            for (s, k) in specs.iter_mut().zip(kernels) {
                s.kernel = k;
            }
        }
        v => return Err(format!("rt_table6_1: kernels must be 0 or 1 (got {v})")),
    }
    TaskSet::with_specs("rt_table6_1", specs, false, false, get, seed)
}

/// §6.0.9 (Fig. 6.13): T1 fft (1, 4, 2 ms) and T2 adpcm (0, 20, 4.6 ms), "the sum of the number
/// of pages accessed by both the tasks is twenty": fft's real and imaginary arrays take 8 (two
/// power-of-two halves), adpcm the other 12. §6.0.10 (Fig. 6.14): T1 FIR (1, 7, 2.5 ms) on 16 kB
/// of input (4 pages, plus a page of coefficients and outputs) and T2 the Mi adpcm (0, 14,
/// 5.3 ms), which streams its 450 kB file through read() into block buffers (rawcaudio: 1000
/// samples in, 500 bytes out): 2 pages. Each task allocates ⌈64/2⌉ = 32 pages, as in Table 6.1.
pub fn benchmark_pair(get: &dyn Fn(&str) -> u64, seed: u64) -> Result<TaskSet, String> {
    let t = |phase: f64, period: f64, exec: f64, used: u64, kernel: Kernel| TaskSpec {
        phase: (phase * MS as f64) as u64,
        period: (period * MS as f64) as u64,
        exec: (exec * MS as f64).round() as u64,
        alloc: 32,
        used,
        kernel,
    };
    let specs = match get("set") {
        0 => vec![
            t(1.0, 4.0, 2.0, 8, Kernel::Fft),
            t(0.0, 20.0, 4.6, 12, Kernel::Adpcm),
        ],
        1 => vec![
            t(1.0, 7.0, 2.5, 5, Kernel::Fir),
            t(0.0, 14.0, 5.3, 2, Kernel::Adpcm),
        ],
        v => return Err(format!("rt_benchmark_pair: set must be 0 or 1 (got {v})")),
    };
    TaskSet::with_specs("rt_benchmark_pair", specs, false, false, get, seed)
}

/// §6.0.6's probe: the §6.0.8 task pair, each task writing `pages` pages of color `color`.
pub fn noisy_sets(get: &dyn Fn(&str) -> u64, seed: u64) -> Result<TaskSet, String> {
    let sets = positive("rt_noisy_sets", "tlb_sets", get("tlb_sets"))?;
    let color = get("color");
    if color >= sets {
        return Err(format!(
            "rt_noisy_sets: color must be below tlb_sets ({sets}), got {color}"
        ));
    }
    let pages = positive("rt_noisy_sets", "pages", get("pages"))?;
    let tasks = vec![
        (MS, 2 * MS, 392, pages, pages),
        (0, 16 * MS, 7880, pages, pages),
    ];
    // Layout 2 with every set but `color` avoided puts both tasks' pages in `color`.
    let only = |k: &str| match k {
        "layout" => 2,
        "avoid_sets" => !(1u64 << color),
        k => get(k),
    };
    TaskSet::new("rt_noisy_sets", tasks, true, false, &only, seed)
}
