"""Smoke and parity tiers for simulation from Python and the CLI."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import pytest

import tlblab

CLI = [sys.executable, "-m", "tlblab.cli"]


def test_a_cyclic_sweep_of_65_pages_misses_a_64_entry_lru_level_every_time():
    r = tlblab.simulate("zen3", "strided:pages=65,stride=4096,rounds=4", tlb_only=True)
    assert r.total["references"] == 260
    l1 = r.tlb_frame().query("level == 'L1D'")
    assert int(l1["misses"].sum()) == 260
    assert set(r.walk_frame()["source"]) == set(r.stats["sources"])


def test_a_64_entry_fully_associative_lru_level_misses_once_per_page_for_64_pages():
    m = tlblab.machine_config("zen3")
    r = tlblab.simulate(m, "strided:pages=64,stride=4096,rounds=10", tlb_only=True)
    first = r.tlb_frame().query("level == 'L1D'")["misses"].sum()
    assert first == 64


def test_tlb_only_counts_the_same_tlb_hits_as_a_run_with_walks_and_reads_no_page_table():
    w = "random:pages=8192,accesses=50000"
    only = tlblab.simulate("zen3", w, tlb_only=True)
    walked = tlblab.simulate("zen3", w, caches=False, data_accesses=False)
    assert only.total["tlb"] == walked.total["tlb"]
    l2d = only.stats["tlb_levels"].index("L2D")
    assert only.total["walks"] == walked.total["walks"] == only.total["tlb"][l2d]["misses"]
    assert only.total["walk_refs"] == 0 and only.total["page_faults"] == 0
    assert walked.total["walk_refs"] > walked.total["walks"]
    assert only.total["walk_cycles"] == only.total["walks"] * tlblab.machine_config("zen3")["walker"]["latency"]


def test_walks_off_with_caches_on_is_refused_naming_the_switches():
    with pytest.raises(ValueError, match="walks = false .* needs caches = false and data_accesses = false"):
        tlblab.simulate("zen3", "random:pages=16,accesses=10", walks=False)


def test_an_edited_machine_dict_with_an_impossible_geometry_names_the_field():
    m = tlblab.machine_config("zen3")
    for t in m["tlb"]:
        if t["name"] == "L2D":
            t["ways"] = 12
    with pytest.raises(ValueError, match=r"tlb\[L2D\]\.ways: 2048 entries are not divisible by 12 ways"):
        tlblab.simulate(m, "random:pages=16,accesses=10")


def test_same_seed_same_numbers():
    a = tlblab.simulate("cortex-a9", "random:pages=512,accesses=20000", seed=3).stats
    b = tlblab.simulate("cortex-a9", "random:pages=512,accesses=20000", seed=3).stats
    assert a == b


def test_cli_json_equals_python_api():
    spec = "chase:pages=300,accesses=5000"
    out = subprocess.run(CLI + ["simulate", "--machine", "xeon-e5-2650", "--workload", spec, "--json"],
                         check=True, capture_output=True, text=True).stdout
    # `--json` names the levels and sources (`label_levels`); Python keeps the engine's lists.
    d = json.loads(out)
    run = d.pop("run")  # the rate block: wall and CPU seconds differ from run to run
    assert run["references"] == run["roi_references"] == 5000
    assert run["wall_seconds"] > 0 and run["cpu_seconds"] >= 0 and run["refs_per_second"] > 0
    assert d == tlblab.sim.label_levels(tlblab.simulate("xeon-e5-2650", spec).stats)


@pytest.mark.parametrize("args, message", [
    (["simulate", "--machine", "nope"], "machine 'nope' is neither a preset"),
    (["simulate", "--workload", "random:pages=lots"], "parameter 'pages' expects an integer"),
    (["simulate", "--workload", "gups2"], "unknown workload 'gups2'"),
    (["study", "--workloads", "nope"], "unknown workload 'nope'"),
    (["study", "--machines", "zen3,nope"], "--machines: machine 'nope' is neither a preset"),
    # The --os pairs become JSON inside tlblab: the message names the key, not a JSON column.
    (["simulate", "--workload", "random:pages=64", "--os", "asid_bits=8,switch=bogus"],
     "os options: switch: unknown variant `bogus`, expected one of `auto`"),
    (["simulate", "--workload", "random:pages=64", "--os", "swtch=flush_all"],
     "os options: swtch: unknown field `swtch`"),
])
def test_bad_input_is_one_line_and_exit_status_2(args, message):
    p = subprocess.run(CLI + args, capture_output=True, text=True)
    assert p.returncode == 2
    assert message in p.stderr
    assert "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_a_machine_file_with_a_typo_names_file_line_and_column(tmp_path):
    text = tlblab.machine_toml("zen3").replace("entries = 2048", "entriez = 2048", 1)
    f = tmp_path / "host.toml"
    f.write_text(text)
    p = subprocess.run(CLI + ["simulate", "--machine", str(f)], capture_output=True, text=True)
    assert p.returncode == 2
    assert f"{f}:" in p.stderr and "unknown field `entriez`" in p.stderr


def test_study_writes_csv(tmp_path):
    out = tmp_path / "study"
    p = subprocess.run(CLI + ["study", "--reproductions", "none", "--machines", "zen3,sa1100", "--workloads", "random,strided", "--out", str(out)],
                       check=True, capture_output=True, text=True)
    assert "walk refs from memory" in p.stdout
    rows = list(csv.DictReader(open(out / "summary.csv")))
    assert {(r["machine"], r["workload"].split(":")[0]) for r in rows} == {
        ("zen3", "random"), ("zen3", "strided"), ("sa1100", "random"), ("sa1100", "strided")}
    assert all(int(r["references"]) > 0 for r in rows)
    levels = list(csv.DictReader(open(out / "levels.csv")))
    assert {"L1D", "L2D"} <= {r["level"] for r in levels}


def test_presets_and_workloads_are_listed():
    assert {"zen3", "cortex-a7", "gem5-a7", "cortex-a9", "sa1100", "xeon-e5-2650"} <= set(tlblab.presets())
    names = {w["name"] for w in tlblab.workloads()}
    assert {"sequential", "strided", "random", "chase"} <= names


def test_cli_run_modes_say_what_they_simulate_and_exclude_each_other():
    w = ["--workload", "random:pages=4096,accesses=5000"]
    only = subprocess.run(CLI + ["simulate", "--tlb-only"] + w, capture_output=True, text=True)
    assert only.returncode == 0, only.stderr
    assert "(TLB-only: page tables, caches and data are not simulated)" in only.stdout
    assert "served by" not in only.stdout
    walked = subprocess.run(CLI + ["simulate", "--no-caches"] + w, capture_output=True, text=True)
    assert walked.returncode == 0, walked.stderr
    assert "walk references" in walked.stdout and "served by" in walked.stdout
    both = subprocess.run(CLI + ["simulate", "--tlb-only", "--no-caches"] + w, capture_output=True, text=True)
    assert both.returncode == 2
    assert "not allowed with argument --tlb-only" in both.stderr
    assert "Traceback" not in both.stderr


def test_a_full_cache_level_evicts_on_every_miss_past_its_capacity():
    # Nothing flushes the caches here, so a level's misses are its evictions plus the lines it
    # holds at the end: a random stream over 16 MiB fills zen3's L1D (32 KiB: 512 lines) and L2
    # (512 KiB: 8192 lines), but not its 32 MiB L3.
    r = tlblab.simulate("zen3", "random:pages=4096,accesses=100k")
    caches = r.cache_frame().query("core == 0").set_index("level")  # the thread runs on core 0
    assert int(caches.loc["L1D", "misses"] - caches.loc["L1D", "evictions"]) == 512
    assert int(caches.loc["L2", "misses"] - caches.loc["L2", "evictions"]) == 8192
    assert int(caches.loc["L3", "evictions"]) == 0 < int(caches.loc["L3", "misses"])
    # The CLI prints the same counters.
    p = subprocess.run(CLI + ["simulate", "--machine", "zen3", "--workload", "random:pages=4096,accesses=100k"],
                       capture_output=True, text=True, check=True)
    l2 = next(line.split() for line in p.stdout.splitlines() if line.startswith("L2 ") and "." in line)
    assert [int(x) for x in l2[1:5]] == [int(caches.loc["L2", c]) for c in ("accesses", "hits", "misses", "evictions")]
