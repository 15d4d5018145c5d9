"""Seed 001's run seconds: how long each run took when last made here, so that `prefetch_runs`
(runs.py) hands the runs out longest first. They only order the runs and never enter a result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tlblab import paths


# The wall seconds each run took when last made here, by `_job_digest`: `prefetch_runs` hands
# the runs out longest first (so that no process is left with a long run at the end while the
# other idles) and writes what it measured back. Without this machine's file, the seconds
# measured on another (`RUN_SECONDS_SHIPPED`: an AMD EPYC family 25 model 17 KVM guest, 2
# vCPUs); they only order the runs and never enter a result. A run the shipped file does not
# know counts as the longest, so a stale file sends a fresh machine's short runs first and
# leaves its longest for the end: refresh it from `RUN_SECONDS` after a full `tlblab reproduce
# 001` when the runs change (on 2026-11-30 it knew 78 of the 140 runs and none of power.py's 15).
RUN_SECONDS = paths.out("checkpoints", "run_seconds.json")
RUN_SECONDS_SHIPPED = Path(__file__).with_name("run_seconds.json")


def _job_digest(job: tuple[Any, ...]) -> str:
    from tlblab.files import content_digest

    return content_digest(repr(job))


def _read_seconds(path: Path) -> dict[str, float]:
    import json

    try:
        return {k: float(v) for k, v in json.loads(path.read_text())["seconds"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}  # none, or not ours: the runs go in the order they were gathered


def run_costs(jobs: dict[tuple[Any, ...], tuple[Any, ...]]) -> dict[tuple[Any, ...], float]:
    """Each run's seconds when last made here; a run never timed counts as the longest (better
    early than last). `tlblab reproduce`'s scheduler orders seed 001's runs by them too."""
    known = {**_read_seconds(RUN_SECONDS_SHIPPED), **_read_seconds(RUN_SECONDS)}
    top = max(known.values(), default=0.0)
    return {key: known.get(_job_digest(job), top) for key, job in jobs.items()}


def _longest_first(jobs: dict[tuple[Any, ...], tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The keys of `jobs`, the runs known to take longest first (`run_costs`)."""
    cost = run_costs(jobs)
    return sorted(jobs, key=lambda key: -cost[key])  # stable: ties keep the gathered order


def _write_seconds(jobs: dict[tuple[Any, ...], tuple[Any, ...]], seconds: dict[tuple[Any, ...], float]) -> None:
    import json

    from tlblab.files import atomic_write

    known = _read_seconds(RUN_SECONDS)
    known.update({_job_digest(jobs[key]): round(s, 1) for key, s in seconds.items()})
    RUN_SECONDS.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(RUN_SECONDS, json.dumps({"seconds": dict(sorted(known.items()))}, indent=0) + "\n")
