"""`tlblab bench engine`: the benchmark runs, counts what it simulated, and reports rates.

Rates are never asserted against targets here (benchmarks print numbers; tests check that
the numbers are real measurements of the cases named).
"""

from __future__ import annotations

import subprocess
import sys

import tlblab
from tlblab import _native
from tlblab.benchmarks import engine

CLI = [sys.executable, "-m", "tlblab.cli"]


def test_bench_engine_counts_every_reference_and_times_it():
    for mode in engine.MODES:
        refs, wall, cpu = _native.bench_engine("zen3", "random:pages=4096,accesses=20000", mode, 0)
        assert refs == 20000
        assert wall > 0 and cpu > 0


def test_bench_engine_rejects_an_unknown_mode():
    import pytest

    with pytest.raises(ValueError, match="expected tlb_only, no_caches or full"):
        _native.bench_engine("zen3", "random:pages=16,accesses=10", "fast", 0)
    with pytest.raises(ValueError, match='bench feed: expected slice or source, found "pipe"'):
        _native.bench_engine("zen3", "random:pages=16,accesses=10", "full", 0, "pipe")


def test_both_feeds_simulate_every_reference_and_leave_out_only_the_replay():
    # 70,000 references: five of System::run's batches (16,384), the last one short; two
    # threads, so the run goes through the multi-core timeline across batch boundaries.
    spec = "random:pages=4096,accesses=70000,threads=2"
    for mode in engine.MODES:
        by_slice = _native.bench_engine("zen3", spec, mode, 0, "slice")
        by_source = _native.bench_engine("zen3", spec, mode, 0, "source")
        assert by_slice[0] == by_source[0] == 70000
        assert by_source[1] > 0 and by_source[2] > 0


def test_bench_engine_reports_each_case_in_every_mode(monkeypatch):
    tiny = {
        "random": ("random:pages=1024,accesses=5000", "random:pages=1024,accesses=5000"),
        "strided": ("strided:pages=256,stride=4096,rounds=2", "strided:pages=256,stride=4096,rounds=2"),
    }
    monkeypatch.setattr(engine, "CASES", tiny)
    monkeypatch.setattr(engine, "GENERATED", {})
    monkeypatch.setattr(engine, "PRESET_CASE", ("random:pages=512,accesses=3000",) * 2)
    monkeypatch.setattr(engine.shutil, "which", lambda _: None)  # no Lackey capture here
    out = engine.run(quick=True)
    assert out["machine"] == "zen3"
    assert set(out["cases"]) == {f"{m}/{c}" for m in ("tlb_only", "no_caches", "full") for c in tiny}
    for case in out["cases"].values():
        assert case["min_refs_per_s"] <= case["median_refs_per_s"] <= case["max_refs_per_s"]
        assert case["median_cpu_refs_per_s"] > 0
        source = case["source"]  # the same records through System::run, in batches
        assert source["min_refs_per_s"] <= source["median_refs_per_s"] <= source["max_refs_per_s"]
        assert source["median_cpu_refs_per_s"] > 0
    # TLB-only cases also time the read bound beside the feeds; the other modes do not.
    for name, case in out["cases"].items():
        if name.startswith("tlb_only/"):
            read = case["read_bound"]
            assert 0 < read["min_refs_per_s"] <= read["median_refs_per_s"] <= read["max_refs_per_s"]
            assert abs(case["fraction_of_read_bound"] - case["median_refs_per_s"] / read["median_refs_per_s"]) < 1e-3
            assert 0.0 <= read["records_on_2m_pages"] <= 1.0
        else:
            assert "read_bound" not in case and "fraction_of_read_bound" not in case
    assert out["cases"]["full/strided"]["references"] == 512
    # The targets block compares each target case's own median with its target.
    assert set(out["targets"]) == set(engine.TARGETS)
    for name, t in out["targets"].items():
        median = out["cases"][name]["median_refs_per_s"]
        assert t["median_refs_per_s"] == median
        assert t["target_refs_per_s"] == engine.TARGETS[name]
        assert t["met"] == (median >= engine.TARGETS[name])
        assert abs(t["fraction_of_target"] - median / engine.TARGETS[name]) < 1e-3
        source = out["cases"][name]["source"]["median_refs_per_s"]
        assert t["source_median_refs_per_s"] == source
        assert t["source_met"] == (source >= engine.TARGETS[name])
        assert abs(t["source_fraction_of_target"] - source / engine.TARGETS[name]) < 1e-3
    # Each target case's floor: checked exact against the engine, then timed beside it.
    assert set(out["floors"]) == set(engine.TARGETS)
    for name, f in out["floors"].items():
        assert f["exact"] and f["references"] == out["cases"][name]["references"]
        assert f["floor_min_refs_per_s"] <= f["floor_median_refs_per_s"] <= f["floor_max_refs_per_s"]
        assert abs(f["engine_fraction_of_floor"] - f["engine_median_refs_per_s"] / f["floor_median_refs_per_s"]) < 1e-3
        target = out["targets"][name]
        assert abs(target["floor_fraction_of_target"] - f["floor_median_refs_per_s"] / engine.TARGETS[name]) < 1e-3
        if name.startswith("tlb_only/"):
            # TLB-only, the floors over the engine's records too: in place (the slice feed's
            # yardstick) and in batches (the source feed's), each against its feed.
            for prefix, key, feed in (
                ("records_floor", "records_floor", "engine_median_refs_per_s"),
                ("batches_floor", "source_floor", "engine_source_median_refs_per_s"),
            ):
                median = f[f"{prefix}_median_refs_per_s"]
                assert f[f"{prefix}_min_refs_per_s"] <= median <= f[f"{prefix}_max_refs_per_s"]
                assert abs(f[f"engine_fraction_of_{prefix}"] - f[feed] / median) < 1e-3
                assert abs(target[f"{key}_fraction_of_target"] - median / engine.TARGETS[name]) < 1e-3
        else:
            assert "records_floor_median_refs_per_s" not in f and "source_floor_fraction_of_target" not in target
    # Issue 89's goals: the full model's fraction of its floor (no Lackey capture here, so
    # no real-program goal).
    assert set(out["goals"]) == {"full/random"}
    goal = out["goals"]["full/random"]
    assert goal["value"] == out["floors"]["full/random"]["engine_fraction_of_floor"]
    assert goal["goal"] == 0.6 and goal["met"] == (goal["value"] >= 0.6)
    # 256 pages twice: the second round misses the L1D (64 entries) and hits the L2D.
    assert out["floors"]["full/strided"]["counts"]["tlb_misses"] == [512, 256]
    # Every preset, TLB-only, on the preset case.
    machines = out["presets"]["machines"]
    assert set(machines) == set(tlblab.presets())
    assert all(m["references"] == 3000 and m["median_refs_per_s"] > 0 for m in machines.values())
    assert all("source" not in m for m in machines.values())  # the slice feed only


