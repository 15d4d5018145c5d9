"""The study's technique-free table as data: every built-in workload of the default set on every
machine preset, at the study's sizes. `tlblab study` (commands/study.py) prints it and writes its
CSVs; the report (report/study.py) takes the same `EngineTable` for its page. Nothing here prints
or writes a file.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

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

# The seed 002 workloads trace ARM Linux's kernel path (`kernel=1`, their default), which maps
# the kernel image with the ARM's 1 MiB sections (crates/tlblab-trace/src/workloads/kernel_path.rs).
# A page table without 1 MiB pages (x86's) cannot map it, so there the study runs them with
# `kernel=0` (the user's own process alone) unless the spec sets `kernel` itself.
KERNEL_SECTION = "1MiB"


@dataclass
class EngineTable:
    """What the table's runs gave: one `Result.summary()` per run, one row per (run, TLB level),
    the runs that could not run (machine, spec, message), and the machines whose seed 002
    workloads ran with `kernel=0` (`spec_on`)."""

    summary: list[dict[str, Any]] = field(default_factory=list)
    levels: list[dict[str, Any]] = field(default_factory=list)
    failures: list[tuple[str, str, str]] = field(default_factory=list)
    adapted: set[str] = field(default_factory=set)
    #: (machine, spec given, spec that ran) for the runs halved to fit a machine's memory.
    resized: list[tuple[str, str, str]] = field(default_factory=list)
    runs: int = 0
    seconds: float = 0.0


def check_input(machines: str, workloads: str) -> tuple[list[str], list[str]]:
    """The machines (comma-separated presets or machine files; empty: every preset) and workload
    specs (`study_specs`) the table runs, each checked: bad input is the user's error, before any
    run, not a "not run" line per workload after minutes of work."""
    import tlblab
    from tlblab.errors import UserError

    names = [m for m in machines.split(",") if m] or sorted(tlblab.presets())
    catalog = {w["name"]: w for w in tlblab.workloads()}
    specs = study_specs(workloads, catalog)
    for m in names:
        try:
            tlblab.machine_config(m)
        except ValueError as e:
            raise UserError(f"--machines: {e}") from None
    return names, specs


def check_writable(out: Path) -> None:
    """Fails before the first simulation, not after the last, when `out` cannot be written."""
    from tlblab.errors import UserError

    try:
        out.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=out, prefix=".study-check.")
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        raise UserError(f"--out {out}: cannot write there: {e.strerror or e}") from None


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
        study = STUDY_PARAMS.get(name, "")
        merged = dict(_native.parse_workload_spec(f"{name}:{study}" if study else name)[1])
        merged.update(params)
        try:
            # Builds the generator (nothing runs): unknown parameters and impossible values are
            # reported here, before any simulation.
            _native.check_workload(f"{name}:" + ",".join(f"{k}={v}" for k, v in merged.items()) if merged else name)
        except ValueError as e:
            raise UserError(f"--workloads: {e}") from None
        specs.append(f"{name}:" + ",".join(f"{k}={v}" for k, v in merged.items()) if merged else name)
    return specs


def spec_on(machine: str, spec: str, catalog: dict, sizes: list[str]) -> str:
    """`spec` as the study runs it on `machine` (whose page-table format maps `sizes`)."""
    name, _, params = spec.partition(":")
    has_kernel = any(p["name"] == "kernel" for p in catalog.get(name, {}).get("params", []))
    given = any(kv.split("=", 1)[0].strip() == "kernel" for kv in params.split(",") if kv)
    if has_kernel and not given and KERNEL_SECTION not in sizes:
        return f"{name}:{params},kernel=0" if params else f"{name}:kernel=0"
    return spec


def engine_table(machines: list[str], specs: list[str], *, seed: int = 0,
                 max_references: int = MAX_REFERENCES,
                 on_run: Callable[[int, int, str, str], None] | None = None) -> EngineTable:
    """Runs every spec on every machine, each run stopped at `max_references`; `on_run(k, total,
    machine, spec)` hears of each run before it starts. A run the engine refuses is a failure,
    and the others still run."""
    import tlblab

    catalog = {w["name"]: w for w in tlblab.workloads()}
    table = EngineTable(runs=len(machines) * len(specs))
    t0 = time.monotonic()
    for i, machine in enumerate(machines):
        sizes = tlblab.page_sizes(machine)
        for j, given in enumerate(specs):
            spec = spec_on(machine, given, catalog, sizes)
            if spec != given:
                table.adapted.add(machine)
            if on_run is not None:
                on_run(i * len(specs) + j + 1, table.runs, machine, spec)
            try:
                r, ran = run_sized(machine, spec, seed, max_references)
            except ValueError as e:
                table.failures.append((machine, spec, kernel_remedy(str(e), spec)))
                continue
            if ran != spec:
                table.resized.append((machine, spec, ran))
                spec = ran
            table.summary.append(r.summary())
            for lvl, lv in zip(r.stats["tlb_levels"], r.total["tlb"]):
                table.levels.append({"machine": machine, "workload": spec, "level": lvl, **lv})
    table.seconds = time.monotonic() - t0
    return table


# The parameter that sets each default-set workload's footprint, and how to halve it: a spec
# whose footprint does not fit a machine's simulated memory (`--workloads random:pages=8192`
# on the SA-1100's 32 MB) runs there at the largest halving that fits, as the default sizes fit
# the smallest preset, and the table says so.
FOOTPRINT = {"random": ("pages", lambda v: v // 2), "chase": ("pages", lambda v: v // 2),
             "strided": ("pages", lambda v: v // 2), "sequential": ("bytes", lambda v: v // 2),
             "gups": ("log2_words", lambda v: v - 1)}
EXHAUSTED = "physical memory is exhausted"


def run_sized(machine: str, spec: str, seed: int, max_references: int = MAX_REFERENCES):
    """The study's run of `spec` on `machine`, its footprint halved until it fits the machine's
    simulated memory (at most 8 times); the result and the spec that ran."""
    import tlblab
    from tlblab import _native

    for _ in range(8):
        try:
            return tlblab.simulate(machine, spec, seed=seed, max_references=max_references), spec
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
    return tlblab.simulate(machine, spec, seed=seed, max_references=max_references), spec


def kernel_remedy(message: str, spec: str) -> str:
    """`message` with the remedy when a seed 002 workload's kernel path asked for 1 MiB sections
    of a page table that has none."""
    if f"page size {KERNEL_SECTION} is not supported" in message and "kernel" in spec:
        return (f"{message}: {spec} maps ARM Linux's kernel image with {KERNEL_SECTION} sections; "
                f"add kernel=0 to the spec (the user process alone), or use a machine whose page table "
                f"has {KERNEL_SECTION} pages (sa1100)")
    return message


def first_level_tlbs(machine: str) -> set[str]:
    """The names of `machine`'s level-1 TLBs."""
    import tlblab

    return {t["name"] for t in tlblab.machine_config(machine)["tlb"] if t["level"] == 1}


#: The columns of `table_rows`, as `tlblab study` prints them (its COLUMNS say what each means).
TABLE_COLUMNS = ["machine", "workload", "references", "L1 TLB misses", "walks", "refs/walk",
                 "walk refs from memory", "cycles/ref"]


def table_rows(t: EngineTable) -> list[list[Any]]:
    """One row of `TABLE_COLUMNS` per run of `t`: the first-level TLB misses summed over the
    machine's level-1 TLBs (instruction and data), the walk references per walk and the share of
    them served by memory, the cycles per reference."""
    first_level: dict[str, set[str]] = {}
    rows = []
    for s in t.summary:
        machine = s["machine"]
        if machine not in first_level:
            first_level[machine] = first_level_tlbs(machine)
        mem = s.get("walk_refs_memory", 0)
        walk_refs = s["walk_refs"] or 1
        l1 = sum(v for k, v in s.items() if k.endswith("_misses") and k[: -len("_misses")] in first_level[machine])
        rows.append([machine, s["workload"].split(":")[0], s["references"], l1, s["walks"],
                     round(s["walk_refs"] / max(s["walks"], 1), 2), f"{100 * mem / walk_refs:.1f}%",
                     round(s["cycles_per_ref"], 2)])
    return rows
