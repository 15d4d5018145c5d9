"""Seed 003's measurements in cycles that no other reproduction reads: §6.0.7's L1 and L2 DTLB
miss penalties and Fig. 6.3's first hyperperiod.

The experiments are registered at the end of `experiments.py`.
"""

from __future__ import annotations

import tlblab
from tlblab import rt
from tlblab.seeds.s003_tlb_coloring.appendix_a import mean as _mean, sample_sd as _sd  # one definition

XEON = "xeon-e5-2650"
# The Xeon E5-2650's L1 DTLB (seed 003 Ch. 5): 16 sets of 4 ways, the geometry tlb_malloc colors.
GEOMETRY = dict(sets=16, ways=4, reserved=0, periods=8)  # an arena of 8 periods: 8 pages a color
PAGES = 5          # §6.0.7: "we map five pages to the same DTLB set" (and, for the L2, to different ones)
PASSES = 100       # cyclic passes of the L1 loop (the seed does not say how many)
RUNS = 10          # §6.0.7: "Averaging over 10 runs"
PERIOD = 10_000_000  # cycles: one job at a time, nothing preempts it


def _job_cycles(pages: list[int], passes: int, seed: int) -> tuple[float, float]:
    """(cycles of the warm-up job 0, cycles of job 1) of one task touching `pages` in turn,
    `passes` times a job, alone on the core."""
    r = rt.simulate_taskset(XEON, [rt.task("penalty", period=PERIOD, pages=pages, passes=passes)],
                            jobs=1, seed=seed)
    jobs = r.job_frame()
    c = {int(j): float(x) for j, x in zip(jobs["job"], jobs["cycles"])}
    return c[0], c[1]


def miss_penalty(quick: bool) -> dict[str, float]:
    """§6.0.7's procedure on the simulated Xeon, run by run (10 runs, the seed's; 3 with `quick`;
    a run is the engine's seed, which places the frames). The L1 DTLB miss penalty: five pages
    of one color, warmed once, then accessed cyclically (every access misses the L1 DTLB),
    cycles per access less the same loop over five addresses of one page (the seed's "dual loop
    timing" overhead: the memory reference itself). The L2 DTLB miss penalty: five pages of
    five colors, the warm-up loop's cycles per page (each its first touch) less the same
    overhead. Each the mean over the runs, with the runs' standard deviation."""
    runs = 3 if quick else RUNS
    same = rt.colored_pages(GEOMETRY, color=1, count=PAGES)
    different = [rt.colored_pages(GEOMETRY, color=c, count=1)[0] for c in range(1, PAGES + 1)]
    array = [same[0] + 64 * i for i in range(PAGES)]  # five elements of one array, one page
    l1, l2 = [], []
    for seed in range(runs):
        _, cyclic = _job_cycles(same, PASSES, seed)
        _, overhead = _job_cycles(array, PASSES, seed)
        per_overhead = overhead / (PAGES * PASSES)
        l1.append(cyclic / (PAGES * PASSES) - per_overhead)
        warm, _ = _job_cycles(different, 1, seed)
        l2.append(warm / PAGES - per_overhead)
    return {"l1/penalty": _mean(l1), "l1/sd": _sd(l1), "l2/penalty": _mean(l2), "l2/sd": _sd(l2)}


def fig6_3_first_hyperperiod(quick: bool) -> dict[str, float]:
    """Fig. 6.3's first hyperperiod: T1's mean cycles per job in hyperperiod 1 (jobs 1-8) and in
    hyperperiods 2-5 (jobs 9-40), same set and different sets, as 003/fig6_3 runs them
    (rt_same_diff_set, the tlb_coloring technique, full model). `quick` changes nothing: the runs
    take well under a second."""
    workload = "rt_same_diff_set:layout=0,hyperperiods=5"
    out: dict[str, float] = {}
    for case, assign in (("same", "same"), ("diff", "per_thread")):
        r = tlblab.simulate(XEON, workload, technique=f"tlb_coloring:assign={assign},first_color=1")
        jobs = r.job_frame()
        t1 = jobs[jobs["task"] == 0]
        cycles = {int(j): float(c) for j, c in zip(t1["job"], t1["cycles"])}
        out[f"{case}/hp1"] = _mean([cycles[j] for j in range(1, 9)])
        out[f"{case}/later"] = _mean([c for j, c in cycles.items() if j > 8])
        # Ours only: the first job of each hyperperiod (the hardware's warm-up shows most there).
        out[f"{case}/job1"] = cycles[1]
        out[f"{case}/job9_to_33"] = _mean([cycles[j] for j in (9, 17, 25, 33)])
    return out
