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
    # The default 32 MiB table (2^22 words) is all of the SA-1100's memory, page tables aside.
    "gups": "log2_words=21",
}
MAX_REFERENCES = 2_000_000

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
    p.add_argument("--out", default="out/study", help="directory for the CSV files (default: out/study)")
    p.add_argument("--machines", default="", help="comma-separated presets (default: all)")
    p.add_argument("--workloads", default="", metavar="SPEC,...",
                   help="comma-separated workload specs, each NAME or NAME:key=value,... as for simulate "
                        "(e.g. random:pages=8192,accesses=1M,chase); default: the default set at the study's sizes")
    p.add_argument("--seed", type=int, default=0, help="seed of every run's random choices (default: 0)")
    p.add_argument("--quick", action="store_true", help="smaller runs: the whole study in 2 minutes or less")
    p.add_argument("--reproductions", default="all", metavar="all|none|SEED[/ID],...",
                   help="which seed reproductions to run (default: all; none skips them)")
    p.add_argument("--full", action="store_true",
                   help="run the reproductions at their full sizes (default: their quick sizes, minutes in all)")
    p.add_argument("--host", action="store_true", help="also measure the techniques on this host (probe, coloring, "
                   "ptwarm, migrate)")
    p.set_defaults(func=study)


def study(args) -> int:
    """The whole study: reproductions, this table (`run`), --host, then out/study/report/index.html
    (tlblab.report.study)."""
    from tlblab.report.study import run as run_study

    # Bad input (an unknown machine or workload, an --out that cannot be written) is the user's
    # error, reported before any section runs, not a failed section after minutes of work.
    _check_input(args)
    return run_study(args, run)


def _check_input(args) -> tuple[list[str], list[str], Path]:
    """The machines and workload specs the table runs and its output directory, each checked."""
    import tlblab
    from tlblab.errors import UserError

    machines = [m for m in args.machines.split(",") if m] or sorted(tlblab.presets())
    catalog = {w["name"]: w for w in tlblab.workloads()}
    specs = study_specs(args.workloads, catalog)
    # A machine that cannot load is the user's error, before any run: not a "not run" line per
    # workload after empty CSVs have replaced the last study's.
    for m in machines:
        try:
            tlblab.machine_config(m)
        except ValueError as e:
            raise UserError(f"--machines: {e}") from None
    out = Path(args.out)
    _check_writable(out)
    return machines, specs, out


