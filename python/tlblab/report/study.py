"""The study's sections, run in turn and timed: every reproduction that exists, the engine's own
technique-free table, the host measurements (`--host`); then the report and a summary.

`tlblab study` (commands/study.py) calls `run(options, engine_table)` with the study's
`StudyOptions` (plain data, whatever parsed them), where `engine_table(max_references)` is the
command's technique-free table: it prints it, writes summary.csv and levels.csv under the output
directory, and returns it as data (`tlblab.study.EngineTable`) with the command's exit status.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from tlblab import paths
from tlblab.files import atomic_write
from tlblab.report import HostRun, Study, build

# The host measurements with the arguments that fit the study's budget (each tool's own --quick
# is its smoke run; the default study gives the slower ones more rounds where they fit).
HOST_RUNS: dict[str, dict[bool, list[str]]] = {
    "probe": {True: ["probe", "--quick", "--json"], False: ["probe", "--quick", "--json"]},
    "coloring": {True: ["host", "coloring", "--quick", "--json"], False: ["host", "coloring", "--json"]},
    "ptwarm": {True: ["host", "ptwarm", "--quick", "--json"], False: ["host", "ptwarm", "--quick", "--json"]},
    "migrate": {True: ["host", "migrate", "--quick", "--predict", "--json"],
                False: ["host", "migrate", "--predict", "--json"]},
    "predict": {True: ["host", "predict", "--quick", "--json"], False: ["host", "predict", "--quick", "--json"]},
}


@dataclass(frozen=True)
class StudyOptions:
    """What a study runs: the output directory, its sizes, the reproductions (`all`, `none` or
    `SEED[/ID],...`), the machines and workload specs whose miss curves it draws (comma-separated,
    empty: the defaults, as the engine table's), and whether the host measurements run."""

    out: Path
    quick: bool = False
    full: bool = False
    reproductions: str = "all"
    machines: str = ""
    workloads: str = ""
    host: bool = False
    #: Where the full-size runs' records are read from (`tlblab reproduce`'s --out: tlblab.records).
    records: Path = field(default_factory=lambda: paths.out("reproduce"))


# In --quick, each run of the engine's table stops here (the default is the command's own cap).
QUICK_MAX_REFERENCES = 300_000


def _bar(total: int, desc: str):
    from tlblab.progress import bar

    return bar(total, desc, "run", leave=True)


def _chosen(which: str) -> list[Path]:
    """The reproduction files `--reproductions` names: all, none, or SEED[/ID],..."""
    from tlblab import reproduce, seeds
    from tlblab.errors import UserError

    every = seeds.reproduction_files(reproduce.DATA)
    if which == "all":
        return every
    if which == "none":
        return []
    chosen = []
    for item in filter(None, (w.strip() for w in which.split(","))):
        seed, _, rid = item.partition("/")
        hit = [p for p in every if seeds.number_of(p) == seed and (not rid or p.stem == rid)]
        if not hit:
            raise UserError(f"--reproductions: no reproduction '{item}' (expected all, none or SEED[/ID],...)")
        chosen += [p for p in hit if p not in chosen]
    return chosen


def reproductions(quick: bool, out: Path, which: str = "all", jobs: int | None = None,
                  on_outcome: Callable[[Any], None] | None = None) -> list:
    """Runs the reproductions `which` names on `jobs` processes (default: 2, or 1 on a one-CPU
    host; `tlblab.reproduce.run_all`, a seed to a process); one that cannot run (a missing
    experiment, a malformed file, an experiment that raises) is shown as not run, and the others
    still run. `on_outcome(outcome)` as each is done."""
    import os

    from tlblab import reproduce
    from tlblab.errors import UserError

    reps = []
    paths = _chosen(which)
    with _bar(len(paths), "reproductions") as bar:
        for p in paths:
            try:
                reps.append(reproduce.load_file(p))
            except UserError as e:
                bar.write(f"study: skipped {p}: {e}")
                bar.update(1)

        def done(o) -> None:
            bar.set_postfix_str(o.reproduction.name)
            if o.error.startswith("the experiment raised"):
                bar.write(f"study: {o.reproduction.name}: {o.error}")
            bar.update(1)
            if on_outcome:
                on_outcome(o)

        jobs = jobs if jobs is not None else min(2, os.cpu_count() or 1)
        outcomes = reproduce.run_all(reps, quick, jobs=jobs, guarded=True, on_done=done)
    if outcomes:
        reproduce.write(outcomes, out)
    return outcomes


def engine(engine_table: Callable[[int], tuple[Any, int]], quick: bool) -> tuple[Any, Any, list[str], int]:
    """The command's own table, as frames. In --quick its runs are shorter."""
    import pandas as pd

    from tlblab.study import MAX_REFERENCES

    table, status = engine_table(min(MAX_REFERENCES, QUICK_MAX_REFERENCES) if quick else MAX_REFERENCES)
    summary = pd.DataFrame(table.summary) if table.summary else None
    levels = pd.DataFrame(table.levels) if table.levels else None
    failures = [f"{m} × {w}: {e}" for m, w, e in table.failures]
    return summary, levels, failures, int(status or 0)


def curves(machines_csv: str, workloads_csv: str) -> list:
    """The miss curves of each workload of the engine's table, on zen3 when the table runs it
    (the default preset), else on the table's first machine (tlblab.report.curves)."""
    from tlblab.report.curves import workload_curves
    from tlblab.study import check_input

    machines, specs = check_input(machines_csv, workloads_csv)
    machine = "zen3" if "zen3" in machines else machines[0]
    out = []
    with _bar(len(specs), "miss curves") as bar:
        for spec in specs:
            bar.set_postfix_str(spec.split(":")[0])
            out.append(workload_curves(machine, spec))
            bar.update(1)
    return out


def host(quick: bool, out: Path) -> list[HostRun]:
    """Each host measurement in its own process (`tlblab ... --json`), its JSON kept beside the
    report; one that fails (no runtime build, a CPU it may not use) is shown with its message."""
    runs = []
    with _bar(len(HOST_RUNS), "host") as bar:
        for name, argv in HOST_RUNS.items():
            cmdline = ["tlblab", *argv[quick]]
            bar.set_postfix_str(name)
            t0 = time.monotonic()
            p = subprocess.run([sys.executable, "-m", "tlblab.cli", *argv[quick]], capture_output=True, text=True)
            dt = time.monotonic() - t0
            r = HostRun(name=name, argv=cmdline, seconds=dt)
            if p.returncode != 0:
                r.error = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
            else:
                try:
                    r.data = json.loads(p.stdout)
                except json.JSONDecodeError:
                    r.error = "the measurement printed no JSON"
            if r.data is not None:
                (out / "host").mkdir(parents=True, exist_ok=True)
                atomic_write(out / "host" / f"{name}.json", json.dumps(r.data, indent=1))
            runs.append(r)
            bar.update(1)
    return runs


def run(options: StudyOptions, engine_table: Callable[[int], tuple[Any, int]]) -> int:
    out = Path(options.out)
    quick = options.quick
    study = Study(quick=quick)
    status = 0

    # Each section's line of the report's timings, put in the sections' order whatever order they
    # finish in (the engine table and the curves may run beside the reproductions).
    lines: dict[str, dict[str, Any]] = {}

    def timed(section: str, fn):
        t0 = time.monotonic()
        try:
            res, note = fn()
        except Exception as e:  # a section's failure is reported; the other sections still run
            from tlblab.errors import UserError

            if not isinstance(e, (UserError, ValueError, OSError)):
                raise
            res, note = None, f"failed: {e}"
        lines[section] = {"section": section, "seconds": round(time.monotonic() - t0, 1), "status": note}
        return res

    # The reproductions run at their quick sizes unless --full: the study's budget is minutes. A
    # quick size is a smoke run (the experiments still run), never a verdict for a seed: the
    # verdicts shown are a full run's, this one's with --full, else the last full `tlblab
    # reproduce`'s (tlblab.records), marked stale when the code changed since.
    repro_quick = quick or not options.full
    study.size = "quick" if repro_quick else "full"
    which = options.reproductions
    chosen = _chosen(which)  # a bad --reproductions is the user's error, before any work

    # With the reproductions' seeds on worker processes (two seeds or more, two CPUs or more), this process only
    # waits for them: the engine table and the miss curves run here meanwhile, on a thread, and the
    # cores stay busy while the longest seed finishes (issue 89). A thread, not a process: the
    # table prints as it runs. Ctrl-C reaches the main thread, which stops the workers and exits;
    # the thread is a daemon, and its runs are short (2 M references at most). Then it draws the
    # figures it can (`draw_ahead`) until the reproductions are over.
    import os
    import queue
    import threading

    beside = len({seeds_number(p) for p in chosen}) > 1 and (os.cpu_count() or 1) > 1
    # The reproductions done so far, for the side thread to draw their figures.
    finished: queue.Queue = queue.Queue()
    over = threading.Event()

    def do_repro():
        o = reproductions(repro_quick, out / "reproduce", which, on_outcome=finished.put if beside else None)
        if repro_quick:
            ran = sum(not x.error for x in o)
            return o, f"{len(o)} reproductions at their quick size (a smoke run, no verdict): {ran} ran"
        from tlblab import records

        records.write_records(o, out / "reproduce")
        return o, f"{len(o)} reproductions at full size, {sum(x.holds for x in o)} hold"

    def do_engine():
        s, lv, fails, st = engine(engine_table, quick)
        return (s, lv, fails, st), f"{0 if s is None else len(s)} runs, {len(fails)} not run"

    def do_curves():
        c = curves(options.machines, options.workloads)
        return c, f"{len(c)} workloads on {c[0].machine if c else '-'}, {sum(bool(x.error) for x in c)} not drawn"

    side: dict[str, Any] = {}

    def engine_and_curves() -> None:
        try:
            side["engine"] = timed("engine table", do_engine)
            side["curves"] = timed("miss curves", do_curves)
            if beside:
                draw_ahead()
        except BaseException as e:  # noqa: BLE001 - raised again on the main thread
            side["raised"] = e

    def draw_ahead() -> None:
        # While the reproductions still run (their last units leave a core idle), one figure at
        # a time until they are over: the curves', the recorded full runs' (what the page shows
        # for a reproduction that has one), and each reproduction's own as it is done. The
        # report draws the rest (`tlblab.report.draw_into`).
        from tlblab.report import curve_unit, draw_into, reproduction_unit

        units = [u for u in map(curve_unit, side["curves"] or []) if u is not None]
        shown_recorded: set[str] = set()
        if repro_quick and chosen:
            side["recorded"] = recorded()
            shown_recorded = {r.outcome.reproduction.name for r in side["recorded"][0]}
            units += [reproduction_unit(r.outcome) for r in side["recorded"][0]]
        while not over.is_set():
            if units:
                draw_into(study.drawn, units.pop(0))
                continue
            try:
                o = finished.get(timeout=0.1)
            except queue.Empty:
                continue
            if o.reproduction.name not in shown_recorded:
                units.append(reproduction_unit(o))

    def recorded() -> tuple[list, str]:
        """The last full-size run of each chosen reproduction (tlblab.records), or the error that
        kept them from being read."""
        from tlblab import records

        names = [f"{seeds_number(p)}/{p.stem}" for p in chosen]
        try:
            return records.load(options.records, names), ""
        except Exception as e:  # noqa: BLE001 - a broken record is shown, the study goes on
            from tlblab.errors import UserError

            if not isinstance(e, UserError):
                raise
            return [], str(e)

    helper = threading.Thread(target=engine_and_curves, name="tlblab-study-table", daemon=True)
    if beside:
        helper.start()
    try:
        study.outcomes = timed("reproductions", do_repro) or []
    finally:
        over.set()
    if beside:
        helper.join()
    else:
        engine_and_curves()
    if "raised" in side:
        raise side["raised"]
    if repro_quick and chosen:
        # Read on the side thread already when it drew ahead (the records are a full run's,
        # which a quick run never writes: the same read before or after it).
        study.recorded, study.records_error = side.get("recorded") or recorded()

    eng = side.get("engine")
    if eng:
        study.engine_summary, study.engine_levels, study.engine_failures, st = eng
        status = status or st
    study.curves = side.get("curves")
    study.timings += [lines[k] for k in ("reproductions", "engine table", "miss curves") if k in lines]
    if options.host:
        study.host = timed("host", lambda: (lambda r: (r, f"{sum(not x.error for x in r)} of {len(r)} ran"))(
            host(quick, out)))
        study.timings.append(lines["host"])

    t0 = time.monotonic()
    index = build(study, out / "report")
    # The page lists the sections before it; the summary printed here adds the report's own time.
    study.timings.append({"section": "report", "seconds": round(time.monotonic() - t0, 1), "status": "written"})
    _print_summary(study)
    print(f"\nreport: {index.resolve()}")
    return status


def seeds_number(path: Path) -> str:
    from tlblab import seeds

    return seeds.number_of(path)


def _print_summary(study: Study) -> None:
    from tlblab.report_text import format_table

    if study.outcomes or study.recorded:
        from tlblab.reproduce import seed_summary

        print("\n" + study.headline())
        verdicts = study.verdict_outcomes()
        if verdicts:
            print(format_table(["seed", "predictions hold", "consistency checks hold", "ours hold", "revisions"],
                               [[s["seed"], f"{s['predictions_hold']}/{s['predictions']}",
                                 f"{s['consistency_hold']}/{s['consistency']}", f"{s['ours_hold']}/{s['ours']}",
                                 s["revisions"]] for s in seed_summary(verdicts)]))
            for s in seed_summary(verdicts):
                if s["worst"]:
                    print(f"  seed {s['seed']}: worst predicted error {s['worst']}")
        if study.size == "quick" and study.outcomes:
            failed = [o.reproduction.name for o in study.outcomes if o.error]
            print(f"\nsmoke run (quick size, no verdict): {len(study.outcomes) - len(failed)} of "
                  f"{len(study.outcomes)} reproductions ran" + (f"; not run: {', '.join(failed)}" if failed else ""))
    else:
        print("\nverdicts: no reproduction ran")
    print("\ntime per section")
    print(format_table(["section", "seconds", "status"],
                       [[t["section"], f"{t['seconds']:.1f}", t["status"]] for t in study.timings]))
