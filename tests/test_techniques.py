"""Techniques you switch on, per-phase statistics, and the reproduction harness: smoke, parity
(CLI = Python), bad input (one line, exit 2) and the harness's criteria."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

import tlblab
from cli_helpers import cli, simulate_both_ways
import tlblab.reproduce as rp

RT = "rt_same_diff_set:layout=0,hyperperiods=1"


def test_the_catalog_lists_tlb_coloring_with_its_parameters_and_seed():
    names = {t["name"]: t for t in tlblab.techniques()}
    c = names["tlb_coloring"]
    assert "seed 003" in c["seed"]
    assert {"reserved", "assign", "first_color"} <= {p["name"] for p in c["params"]}
    out = cli("techniques")
    assert out.returncode == 0 and "tlb_coloring" in out.stdout and "first_color" in out.stdout


def test_coloring_isolates_the_tasks_that_malloc_like_placement_lets_collide():
    same = tlblab.simulate("xeon-e5-2650", RT, technique="tlb_coloring:assign=same")
    diff = tlblab.simulate("xeon-e5-2650", RT, technique="tlb_coloring:assign=per_thread")
    jobs_same, jobs_diff = same.job_frame(), diff.job_frame()
    after_warmup = lambda jobs: int(jobs.query("job > 0")["L1D_misses"].sum())  # noqa: E731
    assert after_warmup(jobs_diff) == 0
    assert after_warmup(jobs_same) > 0
    assert diff.technique["name"] == "tlb_coloring"
    assert diff.technique["params"]["assign"] == "per_thread"
    assert diff.technique["counters"]["colors_used"] == 2


def test_the_cli_and_python_give_the_same_statistics_with_a_technique():
    py = simulate_both_ways("xeon-e5-2650", RT, "tlb_coloring:assign=same")
    text = cli("simulate", "--machine", "xeon-e5-2650", "--workload", RT,
               "--technique", "tlb_coloring:assign=same")
    assert "technique tlb_coloring" in text.stdout and "pages_placed" in text.stdout


def test_a_machine_file_technique_table_is_used_and_the_flag_overrides_it(tmp_path):
    m = tlblab.machine_config("xeon-e5-2650")
    m["technique"] = {"name": "tlb_coloring", "assign": "same"}
    r = tlblab.simulate(m, RT)
    assert r.technique["params"]["assign"] == "same"
    r2 = tlblab.simulate(m, RT, technique="tlb_coloring:assign=per_thread")
    assert r2.technique["params"]["assign"] == "per_thread"


@pytest.mark.parametrize("spec,expected", [
    ("nope", "unknown technique 'nope'"),
    ("tlb_coloring:colour=1", "no parameter 'colour'"),
    ("tlb_coloring:reserved=99", "parameter 'reserved' expects an integer from 0 to 15"),
    ("tlb_coloring:assign=every", "parameter 'assign' expects one of per_thread, same"),
    ("tlb_coloring:reserved=1,reserved=2", "given twice"),
    ("tlb_coloring:reserved=1,,assign=same", "empty item"),
])
def test_a_bad_technique_gets_one_line_naming_the_parameter_and_exit_2(spec, expected):
    out = cli("simulate", "--machine", "xeon-e5-2650", "--workload", "random:pages=16,accesses=10",
              "--technique", spec)
    assert out.returncode == 2
    assert expected in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    with pytest.raises(ValueError, match="technique"):
        tlblab.check_technique(spec, "xeon-e5-2650")


def test_phases_give_the_first_and_second_access_of_the_migration_benchmark():
    r = tlblab.simulate("cortex-a7", "migration_4k:pages=8")
    ph = r.phase_frame()
    assert len(ph) >= 2
    assert (ph["cycles"] >= 0).all() and (ph["references"] > 0).all()
    # ns at the preset's clock.
    mhz = tlblab.machine_config("cortex-a7")["frequency_mhz"]
    row = ph.iloc[0]
    assert row["ns"] == pytest.approx(row["cycles"] * 1000 / mhz)
    out = cli("simulate", "--machine", "cortex-a7", "--workload", "migration_4k:pages=8")
    assert out.returncode == 0 and "phase" in out.stdout


def test_reproduce_writes_the_seed_beside_ours_with_verdicts(tmp_path):
    out = cli("reproduce", "003/fig6_2", "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(open(tmp_path / "003" / "fig6_2.csv")))
    verdicts = list(csv.DictReader(open(tmp_path / "003" / "fig6_2.verdicts.csv")))
    summary = list(csv.DictReader(open(tmp_path / "summary.csv")))
    assert {r["key"] for r in rows} >= {"same/T1/job1", "diff/T2/job1"}
    assert all(r["ours"] != "" for r in rows)
    assert summary[0]["reproduction"] == "003/fig6_2"
    holds = all(v["holds"] == "True" for v in verdicts)
    check = cli("reproduce", "003/fig6_2", "--out", str(tmp_path), "--check")
    assert check.returncode == (0 if holds else 1)


def test_unknown_reproductions_and_malformed_files_get_one_clear_line(tmp_path):
    out = cli("reproduce", "999")
    assert out.returncode == 2 and "no reproduction '999'" in out.stderr
    bad = tmp_path / "t1.toml"
    bad.write_text('seed = "003"\nid = "t1"\ntitle = "x"\nsource = "s"\nmachine = "zen3"\nsetup = "s"\n'
                   'experiment = "seed003:fig6_2"\n[[rows]]\nkey = "a"\nquantity = "q"\nseed = 1\n'
                   '[[criteria]]\nid = "c"\nkind = "within"\nrows = ["b"]\n')
    with pytest.raises(tlblab.errors.UserError, match=r"t1.toml: criteria\[0\] \(c\): row 'b' is not a key"):
        rp.load_file(bad)


def _rep(rows, criteria):
    return rp.Reproduction(path=Path("x.toml"), seed="x", id="x", title="", source="", machine="",
                           setup="", experiment="", rows=rows, criteria=criteria)


def test_each_criterion_kind_decides_as_documented():
    rows = [{"key": k, "quantity": "", "seed": s, "x": x} for k, s, x in
            [("a", 10, 1), ("b", 20, 2), ("c", -5, 3)]]
    crit = [
        {"id": "w", "kind": "within", "rows": ["a", "b"], "abs_tol": 1, "rel_tol": 0.1},
        {"id": "e", "kind": "equal", "rows": ["a"]},
        {"id": "r", "kind": "range", "rows": ["a", "b"], "min": 0, "max": 25},
        {"id": "o", "kind": "order", "rows": ["a", "b"], "direction": "increasing", "strict": True},
        {"id": "q", "kind": "ratio", "num": "b", "den": "a", "min": 1.5, "max": 2.5},
        {"id": "s", "kind": "seed_ratio", "num": "b", "den": "a", "factor": 1.2},
        {"id": "g", "kind": "same_sign", "rows": ["a", "c"]},
        {"id": "x", "kind": "crossover", "rows": ["a", "b", "c"], "threshold": 0, "min_x": 2.5, "max_x": 3},
    ]
    ours = {"a": 11.0, "b": 22.0, "c": -1.0}
    v = {r["criterion"]: r["holds"] for r in rp.evaluate(_rep(rows, crit), ours)}
    assert v == {"w": True, "e": False, "r": True, "o": True, "q": True, "s": True, "g": True, "x": True}
    ours = {"a": 11.0, "b": 9.0, "c": 3.0}
    v = {r["criterion"]: r["holds"] for r in rp.evaluate(_rep(rows, crit), ours)}
    assert v == {"w": False, "e": False, "r": True, "o": False, "q": False, "s": False, "g": False, "x": False}
    missing = rp.evaluate(_rep(rows, crit[:1]), {"a": 1.0})
    assert not missing[0]["holds"] and "no value for row 'b'" in missing[0]["detail"]
