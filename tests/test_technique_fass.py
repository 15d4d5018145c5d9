"""fass (seed 002, fast address-space switching on the StrongARM): the CLI and Python agree on
one small run, the fast kernel beats the flushing one, and a bad parameter gets one line and
exit status 2."""

from __future__ import annotations

import tlblab
from cli_helpers import cli, simulate_both_ways

W = "lat_ctx:procs=8,kib=0,rounds=5"


def test_the_cli_and_python_agree_and_fass_is_listed():
    py = simulate_both_ways("sa1100", W, "fass")
    assert py.technique["params"]["kernel_domains"] == "3"
    assert py.technique["counters"]["collisions"] == 0
    assert "fass" in {t["name"] for t in tlblab.techniques()}


def test_the_fast_kernel_switches_without_flushing():
    base = tlblab.simulate("sa1100", W)
    fast = tlblab.simulate("sa1100", W, technique="fass")
    assert fast.stats["os"]["tlb_flushes"] == 0 and base.stats["os"]["tlb_flushes"] > 30
    assert fast.stats["cycles"] * 5 < base.stats["cycles"]


def test_a_bad_parameter_gets_one_line_and_exit_2():
    out = cli("simulate", "--machine", "sa1100", "--workload", W, "--technique", "fass:kernel_domains=0")
    assert out.returncode == 2
    assert "'kernel_domains' expects an integer from 1 to 15" in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    out = cli("simulate", "--machine", "zen3", "--workload", "random:pages=4,accesses=10",
              "--technique", "fass")
    assert out.returncode == 2 and "armv7_short" in out.stderr, out.stderr
