"""Seed 004's page selection by simulation, beside the seed's own (`most_frequent`, §IV, with the
technique in `tlblab.technique.lockdown`): what the seed's reproduction compares its choice with
(Tables 2-3, `experiments.py`, `kernel_text.py`).

Two selection strategies for the N lockable entries (the Cortex-A9 has 4, seed 004 §III):

- `most_frequent`: the seed's (§IV): the N pages of the program with the most data accesses in
  its memory profile (Lackey's loads and stores; the locked entries are data-TLB entries).
- `simulation_guided`: the N pages whose locking removes the most data TLB stall cycles of the
  program in simulation, among the profile's top `candidates` pages: exhaustive over every
  N-subset when there are at most `exact_limit` of them, else greedy (add the page that removes
  the most, N times). The most-frequent set is always evaluated too and kept if it is better,
  so the result is never worse than `most_frequent` on the same trace.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from tlblab.errors import UserError
from tlblab.sim import simulate
from tlblab.technique.lockdown import feasible, geometry, lockable_entries, most_frequent, pages_spec


@dataclass
class Selection:
    """What `simulation_guided` found: the pages it chose, how it searched, and the stall cycles
    (micro + main, data) of the program with nothing locked, the most-frequent set and its own."""
    pages: list[int]
    method: str
    baseline: int
    frequent_pages: list[int]
    frequent: int
    guided: int
    simulations: int
    evaluated: dict[tuple[int, ...], int] = field(default_factory=dict)

    @property
    def gain_over_frequent(self) -> float:
        """Fraction of the most-frequent set's stall cycles the guided set removes besides."""
        return (self.frequent - self.guided) / self.frequent if self.frequent else 0.0


def stall_of(machine: str | dict[str, Any], workload: str, pages: list[int], *, process: int = 0,
             cores: str = "one", seed: int = 0, max_references: int = 0,
             os: dict[str, Any] | None = None) -> dict[str, int]:
    """Data TLB stall cycles per level of `process` with `pages` locked (none: the baseline),
    over the first `max_references` references (0: all), under the OS model `os` (`simulate`'s)."""
    spec = f"lockdown:process={process},cores={cores}" + (f",pages={pages_spec(pages)}" if pages else "")
    r = simulate(machine, workload, seed=seed, technique=spec, stall_cycles=True,
                 max_references=max_references, os=os)
    return r.stall_cycles(f"process {process}")


def simulation_guided(machine: str | dict[str, Any], workload: str, rows: list[dict[str, Any]],
                      n: int | None = None, *, process: int = 0, cores: str = "one",
                      candidates: int = 8, exact_limit: int = 70, seed: int = 0,
                      max_references: int = 0, os: dict[str, Any] | None = None) -> Selection:
    """The `n` pages (default: the lockable entries) among the profile's top `candidates` whose
    locking leaves `process` the fewest data TLB stall cycles (micro + main) in simulation
    (of the first `max_references` references; 0: the whole workload)."""
    _, lockable = lockable_entries(machine)
    n = lockable if n is None else n
    if n > lockable:
        raise UserError(f"lockdown: {n} pages asked for, the machine has {lockable} lockable entries")
    geom = geometry(machine)
    frequent_pages = most_frequent(rows, n, process, geom)
    cand = list(dict.fromkeys(frequent_pages + most_frequent(rows, max(candidates, n), process)))
    memo: dict[tuple[int, ...], int] = {}

    def cost(pages) -> int:
        key = tuple(sorted(pages))
        if key not in memo:
            memo[key] = sum(stall_of(machine, workload, list(key), process=process, cores=cores,
                                     seed=seed, max_references=max_references, os=os).values())
        return memo[key]

    baseline = cost([])
    frequent = cost(frequent_pages)
    k = min(n, len(cand))
    subsets = [s for s in itertools.combinations(cand, k) if feasible(s, *geom)]
    if subsets and len(subsets) <= exact_limit:
        method = "exact"
        best = min(subsets, key=lambda s: (cost(s), s))
    else:
        method = "greedy"
        best = ()
        for _ in range(k):
            steps = [best + (c,) for c in cand if c not in best and feasible(best + (c,), *geom)]
            if not steps:
                break
            best = min(steps, key=lambda s: (cost(s), s))
    best = list(best)
    if not best or cost(best) > frequent:  # never worse than the seed's choice
        best, method = frequent_pages, method + "+frequent"
    return Selection(pages=best, method=method, baseline=baseline, frequent_pages=frequent_pages,
                     frequent=frequent, guided=cost(best), simulations=len(memo), evaluated=memo)
