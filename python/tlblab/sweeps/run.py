"""Running a sweep's points: in this process, on a Dask LocalCluster, or on an existing scheduler.

Each point's result is written, as it arrives, to `<out>/points/<key>.json` (the key is a hash
of everything that decides the result: `Point.key`), atomically; a sweep re-run with the same
`out` loads those and runs only the rest, so a killed sweep resumes where it stopped. The
client writes the files, not the workers: only the traces need a path every worker can read.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

from tlblab.errors import UserError
from tlblab.files import atomic_write
from tlblab.sweeps.grid import Grid, Point, _mode_kwargs, expand


def run_point(task: dict[str, Any]) -> dict[str, Any]:
    """Runs one point (on a worker): the run's headline numbers, the technique's counters and the
    host seconds it took. Plain data in and out, so any worker with tlblab installed can run it."""
    from tlblab.sim import simulate

    t0, c0 = time.perf_counter(), time.thread_time()
    r = simulate(task["machine"], task["workload"], seed=task["seed"],
                 max_references=task["max_references"], os=task["os"],
                 warmup=task.get("warmup", 0), roi=task.get("roi"),
                 **_mode_kwargs(task["mode"]))
    metrics = {k: v for k, v in r.summary().items() if k not in ("machine", "workload")}
    tech = r.stats.get("technique") or {}
    for k, v in (tech.get("counters") or {}).items() if isinstance(tech, dict) else ():
        if isinstance(v, (int, float)):
            metrics[f"technique_{k}"] = v
    return {"key": task["key"], "metrics": metrics, "host_seconds": time.perf_counter() - t0,
            "host_cpu_seconds": time.thread_time() - c0}


_MALLOC_TUNED = False


def keep_freed_memory() -> None:
    """Makes glibc keep the memory a point frees for the next point, in this process (a worker,
    or the client of a serial sweep). A run allocates ~6 MB for the zen3 machine (its caches'
    tags) and its trace reader, and frees it at the end:
    - in a Dask worker, the nanny's `MALLOC_TRIM_THRESHOLD_=65536`
      (`distributed.nanny.pre-spawn-environ`) stops glibc from raising its mmap threshold, so
      every run's 6 MB came fresh from the kernel, zeroed and faulted in: 201 one-reference
      engine runs took 0.37 s instead of 0.14 s;
    - with glibc's defaults the threshold adapts, but the heap's top is still given back above
      twice it: 200 points of 400 K references took 1.69 s of CPU in one process, 1.30 s with
      this (Xeon VM, one core).
    Here allocations up to 32 MiB (glibc's largest mmap threshold) come from the heap and up to
    64 MiB of freed memory stays. Linux/glibc only; elsewhere nothing."""
    global _MALLOC_TUNED
    if _MALLOC_TUNED:
        return
    _MALLOC_TUNED = True
    if sys.platform != "linux":
        return
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return  # not glibc
    m_trim_threshold, m_mmap_threshold = -1, -3  # <malloc.h>
    mallopt(m_mmap_threshold, 32 << 20)
    mallopt(m_trim_threshold, 64 << 20)


def run_points(tasks_json: str) -> list[dict[str, Any]]:
    """Runs several points in one task (on a worker): a point costs the engine milliseconds,
    about what a Dask task costs, so one task per point would spend the cores on scheduling.
    The tasks come as one JSON text (`Point.task` each): Dask walks a task's arguments looking
    for futures, and 200 nested machine dicts cost the client and scheduler CPU taken from the
    workers' cores; a string it passes through.
    A point that fails is returned as {"key", "error"}, named by the caller."""
    keep_freed_memory()
    tasks = json.loads(tasks_json)
    out = []
    for t in tasks:
        try:
            out.append(run_point(t))
        except (ValueError, OSError) as e:
            out.append({"key": t["key"], "error": str(e)})
    return out


def _write_atomic(path: Path, data: dict[str, Any]) -> None:
    atomic_write(path, json.dumps(data))  # in the engine's order: the DataFrame's columns follow it


def _load_done(points_dir: Path | None, keys: set[str]) -> dict[str, dict[str, Any]]:
    done: dict[str, dict[str, Any]] = {}
    if points_dir is None or not points_dir.is_dir():
        return done
    for k in keys:
        p = points_dir / f"{k}.json"
        if p.is_file():
            try:
                done[k] = json.loads(p.read_text())
            except (OSError, json.JSONDecodeError):
                pass  # a file from a run killed mid-write cannot exist (atomic); any other: redo it
    return done


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


class Report:
    """How the last sweep went: points run here and reused from an earlier run, seconds."""

    def __init__(self) -> None:
        self.total = 0
        self.ran = 0
        self.reused = 0
        self.seconds = 0.0
        self.cpu_seconds = 0.0  # the engine's CPU time over the points run (not queueing, not start-up)
        self.where = ""

    def __repr__(self) -> str:
        return (f"{self.total} points ({self.ran} run, {self.reused} from an earlier run) in "
                f"{self.seconds:.1f} s on {self.where}")


LAST = Report()


def sweep(grid: Grid | dict[str, Any] | str | Path, out: str | Path | None = None, *,
          scheduler: str | None = None, workers: int | None = None, serial: bool = False,
          progress: bool | Callable[[int, int], None] = True, limit: int | None = None):
    """Runs every point of `grid` (a `Grid`, a dict, or a TOML file) and returns one DataFrame:
    a row per point, in grid order, with the axis values and the run's numbers.

    `serial=True` runs in this process; otherwise on `scheduler` (`tcp://HOST:PORT`) or a new
    LocalCluster of `workers` processes (default: one per core). With `out`, each point is saved
    as it finishes and the DataFrame written as `<out>/sweep.parquet`; a re-run with the same `out`
    reuses the saved points. `limit` stops after that many new points (for tests and trials).

    The engine checks every distinct machine and workload (`grid.check_jobs`) before the first
    point runs and before anything is written: on the cluster when there is one, since the
    checks cost a millisecond each and a grid may have hundreds of distinct machines.
    """
    import pandas as pd

    from tlblab.sweeps import grid as g

    if isinstance(grid, (str, Path)):
        grid = g.load(grid)
    elif isinstance(grid, dict):
        grid = g.parse(grid)
    t0 = time.monotonic()
    points = expand(grid, check=False)
    checks = g.check_jobs(grid, points)
    out_dir = Path(out) if out is not None else None
    points_dir = out_dir / "points" if out_dir is not None else None
    keys = {p.key() for p in points}
    done = _load_done(points_dir, keys)
    todo: list[Point] = []
    queued: set[str] = set()
    for p in points:
        k = p.key()
        if k not in done and k not in queued:
            queued.add(k)
            todo.append(p)
    if limit is not None:
        todo = todo[:limit]

    rep = Report()
    rep.total, rep.reused = len(points), len(points) - len(queued)
    bar = None

    def arrived(res: dict[str, Any]) -> None:
        done[res["key"]] = res
        if points_dir is not None:
            _write_atomic(points_dir / f"{res['key']}.json", res)
        rep.ran += 1
        rep.cpu_seconds += res.get("host_cpu_seconds", 0.0)
        if bar is not None:
            bar.update(1)
        elif callable(progress):
            progress(len(done), len(points))

    def start() -> None:
        """After the checks passed: the output directory and the progress bar."""
        nonlocal bar
        if points_dir is not None:
            try:
                points_dir.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise UserError(f"{out_dir}: cannot write the sweep there: {e.strerror or e}") from None
        if progress is True:
            from tlblab.progress import bar as progress_bar

            bar = progress_bar(len(points), "sweep", "point", initial=len(points) - len(queued))

    try:
        if serial or not todo:
            rep.where = "this process"
            keep_freed_memory()
            for job in checks:
                err = g.run_check(job)
                if err is not None:
                    raise UserError(err)
            start()
            for p in todo:
                arrived(_run_here(p))
        else:
            with dask_client(scheduler, workers, rep) as (client, n):
                _check_on_dask(client, n, checks)
                start()
                _run_on_dask(client, n, todo, arrived)
    finally:
        if bar is not None:
            bar.close()
    rep.seconds = time.monotonic() - t0
    LAST.__dict__.update(rep.__dict__)

    rows = []
    for p in points:
        res = done.get(p.key())
        if res is None:
            continue  # only when `limit` stopped early
        rows.append({"point": p.index, **{k: _cell(v) for k, v in p.values.items()}, **res["metrics"]})
    df = pd.DataFrame(rows)
    for col in grid.axes:
        if col in df and len({type(v) for v in df[col]}) > 1:
            df[col] = df[col].map(str)  # mixed types ("full" and 4 ways): one column type for Parquet
    if out_dir is not None and len(rows) == len(points):
        _write_frame(df, out_dir / "sweep.parquet")
    return df


def _cell(v: Any) -> Any:
    """Tables and lists (a whole pwc list as one axis value) as JSON text: one column type."""
    return json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else v


def _write_frame(df, path: Path) -> None:
    atomic_write(path, lambda tmp: df.to_parquet(tmp, index=False))


def _run_here(p: Point) -> dict[str, Any]:
    try:
        return run_point(p.task())
    except (ValueError, OSError) as e:
        raise UserError(f"point {p.index} ({_describe(p)}): {e}") from None


def _describe(p: Point) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in p.values.items()) or "the base"


def _workers(n: int) -> str:
    return f"{n} worker" if n == 1 else f"{n} workers"


@contextlib.contextmanager
def dask_client(scheduler: str | None, workers: int | None, rep: Report):
    """A client of `scheduler`, or of a new LocalCluster of `workers` processes (closed after),
    and the number of workers; `rep.where` says which. A sweep's and an interval-parallel
    run's (`tlblab.intervals`) cluster: an interrupt kills the LocalCluster's workers at once."""
    from distributed import Client

    cluster = None
    if scheduler:
        try:
            client = Client(scheduler, timeout="10s")
        except (OSError, TimeoutError) as e:
            raise UserError(f"--scheduler {scheduler}: cannot connect: {e}") from None
        n = len(client.scheduler_info().get("workers", {}))
        rep.where = f"scheduler {scheduler} ({_workers(n)})"
    else:
        n = workers or _cores()
        cluster = _quiet_start(lambda: local_cluster(n))
        client = Client(cluster)
        rep.where = f"a LocalCluster of {_workers(n)}"
    try:
        yield client, max(n, 1)
    except KeyboardInterrupt:
        if cluster is not None:
            _stop_now(cluster)
        raise
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def local_cluster(n: int):
    """A LocalCluster of `n` worker processes with one thread each (the engine is single-threaded
    per run), its scheduler's HTTP server on a port the system picks (distributed starts one even
    without a dashboard; given None it takes 8787 and, when another cluster holds that port,
    warns on stderr, which once came after a stopped sweep's last line: tests/test_interrupts.py,
    2026-12-01), and no log below CRITICAL: at a sweep's end under load, a worker whose
    heartbeat met the scheduler already closed logged an ERROR with a traceback (2026-11-28),
    while a task's real error reaches the client as its exception."""
    import logging

    from distributed import LocalCluster

    return LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0",
                        silence_logs=logging.CRITICAL)


