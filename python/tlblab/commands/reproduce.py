"""`tlblab reproduce [SEED[/ID] ...]`: run the seeds' reproductions and write them beside the seed.

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

from tlblab.errors import UserError
from tlblab.paths import out


def register(sub) -> None:
    p = sub.add_parser("reproduce", help="run the seeds' reproductions (tables and figures beside tlblab's)")
    p.add_argument("which", nargs="*", default=None, metavar="SEED[/ID]",
                   help="seeds (003) or reproductions (003/fig6_2), one or more; default: all")
    p.add_argument("--out", default=str(out("reproduce")),
                   help=f"output directory (default: {out('reproduce')}; docs/paths.md)")
    p.add_argument("--quick", action="store_true", help="smaller runs where an experiment offers them")
    p.add_argument("--check", action="store_true", help="exit 1 when a shape does not hold (for CI)")
    p.add_argument("--list", action="store_true", help="list the reproductions and exit")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="processes the reproductions run on (default: 2, or 1 on a one-CPU host): a seed's "
                        "reproductions that share runs in one, seed 001's runs each on either; 1: the seeds in "
                        "turn in this process; the CSVs are the same for any N")
    p.add_argument("--profile", action="store_true",
                   help="print where the seconds went, per seed and per reproduction (wall, CPU, phases); "
                        "they are written to timings.json under --out either way")
    p.add_argument("--preregister", action="store_true",
                   help="add the criteria that are not in the lock file yet (criteria.lock.toml) and exit; a "
                        "changed criterion needs a [[revisions]] entry instead (docs/reproductions.md)")
    p.set_defaults(func=run)


def run(args) -> int:
    import tlblab.reproduce as rp
    from tlblab import records
    from tlblab.report_text import format_table

    import tlblab.prereg as pr

    if args.jobs is not None and args.jobs < 1:
        raise UserError(f"--jobs: expected a number of processes of 1 or more, found {args.jobs}")
    if args.preregister:
        added = pr.preregister()
        print(f"{len(added)} criteria added to the lock" + (": " + ", ".join(added) if added else ""))
        problems = pr.check()
        for line in problems:
            print(f"not as registered: {line}", file=sys.stderr)
        return 1 if problems else 0
    reps = rp.select(args.which or None)
    if args.list:
        print(_listing(reps))
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

    import os

    from tlblab import phases, reproduce_timings as rt

    jobs = args.jobs if args.jobs is not None else min(2, os.cpu_count() or 1)
    load0 = list(os.getloadavg())
    seeds_done: list[dict] = []
    start = phases.clock()
    outcomes = rp.run_all(reps, args.quick, jobs=jobs, on_start=progress, on_done=_print, on_prepare=preparing,
                          on_prepared=prepared, on_run=made, on_seed=seeds_done.append,
                          seed_seconds=rt.last_seconds(out, args.quick) or None)
    end = phases.clock()
    rp.write(outcomes, out)
    timings = rt.timings_record(outcomes, seeds_done, quick=args.quick, jobs=jobs, wall=end[0] - start[0],
                                cpu=end[1] - start[1], load=(load0, list(os.getloadavg())))
    rt.write_timings(timings, out)
    if args.profile:
        print("\n" + rt.format_timings(timings))
    failing = [o for o in outcomes if not o.holds]
    size = "quick size (a smoke run: no verdict counted for a seed)" if args.quick else "full size"
    print(f"\nPer seed, {size}: the seed's predictions that hold / all of them, one count per claim; "
          "consistency checks (fitted rows, or true by construction) and tlblab's own claims (ours) apart")
    summary = rp.seed_summary(outcomes)
    print(format_table(["seed", "reproductions hold", "predictions hold", "consistency checks hold", "ours hold",
                        "revisions"],
                       [[s["seed"], f"{s['reproductions_hold']}/{s['reproductions']}",
                         f"{s['predictions_hold']}/{s['predictions']}", f"{s['consistency_hold']}/{s['consistency']}",
                         f"{s['ours_hold']}/{s['ours']}", s["revisions"]] for s in summary]))
    for s in summary:
        if s["worst"]:
            print(f"  seed {s['seed']}: worst predicted error {s['worst']}")
        if s["not_counted"]:
            print(f"  seed {s['seed']}: not counted (their claims are counted in another reproduction, `counted_in`): {s['not_counted']}")
    if not args.quick:
        recorded = records.write_records(outcomes, out)
        print(f"\nfull-size verdicts recorded for `tlblab study` ({recorded}); commit {records.commit() or 'unknown'}")
    print(f"\n{len(outcomes)} reproductions in {time.monotonic() - t0:.1f} s: "
          f"{len(outcomes) - len(failing)} hold, {len(failing)} do not; CSV in {out}/")
    defects = [f"{o.reproduction.name}#{v['criterion']}" for o in outcomes for v in o.verdict_records
               if v["role"] == "consistency" and not v["holds"]]
    if defects:
        # A check that holds by construction and fails is a defect of the model (or a prediction
        # filed as a check): --check fails on it as on a failing prediction.
        print(f"consistency checks that fail (a defect, not a finding): {', '.join(defects)}", file=sys.stderr)
    for line in problems:
        print(f"warning: a criterion is not as pre-registered: {line}", file=sys.stderr)
    return 1 if (args.check and (failing or problems)) else 0


# `reproduce --list` lines stay within this many characters: the source is cut to fit.
LIST_WIDTH = 120


def _listing(reps) -> str:
    """One line per reproduction: its name, machine, criteria by role (the seed's predictions,
    consistency checks, ours), revisions and source, the source cut to keep the line to LIST_WIDTH."""
    from tlblab.report_text import format_table

    def counts(r) -> str:
        n = {role: sum(c["role"] == role for c in r.criteria) for role in ("prediction", "consistency", "ours")}
        return f"{n['prediction']}/{n['consistency']}/{n['ours']}" + (f" (in {r.counted_in})" if r.counted_in else "")

    rows = [[r.name, r.machine, counts(r), len(r.revisions), r.source] for r in reps]
    head = ["reproduction", "machine", "pred/cons/ours", "revisions", "source"]
    widths = [max(len(str(x[i])) for x in rows + [head]) for i in range(4)]
    room = max(20, LIST_WIDTH - sum(w + 2 for w in widths))
    for row in rows:
        if len(row[4]) > room:
            row[4] = row[4][: room - 1].rstrip() + "…"
    return format_table(head, rows)


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
    u_held, u_all = o.held("ours")
    print(f"  predictions: {p_held} of {p_all} hold; consistency checks: {c_held} of {c_all} hold"
          + (f"; ours (not the seed's claims): {u_held} of {u_all} hold" if u_all else "")
          + (f"; its claims are counted in {rep.seed}/{rep.counted_in}" if rep.counted_in else ""))
    revised = {rv["criterion"]: rv for rv in rep.revisions}
    for v in o.verdict_records:
        mark = "holds" if v["holds"] else "DOES NOT HOLD"
        role = {"prediction": "", "consistency": " (consistency check)", "ours": " (ours, not the seed's)"}[v["role"]]
        print(f"  [{mark}] {v['criterion']}{role}: {v['says']} — {v['detail']}")
        if not v["holds"] and v["explanation"]:
            print(f"      why: {v['explanation']}")
            if v.get("stale"):
                print(f"      (this explanation was {v['stale']})")
        if v["criterion"] in revised:
            rv = revised[v["criterion"]]
            print(f"      revised {rv['date']}: {rv['why']}")
