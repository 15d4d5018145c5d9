"""Seed 003 Appendix A.2 (timing results, Figs. A.6-A.8 and A.11-A.12): execution cycles per job.

Figs. A.5 and A.9 are Figs. 6.3 and 6.8 again (003/fig6_3, 003/fig6_3_hp1, 003/fig6_4_8); this
module reads the rest:

- Fig. A.6: T2's cycles per job in §6.0.8's same set / different set experiment: "the first job
  tends to take longer than subsequent ones".
- Figs. A.7-A.8: §6.0.8's malloc vs. tlb_malloc experiment as it was "originally set up such that
  we always access the first four bytes of each page. This results in L1 data cache conflicts":
  T1's cycles per job "fluctuate for both malloc and tlb_malloc".
- Figs. A.11-A.12: "a similar experiment using the Malardalen benchmarks for the following task
  set: T1 (1ms, 2ms, 0.45ms), T2 (0 ms, 54ms, 20ms). Each task accesses 14 pages. T1 and T2
  represent the statistics and the bubble sort benchmarks": "The execution cycles of jobs vary
  for both malloc and tlb_malloc".

The experiments' registration is at the end of `experiments.py`, which passes in the noise
parameters and the noisy sets its §6.0.6 procedure finds (this module imports nothing of it).
"""

from __future__ import annotations

import tlblab
from tlblab.seeds.s003_tlb_coloring.appendix_a import mean, sample_sd

XEON = "xeon-e5-2650"
# Where the synthetic jobs' accesses fall in each page (the rt task-set workloads' `offsets`):
# "first" = the first four bytes of every page (Appendix A.2's original set-up), "spread" = each
# page at its own L1 data-cache set (§6.0.8's modification, Figs. 6.8 and A.9).
OFFSETS = {"first": 0, "spread": 1}


def _cv(xs: list[float]) -> float:
    m = mean(xs)
    return sample_sd(xs) / m if m else 0.0


def fig_a6(quick: bool) -> dict[str, float]:
    """Fig. A.6: T2's cycles per job over five hyperperiods (jobs 1-5) in §6.0.8's same set /
    different set experiment, as 003/fig6_3 runs it (rt_same_diff_set, the tlb_coloring technique
    placing both tasks in color 1 or T1 in color 1 and T2 in color 2), with the accesses at the
    pages' first bytes ("first", the seed's set-up) and at spread offsets ("spread": 003/fig6_3's
    own runs). Per case: T2's job 1, the mean of jobs 2-5, their ratio, the preemptions of each
    T2 job (T1 jobs starting inside it). `quick` changes nothing: the runs take well under a
    second."""
    out: dict[str, float] = {}
    for off, o in OFFSETS.items():
        workload = f"rt_same_diff_set:layout=0,hyperperiods=5,offsets={o}"
        for case, assign in (("same", "same"), ("diff", "per_thread")):
            r = tlblab.simulate(XEON, workload, technique=f"tlb_coloring:assign={assign},first_color=1")
            jobs = r.job_frame()
            t1, t2 = jobs[jobs["task"] == 0], jobs[(jobs["task"] == 1) & (jobs["job"] >= 1)]
            cycles = {int(j): float(c) for j, c in zip(t2["job"], t2["cycles"])}
            k = f"{off}/{case}/T2"
            out[f"{k}/job1"] = cycles[1]
            out[f"{k}/later"] = mean([c for j, c in cycles.items() if j > 1])
            out[f"{k}/job1_over_later"] = cycles[1] / out[f"{k}/later"]
            out[f"{k}/misses_job1"] = float(t2[t2["job"] == 1]["L1D_misses"].iloc[0])
            out[f"{k}/misses_later"] = mean([float(m) for j, m in zip(t2["job"], t2["L1D_misses"]) if j > 1])
            out[f"{k}/preemptions"] = mean([float(((t1["start"] > s) & (t1["start"] < e)).sum())
                                            for s, e in zip(t2["start"], t2["end"])])
    return out


def _within_run_cv(frames, task: int, from_job: int) -> tuple[float, float, float]:
    """Over the runs (one job frame each): the mean of each run's coefficient of variation of
    `task`'s cycles per job (jobs `from_job` on), the mean cycles per reference, and the mean L1
    DTLB misses per job."""
    cvs, per_ref, misses = [], [], []
    for jobs in frames:
        js = jobs[(jobs["task"] == task) & (jobs["job"] >= from_job)]
        cycles = [float(c) for c in js["cycles"]]
        cvs.append(_cv(cycles))
        per_ref.append(sum(cycles) / float(js["references"].sum()))
        misses.append(float(js["L1D_misses"].mean()))
    return mean(cvs), mean(per_ref), mean(misses)


