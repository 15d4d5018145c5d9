"""Real-time task sets in the simulator (seed 003 §6): periodic tasks under preemptive
rate-monotonic scheduling on one core, with statistics per job, and page placement either
malloc-like (contiguous) or through libtlblab's coloring allocator (the simulator's port, proven
identical to the C).

    >>> import tlblab.rt as rt
    >>> g = dict(sets=16, ways=4, reserved=0, periods=4)          # Xeon E5-2650 L1 DTLB
    >>> t1 = rt.task("T1", period=20000, pages=rt.colored_pages(g, color=1, count=3), passes=50)
    >>> t2 = rt.task("T2", period=40000, pages=rt.colored_pages(g, color=2, count=3), passes=50)
    >>> r = rt.simulate_taskset("xeon-e5-2650", [t1, t2], jobs=8)
    >>> r.job_frame()
"""

from __future__ import annotations

import json
from typing import Any

from tlblab import _native, phases
from tlblab.sim import Result, _machine_arg

ARENA_BASE = 0x1000_0000  # where simulated colored arenas start (rounded down to a period)


def task(name: str, period: int, pages: list[int], passes: int = 1, phase: int = 0, deadline: int = 0) -> dict:
    """A periodic task: every job touches `pages` (virtual addresses) `passes` times."""
    return {"name": name, "phase": phase, "period": period, "deadline": deadline, "pages": list(pages),
            "passes": passes}


def contiguous_pages(base: int, count: int, page: int = 4096) -> list[int]:
    """Malloc-like placement: `count` consecutive pages from `base`."""
    return [base + i * page for i in range(count)]


def colored_pages(geometry: dict[str, int], color: int, count: int, base: int = ARENA_BASE) -> list[int]:
    """The first `count` distinct pages that successive `tlb_malloc(arena, 1500, color)` calls
    occupy in a fresh arena at `base` (two such allocations fit a 4 KiB slot)."""
    slot_shift = geometry.get("slot_shift", 12)
    period_bytes = geometry["sets"] << slot_shift
    base -= base % period_bytes
    offsets = _native.colored_offsets(geometry["sets"], geometry["ways"], geometry.get("reserved", 0),
                                      geometry.get("periods", 0), color, count * 2, 1500, slot_shift)
    pages: list[int] = []
    for off in offsets:
        p = (base + off) & ~((1 << slot_shift) - 1)
        if p not in pages:
            pages.append(p)
    if len(pages) < count:
        from tlblab.errors import UserError

        raise UserError(f"color {color} spans only {len(pages)} pages; asked for {count}")
    return pages[:count]


def simulate_taskset(machine: str | dict[str, Any], tasks: list[dict], jobs: int, *, seed: int = 0,
                     os: dict[str, Any] | None = None) -> Result:
    """Runs `tasks` for `jobs` jobs each (after a warm-up job 0) on the machine's first core."""
    spec, fmt = _machine_arg(machine)
    with phases.phase(phases.SIMULATION):
        raw = _native.run_periodic(spec, json.dumps(tasks), jobs, seed=seed, machine_format=fmt,
                                   os_json=json.dumps(os or {}))
    stats = json.loads(raw)
    return Result(machine=stats["machine"], workload="periodic task set", stats=stats)
