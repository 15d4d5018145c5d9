"""Smoke tests of the coloring allocator's commands: `tlblab host coloring` (a tiny run, timing
values not asserted — host measurements are benchmarks, not tests), the `alloc` benchmark's JSON
shape, and one-line errors for bad input."""

from __future__ import annotations

import json

import pytest

from tlblab.benchmarks import alloc
from tlblab.cli import main
from tlblab.host import coloring


def test_given_pair_scenario_when_measured_then_placement_facts_follow_the_colors():
    r = coloring.measure("pair", rounds=1, jobs=3)
    v = r["variants"]
    assert set(v) == {"same", "diff", "glibc"}
    # same colors: A's 12 + B's 12 pages on each of A's 8 sets; disjoint colors: 12, no shared set.
    assert v["same"]["max_pages_per_set"] == 24 and v["same"]["sets_shared"] == 8
    assert v["diff"]["max_pages_per_set"] == 12 and v["diff"]["sets_shared"] == 0
    for name in v:
        stats = v[name]["a_ns_per_access"]
        assert stats["min"] <= stats["median"] <= stats["max"] and stats["min"] > 0


def test_given_predict_then_the_model_runs_the_measured_sweeps_and_same_colors_cost_more():
    # The model on zen3's L2 DTLB: "same" puts 24 pages on each of A's 8 sets (16 ways), so B's sweep
    # evicts A's translations; "diff" 12: A's sweep hits. The prediction must say same > diff.
    r = coloring.measure("pair", machine="zen3", rounds=1, jobs=3, predict=True)
    p = r["prediction"]
    assert set(p["variants"]) == {"same", "diff", "glibc"}
    assert p["same_over_diff"] > 1.05
    assert p["measured_same_over_diff"] > 0 and "zen3" in p["machine"]


