"""Tests of `tlblab host ptwarm`, `tlblab host migrate` and `tlblab warm --pid` (python/tlblab/host/ptwarm.py,
host/migrate.py, commands/warm.py): size parsing and choice, crossover analysis, user errors as one line with
exit status 2, and smoke runs of tiny versions of the measurements (seconds; the real measurements are
commands, not tests)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tlblab import cli
from tlblab.errors import UserError
from tlblab.host import migrate, ptwarm

ROOT = Path(__file__).resolve().parents[1]
TWO_CPUS = len(os.sched_getaffinity(0)) >= 2


def run_cli(capsys, *argv):
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_sizes_parse_with_units():
    assert ptwarm.parse_size("8G", "--size") == 8192
    assert ptwarm.parse_size("512M", "--size") == 512
    assert ptwarm.parse_size("1GiB", "--size") == 1024
    assert ptwarm.parse_size("0", "--other-size") == 0
    with pytest.raises(UserError, match="expected a size like 8G"):
        ptwarm.parse_size("eight", "--size")


def test_default_size_shrinks_when_memory_is_short_and_explicit_size_does_not():
    assert ptwarm.choose_sizes(None, None, 24000) == (8192, 8192)
    assert ptwarm.choose_sizes(None, None, 12000) == (4096, 4096)
    assert ptwarm.choose_sizes(None, 0, 12000) == (8192, 0)
    with pytest.raises(UserError, match="needs more than"):
        ptwarm.choose_sizes(8192, None, 12000)
    with pytest.raises(UserError, match="only 1000 MiB"):
        ptwarm.choose_sizes(None, None, 1000)


def test_crossover_is_the_last_unbroken_run_of_wins():
    def row(n, dep, rdep, ind, rind):
        return {"n": n, "hot_ns": 0, "dep": [0, dep, 0], "rewarm+dep": [0, rdep, 0],
                "indep": [0, ind, 0], "rewarm+indep": [0, rind, 0]}

    rows = [row(1, 100, 120, 50, 60), row(2, 90, 80, 50, 60), row(4, 200, 210, 50, 60),
            row(8, 400, 200, 50, 60), row(16, 800, 300, 50, 40), row(32, 900, 950, 50, 60)]
    c = migrate.crossover(rows, "dep", "rewarm+dep")
    assert c == {"first_win_n": 8, "last_win_n": 16, "wins_at": [2, 8, 16]}
    assert migrate.crossover(rows, "indep", "rewarm+indep")["wins_at"] == [16]
    assert migrate.crossover(rows[:1], "dep", "rewarm+dep")["first_win_n"] is None


def test_user_errors_are_one_line_with_status_2(capsys):
    status, out, err = run_cli(capsys, "host", "ptwarm", "--size", "lots")
    assert status == 2 and err.count("\n") == 1 and "--size" in err
    status, out, err = run_cli(capsys, "warm", "--pid", "999999999")
    assert status == 2 and "no such process" in err
    status, out, err = run_cli(capsys, "host", "migrate", "--strides", "100")
    assert status == 2 and "multiples of 64" in err
    status, out, err = run_cli(capsys, "warm", "--pid", str(os.getpid()), "--range", "20-10")
    assert status == 2 and "START < END" in err


@pytest.mark.skipif(not TWO_CPUS, reason="needs two CPUs")
def test_host_ptwarm_tiny_run_reports_paired_changes_and_an_idle_helper(capsys, tmp_path):
    out_file = tmp_path / "ptwarm.json"
    status, out, err = run_cli(
        capsys, "host", "ptwarm", "--size", "32M", "--other-size", "0", "--rounds", "2", "--window-ms", "20",
        "--settle-ms", "5", "--variants", "none,mincore,mincore-idle,warm-pid", "--workloads", "dep",
        "--json", "--output", str(out_file),
    )
    assert status == 0, err
    res = json.loads(out)
    assert json.loads(out_file.read_text()) == res
    v = res["workloads"]["dep"]["variants"]
    assert set(v) == {"mincore", "mincore-idle", "warm-pid"}
    assert v["mincore"]["rounds"] == 2 and len(v["mincore"]["changes"]) == 2
    assert v["mincore"]["helper_sweeps_per_s"] > 0 and v["mincore"]["helper_state"] == "warming"
    # The forced "not shared" verdict must make the helper idle: no sweeps at all. The bench measures
    # only once the helper's first check has decided (on a loaded 2-vCPU guest the probe waits long
    # for the application's CPU; the state read "stopped" there before), so "checking" never shows.
    # The host condition: the probe ran. A probe that failed (timed out on a machine too busy to run
    # both CPUs at once) leaves the verdict to the sysfs topology, which may say "shared": warming.
    idle = v["mincore-idle"]
    assert idle["helper_state"] not in ("stopped", "checking")
    if idle["helper_errors"] == 0:
        assert idle["helper_state"] in ("idle_llc_not_shared", "idle_topology")
        assert idle["helper_sweeps_per_s"] == 0
    else:
        assert idle["helper_state"] in ("idle_topology", "warming")
    assert res["llc_probe_ns_before"] > 0 and len(res["llc_probe_ns_per_round"]) == 2


def _made_up_sysfs(root: Path, llc_shared: bool) -> Path:
    """A sysfs CPU tree (what libtlblab's ptwarm reads through TLBLAB_SYSFS_CPU) in which every CPU
    has a private 32 KiB L1D and a 32 MiB L3 that all CPUs share, or each CPU alone."""
    n = max(os.sched_getaffinity(0)) + 1
    for c in range(n):
        cpu = root / f"cpu{c}"
        for idx, (level, kind, size, shared) in enumerate(
                [(1, "Data", "32K", str(c)), (3, "Unified", "32768K", f"0-{n - 1}" if llc_shared else str(c))]):
            d = cpu / "cache" / f"index{idx * 3}"
            d.mkdir(parents=True)
            for name, value in (("level", level), ("type", kind), ("size", size), ("shared_cpu_list", shared)):
                (d / name).write_text(f"{value}\n")
        (cpu / "topology").mkdir()
        (cpu / "topology" / "thread_siblings_list").write_text(f"{c}\n")
    return root


@pytest.mark.skipif(not TWO_CPUS, reason="needs two CPUs (the helper runs beside the application)")
@pytest.mark.parametrize("llc_shared", [True, False], ids=["sysfs-shared", "sysfs-not-shared"])
def test_the_helpers_state_follows_the_topology_and_the_probe_whatever_the_host_says(capsys, tmp_path, monkeypatch,
                                                                                    llc_shared):
    """The placement check's branches on any host, the topology read from a made-up sysfs: where sysfs
    says the L3 is shared and the timing probe says it is not (the Intel KVM guest of issue 88, whose
    sysfs lists the L3 shared and whose probe timing does not; mincore-idle forces the probe's "not
    shared"), the helper idles on the probe's verdict, or warms on the topology's when the probe could
    not run (an error counted); where sysfs says not shared, it idles on the topology before any probe,
    whatever the probe would say (mincore-auto, the probe's real threshold, idles too)."""
    monkeypatch.setenv("TLBLAB_SYSFS_CPU", str(_made_up_sysfs(tmp_path / "cpu", llc_shared)))
    app, helper = sorted(os.sched_getaffinity(0))[:2]
    status, out, err = run_cli(
        capsys, "host", "ptwarm", "--size", "32M", "--other-size", "0", "--rounds", "1", "--window-ms", "20",
        "--settle-ms", "5", "--variants", "none,mincore-auto,mincore-idle", "--workloads", "dep", "--json",
        "--app-cpu", str(app), "--helper-cpu", str(helper),
    )
    assert status == 0, err
    v = json.loads(out)["workloads"]["dep"]["variants"]
    idle, real = v["mincore-idle"], v["mincore-auto"]
    if llc_shared:
        if idle["helper_errors"] == 0:
            assert idle["helper_state"] == "idle_llc_not_shared" and idle["helper_sweeps_per_s"] == 0
        else:
            assert idle["helper_state"] == "warming"
        assert real["helper_state"] in ("warming", "idle_llc_not_shared")
    else:
        for variant in (idle, real):
            assert variant["helper_state"] == "idle_topology" and variant["helper_sweeps_per_s"] == 0


@pytest.mark.skipif(not TWO_CPUS, reason="needs two CPUs")
def test_host_migrate_tiny_run_has_rows_and_crossovers(capsys):
    status, out, err = run_cli(capsys, "host", "migrate", "--ns", "1,16", "--strides", "4096", "--trials", "3", "--json")
    assert status == 0, err
    res = json.loads(out)
    rows = res["strides"]["4096"]["rows"]
    assert [r["n"] for r in rows] == [1, 16]
    assert all(len(r["rewarm+dep"]) == 3 and r["dep"][0] <= r["dep"][1] <= r["dep"][2] for r in rows)
    assert res["migration_failures"] == 0
    assert set(res["crossover"]["4096"]) == {"dep", "indep"}


@pytest.mark.skipif(not TWO_CPUS, reason="needs two CPUs")
def test_host_migrate_predict_puts_the_models_curves_beside_the_measured_ones(capsys, tmp_path):
    # --predict: the re-warm measured alone (preload), the LLC probe, and seed 000's prediction
    # from them on the given machine file (the committed probe of the Intel VM: no probe here);
    # the report draws the model's two curves in the measured plot.
    from tlblab.report import HostRun, _host

    machine = ROOT / "docs/data/host-2026-11-27/host-xeon-207-probe.toml"
    status, out, err = run_cli(capsys, "host", "migrate", "--ns", "1,16", "--strides", "4096", "--trials", "3",
                               "--machine", str(machine), "--predict", "--json")
    assert status == 0, err
    res = json.loads(out)
    assert res["preload"]["pages"] == [1, 384] and len(res["preload"]["ns_median"]["4096"]) == 2
    p = res["prediction"]
    assert p["llc_probe_ns"] > 0 and p["machine"] == str(machine)
    d = p["strides"]["4096"]
    assert [r["n"] for r in d["rows"]] == [1, 16]
    assert all(r["dep"] > 0 and r["rewarm+dep"] > 0 for r in d["rows"])
    assert {"crossover_within_2x", "best_gain_within_2x", "measured_best_gain"} <= set(d)
    run = HostRun(name="migrate", argv=["tlblab", "host", "migrate"], seconds=1.0, data=res)
    html = _host([run], tmp_path)
    assert "model rewarm+dep" in html and "Model: re-warming pays from" in html
    # ... and in seed 000's section, beside its reproductions.
    import tlblab.reproduce as rp
    from tlblab.report import Study, build

    page = build(Study(outcomes=rp.run("000/a16"), host=[run]), tmp_path / "report").read_text()
    seed = page[page.index('id="seed-000"'):page.index('id="engine"')]
    assert "This host: re-warming after a migration" in seed and "model rewarm+dep" in seed


def test_warm_pid_warms_a_live_process_and_reports_the_mechanism(capsys):
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; b = bytearray(8 << 20); print('ready', flush=True); time.sleep(30)"],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert child.stdout.readline().strip() == "ready"
        status, out, err = run_cli(capsys, "warm", "--pid", str(child.pid), "--duration", "0.3",
                                   "--llc-check", "off", "--json")
        assert status == 0, err
        res = json.loads(out)
        assert res["pid"] == child.pid and res["regions"] > 0 and res["bytes"] >= 8 << 20
        assert res["sweeps"] >= 1 and res["errors"] == 0
        assert res["mechanism"] in ("process_madvise(WILLNEED)", "PAGEMAP_SCAN", "pread")
    finally:
        child.kill()
        child.wait()


def test_the_helper_decision_rests_on_the_measured_gain_and_else_on_the_prediction():
    from tlblab.host.ptwarm import decide

    # Measured: a positive median won in most rounds warms, whatever the model or the LLC probe says.
    assert decide(0.0, 18.3, 15, 15).startswith("warm (measured +18.3 %")
    assert decide(5.0, 2.0, 3, 10).startswith("do not warm")  # won in too few rounds
    assert decide(5.0, -4.0, 9, 10).startswith("do not warm")
    # Not measured: the model's prediction decides.
    assert decide(4.3, None, None, None).startswith("warm (not measured")
    assert decide(0.2, None, None, None).startswith("do not warm (not measured")
