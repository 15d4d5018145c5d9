"""A reproduction's criteria held against our values: `evaluate` gives each criterion's verdict
(holds, the detail that shows why, the explanation quoted when it fails), and the criterion kinds'
arithmetic (`docs/reproductions.md`: within, factor, equal, range, order, ratio, seed_ratio,
same_sign, crossover). Split from `tlblab.reproduce`, which loads the files, runs the experiments
and re-exports `evaluate`, `criterion_rows` and `ratio_pairs`.
"""

from __future__ import annotations

import math
from typing import Any

from tlblab import explanations


def criterion_rows(c: dict[str, Any]) -> list[str]:
    """Every row key a criterion reads, in its order."""
    return list(c.get("rows", [])) + [k for n, d in ratio_pairs(c) for k in (n, d)]


def ratio_pairs(c: dict[str, Any]) -> list[tuple[str, str]]:
    """A ratio criterion's (numerator, denominator) rows: `num`/`den` are one key each, or lists of
    keys of one length, each pair a ratio the criterion bounds."""
    if "num" not in c or "den" not in c:
        return []
    num, den = c["num"], c["den"]
    nums = [num] if isinstance(num, str) else list(num)
    dens = [den] if isinstance(den, str) else list(den)
    return list(zip(nums, dens))


def _num(x: Any) -> float:
    return float("nan") if x is None else float(x)


def evaluate(rep: Any, ours: dict[str, float]) -> list[dict[str, Any]]:
    """Each criterion's verdict on our values (`rep`, a `tlblab.reproduce.Reproduction`): id, kind,
    says, holds, detail, explanation."""
    seed = {r["key"]: r.get("seed") for r in rep.rows}
    xs = {r["key"]: r.get("x") for r in rep.rows}
    out = []
    for c in rep.criteria:
        kind = c["kind"]
        holds, detail = False, ""
        try:
            if kind == "within":
                bad = []
                for k in c["rows"]:
                    tol = c.get("abs_tol", 0) + c.get("rel_tol", 0) * abs(seed[k])
                    if not abs(ours[k] - seed[k]) <= tol:
                        bad.append(f"{k}: ours {ours[k]:g}, seed {seed[k]:g} (tolerance {tol:g})")
                holds, detail = not bad, "; ".join(bad) or f"all {len(c['rows'])} rows within tolerance"
            elif kind == "factor":
                f = c["factor"]
                bad = []
                for k in c["rows"]:
                    if not _within_factor(ours[k], seed[k], f):
                        bad.append(f"{k}: ours {ours[k]:g}, seed {seed[k]:g} ({_factor_text(ours[k], seed[k])})")
                holds = not bad
                detail = ("; ".join(bad) + f" (allowed: within a factor {f:g} either way)") if bad else \
                    f"all {len(c['rows'])} rows within a factor {f:g} of the seed's"
            elif kind == "equal":
                bad = [f"{k}: ours {ours[k]:g}, seed {seed[k]:g}" for k in c["rows"] if ours[k] != seed[k]]
                holds, detail = not bad, "; ".join(bad) or f"all {len(c['rows'])} rows equal"
            elif kind == "range":
                lo, hi = c.get("min", -math.inf), c.get("max", math.inf)
                bad = [f"{k}: {ours[k]:g}" for k in c["rows"] if not lo <= ours[k] <= hi]
                holds, detail = not bad, (f"outside [{lo:g}, {hi:g}]: " + "; ".join(bad)) if bad else f"all within [{lo:g}, {hi:g}]"
            elif kind == "order":
                vals = [ours[k] for k in c["rows"]]
                holds, short = _ordered(vals, c)
                detail = ", ".join(f"{k}={v:g}" for k, v in zip(c["rows"], vals)) + short
            elif kind == "ratio":
                lo, hi = c.get("min", -math.inf), c.get("max", math.inf)
                signs = c.get("signs", "positive")
                pairs = ratio_pairs(c)
                wrong = [w for n, d in pairs if (w := _wrong_sign(n, ours[n], d, ours[d], signs))]
                rs = [(n, d, ours[n] / ours[d]) for n, d in pairs if ours[d] != 0]
                holds = not wrong and len(rs) == len(pairs) and all(lo <= r <= hi for _, _, r in rs)
                detail = ("; ".join((f"{n} ÷ {d} = " if len(rs) > 1 else "ratio ") + f"{r:.4g}" for n, d, r in rs)
                          or "no ratio") + f", expected [{lo:g}, {hi:g}]" + "".join(f"; {w}" for w in wrong)
            elif kind == "seed_ratio":
                f = c["factor"]
                parts, holds = [], True
                for n, d in ratio_pairs(c):
                    # Each operand has its seed value's sign: a ratio of two losses is not the
                    # seed's ratio of two gains, whatever its value.
                    wrong = [f"{k} is {ours[k]:g}, the seed's {seed[k]:g}" for k in (n, d)
                             if _sign(ours[k]) != _sign(seed[k])]
                    r, s = ours[n] / ours[d], seed[n] / seed[d]
                    ok = not wrong and s != 0 and r / s > 0 and 1 / f <= r / s <= f
                    holds = holds and ok
                    parts.append((f"{n} ÷ {d}: " if isinstance(c["num"], list) else "") +
                                 f"ours {r:.4g}, seed {s:.4g}, within a factor {f:g}: {ok}" +
                                 (f" (not the seed's signs: {', '.join(wrong)})" if wrong else ""))
                detail = "; ".join(parts)
            elif kind == "same_sign":
                bad = [f"{k}: ours {ours[k]:g}, seed {seed[k]:g}" for k in c["rows"] if _sign(ours[k]) != _sign(seed[k])]
                holds, detail = not bad, "; ".join(bad) or "every sign as the seed's"
            elif kind == "crossover":
                t = c.get("threshold", 0.0)
                pts = [(_num(xs[k]), ours[k]) for k in c["rows"]]
                cross = None
                for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
                    a, b = y0 - t, y1 - t
                    if a * b < 0 or (b == 0 and a != 0):
                        cross = x0 + (t - y0) * (x1 - x0) / (y1 - y0)
                        break
                lo, hi = c.get("min_x", -math.inf), c.get("max_x", math.inf)
                holds = cross is not None and lo <= cross <= hi
                detail = (f"crosses {t:g} at x = {cross:.4g}" if cross is not None else f"never crosses {t:g}") + f", expected [{lo:g}, {hi:g}]"
        except KeyError as e:
            holds, detail = False, f"the experiment returned no value for row {e}"
        except ZeroDivisionError:
            holds, detail = False, "division by zero"
        shown = not holds and c.get("explanation")
        moved = [f"it quotes {k}, which this run has no value for"
                 for k in explanations.missing(c["explanation"], ours)] if shown else []
        moved += explanations.stale(c.get("ours_when_written"), ours) if shown else []
        out.append({"criterion": c["id"], "role": c.get("role", ""), "kind": kind, "says": c.get("says", ""),
                    "holds": bool(holds), "detail": detail,
                    "explanation": explanations.render(c["explanation"], ours, seed) if shown else "",
                    # The explanation's prose quotes values of another run: say so beside it.
                    "stale": ("written for another run: " + "; ".join(moved)) if moved else "",
                    "because": c.get("because", "")})
    return out