def _write_csv(path: Path, rows: list[dict]) -> None:
    """Writes atomically: a failed run leaves no partial file. The file gets the mode a plain
    `open` would give it (0666 less the umask), not the temporary file's 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fields: list[str] = []
    for r in rows:
        for k in r:
            if k not in fields:
                fields.append(k)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            w.writerows(rows)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def split_specs(text: str) -> list[str]:
    """`random:pages=8192,accesses=1M,chase` → `['random:pages=8192,accesses=1M', 'chase']`.

    Workload specs use commas themselves, so an item holding `=` and no `:` continues the spec
    before it (a workload name never holds `=`). Empty items stay, for the parser to reject."""
    specs: list[str] = []
    for item in text.split(","):
        if "=" in item and ":" not in item and specs:
            specs[-1] += "," + item
        else:
            specs.append(item)
    return specs


def study_specs(text: str, catalog: dict) -> list[str]:
    """The workload specs to run: each given spec parsed by the one spec parser
    (`tlblab._native.parse_workload_spec`, as `simulate` parses them), its parameters laid over
    the study's sizes for that workload; or the default set at the study's sizes."""
    from tlblab import _native
    from tlblab.errors import UserError

    if not text.strip():
        return [f"{n}:{STUDY_PARAMS[n]}" if n in STUDY_PARAMS else n
                for n, w in catalog.items() if w["in_default_set"]]
    specs = []
    for item in split_specs(text):
        try:
            name, params = _native.parse_workload_spec(item)
        except ValueError as e:
            raise UserError(f"--workloads: {e}") from None
        if name not in catalog:
            raise UserError(f"--workloads: unknown workload '{name}': expected one of {', '.join(catalog)}")
        merged = dict(_native.parse_workload_spec(f"{name}:{STUDY_PARAMS.get(name, '')}")[1])
        merged.update(params)
        try:
            # Builds the generator (nothing runs): unknown parameters and impossible values are
            # reported here, before any simulation.
            _native.check_workload(f"{name}:" + ",".join(f"{k}={v}" for k, v in merged.items()))
        except ValueError as e:
            raise UserError(f"--workloads: {e}") from None
        specs.append(f"{name}:" + ",".join(f"{k}={v}" for k, v in merged.items()) if merged else name)
    return specs


def _check_writable(out: Path) -> None:
    """Fails before the first simulation, not after the last, when `--out` cannot be written."""
    from tlblab.errors import UserError

    try:
        out.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=out, prefix=".study-check.")
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        raise UserError(f"--out {out}: cannot write there: {e.strerror or e}") from None


# The seed 002 workloads trace ARM Linux's kernel path (`kernel=1`, their default), which maps
# the kernel image with the ARM's 1 MiB sections (crates/tlblab-trace/src/workloads/kernel_path.rs).
# A page table without 1 MiB pages (x86's) cannot map it, so there the study runs them with
# `kernel=0` (the user's own process alone) unless the spec sets `kernel` itself.
KERNEL_SECTION = "1MiB"


def spec_on(machine: str, spec: str, catalog: dict, sizes: list[str]) -> str:
    """`spec` as the study runs it on `machine` (whose page-table format maps `sizes`)."""
    name, _, params = spec.partition(":")
    has_kernel = any(p["name"] == "kernel" for p in catalog.get(name, {}).get("params", []))
    given = any(kv.split("=", 1)[0].strip() == "kernel" for kv in params.split(",") if kv)
    if has_kernel and not given and KERNEL_SECTION not in sizes:
        return f"{name}:{params},kernel=0" if params else f"{name}:kernel=0"
    return spec


# The parameter that sets each default-set workload's footprint, and how to halve it: a spec
# whose footprint does not fit a machine's simulated memory (`--workloads random:pages=8192`
# on the SA-1100's 32 MB) runs there at the largest halving that fits, as the default sizes fit
# the smallest preset, and the table says so.
FOOTPRINT = {"random": ("pages", lambda v: v // 2), "chase": ("pages", lambda v: v // 2),
             "strided": ("pages", lambda v: v // 2), "sequential": ("bytes", lambda v: v // 2),
             "gups": ("log2_words", lambda v: v - 1)}
EXHAUSTED = "physical memory is exhausted"


def _run_sized(machine: str, spec: str, seed: int):
    """The study's run of `spec` on `machine`, its footprint halved until it fits the machine's
    simulated memory (at most 8 times); the result and the spec that ran."""
    import tlblab
    from tlblab import _native

    for _ in range(8):
        try:
            return tlblab.simulate(machine, spec, seed=seed, max_references=MAX_REFERENCES), spec
        except ValueError as e:
            name, params = _native.parse_workload_spec(spec)
            params = dict(params)
            if EXHAUSTED not in str(e) or name not in FOOTPRINT:
                raise
            key, halve = FOOTPRINT[name]
            catalog = {w["name"]: w for w in tlblab.workloads()}
            default = next((p.get("default") for p in catalog[name]["params"] if p["name"] == key), None)
            value = int(params.get(key, default if default is not None else 0))
            if halve(value) < 1:
                raise
            params[key] = halve(value)
            spec = f"{name}:" + ",".join(f"{k}={v}" for k, v in params.items())
    return tlblab.simulate(machine, spec, seed=seed, max_references=MAX_REFERENCES), spec


def kernel_remedy(message: str, spec: str) -> str:
    """`message` with the remedy when a seed 002 workload's kernel path asked for 1 MiB sections
    of a page table that has none."""
    if f"page size {KERNEL_SECTION} is not supported" in message and "kernel" in spec:
        return (f"{message}: {spec} maps ARM Linux's kernel image with {KERNEL_SECTION} sections; "
                f"add kernel=0 to the spec (the user process alone), or use a machine whose page table "
                f"has {KERNEL_SECTION} pages (sa1100)")
    return message


def run(args) -> int:
    import tlblab

    machines, specs, out = _check_input(args)
    catalog = {w["name"]: w for w in tlblab.workloads()}

    summary, levels, failures = [], [], []
    resized: list[tuple[str, str, str]] = []
    adapted: set[str] = set()
    total = len(machines) * len(specs)
    t0 = time.monotonic()
    for i, machine in enumerate(machines):
        sizes = tlblab.page_sizes(machine)
        for j, given in enumerate(specs):
            spec = spec_on(machine, given, catalog, sizes)
            if spec != given:
                adapted.add(machine)
            k = i * len(specs) + j + 1
            print(f"[{k}/{total}] {machine} × {spec}", file=sys.stderr, flush=True)
            try:
                r, ran = _run_sized(machine, spec, args.seed)
            except ValueError as e:
                failures.append((machine, spec, kernel_remedy(str(e), spec)))
                continue
            if ran != spec:
                resized.append((machine, spec, ran))
                spec = ran
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
    print(COLUMNS)
    if adapted:
        print(f"  (on {', '.join(sorted(adapted))}: the seed 002 workloads with kernel=0, the page table "
              f"has no {KERNEL_SECTION} sections for ARM Linux's kernel image)")
    for machine, given, spec in resized:
        print(f"  (on {machine}: {spec}, as {given} does not fit its simulated memory)")
    _write_csv(out / "summary.csv", summary)
    _write_csv(out / "levels.csv", levels)
    print(f"\n{len(summary)} runs in {time.monotonic() - t0:.1f} s; CSV in {out}/summary.csv and {out}/levels.csv")
    for m, w, e in failures:
        # "not run: " is what the report collects for its page (report/study.py).
        print(f"not run: {m} × {w}: {e}", file=sys.stderr)
    if failures:
        print(f"tlblab: error: {len(failures)} of {total} runs failed", file=sys.stderr)
        return 1
    return 0


_FIRST_LEVEL: dict[str, set[str]] = {}


def _is_first_level(key: str, machine: str) -> bool:
    """Whether `<LEVEL>_misses` names a level-1 TLB of `machine`."""
    if machine not in _FIRST_LEVEL:
        import tlblab

        cfg = tlblab.machine_config(machine)
        _FIRST_LEVEL[machine] = {t["name"] for t in cfg["tlb"] if t["level"] == 1}
    return key[: -len("_misses")] in _FIRST_LEVEL[machine]
