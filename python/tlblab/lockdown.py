"""TLB lockdown (seed 004): which pages to lock, and the `lockdown` technique's profile input.

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
import os
from dataclasses import dataclass, field
from typing import Any

from tlblab.errors import UserError


def lockable_level(machine: str | dict[str, Any], level: str = "") -> dict[str, Any]:
    """The machine's data TLB level the technique locks into (its configuration)."""
    from tlblab.sim import machine_config

    tlbs = machine_config(machine)["tlb"]
    cands = [t for t in tlbs if t.get("lockable", 0) > 0 and t["kind"] != "instr"
             and (not level or t["name"] == level)]
    if not cands:
        raise UserError(f"technique lockdown: machine {machine_config(machine)['name']} has no data TLB "
                        f"level with lockable entries{' named ' + level if level else ''}")
    return min(cands, key=lambda t: t["level"])


def geometry(machine: str | dict[str, Any], level: str = "") -> tuple[int, int]:
    """(sets, ways) of the lockable level (low-bit set index)."""
    t = lockable_level(machine, level)
    ways = t["entries"] if t["ways"] == "full" else int(t["ways"])
    return t["entries"] // ways, ways


def feasible(pages, sets: int, ways: int) -> bool:
    """Whether `pages` can be locked and leave every set of the level a replaceable way: locks
    take ways of their set in tlblab's TLB (`Tlb::lock`), so at most ways - 1 per set."""
    per: dict[int, int] = {}
    for p in pages:
        s = (p >> 12) % sets
        per[s] = per.get(s, 0) + 1
        if per[s] > max(ways - 1, 1):
            return False
    return True


def lockable_entries(machine: str | dict[str, Any], level: str = "") -> tuple[str, int]:
    """(name, lockable entries) of the machine's data TLB level the technique locks into."""
    from tlblab.sim import machine_config

    tlbs = machine_config(machine)["tlb"]
    cands = [t for t in tlbs if t.get("lockable", 0) > 0 and t["kind"] != "instr"
             and (not level or t["name"] == level)]
    if not cands:
        raise UserError(f"technique lockdown: machine {machine_config(machine)['name']} has no data TLB "
                        f"level with lockable entries{' named ' + level if level else ''}")
    t = min(cands, key=lambda t: t["level"])
    return t["name"], int(t["lockable"])


def _split_spec(technique: str) -> tuple[str, list[tuple[str, str]]]:
    name, _, rest = technique.partition(":")
    items = []
    for kv in filter(None, (x.strip() for x in rest.split(","))):
        k, eq, v = kv.partition("=")
        items.append((k.strip(), v.strip()) if eq else (kv, ""))
    return name.strip(), items


def data_accesses(row: dict[str, Any]) -> int:
    return int(row["loads"]) + int(row["stores"])


def most_frequent(rows: list[dict[str, Any]], n: int, process: int = 0,
                  geom: tuple[int, int] | None = None) -> list[int]:
    """Seed 004 §IV: the `n` pages of `process` with the most data accesses (ties: lower page).
    With the level's `geom` (sets, ways), a page that would leave its set no replaceable way is
    passed over for the next (`feasible`)."""
    mine = [r for r in rows if r.get("process", 0) == process and data_accesses(r) > 0]
    mine.sort(key=lambda r: (-data_accesses(r), r["page"]))
    out: list[int] = []
    for r in mine:
        if len(out) == n:
            break
        if geom is None or feasible(out + [r["page"]], *geom):
            out.append(r["page"])
    return out


def pages_spec(pages: list[int]) -> str:
    return "+".join(f"{p:#x}" for p in pages)


def resolve_technique(technique: str, machine: str | dict[str, Any]) -> str:
    """`lockdown:pages=FILE.csv[,count=N]` → `lockdown:pages=0x..+0x..`: the profile's `count`
    (default: the level's lockable entries) most-frequent pages of `process`. Other specs pass."""
    name, items = _split_spec(technique)
    params = dict(items)
    pages = params.get("pages", "")
    if not (pages.endswith(".csv") or os.path.isfile(pages)):
        return technique
    from tlblab.profile import read_csv

    _, lockable = lockable_entries(machine, params.get("level", ""))
    try:
        count = int(params.get("count", "0"), 0) or lockable
        process = int(params.get("process", "0"), 0)
    except ValueError:
        raise UserError(f"technique lockdown: 'count' and 'process' expect integers, found {params}")
    if count > lockable:
        raise UserError(f"technique lockdown: parameter 'count' asks for {count} pages, but the machine's "
                        f"lockable level has {lockable} lockable entries")
    chosen = most_frequent(read_csv(pages), count, process, geometry(machine, params.get("level", "")))
    out = [(k, pages_spec(chosen) if k == "pages" else v) for k, v in items if k != "count"]
    if not chosen:
        out = [(k, v) for k, v in out if k != "pages"]
    return name + (":" + ",".join(f"{k}={v}" for k, v in out) if out else "")


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
             cores: str = "one", seed: int = 0, max_references: int = 0) -> dict[str, int]:
    """Data TLB stall cycles per level of `process` with `pages` locked (none: the baseline),
    over the first `max_references` references (0: all)."""
    from tlblab.sim import simulate

    spec = f"lockdown:process={process},cores={cores}" + (f",pages={pages_spec(pages)}" if pages else "")
    r = simulate(machine, workload, seed=seed, technique=spec, stall_cycles=True,
                 max_references=max_references)
    return r.stall_cycles(f"process {process}")


def simulation_guided(machine: str | dict[str, Any], workload: str, rows: list[dict[str, Any]],
                      n: int | None = None, *, process: int = 0, cores: str = "one",
                      candidates: int = 8, exact_limit: int = 70, seed: int = 0,
                      max_references: int = 0) -> Selection:
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
                                     seed=seed, max_references=max_references).values())
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
