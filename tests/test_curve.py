"""Miss curves from Python and the CLI: parity with `simulate(tlb_only=True)`, files, errors.

(The property test over random geometries and streams is Rust's: crates/tlblab-curve/tests/exact.rs.)
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import tlblab

CLI = [sys.executable, "-m", "tlblab.cli"]
GUPS = "gups:log2_words=18,updates=20000"


def _one_level(sets: int, ways: int) -> dict:
    m = tlblab.machine_config("zen3")
    t = dict(next(t for t in m["tlb"] if t["name"] == "L1D"))
    t.update(name="T", kind="unified", level=1, entries=sets * ways, ways=ways, index={"type": "low_bits"},
             replacement="lru")
    m["tlb"] = [t]
    m.pop("energy")  # zen3's energies are per zen3 level (docs/energy.md): this machine has other levels
    return m


def test_every_point_of_the_curve_is_a_separate_tlb_only_run_of_that_geometry():
    df = tlblab.curve(GUPS, machine=_one_level(1, 16), level="T", sets=[1, 4, 32], max_entries=256)
    for sets, ways in [(1, 1), (1, 16), (1, 100), (1, 256), (4, 3), (4, 16), (32, 1), (32, 9)]:
        r = tlblab.simulate(_one_level(sets, ways), GUPS, tlb_only=True)
        row = df[(df.group == "all") & (df.sets == sets) & (df.ways == ways)]
        assert int(row.misses.iloc[0]) == r.total["tlb"][0]["misses"], (sets, ways)
        assert int(row.references.iloc[0]) == r.total["references"]


def test_a_second_levels_curve_on_zen3_is_its_l2d_under_the_fixed_l1d():
    # zen3's L2D is 2048 entries, 16-way: 128 sets; its L1D (64, fully associative) is fixed.
    df = tlblab.curve(GUPS, machine="zen3", level="L2D", sets=[128], max_entries=0)
    assert df.attrs["upper"] == ["L1D"] and df.attrs["path"] == "data"
    r = tlblab.simulate("zen3", GUPS, tlb_only=True)
    l2d = r.stats["tlb_levels"].index("L2D")
    row = df[(df.sets == 128) & (df.ways == 16)]
    assert int(row.misses.iloc[0]) == r.total["tlb"][l2d]["misses"]
    assert int(row.references.iloc[0]) == r.total["tlb"][l2d]["accesses"]


def test_the_cli_prints_writes_the_csv_and_plots(tmp_path):
    out, svg = tmp_path / "c.csv", tmp_path / "c.svg"
    p = subprocess.run(CLI + ["curve", "--workload", GUPS, "--sets", "1,2,4", "--max-entries", "1024",
                              "--out", str(out), "--plot", str(svg)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "zen3 L1D (data path" in p.stdout and "sets \\ ways" in p.stdout
    head = out.read_text().splitlines()[0]
    assert head == "group,sets,ways,entries,misses,miss_ratio,references,exact"
    assert svg.read_text().lstrip().startswith(("<?xml", "<svg"))


def test_the_cli_prints_a_sampled_curve_beside_every_associativity_of_one_set():
    # --sample with the default --sets all: one set's exact points (1..16 ways) and the sampled
    # estimates cover the same small sizes; the table shows each size once, the exact one.
    p = subprocess.run(CLI + ["curve", "--workload", GUPS, "--sample", "0.1", "--max-entries", "4096"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    assert "fully assoc. entries (exact, then sampled)" in p.stdout
    lines = [ln.split() for ln in p.stdout.splitlines()]
    firsts = [ln[0] for ln in lines if ln and ln[0].isdigit() and len(ln) == 3]
    assert firsts.count("16") == 1 and "4096" in firsts and "8192" not in firsts  # --max-entries
    df = tlblab.curve(GUPS, sets=[1], max_entries=16)
    exact16 = int(df[(df.sets == 1) & (df.entries == 16) & df.exact].misses.iloc[0])
    assert ["16", str(exact16)] == next(ln[:2] for ln in lines if ln and ln[0] == "16" and len(ln) == 3)


@pytest.mark.parametrize("args, message", [
    (["--sets", "3"], "sets: expected powers of two, found 3"),
    (["--level", "L9"], "level: no TLB level \"L9\""),
    (["--sample", "2"], "--sample: expected a rate in (0, 1]"),
    (["--workload", "/nonexistent/x.tlbt"], "no such trace file"),
])
def test_bad_input_gets_one_line_exit_status_2_and_no_file(tmp_path, args, message):
    out = tmp_path / "c.csv"
    base = ["curve", "--workload", GUPS, "--out", str(out)]
    if "--workload" in args:
        base = ["curve", "--out", str(out)]
    p = subprocess.run(CLI + base + args, capture_output=True, text=True)
    assert p.returncode == 2
    assert message in p.stderr and "Traceback" not in p.stderr
    assert not out.exists()
