"""The engine's miss attribution (`simulate(miss_log=LEVEL)`, `Result.miss_frame`,
`tlblab simulate --miss-log`): every miss of one TLB level with its set, thread, job and the page
whose fill evicted it."""

from __future__ import annotations

import subprocess
import sys

import pytest

import tlblab

WORKLOAD = "random:pages=256,accesses=20000"


def test_given_a_logged_run_then_every_miss_is_a_row_and_the_counters_are_unchanged():
    logged = tlblab.simulate("xeon-e5-2650", WORKLOAD, miss_log="L1D")
    plain = tlblab.simulate("xeon-e5-2650", WORKLOAD)
    m = logged.miss_frame()
    l1d = logged.stats["tlb_levels"].index("L1D")
    assert len(m) == logged.total["tlb"][l1d]["misses"] == plain.total["tlb"][l1d]["misses"]
    assert logged.total == plain.total
    assert sum(logged.stats["misses"]["per_set"]) == len(m)
    assert ((m["page"] // 4096) % 16 == m["set"]).all()  # the preset's L1 DTLB: 16 sets, low bits
    # A page evicted and touched again names its evictor, which was filled into the same set.
    again = m[m["evicted_by_page"] >= 0]
    assert len(again) > 0 and ((again["evicted_by_page"] // 4096) % 16 == again["set"]).all()
    with pytest.raises(ValueError, match="logged no misses"):
        plain.miss_frame()


def test_given_an_unknown_level_then_the_error_names_the_levels():
    with pytest.raises(ValueError, match="no TLB level 'L7'.*L1D"):
        tlblab.simulate("xeon-e5-2650", WORKLOAD, miss_log="L7")


def test_given_the_cli_flag_then_it_prints_the_misses_per_set():
    r = subprocess.run([sys.executable, "-m", "tlblab.cli", "simulate", "--machine", "xeon-e5-2650", "--workload",
                        WORKLOAD, "--miss-log", "L1D"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "L1D misses" in r.stdout and "page evicted by" in r.stdout
