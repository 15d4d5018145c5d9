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
    assert rt.last_seconds(tmp_path, True) == {"003": t["seeds"][0]["cpu"], "003/alg3": t["reproductions"][0]["cpu"]}
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


def _twice(x: int) -> int:
    return 2 * x


def test_a_unit_s_result_makes_the_units_that_waited_for_it_ready_the_longest_first():
    # One job: everything here, in priority order, the follow-ups of a unit overtaking the
    # shorter units that were ready before them; on two workers the same results arrive.
    for jobs in (1, 2):
        seen = []

        def done(u, result):
            seen.append((u.key, result))
            if u.key == "plan":
                return [reproduce_pool.Unit(_twice, (k,), 10.0 + k, f"run{k}") for k in (1, 2)]
            return []

        units = [reproduce_pool.Unit(_twice, (0,), 100.0, "plan"), reproduce_pool.Unit(_twice, (5,), 1.0, "short")]
        reproduce_pool.run_dynamic(units, jobs=jobs, on_result=done)
        assert sorted(seen) == [("plan", 0), ("run1", 2), ("run2", 4), ("short", 10)], jobs
        if jobs == 1:
            assert [k for k, _ in seen] == ["plan", "run2", "run1", "short"]


def test_seed_004_s_two_isas_are_two_units_and_every_other_seed_one():
    from tlblab import reproduce_units

    reps = [r for r in rp.select(None) if r.seed in ("003", "004")]
    got = {(seed, tuple(reps[i].id for i in idx)) for seed, idx in reproduce_units.groups(reps)}
    assert got == {("003", tuple(r.id for r in reps if r.seed == "003")),
                   ("004", ("table2", "table3")), ("004", ("table2_armv7", "table3_armv7"))}


def test_seed_001_s_runs_made_as_the_pool_s_own_units_give_the_outcomes_of_one_job():
    # Two jobs: the runs seed 001's prepare would make in its own pool are planned, made one a
    # unit and adopted by the process that then runs the reproductions (their runs are told, one
    # line each); the numbers are those of one job, where prepare makes them.
    from tlblab.seeds.s001_pt_baker import experiments as seed001

    reps = rp.select("001/throttle_at_scale")
    seed001._RUNS.clear()
    one = rp.run_all(reps, True, jobs=1)
    seed001._RUNS.clear()
    lines, prepared = [], []
    two = rp.run_all(reps, True, jobs=2, on_run=lines.append, on_prepared=prepared.append)
    assert seed001._RUNS == {}  # made and adopted in the workers, not here
    assert prepared[0]["runs"] == len(lines) == len(seed001.PLAN[("seed", "liblinear_throttle")]) > 1
    assert [repr(sorted(o.ours.items())) for o in two] == [repr(sorted(o.ours.items())) for o in one]
    assert two[0].row_records and two[0].verdict_records == one[0].verdict_records


def test_the_report_s_figures_drawn_on_two_processes_come_back_each_in_its_place():
    from tlblab import report

    reps = rp.select("003")[:report.PARALLEL_FIGURES]
    outcomes = [rp.outcome(r, {row["key"]: 1.0 + k for k, row in enumerate(r.rows)}, 0.0) for r in reps]
    svgs = report._figures(outcomes)
    assert len(svgs) == len(reps)
    for r, svg in zip(reps, svgs):
        assert svg.startswith("<svg ") and f'aria-label="plot-repro-003-' in svg
        assert f"plot-{report._rid(r)}" in svg, r.name


def test_graphs_another_engine_build_wrote_are_dropped_and_this_build_s_kept(tmp_path):
    # Seed 001's graph cache is tagged by the engine's bytes; a rebuilt engine never reads an
    # older build's graphs (7.7 GB at full size), so they are removed when a process first tags.
    from tlblab.seeds.s001_pt_baker import runs

    mine = tmp_path / "graph500_list.scale24.edge_factor16.seed0.g1.aaaa.graph"
    stale = tmp_path / "rmat_csr.scale24.edge_factor16.seed0.g1.bbbb.graph"
    other = tmp_path / "run_seconds.json"
    for p in (mine, stale, other):
        p.write_text("x")
    runs._drop_stale_graphs(tmp_path, "aaaa")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([mine.name, other.name])


def test_a_seed_s_prepared_runs_keep_their_phases_and_the_profile_shows_them():
    # Seed 001's and 004's shared runs were timed only as a whole (wall, CPU): their phases
    # stayed the plan's, so --profile could not say how much was capture and how much simulation.
    from tlblab import reproduce_units as ru

    plan = {"wall": 0.5, "cpu": 0.4, "phases": {"python": {"wall": 0.5, "cpu": 0.4, "calls": 0}}}
    ru.add_timing(plan, {"wall": 10.0, "cpu": 9.0, "phases": {
        "capture": {"wall": 6.0, "cpu": 5.5, "calls": 2}, "python": {"wall": 4.0, "cpu": 3.5, "calls": 0}}})
    ru.add_timing(plan, {"wall": 3.0, "cpu": 2.0, "phases": {"simulation": {"wall": 3.0, "cpu": 2.0, "calls": 1}}})
    assert plan == {"wall": 13.5, "cpu": 11.4, "phases": {
        "capture": {"wall": 6.0, "cpu": 5.5, "calls": 2}, "simulation": {"wall": 3.0, "cpu": 2.0, "calls": 1},
        "python": {"wall": 4.5, "cpu": 3.9, "calls": 0}}}
    t = {"quick": False, "jobs": 2, "cpus": 2, "host": "h", "wall": 13.5, "cpu": 11.4,
         "load_average": {"before": [0.0], "after": [0.0]}, "peak_rss_mib": {"parent": 1, "largest_worker": 2},
         "seeds": [{"seed": "004", "reproductions": 1, "wall": 13.5, "cpu": 11.4, "prepared": [
             {"seed": "004", "runs": 2, "seconds": 13.0, "timing": plan,
              "each": [{"what": "qsort (x86)", "wall": 10.0, "cpu": 9.0}, {"what": "susan", "wall": 3.0, "cpu": 2.0}]}]}],
         "reproductions": []}
    text = rt.format_timings(t)
    assert "shared runs" in text and "qsort (x86)" in text
    row = next(line for line in text.splitlines() if line.startswith("004") and "  2  " in line)
    assert row.split()[3:6] == ["11.4", "5.5", "0.0"]  # CPU, capture, generation
