"""How seed 001's virtualized verdicts move with the guest's placement of its frames, a bound:
the zen3-virt machine places the guest's frames in order (its `[virtualization]` has no
`guest_placement`; the seed's virtual machine, QEMU 6.2.0 with KVM on the Ryzen 9 5900X (§5),
is described no further), so a guest 4 KiB page's host translation shares its host PTE line
and host page-walk-cache entries with its neighbours'. A guest that has run a while hands a
program frames from its free lists in no order (measured in a KVM guest here: a chase's 8,201
pages in 4,008-4,232 distinct 2 MiB frames, 1 of 8,199 neighbours consecutive; docs/host-predict.md,
"The guest's placement of its frames"). This runs the chosen reproductions with
`guest_placement = {type = "clustered", consecutive = P}` on every virtualized machine (the
frames drawn from the guest's whole memory, `guest_memory_bytes`, or `--guest-gib`), each
criterion's verdict and detail printed per P; nothing registered changes.

    python scripts/virt_placement_bound.py --consecutive 1.0 0.5 0.0

About 60-90 CPU-s a value with the default reproductions (their runs of 3 M references); every run in
this one process, so 001/seed_scale takes about 20 minutes a value.
"""

from __future__ import annotations

import argparse
import json
import sys

from tlblab import reproduce
from tlblab.seeds.s001_pt_baker import runs

REPRODUCTIONS = ("001/walk_locality", "001/pressure_virt")


def verdicts(p: float | None, guest_gib: int | None, which: tuple[str, ...]) -> list[dict[str, object]]:
    """Every criterion of `which` with the virtualized machines' guest frames placed `clustered`
    with consecutive share `p` (None: as registered, in order)."""
    import tlblab

    plain = tlblab.machine_config

    def placed(name, *a, **k):
        m = plain(name, *a, **k)
        v = m.get("virtualization")
        if v is not None and p is not None:
            v["guest_placement"] = {"type": "clustered", "consecutive": p}
            if guest_gib:
                v["guest_memory_bytes"] = guest_gib << 30
            m["name"] += f"-guest{p}"
        return m

    import functools

    from tlblab.seeds.s001_pt_baker import experiments

    # runs.machine builds zen3-virt through it; every run in this process (`prefetch_runs`'
    # worker processes would build their machines unpatched: the at-scale tables' runs, 2026-12-01's
    # first seed_scale bound, whose virtualized rows came out as registered).
    tlblab.machine_config = placed
    prefetch = runs.prefetch_runs
    runs.prefetch_runs = experiments.prefetch_runs = functools.partial(prefetch, workers=1)
    runs._RUNS.clear()
    try:
        return reproduce.verdict_lines(list(which), {"consecutive": p}, values=True)
    finally:
        tlblab.machine_config = plain
        runs.prefetch_runs = experiments.prefetch_runs = prefetch


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--consecutive", type=float, nargs="+", required=True,
                    help="guest placement consecutive shares to run (a negative value: as registered)")
    ap.add_argument("--guest-gib", type=int, help="the guest memory the frames are drawn from (default: the preset's)")
    ap.add_argument("--reproductions", nargs="+", default=list(REPRODUCTIONS))
    ap.add_argument("--json", help="append each verdict, and each reproduction's values, as a JSON line to this file")
    a = ap.parse_args(argv)
    for c in a.consecutive:
        if c > 1.0:
            print(f"virt_placement_bound: --consecutive: expected a share <= 1, found {c}", file=sys.stderr)
            return 2
    for c in a.consecutive:
        p = None if c < 0 else c
        for rec in verdicts(p, a.guest_gib, tuple(a.reproductions)):
            if a.json:
                with open(a.json, "a") as f:
                    f.write(json.dumps(rec) + "\n")
            if "ours" in rec:
                continue
            print(f"{'as registered' if p is None else p:>13} {rec['reproduction']:24s} {rec['criterion']:36s} "
                  f"{'holds' if rec['holds'] else 'FAILS':5s} {rec['detail']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
