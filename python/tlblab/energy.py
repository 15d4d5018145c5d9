"""The energy model: a run's counters and its machine's `[energy]` table into joules and watts.

One place computes it (`energy_of`); `run_energy` reads its inputs from a run's statistics
(`tlblab simulate`'s `energy_j` and `avg_power_w`, `Result.energy`), and seed 001's Fig. 6.12
reproduction applies it to the counters of its windows. It is post-processing: the engine counts
what it counts anyway (TLB lookups, cache accesses, walks, lines from memory, each core's busy
cycles) and never reads the table, so a run without it simulates exactly what it did before.

    E = sum over TLB levels (lookups x tlb_pj) + sum over cache levels (accesses x cache_pj)
      + walks x walk_pj + memory lines x dram_line_nj
      + sum over cores (busy seconds x core_active_w + idle seconds x core_idle_w)
      + run seconds x uncore_w
    average power = E / run seconds
    package = E less the DRAM term (what a package's energy counter, RAPL's, measures)

A core's busy seconds are its simulated cycles of work (a sleeping helper's sleep is not work:
`System::idle_until`), at most the run's; the run's seconds are its simulated time (the largest
core clock) at `frequency_mhz`. What the model leaves out is in docs/energy.md.

Why Python and not a Rust module: every input is a counter the statistics already carry to
Python, and the one non-trivial consumer, a reproduction that sums the counters of sampled
windows, is Python; one function here serves both, with no binding to keep in step. The
table itself is checked in Rust with the rest of the machine (`crates/tlblab-core/src/energy.rs`).
"""

from __future__ import annotations

from typing import Any, Iterable

PJ = 1e-12
NJ = 1e-9


def energy_of(table: dict[str, Any], *, tlb_accesses: dict[str, int], cache_accesses: dict[str, int],
              walks: int, memory_lines: int, busy_cycles: Iterable[float], cycles: float,
              frequency_mhz: float) -> dict[str, Any]:
    """The energy of a run from its counts: `tlb_accesses` and `cache_accesses` by level name,
    `walks`, `memory_lines` (64-byte lines read from or written to memory), each core's
    `busy_cycles`, the run's `cycles` at `frequency_mhz`. Returns `energy_j`, `avg_power_w`,
    `seconds`, `package_j` and `package_power_w` (all but the DRAM devices' part) and `parts`
    (joules by term: tlb, cache, walk, dram, core_active, core_idle, uncore). A level without an energy in `table` is an error (the Rust check of a machine
    file already refuses that table)."""
    hz = frequency_mhz * 1e6
    seconds = cycles / hz
    busy = [min(float(b), float(cycles)) / hz for b in busy_cycles]
    parts = {
        "tlb": sum(n * _level(table, "tlb_pj", name) for name, n in tlb_accesses.items()) * PJ,
        "cache": sum(n * _level(table, "cache_pj", name) for name, n in cache_accesses.items()) * PJ,
        "walk": walks * table.get("walk_pj", 0.0) * PJ,
        "dram": memory_lines * table["dram_line_nj"] * NJ,
        "core_active": sum(busy) * table["core_active_w"],
        "core_idle": sum(seconds - b for b in busy) * table.get("core_idle_w", 0.0),
        "uncore": seconds * table.get("uncore_w", 0.0),
    }
    total = sum(parts.values())
    # The package alone, as RAPL's package domain (perf's power/energy-pkg/, seed 001 Table 5.3)
    # counts it: the DRAM devices are outside it.
    package = total - parts["dram"]
    return {"energy_j": total, "avg_power_w": total / seconds if seconds > 0 else 0.0, "seconds": seconds,
            "package_j": package, "package_power_w": package / seconds if seconds > 0 else 0.0, "parts": parts}


def _level(table: dict[str, Any], key: str, name: str) -> float:
    levels = table.get(key) or {}
    if name not in levels:
        raise ValueError(f"energy.{key}: no energy for level {name} (expected one for every level)")
    return float(levels[name])


def memory_lines(machine: dict[str, Any], stats: dict[str, Any], unit: dict[str, Any] | None = None) -> int:
    """64-byte lines that went to or came from memory in `unit` (default the run's total): on a
    machine with DRAM channels (`timing.dram`) what they counted, every agent's reads and the
    writebacks; otherwise the misses of the last cache level (every agent's: a helper's
    page-table reads and the stressors' lines go through the caches without a walk or data
    source of their own) plus, under an uncached walker, the walks' reads from memory; with no
    cache accessed (`--no-caches`, `--tlb-only`), the walk and data references memory served.
    Without timing.dram no writeback is counted (the engine counts them only there)."""
    t = unit if unit is not None else stats["total"]
    if unit is None and stats.get("dram"):
        d = stats["dram"]
        return int(d["lines"]) + int(d.get("writeback_lines", 0))
    served_walks = int(t["walk_refs_by_source"][-1]) if t.get("walk_refs_by_source") else 0
    served_data = int(t["data_by_source"][-1]) if t.get("data_by_source") else 0
    caches = machine.get("cache", machine.get("caches")) or []
    if not caches or not any(lv["accesses"] for lv in t.get("cache", [])):
        return served_walks + served_data
    last = max(int(c["level"]) for c in caches)
    last_names = {c["name"] for c in caches if int(c["level"]) == last}
    lines = sum(int(lv["misses"]) for name, lv in zip(stats["cache_levels"], t["cache"]) if name in last_names)
    if (machine.get("walker") or {}).get("uncached"):
        lines += served_walks
    return lines


def run_energy(machine: dict[str, Any], stats: dict[str, Any]) -> dict[str, Any] | None:
    """The energy of a run (`energy_of`) on `machine` (a `machine_config` dict) from its
    statistics as the engine returns them: the total's TLB lookups, cache accesses and walks,
    `memory_lines`, each core's cycles as its busy time, the run's cycles as its time. None when
    the machine has no `[energy]` table."""
    table = machine.get("energy")
    if not table:
        return None
    t = stats["total"]
    return energy_of(
        table,
        tlb_accesses={name: int(lv["accesses"]) for name, lv in zip(stats["tlb_levels"], t["tlb"])},
        cache_accesses={name: int(lv["accesses"]) for name, lv in zip(stats["cache_levels"], t.get("cache", []))},
        walks=int(t["walks"]),
        memory_lines=memory_lines(machine, stats),
        busy_cycles=[c["cycles"] for c in stats["cores"]],
        cycles=stats["cycles"],
        frequency_mhz=float(machine["frequency_mhz"]),
    )


def sum_units(units: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The sum of units' counters in the engine's layout (`references`, `cycles`, `walks`, the
    `tlb` and `cache` level lists, the by-source lists): several windows' or threads' counters
    as one unit."""
    out: dict[str, Any] = {}
    for u in units:
        for key, v in u.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out[key] = out.get(key, 0) + v
            elif isinstance(v, list) and v and isinstance(v[0], dict):
                acc = out.setdefault(key, [dict.fromkeys(lv, 0) for lv in v])
                for a, lv in zip(acc, v):
                    for k, n in lv.items():
                        a[k] += n
            elif isinstance(v, list):
                acc = out.setdefault(key, [0] * len(v))
                for i, n in enumerate(v):
                    acc[i] += n
    return out
