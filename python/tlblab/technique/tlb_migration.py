"""The `tlb_migration` technique's Python (seed 000): its cost model's calibration benchmarks, the
Cortex-A7 measurements of seed 000 §4.1-§4.2 (Appendix A.1, Tables A.1 and A.2), computed by the
engine (`tlblab._native.tlb_migration_read_cycles`, `tlb_migration_pld_benchmark`).

    >>> from tlblab.technique import tlb_migration as tm
    >>> tm.read_cycles(64)                       # Table A.1's loop, the A7 constants
    >>> tm.pld_benchmark("cortex-a7", 13)         # Table A.2's loop: cycles, accesses, misses
"""

from __future__ import annotations

import json
from typing import Any

from tlblab import _native
from tlblab.machines import machine_arg

# Where Table A.2's buffer starts unless told: its first page is descriptor 4 of a 16-descriptor
# second-level line (a 64 KiB-aligned block's fifth page), so the descriptors cross a line
# between the 12th and 13th pages, where seed 000 §4.2 places the border.
A2_BASE = 0x2000_0000 + 4 * 4096


def _costs(costs: dict[str, int] | None) -> str:
    if costs is None:
        return ""
    if not isinstance(costs, dict):
        raise ValueError(f"costs: expected a dict of constant name to integer, found {costs!r}")
    return json.dumps(costs)


def read_cycles(entries: int, cpu: str = "a7", interface: str = "pld_direct",
                costs: dict[str, int] | None = None) -> int:
    """Cycles to read `entries` TLB entries in software without storing them (seed 000 §4.1,
    Table A.1's benchmark), as the technique's save charges each slot it reads: `cpu`'s constants
    (a7, gem5), `costs` overriding some of them by name."""
    if isinstance(entries, bool) or not isinstance(entries, int) or entries < 0:
        raise ValueError(f"entries: expected a non-negative integer, found {entries!r}")
    return int(_native.tlb_migration_read_cycles(entries, cpu=cpu, interface=interface, costs=_costs(costs)))


def pld_benchmark(machine: str | dict[str, Any], pages: int, stride: int = 4096, base: int = A2_BASE,
                  cpu: str = "a7", costs: dict[str, int] | None = None) -> dict[str, Any]:
    """Table A.2's benchmark (seed 000 §4.2) on `machine`: `pages` pages `stride` bytes apart from
    `base`, mapped, the core's TLBs and caches flushed, then preloaded back to back by one thread
    (`tlb_migration::pld_burst`, `cpu`'s constants with `costs` overriding some by name).

    Returns {"cycles": the loop's cycles, "walks", "cache": {level: {accesses, misses, ...}} (every
    source, walks included), "data_by_source" and "walk_refs_by_source" ({source: count}), and
    what the seed's PMU counted (§4.2, Fig. 4.4: the MMU's cache accesses not reported, its misses
    counted): "accesses", the data references reaching the first data cache level, and "misses",
    that level's misses of every source, split into "walk_misses" and "data_misses"}."""
    for name, v in (("pages", pages), ("stride", stride), ("base", base)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"{name}: expected a non-negative integer, found {v!r}")
    spec, fmt = machine_arg(machine)
    r = json.loads(_native.tlb_migration_pld_benchmark(spec, pages, stride=stride, base=base, cpu=cpu,
                                                       costs=_costs(costs), machine_format=fmt))
    st, levels, sources = r["stats"], r["cache_levels"], r["sources"]
    data = dict(zip(sources, st["data_by_source"]))
    walk = dict(zip(sources, st["walk_refs_by_source"]))
    cache = dict(zip(levels, st["cache"]))
    # The first level data references reach: the first source that serves any reference, or,
    # when none is served by a cache, the first cache level the data path counts.
    first = next((lv for lv in levels if cache[lv]["accesses"] and lv in data), None)
    if first is None:
        raise ValueError(f"pld benchmark on {machine!r}: no cache level was accessed")
    accesses = sum(data.values())
    walk_refs = sum(walk.values())
    return {
        "cycles": int(r["cycles"]),
        "walks": int(st["walks"]),
        "cache": cache,
        "data_by_source": data,
        "walk_refs_by_source": walk,
        "level": first,
        "accesses": accesses,
        "misses": int(cache[first]["misses"]),
        "walk_misses": walk_refs - walk[first],
        "data_misses": accesses - data[first],
    }
