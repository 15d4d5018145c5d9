"""Units of work over worker processes: `tlblab reproduce`'s scheduler. `run_units` returns their
results in the units' order whatever the order they finish in; `run_dynamic` runs units that
make others ready as they finish (`tlblab.reproduce.run_all`: a seed's runs once planned, its
reproductions once its runs are made).

A unit is `fn(*args)` with `fn` a module-level function (workers are spawned: they import it by
name). Units are handed out longest first (the caller's order or priorities), so that the two
cores stay busy to the end instead of one waiting on the longest unit begun last (LPT
scheduling). A worker tells
the parent what it is doing with `post(message)`, which the parent's `on_message` receives on a
thread of its own while the units run. With one job, or one unit, everything runs in this
process, `post` calling `on_message` directly: the same calls in the same order as before there
was a pool.

Imports nothing of tlblab: `tlblab.reproduce` sits above it.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

# In a worker: the queue `post` puts on (set by `_start_worker`). In the parent running units
# itself: the handler `post` calls.
# Seconds a terminated worker has to stop of itself before it is killed.
STOP_GRACE_S = 5.0

_queue: Any = None
_handler: Callable[[Any], None] | None = None


def post(message: Any) -> None:
    """Sends `message` to the parent's `on_message` (a worker's goes through a queue; in the parent
    it is called at once). Nothing happens when nothing listens."""
    if _queue is not None:
        _queue.put(message)
    elif _handler is not None:
        _handler(message)


def _start_worker(queue: Any) -> None:
    global _queue
    _queue = queue
    import signal

    # The parent stops a worker with SIGTERM (`Process.terminate`). Dying at once would leave the
    # worker's own children running (seed 001's pool, a Valgrind capture) to the end of their
    # work: the first SIGTERM is a KeyboardInterrupt instead, which stops them as Ctrl-C does
    # (seed 001's pool terminates its workers, the native loops check every 50 ms); a second
    # one kills. A worker between units, or in one that `stops_at_once`, ends at once.
    def stop(signum: int, frame: Any) -> None:
        if _running is None:
            os._exit(128 + signum)
        signal.signal(signum, signal.SIG_DFL)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)


def stops_at_once(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Marks a unit function a SIGTERM may end at once, mid-run: one that starts no process of
    its own and writes nothing but whole files (`files.atomic_write`), so that nothing is left
    behind, and that may be long in native code that does not check for signals (a graph's
    build)."""
    fn.stops_at_once = True  # type: ignore[attr-defined]
    return fn


# In a worker: the unit function running now (None between units).
_running: Callable[..., Any] | None = None


def _unit(fn: Callable[..., Any], *args: Any) -> Any:
    """`fn(*args)` in a worker. Interrupted (the parent's SIGTERM), the worker ends there: the
    executor's worker loop would otherwise send the interrupt back as the unit's result and go
    on to the next unit already queued to it, making (and writing) work nobody waits for."""
    global _running
    import signal

    _running = fn
    # The kernel's own SIGTERM for a unit that may end at once: a Python handler would wait for
    # the native call in progress to return.
    saved = signal.signal(signal.SIGTERM, signal.SIG_DFL) if getattr(fn, "stops_at_once", False) else None
    try:
        return fn(*args)
    except KeyboardInterrupt:
        # As a process's normal exit does (the finalizers release what the unit's own pools
        # registered with the resource tracker), then out at once.
        from multiprocessing import util

        util._exit_function()
        os._exit(128 + 15)
    finally:
        _running = None
        if saved is not None:
            signal.signal(signal.SIGTERM, saved)


def run_units(fn: Callable[..., Any], units: Sequence[tuple[Any, ...]], *, jobs: int = 1,
              order: Sequence[int] | None = None, on_message: Callable[[Any], None] | None = None,
              on_result: Callable[[int, Any], None] | None = None) -> list[Any]:
    """`[fn(*units[0]), fn(*units[1]), ...]`, computed on `jobs` worker processes (`order`: the
    indices in the order they are handed out, default as given). `on_result(i, result)` is
    called in this process as each unit finishes, in the order they finish. A unit's exception
    stops the others (those in flight are terminated) and is raised here, as Ctrl-C is."""
    order = list(order) if order is not None else list(range(len(units)))
    results: list[Any] = [None] * len(units)

    def done(i: int, result: Any) -> list[Unit]:
        results[i] = result
        if on_result:
            on_result(i, result)
        return []

    # Priorities that hand the units out in `order`.
    run_dynamic([Unit(fn, tuple(units[i]), float(len(order) - k), i) for k, i in enumerate(order)],
                jobs=jobs if len(units) > 1 else 1, on_message=on_message,
                on_result=lambda u, r: done(u.key, r))
    return results


