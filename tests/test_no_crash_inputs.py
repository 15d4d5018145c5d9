"""Inputs that once crashed tlblab or were folded into a wrong answer without a word (issue 88):
each is now one line naming what was wrong, exit status 2, or a stated note; and the smaller
items of the same issue (argparse's usage block, names in errors, a bad --base found late)."""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tlblab
from cli_helpers import cli

ROOT = Path(__file__).resolve().parents[1]


def one_line(p: subprocess.CompletedProcess) -> str:
    assert p.returncode == 2, (p.returncode, p.stdout[-2000:], p.stderr[-2000:])
    assert p.stderr.startswith("tlblab: error: ") and p.stderr.count("\n") == 1, p.stderr
    assert "Traceback" not in p.stderr and p.stdout == ""
    return p.stderr


def oversized(tmp_path: Path, entries: str) -> Path:
    text = tlblab.machine_toml("zen3").replace("entries = 2048", f"entries = {entries}", 1)
    assert f"entries = {entries}" in text
    p = tmp_path / "big.toml"
    p.write_text(text)
    return p


@pytest.mark.parametrize("entries", ["1000000000000", "4294967296"])
def test_an_oversized_tlb_is_one_line_from_the_cli(tmp_path, entries):
    err = one_line(cli("simulate", "--machine", str(oversized(tmp_path, entries)), "--workload", "random"))
    assert f"{tmp_path / 'big.toml'}: tlb[L2D].entries: the simulator would need" in err and "bytes" in err


