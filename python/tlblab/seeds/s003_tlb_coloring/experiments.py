"""Seed 003 (Panchamukhi 2014, TLB coloring): the experiments behind its reproductions.

Each function returns {row key: our value} for `python/tlblab/seeds/s003_tlb_coloring/reproductions/<id>.toml`.
"""

from __future__ import annotations

import tlblab
from tlblab.errors import UserError
from tlblab.seeds.s003_tlb_coloring.appendix_a import mean as _mean, sample_sd as _sd  # one definition

XEON = "xeon-e5-2650"


def _misses_per_job(workload: str, technique: str, level: str = "L1D"):
    """{(task, job): misses of `level`} of a periodic task-set run (tasks numbered from 1)."""
    r = tlblab.simulate(XEON, workload, technique=technique)
    jobs = r.job_frame()
    return {(int(t) + 1, int(j)): int(m) for t, j, m in zip(jobs["task"], jobs["job"], jobs[f"{level}_misses"])}


def fig6_2(quick: bool) -> dict[str, float]:
    """Fig. 6.2: T1 (1, 2, 0.392 ms) and T2 (0, 16, 7.88 ms), 4 pages each, placed by the
    tlb_coloring technique in one color (same set) or in colors 1 and 2 (different sets), over two
    hyperperiods. `quick` changes nothing: the run takes well under a second."""
    out: dict[str, float] = {}
    workload = "rt_same_diff_set:layout=0,hyperperiods=2"
    for case, assign in (("same", "same"), ("diff", "per_thread")):
        per_job = _misses_per_job(workload, f"tlb_coloring:assign={assign},first_color=1")
        for (task, job), m in per_job.items():
            out[f"{case}/T{task}/job{job}"] = m
    return out


# ---------------------------------------------------------------------------------------------
# Figs. 6.4-6.8, Table 6.1 (Figs. 6.9-6.12), Figs. 6.13-6.14: malloc vs. tlb_malloc with the OS
# noise of §6.0.6 and glibc's placement (the rt task-set workloads' layout=3 and noise=1).

# The timer tick on the tasks' core (issue 87; rt_noise::tick in the trace crate): Linux 2.6.32's
# local APIC timer interrupt stores through the APIC's 4 KiB fixmap page (one way of DTLB set 12)
# every 1/HZ while a task runs. HZ = 1000 is an assumption: the seed names only "Linux 2.6.32"
# (§5); Red Hat Enterprise Linux 6's 2.6.32 kernels, the server distribution of that kernel, are
# built with CONFIG_HZ=1000, upstream's default is 250.
# PAPI's counter reads around every job (issue 87; rt_noise::PapiRead): PAPI 5.3's PAPI_read on
# Linux 2.6.32 (perf_event component, `_pe_read`), its user side in libpapi's data, the EventSet
# map and the task thread's PAPI objects, allocated in the thread's glibc arena before its
# buffers (papi=1; an assumption: the seed does not say when its tasks set their counters up).
NOISE = "noise=1,tick_hz=1000,papi=1"


def noisy_set_mask(sets: int = 16) -> int:
    """Seed 003 §6.0.6's procedure on the simulated machine: two tasks (the §6.0.8 pair) each
    allocate pages of one color with tlb_malloc; a color whose tasks miss after the warm-up is
    noisy. Run with two pages per task, so a color passes only when all four ways are free of
    OS pages (the tlb_malloc experiments put up to four pages of one task in a color)."""
    mask = 0
    for color in range(sets):
        r = tlblab.simulate(XEON, f"rt_noisy_sets:color={color},pages=2,hyperperiods=1,{NOISE}")
        jobs = r.job_frame()
        after = jobs[jobs["job"] >= 1]
        if int(after["L1D_misses"].sum()) > 0:
            mask |= 1 << color
    return mask


def _jobs(workload: str, seed: int):
    r = tlblab.simulate(XEON, workload, seed=seed)
    return r.job_frame()


def _per_task_misses(prefix: str, n: int, runs_jobs) -> dict[str, float]:
    """`PREFIX/T<t>` and `PREFIX/T<t>/sd`: over the runs (one job frame each), the mean and the
    spread of task t's average L1 DTLB misses per job after the warm-up job 0."""
    means: dict[int, list[float]] = {t: [] for t in range(1, n + 1)}
    for js in runs_jobs:
        for t in range(1, n + 1):
            mine = js[(js["task"] == t - 1) & (js["job"] >= 1)]
            means[t].append(float(mine["L1D_misses"].mean()))
    out = {}
    for t in range(1, n + 1):
        out[f"{prefix}/T{t}"] = _mean(means[t])
        out[f"{prefix}/T{t}/sd"] = _sd(means[t])
    return out


def fig6_4_8(quick: bool) -> dict[str, float]:
    """Figs. 6.4-6.8: T1 (1, 2, 0.385 ms) and T2 (0, 16, 7.38 ms) each allocate 32 pages and
    write 14 chosen at random, with glibc malloc (layout=3) or tlb_malloc in colors clear of
    the noisy sets the §6.0.6 procedure finds; 10 runs (seeds) of two hyperperiods, as the seed's
    figures (3 runs with `quick`). Misses are L1 DTLB misses per job; cycles per job for Fig. 6.8."""
    runs = 3 if quick else 10
    mask = noisy_set_mask()
    out: dict[str, float] = {"noisy_mask": float(mask)}
    base = f"rt_malloc_vs_tlb_malloc:hyperperiods=2,{NOISE}"
    for case, lay in (("malloc", "layout=3,aslr=1"), ("tlb", f"layout=1,avoid_sets={mask}")):
        out.update(_fig6_4_8_numbers(case, (_jobs(f"{base},{lay}", seed) for seed in range(runs))))
    return out