def _sign(v: float) -> int:
    return (v > 0) - (v < 0)


def _wrong_sign(n: str, num: float, d: str, den: float, signs: str) -> str:
    """Why a `ratio`'s operands are not of the criterion's `signs` (SIGNS), or ""."""
    want = 1 if signs == "positive" else -1
    if _sign(den) != want:
        return f"{d} is {den:g}: a {signs} denominator expected"
    if _sign(num) == -want:
        return f"{n} is {num:g}: a {signs} numerator (or 0) expected"
    return ""


def _within_factor(ours: float, seed: float, f: float) -> bool:
    """`seed/f <= ours <= f*seed`, on magnitudes of the same sign: a zero or an opposite sign is
    infinitely far (the loader refuses a zero seed value)."""
    if seed == 0 or ours == 0 or (ours > 0) != (seed > 0):
        return False
    r = abs(ours) / abs(seed)
    return 1 / f <= r <= f


def _factor_text(ours: float, seed: float) -> str:
    if ours == 0 or (ours > 0) != (seed > 0):
        return "zero or the opposite sign" if ours == 0 else "the opposite sign"
    r = abs(ours) / abs(seed)
    return f"{r:.3g}x the seed's" if r >= 1 else f"1/{1 / r:.3g} of the seed's"


def _ordered(vals: list[float], c: dict[str, Any]) -> tuple[bool, str]:
    """Whether `vals` run in the criterion's direction, each step at least its minimum: `min_step`
    (in the rows' unit) and `min_rel_step` (a share of the smaller magnitude of the two).
    Returns the verdict and, when it fails on a step, which step fell short."""
    inc = c.get("direction", "increasing") == "increasing"
    strict = c.get("strict", False)
    for i, (a, b) in enumerate(zip(vals, vals[1:])):
        step = (b - a) if inc else (a - b)
        need = max(c.get("min_step", 0.0), c.get("min_rel_step", 0.0) * min(abs(a), abs(b)))
        ok = step > 0 and step >= need if strict else step >= 0 and step >= need
        if not ok:
            rows = c["rows"]
            return False, f" (step {rows[i]} -> {rows[i + 1]}: {step:+.4g}, needed {'>' if strict else '>='} " \
                          f"{need:.4g})"
    return True, ""


