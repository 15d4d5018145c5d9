"""Seed 004 (Song, Park, Kim 2022, TLB lockdown): the experiments behind its reproductions.

Each function returns {row key: our value} for `python/tlblab/reproductions/004/<id>.toml`:
per program, the micro and main data TLB miss stall cycles per real-time run without and with
the 4 most-accessed pages locked, their decrease (Tables 2-3), the share removed, and the gain of
the simulation-guided selection over the most-frequent one.
"""

from __future__ import annotations

import tlblab.lockdown as ld
from tlblab.profile import profile

A9 = "cortex-a9"
PROGRAMS = {"basicmath": 0, "qsort": 1, "susan": 2}


def _workload(rt: int, cores: int, repeats: int) -> str:
    return f"lockdown_mix:rt={rt},cores={cores},repeats={repeats}"


def _table(cores: int, quick: bool) -> dict[str, float]:
    repeats = 2 if quick else 3
    out: dict[str, float] = {}
    for prog, rt in PROGRAMS.items():
        # seed 004 §IV: the real-time program profiled alone (one run), its pages ranked.
        rows = profile(_workload(rt, 1, 1), process=0)
        pages = ld.most_frequent(rows, 4, process=0, geom=ld.geometry(A9))
        work = _workload(rt, cores, repeats)
        base = ld.stall_of(A9, work, [], process=0)
        locked = ld.stall_of(A9, work, pages, process=0)
        for lvl, name in (("micro", "uTLB-D"), ("main", "main")):
            b, w = base[name] / repeats, locked[name] / repeats
            out[f"{prog}/{lvl}_base"] = b
            out[f"{prog}/{lvl}_locked"] = w
            out[f"{prog}/decreased_{lvl}"] = b - w
            out[f"{prog}/{lvl}_reduction"] = (b - w) / b if b else 0.0
        sel = ld.simulation_guided(A9, work, rows, 4, process=0, candidates=5 if quick else 6)
        out[f"{prog}/guided_gain"] = sel.gain_over_frequent
        out[f"{prog}/guided_simulations"] = sel.simulations
        out[f"{prog}/frequent_stall"] = sel.frequent / repeats
        out[f"{prog}/guided_stall"] = sel.guided / repeats
    return out


def table2(quick: bool) -> dict[str, float]:
    """Table 2: one core (cjpeg, djpeg, then the real-time program, repeated)."""
    return _table(1, quick)


def table3(quick: bool) -> dict[str, float]:
    """Table 3: four cores, cores 1-3 looping cjpeg, djpeg and typeset as background load."""
    return _table(4, quick)
