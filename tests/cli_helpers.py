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
