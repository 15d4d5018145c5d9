"""Where `tlblab reproduce`'s seconds go: per seed and per reproduction, wall and CPU seconds, and
each reproduction's phases (`tlblab.phases`: capture, generation, simulation, analysis, Python),
written as `timings.json` beside the reproductions' CSVs and shown by `tlblab reproduce --profile`
and `tlblab bench reproduce`. The order the scheduler hands the seeds out in reads it back
(`last_seconds`).
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any

from tlblab import phases
from tlblab.files import atomic_write

TIMINGS = "timings.json"


def timings_record(outcomes: list[Any], seeds_done: list[dict[str, Any]], *, quick: bool, jobs: int,
                   wall: float, cpu: float, load: tuple[list[float], list[float]]) -> dict[str, Any]:
    """Where a `run_all`'s seconds went (`tlblab reproduce` writes it as TIMINGS beside its CSVs,
    `tlblab bench reproduce` shows it): the whole run's wall and CPU seconds (CPU: user + system,
    of every process, workers included), the load average before and after (the machine's other
    work: wall seconds mean little on a loaded host, CPU seconds more), and per seed (in seed
    order) and per reproduction (in run order) wall, CPU and, for each reproduction, its phases
    (`tlblab.phases`). Not a CSV: the CSVs are the reproductions' numbers, the same on every run."""
    return {"quick": quick, "jobs": jobs, "host": cpu_model() or platform.machine(), "cpus": os.cpu_count(),
            "wall": round(wall, 3), "cpu": round(cpu, 3), "load_average": {"before": load[0], "after": load[1]},
            "peak_rss_mib": {"parent": phases.peak_rss_mib()["self"],
                             "largest_worker": max([s["peak_rss_mib"]["self"] for s in seeds_done] +
                                                   [s["peak_rss_mib"]["children"] for s in seeds_done] + [0.0])},
            "seeds": sorted(seeds_done, key=lambda s: s["seed"]),
            "reproductions": [{"reproduction": o.reproduction.name, **o.timing} for o in outcomes]}


def cpu_model() -> str:
    """The host's CPU model as /proc/cpuinfo names it, or "" where it names none (the timings
    and `tlblab bench`'s records say which machine their seconds are from)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def write_timings(record: dict[str, Any], out: Path) -> Path:
    """`timings_record`'s record as `out`/TIMINGS (whole or not at all)."""
    path = Path(out) / TIMINGS
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(record, indent=1) + "\n")
    return path


def last_seconds(out: Path, quick: bool) -> dict[str, float]:
    """Each seed's CPU seconds ("001") and each reproduction's ("001/at_scale", its own, without
    the runs its seed prepared) in the TIMINGS under `out` of a last run of the same size (empty
    when there is none or it cannot be read: the order then falls back to
    `tlblab.reproduce.SEED_SECONDS`; a wrong order costs time, never a number)."""
    try:
        data = json.loads((Path(out) / TIMINGS).read_text())
        if bool(data["quick"]) != quick:
            return {}
        return {**{str(s["seed"]): float(s["cpu"]) for s in data["seeds"]},
                **{str(r["reproduction"]): float(r["cpu"]) for r in data["reproductions"] if "cpu" in r}}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def format_timings(t: dict[str, Any], top: int = 12) -> str:
    """The record as text: the whole, each seed, and the `top` reproductions by CPU seconds with
    their phases' CPU seconds."""
    from tlblab.report_text import format_table

    la = t["load_average"]
    lines = [f"{'quick' if t['quick'] else 'full'} size, {t['jobs']} job(s) on {t['cpus']} CPUs ({t['host']}): "
             f"{t['wall']:.1f} s wall, {t['cpu']:.1f} s CPU; load average {la['before'][0]:.2f} before, "
             f"{la['after'][0]:.2f} after; peak memory {t['peak_rss_mib']['parent']:.0f} MiB (this process), "
             f"{t['peak_rss_mib']['largest_worker']:.0f} MiB (the largest worker or child)"]
    lines.append(format_table(["seed", "reproductions", "wall s", "CPU s", "shared runs CPU s"],
                              [[s["seed"], s["reproductions"], f"{s['wall']:.1f}", f"{s['cpu']:.1f}",
                                f"{sum(p['timing']['cpu'] for p in s['prepared']):.1f}"] for s in t["seeds"]]))
    names = [p for p in phases.ORDER]
    shared = [(s["seed"], p) for s in t["seeds"] for p in s["prepared"] if p.get("runs")]
    if shared:  # the runs a seed prepared for its reproductions, by phase, and the longest of them
        lines.append(format_table(["seed", "shared runs", "wall s", "CPU s", *[f"{p} CPU s" for p in names]],
                                  [[seed, p["runs"], f"{p['timing']['wall']:.1f}", f"{p['timing']['cpu']:.1f}",
                                    *[f"{p['timing']['phases'].get(n, {}).get('cpu', 0.0):.1f}" for n in names]]
                                   for seed, p in shared]))
        each = sorted(((seed, r) for seed, p in shared for r in p.get("each", [])), key=lambda x: -x[1]["cpu"])
        if each:
            lines.append(format_table(["seed", "shared run", "wall s", "CPU s"],
                                      [[seed, r["what"][:90], f"{r['wall']:.1f}", f"{r['cpu']:.1f}"]
                                       for seed, r in each[:top]]))
    reps = sorted(t["reproductions"], key=lambda r: -r.get("cpu", 0.0))[:top]
    lines.append(format_table(["reproduction", "wall s", "CPU s", *[f"{p} CPU s" for p in names]],
                              [[r["reproduction"], f"{r.get('wall', 0):.1f}", f"{r.get('cpu', 0):.1f}",
                                *[f"{r.get('phases', {}).get(p, {}).get('cpu', 0.0):.1f}" for p in names]]
                               for r in reps]))
    return "\n".join(lines)