def test_an_oversized_tlb_from_python_raises_and_the_interpreter_survives(tmp_path):
    # In a child interpreter: a failed allocation would abort it (exit 134), as it once did.
    code = ("import tlblab, sys\n"
            f"try:\n    tlblab.simulate({str(oversized(tmp_path, '1000000000000'))!r}, 'random')\n"
            "except ValueError as e:\n    print('refused:', e)\n"
            "m = tlblab.machine_config('zen3'); m['tlb'][3]['entries'] = 2**32\n"
            "try:\n    tlblab.simulate(m, 'random')\nexcept ValueError as e:\n    print('refused:', e)\n"
            "print('alive')\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[-1] == "alive" and len(lines) == 3
    assert "tlb[L2D].entries: the simulator would need" in lines[0]
    assert lines[1].startswith("refused: <machine>: tlb[L2D].entries: the simulator would need")


def test_a_machine_dict_error_names_the_users_key_not_a_column():
    m = tlblab.machine_config("zen3")
    m["tlb"][3]["entries"] = "lots"
    with pytest.raises(ValueError) as e:
        tlblab.simulate(m, "random")
    assert str(e.value).startswith('<machine>: tlb[L2D].entries: invalid type: string "lots"'), e.value
    m = tlblab.machine_config("zen3")
    m["cache"][1]["wayz"] = 8
    with pytest.raises(ValueError, match=r"^<machine>: cache\[L1D\]\.wayz: unknown field `wayz`"):
        tlblab.machine_config(m)


def test_more_migration_cores_than_the_machine_has_is_an_error_not_a_fold():
    with pytest.raises(ValueError, match=r"cores=3, but machine zen3 has 2 hardware threads"):
        tlblab.simulate("zen3", "migration_4k:cores=3")
    err = one_line(cli("simulate", "--machine", "zen3", "--workload", "migration_4k:cores=1000000"))
    assert "cores=1000000" in err and "expected cores <= 2" in err
    # As many as it has: runs.
    assert tlblab.simulate("zen3", "migration_4k:cores=2,pages=16,iterations=4").total["references"] > 0


def test_sampling_and_intervals_together_is_an_error():
    err = one_line(cli("simulate", "--machine", "zen3", "--workload", "random", "--intervals", "4",
                       "--sample", "10k:10"))
    assert "--sample with --intervals" in err


def test_a_zero_sample_unit_names_the_sample_flag_not_a_unit_flag():
    err = one_line(cli("simulate", "--machine", "zen3", "--workload", "random", "--sample", "0:10"))
    assert "--unit" not in err and "UNIT of --sample" in err


def test_a_spec_with_nothing_after_its_colon_is_an_error():
    err = one_line(cli("simulate", "--machine", "zen3", "--workload", "random:"))
    assert "random:" in err and "nothing after ':'" in err


def garbage_champsim(tmp_path: Path) -> Path:
    p = tmp_path / "garbage.champsimtrace.gz"
    p.write_bytes(gzip.compress(bytes((i * 97 + 13) % 256 for i in range(64 * 40))))
    return p


def test_a_garbage_champsim_trace_is_refused_with_its_file_and_offset(tmp_path):
    g = garbage_champsim(tmp_path)
    for argv in (["trace", "info", str(g)], ["simulate", "--machine", "zen3", "--workload", str(g)],
                 ["trace", "convert", str(g), str(tmp_path / "out.tlbt")]):
        err = one_line(cli(*argv))
        assert str(g) in err and "byte 0 (of the uncompressed stream): not a ChampSim trace" in err, err
    assert sorted(f.name for f in tmp_path.iterdir()) == ["garbage.champsimtrace.gz"]  # convert wrote nothing


def test_argparse_errors_are_one_line():
    err = one_line(cli("simulate", "--machine", "zen3", "--nosuch-flag"))
    assert "usage:" not in err and "--nosuch-flag" in err and err.rstrip().endswith("--help)")
    err = one_line(cli("simulate", "--machine", "zen3", "--max-references", "lots"))
    assert "--max-references" in err and "(see tlblab simulate --help)" in err
    one_line(cli("nosuchcommand"))


def test_an_unwritable_output_is_named_as_given_without_an_errno(tmp_path):
    trace = tmp_path / "t.tlbt"
    assert cli("trace", "gen", "random", "-p", "pages=64,accesses=1000", "-o", str(trace)).returncode == 0
    err = one_line(cli("profile", "--trace", str(trace), "-o", "/nonexistent/x.csv"))
    assert "/nonexistent/x.csv" in err and "[Errno" not in err and "/nonexistent/.x" not in err


def test_reproduce_to_an_unwritable_out_names_it_without_an_errno():
    err = one_line(cli("reproduce", "003/fig6_2", "--quick", "--out", "/proc/x"))
    assert "/proc/x" in err and "[Errno" not in err


def test_a_workload_too_large_for_the_memory_limit_is_one_line_from_the_cli_and_python():
    """A generator sizes its tables before it allocates them (issue 88: `chase:pages=1g` aborted
    on 8 GiB); the limit is the host's memory or TLBLAB_WORKLOAD_MEMORY, here 1 GiB so that the
    test holds on any host."""
    env = dict(os.environ, TLBLAB_WORKLOAD_MEMORY="1G")
    p = subprocess.run([sys.executable, "-m", "tlblab.cli", "simulate", "--machine", "zen3", "--workload",
                        "chase:pages=1g"], capture_output=True, text=True, env=env)
    err = one_line(p)
    assert "workload 'chase': pages=1073741824 needs 8.0 GiB" in err and "more than the 1.0 GiB" in err, err
    assert "of the limit TLBLAB_WORKLOAD_MEMORY=1G" in err
    code = ("import tlblab\n"
            "try:\n    tlblab.simulate('zen3', 'graph500_bfs:scale=26,edge_factor=1000')\n"
            "except ValueError as e:\n    print('refused:', e)\n"
            "print(tlblab.simulate('zen3', 'chase:pages=64,accesses=1000').total['references'])\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    refused, alive = p.stdout.splitlines()
    assert refused.startswith("refused: workload 'graph500_bfs': scale=26, edge_factor=1000 needs "), refused
    assert alive == "1000"
    bad = dict(os.environ, TLBLAB_WORKLOAD_MEMORY="lots")
    p = subprocess.run([sys.executable, "-m", "tlblab.cli", "simulate", "--machine", "zen3", "--workload",
                        "chase"], capture_output=True, text=True, env=bad)
    assert "TLBLAB_WORKLOAD_MEMORY: expected a positive number of bytes (e.g. 8G), found 'lots'" in one_line(p)


def test_reproduce_with_an_empty_name_runs_nothing():
    err = one_line(cli("reproduce", ""))
    assert "no reproduction ''" in err


def test_probe_with_a_bad_base_fails_before_measuring():
    # Before measuring: the probe's "measuring" line never came (not a time bound, which a loaded
    # host would break).
    err = one_line(cli("probe", "--quick", "--base", "nosuch"))
    assert "--base" in err and "nosuch" in err and "measuring" not in err


def test_a_progress_bar_in_a_file_is_one_line_per_update(monkeypatch):
    from tlblab import progress

    buf = io.StringIO()
    monkeypatch.setattr(sys, "stderr", buf)
    bar = progress.bar(3, "runs", "run", mininterval=0)
    for _ in range(3):
        bar.update(1)
    bar.close()
    lines = buf.getvalue().splitlines()
    assert "\r" not in buf.getvalue() and len(lines) >= 2 and lines[-1].startswith("runs: 100%")


def test_the_built_in_sweep_grid_runs_from_any_directory(tmp_path):
    p = subprocess.run([sys.executable, "-m", "tlblab.cli", "sweep", "sweep_l1d", "--check"], cwd=tmp_path,
                       capture_output=True, text=True)
    assert p.returncode == 0 and "24 points" in p.stdout, p.stderr
    err = one_line(subprocess.run([sys.executable, "-m", "tlblab.cli", "sweep", "examples/nosuch.toml"],
                                  cwd=tmp_path, capture_output=True, text=True))
    assert "sweep_l1d" in err


def test_results_are_short_in_a_repr_and_tables_in_html():
    r = tlblab.simulate("zen3", "random:pages=4096,accesses=20000")
    assert len(repr(r)) < 400 and "\n" not in repr(r) and "L1D misses" in repr(r)
    html = r._repr_html_()
    assert html.count("<table") == 2 and "L2D" in html and len(html) < 8000
    frame = r.counter_frame()
    assert list(frame.columns) == ["counter", "value"]
    assert frame.set_index("counter").loc["walks", "value"] == r.total["walks"]
    s = tlblab.sample("zen3", "random:pages=4096,accesses=100000", unit=1000, period=10)
    assert "\n" not in repr(s) and len(repr(s)) < 300 and "<table" in s._repr_html_()