def _fig6_4_8_numbers(case: str, runs_jobs) -> dict[str, float]:
    """Figs. 6.4-6.8's numbers for `case` from each run's job frame (`_jobs`, `_captured_jobs`):
    T1's average misses at each of its first 8 jobs; each task's mean and largest misses per
    job and the spread of its per-run means (all jobs but the warm-up, job 0); and the
    coefficient of variation of T1's cycles per job from job 2 on (Fig. 6.8)."""
    out: dict[str, float] = {}
    per_job: dict[tuple[int, int], list[float]] = {}
    cycles: list[float] = []
    run_means: dict[int, list[float]] = {1: [], 2: []}
    for jobs in runs_jobs:
        for t in (1, 2):
            js = jobs[(jobs["task"] == t - 1) & (jobs["job"] >= 1)]
            run_means[t].append(float(js["L1D_misses"].mean()))
            for j, m, c in zip(js["job"], js["L1D_misses"], js["cycles"]):
                per_job.setdefault((t, int(j)), []).append(float(m))
                if t == 1 and int(j) >= 2:
                    cycles.append(float(c))
    for (t, j), ms in per_job.items():
        if t == 1 and j <= 8:
            out[f"{case}/T1/job{j}"] = _mean(ms)
    for t in (1, 2):
        allm = [m for (tt, _), ms in per_job.items() if tt == t for m in ms]
        out[f"{case}/T{t}/mean"] = _mean(allm)
        out[f"{case}/T{t}/max"] = max(allm) if allm else 0.0
        out[f"{case}/T{t}/run_sd"] = _sd(run_means[t])
    out[f"{case}/T1/cycles_cv"] = (_sd(cycles) / _mean(cycles)) if cycles else 0.0
    return out


# Table 6.1, as the seed reports it under Figs. 6.9-6.12 (§6.0.9): malloc's average misses per
# job (all jobs but the warm-up) for each task of the 2-, 3- and 4-task sets.
TABLE6_1_MALLOC = {2: [13, 130], 3: [6, 32, 20], 4: [1.7, 6.8, 2.5, 6.7]}


def table6_1(quick: bool) -> dict[str, float]:
    """Figs. 6.9-6.12: the Table 6.1 task sets running the benchmark kernels (statistics, bubble
    sort, insertion sort, nth largest), glibc malloc vs. tlb_malloc (clean colors), OS noise on;
    average L1 DTLB misses per job over 5 hyperperiods and 5 runs (2 and 2 with `quick`)."""
    runs, hyper = (2, 2) if quick else (5, 5)
    mask = noisy_set_mask()
    out: dict[str, float] = {}
    for n in (2, 3, 4):
        base = f"rt_table6_1:tasks={n},kernels=1,accesses_per_ms=10000,hyperperiods={hyper},{NOISE}"
        for case, lay in (("malloc", "layout=3,aslr=1"), ("tlb", f"layout=1,avoid_sets={mask}")):
            runs_jobs = (_jobs(f"{base},{lay}", seed) for seed in range(runs))
            out.update(_per_task_misses(f"{n}tasks/{case}", n, runs_jobs))
    return out


def fig6_13_14(quick: bool) -> dict[str, float]:
    """Fig. 6.13 (fft T1 (1, 4, 2 ms) and adpcm T2 (0, 20, 4.6 ms), 20 pages together) and
    Fig. 6.14 (FIR T1 (1, 7, 2.5 ms) and Mi adpcm T2 (0, 14, 5.3 ms)): glibc malloc vs.
    tlb_malloc, OS noise on; average misses per job over 5 hyperperiods and 5 runs."""
    runs, hyper = (2, 2) if quick else (5, 5)
    mask = noisy_set_mask()
    out: dict[str, float] = {}
    for fig, s in (("6_13", 0), ("6_14", 1)):
        base = f"rt_benchmark_pair:set={s},accesses_per_ms=10000,hyperperiods={hyper},{NOISE}"
        for case, lay in (("malloc", "layout=3,aslr=1"), ("tlb", f"layout=1,avoid_sets={mask}")):
            means: dict[int, list[float]] = {1: [], 2: []}
            for seed in range(runs):
                jobs = _jobs(f"{base},{lay}", seed)
                for t in (1, 2):
                    js = jobs[(jobs["task"] == t - 1) & (jobs["job"] >= 1)]
                    means[t].append(float(js["L1D_misses"].mean()))
            for t in (1, 2):
                out[f"fig{fig}/{case}/T{t}"] = _mean(means[t])
                out[f"fig{fig}/{case}/T{t}/sd"] = _sd(means[t])
    return out


# ---------------------------------------------------------------------------------------------
# The same experiments on real tasks (issue 61): runtime/bench/seed003/rt_tasks.c, captured
# under Valgrind with every job marked, moved to the layout of a native run (address-space
# randomization on for malloc, off for tlb_malloc as §6.0.6 had it), replayed rate-monotonic
# with the seed's phases, periods and execution times (tlblab.seeds.s003_tlb_coloring.rt_capture). The OS noise is
# what the program touches besides its buffers (code, stacks, TLS, libc, the executable's
# data), plus the kernel's pages on every switch.

