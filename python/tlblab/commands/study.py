"""`tlblab study`: the main job.

Runs every seed reproduction that exists, then the technique-free table (`table`, over
`tlblab.study.engine_table`: every built-in workload of the default set on every machine preset,
one readable table of TLB misses per level, walks, where walk references were served, cycles,
also written as CSV under `--out`, default `out/study`: `summary.csv`, one row per machine ×
workload, and `levels.csv`, one row per TLB level), with `--host` the host measurements, and
writes the report, `<out>/report/index.html` (tlblab.report, docs/report.md). The command
prints and writes; the table itself is data (`tlblab.study`).
"""

from __future__ import annotations

import sys
from pathlib import Path

from tlblab.paths import out
from tlblab.report_text import format_table
from tlblab.study import (KERNEL_SECTION, MAX_REFERENCES, TABLE_COLUMNS, EngineTable, check_input, check_writable,
                          engine_table, table_rows)

# What the table's columns mean, printed under it (the README says the same).
COLUMNS = """\
  references             memory references simulated (each run stops at 2 M)
  L1 TLB misses          misses in the first-level TLBs (instruction and data together)
  walks                  page-table walks: misses in every TLB level
  refs/walk              page-table entries read per walk (walk references / walks): the levels a
                         walk descends after the page-walk caches let it skip the upper ones
  walk refs from memory  the share of those entry reads that missed every cache level
  cycles/ref             simulated cycles per reference: TLB lookups, walks, data accesses"""


def register(sub) -> None:
    p = sub.add_parser("study", help="the main job: every built-in workload on every preset")
    p.add_argument("--out", default=str(out("study")), help=f"directory for the CSV files (default: {out('study')}; "
                   "docs/paths.md)")
    p.add_argument("--machines", default="", help="comma-separated presets (default: all)")
    p.add_argument("--workloads", default="", metavar="SPEC,...",
                   help="comma-separated workload specs, each NAME or NAME:key=value,... as for simulate "
                        "(e.g. random:pages=8192,accesses=1M,chase); default: the default set at the study's sizes")
    p.add_argument("--seed", type=int, default=0, help="seed of every run's random choices (default: 0)")
    p.add_argument("--quick", action="store_true", help="smaller runs: the whole study in 2 minutes or less")
    p.add_argument("--reproductions", default="all", metavar="all|none|SEED[/ID],...",
                   help="which seed reproductions to run (default: all; none skips them)")
    p.add_argument("--full", action="store_true",
                   help="run the reproductions at their full sizes, the verdicts (27-46 minutes on 2 cores); "
                        "default: their quick sizes, a smoke run, beside the verdicts of the last full "
                        "`tlblab reproduce`")
    p.add_argument("--verdicts-from", default=str(out("reproduce")), metavar="DIR",
                   help=f"where the last full `tlblab reproduce` wrote (its --out; default: {out('reproduce')})")
    p.add_argument("--host", action="store_true", help="also measure the techniques on this host (probe, coloring, "
                   "ptwarm, migrate)")
    p.set_defaults(func=study)


def study(args) -> int:
    """The whole study: reproductions, this table (`table`), --host, then
    out/study/report/index.html (tlblab.report.study)."""
    from tlblab.report.study import StudyOptions
    from tlblab.report.study import run as run_study

    # Bad input (an unknown machine or workload, an --out that cannot be written) is the user's
    # error, reported before any section runs, not a failed section after minutes of work.
    _check_input(args)
    options = StudyOptions(out=Path(args.out), quick=args.quick, full=args.full, reproductions=args.reproductions,
                           machines=args.machines, workloads=args.workloads, host=args.host,
                           records=Path(args.verdicts_from))
    return run_study(options, lambda max_references: table(args, max_references))


def _check_input(args) -> tuple[list[str], list[str], Path]:
    """The machines and workload specs the table runs and its output directory, each checked."""
    machines, specs = check_input(args.machines, args.workloads)
    out = Path(args.out)
    check_writable(out)
    return machines, specs, out


def _write_csv(path: Path, rows: list[dict]) -> None:
    """Writes atomically: a failed run leaves no partial file. The file gets the mode a plain
    `open` would give it (0666 less the umask), not the temporary file's 0600."""
    from tlblab.files import atomic_write, csv_text

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, csv_text(rows))


def table(args, max_references: int = MAX_REFERENCES) -> tuple[EngineTable, int]:
    """Runs the table (`tlblab.study.engine_table`), prints it, writes summary.csv and levels.csv
    under --out; returns it with the command's exit status (1 when a run failed)."""
    machines, specs, out = _check_input(args)

    def progress(k: int, total: int, machine: str, spec: str) -> None:
        print(f"[{k}/{total}] {machine} × {spec}", file=sys.stderr, flush=True)

    t = engine_table(machines, specs, seed=args.seed, max_references=max_references, on_run=progress)
    print(format_table(TABLE_COLUMNS, table_rows(t)))
    print(COLUMNS)
    if t.adapted:
        print(f"  (on {', '.join(sorted(t.adapted))}: the seed 002 workloads with kernel=0, the page table "
              f"has no {KERNEL_SECTION} sections for ARM Linux's kernel image)")
    for machine, given, spec in t.resized:
        print(f"  (on {machine}: {spec}, as {given} does not fit its simulated memory)")
    _write_csv(out / "summary.csv", t.summary)
    _write_csv(out / "levels.csv", t.levels)
    print(f"\n{len(t.summary)} runs in {t.seconds:.1f} s; CSV in {out}/summary.csv and {out}/levels.csv")
    for m, w, e in t.failures:
        print(f"not run: {m} × {w}: {e}", file=sys.stderr)
    if t.failures:
        print(f"tlblab: error: {len(t.failures)} of {t.runs} runs failed", file=sys.stderr)
        return t, 1
    return t, 0

