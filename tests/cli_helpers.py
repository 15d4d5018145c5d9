"""What the CLI tests share: running `tlblab` as a user does, and the parity check that
`tlblab simulate --json` reports the statistics the Python API returns."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import tlblab

CLI = [sys.executable, "-m", "tlblab.cli"]


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True)


def simulate_both_ways(machine: str, workload: str, technique: str) -> tlblab.sim.Result:
    """Simulates `workload` on `machine` with `technique` from Python and from the CLI (`--json`),
    asserts that both give the same statistics, and returns Python's result."""
    py = tlblab.simulate(machine, workload, technique=technique)
    out = cli("simulate", "--machine", machine, "--workload", workload, "--technique", technique, "--json")
    assert out.returncode == 0, out.stderr
    stats = json.loads(out.stdout)
    stats["frequency_mhz"] = py.stats["frequency_mhz"]
    # `--json` names the levels and sources; Python keeps the engine's lists (`label_levels`).
    stats.pop("run")  # the rate block: wall and CPU seconds
    assert stats == tlblab.sim.label_levels(copy.deepcopy(py.stats))
    return py


def killed_client(module: str, writer: str, folder: str, after: int) -> str:
    """The source of a `tlblab` command-line client that kills itself with SIGKILL (no clean-up,
    no flush) right after its `after`-th write, through `module.writer(path, data)`, of a file
    into a folder named `folder`: a run killed at an exact point of its progress, which racing a
    timer against it cannot give. Run it as `python -c SOURCE ARGS...`."""
    return f"""
import os, signal, sys
import {module} as target
from tlblab.cli import main
written = 0
real_write = target.{writer}
def write_then_die(path, data):
    global written
    real_write(path, data)
    if os.path.basename(os.path.dirname(os.fspath(path))) == {folder!r}:
        written += 1
        if written == {after}:
            os.kill(os.getpid(), signal.SIGKILL)
target.{writer} = write_then_die
sys.exit(main(sys.argv[1:]))
"""
