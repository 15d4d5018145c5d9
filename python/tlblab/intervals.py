"""One long run across a cluster: a pass writes checkpoints at interval boundaries, the detailed
intervals run as Dask tasks, and their statistics merge into one result (docs/intervals.md).

    >>> import tlblab
    >>> run = tlblab.intervals("zen3", "gups:log2_words=22,updates=400k,populate=1", 4,
    ...                        max_references=1_000_000)       # a LocalCluster over the cores
    >>> run.result.total["walks"]                           # the uninterrupted run's, exactly

The pass is one run of the workload that pauses at each boundary, saves the engine's whole
state there (`simulate(..., checkpoint_at=[...], save_checkpoint=[...])`, docs/checkpoints.md)
and goes on. Interval i is restored from the pass's checkpoint i and stops where checkpoint
i + 1 was saved (`stop_at`); it reports its own counters (`since_start`), and `Stats::then`
adds them up. In the pass's configuration the merged statistics are the uninterrupted run's in
every counter (tests/test_intervals.py; `crates/tlblab-config/tests/checkpoint.rs` on random
machines and cut points). With `technique`, every interval starts from the pass's state (run
without it) with the technique installed at its boundary, as seed 001's experiments start
theirs where the measured phase begins: the merged result is then K such starts, not one run
with the technique throughout.

Everything is kept under `out` by content: the pass's checkpoints and statistics in a folder
named by a digest of the machine, workload, run options, boundaries and the engine's bytes, and
each interval's statistics in it by a digest of what the interval ran. A run killed at any
point, re-run with the same arguments, reuses the pass if it finished and every interval that
finished; a worker killed mid-interval has its task run again on another (Dask). The workers
read the checkpoints from that folder: on a cluster of several machines it must be on a file
system they share, as a sweep's traces must.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from tlblab import paths
from tlblab.errors import UserError

#: The most intervals a run is cut into (`every` stops adding boundaries there; the last
#: interval then runs to the end).
MAX_INTERVALS = 1024


@dataclass
class IntervalRun:
    """An interval-parallel run: the merged result and how it was made."""

    #: The merged statistics (a `tlblab.Result`, as `simulate` returns).
    result: Any
    #: The pass's own statistics: the uninterrupted run in the pass's configuration (no technique).
    pass_result: Any
    #: Per interval: `index`, `begin` and `end` (references; `end` None for the last, which
    #: runs to the end), `host_seconds` and `host_cpu_seconds` (the task's wall and thread CPU
    #: time, restore included), `host_process` (the process id that ran it), `reused` (from an
    #: earlier run), `graph` (what the graph cache did in it: `graph_cache`).
    intervals: list[dict[str, Any]] = field(default_factory=list)
    #: The folder holding the pass's checkpoints and the intervals' results.
    directory: Path = Path()
    pass_seconds: float = 0.0
    pass_reused: bool = False
    #: What the graph cache did in the pass (`graph_cache`; empty for a pass reused).
    pass_graph: dict[str, Any] = field(default_factory=dict)
    #: Wall seconds of the interval phase (the cluster's start included).
    interval_seconds: float = 0.0
    where: str = ""

    def __repr__(self) -> str:
        ran = sum(not i["reused"] for i in self.intervals)
        read, drawn = (sum(i.get("graph", {}).get(k, 0) for i in self.intervals) for k in ("loaded", "built"))
        graph = f" (graph read from the cache {read}x, drawn {drawn}x)" if read or drawn else ""
        return (f"{len(self.intervals)} intervals ({ran} run, {len(self.intervals) - ran} from an earlier run) on "
                f"{self.where}: pass {self.pass_seconds:.1f} s{' (reused)' if self.pass_reused else ''}, "
                f"intervals {self.interval_seconds:.1f} s{graph}")

    def _repr_html_(self) -> str:
        """A notebook's display: how the run was cut, then the merged result's tables."""
        from tlblab.sim import _html

        return f"<p>{_html(repr(self))}</p>" + self.result._repr_html_()


def run_interval(task_json: str) -> dict[str, Any]:
    """Runs one interval (on a worker): restores its checkpoint, installs the technique if any,
    runs to the next boundary and returns its own counters as JSON text (Dask then passes a
    string through, not a nested dict it would walk). Plain data in and out."""
    from tlblab.sim import simulate
    from tlblab.sweeps.run import keep_freed_memory

    keep_freed_memory()
    t = json.loads(task_json)
    t0, c0 = time.perf_counter(), time.thread_time()
    try:
        with graph_cache(*(t.get("graph_cache") or (None, ""))) as graph:
            r = simulate(t["machine"], t["workload"], seed=t["seed"], caches=t["caches"],
                         data_accesses=t["data_accesses"], walks=t["walks"], max_references=t["max_references"],
                         os=t["os"], technique=t["technique"], from_checkpoint=t["checkpoint"],
                         stop_at=t["stop_at"], since_start=not t["first"])
    except (ValueError, OSError) as e:
        return {"key": t["key"], "index": t["index"], "error": str(e)}
    r.stats.pop("frequency_mhz", None)
    r.stats.pop("energy", None)  # the merged run's is computed from the merged counters
    return {"key": t["key"], "index": t["index"], "stats": json.dumps(r.stats),
            "host_seconds": time.perf_counter() - t0, "host_cpu_seconds": time.thread_time() - c0,
            "host_process": os.getpid(), "graph": graph}


@contextmanager
def graph_cache(directory: str | Path | None, tag: str = "") -> Iterator[dict[str, Any]]:
    """Caches the graph workloads' graphs in `directory` (files tagged `tag`) while the block
    runs (`tlblab_trace::workloads::graph_cache`: read there when this process has not built
    the graph, written there once built), then turns the cache off. Yields a dict that, after
    the block, says what the cache did in it: `loaded`, `built`, `kept` (graphs this process
    already held), `written`, `seconds` (reading and building), `defects` (files found damaged,
    rebuilt and replaced). The setting is the process's: on a worker of several threads a task
    that ends turns it off under another, which then draws its graph (slower, never different)
    and counts in both tasks' dicts."""
    from tlblab import _native

    before = json.loads(_native.graph_cache_stats())
    did: dict[str, Any] = {}
    _native.graph_cache(None if directory is None else str(directory), tag)
    try:
        yield did
    finally:
        _native.graph_cache(None)
        after = json.loads(_native.graph_cache_stats())
        did.update({k: after[k] - before[k] for k in ("loaded", "built", "kept", "written")})
        did["seconds"] = round(after["load_seconds"] - before["load_seconds"]
                               + after["build_seconds"] - before["build_seconds"], 6)
        did["defects"] = after["defects"][len(before["defects"]):]


