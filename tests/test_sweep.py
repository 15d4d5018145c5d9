"""Sweeps on a real Dask LocalCluster of 2 workers: the same DataFrame as in one process, after a
kill and a resume too; a bad grid is refused before any point runs, naming its key."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import tlblab
from tlblab.errors import UserError
from tlblab.sweeps import LAST, expand, load, parse
from cli_helpers import killed_client

# 12 points, each a fraction of a second: machine fields, an OS option, a technique and two
# workloads, so every kind of axis goes through the cluster.
GRID = """
[base]
machine = "zen3"
seed = 3
max_references = 60000

[axes]
"machine.tlb.L1D.entries" = [32, 64, 128]
"machine.tlb.L1D.ways" = ["full", 4]
workload = ["random:pages=2048,accesses=60000", "strided:pages=512,stride=4096,rounds=200"]
"""


@pytest.fixture(scope="module")
def grid_file(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("grid") / "grid.toml"
    p.write_text(GRID)
    return p


@pytest.fixture(scope="module")
def serial(grid_file) -> pd.DataFrame:
    return tlblab.sweep(grid_file, serial=True, progress=False)


def test_given_a_grid_when_expanded_then_the_first_axis_varies_slowest(grid_file):
    pts = expand(load(grid_file))
    assert len(pts) == 12
    assert [p.values["machine.tlb.L1D.entries"] for p in pts[:4]] == [32] * 4
    assert pts[0].machine["tlb"][1]["name"] == "L1D" and pts[-1].machine["tlb"][1]["entries"] == 128
    assert len({p.key() for p in pts}) == 12


def test_given_the_serial_result_then_it_has_a_row_per_point_and_differs_across_the_axes(serial):
    assert list(serial["point"]) == list(range(12))
    assert (serial["references"] == 60000).all()
    # A bigger first-level TLB never misses more on the same workload (LRU, fully associative).
    full = serial[serial["machine.tlb.L1D.ways"] == "full"]
    for _, g in full.groupby("workload"):
        assert list(g["L1D_misses"]) == sorted(g["L1D_misses"], reverse=True)
    assert serial["L1D_misses"].nunique() > 3


def test_given_a_localcluster_of_two_workers_then_the_frame_equals_the_serial_one(grid_file, serial, cluster,
                                                                                 tmp_path):
    df = tlblab.sweep(grid_file, tmp_path / "out", scheduler=cluster, progress=False)
    assert "(2 workers)" in LAST.where
    pd.testing.assert_frame_equal(df, serial)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "out" / "sweep.parquet"), serial)


# The sweep's client, killed by SIGKILL (no clean-up, no flush) right after it has written its
# KILL_AFTER-th point file. Racing a timer against the cluster cannot land mid-sweep reliably: the
# 12 points take a tenth of a second and arrive in bursts of a chunk.
KILL_AFTER = 4
_KILLED_CLIENT = killed_client("tlblab.sweeps.run", "_write_atomic", "points", KILL_AFTER)


def test_given_a_killed_sweep_when_run_again_then_it_resumes_and_the_frame_equals_the_serial_one(
        grid_file, serial, cluster, tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-c", _KILLED_CLIENT, "sweep", str(grid_file),
                           "--out", str(out), "--scheduler", cluster],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert len(list((out / "points").glob("*.json"))) == KILL_AFTER
    assert not (out / "sweep.parquet").exists()
    df = tlblab.sweep(grid_file, out, scheduler=cluster, progress=False)
    assert LAST.reused == KILL_AFTER and LAST.ran == 12 - KILL_AFTER
    pd.testing.assert_frame_equal(df, serial)


def _assert_refused_before_any_work(tmp_path, axes, names, **where):
    g = tmp_path / "bad.toml"
    g.write_text(f'[base]\nmachine = "zen3"\nmax_references = 1000\n[axes]\n{axes}\n')
    with pytest.raises(UserError) as e:
        tlblab.sweep(g, tmp_path / "out", progress=False, **where)
    for n in names:
        assert n in str(e.value)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("axes, names", [
    ('"machine.tlb.L1X.entries" = [32]', ["machine.tlb.L1X.entries", "L1X"]),
    ('"machine.tlb.L1D.ways" = [3]', ["machine.tlb.L1D.ways=3"]),
    ('"os.swich" = ["flush_all"]', ["os.swich"]),
    ('workload = ["random:pages=64", "nosuch"]', ["workload", "nosuch"]),
    ('"machine.tlb.L1D.entries" = []', ["machine.tlb.L1D.entries", "non-empty"]),
])
def test_given_a_bad_grid_then_it_is_refused_before_any_work_naming_the_key(tmp_path, axes, names):
    _assert_refused_before_any_work(tmp_path, axes, names, serial=True)


@pytest.mark.parametrize("axes, names", [
    ('"machine.tlb.L1D.ways" = [4, 3]', ["machine.tlb.L1D.ways=3"]),
    ('workload = ["random:pages=64", "nosuch"]', ["workload", "nosuch"]),
])
def test_given_a_grid_the_engine_refuses_when_run_on_the_cluster_then_the_workers_refuse_it_before_any_point(
        tmp_path, cluster, axes, names):
    # On a cluster the engine's checks run on the workers (`sweeps.run._check_on_dask`): the
    # same refusal, named the same way, and still nothing written.
    _assert_refused_before_any_work(tmp_path, axes, names, scheduler=cluster)


def test_given_a_bad_grid_on_the_command_line_then_exit_2_and_one_line(tmp_path):
    g = tmp_path / "bad.toml"
    g.write_text('[axes]\n"machine.walker.pwc.7.entries" = [16]\n')
    p = subprocess.run([sys.executable, "-m", "tlblab.cli", "sweep", str(g), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True)
    assert p.returncode == 2
    assert "machine.walker.pwc.7.entries" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "o").exists()


def test_given_a_technique_axis_then_its_parameters_reach_the_machine():
    g = parse({"base": {"machine": "xeon-e5-2650", "workload": "rt_same_diff_set"},
               "axes": {"technique": ["none", "tlb_coloring"], "technique.assign": ["same"]}})
    with pytest.raises(UserError, match="technique.assign"):
        expand(g)  # "none" has no parameters to set
    g = parse({"base": {"machine": "xeon-e5-2650", "workload": "rt_same_diff_set", "technique": "tlb_coloring"},
               "axes": {"technique.assign": ["same", "per_thread"]}})
    pts = expand(g)
    assert [p.machine["technique"] for p in pts] == [{"name": "tlb_coloring", "assign": "same"},
                                                     {"name": "tlb_coloring", "assign": "per_thread"}]


def test_docs_sweeps_shows_the_example_grid_and_its_python_runs():
    root = Path(__file__).resolve().parents[1]
    doc = (root / "docs/sweeps.md").read_text()
    assert doc.split("```toml\n", 1)[1].split("```", 1)[0] == (root / "examples/sweep_l1d.toml").read_text()
    for block in [b.split("```", 1)[0] for b in doc.split("```python\n")[1:]]:
        exec(compile(block, "docs/sweeps.md", "exec"), {})
    assert len(expand(load(root / "examples/sweep_l1d.toml"), check=False)) == 24
