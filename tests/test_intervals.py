"""Interval-parallel runs (issue 59, docs/intervals.md): one pass writes checkpoints at the
interval boundaries, the intervals run in this process or on a real Dask LocalCluster of 2
workers, and their merged statistics are the uninterrupted run's in every counter; a killed
worker and a killed run resume; bad input is one line. Random machines and cut points:
crates/tlblab-config/tests/checkpoint.rs."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import tlblab
from tlblab.errors import UserError

from cli_helpers import cli, killed_client

# Three threads on the Cortex-A7's cores, switched every 5,000 references, with a warm-up: context
# switches, several hardware threads' queues at every boundary, the region of interest.
THREADS = "random:pages=4096,accesses=120k,threads=3,slice=5000"
GUPS = "gups:log2_words=18,updates=60k,populate=1"
# Four cores and small caches: a checkpoint of a few hundred KB (zen3's 32 MiB L3 makes ~10 MB).
A7 = "cortex-a7"


def _same(a: dict, b: dict) -> None:
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@pytest.mark.parametrize("workload, k, kwargs", [
    (THREADS, 3, {"warmup": 20_000}),
    (GUPS, 4, {"max_references": 150_000}),
    (GUPS, 2, {"every": 40_000, "tlb_only": True}),
])
def test_intervals_run_here_merge_into_the_uninterrupted_run(tmp_path, workload, k, kwargs):
    every = kwargs.pop("every", None)
    run = tlblab.intervals(A7, workload, None if every else k, every=every, serial=True, out=tmp_path, **kwargs)
    whole = tlblab.simulate(A7, workload, **kwargs)
    assert len(run.intervals) >= 2 and not run.pass_reused
    # One pass: the run once, its checkpoints in run order on the way.
    assert run.pass_result.run["references"] == whole.run["references"]
    begins = [i["begin"] for i in run.intervals]
    assert begins == sorted(begins) and begins[0] >= kwargs.get("warmup", 0)  # a batch boundary at or after
    _same(run.result.stats, whole.stats)
    _same(run.pass_result.stats, whole.stats)
    assert run.result.run["roi_references"] == whole.run["roi_references"]


def test_intervals_on_a_localcluster_with_a_worker_killed_merge_into_the_uninterrupted_run(tmp_path, cluster):
    """The first interval to arrive kills one worker: Dask runs its task again on the worker
    its nanny restarts, and the merged statistics are still the uninterrupted run's."""
    import psutil

    killed = []

    def kill_a_worker(done: int, total: int) -> None:
        if not killed:
            workers = [c for c in psutil.Process().children(recursive=True)
                       if any("spawn_main" in part for part in c.cmdline())]
            killed.append(workers[-1].pid)
            workers[-1].send_signal(signal.SIGKILL)

    run = tlblab.intervals(A7, THREADS, 6, warmup=10_000, scheduler=cluster, out=tmp_path,
                           progress=kill_a_worker)
    assert killed and "(2 workers)" in run.where
    _same(run.result.stats, tlblab.simulate(A7, THREADS, warmup=10_000).stats)


# The client killed right after the second interval result it writes.
_KILLED_CLIENT = killed_client("tlblab.files", "atomic_write", "results", 2)


