"""Seed 001's Fig. 6.12 reproduction (`reproductions/power.toml`, `power.py`) at its --quick size."""

from __future__ import annotations

import math

import pytest


def test_seed_001_fig6_12_runs_its_quick_form_with_every_row_and_the_helpers_core_counted():
    # The reproduction of Fig. 6.12 (seed 001 §6.4) at its --quick size: every row has a value,
    # and a helper that never sleeps (NOPs) adds its busy core's power to the package's.
    import tlblab.reproduce as rp

    rep = rp.select("001/power")[0]
    o = rp.run_one(rep, quick=True)
    keys = {r["key"] for r in rep.rows}
    assert keys <= set(o.ours)
    assert all(math.isfinite(o.ours[k]) for k in keys)
    for w in ("liblinear", "gapbs_bc", "hash_join"):
        assert o.ours[f"{w}/KWN/power_w"] > o.ours[f"{w}/base/power_w"]
        assert o.ours[f"{w}/UWN/power_w"] > o.ours[f"{w}/base/power_w"]
    assert {v["criterion"] for v in o.verdict_records} == {c["id"] for c in rep.criteria}


def test_the_power_runs_made_in_two_processes_equal_those_made_in_turn():
    # power.prepare makes Fig. 6.12's runs in two spawned workers (at the full size, to keep
    # `reproduce 001` short): the same windows, bit for bit, as made in turn in this process.
    from tlblab.seeds.s001_pt_baker import power

    power._RUNS.clear()
    did = power.prepare(True, ["fig6_12"], workers=2)
    two = dict(power._RUNS)
    assert did["runs"] == len(two) == len(power.WORKLOADS) * len(power.VARIANTS)
    power._RUNS.clear()
    power.power_runs(True)
    assert power._RUNS == two


def test_the_power_runs_issue_the_programs_instructions_between_references_as_seed_001s_other_runs(monkeypatch):
    # Fig. 6.12's runs are seed 001's windows on seed 001's machine, the program's instructions
    # between its references included (runs.with_issue, ISSUE_TENTHS: LibLinear's 4.1 a
    # reference): each window's time in power.py is the application's cycles of
    # experiments.window_sums' run of the same windows, which issues them. Without them the
    # application's cycles are fewer, so the check tells the two apart.
    from tlblab.seeds.s001_pt_baker import experiments as ex, power, runs

    wl, _ = power._spec("liblinear", True)
    hz = float(ex.machine()["frequency_mhz"]) * 1e6
    ours = [w["seconds"] * hz for w in power.window_energy(ex.machine(), wl, None, True)]
    issued = [w["cycles"] for w in ex.window_sums(ex.machine(), wl, None, True)]
    assert ours == pytest.approx(issued, rel=1e-12)
    monkeypatch.setattr(runs, "ISSUE_TENTHS", {})
    back_to_back = [w["cycles"] for w in ex.window_sums(ex.machine(), wl, None, True)]
    assert all(i > b * 1.02 for i, b in zip(issued, back_to_back)), (issued, back_to_back)
