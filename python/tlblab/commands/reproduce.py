"""`tlblab reproduce [SEED[/ID]]`: run the seeds' reproductions and write them beside the seed.

Each reproduction (`python/tlblab/seeds/s<NNN>_*/reproductions/<id>.toml`, docs/reproductions.md) holds
a seed table or figure, the preset and workloads standing in for its setup, and shape criteria
written before the first run. A reproduction is a finding, not a test: the exit status is 0
whether or not its shape holds, unless `--check` asks for 1 when one does not.

Every criterion is a prediction (it can fail on what the model does) or a consistency check (it
holds by construction or reads only rows fitted to the seed); the summary counts them apart.
Criteria are pre-registered in `seeds/criteria.lock.toml` (tlblab.prereg): a run says so
when one changed without a recorded revision.
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
    p.add_argument("--preregister", action="store_true",
                   help="add the criteria that are not in the lock file yet (criteria.lock.toml) and exit; a "
                        "changed criterion needs a [[revisions]] entry instead (docs/reproductions.md)")
    p.set_defaults(func=run)


def run(args) -> int:
    import tlblab.reproduce as rp
    from tlblab.report_text import format_table

    import tlblab.prereg as pr

    if args.preregister:
        added = pr.preregister()
        print(f"{len(added)} criteria added to the lock" + (": " + ", ".join(added) if added else ""))
        problems = pr.check()
        for line in problems:
            print(f"not as registered: {line}", file=sys.stderr)
        return 1 if problems else 0
    reps = rp.select(args.which)
    if args.list:
        print(format_table(["reproduction", "source", "machine", "predictions", "consistency checks", "revisions"],
                           [[r.name, r.source, r.machine, sum(c["role"] == "prediction" for c in r.criteria),
                             sum(c["role"] == "consistency" for c in r.criteria), len(r.revisions)]
                            for r in reps]))
        return 0
    problems = pr.check()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()

    def progress(i: int, rep) -> None:
        print(f"[{i + 1}/{len(reps)}] {rep.name}: {rep.title}", file=sys.stderr, flush=True)

    def preparing(seed: str, n: int) -> None:
        print(f"seed {seed}: making the runs its {n} reproductions share", file=sys.stderr, flush=True)

    def prepared(did) -> None:
        print(f"seed {did['seed']}: {did['runs']} runs made in {did['seconds']:.1f} s", file=sys.stderr, flush=True)

    def made(line: str) -> None:
        print(f"  {line}", file=sys.stderr, flush=True)

    outcomes = rp.run_all(reps, args.quick, on_start=progress, on_done=_print, on_prepare=preparing,
                          on_prepared=prepared, on_run=made)
    rp.write(outcomes, out)
    failing = [o for o in outcomes if not o.holds]
    print("\nPer seed: predictions that hold / all predictions; consistency checks (fitted rows, or true by "
          "construction) apart")
    print(format_table(["seed", "reproductions hold", "predictions hold", "consistency checks hold",
                        "worst predicted error", "revisions"],
                       [[s["seed"], f"{s['reproductions_hold']}/{s['reproductions']}",
                         f"{s['predictions_hold']}/{s['predictions']}", f"{s['consistency_hold']}/{s['consistency']}",
                         "" if s["worst_rel_error"] is None else f"{s['worst_rel_error']:+.0%} ({s['worst_row']})",
                         s["revisions"]] for s in rp.seed_summary(outcomes)]))
    print(f"\n{len(outcomes)} reproductions in {time.monotonic() - t0:.1f} s: "
          f"{len(outcomes) - len(failing)} hold, {len(failing)} do not; CSV in {out}/")
    for line in problems:
        print(f"warning: a criterion is not as pre-registered: {line}", file=sys.stderr)
    return 1 if (args.check and (failing or problems)) else 0


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
    p_held, p_all = o.held("prediction")
    c_held, c_all = o.held("consistency")
    print(f"  predictions: {p_held} of {p_all} hold; consistency checks: {c_held} of {c_all} hold")
    revised = {rv["criterion"]: rv for rv in rep.revisions}
    for v in o.verdict_records:
        mark = "holds" if v["holds"] else "DOES NOT HOLD"
        role = "" if v["role"] == "prediction" else " (consistency check)"
        print(f"  [{mark}] {v['criterion']}{role}: {v['says']} — {v['detail']}")
        if not v["holds"] and v["explanation"]:
            print(f"      why: {v['explanation']}")
            if v.get("stale"):
                print(f"      (this explanation was {v['stale']})")
        if v["criterion"] in revised:
            rv = revised[v["criterion"]]
            print(f"      revised {rv['date']}: {rv['why']}")