@dataclass
class Unit:
    """One unit of `run_dynamic`: `fn(*args)` in a worker (`fn` module-level), handed out before
    the ready units of lower `priority` (its expected seconds, plus those of the units that
    wait for it: longest first), `key` naming it to the caller."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    priority: float
    key: Any


def run_dynamic(units: Sequence[Unit], *, jobs: int = 1, on_message: Callable[[Any], None] | None = None,
                on_result: Callable[[Unit, Any], Sequence[Unit]] | None = None) -> None:
    """Runs `units` on `jobs` worker processes and, as each finishes, the units `on_result(unit,
    result)` returns (those that waited for it: a seed's runs once they are planned, its
    reproductions once its runs are made). At most `jobs` are in flight, so that the ready unit
    of the highest priority goes to the next free worker (a unit made ready late still overtakes
    the shorter ones queued before it). `on_result` is called in this process, in the order the
    units finish. With one job everything runs here, `post` calling `on_message` directly. A
    unit's exception stops the others (those in flight are terminated) and is raised here, as
    Ctrl-C is."""
    global _handler
    import heapq

    ready: list[tuple[float, int, Unit]] = []
    count = 0

    def add(new: Sequence[Unit]) -> None:
        nonlocal count
        for u in new:
            heapq.heappush(ready, (-u.priority, count, u))  # ties: the order they were added
            count += 1

    add(units)
    if jobs <= 1:
        saved, _handler = _handler, on_message
        try:
            while ready:
                u = heapq.heappop(ready)[2]
                result = u.fn(*u.args)
                add(on_result(u, result) if on_result else [])
        finally:
            _handler = saved
        return
    import multiprocessing
    import signal
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    # spawn, not fork: the parent may hold the simulator's native state and threads.
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()

    def relay() -> None:
        while (m := queue.get()) is not None:
            if on_message:
                on_message(m)

    listener = threading.Thread(target=relay, name="tlblab-units-relay", daemon=True)
    listener.start()
    try:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_start_worker,
                                 initargs=(queue,)) as pool:
            running: dict[Any, Unit] = {}
            try:
                while ready or running:
                    while ready and len(running) < jobs:
                        u = heapq.heappop(ready)[2]
                        # A submit may start a worker, which starts with SIGINT blocked (the mask
                        # survives spawn's fork and exec): a terminal's Ctrl-C reaches this
                        # process alone, which stops them (as seed 001's pool).
                        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
                        try:
                            running[pool.submit(_unit, u.fn, *u.args)] = u
                        finally:
                            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
                    finished, _ = wait(running, return_when=FIRST_COMPLETED)
                    for f in finished:
                        u = running.pop(f)
                        add(on_result(u, f.result()) if on_result else [])
            except BaseException:
                _stop(pool)
                raise
    finally:
        queue.put(None)  # after the workers' own messages: the relay prints them all, then ends
        listener.join(timeout=5)
        queue.close()


def _stop(pool: Any) -> None:
    """Terminates `pool`'s workers (a unit failed, or Ctrl-C) and waits for them to go."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for proc in procs:
        proc.terminate()
    # A worker inside a native run sees its KeyboardInterrupt only when the run checks for
    # signals: one that has not ended after the grace is killed (its files are written whole or
    # not at all, `files.atomic_write`).
    deadline = time.monotonic() + STOP_GRACE_S
    for proc in procs:
        proc.join(max(0.0, deadline - time.monotonic()))
        if proc.is_alive():
            proc.kill()
            proc.join(1.0)
    # With the workers gone, shutting down waits for nothing and closes the queues (left open,
    # the resource tracker reports their semaphores as leaked).
    pool.shutdown(wait=True, cancel_futures=True)
