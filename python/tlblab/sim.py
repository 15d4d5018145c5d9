"""Simulation from Python: run a workload on a machine and get the statistics back.

    >>> import tlblab
    >>> r = tlblab.simulate(machine="zen3", workload="random:pages=4096,accesses=100000")
    >>> r.total["walks"]            # plain dicts
    >>> r.tlb_frame()               # pandas DataFrame, one row per (core, TLB level)

`machine` is a preset name, a path to a .toml/.json machine file, or a dict with the same
fields as a preset file. `workload` is a built-in workload spec `name:key=value,...`
(see `tlblab.workloads()`).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import os
import time
from dataclasses import dataclass, field
from os import fspath as _fspath
from pathlib import Path
from typing import Any, Callable, Iterator

from tlblab import _native, paths, phases, technique as technique_modules
# The machine descriptions live one layer down (`tlblab.machines`); they are part of this API.
from tlblab.machines import machine_arg as _machine_arg
from tlblab.machines import machine_config, machine_toml, page_sizes, presets  # noqa: F401


@dataclass
class Result:
    """The statistics of one run (see `tlblab_core::stats` for every counter's meaning)."""

    machine: str
    workload: str
    stats: dict[str, Any]
    #: The rate block: references simulated, wall and CPU seconds, references per second
    #: (`simulate`); empty for results built by hand.
    run: dict[str, Any] = field(default_factory=dict)
    #: The checkpoints a run given several to save wrote (`simulate`'s `save_checkpoint` as a
    #: list): each its `path`, `references` and `records` read; points the run ended before
    #: are not among them.
    checkpoints: list[dict[str, Any]] = field(default_factory=list)

    @property
    def total(self) -> dict[str, Any]:
        return self.stats["total"]

    @property
    def cycles(self) -> int:
        return int(self.stats["cycles"])

    @property
    def energy_j(self) -> float | None:
        """Joules the run took by its machine's energy model (`tlblab.energy`, docs/energy.md);
        None on a machine without an `[energy]` table."""
        e = self.stats.get("energy")
        return e["energy_j"] if e else None

    @property
    def avg_power_w(self) -> float | None:
        """`energy_j` over the run's simulated seconds; None without an `[energy]` table."""
        e = self.stats.get("energy")
        return e["avg_power_w"] if e else None

    def tlb_frame(self):
        """One row per (core, TLB level): accesses, hits, misses, evictions, miss_rate."""
        return self._level_frame("tlb_levels", "tlb")

    def cache_frame(self):
        """One row per (core, cache level): accesses (walk and data references), hits, misses,
        evictions (misses that replaced a valid line), miss_rate. Empty without caches."""
        return self._level_frame("cache_levels", "cache")

    def _level_frame(self, names: str, counters: str):
        import pandas as pd

        rows = []
        for core, unit in enumerate(self.stats["cores"]):
            for name, lv in zip(self.stats[names], unit[counters]):
                rows.append({"core": core, "level": name, **lv,
                             "miss_rate": lv["misses"] / lv["accesses"] if lv["accesses"] else 0.0})
        return pd.DataFrame(rows)

    def walk_frame(self):
        """One row per (core, source): walk references and data references served there."""
        import pandas as pd

        rows = []
        for core, unit in enumerate(self.stats["cores"]):
            for i, src in enumerate(self.stats["sources"]):
                rows.append({"core": core, "source": src,
                             "walk_refs": unit["walk_refs_by_source"][i],
                             "data_refs": unit["data_by_source"][i]})
        return pd.DataFrame(rows)

    def stall_cycles(self, unit: str = "total") -> dict[str, int]:
        """Data TLB stall cycles per TLB level (seed 004 Tables 2-3: the micro TLB's miss stall
        is the main TLB's lookups, the main TLB's is the walks) of `unit`: "total", "core N" or
        "process N". Empty when the run did not count them (`simulate(stall_cycles=True)`)."""
        if unit == "total":
            u = self.total
        else:
            kind, _, n = unit.partition(" ")
            u = {"core": lambda: self.stats["cores"][int(n)],
                 "process": lambda: self.stats["processes"][str(n)]}[kind]()
        return dict(zip(self.stats["tlb_levels"], u.get("data_stall_cycles", [])))

    def job_frame(self):
        """One row per job of a periodic task: release, start, end, cycles, misses per level."""
        import pandas as pd

        rows = []
        for j in self.stats["jobs"]:
            row = {k: v for k, v in j.items() if k != "tlb_misses"}
            for name, m in zip(self.stats["tlb_levels"], j["tlb_misses"]):
                row[f"{name}_misses"] = m
            rows.append(row)
        return pd.DataFrame(rows)

    def miss_frame(self):
        """One row per miss of the level the run logged (`simulate(miss_log=LEVEL)`), in order:
        reference (its index in the run), thread and job that missed (-1: none), set, page (the
        virtual address), evicted_by_page and evicted_by_thread (the page whose fill last evicted
        this one and its thread; -1 when never evicted there: a first touch; the kernel's own
        fills are thread 4294967295), victim_page (what this miss's fill evicted, -1: a free way).
        Raises ValueError when the run logged no misses."""
        import pandas as pd

        log = self.stats.get("misses")
        if log is None:
            raise ValueError("this run logged no misses: simulate(..., miss_log=LEVEL)")
        rows = []
        for r in log["records"]:
            by = r["evicted_by"]
            rows.append({"reference": r["reference"],
                         "thread": -1 if r["thread"] is None else r["thread"],
                         "job": -1 if r["job"] is None else r["job"],
                         "set": r["set"], "page": r["page"],
                         "evicted_by_page": -1 if by is None else by[0],
                         "evicted_by_thread": -1 if by is None else by[1],
                         "victim_page": -1 if r["victim"] is None else r["victim"]})
        cols = ["reference", "thread", "job", "set", "page", "evicted_by_page", "evicted_by_thread", "victim_page"]
        return pd.DataFrame(rows, columns=cols)

    def phase_frame(self):
        """One row per phase the workload marked (`PhaseBegin`/`PhaseEnd`: seed 000's first and
        second access, a measured loop), in the order the phases ended: name, occurrence, begin
        and end cycle, cycles (elapsed), ns (at the machine's clock), references, misses per TLB
        level, walks, walk references and the other counters of the phase over every core."""
        import pandas as pd

        ns_per_cycle = 1000.0 / self.stats.get("frequency_mhz", 1000.0)
        rows = []
        for p in self.stats.get("phases", []):
            st = p["stats"]
            row = {"name": p["name"], "region": p["region"], "occurrence": p["occurrence"],
                   "begin_cycle": p["begin_cycle"], "end_cycle": p["end_cycle"],
                   "cycles": p["end_cycle"] - p["begin_cycle"],
                   "ns": (p["end_cycle"] - p["begin_cycle"]) * ns_per_cycle,
                   "references": st["references"]}
            for name, lv in zip(self.stats["tlb_levels"], st["tlb"]):
                row[f"{name}_misses"] = lv["misses"]
            for k in ("walks", "walk_refs", "pwc_hits", "walk_cycles", "page_faults", "invalidations"):
                row[k] = st[k]
            for src, n in zip(self.stats["sources"], st["walk_refs_by_source"]):
                row[f"walk_refs_{src}"] = n
            row["reference_cycles"] = st["cycles"]
            row["migrations"] = p["os"]["migrations"]
            row["context_switches"] = p["os"]["context_switches"]
            rows.append(row)
        return pd.DataFrame(rows)

    @property
    def technique(self) -> dict[str, Any] | None:
        """The technique the run used: {name, params (every one, defaults included), counters}."""
        return self.stats.get("technique")

    def __repr__(self) -> str:
        # One line: the dataclass's own repr printed the whole stats dict (5-13 KB) in a
        # notebook cell or a log; the counters are in `stats` and the frames.
        s = self.summary()
        levels = ", ".join(f"{k[:-7]} misses {v}" for k, v in s.items() if k.endswith("_misses") and v)
        tech = f", technique {self.technique['name']}" if self.technique else ""
        return (f"Result(machine {self.machine!r}, workload {self.workload!r}: {s['references']} references, "
                f"{levels or 'no TLB misses'}, walks {s['walks']}, {s['cycles_per_ref']} cycles/ref{tech})")

    def _repr_html_(self) -> str:
        """A notebook's display: the headline and the TLB (and cache) levels as tables."""
        s = self.summary()
        head = (f"<p><b>{_html(self.machine)}</b>, workload <code>{_html(self.workload)}</code>: "
                f"{s['references']} references, {s['cycles']} cycles ({s['cycles_per_ref']} per reference), "
                f"{s['walks']} walks</p>")
        parts = [head, _frame_html(self._total_frame("tlb_levels", "tlb"), "TLB levels")]
        if self.stats.get("cache_levels"):
            parts.append(_frame_html(self._total_frame("cache_levels", "cache"), "cache levels"))
        if self.technique:
            parts.append(f"<p>technique <code>{_html(self.technique['name'])}</code></p>")
        return "\n".join(parts)

    def _total_frame(self, names: str, counters: str):
        import pandas as pd

        rows = [{"level": n, **lv, "miss_rate": round(lv["misses"] / lv["accesses"], 4) if lv["accesses"] else 0.0}
                for n, lv in zip(self.stats[names], self.total[counters])]
        return pd.DataFrame(rows)

    def counter_frame(self):
        """The run's headline counters as a pandas frame: one row per counter of the total, named
        as `summary` names them (`L1D_misses`, `walk_refs_memory`, ...), its value beside
        (`summary()` is the same as a dict; `tlb_frame` and the others break them down)."""
        import pandas as pd

        counts = {k: v for k, v in self.summary().items() if k not in ("machine", "workload")}
        return pd.DataFrame({"counter": list(counts), "value": list(counts.values())})

    def summary(self) -> dict[str, Any]:
        """A flat dict of the headline numbers (what `tlblab simulate` prints)."""
        t = self.total
        refs = t["references"] or 1
        out: dict[str, Any] = {"machine": self.machine, "workload": self.workload, "references": t["references"]}
        for name, lv in zip(self.stats["tlb_levels"], t["tlb"]):
            out[f"{name}_misses"] = lv["misses"]
        out["walks"] = t["walks"]
        out["walk_refs"] = t["walk_refs"]
        for src, n in zip(self.stats["sources"], t["walk_refs_by_source"]):
            out[f"walk_refs_{src}"] = n
        out["cycles"] = self.cycles
        out["cycles_per_ref"] = round(t["cycles"] / refs, 3)
        if self.stats.get("dram"):
            # The DRAM channels (`timing.dram`): lines read, written back, and their waits.
            d = self.stats["dram"]
            out["dram_lines"] = d["lines"]
            out["dram_writeback_lines"] = d.get("writeback_lines", 0)
            out["dram_queue_cycles"] = d["queue_cycles"]
            out["dram_activations"] = d.get("activations", 0)
        if self.energy_j is not None:
            out["energy_j"] = self.energy_j
            out["avg_power_w"] = self.avg_power_w
        return out


def _html(text: Any) -> str:
    import html

    return html.escape(str(text))


def _frame_html(frame, caption: str) -> str:
    """A small frame as an HTML table with a caption (the result types' `_repr_html_`)."""
    return f"<p>{_html(caption)}</p>" + frame.to_html(index=False, border=0)


def label_levels(stats: dict[str, Any]) -> dict[str, Any]:
    """Names every per-level and per-source count in `stats` (as the engine returns it) in
    place (call it on a copy to keep `Result.stats` as it is): each entry of a unit's `tlb` and `cache` lists starts with `"level": NAME`, and
    `walk_refs_by_source` / `data_by_source` become objects keyed by source (`L1D`, ...,
    `memory`). A unit is the total, each core, thread, process and phase, so `--json`
    output reads without the top-level name lists beside it."""
    units = [stats["total"], *stats["cores"], *stats["threads"].values(), *stats["processes"].values(),
             *(p["stats"] for p in stats.get("phases", []))]
    for u in units:
        for key, names in (("tlb", stats["tlb_levels"]), ("cache", stats["cache_levels"])):
            u[key] = [{"level": n, **lv} for n, lv in zip(names, u[key])]
        for key in ("walk_refs_by_source", "data_by_source"):
            if isinstance(u.get(key), list):
                u[key] = dict(zip(stats["sources"], u[key]))
    return stats


def simulate(machine: str | dict[str, Any] = "zen3", workload: str = "random", *, seed: int = 0,
             tlb_only: bool = False, caches: bool = True, data_accesses: bool = True,
             walks: bool = True, max_references: int = 0,
             os: dict[str, Any] | None = None, technique: str | dict[str, Any] | None = None,
             progress: bool = False, stall_cycles: bool = False,
             warmup: int = 0, roi: int | None = None,
             warmup_instructions: int = 0, simulation_instructions: int | None = None,
             fetches: bool = True, checkpoint_at: int | str | None = None,
             save_checkpoint: str | os.PathLike[str] | None = None,
             from_checkpoint: str | os.PathLike[str] | None = None,
             continue_after_save: bool = True, miss_log: str | None = None,
             stop_at: int | None = None, since_start: bool = False) -> Result:
    """Simulates `workload` on `machine`.

    `tlb_only=True` simulates the TLB levels alone (README.md, "Run modes"): no page
    walks (a miss in every level counts as a walk of the walker's fixed latency, and nothing is
    read from page tables), no caches, no data accesses. `caches=False, data_accesses=False`
    keeps the page walks, every page-table entry read from memory. `walks=False` needs both off.

    `os` sets the OS model: `{"switch": "auto"|"flush_all"|"asid_tagged", "asid_bits": 8,
    "switch_cycles": 0, "ipi_cycles": 0, "kernel_pages": 0, "kernel_return_pages": 0,
    "fault_kernel_pages": 0, "migrate_kernel_pages": 0, "tlb_maintenance": "ipi"|"broadcast",
    "syscall_kernel_pages": 0, "tick_kernel_pages": 0, "syscall_text_sections": 0,
    "tick_text_sections": 0, "fault_text_sections": 0, "fault_linear_map": False,
    "fault_highmem": False, "fault_clear_lines": False, "kunmap_flush": False,
    "kernel_data_sections": False, "vectors_page": False, "range_flush_whole_itlb": False}` (see
    `tlblab_core::os::OsConfig`; the text sections are masks of the kernel image's 1 MiB
    sections; `fault_linear_map` clears each fault's anonymous frame through the kernel's 1 MiB
    linear-map section of it, `fault_highmem` through the CPU's kmap_atomic fixmap page instead
    (a high-memory frame: the slot's PTE written and flushed, then walked),
    `fault_clear_lines` makes that clear store every line of the 4 KiB frame (Linux's
    `clear_page`) instead of its first byte, `kunmap_flush` writes and flushes the fixmap
    slot's PTE again after the clear (PREEMPT_RT's `kunmap_atomic`),
    `kernel_data_sections` translates the kernel's data pages as the linear map's 1 MiB
    sections, `vectors_page` sends every kernel entry through the ARM exception vectors' two
    pages, `range_flush_whole_itlb` makes munmap and mprotect empty the instruction TLBs whole,
    as the SA-1100's Linux does).

    `technique` switches on a technique, `"NAME[:key=value,...]"` (`tlblab.techniques()` lists
    them with their parameters) or a table as a machine file's (`{"name": NAME, key: value}`);
    it overrides a `[technique]` table of the machine file.

    `max_references=0` means no limit. `progress=True` redraws a line on stderr about once a
    second (references done, rate, time left when the length is known). Ctrl-C stops the run
    within a fraction of a second with `KeyboardInterrupt`.

    `Result.stats` keeps the engine's layout: per-level and per-source counts are lists in the
    order of `stats["tlb_levels"]`, `["cache_levels"]` and `["sources"]`; `label_levels` (what
    `tlblab simulate --json` prints) names them.

    A technique with a Python module (`tlblab.technique`) turns its spec into the engine's first,
    given here or in the machine file's `[technique]` table: `lockdown:pages=FILE.csv` reads a
    profile (`tlblab profile`; a relative path from the working directory) and locks its top
    pages.

    `stall_cycles=True` counts the data TLB stall cycles per level (`Result.stall_cycles`, seed
    004 Tables 2-3); runs with a technique that keeps the engine on its general path count them
    anyway. Every other counter is the same either way.

    `miss_log="L1D"` (a TLB level's name) logs every miss of that level with its set, page,
    thread, job and the page whose fill last evicted it (`Result.miss_frame`); the run takes
    the engine's general path throughout, and every counter is what it would have been.

    Warm-up and region of interest: `warmup=W` simulates the first W references, then resets
    the statistics (the engine snapshots every counter there and reports the difference), and
    `roi=S` stops S references later; every counter then covers the S references alone and
    `stats["warmup"]` says what was left out (its references and the machine's time). It is
    exactly what a run limited to W+S references and one limited to W differ by. On a ChampSim
    trace, `warmup_instructions` and `simulation_instructions` count instructions instead, as
    ChampSim's own options do, and `fetches=False` drops each record's instruction fetch (the
    reference counts then count data references).

    `Result.run` is the rate block (the `run` object of `tlblab simulate --json`): references
    simulated (warm-up included; `roi_references` without it), wall and CPU seconds (the whole
    process: decoding included), references per second. It is kept apart from `stats`, whose
    counters are deterministic.

    Checkpoints (docs/checkpoints.md): `checkpoint_at="roi"` (or a reference count) with
    `save_checkpoint=FILE` pauses the run at the first batch of records read once the region of
    interest began (or at or after that many references), saves the whole engine state to FILE,
    and runs on to the end. `from_checkpoint=FILE` restores it (same machine, options and
    workload, or one error naming what differs) and runs the rest, bit for bit as the
    uninterrupted run; `technique` is then installed at the checkpoint (a run with one cannot
    be saved). `max_references` counts from the run's start either way;
    `continue_after_save=False` stops at the checkpoint (the statistics are then the run's up
    to it). `tlblab.checkpoint` saves one once per content and returns its path. Several
    checkpoints in one run: `checkpoint_at` a list of reference counts in run order (`"roi"`
    may be the first) and `save_checkpoint` a list of as many files; the run pauses, saves and
    goes on at each (`tlblab.intervals` writes its interval boundaries so); `Result.checkpoints`
    lists those saved, and a point the run ends before is left out rather than an error.

    An interval of a run (`tlblab.intervals`): `stop_at=N` stops the run at the first batch
    boundary at or after N references, where `checkpoint_at=N` would have paused it, and
    `since_start=True` reports the counters from where the run began (a restored run: the
    checkpoint, with `technique` just installed) rather than from the run's start.
    """
    max_references = _run_limits(max_references, warmup, roi, warmup_instructions,
                                 simulation_instructions, fetches)
    _check_cores(machine, workload)
    spec, fmt = _machine_arg(machine)
    if tlb_only:
        caches = data_accesses = walks = False
    technique_json = technique_modules.run_table(technique, machine)
    several = isinstance(save_checkpoint, (list, tuple))
    key = None
    if _REUSED is not None and not (checkpoint_at is not None or save_checkpoint or from_checkpoint
                                    or miss_log or stop_at is not None or since_start):
        key = _reuse_key(spec, fmt, workload, technique_json, seed, caches, data_accesses, walks,
                         max_references, os, stall_cycles, warmup, fetches, warmup_instructions,
                         simulation_instructions)
        if key in _REUSED:
            return copy.deepcopy(_REUSED[key])
    wall0, cpu0 = time.perf_counter(), time.process_time()
    with phases.phase(phases.SIMULATION):  # tlblab reproduce's timings (tlblab.phases)
        raw = _native.simulate(spec, workload, seed=seed, caches=caches, data_accesses=data_accesses,
                               walks=walks, max_references=max_references, machine_format=fmt,
                               os_json=json.dumps(os or {}), technique_json=technique_json, progress=progress,
                               stall_cycles=stall_cycles, warmup=warmup, fetches=fetches,
                               warmup_instructions=warmup_instructions,
                               simulation_instructions=simulation_instructions or 0,
                               checkpoint_at=_listed(checkpoint_at, str),
                               save_checkpoint=_listed(save_checkpoint, _fspath),
                               from_checkpoint=_fspath(from_checkpoint) if from_checkpoint else "",
                               continue_after_save=continue_after_save, miss_log=miss_log or "",
                               stop_at=None if stop_at is None else _count("stop_at", stop_at),
                               since_start=since_start, checkpoint_pass=several)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    stats = json.loads(raw)
    saved = []
    if several:
        stats, saved = stats["stats"], stats["checkpoints"]
    simulated = stats["total"]["references"] + (stats.get("warmup") or {}).get("references", 0)
    run = {"references": simulated, "roi_references": stats["total"]["references"],
           "wall_seconds": round(wall, 6), "cpu_seconds": round(cpu, 6),
           "refs_per_second": round(simulated / wall) if wall > 0 else 0}
    stats["frequency_mhz"] = _frequency_mhz(machine)
    _add_energy(machine, stats)
    result = Result(machine=stats["machine"], workload=workload, stats=stats, run=run, checkpoints=saved)
    if key is not None and _REUSED is not None and len(raw) <= REUSE_MAX_BYTES:
        _REUSED[key] = copy.deepcopy(result)
    return result


# The runs `reusing` keeps, by `_reuse_key` (None: outside it, nothing kept), and the largest
# statistics it keeps (a run's every job, seed 003's, is made again rather than held).
_REUSED: dict[str, Result] | None = None
REUSE_MAX_BYTES = 1 << 20


@contextlib.contextmanager
def reusing() -> Iterator[None]:
    """Inside it, `simulate` makes each run once: a call whose inputs equal an earlier one's
    returns a copy of that run's result (its `run` block, the rate, the first run's). `tlblab
    reproduce` runs each seed's reproductions inside one (seed 004's page selections simulate a
    scenario's baseline and its most-frequent set again beside the scenario's own runs). Runs
    that save or restore checkpoints, log misses or stop early are always made, and statistics
    over `REUSE_MAX_BYTES` of JSON are not kept. Nested, the outermost keeps the runs."""
    global _REUSED
    outer = _REUSED
    if outer is None:
        _REUSED = {}
    try:
        yield
    finally:
        _REUSED = outer


def _reuse_key(spec: str, fmt: str, workload: str, technique_json: str | None, *options: Any) -> str:
    """What determines a run (`reusing`): the machine (a file's by its content), the workload (a
    trace file's by its content, `files.file_digest`), the technique's table with its
    parameters' defaults filled in (`cores=one` is the same run as no `cores`), every option."""
    from tlblab import files

    def content(arg: str) -> str:
        # (os.path.isfile: a spec or a machine's JSON is no file, however long.)
        return files.file_digest(arg) if os.path.isfile(arg) else arg

    table = json.loads(technique_json) if technique_json else None
    if table:
        info = next((t for t in _native_techniques() if t["name"] == table.get("name")), None)
        defaults = {p["name"]: p["default"] for p in (info or {}).get("params", [])}
        table = {**defaults, **table}
    return json.dumps([content(spec), fmt, content(workload), table, *options], sort_keys=True, default=str)


@functools.lru_cache(maxsize=1)
def _native_techniques() -> list[dict[str, Any]]:
    return techniques()


def _add_energy(machine: str | dict[str, Any], stats: dict[str, Any]) -> None:
    """`stats["energy"]`: the run's energy by its machine's `[energy]` table (`tlblab.energy`,
    docs/energy.md), when the machine has one."""
    from tlblab.energy import run_energy

    config = machine if isinstance(machine, dict) and "frequency_mhz" in machine else machine_config(machine)
    energy = run_energy(config, stats) if config.get("energy") else None
    if energy:
        stats["energy"] = energy


def _listed(value: Any, form: Callable[[Any], str]) -> list[str]:
    """`checkpoint_at` / `save_checkpoint` as the engine takes them: one per checkpoint."""
    if value is None or value == "":
        return []
    if isinstance(value, (list, tuple)):
        return [form(v) for v in value]
    return [form(value)]


def checkpoint(machine: str | dict[str, Any] = "zen3", workload: str = "random", *, at: int | str = "roi",
               seed: int = 0, tlb_only: bool = False, caches: bool = True, data_accesses: bool = True,
               walks: bool = True, os: dict[str, Any] | None = None, warmup: int = 0,
               directory: str | os.PathLike[str] | None = None) -> Path:
    """The checkpoint of `workload` on `machine` at `at` ("roi" or a reference count; see
    `simulate`), saved once under `directory` in a file named by the content it depends on
    (the machine's configuration, the workload, the run options, the point, and the engine
    extension's own bytes: a rebuilt engine saves afresh) and reused after. Every variant of an
    experiment (techniques, their parameters) then runs `simulate(..., from_checkpoint=path)`
    from the same state, and the phase before it (population, graph construction) runs once."""
    from tlblab.files import content_digest

    config = machine if isinstance(machine, dict) else machine_config(machine)
    engine = Path(_native.__file__).read_bytes()
    options = json.dumps({"seed": seed, "tlb_only": tlb_only, "caches": caches, "data_accesses": data_accesses,
                          "walks": walks, "os": os or {}, "warmup": warmup, "at": str(at)}, sort_keys=True)
    key = content_digest(json.dumps(config, sort_keys=True), workload, options, engine)
    path = Path(directory if directory is not None else paths.out("checkpoints")) / f"{key}.ckpt"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        simulate(machine, workload, seed=seed, tlb_only=tlb_only, caches=caches, data_accesses=data_accesses,
                 walks=walks, os=os, warmup=warmup, checkpoint_at=at, save_checkpoint=path,
                 continue_after_save=False)
    return path


def checkpoint_info(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A checkpoint's header (docs/checkpoints.md): `machine`, `options`, `workload`, `records`
    (of the workload read), `references` (simulated, warm-up included), the state's size and
    checksum. The state itself is checked when a run restores it."""
    with open(path, "rb") as f:
        head = f.read(16)
        if len(head) < 16 or head[:8] != b"TLBLABCK":
            raise ValueError(f"{_fspath(path)}: not a tlblab checkpoint (expected the bytes \"TLBLABCK\" at offset 0)")
        size = int.from_bytes(head[12:16], "little")
        try:
            return json.loads(f.read(size))
        except ValueError as e:
            raise ValueError(f"{_fspath(path)}: corrupt header at offset 16: {e}") from None


def _count(name: str, value: Any, minimum: int = 0, flag: str | None = "") -> int:
    """A reference or instruction count given to `simulate`: an integer (not a bool) of at least
    `minimum`; anything else is one message naming the option: the argument and its command-line
    flag (by default `--` and the name; `flag=None` where the command line has none: `--sample`'s
    UNIT is no `--unit`)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum or value >= 2**64:
        what = "a positive" if minimum else "a non-negative"
        if flag == "":
            flag = "--" + name.replace("_", "-")
        named = f"{name} ({flag})" if flag else name
        raise ValueError(f"{named}: expected {what} integer count, found {value!r}")
    return value


def _run_limits(max_references: int, warmup: int, roi: int | None, warmup_instructions: int,
                simulation_instructions: int | None, fetches: bool) -> int:
    """Checks the run's limits (warm-up, region of interest, instruction counts); returns the
    reference limit the engine stops at (0: none)."""
    max_references = _count("max_references", max_references)
    _count("warmup", warmup)
    _count("warmup_instructions", warmup_instructions)
    if not isinstance(fetches, bool):
        raise ValueError(f"fetches: expected true or false, found {fetches!r}")
    if roi is not None:
        _count("roi", roi, minimum=1)
        if max_references:
            raise ValueError("roi (--roi) and max_references (--max-references) both limit the run: "
                             "give one (roi counts after the warm-up)")
        max_references = warmup + roi
    if simulation_instructions is not None:
        _count("simulation_instructions", simulation_instructions, minimum=1)
    if (warmup_instructions or simulation_instructions is not None) and (warmup or roi is not None):
        raise ValueError("warmup/roi (--warmup, --roi) count references and warmup_instructions/"
                         "simulation_instructions (--warmup-instructions, --simulation-instructions) "
                         "count instructions: give one pair")
    if warmup and max_references and max_references <= warmup:
        raise ValueError(f"max_references (--max-references) {max_references} is within the warm-up "
                         f"(--warmup {warmup}): nothing would be measured")
    return max_references


def _check_cores(machine: str | dict[str, Any], workload: str) -> None:
    """A built-in workload given `cores=N` (seed 000's migration benchmarks, `rr_migration`,
    `lockdown_mix`) names hardware threads to run on; the engine places an event's core modulo
    the machine's hardware threads, so N beyond them once folded silently
    (`migration_4k:cores=3` on a 2-core machine: 667 migrations, not 1000). Refused instead.
    Only specs that give `cores` pay for the machine's parse."""
    if "cores=" not in workload:
        return
    try:
        name, params = _native.parse_workload_spec(workload)
    except ValueError:
        return  # not a spec (a trace file's name) or a bad one: the run reports it
    cores = dict(params).get("cores")
    if cores is None:
        return
    m = machine if isinstance(machine, dict) and "threads_per_core" in machine else machine_config(machine)
    hw = int(m["cores"]) * int(m.get("threads_per_core", 1))
    if cores > hw:
        raise ValueError(f"workload '{workload}': cores={cores}, but machine {m['name']} has {hw} hardware "
                         f"thread{'s' if hw != 1 else ''} (cores x threads_per_core); expected cores <= {hw} "
                         f"(more would fold onto them)")


def _frequency_mhz(machine: str | dict[str, Any]) -> float:
    # A dict from `machine_config` (a sweep's points) carries it: no second parse of the machine.
    f = machine.get("frequency_mhz") if isinstance(machine, dict) else None
    if isinstance(f, (int, float)) and not isinstance(f, bool) and f > 0:
        return float(f)
    return float(machine_config(machine)["frequency_mhz"])


def techniques() -> list[dict[str, Any]]:
    """The techniques you can switch on: name, summary, seed (the sections the model follows),
    params (each with name, default, meaning)."""
    return json.loads(_native.techniques())


def check_technique(technique: str | dict[str, Any], machine: str | dict[str, Any] = "zen3") -> None:
    """Raises ValueError naming the parameter if `technique` (`NAME[:key=value,...]` or a
    `[technique]` table) cannot run on `machine`."""
    spec, fmt = _machine_arg(machine)
    _native.check_technique(json.dumps(technique_modules.table(technique)), spec, machine_format=fmt)


def workloads() -> list[dict[str, Any]]:
    """The built-in workloads: name, summary, source (seed section), in_default_set, params
    (each with name, default, meaning). Same as `tlblab.trace.catalog()`."""
    from tlblab.trace import catalog

    return catalog()
