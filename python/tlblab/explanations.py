"""The numbers an explanation quotes, checked against the run it is shown with.

A failing criterion's `explanation` is prose written after a run. Prose that quotes our numbers
goes stale when the model changes: a report once printed "74 < 82.7 < 112.3" beside a run whose
values were 111, 168.5 and 120. So an explanation quotes this run's numbers in one of two ways:

- **placeholders**, filled from the run it is shown with: `{ours:KEY}` is this run's value of
  `KEY` (a row, or any other value the experiment returns), `{seed:ROW}` the seed's; an optional
  Python format spec follows a second colon (`{ours:qsort/decreased_main:,.0f}`,
  `{ours:share:.1%}`). These cannot go stale; a key the run has no value for is shown as such
  and flagged.
- **a stamp**, `ours_when_written = { ROW = value, ... }` beside the explanation: the values its
  prose was written against. The harness compares them with the run and marks the explanation
  as written for another run when one moved (relative difference over `STALE_REL`).

`unchecked_quote` finds a sentence that speaks of our values with a number outside any
placeholder, in an explanation with no stamp: the test over every reproduction file refuses it.
"""

from __future__ import annotations

import math
import re
from typing import Any

PLACEHOLDER = re.compile(r"\{(ours|seed):([^{}:]+)(?::([^{}]*))?\}")
# A stamped value differs from the run's when they differ by more than this share (prose rounds
# to three or four figures; the engine is deterministic, so a real change is never this small).
STALE_REL = 5e-4
_OURS_SENTENCE = re.compile(r"\b[Oo]urs?\b[^.;]*?\d")


def fmt(v: float | None) -> str:
    """A value as prose quotes it: thousands with separators and no fraction, smaller values to
    four significant figures."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "(no value)"
    if float(v).is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.4g}"


def check(text: str, seed_keys: set[str]) -> str | None:
    """What is wrong with the placeholders of `text`, or None."""
    for m in PLACEHOLDER.finditer(text):
        which, key, spec = m.group(1), m.group(2), m.group(3)
        # `ours:` may name a value the experiment returns beyond the rows (checked at the run);
        # the seed's values are the rows'.
        if which == "seed" and key not in seed_keys:
            return f"placeholder {m.group(0)}: row '{key}' has no seed value"
        if spec is not None:
            try:
                format(1234.5, spec)
            except ValueError as e:
                return f"placeholder {m.group(0)}: format '{spec}' is not a number format ({e})"
    return None


def check_stamp(stamp: Any) -> str | None:
    """What is wrong with an `ours_when_written` table, or None (its keys are checked at the run:
    the experiment may return values beyond the rows)."""
    if not isinstance(stamp, dict) or not stamp:
        return f"expected a table of key = value, found {stamp!r}"
    for k, v in stamp.items():
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            return f"'{k}': expected a number, found {v!r}"
    return None


def missing(text: str, ours: dict[str, float]) -> list[str]:
    """The `ours:` placeholders of `text` whose key this run has no value for."""
    return [m.group(2) for m in PLACEHOLDER.finditer(text) if m.group(1) == "ours" and m.group(2) not in ours]


def render(text: str, ours: dict[str, float], seed: dict[str, float | None]) -> str:
    """`text` with every placeholder replaced by the run's (or the seed's) value."""

    def one(m: re.Match) -> str:
        which, key, spec = m.group(1), m.group(2), m.group(3)
        v = (ours if which == "ours" else seed).get(key)
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return f"(no value for {key})"
        return format(v, spec) if spec else fmt(v)

    return PLACEHOLDER.sub(one, text)


def stale(stamp: dict[str, float] | None, ours: dict[str, float]) -> list[str]:
    """The stamped rows whose value in this run is not the one the prose was written against."""
    moved = []
    for k, then in (stamp or {}).items():
        now = ours.get(k)
        if now is None or not math.isclose(now, then, rel_tol=STALE_REL, abs_tol=1e-12):
            moved.append(f"{k} was {fmt(then)}, now {fmt(now)}")
    return moved


def unchecked_quote(criterion: dict[str, Any]) -> str | None:
    """The first sentence of the explanation that quotes a number of ours the run cannot check
    (no placeholder for it and no stamp), or None."""
    text = criterion.get("explanation") or ""
    if not text or criterion.get("ours_when_written"):
        return None
    bare = PLACEHOLDER.sub("", text)
    m = _OURS_SENTENCE.search(bare)
    if m is None:
        return None
    start = bare.rfind(".", 0, m.start()) + 1
    end = bare.find(".", m.end())
    return bare[start:end if end >= 0 else len(bare)].strip()