def intervals(machine: str | dict[str, Any] = "zen3", workload: str = "random", k: int | None = None, *,
              every: int | None = None, technique: str | None = None, seed: int = 0, tlb_only: bool = False,
              caches: bool = True, data_accesses: bool = True, walks: bool = True, max_references: int = 0,
              warmup: int = 0, os: dict[str, Any] | None = None, scheduler: str | None = None,
              workers: int | None = None, serial: bool = False, out: str | Path | None = None,
              progress: bool | Callable[[int, int], None] = False) -> IntervalRun:
    """Runs `workload` on `machine` cut into `k` intervals of equal length in references (or
    intervals of `every` references), the intervals in parallel; returns the merged result
    (module doc). The length is `max_references`, else the workload's own when it says it
    (trace files, most generators; give `max_references` or `every` otherwise). With `warmup`,
    the intervals cover the region of interest after it, and the merged statistics are what
    `simulate(..., warmup=W)` reports.

    The intervals run on `scheduler` (`tcp://HOST:PORT`), or a new LocalCluster of `workers`
    processes (default: one per core), or in this process with `serial=True` (as `tlblab
    sweep`). `progress` is True for a bar on stderr, or a callable given (done, total) as each
    interval arrives."""
    from tlblab import _native
    from tlblab.files import atomic_write, content_digest
    from tlblab.machines import machine_config
    from tlblab.sim import Result, _add_energy, _count, _frequency_mhz

    if (k is None) == (every is None):
        raise UserError("intervals: give the number of intervals (--intervals K) or their length "
                        "(--interval-length N), one of them")
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_INTERVALS):
        raise UserError(f"--intervals: expected a number of intervals from 1 to {MAX_INTERVALS}, found {k!r}")
    if every is not None:
        _count("interval_length", every, minimum=1)
    max_references = _count("max_references", max_references)
    _count("warmup", warmup)
    if warmup and max_references and max_references <= warmup:
        raise UserError(f"--max-references {max_references} is within the warm-up (--warmup {warmup}): "
                        "nothing would be measured")
    if tlb_only:
        caches = data_accesses = walks = False
    config = machine if isinstance(machine, dict) else machine_config(machine)
    if k is not None:
        length = max_references or _native.workload_length(workload, seed)
        if not length:
            raise UserError(f"--intervals {k}: the workload {workload} does not say its length before it runs: "
                            "give --max-references, or --interval-length N (references per interval)")
        if length <= warmup:
            raise UserError(f"--intervals {k}: the run's length ({length}) is within the warm-up "
                            f"(--warmup {warmup}): nothing would be measured")
        bounds = [warmup + i * (length - warmup) // k for i in range(k)]
    else:
        bounds = []
        while len(bounds) < MAX_INTERVALS and (not max_references or warmup + len(bounds) * every < max_references):
            bounds.append(warmup + len(bounds) * every)
    bounds = sorted(set(bounds))

    modes = {"caches": caches, "data_accesses": data_accesses, "walks": walks}
    options = {"seed": seed, **modes, "max_references": max_references, "warmup": warmup, "os": os or {},
               "bounds": bounds}
    engine = Path(_native.__file__).read_bytes()
    key = content_digest(json.dumps(config, sort_keys=True), workload, json.dumps(options, sort_keys=True), engine)
    out = Path(out) if out is not None else paths.out("intervals")
    folder = out / key
    # The graph workloads' graphs, shared by every run under `out` of this engine (their files
    # carry the engine's digest): the pass writes the graph, each worker reads it.
    graphs = [str(Path(out) / "graphs"), content_digest(engine)]
    try:
        (folder / "results").mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"{folder}: cannot write the run there: {e.strerror or e}") from None

    # The pass: one run, a checkpoint at each boundary; its record is written last.
    record = folder / "pass.json"
    t0 = time.perf_counter()
    done = _read_json(record)
    reused = done is not None and all((folder / c["file"]).is_file() for c in done["checkpoints"])
    if not reused:
        from tlblab.sim import simulate

        files = [f"c{i:04d}.ckpt" for i in range(len(bounds))]
        try:
            with graph_cache(*graphs) as pass_graph:
                p = simulate(config, workload, seed=seed, max_references=max_references, os=os, warmup=warmup,
                             checkpoint_at=[str(b) for b in bounds], save_checkpoint=[folder / f for f in files],
                             progress=progress is True, **modes)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)  # a pass that did not finish leaves nothing
            raise
        saved = [{"file": Path(c["path"]).name, "references": c["references"], "records": c["records"]}
                 for c in p.checkpoints]
        if not saved:
            raise UserError(f"intervals: the run ended at reference {p.run['references']}, before the first "
                            f"boundary ({bounds[0]}): nothing to cut")
        p.stats.pop("frequency_mhz", None)
        p.stats.pop("energy", None)
        done = {"stats": p.stats, "run": p.run, "checkpoints": saved, "graph": pass_graph}
        atomic_write(record, json.dumps(done))
    pass_seconds = time.perf_counter() - t0
    cps = done["checkpoints"]
    frequency = {"frequency_mhz": _frequency_mhz(config)}
    pass_stats = {**done["stats"], **frequency}
    _add_energy(config, pass_stats)
    pass_result = Result(machine=done["stats"]["machine"], workload=workload, stats=pass_stats, run=done["run"])

    # The intervals: each from its checkpoint to where the next one was saved.
    tasks = []
    for i, c in enumerate(cps):
        stop = bounds[i + 1] if i + 1 < len(cps) else None
        t = {"machine": config, "workload": workload, "seed": seed, **modes, "os": os or {},
             "max_references": max_references, "technique": technique, "checkpoint": str(folder / c["file"]),
             "stop_at": stop, "first": i == 0, "index": i}
        t["key"] = content_digest(key, json.dumps({**t, "checkpoint": c}, sort_keys=True))
        t["graph_cache"] = graphs
        tasks.append(t)
    results: dict[int, dict[str, Any]] = {}
    for t in tasks:
        r = _read_json(folder / "results" / f"{t['key']}.json")
        if r is not None and "stats" in r:
            results[t["index"]] = {**r, "reused": True}
    todo = [t for t in tasks if t["index"] not in results]

    bar = None
    if progress is True and todo:
        import sys

        from tlblab.progress import bar as progress_bar

        bar = progress_bar(len(tasks), "intervals", "interval", initial=len(tasks) - len(todo))

    def arrived(res: dict[str, Any]) -> None:
        if "error" in res:
            raise UserError(f"interval {res['index']}: {res['error']} (remove {folder} to run its pass again)")
        atomic_write(folder / "results" / f"{res['key']}.json", json.dumps(res))
        results[res["index"]] = {**res, "reused": False}
        if bar is not None:
            bar.update(1)
        elif callable(progress):
            progress(len(results), len(tasks))

    from tlblab.sweeps.run import Report, dask_client

    rep = Report()
    t1 = time.perf_counter()
    try:
        if serial or not todo:
            rep.where = "this process"
            for t in todo:
                arrived(run_interval(json.dumps(t)))
        else:
            from distributed import as_completed

            with dask_client(scheduler, workers, rep) as (client, _n):
                # Later intervals first (Dask runs a higher priority first): an interval reads
                # and drops the records before its checkpoint, so the later ones cost more, and
                # the longest first keeps the workers' ends together (LPT scheduling).
                # Submitted in that order too: a task submitted while a worker is idle starts
                # at once, before the priorities of those submitted after it are known.
                futures = [client.submit(run_interval, json.dumps(t), key=f"tlblab-interval-{t['key']}",
                                         pure=False, retries=1, priority=t["index"]) for t in reversed(todo)]
                for fut in as_completed(futures):
                    arrived(fut.result())
    finally:
        if bar is not None:
            bar.close()
    interval_seconds = time.perf_counter() - t1

    ordered = [results[i] for i in range(len(tasks))]
    merged = json.loads(_native.merge_stats([r["stats"] for r in ordered]))
    simulated = merged["total"]["references"] + (merged.get("warmup") or {}).get("references", 0)
    wall = pass_seconds + interval_seconds
    run = {"references": simulated, "roi_references": merged["total"]["references"],
           "wall_seconds": round(wall, 6),
           # This call's work: the pass's if it ran here, and the intervals that ran here.
           "cpu_seconds": round((0.0 if reused else done["run"]["cpu_seconds"])
                                + sum(r.get("host_cpu_seconds", 0) for r in ordered if not r["reused"]), 6),
           "refs_per_second": round(simulated / wall) if wall > 0 else 0}
    merged.update(frequency)
    _add_energy(config, merged)  # the energy model over the merged counters (tlblab.energy)
    result = Result(machine=merged["machine"], workload=workload, stats=merged, run=run)
    rows = [{"index": i, "begin": cps[i]["references"], "end": cps[i + 1]["references"] if i + 1 < len(cps) else None,
             "host_seconds": ordered[i].get("host_seconds", 0.0),
             "host_cpu_seconds": ordered[i].get("host_cpu_seconds", 0.0),
             "host_process": ordered[i].get("host_process"), "reused": ordered[i]["reused"],
             "graph": ordered[i].get("graph", {})}
            for i in range(len(tasks))]
    return IntervalRun(result=result, pass_result=pass_result, intervals=rows, directory=folder,
                       pass_seconds=pass_seconds, pass_reused=reused, interval_seconds=interval_seconds,
                       pass_graph={} if reused else done.get("graph", {}),
                       where=rep.where)


def _read_json(path: Path) -> dict[str, Any] | None:
    """A finished file of an earlier run (written atomically), or None."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None