# 4 KiB kernel pages every switch touches (os.kernel_pages): none from the OS model. x86-64
# Linux maps its image and direct map (the scheduler's code and data, kernel stacks, task
# structs) with 2 MiB pages, which the 4 KiB L1 DTLB does not hold; the 4 KiB pages the seed's
# kernel (Linux 2.6.32, §5) does put there are in the replayed trace, at that kernel's
# addresses (tlblab_trace::workloads::rt_replay): the vsyscall page (set 0) and the vDSO's
# page that gettimeofday reads after each job (Alg. 4 line 14), and the local APIC's fixmap
# page (set 12) that each release's timer interrupt writes.
REAL_KERNEL_PAGES = 0
REAL_OS = {"kernel_pages": REAL_KERNEL_PAGES}

# Table 6.1 (phase, period, execution in µs; pages used), and the kernel each task runs: the
# table does not say which; Appendix A.2 pairs T1 with statistics and T2 with bubble sort.
TABLE6_1_TIMING = {
    2: [(1000, 2000, 400, 16), (0, 54000, 27000, 16)],
    3: [(3000, 2000, 400, 4), (2000, 3000, 900, 7), (0, 15000, 3200, 2)],
    4: [(3000, 2000, 200, 2), (2000, 3000, 600, 2), (1000, 5000, 1100, 1), (0, 15000, 3200, 2)],
}
TABLE6_1_KERNELS = ("stats", "bubble", "insertion", "nth")


def _captured_jobs(trace, runs_seed: int = 0):
    r = tlblab.simulate(XEON, str(trace), os=REAL_OS, seed=runs_seed)
    return r.job_frame()


def real_noisy_set_mask(quick: bool = False, source=None, from_job: int = 2) -> int:
    """§6.0.6 on the simulated machine with the real program, randomization off (§6.0.6: "We
    turn off heap randomization so that the stacks of the tasks always have the same base
    address"), by the program `source` (default rt_tasks.c; each experiment's program has its own
    pages, hence its own noisy sets): the §6.0.8 pair (T1 (1, 2, 0.392 ms), T2 (0, 16, 7.88 ms)) with tlb_malloc, T1
    writing pages of the color probed, T2 one page of the color 8 sets away; a color in which T1
    misses after the warm-up is noisy. T1 writes 4 pages of the color, as many as a task set
    here puts in one (`_colors_for`, 4 pages per color): §6.0.6 starts with one page per task
    and "the number of pages accessed by each task can be increased", and a noise page shows
    only in a color whose 4 ways the tasks fill (with 2 + 2 pages the vsyscall page of set 0 fit
    in the fourth way and set 0 passed, then T1's 4 pages there missed 4 times a job). Over
    two hyperperiods, from T1's second job on (`from_job`). The seed's procedure counts from the
    first job ("we should not observe any misses apart from the warm up phase"); with
    `from_job=1` it marks sets 0-5, 7, 8 and 12-15 noisy here (2026-11-27), leaving 4 clean
    colors where the 2-task set needs 8: T1's first job misses the 4 pages of most colors because
    its own warm-up ends with the first `nanosleep`, which the dynamic loader binds lazily (Alg. 4
    runs it after t1_init, as here) by reading its link maps, its own data, libc's symbol tables
    and the executable's relocations: pages in sets 1-5 and 7, which push one of the freshly
    written pages out (an LRU cascade of 4 in job 1, none after). So the task sets take the
    colors clean from the second job on, and their first jobs may miss (issue 61)."""
    from concurrent.futures import ThreadPoolExecutor

    from tlblab.seeds.s003_tlb_coloring import rt_capture as rc

    def probe(color: int) -> bool:
        tasks = [rc.Task("pages", 4, 4, 1000, 2000, 392, colors=(color,)),
                 rc.Task("pages", 1, 1, 0, 16000, 7880, colors=((color + 8) % 16,))]
        cap = rc.capture("tlb", tasks, jobs=2, repeat=4, source=source)
        native = rc.layouts(cap, 1, aslr=False)[0]
        jobs = _captured_jobs(rc.replay(cap, tasks, 2, native, hyperperiods=2, tick_hz=rc.TICK_HZ, papi=rc.PAPI))
        return int(jobs[(jobs["task"] == 0) & (jobs["job"] >= from_job)]["L1D_misses"].sum()) > 0

    with ThreadPoolExecutor(2) as pool:
        noisy = list(pool.map(probe, range(16)))
    return sum(1 << c for c, n in enumerate(noisy) if n)


