"""Smoke: `tlblab probe --quick` runs for real on this machine and says something sensible.

No assertion on how long the run took (a shared 2-core VM can stretch any run): the
first-level data TLB must be found and be a plausible size; everything must come back with a
confidence flag. The probe keeps its own time budget (`--quick`: later sections are skipped,
and named in `errors`, once 15 s are used).
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(platform.system() != "Linux" or platform.machine() != "x86_64",
                                reason="the probe measures Linux x86-64 hosts")


def test_probe_quick_runs_and_reports_every_number_with_a_confidence(tmp_path):
    out = tmp_path / "host.toml"
    p = subprocess.run([sys.executable, "-m", "tlblab.cli", "probe", "--quick", "--json", "--out", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    names = [m["name"] for m in r["summary"]]
    assert "L1 DTLB entries (4K)" in names
    assert all(m["confidence"] in ("high", "medium", "unclear") for m in r["summary"])
    l1 = next(m for m in r["summary"] if m["name"] == "L1 DTLB entries (4K)")
    assert 8 <= l1["value"] <= 4096
    assert r["quick"] is True and r["seconds"] > 0
    assert out.read_text().count("[[tlb]]") >= 2


def test_probe_mlp_reads_misses_and_walks_in_flight_from_chases_in_lockstep():
    # Any out-of-order core keeps more than one miss in flight: k independent chases in lockstep
    # must beat one chase's latency, and a walk must cost something on top of the same lines'
    # misses. The numbers themselves are the host's (docs/probe.md, "Misses and walks in flight").
    p = subprocess.run([sys.executable, "-m", "tlblab.cli", "probe", "--quick", "--json", "--sections", "mlp"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    m = json.loads(p.stdout)["mlp"]
    assert [x["lanes"] for x in m["data"]] == [1, 2, 4, 8, 16, 32] == [x["lanes"] for x in m["walks"]]
    assert 2 <= m["miss_slots"] <= 128, m
    assert m["walk_ns"] > 0 and m["walkers"] >= 1, m
    best = min(x["ns"] for x in m["data"])
    assert best < m["data"][0]["ns"] / 2, m
    names = [s["name"] for s in json.loads(p.stdout)["summary"]]
    assert names == ["data misses in flight", "page walks in flight"]
