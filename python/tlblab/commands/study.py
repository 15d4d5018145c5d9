"""`tlblab study`: the main job.

Runs every seed reproduction that exists, then this module's technique-free table (`run`: every
built-in workload of the default set on every machine preset, one readable table of TLB misses
per level, walks, where walk references were served, cycles, also written as CSV under `--out`,
default `out/study`: `summary.csv`, one row per machine × workload, and `levels.csv`, one row
per TLB level), with `--host` the host measurements, and writes the report,
`<out>/report/index.html` (tlblab.report, docs/report.md).
"""

from __future__ import annotations

import csv
import os
import sys
import tempfile
import time
from pathlib import Path

from tlblab.report_text import format_table

# Sizes that keep the whole study to seconds on a laptop-class machine and fit the smallest
# preset's memory (the SA-1100 has 32 MB). Each run is also capped at MAX_REFERENCES.
STUDY_PARAMS = {
    "sequential": "bytes=8M,rounds=2",
    "strided": "pages=1024,stride=4096,rounds=64",
    "random": "pages=4096,accesses=1M",
    "chase": "pages=4096,accesses=1M",
}
MAX_REFERENCES = 2_000_000


def register(sub) -> None:
    p = sub.add_parser("study", help="the main job: every built-in workload on every preset")
    p.add_argument("--out", default="out/study", help="directory for the CSV files (default: out/study)")
    p.add_argument("--machines", default="", help="comma-separated presets (default: all)")
    p.add_argument("--workloads", default="", help="comma-separated workloads (default: the default set)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="smaller runs: the whole study in 2 minutes or less")
    p.add_argument("--host", action="store_true", help="also measure the techniques on this host (probe, coloring, "
                   "ptwarm, migrate)")
    p.set_defaults(func=study)


def study(args) -> int:
    """The whole study: reproductions, this table (`run`), --host, then out/study/report/index.html
    (tlblab.report.study)."""
    from tlblab.report.study import run as run_study

    return run_study(args, run)


def _write_csv(path: Path, rows: list[dict]) -> None:
    """Writes atomically: a failed run leaves no partial file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fields: list[str] = []
    for r in rows:
        for k in r:
            if k not in fields:
                fields.append(k)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            w.writerows(rows)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def run(args) -> int:
    import tlblab
    from tlblab.errors import UserError

    machines = [m for m in args.machines.split(",") if m] or sorted(tlblab.presets())
    catalog = {w["name"]: w for w in tlblab.workloads()}
    names = [w for w in args.workloads.split(",") if w] or [n for n, w in catalog.items() if w["in_default_set"]]
    for n in names:
        if n not in catalog:
            raise UserError(f"unknown workload '{n}': expected one of {', '.join(catalog)}")
    # A machine that cannot load is the user's error, before any run: not a "not run" line per
    # workload after empty CSVs have replaced the last study's.
    for m in machines:
        try:
            tlblab.machine_config(m)
        except ValueError as e:
            raise UserError(f"--machines: {e}") from None

    summary, levels, failures = [], [], []
    total = len(machines) * len(names)
    t0 = time.monotonic()
    for i, machine in enumerate(machines):
        for j, name in enumerate(names):
            spec = f"{name}:{STUDY_PARAMS[name]}" if name in STUDY_PARAMS else name
            k = i * len(names) + j + 1
            print(f"[{k}/{total}] {machine} × {spec}", file=sys.stderr, flush=True)
            try:
                r = tlblab.simulate(machine, spec, seed=args.seed, max_references=MAX_REFERENCES)
            except ValueError as e:
                failures.append((machine, spec, str(e)))
                continue
            s = r.summary()
            summary.append(s)
            for lvl, lv in zip(r.stats["tlb_levels"], r.total["tlb"]):
                levels.append({"machine": machine, "workload": spec, "level": lvl, **lv})

    rows = []
    for s in summary:
        mem = s.get("walk_refs_memory", 0)
        walk_refs = s["walk_refs"] or 1
        l1 = sum(v for k, v in s.items() if k.endswith("_misses") and _is_first_level(k, s["machine"]))
        rows.append([s["machine"], s["workload"].split(":")[0], s["references"], l1, s["walks"],
                     round(s["walk_refs"] / max(s["walks"], 1), 2), f"{100 * mem / walk_refs:.1f}%",
                     round(s["cycles_per_ref"], 2)])
    print(format_table(["machine", "workload", "references", "L1 TLB misses", "walks", "refs/walk",
                        "walk refs from memory", "cycles/ref"], rows))
    out = Path(args.out)
    _write_csv(out / "summary.csv", summary)
    _write_csv(out / "levels.csv", levels)
    print(f"\n{len(summary)} runs in {time.monotonic() - t0:.1f} s; CSV in {out}/summary.csv and {out}/levels.csv")
    for m, w, e in failures:
        print(f"not run: {m} × {w}: {e}", file=sys.stderr)
    return 0


_FIRST_LEVEL: dict[str, set[str]] = {}


def _is_first_level(key: str, machine: str) -> bool:
    """Whether `<LEVEL>_misses` names a level-1 TLB of `machine`."""
    if machine not in _FIRST_LEVEL:
        import tlblab

        cfg = tlblab.machine_config(machine)
        _FIRST_LEVEL[machine] = {t["name"] for t in cfg["tlb"] if t["level"] == 1}
    return key[: -len("_misses")] in _FIRST_LEVEL[machine]
