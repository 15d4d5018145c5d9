"""Seed 003 (Panchamukhi 2014, TLB coloring): the experiments behind its reproductions.

Each function returns {row key: our value} for `python/tlblab/reproductions/003/<id>.toml`.
"""

from __future__ import annotations

import tlblab

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