def _quiet_start(make):
    """`make()` (a LocalCluster) started on a thread that blocks SIGINT, so every thread the
    cluster starts, and every worker process those threads spawn, inherit the blocked signal
    (a signal mask survives fork and exec): a terminal's Ctrl-C, sent to the whole process
    group, then reaches this process alone, which stops the cluster, instead of each worker
    printing its own KeyboardInterrupt. The main thread keeps SIGINT and waits on `make`
    interruptibly, so Ctrl-C during the cluster's start-up stops the sweep at once."""
    import signal
    import threading

    from tlblab import interruptible

    if threading.current_thread() is not threading.main_thread():
        return make()
    # multiprocessing's resource tracker is started here, first, by this thread: started later
    # by the cluster's IO-loop thread, `ensure_running` blocks SIGINT around its spawn and then
    # *unblocks* it in that thread, so the worker processes that thread spawns next took
    # Ctrl-C and printed a KeyboardInterrupt traceback each from the middle of their imports.
    # Once it runs, later calls return at once and leave every mask alone.
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        box: dict = {}

        def target():
            try:
                box["cluster"] = make()
            except BaseException as e:
                box["error"] = e

        t = threading.Thread(target=target, name="tlblab-cluster-start", daemon=True)
        t.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
    try:
        interruptible.call(t.join)
    except KeyboardInterrupt:
        # The cluster may be half up: its start-up thread runs on and may still log (the
        # scheduler's "Registering Worker plugin" INFO line, seen on a fast host when the signal
        # came within milliseconds of the start), and its worker processes go with this
        # process's exit.
        _silence_dask_logs()
        _kill_children()
        raise
    if "error" in box:
        raise box["error"]
    return box["cluster"]