def fig_a7_a8(quick: bool, noise: str, noisy_mask: int) -> dict[str, float]:
    """Figs. A.7-A.8: §6.0.8's malloc vs. tlb_malloc experiment (rt_malloc_vs_tlb_malloc,
    variant 0: T1 (1, 2, 0.385 ms), T2 (0, 16, 7.38 ms), 14 of 32 pages written) with the OS
    noise `noise`, glibc malloc (layout=3, randomization on) or tlb_malloc avoiding `noisy_mask`
    (layout=1), as 003/fig6_4_8 runs it, with the writes at the pages' first bytes ("first",
    Figs. A.7-A.8) and at spread offsets ("spread": 003/fig6_4_8's own runs, Figs. 6.8 and A.9);
    10 runs of two hyperperiods (3 with `quick`). Per case: T1's within-run coefficient of
    variation of its cycles per job from job 2 on (as 003/fig6_4_8 skips job 1), its cycles per
    reference and its L1 DTLB misses per job; T2's the same from job 1 on (it has two jobs)."""
    runs = 3 if quick else 10
    out: dict[str, float] = {"noisy_mask": float(noisy_mask)}
    for off, o in OFFSETS.items():
        _both_allocators(out, f"rt_malloc_vs_tlb_malloc:hyperperiods=2,{noise},offsets={o}", noisy_mask, runs,
                         f"{off}/")
    return out


def _both_allocators(out: dict[str, float], base: str, noisy_mask: int, runs: int, prefix: str = "") -> None:
    """`runs` runs of the task set `base` under glibc malloc (layout=3, randomization on) and
    tlb_malloc avoiding `noisy_mask` (layout=1): per allocator T1's within-run coefficient of
    variation of its cycles per job from job 2 on, its cycles per reference and its L1 DTLB
    misses per job, T2's the same from job 1 on; then T1's tlb_malloc CV over its malloc CV. Into
    `out`, each key after `prefix`."""
    for case, lay in (("malloc", "layout=3,aslr=1"), ("tlb", f"layout=1,avoid_sets={noisy_mask}")):
        frames = [tlblab.simulate(XEON, f"{base},{lay}", seed=seed).job_frame() for seed in range(runs)]
        for t, from_job in ((1, 2), (2, 1)):
            cv, per_ref, misses = _within_run_cv(frames, t - 1, from_job)
            k = f"{prefix}{case}/T{t}"
            out[f"{k}/cycles_cv"] = cv
            out[f"{k}/cycles_per_ref"] = per_ref
            out[f"{k}/misses"] = misses
    out[f"{prefix}T1/cv_tlb_over_malloc"] = (out[f"{prefix}tlb/T1/cycles_cv"] / out[f"{prefix}malloc/T1/cycles_cv"]
                                             if out[f"{prefix}malloc/T1/cycles_cv"] else 0.0)


def fig_a11_a12(quick: bool, noise: str, noisy_mask: int) -> dict[str, float]:
    """Figs. A.11-A.12: Appendix A.2's Malardalen pair (rt_table6_1's variant 1: T1 statistics
    (1, 2, 0.45 ms), T2 bubble sort (0, 54, 20 ms), 14 pages each of 32 allocated; the kernels
    touch every 64-byte line of their pages), at 003/table6_1's rate (10,000 references per ms)
    with the OS noise `noise`, glibc malloc (layout=3, randomization on) or tlb_malloc avoiding
    `noisy_mask`; 5 runs of 5 hyperperiods (2 and 2 with `quick`), as 003/table6_1. Per case:
    T1's within-run coefficient of variation of its cycles per job from job 2 on, its cycles per
    reference and its L1 DTLB misses per job; T2's the same from job 1 on."""
    runs, hyper = (2, 2) if quick else (5, 5)
    out: dict[str, float] = {"noisy_mask": float(noisy_mask)}
    _both_allocators(out, f"rt_table6_1:tasks=2,variant=1,kernels=1,accesses_per_ms=10000,hyperperiods={hyper},{noise}",
                     noisy_mask, runs)
    return out
