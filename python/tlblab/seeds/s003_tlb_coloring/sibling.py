"""Seed 003, issue 87: the reach of the tasks' core's sibling hyperthread on Table 6.1.

The seed ran on "an Intel Xeon E5-2650 processor running Linux 2.6.32. The system has 16 cores"
and bound "all tasks to a particular core" (Ch. 5); it does not say whether Hyper-Threading was
on, nor what, if anything, ran on the core's other logical processor. Two ways a busy sibling
can reach the tasks' level-one DTLB, each run here on the registered task sets (the NOISE of
`experiments`, glibc malloc vs. tlb_malloc) without changing a registered run:

- a *competitively shared* DTLB: the sibling's fills take ways of whatever sets its pages index.
  Modelled by the engine's `foreign_entries` technique (engine, reference twin and closed-form
  tests: a shared TLB's other tenant), one entry for a page no task uses inserted into L1D
  after every `every` references of the run. The task sets make 10 references a µs of
  execution (`accesses_per_ms=10000`, Table 6.1's runs), so `every` = N is 10^7 / N entries a
  second of running time; the idle gaps get none (their reach is `idle_flush`'s, measured in
  docs/lab/2026-11-29-issue87-papi-idle-flush.md).
- a *statically partitioned* DTLB: while both logical processors are active each may use half
  the entries ("limiting the use of each logical processor to half the entries", the IA-32
  optimization manual's partitioned resources; a halted one gives them back). Modelled as a
  machine whose L1D has half its ways (16 sets x 2) or half its sets (8 x 4): a sibling
  active throughout, the bound of this source.

`reach()` returns the numbers of docs/lab/2026-12-01-issue87-sibling-hyperthread.md; none of
this is on in a registered reproduction (the seed's own tlb_malloc zeros exclude it).
"""

from __future__ import annotations

import copy
import json
import sys
from typing import Any

import tlblab
from tlblab.seeds.s003_tlb_coloring.experiments import NOISE, XEON, _per_task_misses

# The L1D geometries of a statically partitioned DTLB, as one logical processor sees it.
PARTITIONS = {"ways": (32, 2), "sets": (32, 4)}


def partitioned_machine(split: str) -> dict[str, Any]:
    """The seed's machine with the L1 DTLB one logical processor keeps under a static partition:
    `split` "ways" (16 sets of 2 ways: the set index, and so tlb_malloc's colors, unchanged) or
    "sets" (8 sets of 4 ways: colors c and c + 8 share a set)."""
    from tlblab.sim import machine_config

    if split not in PARTITIONS:
        raise ValueError(f"split must be one of {sorted(PARTITIONS)}, got {split!r}")
    m = copy.deepcopy(machine_config(XEON))
    entries, ways = PARTITIONS[split]
    for t in m["tlb"]:
        if t["name"] == "L1D":
            t["entries"], t["ways"] = entries, ways
    m["name"] = f"{XEON}-l1d-{split}-halved"
    return m


def foreign(every: int) -> str:
    """The technique of a competitively sharing sibling: one L1D entry after every `every`
    references of the run."""
    return f"foreign_entries:every={every},level=L1D"


def _simulate(variant: str, workload: str, seed: int = 0):
    """`variant`: "base", "shared/<every>", "part/ways" or "part/sets"."""
    kind, _, arg = variant.partition("/")
    if kind == "base":
        return tlblab.simulate(XEON, workload, seed=seed)
    if kind == "shared":
        return tlblab.simulate(XEON, workload, seed=seed, technique=foreign(int(arg)))
    if kind == "part":
        return tlblab.simulate(partitioned_machine(arg), workload, seed=seed)
    raise ValueError(f"unknown variant {variant!r}")


def noisy_set_mask(variant: str, sets: int = 16) -> int:
    """`experiments.noisy_set_mask` (§6.0.6's procedure) under `variant`."""
    mask = 0
    for color in range(sets):
        jobs = _simulate(variant, f"rt_noisy_sets:color={color},pages=2,hyperperiods=1,{NOISE}").job_frame()
        if int(jobs[jobs["job"] >= 1]["L1D_misses"].sum()) > 0:
            mask |= 1 << color
    return mask


def table6_1(variant: str, n: int, masks: dict[str, int], runs: int = 5, hyper: int = 5) -> dict[str, float]:
    """`experiments.table6_1`'s numbers for the `n`-task set under `variant`: malloc, and
    tlb_malloc in the colors each mask of `masks` leaves (mean misses a job after job 0)."""
    base = f"rt_table6_1:tasks={n},kernels=1,accesses_per_ms=10000,hyperperiods={hyper},{NOISE}"
    cases = [("malloc", "layout=3,aslr=1")] + [(f"tlb[{k}]", f"layout=1,avoid_sets={m}") for k, m in masks.items()]
    out: dict[str, float] = {}
    for case, lay in cases:
        jobs = [_simulate(variant, f"{base},{lay}", seed).job_frame() for seed in range(runs)]
        out.update({k: v for k, v in _per_task_misses(f"{n}tasks/{case}", n, jobs).items() if not k.endswith("/sd")})
    return out


VARIANTS = ["base"] + [f"shared/{10 ** k}" for k in (7, 6, 5, 4, 3, 2)] + ["part/ways", "part/sets"]


def reach(variants: list[str] | None = None, tasks: tuple[int, ...] = (2, 3, 4)) -> list[dict[str, Any]]:
    """One row per variant: its own noisy-set mask, and Table 6.1's misses a job under malloc and
    under tlb_malloc in the registered run's colors (`tlb[base]`) and in its own (`tlb[own]`,
    when the procedure leaves enough clean colors)."""
    base_mask = noisy_set_mask("base")
    rows = []
    for v in variants or VARIANTS:
        own = noisy_set_mask(v)
        masks = {"base": base_mask}
        if own != base_mask and own != (1 << 16) - 1:
            masks["own"] = own
        row: dict[str, Any] = {"variant": v, "mask": hex(own)}
        for n in tasks:
            try:
                row.update(table6_1(v, n, masks))
            except Exception as e:  # noqa: BLE001 - too few clean colors for this set: say so
                if "own" not in masks:
                    raise
                row.update(table6_1(v, n, {"base": base_mask}))
                row[f"{n}tasks/tlb[own]"] = f"not run: {str(e).splitlines()[0]}"
        rows.append(row)
    return rows


if __name__ == "__main__":
    for r in reach(sys.argv[1].split(",") if len(sys.argv) > 1 else None):
        print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}), flush=True)
