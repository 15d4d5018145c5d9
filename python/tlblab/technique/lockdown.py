"""The `lockdown` technique's Python (seed 004): the lockable level of a machine, the seed's page
choice from a memory profile, and `resolve`, which turns `lockdown:pages=FILE.csv` (a profile
written by `tlblab profile`) into the pages the engine locks (the engine does no I/O).

The selection strategies that simulate (`simulation_guided`) are in `tlblab.lockdown`.
"""

from __future__ import annotations

import os
from typing import Any

from tlblab.errors import UserError
from tlblab.machines import machine_config


def lockable_level(machine: str | dict[str, Any], level: str = "") -> dict[str, Any]:
    """The machine's data TLB level the technique locks into (its configuration)."""
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
    t = lockable_level(machine, level)
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


def resolve(technique: str, machine: str | dict[str, Any]) -> str:
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
