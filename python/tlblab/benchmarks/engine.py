"""Simulated references per second of the engine, TLB-only and full model, on the zen3 preset.

The workload is generated into memory first, so only simulation is timed. Each case runs
`repeats` times; the median rate is reported with the min and max. Targets (DESIGN.md):
TLB-only ≥ 200 M refs/s, full model ≥ 50 M refs/s, one host thread.
"""

from __future__ import annotations

import statistics

from tlblab import _native

NAME = "engine"

CASES = {
    # name: workload spec (full size), quick size
    "random": ("random:pages=262144,accesses=4M", "random:pages=262144,accesses=500k"),
    "strided": ("strided:pages=65536,stride=4096,rounds=64", "strided:pages=65536,stride=4096,rounds=8"),
    "sequential": ("sequential:bytes=256M,rounds=1", "sequential:bytes=32M,rounds=1"),
    "chase": ("chase:pages=16384,accesses=4M", "chase:pages=16384,accesses=500k"),
}


def run(quick: bool = False) -> dict:
    repeats = 3 if quick else 5
    out = {"machine": "zen3", "unit": "simulated references per second (one host thread)", "cases": {}}
    for mode in ("tlb_only", "full"):
        for name, (full_spec, quick_spec) in CASES.items():
            spec = quick_spec if quick else full_spec
            rates = []
            refs = 0
            for _ in range(repeats):
                refs, secs = _native.bench_engine("zen3", spec, mode == "tlb_only", 0)
                rates.append(refs / secs)
            out["cases"][f"{mode}/{name}"] = {
                "workload": spec,
                "references": refs,
                "median_refs_per_s": round(statistics.median(rates)),
                "min_refs_per_s": round(min(rates)),
                "max_refs_per_s": round(max(rates)),
            }
    return out
