"""`tlblab reproduce [SEED[/ID]]`: run the seeds' reproductions and write them beside the seed.

Each reproduction (`python/tlblab/reproductions/<seed>/<id>.toml`, docs/reproductions.md) holds
a seed table or figure, the preset and workloads standing in for its setup, and shape criteria
written before the first run. A reproduction is a finding, not a test: the exit status is 0
whether or not its shape holds, unless `--check` asks for 1 when one does not.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path


def register(sub) -> None:
    p = sub.add_parser("reproduce", help="run the seeds' reproductions (tables and figures beside tlblab's)")
    p.add_argument("which", nargs="?", default=None, metavar="SEED[/ID]",
                   help="a seed (003) or one reproduction (003/fig6_2); default: all")
    p.add_argument("--out", default="out/reproduce", help="output directory (default: out/reproduce)")
    p.add_argument("--quick", action="store_true", help="smaller runs where an experiment offers them")
    p.add_argument("--check", action="store_true", help="exit 1 when a shape does not hold (for CI)")
    p.add_argument("--list", action="store_true", help="list the reproductions and exit")
    p.set_defaults(func=run)


def run(args) -> int:
    import tlblab.reproduce as rp
    from tlblab.report_text import format_table

    reps = rp.select(args.which)
    if args.list:
        print(format_table(["reproduction", "source", "machine", "criteria"],
                           [[r.name, r.source, r.machine, len(r.criteria)] for r in reps]))
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    outcomes = []
    for i, rep in enumerate(reps):
        print(f"[{i + 1}/{len(reps)}] {rep.name}: {rep.title}", file=sys.stderr, flush=True)
        o = rp.run_one(rep, args.quick)
        outcomes.append(o)
        _print(o)
    rp.write(outcomes, out)
    failing = [o for o in outcomes if not o.holds]
    print(f"\n{len(outcomes)} reproductions in {time.monotonic() - t0:.1f} s: "
          f"{len(outcomes) - len(failing)} hold, {len(failing)} do not; CSV in {out}/")
    return 1 if (args.check and failing) else 0


def _print(o) -> None:
    from tlblab.report_text import format_table

    rep = o.reproduction
    print(f"\n{rep.name} — {rep.title}\n  {rep.source}; machine {rep.machine}; {o.seconds:.1f} s")
    if o.error:
        print(f"  ERROR: {o.error}")
        return
    fmt = lambda v: "" if v is None else (f"{v:.4g}" if isinstance(v, float) else str(v))  # noqa: E731
    print(format_table(["key", "quantity", "seed", "ours", "error"],
                       [[r["key"], r["quantity"], fmt(r["seed"]), fmt(r["ours"]), fmt(r["error"])]
                        for r in o.row_records]))
    for v in o.verdict_records:
        mark = "holds" if v["holds"] else "DOES NOT HOLD"
        print(f"  [{mark}] {v['criterion']}: {v['says']} — {v['detail']}")
        if not v["holds"] and v["explanation"]:
            print(f"      why: {v['explanation']}")
