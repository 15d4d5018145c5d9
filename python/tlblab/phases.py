"""Where a process's seconds go, by phase: wall seconds and CPU seconds (user + system, of this
process and of the child processes it has waited for: Valgrind's captures, a seed's worker pool)
spent capturing real programs, writing traces, simulating, and the rest (Python).

`tlblab reproduce` measures each reproduction with `measure()`; the library marks its phases
with `phase(name)` around the calls that do the work, on the thread measuring, (`tlblab.sim.simulate`, `tlblab.sampling.sample`, `tlblab.rt`,
`tlblab.trace.record` and `convert`, `tlblab.profile`). Nothing is recorded when nothing measures: `phase` is then one test of a global.
Each second is charged to the innermost phase open (a capture made inside a phase of another kind
is the capture's), so the phases add up to the whole; `python` is what no phase claimed.

Imports nothing of tlblab: the modules it times sit above it.
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

# The phases the library marks, in the order a timings table shows them; `python` is the rest.
CAPTURE = "capture"          # a real program run under Valgrind (tlblab.trace.record)
GENERATION = "generation"    # a trace written from another (tlblab.trace.convert)
SIMULATION = "simulation"    # the engine (tlblab.sim.simulate, tlblab.rt), built-in generators streamed into it
ANALYSIS = "analysis"        # a trace read by another tool than the engine (tlblab.profile's page counts)
PYTHON = "python"
ORDER = (CAPTURE, GENERATION, SIMULATION, ANALYSIS, PYTHON)


def clock() -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process and its waited-for children) now."""
    t = os.times()
    return time.monotonic(), t.user + t.system + t.children_user + t.children_system


@dataclass
class Ledger:
    """What one `measure()` saw: per phase [wall, cpu, calls], and the whole."""

    phases: dict[str, list[float]] = field(default_factory=dict)
    wall: float = 0.0
    cpu: float = 0.0

    def charge(self, name: str, wall: float, cpu: float, calls: int = 0) -> None:
        p = self.phases.setdefault(name, [0.0, 0.0, 0])
        p[0] += wall
        p[1] += cpu
        p[2] += calls

    def record(self) -> dict[str, dict[str, float]]:
        """{phase: {wall, cpu, calls}} in ORDER, `python` the whole less the phases marked."""
        out = {}
        for name in ORDER[:-1]:
            if name in self.phases:
                w, c, n = self.phases[name]
                out[name] = {"wall": round(w, 3), "cpu": round(c, 3), "calls": int(n)}
        w = self.wall - sum(p[0] for p in self.phases.values())
        c = self.cpu - sum(p[1] for p in self.phases.values())
        out[PYTHON] = {"wall": round(max(w, 0.0), 3), "cpu": round(max(c, 0.0), 3), "calls": 0}
        return out


class _State(threading.local):
    """Per thread (the study runs its engine table on a thread beside the reproductions): the
    ledger measuring now (None: nothing measures), the phases open (innermost last) and the clock
    when the innermost began or resumed."""

    ledger: Ledger | None = None
    open: list[str]
    mark: tuple[float, float] = (0.0, 0.0)

    def __init__(self) -> None:
        self.open = []


_state = _State()


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Charges the time inside to phase `name` (of the ledger measuring on this thread, if any)."""
    st = _state
    ledger = st.ledger
    if ledger is None:
        yield
        return
    now = clock()
    if st.open:  # the outer phase pauses
        ledger.charge(st.open[-1], now[0] - st.mark[0], now[1] - st.mark[1])
    st.open.append(name)
    st.mark = now
    try:
        yield
    finally:
        now = clock()
        ledger.charge(st.open.pop(), now[0] - st.mark[0], now[1] - st.mark[1], 1)
        st.mark = now


@contextmanager
def measure() -> Iterator[Ledger]:
    """Measures the time inside: the ledger yielded holds its phases, and its whole wall and
    CPU seconds once the block ends. Measures nest: an inner one's time is its own, in the outer
    one's whole but in none of its phases."""
    st = _state
    start = clock()
    if st.ledger is not None and st.open:  # the outer block's phase pauses
        st.ledger.charge(st.open[-1], start[0] - st.mark[0], start[1] - st.mark[1])
    saved = (st.ledger, st.open, st.mark)
    ledger = Ledger()
    st.ledger, st.open, st.mark = ledger, [], start
    try:
        yield ledger
    finally:
        end = clock()
        ledger.wall, ledger.cpu = end[0] - start[0], end[1] - start[1]
        st.ledger, st.open, st.mark = saved
        if st.ledger is not None and st.open:
            st.mark = end  # the outer block's phase resumes now; what the inner one took is not its


def peak_rss_mib() -> dict[str, float]:
    """Peak resident memory of this process and of the largest child it waited for, MiB."""
    import resource

    self_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    child_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"self": round(self_kib / 1024, 1), "children": round(child_kib / 1024, 1)}
