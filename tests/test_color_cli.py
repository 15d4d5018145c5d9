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
