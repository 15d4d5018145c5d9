"""Simulation from Python: run a workload on a machine and get the statistics back.

    >>> import tlblab
    >>> r = tlblab.simulate(machine="zen3", workload="random:pages=4096,accesses=100000")
    >>> r.total["walks"]            # plain dicts
    >>> r.tlb_frame()               # pandas DataFrame, one row per (core, TLB level)

`machine` is a preset name, a path to a .toml/.json machine file, or a dict with the same
fields as a preset file. `workload` is a built-in workload spec `name:key=value,...`
(see `tlblab.workloads()`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tlblab import _native


def _machine_arg(machine: str | dict[str, Any]) -> tuple[str, str]:
    if isinstance(machine, dict):
        return json.dumps(machine), "json"
    return str(machine), "auto"


@dataclass
class Result:
    """The statistics of one run (see `tlblab_core::stats` for every counter's meaning)."""

    machine: str
    workload: str
    stats: dict[str, Any]

    @property
    def total(self) -> dict[str, Any]:
        return self.stats["total"]

    @property
    def cycles(self) -> int:
        return int(self.stats["cycles"])

    def tlb_frame(self):
        """One row per (core, TLB level): accesses, hits, misses, evictions, miss_rate."""
        return self._level_frame("tlb_levels", "tlb")

    def cache_frame(self):
        """One row per (core, cache level): accesses (walk and data references), hits, misses,
        evictions (misses that replaced a valid line), miss_rate. Empty without caches."""
        return self._level_frame("cache_levels", "cache")

    def _level_frame(self, names: str, counters: str):
        import pandas as pd

        rows = []
        for core, unit in enumerate(self.stats["cores"]):
            for name, lv in zip(self.stats[names], unit[counters]):
                rows.append({"core": core, "level": name, **lv,
                             "miss_rate": lv["misses"] / lv["accesses"] if lv["accesses"] else 0.0})
        return pd.DataFrame(rows)

    def walk_frame(self):
        """One row per (core, source): walk references and data references served there."""
        import pandas as pd

        rows = []
        for core, unit in enumerate(self.stats["cores"]):
            for i, src in enumerate(self.stats["sources"]):
                rows.append({"core": core, "source": src,
                             "walk_refs": unit["walk_refs_by_source"][i],
                             "data_refs": unit["data_by_source"][i]})
        return pd.DataFrame(rows)

    def job_frame(self):
        """One row per job of a periodic task: release, start, end, cycles, misses per level."""
        import pandas as pd

        rows = []
        for j in self.stats["jobs"]:
            row = {k: v for k, v in j.items() if k != "tlb_misses"}
            for name, m in zip(self.stats["tlb_levels"], j["tlb_misses"]):
                row[f"{name}_misses"] = m
            rows.append(row)
        return pd.DataFrame(rows)

    def phase_frame(self):
        """One row per phase the workload marked (`PhaseBegin`/`PhaseEnd`: seed 000's first and
        second access, a measured loop), in the order the phases ended: name, occurrence, begin
        and end cycle, cycles (elapsed), ns (at the machine's clock), references, misses per TLB
        level, walks, walk references and the other counters of the phase over every core."""
        import pandas as pd

        ns_per_cycle = 1000.0 / self.stats.get("frequency_mhz", 1000.0)
        rows = []
        for p in self.stats.get("phases", []):
            st = p["stats"]
            row = {"name": p["name"], "region": p["region"], "occurrence": p["occurrence"],
                   "begin_cycle": p["begin_cycle"], "end_cycle": p["end_cycle"],
                   "cycles": p["end_cycle"] - p["begin_cycle"],
                   "ns": (p["end_cycle"] - p["begin_cycle"]) * ns_per_cycle,
                   "references": st["references"]}
            for name, lv in zip(self.stats["tlb_levels"], st["tlb"]):
                row[f"{name}_misses"] = lv["misses"]
            for k in ("walks", "walk_refs", "pwc_hits", "walk_cycles", "page_faults", "invalidations"):
                row[k] = st[k]
            for src, n in zip(self.stats["sources"], st["walk_refs_by_source"]):
                row[f"walk_refs_{src}"] = n
            row["reference_cycles"] = st["cycles"]
            row["migrations"] = p["os"]["migrations"]
            row["context_switches"] = p["os"]["context_switches"]
            rows.append(row)
        return pd.DataFrame(rows)

    @property
    def technique(self) -> dict[str, Any] | None:
        """The technique the run used: {name, params (every one, defaults included), counters}."""
        return self.stats.get("technique")

    def summary(self) -> dict[str, Any]:
        """A flat dict of the headline numbers (what `tlblab simulate` prints)."""
        t = self.total
        refs = t["references"] or 1
        out: dict[str, Any] = {"machine": self.machine, "workload": self.workload, "references": t["references"]}
        for name, lv in zip(self.stats["tlb_levels"], t["tlb"]):
            out[f"{name}_misses"] = lv["misses"]
        out["walks"] = t["walks"]
        out["walk_refs"] = t["walk_refs"]
        for src, n in zip(self.stats["sources"], t["walk_refs_by_source"]):
            out[f"walk_refs_{src}"] = n
        out["cycles"] = self.cycles
        out["cycles_per_ref"] = round(t["cycles"] / refs, 3)
        return out


def simulate(machine: str | dict[str, Any] = "zen3", workload: str = "random", *, seed: int = 0,
             tlb_only: bool = False, caches: bool = True, data_accesses: bool = True,
             walks: bool = True, max_references: int = 0,
             os: dict[str, Any] | None = None, technique: str | None = None) -> Result:
    """Simulates `workload` on `machine`.

    `tlb_only=True` simulates the TLB levels alone (DESIGN.md "TLB-only simulation"): no page
    walks (a miss in every level counts as a walk of the walker's fixed latency, and nothing is
    read from page tables), no caches, no data accesses. `caches=False, data_accesses=False`
    keeps the page walks, every page-table entry read from memory. `walks=False` needs both off.

    `os` sets the OS model: `{"switch": "auto"|"flush_all"|"asid_tagged", "asid_bits": 8,
    "switch_cycles": 0, "ipi_cycles": 0}` (see `tlblab_core::os::OsConfig`).

    `technique` switches on a technique, `"NAME[:key=value,...]"` (`tlblab.techniques()` lists
    them with their parameters); it overrides a `[technique]` table of the machine file.
    """
    spec, fmt = _machine_arg(machine)
    if tlb_only:
        caches = data_accesses = walks = False
    raw = _native.simulate(spec, workload, seed=seed, caches=caches, data_accesses=data_accesses,
                           walks=walks, max_references=max_references, machine_format=fmt,
                           os_json=json.dumps(os or {}), technique=technique or "")
    stats = json.loads(raw)
    stats["frequency_mhz"] = _frequency_mhz(machine)
    return Result(machine=stats["machine"], workload=workload, stats=stats)


def _frequency_mhz(machine: str | dict[str, Any]) -> float:
    return float(machine_config(machine)["frequency_mhz"])


def techniques() -> list[dict[str, Any]]:
    """The techniques you can switch on: name, summary, seed (the sections the model follows),
    params (each with name, default, meaning)."""
    return json.loads(_native.techniques())


def check_technique(technique: str, machine: str | dict[str, Any] = "zen3") -> None:
    """Raises ValueError naming the parameter if `technique` cannot run on `machine`."""
    spec, fmt = _machine_arg(machine)
    _native.check_technique(technique, spec, machine_format=fmt)


def presets() -> dict[str, str]:
    """Built-in machine presets: name → description."""
    return dict(_native.presets())


def machine_config(machine: str | dict[str, Any]) -> dict[str, Any]:
    """The validated machine description as a dict (edit it and pass it back to `simulate`)."""
    spec, fmt = _machine_arg(machine)
    return json.loads(_native.machine_json(spec, machine_format=fmt))


def machine_toml(machine: str | dict[str, Any]) -> str:
    spec, fmt = _machine_arg(machine)
    return _native.machine_toml(spec, machine_format=fmt)


def workloads() -> list[dict[str, Any]]:
    """The built-in workloads: name, summary, source (seed section), in_default_set, params
    (each with name, default, meaning). Same as `tlblab.trace.catalog()`."""
    from tlblab.trace import catalog

    return catalog()