def _colors_for(tasks_used: list[int], mask: int) -> list[tuple[int, ...]]:
    """Each task its own colors, 4 pages per color, clean ones first (then noisy, if short)."""
    order = [c for c in range(16) if not mask >> c & 1] + [c for c in range(16) if mask >> c & 1]
    out, k = [], 0
    for used in tasks_used:
        n = -(-used // 4)
        if k + n > 16:
            raise UserError("the task set needs more than the 16 colors of the L1 DTLB")
        out.append(tuple(order[k:k + n]))
        k += n
    return out


def table6_1_real(quick: bool) -> dict[str, float]:
    """Figs. 6.9-6.12 on the real tasks: the Table 6.1 sets, malloc (5 native layouts with ASLR)
    vs. tlb_malloc (clean colors from real_noisy_set_mask, randomization off); average L1 DTLB
    misses per job (all but the warm-up) over 5 hyperperiods and 5 runs (2 and 2 with `quick`)."""
    from tlblab.seeds.s003_tlb_coloring import rt_capture as rc

    runs, hyper, jobs = (2, 2, 4) if quick else (5, 5, 8)
    mask = real_noisy_set_mask(quick)
    out: dict[str, float] = {"noisy_mask": float(mask)}
    for n, rows in TABLE6_1_TIMING.items():
        alloc = -(-64 // n)
        colors = _colors_for([r[3] for r in rows], mask)
        for case, allocator in (("malloc", "malloc"), ("tlb", "tlb")):
            tasks = [rc.Task(TABLE6_1_KERNELS[i], alloc, used, ph, pe, ex, colors=colors[i])
                     for i, (ph, pe, ex, used) in enumerate(rows)]
            cap = rc.capture(allocator, tasks, jobs=jobs, repeat=2)
            natives = rc.layouts(cap, runs, aslr=(allocator == "malloc"))
            runs_jobs = (_captured_jobs(rc.replay(cap, tasks, jobs, native, hyperperiods=hyper, tick_hz=rc.TICK_HZ, papi=rc.PAPI)) for native in natives)
            out.update(_per_task_misses(f"{n}tasks/{case}", n, runs_jobs))
    return out


def fig6_4_8_real(quick: bool) -> dict[str, float]:
    """Figs. 6.4-6.8 on the real tasks: T1 (1, 2, 0.385 ms) and T2 (0, 16, 7.38 ms) allocate 32
    pages each and write 14 chosen at random (a run: the program's seed and a native layout);
    10 runs of two hyperperiods (3 with `quick`). Misses are L1 DTLB misses per job, cycles per
    job for Fig. 6.8 (full model)."""
    from tlblab.seeds.s003_tlb_coloring import rt_capture as rc

    runs, jobs = (3, 4) if quick else (10, 8)
    mask = real_noisy_set_mask(quick)
    out: dict[str, float] = {"noisy_mask": float(mask)}
    colors = _colors_for([14, 14], mask)
    for case, allocator in (("malloc", "malloc"), ("tlb", "tlb")):
        tasks = [rc.Task("pages", 32, 14, 1000, 2000, 385, colors=colors[0]),
                 rc.Task("pages", 32, 14, 0, 16000, 7380, colors=colors[1])]

        runs_jobs = (_captured_jobs(r) for r in rc.replayed_runs(allocator, tasks, jobs, runs))
        out.update(_fig6_4_8_numbers(case, runs_jobs))
    return out


# Figs. 6.13 and 6.14 on real tasks (phase, period, execution in µs; pages used; the kernel):
# §6.0.9 "T1 (1 ms, 4 ms, 2 ms) and T2 (0 ms, 20 ms, 4.6 ms) representing the fft and the adpcm
# benchmarks ... the sum of the number of pages accessed by both the tasks is twenty" (fft 8:
# its real and imaginary halves, adpcm 12); §6.0.10 "T1 (1 ms, 7 ms, 2.5 ms) and T2 (0 ms, 14 ms,
# 5.3 ms) ... FIR ... and adpcm ... input data of 16 kB and 450 kB" (FIR 5 pages: 16 kB of
# samples and a page more; the Mi adpcm 2: its input block and its output block, the 450 kB
# streamed from a real audio file through them, rt_capture.audio_input).
FIG6_13_14_TASKS = {
    "6_13": [("fft", 1000, 4000, 2000, 8), ("adpcm", 0, 20000, 4600, 12)],
    "6_14": [("fir", 1000, 7000, 2500, 5), ("miadpcm", 0, 14000, 5300, 2)],
}


def fig6_13_14_real(quick: bool) -> dict[str, float]:
    """Figs. 6.13 and 6.14 on the real tasks: each pair with glibc malloc (5 native layouts with
    ASLR, each task allocating 32 pages as in Table 6.1) and with tlb_malloc (clean colors from
    real_noisy_set_mask, randomization off); average L1 DTLB misses per job (all but the
    warm-up) over 5 hyperperiods and 5 runs (2 and 2 with `quick`)."""
    from tlblab.seeds.s003_tlb_coloring import rt_capture as rc

    runs, hyper, jobs = (2, 2, 4) if quick else (5, 5, 8)
    # The noisy sets of this experiment's own program (its pages are not rt_tasks.c's).
    mask = real_noisy_set_mask(quick, source=rc.FIG6_13_14_SOURCE)
    out: dict[str, float] = {"noisy_mask": float(mask)}
    for fig, rows in FIG6_13_14_TASKS.items():
        colors = _colors_for([r[4] for r in rows], mask)
        for case in ("malloc", "tlb"):
            tasks = [rc.Task(kernel, 32, used, ph, pe, ex, colors=colors[i])
                     for i, (kernel, ph, pe, ex, used) in enumerate(rows)]
            cap = rc.capture(case, tasks, jobs=jobs, repeat=2)
            natives = rc.layouts(cap, runs, aslr=(case == "malloc"))
            runs_jobs = (_captured_jobs(rc.replay(cap, tasks, jobs, native, hyperperiods=hyper, tick_hz=rc.TICK_HZ, papi=rc.PAPI)) for native in natives)
            out.update(_per_task_misses(f"fig{fig}/{case}", 2, runs_jobs))
    return out


def _native_task_pages(binary, argv: list[str]) -> dict[str, list[int]]:
    """{task: [page address, ...]} from the `task` lines of one native run of rt_tasks."""
    import subprocess

    r = subprocess.run([str(binary), *argv], capture_output=True, text=True)
    if r.returncode != 0:
        raise UserError(f"rt tasks: the native run of {binary} {' '.join(argv)} failed (exit {r.returncode}): "
                        f"{r.stderr.strip()}")
    return {f[1]: [int(a, 16) for a in f[3:]] for f in (ln.split() for ln in r.stdout.splitlines())
            if f and f[0] == "task"}


def fig6_1_real(quick: bool) -> dict[str, float]:
    """Fig. 6.1 (§6.0.5) with the real allocators: two tasks allocate 32 pages each (glibc
    malloc(4096), or tlb_malloc with T1 in colors 0-7 and T2 in 8-15); mappings of the 64 pages
    per L1 DTLB set (16 sets: bits 12-15), most and mean over 5 native runs with randomization on.
    `quick` changes nothing: 10 runs of a program that allocates and exits."""
    from tlblab.seeds.s003_tlb_coloring import rt_capture as rc

    binary = rc.build()
    sets = 16
    out: dict[str, float] = {}
    for case, colors in (("malloc", ((), ())), ("tlb", (tuple(range(8)), tuple(range(8, 16))))):
        tasks = [rc.Task("pages", 32, 32, 0, 2000, 100, colors=colors[0]),
                 rc.Task("pages", 32, 32, 0, 2000, 100, colors=colors[1])]
        per_run = []
        for run in range(5):
            pages = _native_task_pages(binary, rc.argv_of(case, tasks, 1, 1, 4, run))
            counts = [0] * sets
            for addrs in pages.values():
                for a in addrs:
                    counts[(a >> 12) % sets] += 1
            per_run.append(counts)
        most = [max(r[s] for r in per_run) for s in range(sets)]
        mean = [_mean([float(r[s]) for r in per_run]) for s in range(sets)]
        if case == "tlb":
            for s in range(sets):
                # most and mean are one row (the seed's tlb_malloc_max_avg): equal, or the row
                # shows the larger so a difference cannot hide
                out[f"tlb/set{s}"] = float(most[s]) if most[s] != mean[s] else mean[s]
        else:
            for s in range(sets):
                out[f"malloc/max/set{s}"] = float(most[s])
            out["malloc/avg/lowest"] = min(mean)
            out["malloc/avg/highest"] = max(mean)
            out["malloc/sets_over_four"] = float(sum(1 for m in most if m >= 5))
    return out


def fig6_3(quick: bool) -> dict[str, float]:
    """Fig. 6.3: cycles per job of T1 in the Fig. 6.2 task set (same set vs. different sets),
    five hyperperiods, full model; hyperperiod 1 left out as the seed's text does (warm-up).
    `quick` changes nothing: the runs take well under a second."""
    workload = "rt_same_diff_set:layout=0,hyperperiods=5"
    cycles: dict[str, dict[int, float]] = {}
    for case, assign in (("same", "same"), ("diff", "per_thread")):
        r = tlblab.simulate(XEON, workload, technique=f"tlb_coloring:assign={assign},first_color=1")
        jobs = r.job_frame()
        t1 = jobs[jobs["task"] == 0]
        cycles[case] = {int(j): float(c) for j, c in zip(t1["job"], t1["cycles"])}

    def gap(in_hyperperiod: range) -> float:
        # job k of hyperperiod h (1-based, 8 T1 jobs per 16 ms hyperperiod) is job 8(h-1)+k
        ks = [8 * (h - 1) + k for h in range(2, 6) for k in in_hyperperiod]
        return _mean([cycles["same"][k] - cycles["diff"][k] for k in ks])

    later = [c for j, c in cycles["diff"].items() if j > 8]
    return {"diff/T1/cycles": _mean(later), "gap/preempting": gap(range(1, 6)), "gap/after_t2": gap(range(6, 7)),
            "gap/undisturbed": gap(range(7, 9))}


def alg3(quick: bool) -> dict[str, float]:
    """Alg. 3 on the simulated Xeon: the pages that conflict with page 64 of a 65-page region,
    found by elimination with the seed's test (do the pages, accessed in turn, miss?), and the
    page-number bits they share. `quick` changes nothing: 65 runs of one small task."""
    from tlblab import rt

    base, passes = 0x4000_0000, 20  # base aligned far beyond any set-index period
    region = [base + i * 4096 for i in range(65)]
    conflict = region[64]

    def misses(pages: list[int]) -> int:
        r = rt.simulate_taskset(XEON, [rt.task("alg3", period=10_000_000, pages=pages, passes=passes)], jobs=1)
        jobs = r.job_frame()
        return int(jobs[jobs["job"] >= 1]["L1D_misses"].sum())

    keep = list(region)
    for p in region[:64]:
        trial = [q for q in keep if q != p]
        if misses(trial) > 0:  # the conflict page's set still overflows without p: p is not needed
            keep = trial
    assert conflict in keep
    vpns = [p >> 12 for p in keep]
    width = 7  # the region spans 65 pages: bits 0-6 of the page number vary within it
    shared = [b for b in range(width) if len({(v >> b) & 1 for v in vpns}) == 1]
    return {"conflict/pages": float(len(keep)),
            "conflict/misses_per_access": misses(keep) / (len(keep) * passes),
            "bits/count": float(len(shared)),
            "bits/lowest": float(12 + min(shared)) if shared else -1.0}


# ---------------------------------------------------------------------------------------------
# `tlblab isolate` on the real task sets, against the simulation's own attribution of each
# miss (issue 61): the replayed trace's pages make the task-set file (each task's data pages
# after its warm-up, given by address), the engine's miss log (`simulate(miss_log="L1D")`)
# says which set each miss fell in and whose fill had evicted the page.

REAL_ISOLATE_DIR = "isolate_real"


def real_taskset_doc(trace, tasks) -> dict:
    """The `tlblab isolate` task-set document of a replayed real task set: each task's data
    pages after its warm-up job (loads and stores of its thread, the code between jobs and the
    kernel's pages the replay adds included; `_native.trace_data_pages`), given by address,
    with Table 6.1's timing in ms, and its warm-up's pages in the order of their last touch
    (`warmup_order`: isolate replays it through the set's LRU); no separate noise (the process's and the kernel's pages are
    among the tasks' pages: a page two tasks share is one translation)."""
    import json

    from tlblab import _native

    pages = json.loads(_native.trace_data_pages(str(trace)))
    doc = {"machine": XEON, "level": "L1D", "reserved": 0, "task": []}
    for i, t in enumerate(tasks):
        jobs = [int(p) for p in pages["periodic"].get(str(i), [])]
        doc["task"].append({"name": f"T{i + 1}", "phase": t.phase_us / 1000, "period": t.period_us / 1000,
                            "exec": t.exec_us / 1000, "placement": "pages", "pages": jobs,
                            "warmup_pages": [int(p) for p in pages["warmup"].get(str(i), [])],
                            "warmup_order": [int(p) for p in pages["warmup_order"].get(str(i), [])]})
    return doc


def taskset_toml(doc: dict, comment: str) -> str:
    """A task-set document as the TOML `tlblab isolate` reads (pages in hex)."""
    lines = [f"# {comment}", f'machine = "{doc["machine"]}"', f'level = "{doc["level"]}"',
             f'reserved = {doc["reserved"]}', ""]
    for t in doc["task"]:
        lines += ["[[task]]", f'name = "{t["name"]}"', f'phase = {t["phase"]:g}', f'period = {t["period"]:g}',
                  f'exec = {t["exec"]:g}', f'placement = "{t["placement"]}"',
                  "pages = [" + ", ".join(hex(p) for p in t["pages"]) + "]",
                  ("warmup_order = [" + ", ".join(hex(p) for p in t["warmup_order"]) + "]" if "warmup_order" in t
                   else "warmup_pages = [" + ", ".join(hex(p) for p in t.get("warmup_pages", [])) + "]"), ""]
    return "\n".join(lines)


def attributed_misses(trace):
    """(job frame, miss frame) of a replayed task set with the L1 DTLB's misses logged."""
    r = tlblab.simulate(XEON, str(trace), os=REAL_OS, miss_log="L1D")
    return r.job_frame(), r.miss_frame()


def inter_task(misses):
    """The misses of the periodic jobs (job >= 1) whose page another task's fill had evicted."""
    m = misses[(misses["job"] >= 1) & (misses["evicted_by_thread"] >= 0)]
    return m[m["evicted_by_thread"] != m["thread"]]


def _write_real_isolate(name: str, doc: dict, comment: str, rep, attribution: str) -> None:
    from tlblab.files import atomic_write
    from tlblab.seeds.s003_tlb_coloring import rt_capture as rc

    d = rc.CACHE / REAL_ISOLATE_DIR
    d.mkdir(parents=True, exist_ok=True)
    atomic_write(d / f"{name}.toml", taskset_toml(doc, comment))
    atomic_write(d / f"{name}.txt", rep.text() + "\n\nsimulated (miss log):\n" + attribution + "\n")


def isolate_real(quick: bool) -> dict[str, float]:
    """`tlblab isolate` on the real Table 6.1 task sets (one native layout each; malloc with
    address-space randomization, tlb_malloc without, in the clean colors of
    real_noisy_set_mask), beside the simulation of the same replay with every L1 DTLB miss
    attributed to the page whose fill evicted it. Per set size and allocator: the sets where
    the simulation shows inter-task misses that isolate does not name, the sets it names with
    none, the (set, task, evicting task) triples whose tasks it does not name in that set, and
    for tlb_malloc the share of the misses after the warm-up that are traced to a page (its
    evictor, or its first touch). The task-set files and the reports land in
    out/seed003/isolate_real/ (`tlblab isolate FILE` reads them). `quick`: 2 hyperperiods."""
    from tlblab import isolation
    from tlblab.seeds.s003_tlb_coloring import rt_capture as rc

    hyper, jobs = (2, 4) if quick else (5, 8)
    mask = real_noisy_set_mask(quick)
    # The §6.0.6 procedure as the seed counts it, from the first job (see real_noisy_set_mask).
    out: dict[str, float] = {"noisy_mask": float(mask),
                             "noisy_mask_from_job1": float(real_noisy_set_mask(quick, from_job=1))}
    for n, rows in TABLE6_1_TIMING.items():
        alloc = -(-64 // n)
        colors = _colors_for([r[3] for r in rows], mask)
        for case in ("malloc", "tlb"):
            tasks = [rc.Task(TABLE6_1_KERNELS[i], alloc, used, ph, pe, ex, colors=colors[i])
                     for i, (ph, pe, ex, used) in enumerate(rows)]
            cap = rc.capture(case, tasks, jobs=jobs, repeat=2)
            native = rc.layouts(cap, 1, aslr=(case == "malloc"))[0]
            trace = rc.replay(cap, tasks, jobs, native, hyperperiods=hyper, tick_hz=rc.TICK_HZ, papi=rc.PAPI)
            doc = real_taskset_doc(trace, tasks)
            rep = isolation.isolate(doc)
            named = {c["set"]: set(c["pages"]) for c in rep.conflicts + rep.warmup_conflicts}
            _, misses = attributed_misses(trace)
            inter = inter_task(misses)
            seen = {int(s) for s in inter["set"]}
            k = f"{n}tasks/{case}"
            out[f"{k}/sim_sets_unnamed"] = float(len(seen - set(named)))
            out[f"{k}/named_sets_silent"] = float(len(set(named) - seen))
            out[f"{k}/named_sets"] = float(len(named))
            out[f"{k}/named_warmup_sets"] = float(len(rep.warmup_conflicts))
            out[f"{k}/sim_sets"] = float(len(seen))
            triples = {(int(s), int(a), int(b)) for s, a, b in zip(inter["set"], inter["thread"], inter["evicted_by_thread"])}
            out[f"{k}/pairs_unnamed"] = float(sum(1 for s, a, b in triples
                                                  if s not in named or not {f"T{a + 1}", f"T{b + 1}"} <= named[s]))
            # isolate's bound on each task's misses per job (-1: unbounded, a set the task
            # overflows alone), beside the replay's average and the seed's (issue 61's gap).
            for i in range(n):
                b = rep.bounds[f"T{i + 1}"]
                out[f"{k}/bound/T{i + 1}"] = -1.0 if b is None else float(b)
                out[f"{k}/pages/T{i + 1}"] = float(len(doc["task"][i]["pages"]))
            after = misses[misses["job"] >= 1]
            out[f"{k}/misses_after_warmup"] = float(len(after))
            out[f"{k}/inter_task_misses"] = float(len(inter))
            # A miss is traced when the log names the page whose fill evicted it, or it is the
            # page's first touch in the run (nothing had evicted it: no earlier miss of it).
            first = ~misses.duplicated(subset=["page"], keep="first")
            traced = (misses["evicted_by_thread"] >= 0) | first
            out[f"{k}/traced_share"] = float(traced[misses["job"] >= 1].mean()) if len(after) else 1.0
            lines = []
            for (s, a, b), cnt in sorted(inter.groupby(["set", "thread", "evicted_by_thread"]).size().items()):
                pages = inter[(inter["set"] == s) & (inter["thread"] == a) & (inter["evicted_by_thread"] == b)]
                pairs = sorted({(int(p), int(q)) for p, q in zip(pages["page"], pages["evicted_by_page"])})
                lines.append(f"  set {s}: T{a + 1} missed {cnt} times on pages T{b + 1}'s fills evicted: "
                             + ", ".join(f"{p:#x} by {q:#x}" for p, q in pairs[:6]) + (" ..." if len(pairs) > 6 else ""))
            if case == "tlb":
                for row in after.itertuples():
                    cause = (f"evicted by {row.evicted_by_page:#x} (T{row.evicted_by_thread + 1})"
                             if row.evicted_by_thread >= 0 else "first touch")
                    lines.append(f"  T{row.thread + 1} job {row.job}: set {row.set}, page {row.page:#x}: {cause}")
            _write_real_isolate(f"table6_1_{n}tasks_{case}", doc,
                                f"Seed 003 Table 6.1, {n} tasks, {case}: the real program's replayed data pages "
                                f"(tlblab.seeds.s003_tlb_coloring.experiments.isolate_real)",
                                rep, "\n".join(lines) or "  no inter-task misses")
    return out


def buffer_pages(cap, native: dict[str, int]) -> dict[int, set[int]]:
    """{task index: the pages its jobs' buffers occupy} in the replayed layout: the program's
    `task` lines of the capture (Valgrind's layout), moved as the replay moves every address."""
    from tlblab import _native
    from tlblab.seeds.s003_tlb_coloring import rt_capture as rc

    rel = rc.relocations(cap.anchors, native, rc.parse_maps(_native.trace_maps(str(cap.path))))
    out: dict[int, set[int]] = {}
    for line in cap.path.with_suffix(".anchors.txt").read_text().splitlines():
        f = line.split()
        if len(f) >= 3 and f[0] == "task":
            pages = set()
            for a in (int(x, 16) for x in f[3:]):
                d = next((dl for lo, hi, dl in rel if lo <= a < hi), 0)
                pages.add((a + d) & ~0xFFF)
            out[int(f[1][1:]) - 1] = pages
    return out


# Seed 003 §6.0.9: "When the number of tasks is increased beyond four, the task set could not be
# isolated from OS noise resulting in DTLB misses even for tlb_malloc." The seed gives no timing
# for its larger sets: Table 6.1's 4-task row with a fifth and sixth task of lower priority
# (longer periods; 2 pages each as the 4-task row's; phase 0 as its T4), each allocating
# ceil(64 / j) pages as Table 6.1's sets do, the kernels in Table 6.1's order again.
BEYOND_FOUR_EXTRA = [(0, 30000, 1600, 2), (0, 60000, 1600, 2)]


def beyond_four_real(quick: bool) -> dict[str, float]:
    """The real program with 4, 5 and 6 tasks (Table 6.1's 4-task row and BEYOND_FOUR_EXTRA)
    allocating with tlb_malloc in the clean colors of real_noisy_set_mask (randomization off,
    §6.0.6), replayed rate-monotonic with the L1 DTLB's misses logged: per set size, each task's
    average misses per job after the warm-up, the largest, and the share of those misses in
    which the page that missed or the page whose fill evicted it is not a tlb_malloc buffer
    (code's data, stacks, TLS, libc, the kernel's pages: what §6.0.9 says stock Linux gives no
    control over). 5 hyperperiods of 8 captured jobs (2 and 4 with `quick`)."""
    from tlblab.seeds.s003_tlb_coloring import rt_capture as rc

    hyper, jobs = (2, 4) if quick else (5, 8)
    mask = real_noisy_set_mask(quick)
    out: dict[str, float] = {"noisy_mask": float(mask)}
    for n in (4, 5, 6):
        rows = TABLE6_1_TIMING[4] + BEYOND_FOUR_EXTRA[:n - 4]
        alloc = -(-64 // n)
        colors = _colors_for([r[3] for r in rows], mask)
        tasks = [rc.Task(TABLE6_1_KERNELS[i % 4], alloc, used, ph, pe, ex, colors=colors[i])
                 for i, (ph, pe, ex, used) in enumerate(rows)]
        cap = rc.capture("tlb", tasks, jobs=jobs, repeat=2)
        native = rc.layouts(cap, 1, aslr=False)[0]
        trace = rc.replay(cap, tasks, jobs, native, hyperperiods=hyper, tick_hz=rc.TICK_HZ, papi=rc.PAPI)
        js, misses = attributed_misses(trace)
        avgs = []
        for t in range(n):
            mine = js[(js["task"] == t) & (js["job"] >= 1)]
            avgs.append(float(mine["L1D_misses"].mean()))
            out[f"{n}tasks/tlb/T{t + 1}"] = avgs[-1]
        out[f"{n}tasks/tlb/max_avg"] = max(avgs)
        buffers = set().union(*buffer_pages(cap, native).values())
        after = misses[misses["job"] >= 1]
        noise = [p not in buffers or (q >= 0 and q not in buffers)
                 for p, q in zip(after["page"], after["evicted_by_page"])]
        out[f"{n}tasks/tlb/misses_after_warmup"] = float(len(after))
        out[f"{n}tasks/tlb/noise_share"] = (sum(noise) / len(noise)) if noise else 0.0
    return out


# ---------------------------------------------------------------------------------------------
# Issue 87: the statements no reproduction above reads, in modules of their own (appendix_a.py:
# Figs. A.1-A.4; timing.py: §6.0.7's miss penalties and Fig. 6.3's first hyperperiod). Those
# modules import nothing from this one; what they share with it is passed in here.

from tlblab.seeds.s003_tlb_coloring import appendix_a as _appendix_a  # noqa: E402
from tlblab.seeds.s003_tlb_coloring import timing as _timing  # noqa: E402


def appendix_a(quick: bool) -> dict[str, float]:
    """Figs. A.1-A.4 (Appendix A.1) on the synthetic task set, tlb_malloc clear of the noisy sets."""
    return _appendix_a.appendix_a(quick, noisy_set_mask())


def appendix_a_real(quick: bool) -> dict[str, float]:
    """Figs. A.1-A.4 (Appendix A.1) on the real tasks, tlb_malloc clear of their noisy sets."""
    return _appendix_a.appendix_a_real(quick, real_noisy_set_mask(quick), _colors_for, _captured_jobs)


def miss_penalty(quick: bool) -> dict[str, float]:
    """§6.0.7's L1 and L2 DTLB miss penalties by the seed's procedure (timing.py)."""
    return _timing.miss_penalty(quick)


def fig6_3_first_hyperperiod(quick: bool) -> dict[str, float]:
    """Fig. 6.3's first hyperperiod against the later ones, T1's cycles per job (timing.py)."""
    return _timing.fig6_3_first_hyperperiod(quick)


# Issue 87: Appendix A.2's timing figures no reproduction above reads (appendix_a2.py: Fig. A.6,
# Figs. A.7-A.8, Figs. A.11-A.12).
from tlblab.seeds.s003_tlb_coloring import appendix_a2 as _appendix_a2  # noqa: E402


def appendix_a2_fig_a6(quick: bool) -> dict[str, float]:
    """Fig. A.6: T2's cycles per job in the same set / different set experiment (appendix_a2.py)."""
    return _appendix_a2.fig_a6(quick)


def appendix_a2_fig_a7_a8(quick: bool) -> dict[str, float]:
    """Figs. A.7-A.8: malloc vs. tlb_malloc with the writes at the pages' first bytes."""
    return _appendix_a2.fig_a7_a8(quick, NOISE, noisy_set_mask())


def appendix_a2_fig_a11_a12(quick: bool) -> dict[str, float]:
    """Figs. A.11-A.12: the statistics / bubble sort pair, malloc vs. tlb_malloc."""
    return _appendix_a2.fig_a11_a12(quick, NOISE, noisy_set_mask())
