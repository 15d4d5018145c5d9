"""The `lockdown` technique's Python (seed 004), its one home: the lockable level of a machine
(the engine's, `tlblab._native.lockable_level`), the seed's page choice from a memory profile
(`most_frequent`, §IV), and `resolve`, which turns `pages=FILE.csv` (a profile written by
`tlblab profile`) into the pages the engine locks (the engine does no I/O).

The seed's reproduction also chooses pages by simulation (`simulation_guided`): that is the
seed folder's, `tlblab.seeds.s004_tlb_lockdown.selection`.
"""

from __future__ import annotations

import json
import os
from typing import Any

from tlblab import _native
from tlblab.machines import machine_arg


def lockable_level(machine: str | dict[str, Any], level: str = "") -> dict[str, Any]:
    """The machine's data TLB level the technique locks into (its configuration): the engine's
    choice (`techniques::lockdown::lockable_level`), so its error says why none fits."""
    spec, fmt = machine_arg(machine)
    return json.loads(_native.lockable_level(spec, level, machine_format=fmt))


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


def resolve(technique: dict[str, str], machine: str | dict[str, Any]) -> dict[str, str]:
    """`pages=FILE.csv[,count=N]` → `pages=0x..+0x..`: the profile's `count` (default: the
    level's lockable entries) most-frequent pages of `process`. Other tables pass. The rest of
    the table (`count`, `process`, `level`, `cores`) is checked by the engine first, as the run
    would check it (`count` more than the level's lockable entries is its error)."""
    pages = technique.get("pages", "")
    if not (pages.endswith(".csv") or os.path.isfile(pages)):
        return technique
    from tlblab.profile import read_csv

    spec, fmt = machine_arg(machine)
    rest = {k: v for k, v in technique.items() if k != "pages"}
    _native.check_technique(json.dumps(rest), spec, machine_format=fmt)
    level = technique.get("level", "")
    count = _native.parse_number(technique.get("count", "0")) or lockable_entries(machine, level)[1]
    process = _native.parse_number(technique.get("process", "0"))
    chosen = most_frequent(read_csv(pages), count, process, geometry(machine, level))
    out = {k: (pages_spec(chosen) if k == "pages" else v) for k, v in technique.items() if k != "count"}
    if not chosen:
        del out["pages"]
    return out
