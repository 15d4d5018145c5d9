"""The study's miss-curve section: for each workload of the engine's table, the misses of every
size of the machine's first data TLB level (fully associative LRU, exact, one pass), and of its
second data level with the first fixed at the preset's geometry: the curves a user sizing a TLB
reads (issue "Miss curves for every TLB size in one pass"; docs/curves.md).

The exact curves have a point per size (65,536 of them); the page and its data keep the sizes
on a geometric grid (four points per doubling, plus the preset's own size), which is what a
log-scaled figure can show.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any


@dataclass
class WorkloadCurves:
    """One workload's curves: `points` rows of (level, entries, misses, miss_ratio, references)."""

    workload: str
    machine: str
    levels: list[str]       # the levels drawn: first data level, then the second (first fixed)
    preset_entries: dict    # level -> the preset's entries, marked on the figure
    points: list[dict[str, Any]]
    seconds: float
    error: str = ""


def grid(max_entries: int, keep: set[int] = frozenset()) -> list[int]:
    """1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 13, 16, ...: about four sizes per doubling up to
    `max_entries`, plus the sizes in `keep`."""
    out, k = set(keep), 0
    while True:
        n = round(2 ** (k / 4))
        if n > max_entries:
            break
        out.add(n)
        k += 1
    return sorted(x for x in out if 1 <= x <= max_entries)


def data_levels(machine: str) -> list[dict[str, Any]]:
    """The machine's data TLB levels (data or unified), first level first."""
    import tlblab

    tlbs = tlblab.machine_config(machine)["tlb"]
    return sorted((t for t in tlbs if t["kind"] != "instr"), key=lambda t: t["level"])


def workload_curves(machine: str, workload: str, max_entries: int = 65536) -> WorkloadCurves:
    """The curves of one workload; an error (a workload the curve cannot read) is kept, named."""
    from tlblab.curve import curve_json

    t0 = time.monotonic()
    levels = data_levels(machine)[:2]
    out = WorkloadCurves(workload, machine, [t["name"] for t in levels],
                         {t["name"]: t["entries"] for t in levels}, [], 0.0)
    try:
        for t in levels:
            # The curve's columns as lists (`curve_json`), not `tlblab.curve`'s DataFrame: of its
            # 65,536 points a level the page keeps about 65, and building the frame took more
            # than the keeping (issue 89). miss_ratio is misses / references, as the frame's.
            data = curve_json(workload, machine=machine, level=t["name"], sets=None,
                              max_entries=max_entries, groups=False)
            fully = [(g["sets"][i] * g["ways"][i], g["misses"][i], g["references"])
                     for g in data["groups"] if g["name"] == "all"
                     for i in range(len(g["sets"])) if g["sets"][i] == 1]
            keep = set(grid(int(max(e for e, _, _ in fully)), {int(t["entries"])}))
            for entries, misses, refs in fully:
                if entries in keep:
                    out.points.append({"workload": workload, "machine": machine, "level": t["name"],
                                       "entries": int(entries), "misses": int(misses),
                                       "miss_ratio": misses / refs if refs else 0.0, "references": int(refs)})
    except ValueError as e:
        out.error = str(e)
    out.seconds = time.monotonic() - t0
    return out
