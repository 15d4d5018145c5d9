"""`populate=1` (issue 59) through the Python API and the CLI: the population is the warm-up,
the region of interest has no first-touch fault, and a bad value is one line, exit 2."""

import subprocess
import sys

import tlblab


def test_populated_gups_measures_the_kernel_on_mapped_memory():
    spec = "gups:log2_words=14,updates=3000"
    plain = tlblab.simulate("zen3", spec)
    populated = tlblab.simulate("zen3", spec + ",populate=1")
    assert plain.stats["total"]["page_faults"] > 0
    assert populated.stats["total"]["page_faults"] == 0
    assert populated.stats["warmup"]["references"] == (8 << 14) // 4096
    assert populated.stats["total"]["references"] == plain.stats["total"]["references"]


def test_a_bad_populate_value_is_one_line_and_exit_2():
    p = subprocess.run([sys.executable, "-m", "tlblab.cli", "simulate", "--machine", "zen3",
                        "--workload", "gups:log2_words=12,updates=100,populate=2"],
                       capture_output=True, text=True)
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == ["tlblab: error: workload 'gups': populate must be 0 or 1 (got 2)"]


def test_a_fast_forwarded_window_measures_take_references_after_its_warm_up():
    spec = "graph500_bfs:scale=12,roots=1,populate=1"
    whole = tlblab.simulate("zen3", spec, tlb_only=True)
    r = tlblab.simulate("zen3", spec + ",skip=20000,warm=5000,take=3000", tlb_only=True)
    assert r.stats["total"]["references"] == 3000
    assert r.stats["warmup"]["references"] == whole.stats["warmup"]["references"] + 5000
    # K windows E apart: the region of interest holds the first take and every later window.
    k = tlblab.simulate("zen3", spec + ",warm=100,take=10,every=1000,windows=3", tlb_only=True)
    assert k.stats["total"]["references"] == 3 * 10 + 2 * 100


def test_skip_without_populate_is_one_line_and_exit_2():
    for spec, msg in (("gups:log2_words=12,updates=100,skip=5",
                       "tlblab: error: workload 'gups': skip, warm and take need populate=1 (skipped accesses would "
                       "leave pages unmapped)"),
                      ("gups:log2_words=12,updates=100,populate=1,take=10,every=5",
                       "tlblab: error: workload 'gups': every and windows need take > 0 and every >= warm + take "
                       "(got every=5, warm=0, take=10)")):
        p = subprocess.run([sys.executable, "-m", "tlblab.cli", "simulate", "--machine", "zen3", "--workload", spec],
                           capture_output=True, text=True)
        assert p.returncode == 2
        assert p.stderr.strip().splitlines() == [msg]
