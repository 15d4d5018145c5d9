"""Seed 003 Appendix A.1 (Figs. A.1-A.4): malloc vs. tlb_malloc with 16 of 32 pages written.

The same experiment as §6.0.8's Figs. 6.4-6.7 with the appendix's task set: "T1 (1ms, 2ms,
0.39 ms), T2 (0ms, 16ms, 7.8 ms). Each task initially allocates 32 pages and then randomly chooses
16 pages from the pool of 32 pages" (A.1). Ten runs, two hyperperiods, as the figures. The
experiments' registration is at the end of `experiments.py`, which passes in the noisy sets its
§6.0.6 procedure finds (this module imports nothing of it: the package has no import cycles).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import tlblab

XEON = "xeon-e5-2650"
# Appendix A.1's task set (phase, period, execution in µs; pages allocated, pages written).
A1_TASKS = [(1000, 2000, 390, 32, 16), (0, 16000, 7800, 32, 16)]
# T1 runs 8 jobs a 16 ms hyperperiod: jobs 1-8 are hyperperiod 1, 9-16 hyperperiod 2.
T1_JOBS_PER_HYPERPERIOD = 8


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def sample_sd(xs: list[float]) -> float:
    if len(xs) < 2 or min(xs) == max(xs):
        return 0.0  # identical runs: exactly 0, not the rounding of their mean
    m = mean(xs)
    return (sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) ** 0.5


def numbers(case: str, runs_jobs: Iterable) -> dict[str, float]:
    """Figs. A.1-A.4's numbers for `case` ("malloc" or "tlb") from each run's job frame: T1's
    average misses at each of its 16 jobs (two hyperperiods), the mean of jobs 1-6 of each
    hyperperiod (the text's "jobs 1-6 of T1 have about 7 misses"), each task's mean and largest
    misses per job after the warm-up (job 0), and the spread of each task's per-run means."""
    out: dict[str, float] = {}
    per_job: dict[tuple[int, int], list[float]] = {}
    run_means: dict[int, list[float]] = {1: [], 2: []}
    for jobs in runs_jobs:
        for t in (1, 2):
            js = jobs[(jobs["task"] == t - 1) & (jobs["job"] >= 1)]
            run_means[t].append(float(js["L1D_misses"].mean()))
            for j, m in zip(js["job"], js["L1D_misses"]):
                per_job.setdefault((t, int(j)), []).append(float(m))
    n = T1_JOBS_PER_HYPERPERIOD
    for j in range(1, 2 * n + 1):
        out[f"{case}/T1/job{j}"] = mean(per_job.get((1, j), []))
    for h in (1, 2):
        out[f"{case}/T1/hp{h}/jobs1_6"] = mean([out[f"{case}/T1/job{(h - 1) * n + k}"] for k in range(1, 7)])
    for t in (1, 2):
        allm = [m for (tt, _), ms in per_job.items() if tt == t for m in ms]
        out[f"{case}/T{t}/mean"] = mean(allm)
        out[f"{case}/T{t}/max"] = max(allm) if allm else 0.0
        out[f"{case}/T{t}/run_sd"] = sample_sd(run_means[t])
    return out


def appendix_a(quick: bool, noisy_mask: int) -> dict[str, float]:
    """Figs. A.1-A.4 on the synthetic task set: rt_malloc_vs_tlb_malloc's variant=1 (Appendix
    A.1's timing, 16 of 32 pages written) with the OS noise model, glibc malloc (layout=3,
    randomization on) or tlb_malloc avoiding `noisy_mask` (layout=1); 10 runs of two
    hyperperiods (3 with `quick`)."""
    runs = 3 if quick else 10
    out: dict[str, float] = {"noisy_mask": float(noisy_mask)}
    # The OS noise as experiments.NOISE has it: the noise pages, Linux 2.6.32's 1000 Hz tick and
    # PAPI's reads around every job.
    base = "rt_malloc_vs_tlb_malloc:variant=1,hyperperiods=2,noise=1,tick_hz=1000,papi=1"
    for case, lay in (("malloc", "layout=3,aslr=1"), ("tlb", f"layout=1,avoid_sets={noisy_mask}")):
        frames = (tlblab.simulate(XEON, f"{base},{lay}", seed=seed).job_frame() for seed in range(runs))
        out.update(numbers(case, frames))
    return out


def appendix_a_real(quick: bool, noisy_mask: int, colors_for: Callable[[list[int], int], list[tuple[int, ...]]],
                    captured_jobs: Callable) -> dict[str, float]:
    """Figs. A.1-A.4 on the real tasks (runtime/bench/seed003/rt_tasks.c captured under
    Valgrind, replayed rate-monotonic: tlblab.seeds.s003_tlb_coloring.rt_capture), as
    fig6_4_8_real with the appendix's task set: a run is the program's seed (its random choice
    of 16 pages) and a native layout (randomization on for malloc, off for tlb_malloc, §6.0.6);
    tlb_malloc in the colors `colors_for` gives clear of `noisy_mask` (the real program's noisy
    sets); 10 runs of two hyperperiods (3 with `quick`)."""
    from tlblab.seeds.s003_tlb_coloring import rt_capture as rc

    runs, jobs = (3, 4) if quick else (10, 8)
    out: dict[str, float] = {"noisy_mask": float(noisy_mask)}
    colors = colors_for([t[4] for t in A1_TASKS], noisy_mask)
    for case in ("malloc", "tlb"):
        tasks = [rc.Task("pages", alloc, used, ph, pe, ex, colors=colors[i])
                 for i, (ph, pe, ex, alloc, used) in enumerate(A1_TASKS)]

        runs_jobs = (captured_jobs(r) for r in rc.replayed_runs(case, tasks, jobs, runs))
        out.update(numbers(case, runs_jobs))
    return out
