"""What the harness counts says what the numbers say (issue 85): a ratio's operands have the signs
its words imply, a row resting on a constant fitted to its own table predicts nothing, one claim
is counted once, tlblab's own claims apart from the seed's, a failing consistency check fails
`reproduce --check`, and full-size runs are recorded for the study to show."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tlblab.reproduce as rp
from tlblab import records
from tlblab.errors import UserError


def _rep(rows, criteria, **kw):
    return rp.Reproduction(path=Path("x.toml"), seed="x", id="x", title="", source="", machine="",
                           setup="", experiment="", rows=rows, criteria=criteria, **kw)


def _verdicts(rows, criteria, ours):
    return {v["criterion"]: v["holds"] for v in rp.evaluate(_rep(rows, criteria), ours)}


# 004/table2#main-over-micro-qsort held on a run whose two decreases were -149 and -21.
EXCEEDS = {"id": "main-over-micro", "kind": "ratio", "num": "main", "den": "micro", "min": 1.01, "max": 1e9,
           "role": "prediction", "says": "the decrease in main stall cycles exceeds the decrease in micro"}
ROWS = [{"key": "main", "quantity": "", "seed": 13694.0}, {"key": "micro", "quantity": "", "seed": 202.0}]


def test_a_exceeds_b_no_longer_passes_when_both_are_negative():
    assert _verdicts(ROWS, [EXCEEDS], {"main": 149.0, "micro": 21.0}) == {"main-over-micro": True}
    v = rp.evaluate(_rep(ROWS, [EXCEEDS]), {"main": -149.0, "micro": -21.0})[0]
    assert v["holds"] is False and "micro is -21: a positive denominator expected" in v["detail"]
    # A positive main over a negative micro is no "exceeds" either, nor a zero denominator.
    assert _verdicts(ROWS, [EXCEEDS], {"main": 149.0, "micro": -21.0}) == {"main-over-micro": False}
    assert _verdicts(ROWS, [EXCEEDS], {"main": 149.0, "micro": 0.0}) == {"main-over-micro": False}
    # A zero numerator is a ratio of 0, judged by the bounds.
    at_most = dict(EXCEEDS, id="m", min=0, max=0.5)
    assert _verdicts(ROWS, [at_most], {"main": 0.0, "micro": 21.0}) == {"m": True}
    assert _verdicts(ROWS, [at_most], {"main": -1.0, "micro": 21.0}) == {"m": False}


def test_two_losses_are_compared_only_when_the_criterion_says_negative():
    loses_less = dict(EXCEEDS, id="l", min=0.1, max=0.9, signs="negative")
    assert _verdicts(ROWS, [loses_less], {"main": -6561.0, "micro": -17070.0}) == {"l": True}
    assert _verdicts(ROWS, [loses_less], {"main": 6561.0, "micro": 17070.0}) == {"l": False}
    assert _verdicts(ROWS, [dict(loses_less, signs="positive")], {"main": -6561.0, "micro": -17070.0}) == {"l": False}


def test_a_seed_ratio_takes_its_operands_signs_from_the_seed():
    split = {"id": "s", "kind": "seed_ratio", "num": "micro", "den": "main", "factor": 3, "role": "prediction"}
    assert _verdicts(ROWS, [split], {"main": 10000.0, "micro": 150.0}) == {"s": True}
    v = rp.evaluate(_rep(ROWS, [split]), {"main": -10000.0, "micro": -150.0})[0]
    assert v["holds"] is False and "not the seed's signs" in v["detail"]


def _file(tmp_path: Path, body: str, name: str = "t1") -> Path:
    d = tmp_path / "s003_x" / "reproductions"
    d.mkdir(parents=True, exist_ok=True)
    p = d / f"{name}.toml"
    p.write_text(f'seed = "003"\nid = "{name}"\ntitle = "x"\nsource = "s"\nmachine = "zen3"\nsetup = "s"\n'
                 f'experiment = "seed003:fig6_2"\n' + body)
    return p


ROW_A = '[[rows]]\nkey = "a"\nquantity = "q"\nseed = 2\n'
ROW_B = '[[rows]]\nkey = "b"\nquantity = "q"\nseed = 3\nrests_on = "the save cost fitted to §6.2 (a11-a12)"\n'


def test_a_prediction_resting_on_a_constant_fitted_to_its_table_is_refused(tmp_path):
    crit = '[[criteria]]\nid = "c"\nrole = "prediction"\nkind = "ratio"\nnum = "a"\nden = "b"\nmin = 0\nmax = 1\n'
    with pytest.raises(UserError, match=r"row 'b' rests on a constant fitted to this table \(the save cost"):
        rp.load_file(_file(tmp_path, ROW_A + ROW_B + crit))
    ok = rp.load_file(_file(tmp_path, ROW_A + ROW_B + crit.replace(
        '"prediction"', '"consistency"\nbecause = "rests on the fitted save cost"')))
    assert ok.fitted_keys() == {"b"}
    o = rp.outcome(ok, {"a": 1.0, "b": 2.0}, 0.0)
    assert [r["fitted"] for r in o.row_records] == ["", "rests on the save cost fitted to §6.2 (a11-a12)"]


@pytest.mark.parametrize("body, message", [
    ('[[criteria]]\nid = "c"\nrole = "ours"\nkind = "range"\nrows = ["a"]\n', r"\(c\).because: a claim of ours"),
    ('[[criteria]]\nid = "c"\nrole = "prediction"\nkind = "seed_ratio"\nnum = "a"\nden = "a"\nfactor = 2\n'
     'signs = "negative"\n', r"\(c\).signs: expected one of positive, negative on a 'ratio' criterion"),
    ('counted_in = "nosuch"\n[[criteria]]\nid = "c"\nrole = "prediction"\nkind = "range"\nrows = ["a"]\n',
     r"'counted_in': expected the id of another reproduction of this seed"),
])
def test_the_new_fields_are_checked_on_load(tmp_path, body, message):
    # counted_in is a top-level key: it goes before the first table.
    with pytest.raises(UserError, match=message):
        rp.load_file(_file(tmp_path, body.split("[[criteria]]")[0] + ROW_A + "[[criteria]]" +
                           body.split("[[criteria]]", 1)[1]))


def _outcome(rep, holds: dict[str, bool]):
    o = rp.Outcome(rep, {}, 0.0)
    o.verdict_records = [{"criterion": c["id"], "role": c["role"], "holds": holds[c["id"]]} for c in rep.criteria]
    return o


def test_one_claim_is_counted_once_and_ours_apart():
    crit = [{"id": "p", "role": "prediction"}, {"id": "c", "role": "consistency"}, {"id": "u", "role": "ours"}]
    full = _rep(ROWS, crit)
    full.id = "at_scale"
    quick = _rep(ROWS, crit, counted_in="at_scale")
    quick.id = "helper_effect"
    s = rp.seed_summary([_outcome(full, {"p": True, "c": True, "u": False}),
                         _outcome(quick, {"p": False, "c": True, "u": True})])[0]
    assert (s["predictions_hold"], s["predictions"]) == (1, 1)
    assert (s["consistency_hold"], s["consistency"]) == (1, 1)
    assert (s["ours_hold"], s["ours"]) == (0, 1)
    assert s["not_counted"] == "x/helper_effect" and s["reproductions"] == 2


def test_the_worst_predicted_error_names_its_row_and_what_it_holds():
    rep = _rep([{"key": "pressure/gups", "quantity": "DRAM walk refs", "seed": 2.0, "unit": "%"}],
               [{"id": "p", "kind": "factor", "rows": ["pressure/gups"], "factor": 2, "role": "prediction"}])
    s = rp.seed_summary([rp.outcome(rep, {"pressure/gups": 5.0}, 0.0)])[0]
    assert s["worst"] == "+150% (x/x: pressure/gups, DRAM walk refs: seed 2 %, ours 5)"


def test_a_full_run_is_recorded_and_read_back_with_the_current_criteria(tmp_path):
    rep = rp.select("003/fig6_2")[0]
    ours = {r["key"]: float(r.get("seed", 0)) for r in rep.rows}
    o = rp.outcome(rep, ours, 1.5)
    records.write_records([o], tmp_path)
    path = tmp_path / "full" / "003" / "fig6_2.json"
    rec = json.loads(path.read_text())
    assert rec["size"] == "full" and rec["code"] == records.code_hash("003") and rec["ours"] == ours
    assert records.code_hash("003") != records.code_hash("001"), "a seed's own folder is in its hash, the others' are not"
    (got,) = records.load(tmp_path)
    assert not got.stale and got.outcome.verdict_records == o.verdict_records
    assert "full size, `tlblab reproduce` at" in got.label()
    rec["code"] = "0" * 16
    path.write_text(json.dumps(rec))
    assert records.load(tmp_path)[0].stale and "STALE" in records.load(tmp_path)[0].label()
    assert records.load(tmp_path, which=["003/table6_1"]) == []
    path.write_text("{")
    with pytest.raises(UserError, match=r"fig6_2.json: not a record of a full run"):
        records.load(tmp_path)


def test_every_seed_folder_s_findings_load_and_a_bad_one_names_its_field(tmp_path):
    from tlblab import seeds

    found = {s.number: rp.load_findings(s.folder / "findings.toml") for s in seeds.all_seeds()}
    assert {k for k, v in found.items() if v} >= {"000", "001", "004"}
    for fs in found.values():
        for f in fs:
            assert f["reproduction"] == "" or rp.select(f["reproduction"])
    bad = tmp_path / "findings.toml"
    bad.write_text('[[findings]]\nid = "x"\nsource = "§1"\nseed_says = ""\ntlblab_shows = "y"\n')
    with pytest.raises(UserError, match=r"findings.toml: findings\[0\].seed_says: expected a non-empty string"):
        rp.load_findings(bad)


def test_check_fails_on_a_failing_consistency_check_and_names_it(monkeypatch, capsys, tmp_path):
    import argparse

    from tlblab.commands import reproduce as cmd

    rep = _rep(ROWS, [dict(EXCEEDS, role="consistency", because="by construction")])
    rep.id = "t"
    monkeypatch.setattr(rp, "select", lambda which: [rep])
    monkeypatch.setattr(rp, "run_all", lambda reps, quick, **kw: [rp.outcome(rep, {"main": -1.0, "micro": 2.0}, 0.0)])
    args = argparse.Namespace(which="x/t", out=str(tmp_path), quick=True, check=True, list=False, preregister=False,
                              jobs=None, profile=False)
    assert cmd.run(args) == 1
    assert "consistency checks that fail (a defect, not a finding): x/t#main-over-micro" in capsys.readouterr().err


def test_a_reproduction_s_plot_puts_one_quantity_on_each_axis():
    import re

    from tlblab.report import plots

    # 004/table2's extra values of ours: pages, references and faults, once drawn on one "value" axis.
    rows = [{"key": f"{p}/{k}", "quantity": "(ours only)", "unit": "", "seed": None, "ours": v}
            for p in ("qsort", "susan") for k, v in (("data_pages", 40.0), ("references", 1e6), ("page_faults", 9.0))]
    rows.append({"key": "qsort/cycles", "quantity": "cycles of a run", "unit": "cycles", "seed": 3.7e7, "ours": 3e7})
    svg = plots.reproduction(rows, "t", "p")
    labels = re.findall(r'id="p-ylabel-\d+"', svg) or re.findall(r'ylabel-\d+', svg)
    assert len(set(labels)) == 4, labels
    for name in ("data pages", "references", "page faults"):
        assert name in svg


def test_several_names_select_their_union_in_the_catalog_s_order():
    # `tlblab reproduce 003 000/a11 003/alg3`: each seed's or reproduction's, once, as listed in the catalog.
    names = [r.name for r in rp.select(["003", "000/a11", "003/alg3"])]
    assert names[0] == "000/a11" and names[1:] == [r.name for r in rp.select("003")]
    with pytest.raises(UserError, match="no reproduction '9'"):
        rp.select(["000", "9"])


def test_verdict_lines_give_every_criterion_tagged_and_the_values_last():
    # The side experiments' runner (scripts/slots_sensitivity.py, scripts/virt_placement_bound.py):
    # one line per criterion of each reproduction, with the caller's tag, then its values.
    rep = rp.select(["002/fig3"])[0]
    lines = rp.verdict_lines(["002/fig3"], {"setting": "x"}, quick=True, values=True)
    assert all(line["setting"] == "x" and line["reproduction"] == "002/fig3" for line in lines)
    assert [line["criterion"] for line in lines[:-1]] == [c["id"] for c in rep.criteria]
    assert lines[-1]["criterion"] == "(ours)" and set(lines[-1]["ours"]) >= {r["key"] for r in rep.rows}
    assert all(isinstance(line["holds"], bool) for line in lines)
    assert "(ours)" not in [line["criterion"] for line in rp.verdict_lines(["002/fig3"], {}, quick=True)]
