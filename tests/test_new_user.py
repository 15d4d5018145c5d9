"""What a new user ran into (issue 64): each bad input named as such, before any work; files
with the mode a plain `open` gives."""

from __future__ import annotations

import os
import stat

from tlblab.cli import main


def test_a_bad_technique_value_is_named_before_the_machines_geometry(capsys):
    assert main(["simulate", "--machine", "zen3", "--workload", "random",
                 "--technique", "tlb_coloring:assign=bogus"]) == 2
    err = capsys.readouterr().err
    assert "'assign'" in err and "bogus" in err, err


def test_an_empty_sweep_file_is_an_error(tmp_path, capsys):
    grid = tmp_path / "empty.toml"
    grid.write_text("")
    assert main(["sweep", str(grid), "--serial", "--out", str(tmp_path / "out")]) == 2
    assert "nothing to sweep" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_curve_checks_its_plot_path_before_the_pass(capsys):
    assert main(["curve", "--workload", "random:pages=262144,accesses=4G", "--plot", "/nonexistent/x.svg"]) == 2
    assert "/nonexistent" in capsys.readouterr().err


def test_a_file_like_workload_name_is_no_such_trace_file(capsys):
    assert main(["simulate", "--workload", "gups.champsimtrace.xz"]) == 2
    assert capsys.readouterr().err.strip() == "tlblab: error: gups.champsimtrace.xz: no such trace file"


def test_sweep_outputs_get_the_umask_mode(tmp_path):
    grid = tmp_path / "g.toml"
    grid.write_text('[base]\nmachine = "zen3"\nmode = "tlb_only"\nworkload = "random:pages=64,accesses=1000"\n')
    old = os.umask(0o022)
    try:
        assert main(["sweep", str(grid), "--serial", "--out", str(tmp_path / "out")]) == 0
    finally:
        os.umask(old)
    files = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert files
    for f in files:
        assert stat.S_IMODE(f.stat().st_mode) == 0o644, f
