"""Which of seed 001's verdicts move with Zen 3's miss slots (`runs.ZEN3_MLP["miss_slots"]`, 24,
assumed: no source found, docs/technique-pt_baker.md): the reproductions whose runs are the
small tables' (3 M references each, `runs.LIMIT`: walk_locality, pressure_virt, helper_effect,
placement, throttle) run with N slots (walkers min(6, N), everything else as `tlblab reproduce
001`), each criterion's verdict and detail printed per N. The at-scale windows' dependence on the
slots is scripts/gups_sensitivity.py's (`--slots`, GUPS at 32 GiB).

    python scripts/slots_sensitivity.py --slots 12 24 44

About 125 CPU-s a value (47 runs of 3 M references).
"""

from __future__ import annotations

import argparse
import json
import sys

from tlblab import reproduce
from tlblab.seeds.s001_pt_baker import runs

REPRODUCTIONS = ("001/walk_locality", "001/pressure_virt", "001/helper_effect", "001/placement", "001/throttle")


def verdicts(slots: int, which: tuple[str, ...]) -> list[dict[str, object]]:
    """Every criterion of `which` with `slots` miss slots: (reproduction, criterion, holds, detail)."""
    runs.ZEN3_MLP["miss_slots"] = slots
    runs.ZEN3_MLP["walkers"] = min(6, slots)
    runs._RUNS.clear()  # a run's key holds its machine, so none is reused across slot counts anyway
    return reproduce.verdict_lines(list(which), {"slots": slots})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--slots", type=int, nargs="+", required=True)
    ap.add_argument("--reproductions", nargs="+", default=list(REPRODUCTIONS))
    ap.add_argument("--json", help="append each verdict as a JSON line to this file")
    a = ap.parse_args(argv)
    base = dict(runs.ZEN3_MLP)
    try:
        for n in a.slots:
            for rec in verdicts(n, tuple(a.reproductions)):
                print(f"{n:3d} {rec['reproduction']:22s} {rec['criterion']:40s} "
                      f"{'holds' if rec['holds'] else 'FAILS':5s} {rec['detail']}", flush=True)
                if a.json:
                    with open(a.json, "a") as f:
                        f.write(json.dumps(rec) + "\n")
    finally:
        runs.ZEN3_MLP.update(base)
    return 0


if __name__ == "__main__":
    sys.exit(main())