def test_given_cli_defaults_as_json_then_it_prints_the_pair_scenario(capsys):
    assert main(["host", "coloring", "--rounds", "1", "--jobs", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["scenario"] for r in out] == ["pair"] and out[0]["mode"] == "inline"


def test_given_threads_mode_then_two_threads_alternate_and_report():
    r = coloring.measure("pair", rounds=1, jobs=3, threads=True)
    assert r["mode"] == "threads"
    assert all(v["a_ns_per_access"]["median"] > 0 for v in r["variants"].values())


@pytest.mark.parametrize("argv, words", [
    (["host", "coloring", "--sets", "100"], "power of two"),
    (["host", "coloring", "--rounds", "0"], "--rounds must be at least 1"),
    (["host", "coloring", "--sets", "8"], "too small"),
])
def test_given_bad_options_then_one_line_error_and_status_2(argv, words, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and "\n" not in err


def test_given_alloc_bench_quick_then_percentiles_are_ordered(monkeypatch):
    calls = []
    real = alloc._run

    def small(args):
        calls.append(args)
        # Keep the smoke test short: shrink every run, keep the option set the benchmark chose.
        shrunk = list(args)
        shrunk[shrunk.index("--ops") + 1] = "300"
        return real(shrunk)

    monkeypatch.setattr(alloc, "_run", small)
    out = alloc.run(quick=True)
    assert len(calls) == 2 and "--cold-every" in calls[1]
    for phase in ("warm", "cold"):
        for name in ("tlb_malloc", "tlb_free", "glibc_malloc", "glibc_free"):
            s = out[phase][name]
            assert s["count"] > 0 and s["p50"] <= s["p99"] <= s["p999"] <= s["max"]
        assert out[phase]["tlb_malloc_failures"] == 0


def _zen4_like(tmp_path):
    """A machine file as `tlblab probe --out` writes it on the Zen 4 VM: 72 fully associative L1
    entries, a 3072-entry 24-way L2 DTLB (128 sets)."""
    from tlblab import machine_config, machine_toml

    m = machine_config("zen3")
    for t in m["tlb"]:
        if (t["kind"], t["level"]) == ("data", 1):
            t["entries"] = 72
        if (t["kind"], t["level"]) == ("data", 2):
            t["entries"], t["ways"] = 3072, 24
    p = tmp_path / "host.toml"
    p.write_text(machine_toml(m))
    return str(p)


def test_given_a_probed_machine_file_then_coloring_uses_its_geometry(tmp_path, capsys):
    host = _zen4_like(tmp_path)
    r = coloring.measure("pair", machine=host, rounds=1, jobs=3)
    # 128 sets x 24 ways: 18 pages per color and task (> 72 L1 entries over 8 colors), so "same"
    # holds 36 pages per set (> 24 ways) and "diff" 18.
    assert (r["sets"], r["ways"], r["a_pages"], r["a_colors"]) == (128, 24, 144, 8)
    assert r["variants"]["same"]["max_pages_per_set"] == 36
    assert r["variants"]["diff"]["max_pages_per_set"] == 18
    assert r["geometry_source"] == host
    assert main(["host", "coloring", "--machine", host, "--rounds", "1", "--jobs", "3"]) == 0
    assert "128 sets x 24 ways (from " + host in capsys.readouterr().out


def test_given_the_environment_names_no_machine_then_the_hosts_cache_is_used(tmp_path, monkeypatch):
    from tlblab.host import geometry

    monkeypatch.delenv("TLBLAB_HOST_MACHINE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cached = geometry.cache_path()
    assert cached.startswith(str(tmp_path))
    import os
    import shutil

    os.makedirs(os.path.dirname(cached))
    shutil.copy(_zen4_like(tmp_path), cached)
    g = geometry.geometry(None)
    assert (g.l1_entries, g.l2_entries, g.sets, g.ways, g.source) == (72, 3072, 128, 24, cached)


@pytest.mark.parametrize("machine, words", [
    ("/nonexistent/host.toml", "neither a preset"),
    ("sa1100", "cannot be colored"),
])
def test_given_a_machine_without_a_colorable_level_then_one_line_error(machine, words, capsys):
    assert main(["host", "coloring", "--machine", machine, "--rounds", "1", "--jobs", "3"]) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and "\n" not in err


def _curve(excess):
    return [{"k": k, "excess_ns": x, "min": x, "max": x} for k, x in excess]


def test_given_a_step_curve_then_the_ways_are_the_last_k_before_two_points_miss():
    from tlblab.host.coloring_model import curve_replacement, effective_ways

    step = _curve([(k, 0.0 if k <= 8 else 6.0) for k in range(4, 21)])
    assert effective_ways(step) == 8
    assert curve_replacement(step, 8) is None  # at the top from 9 on: LRU-like, the file's policy kept
    # One busy point (7 pages) before the rise is not the first misses; a gradual rise reads random.
    gradual = _curve([(4, 0.0), (5, 0.0), (6, 0.0), (7, 1.43), (8, 0.0), (9, 1.11), (10, 1.67), (11, 3.34),
                      (12, 4.17), (13, 4.88), (14, 5.25), (15, 5.34), (16, 5.84), (17, 5.5), (18, 6.18)])
    assert effective_ways(gradual) == 8 and curve_replacement(gradual, 8) == "random"
    assert effective_ways(_curve([(k, 0.0) for k in range(4, 21)])) is None
    assert effective_ways(_curve([(k, 5.0) for k in range(4, 21)])) is None


def test_given_kept_ways_then_the_colored_level_keeps_them_and_its_structure():
    from tlblab import machine_config
    from tlblab.host.coloring_model import with_ways

    m = machine_config("zen3")
    l2 = max((t for t in m["tlb"] if t["kind"] == "data" and t["ways"] != "full"), key=lambda t: t["entries"])
    sets, hw = l2["entries"] // l2["ways"], l2["ways"]
    got = with_ways(m, 8, "measured here", "random")
    g2 = next(t for t in got["tlb"] if t["name"] == l2["name"] and t["kind"] == "data")
    assert (g2["ways"], g2["entries"], g2["hardware_ways"], g2["replacement"]) == (8, sets * 8, hw, "random")
    assert g2["source"].endswith("measured here") and l2["ways"] == hw  # the input is not changed


def test_given_a_small_geometry_then_the_set_curve_has_a_point_per_k():
    c = coloring.set_curve(sets=64, ways=4, l1_entries=8, cpu=0, reps=1, jobs=3)
    assert [p["k"] for p in c["points"]] == list(range(2, 9)) and c["b_colors"] == 20
    assert all(p["min"] <= p["excess_ns"] <= p["max"] for p in c["points"])


def test_given_set_curve_without_predict_then_one_line_error(capsys):
    assert main(["host", "coloring", "--set-curve"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--set-curve" in err and "--predict" in err and "\n" not in err
