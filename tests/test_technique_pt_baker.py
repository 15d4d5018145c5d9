"""PT-Baker (seed 001) from Python and the CLI: parity (CLI = Python), the helper's effect on
the application's walk references by source, and bad input (one line, exit 2)."""

from __future__ import annotations

import copy

import json
import subprocess
import sys

import tlblab

CLI = [sys.executable, "-m", "tlblab.cli"]
# 32 MiB table, 60k updates: small enough for a test, the helper sweeps it many times.
GUPS = "gups:log2_words=22,updates=60000"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True)


def test_the_catalog_lists_pt_baker_with_its_modes_and_seed():
    t = {t["name"]: t for t in tlblab.techniques()}["pt_baker"]
    assert "seed 001" in t["seed"]
    assert {"mode", "stride", "nops", "sleep_us", "place", "pressure"} <= {p["name"] for p in t["params"]}


def test_the_cli_and_python_agree_and_show_the_helpers_counters():
    tech = "pt_baker:mode=kernel,stride=8"
    py = tlblab.simulate("zen3", GUPS, technique=tech)
    out = cli("simulate", "--machine", "zen3", "--workload", GUPS, "--technique", tech, "--json")
    assert out.returncode == 0, out.stderr
    stats = json.loads(out.stdout)
    stats["frequency_mhz"] = py.stats["frequency_mhz"]
    # `--json` names the levels and sources; Python keeps the engine's lists (`label_levels`).
    stats.pop("run")  # the rate block: wall and CPU seconds
    assert stats == tlblab.sim.label_levels(copy.deepcopy(py.stats))
    c = py.technique["counters"]
    assert c["sweeps"] >= 1 and c["pte_reads"] > 0
    # A kernel-mode helper is no thread of the statistics' walks: the application's walk
    # references are all there is, and the helper's thread made no reference.
    helper = py.stats["threads"][str(0xF000)]
    assert helper["references"] == 0 and helper["walks"] == 0
    text = cli("simulate", "--machine", "zen3", "--workload", GUPS, "--technique", tech)
    assert "technique pt_baker" in text.stdout and "pte_reads_from_l3" in text.stdout


def test_the_application_walk_sources_change_only_where_the_helper_shares_a_cache():
    base = tlblab.simulate("zen3", GUPS)
    near = tlblab.simulate("zen3", GUPS, technique="pt_baker:mode=kernel")
    app = lambda r: r.stats["threads"]["0"]["walk_refs_by_source"]  # noqa: E731
    assert sum(app(near)) == sum(app(base))
    assert app(near) != app(base)


def test_a_bad_parameter_is_one_line_and_exit_2():
    for bad, word in (("pt_baker:mode=fast", "'mode'"), ("pt_baker:stride=0", "'stride'"),
                      ("pt_baker:place=other_ccx", "other_ccx")):
        out = cli("simulate", "--machine", "zen3", "--workload", GUPS, "--technique", bad)
        assert out.returncode == 2, (bad, out.stderr)
        assert out.stderr.strip().count("\n") == 0 and word in out.stderr, out.stderr
        assert "Traceback" not in out.stderr