def _kill_children() -> None:
    """SIGKILL to the LocalCluster's worker processes (this process's children that
    multiprocessing spawned): an interrupted sweep stops within a second, and a point's result
    is only ever written by this process. multiprocessing's resource tracker is left alone: it
    exits by itself when this process does, and killed it would be relaunched, noisily."""
    import psutil

    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if any("spawn_main" in part for part in child.cmdline()):
                child.kill()


def _stop_now(cluster) -> None:
    """An interrupted sweep: the workers killed at once (a graceful close takes seconds), and
    the nannies told not to restart them nor to log the deaths they see."""
    _silence_dask_logs()
    _kill_children()


def _silence_dask_logs() -> None:
    """No log line of Dask's (or of the event loops under it) reaches stderr from here on: an
    interrupted sweep ends with one line of its own."""
    import logging

    for name in ("distributed", "tornado", "asyncio"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)


def run_checks(jobs_json: str) -> str | None:
    """Runs a chunk of `grid.check_jobs` (on a worker, as JSON text like `run_points`): the first
    refusal's message, or None."""
    from tlblab.sweeps.grid import run_check

    keep_freed_memory()
    for job in json.loads(jobs_json):
        err = run_check(job)
        if err is not None:
            return err
    return None


def _check_on_dask(client, n: int, jobs: list[dict[str, Any]]) -> None:
    """The checks, spread over the workers in grid order; the first refusal (in grid order) is
    raised. The workers also show here that they can read every trace."""
    if not jobs:
        return
    size = max(1, -(-len(jobs) // (2 * n)))
    futures = [client.submit(run_checks, json.dumps(jobs[i:i + size]), pure=False) for i in range(0, len(jobs), size)]
    for err in client.gather(futures):
        if err is not None:
            raise UserError(err)


def _chunks(todo: list[Point], n: int) -> list[list[Point]]:
    """Points in tasks of decreasing size (guided scheduling): a point costs the engine
    milliseconds, and a Dask task costs the client and scheduler 3-4 ms of CPU on the same
    cores, so one task per point would spend the cores on scheduling; the first tasks are large
    (half of what is left over the workers) and the last hold one point each, so the workers
    run out of work together. (A quarter instead of a half made twice the tasks and no faster
    sweep: 200 points of 400 K references, 0.96-0.97 s against 0.99-1.10 s.)"""
    out, i = [], 0
    while i < len(todo):
        size = max(1, (len(todo) - i) // (2 * n))
        out.append(todo[i:i + size])
        i += size
    return out


def _run_on_dask(client, n: int, todo: list[Point], arrived) -> None:
    from distributed import as_completed

    by_key = {p.key(): p for p in todo}
    futures = [client.submit(run_points, json.dumps([p.task() for p in c]), key=f"tlblab-points-{c[0].key()}",
                             pure=False, retries=1) for c in _chunks(todo, n)]
    for fut in as_completed(futures):
        for res in fut.result():
            if "error" in res:
                p = by_key.get(res["key"])
                where = f"point {p.index} ({_describe(p)})" if p else "a point"
                raise UserError(f"{where}: {res['error']}")
            arrived(res)


#: The counters `headline` shows beside the axes; every counter is in the sweep's files.
HEADLINE_COUNTERS = ("L1D_misses", "walks", "cycles_per_ref")


def headline(df: Any, grid: Grid, limit: int = 40) -> tuple[list[str], list[list[Any]]]:
    """The sweep's first `limit` points as a table: the point, its axes (machine paths shortened
    to their last parts: `machine.tlb.L1D.entries` is `L1D.entries`) and `HEADLINE_COUNTERS`."""
    heads = [k.removeprefix("machine.tlb.").removeprefix("machine.") for k in grid.axes]
    nums = [c for c in HEADLINE_COUNTERS if c in df]
    shown = df if len(df) <= limit else df.head(limit)
    rows = [[r["point"], *[r[k] for k in grid.axes], *[r[c] for c in nums]] for r in shown.to_dict("records")]
    return ["point", *heads, *nums], rows
