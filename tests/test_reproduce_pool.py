"""`tlblab reproduce`'s scheduler and timings (issue 89): the seeds on two processes give the same
CSVs as on one, whatever order they finish in; each reproduction says where its seconds went."""

from __future__ import annotations

import json
import operator
import time

import pytest

from tlblab import phases, reproduce as rp, reproduce_pool, reproduce_timings as rt
from tlblab.cli import main


def test_units_come_back_in_their_order_whatever_order_they_are_handed_out_in():
    units = [(i, 10) for i in range(5)]
    seen = []
    got = reproduce_pool.run_units(operator.add, units, jobs=2, order=[4, 2, 0, 1, 3],
                                   on_result=lambda i, r: seen.append(i))
    assert got == [10, 11, 12, 13, 14]
    assert sorted(seen) == [0, 1, 2, 3, 4]


def test_a_worker_s_messages_reach_the_parent_and_in_one_process_too():
    for jobs in (1, 2):
        heard = []
        reproduce_pool.run_units(reproduce_pool.post, [("a",), ("b",)], jobs=jobs, on_message=heard.append)
        assert sorted(heard) == ["a", "b"], jobs


def test_a_unit_s_exception_is_raised_in_the_parent():
    with pytest.raises(ZeroDivisionError):
        reproduce_pool.run_units(operator.truediv, [(1, 1), (1, 0)], jobs=2)


def test_each_second_goes_to_the_innermost_phase_and_the_rest_to_python():
    with phases.measure() as ledger:
        with phases.phase(phases.SIMULATION):
            time.sleep(0.05)
            with phases.phase(phases.CAPTURE):
                time.sleep(0.05)
        time.sleep(0.02)
    rec = ledger.record()
    assert rec["simulation"]["calls"] == 1 and rec["capture"]["calls"] == 1
    assert 0.04 <= rec["simulation"]["wall"] < 0.09 and 0.04 <= rec["capture"]["wall"]
    assert rec["python"]["wall"] >= 0.015
    total = sum(p["wall"] for p in rec.values())
    assert abs(total - ledger.wall) < 0.005


def test_nothing_is_charged_when_nothing_measures():
    with phases.phase(phases.SIMULATION):
        pass  # no ledger: no error, nothing kept
    assert phases._state.ledger is None and phases._state.open == []


# Two cheap seeds' reproductions (seconds at quick size).
CHEAP = ["002/table1", "002/table1_bw", "003/alg3", "003/fig6_13_14"]


def test_two_processes_give_the_outcomes_of_one_in_the_same_order():
    reps = [r for r in rp.select(None) if r.name in CHEAP]
    told: dict[int, list] = {1: [], 2: []}
    one = rp.run_all(reps, True, jobs=1, on_done=told[1].append)
    two = rp.run_all(reps, True, jobs=2, on_done=told[2].append)
    for jobs in (1, 2):  # each outcome told once, whichever way it was made
        assert sorted(o.reproduction.name for o in told[jobs]) == sorted(CHEAP), jobs
    assert [o.reproduction.name for o in two] == [r.name for r in reps]
    assert all(a.reproduction is b.reproduction for a, b in zip(one, two))
    for a, b in zip(one, two):
        assert a.row_records == b.row_records and a.verdict_records == b.verdict_records
        assert b.timing["cpu"] >= 0 and "python" in b.timing["phases"]
        assert b.timing["phases"]["simulation"]["calls"] >= 1, b.reproduction.name


def test_reproduce_writes_its_timings_and_profile_prints_them(tmp_path, capsys):
    assert main(["reproduce", "003/alg3", "--quick", "--out", str(tmp_path), "--profile", "--jobs", "2"]) == 0
    t = json.loads((tmp_path / rt.TIMINGS).read_text())
    assert t["quick"] and t["jobs"] == 2 and [s["seed"] for s in t["seeds"]] == ["003"]
    assert t["reproductions"][0]["reproduction"] == "003/alg3"
    assert rt.last_seconds(tmp_path, True) == {"003": t["seeds"][0]["cpu"]}
    assert rt.last_seconds(tmp_path, False) == {}
    assert "simulation CPU s" in capsys.readouterr().out
    # `tlblab bench reproduce` summarises the same record and compares two runs' CSVs.
    from tlblab.benchmarks import reproduce as bench

    s = bench._summary(t)
    assert s["seeds"]["003"]["cpu_s"] == round(t["seeds"][0]["cpu"], 1) and s["slowest"][0]["reproduction"] == "003/alg3"
    assert bench._same_csv(tmp_path, tmp_path) is True
    (tmp_path / "other").mkdir()
    assert bench._same_csv(tmp_path, tmp_path / "other") == sorted(
        str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.csv") if "other" not in p.parts)


def test_jobs_below_one_is_refused_in_one_line(tmp_path, capsys):
    assert main(["reproduce", "003/alg3", "--quick", "--out", str(tmp_path), "--jobs", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--jobs" in err[0] and "found 0" in err[0]
