"""An explanation that quotes our numbers is checked against the run it is shown with
(tlblab.explanations): placeholders filled from the run, or a stamp of the values its prose was
written against, flagged when the run moved them."""

from __future__ import annotations

from pathlib import Path

import pytest

import tlblab.explanations as ex
import tlblab.reproduce as rp
from tlblab.errors import UserError

ROWS = ('[[rows]]\nkey = "a"\nquantity = "q"\nseed = 2\n'
        '[[rows]]\nkey = "b"\nquantity = "q"\n')


def _file(tmp_path: Path, criterion: str) -> Path:
    p = tmp_path / "t1.toml"
    p.write_text('seed = "003"\nid = "t1"\ntitle = "x"\nsource = "s"\nmachine = "zen3"\nsetup = "s"\n'
                 'experiment = "seed003:fig6_2"\n' + ROWS +
                 '[[criteria]]\nid = "c"\nrole = "prediction"\nkind = "range"\nrows = ["a"]\nmax = 1\n' + criterion)
    return p


def test_placeholders_show_this_runs_values_and_the_seeds(tmp_path):
    rep = rp.load_file(_file(tmp_path, 'explanation = "ours {ours:a} '
                             '(seed {seed:a}), b {ours:b:.1%}, a {ours:a:,.0f}"\n'))
    v = rp.evaluate(rep, {"a": 12345.678, "b": 0.25})[0]
    assert not v["holds"]
    assert v["explanation"] == "ours 12,346 (seed 2), b 25.0%, a 12,346"
    assert v["stale"] == ""
    assert rp.evaluate(rep, {"a": 12, "b": 0.5})[0]["explanation"] == "ours 12 (seed 2), b 50.0%, a 12"
    # A value the run does not have (a typo, or a value the experiment stopped returning).
    rep2 = rp.load_file(_file(tmp_path, 'explanation = "ours {ours:zz}"\n'))
    v = rp.evaluate(rep2, {"a": 3.0})[0]
    assert v["explanation"] == "ours (no value for zz)"
    assert v["stale"] == "written for another run: it quotes zz, which this run has no value for"
    # A criterion that holds shows no explanation at all.
    assert rp.evaluate(rep, {"a": 0.5, "b": 0.5})[0]["explanation"] == ""


@pytest.mark.parametrize("criterion, message", [
    ('explanation = "seed {seed:b}"\n', r"\(c\)\.explanation: placeholder \{seed:b\}: row 'b' has no seed value"),
    ('explanation = "seed {seed:zz}"\n', r"placeholder \{seed:zz\}: row 'zz' has no seed value"),
    ('explanation = "ours {ours:a:q}"\n', r"format 'q' is not a number format"),
    ('explanation = "x"\nours_when_written = { a = "1" }\n', r"ours_when_written: 'a': expected a number"),
    ('explanation = "x"\nours_when_written = 3\n', r"ours_when_written: expected a table"),
])
def test_bad_placeholders_and_stamps_are_refused_at_load_naming_the_file_and_criterion(tmp_path, criterion, message):
    with pytest.raises(UserError, match=message) as e:
        rp.load_file(_file(tmp_path, criterion))
    assert "t1.toml" in str(e.value)


def test_a_stamp_flags_the_explanation_when_the_run_moved_a_value_it_quotes(tmp_path):
    rep = rp.load_file(_file(tmp_path, 'explanation = "Ours: 74 < 82.7"\nours_when_written = { a = 74, b = 82.7 }\n'))
    same = rp.evaluate(rep, {"a": 74.0, "b": 82.70001})[0]
    assert same["explanation"] == "Ours: 74 < 82.7" and same["stale"] == ""
    moved = rp.evaluate(rep, {"a": 111.0, "b": 82.7})[0]
    assert moved["stale"] == "written for another run: a was 74, now 111"
    gone = rp.evaluate(rep, {"a": 111.0})[0]
    assert "b was 82.7, now (no value)" in gone["stale"]


def test_the_stamp_is_not_part_of_what_a_criterion_tests():
    import tlblab.prereg as pr

    c = {"id": "c", "kind": "range", "rows": ["a"], "max": 1}
    assert pr.digest(c) == pr.digest(dict(c, explanation="x", ours_when_written={"a": 1.0}))


def test_unchecked_quote_finds_our_numbers_outside_placeholders():
    assert ex.unchecked_quote({"explanation": "Ours: 15.8% of the stall. The seed's 7.6%."}) == "Ours: 15"
    assert ex.unchecked_quote({"explanation": "Ours: {ours:a} of the stall; the seed has 7.6%."}) is None
    assert ex.unchecked_quote({"explanation": "Our micro decrease is 0.", "ours_when_written": {"a": 0}}) is None
    assert ex.unchecked_quote({"explanation": "The seed has 9,683 (Table 2)."}) is None


def test_every_explanation_quoting_our_numbers_is_checked_against_the_run():
    unchecked = {f"{rep.seed}/{rep.id} {c['id']}": ex.unchecked_quote(c)
                 for rep in rp.catalog() for c in rep.criteria if ex.unchecked_quote(c)}
    assert not unchecked, ("explanations quote our numbers with neither placeholders ({ours:KEY}) nor an "
                           f"ours_when_written stamp (docs/reproductions.md): {unchecked}")
