"""Ctrl-C and SIGTERM on every long-running command (issue 64).

Each test starts a real `tlblab` process on work that would take minutes, waits until it is
busy, sends SIGINT (to the whole process group, as a terminal's Ctrl-C does) or SIGTERM (to the
process, as `kill` and service managers do), and checks that it stops promptly with 130 or 143,
that stderr ends with one line saying so and holds no traceback, and that no output file (nor a
temporary one) is left. The bound on the time to stop is a few seconds, for a busy shared
machine; a command that ignored the signal would run for minutes.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "tlblab.cli"]
ENDLESS = "random:pages=262144,accesses=4G"
SIGNALS = [pytest.param(signal.SIGINT, id="ctrl-c"), pytest.param(signal.SIGTERM, id="sigterm")]
STOP_WITHIN = 5.0  # seconds; the commands check every 50 ms (most) or at once (signal handler)


def _files(d: Path) -> list[str]:
    return sorted(str(p.relative_to(d)) for p in d.rglob("*") if p.is_file())


def _start(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen(CLI + argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, stdin=subprocess.DEVNULL, env=env)


def _stop(p: subprocess.Popen, sig: int) -> tuple[float, str]:
    """`sig` to the group (SIGINT, a terminal's Ctrl-C) or the process (SIGTERM); the seconds it
    took to exit and its stderr."""
    assert p.poll() is None, f"ended before the signal: {p.communicate()}"
    t0 = time.monotonic()
    if sig == signal.SIGINT:
        os.killpg(p.pid, sig)
    else:
        p.send_signal(sig)
    try:
        _, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        pytest.fail(f"still running 30 s after signal {sig}")
    took = time.monotonic() - t0
    # Nothing of the group may outlive it for long (Dask workers, valgrind; multiprocessing's
    # resource tracker exits once it sees its parent gone).
    end = time.monotonic() + 3.0
    while _group_alive(p.pid) and time.monotonic() < end:
        time.sleep(0.1)
    left = _group_alive(p.pid)
    if left:
        os.killpg(p.pid, signal.SIGKILL)
        pytest.fail(f"processes of the command's group outlived it: {left}")
    return took, err


def _group_alive(pgid: int) -> list[str]:
    """The command lines of the live (not zombie) processes of process group `pgid`."""
    alive = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                alive.append((d / "cmdline").read_text().replace("\0", " ")[:120])
        except (OSError, ValueError, IndexError):
            continue
    return alive


def _check(p: subprocess.Popen, sig: int, took: float, err: str) -> None:
    assert p.returncode == 128 + sig, err
    assert "Traceback" not in err, err
    last = err.strip().splitlines()[-1] if err.strip() else ""
    assert last == ("tlblab: interrupted" if sig == signal.SIGINT else "tlblab: terminated"), err
    assert took < STOP_WITHIN, f"took {took:.1f} s to stop"


def _wait_for(pred, timeout: float = 60.0, what: str = "the command to get going") -> None:
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.mark.parametrize("sig", SIGNALS)
def test_simulate_stops_on_a_signal(tmp_path, sig):
    p = _start(["simulate", "--tlb-only", "--workload", ENDLESS], tmp_path)
    time.sleep(2.0)  # the extension loaded, the run under way
    took, err = _stop(p, sig)
    _check(p, sig, took, err)
    assert _files(tmp_path) == []


@pytest.mark.parametrize("sig", SIGNALS)
def test_trace_gen_stops_on_a_signal_and_leaves_no_file(tmp_path, sig):
    p = _start(["trace", "gen", "random", "-p", "accesses=4G", "-o", "big.tlbt"], tmp_path)
    _wait_for(lambda: any(f.stat().st_size > 1 << 16 for f in tmp_path.iterdir()))
    took, err = _stop(p, sig)
    _check(p, sig, took, err)
    assert _files(tmp_path) == []


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
@pytest.mark.parametrize("sig", SIGNALS)
def test_trace_record_stops_on_a_signal_and_leaves_no_file(tmp_path, sig):
    loop = tmp_path / "prog" / "loop.sh"
    loop.parent.mkdir()
    loop.write_text("#!/bin/sh\nwhile :; do :; done\n")
    loop.chmod(0o755)
    out = tmp_path / "out"
    out.mkdir()
    # Valgrind's temporary files land in TMPDIR: its gdbserver FIFOs (vgdb-pipe-*) once stayed there.
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    p = _start(["trace", "record", "--no-progress", "-o", str(out / "loop.tlbt"), "--", "/bin/sh", str(loop)],
               tmp_path, env=dict(os.environ, TMPDIR=str(tmp)))
    _wait_for(lambda: _files(out) != [], what="the temporary trace")
    time.sleep(2.0)  # valgrind running the program
    took, err = _stop(p, sig)
    _check(p, sig, took, err)
    assert _files(out) == []
    assert not [f.name for f in tmp.iterdir() if f.name.startswith("vgdb-")]


def test_trace_record_takes_a_second_ctrl_c_during_its_clean_up(tmp_path):
    """Two Ctrl-C in a row (an impatient user; or the terminal's reaching tlblab after valgrind
    died of it): still one line and 130, never a traceback from inside the first one's handling."""
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed")
    loop = tmp_path / "loop.sh"
    loop.write_text("#!/bin/sh\nwhile :; do :; done\n")
    loop.chmod(0o755)
    p = _start(["trace", "record", "--no-progress", "-o", "loop.tlbt", "--", "/bin/sh", str(loop)], tmp_path)
    _wait_for(lambda: len(_files(tmp_path)) > 1, what="the temporary trace")
    time.sleep(2.0)
    os.killpg(p.pid, signal.SIGINT)
    time.sleep(0.02)
    try:
        os.killpg(p.pid, signal.SIGINT)
    except ProcessLookupError:
        pass
    _, err = p.communicate(timeout=30)
    assert p.returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines()[-1] == "tlblab: interrupted", err
    assert _files(tmp_path) == ["loop.sh"]


@pytest.mark.parametrize("sig", SIGNALS)
def test_study_stops_on_a_signal(tmp_path, sig):
    """Interrupted after its table (the reproductions chosen: none), in the miss curves of a
    workload of billions of references: the table's CSVs, complete, stay; no report, and no
    temporary file."""
    p = _start(["study", "--reproductions", "none", "--machines", "zen3", "--workloads",
                "random:pages=262144,accesses=4G", "--out", "study"], tmp_path)
    _wait_for(lambda: (tmp_path / "study" / "levels.csv").is_file(), what="the table")
    time.sleep(1.0)
    took, err = _stop(p, sig)
    _check(p, sig, took, err)
    assert _files(tmp_path) == ["study/levels.csv", "study/summary.csv"]


@pytest.mark.parametrize("sig", SIGNALS)
def test_reproduce_stops_on_a_signal(tmp_path, sig):
    p = _start(["reproduce", "--out", "repro"], tmp_path)
    time.sleep(3.0)
    took, err = _stop(p, sig)
    _check(p, sig, took, err)
    assert _files(tmp_path) == []


@pytest.mark.parametrize("sig", SIGNALS)
def test_reproduce_stops_on_a_signal_while_its_worker_processes_make_its_runs(tmp_path, sig):
    """Seed 001's reproductions make their seed-scale runs in worker processes first
    (`prepare`): Ctrl-C reaches the command alone (the workers start with SIGINT blocked), which
    stops the workers at once, mid-run, with no traceback; nothing is written but the caches
    under out/checkpoints (each file whole or absent)."""
    # One of seed 001's scale tables: the whole seed first counts Canneal's reading phase at
    # the seed's 6e7 elements in-process (`measured_span`, which took minutes on a fresh
    # checkout before it counted the lines without drawing them) before its workers start.
    p = _start(["reproduce", "001/at_scale", "--out", "repro"], tmp_path)
    _wait_for(lambda: any("spawn_main" in c for c in _group_alive(p.pid)), what="the worker processes")
    time.sleep(1.0)
    took, err = _stop(p, sig)
    _check(p, sig, took, err)
    assert [f for f in _files(tmp_path) if not f.startswith("out/checkpoints/")] == []


@pytest.mark.parametrize("sig", SIGNALS)
def test_sweep_on_a_local_cluster_stops_on_a_signal_quietly(tmp_path, sig):
    """A sweep on a real LocalCluster: Ctrl-C reaches the workers too (the whole group); the
    cluster goes down within seconds and no worker prints a traceback. Points finished before
    the signal stay (a re-run resumes from them); nothing else is written."""
    grid = tmp_path / "grid.toml"
    grid.write_text('[base]\nmachine = "zen3"\nmode = "tlb_only"\n'
                    '[axes]\nworkload = ["random:pages=262144,accesses=4G", "chase:pages=262144,accesses=4G"]\n')
    p = _start(["sweep", str(grid), "--workers", "2", "--out", "sw"], tmp_path)
    time.sleep(12.0)  # the cluster up, both points running
    took, err = _stop(p, sig)
    _check(p, sig, took, err)
    assert [f for f in _files(tmp_path) if f != "grid.toml"] == []


# The signal lands while the LocalCluster is still starting: its worker processes must not take
# the terminal's Ctrl-C themselves (each printed a KeyboardInterrupt traceback from its imports
# when multiprocessing's resource tracker, started late by the cluster's IO thread, unblocked
# SIGINT there; tlblab.sweeps.run._quiet_start starts it first).
@pytest.mark.parametrize("sig", SIGNALS)
def test_sweep_stops_on_a_signal_while_its_cluster_starts(tmp_path, sig):
    p = _start(["sweep", str(ROOT / "examples" / "sweep_l1d.toml"), "--workers", "2", "--out", "sw"], tmp_path)
    # The moment the cluster starts is the command's first child process (the resource tracker
    # `_quiet_start` starts, then the workers): a fixed sleep was too long on a fast host, where
    # the whole sweep ended within it (AMD family 26, 2026-11-27: 24 points in 0.9 s).
    end = time.monotonic() + 30
    while len(_group_alive(p.pid)) < 2 and p.poll() is None and time.monotonic() < end:
        time.sleep(0.005)
    took, err = _stop(p, sig)
    _check(p, sig, took, err)


@pytest.mark.parametrize("sig", SIGNALS)
def test_probe_stops_on_a_signal_and_writes_no_preset(tmp_path, sig):
    p = _start(["probe", "--quick", "--out", "host.toml"], tmp_path)
    time.sleep(3.0)
    took, err = _stop(p, sig)
    _check(p, sig, took, err)
    assert _files(tmp_path) == []