def test_a_killed_run_resumes_with_the_pass_and_the_finished_intervals(tmp_path):
    args = ["simulate", "--machine", A7, "--workload", GUPS, "--max-references", "150000",
            "--intervals", "4", "--serial", "--out", str(tmp_path), "--json"]
    proc = subprocess.run([sys.executable, "-c", _KILLED_CLIENT, *args], capture_output=True, text=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert len(list(tmp_path.glob("*/results/*.json"))) == 2
    run = tlblab.intervals(A7, GUPS, 4, max_references=150_000, serial=True, out=tmp_path)
    assert run.pass_reused and [i["reused"] for i in run.intervals] == [True, True, False, False]
    _same(run.result.stats, tlblab.simulate(A7, GUPS, max_references=150_000).stats)
    # The command line prints the same counters.
    out = cli(*args)
    assert out.returncode == 0, out.stderr
    stats = json.loads(out.stdout)
    assert stats["total"]["walks"] == run.result.total["walks"]
    assert stats["cycles"] == run.result.cycles


def test_a_technique_starts_at_every_boundary_from_the_pass_state(tmp_path):
    """One interval from the run's start is the run with the technique throughout; cut in
    three, every interval starts from the pass's state (no helper) with a new helper."""
    tech = "pt_baker:mode=kernel"
    one = tlblab.intervals("zen3", GUPS, 1, max_references=150_000, technique=tech, serial=True, out=tmp_path)
    _same(one.result.stats, tlblab.simulate("zen3", GUPS, max_references=150_000, technique=tech).stats)
    three = tlblab.intervals("zen3", GUPS, 3, max_references=150_000, technique=tech, serial=True, out=tmp_path)
    assert three.result.stats["technique"]["name"] == "pt_baker"
    assert three.result.total["references"] == one.result.total["references"]


@pytest.mark.parametrize("k, message", [
    (0, "--intervals: expected a number of intervals from 1 to 1024, found 0"),
    (5000, "found 5000"),
    ("3", "found '3'"),
])
def test_a_bad_number_of_intervals_is_refused(tmp_path, k, message):
    with pytest.raises(UserError, match=message):
        tlblab.intervals(A7, GUPS, k, max_references=1000, serial=True, out=tmp_path)
    assert not any(tmp_path.iterdir())


def test_a_workload_that_does_not_say_its_length_needs_max_references(tmp_path):
    with pytest.raises(UserError, match="does not say its length .* give --max-references"):
        tlblab.intervals(A7, GUPS, 2, serial=True, out=tmp_path)
    with pytest.raises(ValueError, match="nosuch"):
        tlblab.intervals(A7, "nosuch:pages=1", 2, max_references=1000, serial=True, out=tmp_path)
    assert not any(tmp_path.iterdir())  # a pass that failed leaves nothing


def test_a_missing_checkpoint_runs_the_pass_again_and_a_corrupt_or_foreign_one_is_one_error(tmp_path):
    run = tlblab.intervals(A7, GUPS, 3, max_references=150_000, serial=True, out=tmp_path)
    folder: Path = run.directory
    for f in (folder / "results").iterdir():
        f.unlink()
    (folder / "c0001.ckpt").unlink()
    again = tlblab.intervals(A7, GUPS, 3, max_references=150_000, serial=True, out=tmp_path)
    assert not again.pass_reused
    _same(again.result.stats, run.result.stats)

    for f in (folder / "results").iterdir():
        f.unlink()
    data = (folder / "c0001.ckpt").read_bytes()
    (folder / "c0001.ckpt").write_bytes(data[:-10] + b"corruption")
    with pytest.raises(UserError, match=r"interval 1: .*c0001.ckpt: corrupt engine state: expected checksum"):
        tlblab.intervals(A7, GUPS, 3, max_references=150_000, serial=True, out=tmp_path)

    tlblab.simulate("cortex-a9", GUPS, checkpoint_at=0, save_checkpoint=folder / "c0001.ckpt",
                    continue_after_save=False)
    with pytest.raises(UserError, match=r"c0001.ckpt: saved on another machine: the checkpoint's is 'cortex-a9'"):
        tlblab.intervals(A7, GUPS, 3, max_references=150_000, serial=True, out=tmp_path)


@pytest.mark.parametrize("args, message", [
    (["--intervals", "0"], "--intervals: expected a number of intervals from 1 to 1024, found 0"),
    (["--intervals", "2", "--roi", "100"], "--intervals with --roi"),
    (["--scheduler", "tcp://127.0.0.1:1"], "--scheduler is for a run cut in intervals"),
    (["--intervals", "2"], "does not say its length"),
])
def test_bad_interval_options_on_the_command_line_are_one_line(tmp_path, args, message):
    out = cli("simulate", "--workload", GUPS, "--out", str(tmp_path), *args)
    assert out.returncode == 2 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1 and message in out.stderr, out.stderr


def test_docs_intervals_python_example_runs(tmp_path, monkeypatch):
    doc = (Path(__file__).resolve().parents[1] / "docs/intervals.md").read_text()
    block = doc.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "docs/intervals.md", "exec"), {})


def test_one_run_saves_several_checkpoints_and_lists_those_it_reached(tmp_path):
    files = [tmp_path / f"{i}.ckpt" for i in range(3)]
    r = tlblab.simulate(A7, GUPS, max_references=60_000, checkpoint_at=[0, 20_000, 10**9], save_checkpoint=files)
    assert [c["path"] for c in r.checkpoints] == [str(f) for f in files[:2]] and not files[2].exists()
    assert r.checkpoints[1]["references"] >= 20_000
    assert tlblab.checkpoint_info(files[1])["references"] == r.checkpoints[1]["references"]
    with pytest.raises(ValueError, match="2 points and 1 files to save them in"):
        tlblab.simulate(A7, GUPS, checkpoint_at=[0, 10], save_checkpoint=[files[0]])
    with pytest.raises(ValueError, match="the points must come in run order: 10 after 20"):
        tlblab.simulate(A7, GUPS, checkpoint_at=[20, 10], save_checkpoint=files[:2])