def test_a_floor_counts_what_the_engine_counts_and_is_timed():
    counts = _native.floor_check("random:pages=4096,accesses=20000", "full", 0)
    assert counts["tlb_misses"][0] > 19000 and counts["walks"] == counts["tlb_misses"][1]
    assert counts["cycles"] > 0 and len(counts["cache_misses"]) == 3
    tlb_only = _native.floor_check("random:pages=4096,accesses=20000", "tlb_only", 0)
    assert tlb_only["tlb_misses"] == counts["tlb_misses"] and tlb_only["cycles"] == 0
    for floor_input in ("addresses", "records", "batches"):
        refs, secs = _native.bench_floor("random:pages=4096,accesses=20000", "tlb_only", 0, floor_input)
        assert refs == 20000 and secs > 0


def test_the_read_bound_reads_every_record_of_any_workload():
    # Two threads and every kind: the floors refuse these records, the read bound takes them.
    refs, secs, huge = _native.bench_read("random:pages=4096,accesses=20000,threads=2", 0)
    assert refs == 20000 and secs > 0
    assert huge == 0.0  # 640 KB of records: too small to ask for 2 MiB pages


def test_the_records_of_a_large_workload_are_put_on_2m_pages_where_the_kernel_gives_them():
    # 200,000 records are 6.4 MB: the buffer's whole 2 MiB pieces are advised MADV_HUGEPAGE
    # before they are touched. Whether the kernel backs them depends on its THP mode and free
    # memory, so the share is read back from /proc/self/smaps, not assumed.
    import pathlib

    refs, _secs, huge = _native.bench_read("random:pages=4096,accesses=200000", 0)
    assert refs == 200000 and 0.0 <= huge <= 1.0
    mode = pathlib.Path("/sys/kernel/mm/transparent_hugepage/enabled")
    if mode.exists() and "[never]" in mode.read_text():
        assert huge == 0.0


def test_a_rate_goal_says_whether_it_is_within_the_hosts_read_bound():
    cases = {
        "tlb_only/lackey_ls": {"median_refs_per_s": 250e6, "read_bound": {"median_refs_per_s": 280e6}},
        "tlb_only/lackey_gzip": {"median_refs_per_s": 310e6, "read_bound": {"median_refs_per_s": 400e6}},
    }
    goals = engine._goals(cases, {})
    assert goals["tlb_only/lackey_ls"] == {"figure": "median_refs_per_s", "value": 250e6, "goal": 300e6,
                                           "met": False, "read_bound_refs_per_s": 280e6,
                                           "within_read_bound": False}
    assert goals["tlb_only/lackey_gzip"]["met"] and goals["tlb_only/lackey_gzip"]["within_read_bound"]


def test_a_floor_that_disagrees_is_reported_not_timed(monkeypatch):
    def disagree(spec, mode, seed):
        raise ValueError("the Full floor and the engine disagree: floor ..., engine ...")

    monkeypatch.setattr(engine._native, "floor_check", disagree)
    out = engine._floor("random:pages=64,accesses=100", "full", 1)
    assert out == {
        "workload": "random:pages=64,accesses=100",
        "exact": False,
        "error": "the Full floor and the engine disagree: floor ..., engine ...",
    }
    targets = engine._targets({"full/random": {"median_refs_per_s": 10}}, {"full/random": out})
    assert "floor_fraction_of_target" not in targets["full/random"]


