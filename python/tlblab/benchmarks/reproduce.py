"""Whole reproductions: where `tlblab reproduce`'s seconds go, by seed, reproduction and phase.

Runs every reproduction at its quick size (the full size takes tens of minutes: `tlblab
reproduce --profile` measures it and writes `timings.json`, shown here as `last_full` when
`out/reproduce/timings.json` holds one) on the scheduler's two processes and, without
`--quick`, on one as well, the CSVs written to a temporary directory and compared: the same
bytes for both (`identical`), or the benchmark says which differ. Per seed and in total: wall
and CPU seconds (user + system of every process) and the load average around the run (on a
loaded host wall seconds mean little; CPU seconds more); per phase (capture, generation,
simulation, analysis, Python: `tlblab.phases`) the CPU seconds summed over the reproductions. A
benchmark: it prints numbers, it never fails.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

NAME = "reproduce"

# Where a full-size `tlblab reproduce` writes by default (its --out).
LAST_FULL = Path("out/reproduce")


def run(quick: bool = False) -> dict:
    from tlblab import reproduce_timings as rt

    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="tlblab-bench-reproduce-") as d:
        for jobs in ((2,) if quick else (2, 1)):
            out[f"jobs_{jobs}"] = _summary(_run(Path(d) / f"jobs{jobs}", jobs))
        if not quick:
            out["identical"] = _same_csv(Path(d) / "jobs2", Path(d) / "jobs1")
    last = LAST_FULL / rt.TIMINGS
    if last.is_file():
        try:
            t = json.loads(last.read_text())
            if not t.get("quick"):
                out["last_full"] = _summary(t)
        except (ValueError, KeyError, TypeError):
            out["last_full"] = f"{last}: not a timings record"
    return out


def _run(out: Path, jobs: int) -> dict:
    from tlblab import phases, reproduce as rp, reproduce_timings as rt

    reps = rp.select(None)
    seeds_done: list[dict] = []
    load0 = list(os.getloadavg())
    start = phases.clock()
    outcomes = rp.run_all(reps, True, jobs=jobs, on_seed=seeds_done.append)
    end = phases.clock()
    rp.write(outcomes, out)
    return rt.timings_record(outcomes, seeds_done, quick=True, jobs=jobs, wall=end[0] - start[0],
                             cpu=end[1] - start[1], load=(load0, list(os.getloadavg())))


def _summary(t: dict) -> dict:
    from tlblab.phases import ORDER

    by_phase = {p: round(sum(r.get("phases", {}).get(p, {}).get("cpu", 0.0) for r in t["reproductions"]), 1)
                for p in ORDER}
    return {"size": "quick" if t["quick"] else "full", "jobs": t["jobs"], "host": t["host"],
            "wall_s": round(t["wall"], 1), "cpu_s": round(t["cpu"], 1), "load_average": t["load_average"],
            "peak_rss_mib": t["peak_rss_mib"],
            "seeds": {s["seed"]: {"wall_s": round(s["wall"], 1), "cpu_s": round(s["cpu"], 1)} for s in t["seeds"]},
            "phase_cpu_s": by_phase,
            "slowest": [{"reproduction": r["reproduction"], "cpu_s": round(r.get("cpu", 0.0), 1)}
                        for r in sorted(t["reproductions"], key=lambda r: -r.get("cpu", 0.0))[:5]]}


def _same_csv(a: Path, b: Path) -> bool | list[str]:
    """True when every CSV under `a` and `b` is the same bytes, but `summary.csv`'s seconds (wall
    time); else the files that differ."""
    differ = []
    names = sorted({p.relative_to(a) for p in a.rglob("*.csv")} | {p.relative_to(b) for p in b.rglob("*.csv")})
    for name in names:
        x, y = a / name, b / name
        if not (x.is_file() and y.is_file()):
            differ.append(str(name))
        elif name == Path("summary.csv"):
            if _without_seconds(x) != _without_seconds(y):
                differ.append(str(name))
        elif x.read_bytes() != y.read_bytes():
            differ.append(str(name))
    return differ or True


def _without_seconds(path: Path) -> list[list[str]]:
    import csv

    rows = list(csv.reader(path.open()))
    if not rows or "seconds" not in rows[0]:
        return rows
    k = rows[0].index("seconds")
    return [r[:k] + r[k + 1:] for r in rows]
