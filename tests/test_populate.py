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