def test_a_floor_names_what_it_cannot_take():
    import pytest

    with pytest.raises(ValueError, match="record 0: a floor takes one thread's accesses|record 1: a floor takes one thread"):
        _native.floor_check("random:pages=64,accesses=100,threads=2", "full", 0)
    with pytest.raises(ValueError, match="expected tlb_only or full"):
        _native.bench_floor("random:pages=64,accesses=100", "no_caches", 0)
    with pytest.raises(ValueError, match="expected addresses, records or batches, found \"slice\""):
        _native.bench_floor("random:pages=64,accesses=100", "tlb_only", 0, "slice")
    with pytest.raises(ValueError, match="the full floor reads addresses only"):
        _native.bench_floor("random:pages=64,accesses=100", "full", 0, "records")
    with pytest.raises(ValueError, match=r"record \d+: a floor takes data references of thread 0 within a 4 KiB page, found .*thread: ThreadId\(1\)"):
        _native.bench_floor("random:pages=64,accesses=100,threads=2", "tlb_only", 0, "batches")


def test_bench_cli_rejects_an_unknown_benchmark():
    p = subprocess.run(CLI + ["bench", "no_such"], capture_output=True, text=True)
    assert p.returncode == 2
    assert "unknown benchmark 'no_such'" in p.stderr
    assert "Traceback" not in p.stderr


def test_bench_list_names_the_engine_benchmark():
    p = subprocess.run(CLI + ["bench", "--list"], capture_output=True, text=True)
    assert p.returncode == 0
    assert any(line.startswith("engine\t") for line in p.stdout.splitlines())


def test_bench_engine_times_a_real_program_captured_under_lackey(monkeypatch):
    import shutil

    import pytest

    if not shutil.which("valgrind"):
        pytest.skip("valgrind is not installed")
    monkeypatch.setattr(engine, "CASES", {})
    monkeypatch.setattr(engine, "GENERATED", {})
    monkeypatch.setattr(engine, "REAL_PROGRAMS", (engine.REAL_PROGRAMS[1],))
    out = engine.run(quick=True)
    assert set(out["cases"]) == {f"{m}/lackey_gzip" for m in engine.MODES}
    case = out["cases"]["tlb_only/lackey_gzip"]
    assert case["workload"] == "gzip -9 -c /usr/bin/gzip (Lackey)"
    assert case["references"] >= 500_000  # the capture limit; accesses crossing a page count twice
    assert case["median_cpu_refs_per_s"] > 0


def test_bench_engine_times_fetches_between_all_miss_loads(monkeypatch):
    """The generated Lackey-format case: every record is simulated, in every mode, and the
    file is the same every time (seeded)."""
    import os
    import tempfile

    monkeypatch.setattr(engine, "CASES", {})
    monkeypatch.setattr(engine, "GENERATED", {"fetch_random": (4000, 4000, 1), "fetch2_random": (4000, 4000, 2)})
    monkeypatch.setattr(engine, "REAL_PROGRAMS", ())
    monkeypatch.setattr(engine, "PRESET_CASE", ("random:pages=64,accesses=100",) * 2)
    out = engine.run(quick=True)
    assert set(out["cases"]) == {f"{m}/{c}" for m in engine.MODES for c in ("fetch_random", "fetch2_random")}
    assert all(c["references"] == 4000 for c in out["cases"].values())
    with tempfile.TemporaryDirectory() as d:
        a, b = os.path.join(d, "a"), os.path.join(d, "b")
        engine._write_fetch_random(a, 100)
        engine._write_fetch_random(b, 100)
        text = open(a).read()
        assert text == open(b).read()
        lines = text.splitlines()
        assert len(lines) == 100 and lines[0].startswith("I  ") and lines[1].startswith(" L ")
        # Two code pages: the fetches take turns on them.
        engine._write_fetch_random(a, 8, code_pages=2)
        fetch_pages = [int(line.split()[1].split(",")[0], 16) >> 12 for line in open(a) if line.startswith("I")]
        assert fetch_pages == [0x400, 0x401, 0x400, 0x401]


def test_bench_functional_times_each_case_in_each_mode_and_gives_the_ceiling(monkeypatch):
    from tlblab.benchmarks import functional

    tiny = {"gups": ("gups:log2_words=16,updates=5000,populate=1",) * 2}
    monkeypatch.setattr(functional, "SEED001", tiny)
    monkeypatch.setattr(engine.shutil, "which", lambda _: None)  # no Lackey capture here (engine.capture_real_programs)
    out = functional.run(quick=True)
    case = out["cases"]["gups"]
    assert case["references"] == 2 * 5000  # a load and a store per update; the population is its warm-up
    for mode in functional.MODES:
        assert case[f"{mode}_cpu_refs_per_s"] > 0
    assert case["ceiling"] == round(case["no_caches_cpu_refs_per_s"] / case["full_cpu_refs_per_s"], 2)
    assert out["ceiling_reaches_target"] == {"gups": case["ceiling"] >= 3.0}
