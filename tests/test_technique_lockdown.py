"""TLB lockdown (seed 004): the profiler (real program under Valgrind, maps naming, remapping),
the technique from the CLI and Python (parity, the stall split, bad parameters: one line, exit 2),
and simulation-guided selection never worse than the most-frequent pages."""

from __future__ import annotations

import shutil

import pytest

import tlblab
from cli_helpers import cli, simulate_both_ways
from tlblab.seeds.s004_tlb_lockdown import selection
from tlblab import profile as pf
from tlblab.errors import UserError

A9 = "cortex-a9"
MIX = "lockdown_mix:rt=1,repeats=1"


@pytest.fixture(scope="module")
def mix_profile(tmp_path_factory):
    path = tmp_path_factory.mktemp("lockdown") / "profile.csv"
    out = cli("profile", "--trace", "lockdown_mix:rt=1,repeats=1,cores=1", "--process", "0", "-o", str(path))
    assert out.returncode == 0, out.stderr
    return path


def test_the_profile_ranks_pages_by_accesses_with_kinds_apart(mix_profile):
    rows = pf.read_csv(mix_profile)
    assert rows and all(r["process"] == 0 for r in rows)
    acc = [r["accesses"] for r in rows]
    assert acc == sorted(acc, reverse=True)
    assert all(r["accesses"] == r["loads"] + r["stores"] + r["fetches"] for r in rows)
    assert [r["rank"] for r in rows] == list(range(1, len(rows) + 1))
    assert rows[0]["region"] == "-", "a built-in workload has no maps: pages are absolute"


def test_cli_and_python_agree_and_report_the_stall_split(mix_profile):
    spec = f"lockdown:pages={mix_profile}"
    py = simulate_both_ways(A9, MIX, spec)
    assert set(py.stall_cycles()) == {"uTLB-I", "uTLB-D", "main"}
    assert py.technique["counters"]["entries_locked"] == 4
    text = cli("simulate", "--machine", A9, "--workload", MIX, "--technique", spec)
    assert "data stall cycles" in text.stdout and "process 0" in text.stdout
    # Locking the hottest pages removes stall cycles of the program.
    base = tlblab.simulate(A9, MIX, stall_cycles=True)
    assert sum(py.stall_cycles("process 0").values()) < sum(base.stall_cycles("process 0").values())
    assert not tlblab.simulate(A9, MIX).stall_cycles(), "not counted unless asked"


@pytest.mark.parametrize("spec, says", [
    ("lockdown:pages=0x1000+0x2000+0x3000+0x4000+0x5000", "5 pages given"),
    ("lockdown:pages=nowhere.csv", "nowhere.csv"),
    ("lockdown:cores=some", "'cores' expects"),
])
def test_a_bad_parameter_is_one_line_and_exit_2(spec, says):
    out = cli("simulate", "--machine", A9, "--workload", MIX, "--technique", spec)
    assert out.returncode == 2
    assert says in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_simulation_guided_selection_is_never_worse_than_the_most_frequent(mix_profile):
    rows = pf.read_csv(mix_profile)
    sel = selection.simulation_guided(A9, MIX, rows, 2, candidates=4)
    assert sel.method.startswith("exact") and sel.simulations <= 2 + 6
    assert sel.guided <= sel.frequent <= sel.baseline
    assert sel.guided == min(sel.evaluated[k] for k in sel.evaluated if len(k) == 2)


def test_pages_named_by_mapping_are_placed_in_a_run_at_other_addresses():
    # seed 004 §IV, Fig. 3: the profiling run's mapping line matched to the normal run's.
    under_valgrind = """\
00108000-00109000 r--p 00000000 fe:00 1 /bench/qsort
00109000-0010b000 r-xp 00001000 fe:00 1 /bench/qsort
0010b000-0010d000 rw-p 00002000 fe:00 1 /bench/qsort
0010d000-00200000 rw-p 00000000 00:00 0
04000000-04030000 r-xp 00000000 fe:00 2 /lib/libc.so.6
1ffefff000-1fff001000 rw-p 00000000 00:00 0
7ffc72ed1000-7ffc72ef2000 rw-p 00000000 00:00 0 [stack]
"""
    native = """\
5581a000-5581b000 r--p 00000000 fe:00 1 /bench/qsort
5581b000-5581d000 r-xp 00001000 fe:00 1 /bench/qsort
5581d000-5581f000 rw-p 00002000 fe:00 1 /bench/qsort
55822000-55900000 rw-p 00000000 00:00 0 [heap]
7f0000000000-7f0000030000 r-xp 00000000 fe:00 2 /lib/libc.so.6
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]
"""
    vg = pf.parse_maps(under_valgrind)
    touched = {0x0010c000, 0x00110000, 0x1fff000000}
    heap, stack = pf._heap(vg), pf._stack(vg, touched)
    names = {p: pf.name_page(p, vg, heap, stack) for p in (0x0010c000, 0x00110000, 0x1fff000000, 0x04002000)}
    assert names[0x0010c000] == ("/bench/qsort", 0x3000)
    assert names[0x00110000] == ("[heap]", 0x3000)
    assert names[0x1fff000000] == ("[stack]", -0x1000)
    assert names[0x04002000] == ("/lib/libc.so.6", 0x2000)
    nat = pf.parse_maps(native)
    placed = {p: pf.locate(*names[p], nat) for p in names}
    assert placed == {0x0010c000: 0x5581e000, 0x00110000: 0x55825000,
                      0x1fff000000: 0x7ffd00020000, 0x04002000: 0x7f0000002000}
    with pytest.raises(UserError, match="no mapping of /bench/other"):
        pf.locate("/bench/other", 0, nat)


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs valgrind")
def test_profile_traces_a_real_program_under_valgrind(tmp_path):
    out_csv = tmp_path / "true.csv"
    out = cli("profile", "-o", str(out_csv), "--top", "5", "--", "/bin/true")
    assert out.returncode == 0, out.stderr
    rows = pf.read_csv(out_csv)
    assert len(rows) > 10
    regions = {r["region"] for r in rows}
    assert any("ld-linux" in r for r in regions), regions
    assert any(r["fetches"] > 0 for r in rows) and any(r["stores"] > 0 for r in rows)
    assert "rank" in out.stdout and "region" in out.stdout
