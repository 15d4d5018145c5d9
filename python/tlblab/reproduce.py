"""The reproduction harness: each seed table or figure tlblab reproduces, held against the seed.

A reproduction is a data file, `python/tlblab/reproductions/<seed>/<id>.toml` (schema and
criterion kinds: `docs/reproductions.md`): the seed's numbers with their table and section, the
preset and workloads that stand in for the seed's setup, and the shape criteria written before
the first run. Its experiment (`tlblab.experiments.seed<NNN>.<id>`) runs tlblab and returns our
value for every row. This module loads the files, runs the experiments, evaluates the
criteria and writes the results.

    >>> import tlblab.reproduce as rp
    >>> res = rp.run("003/fig6_2")          # or rp.run("003"), rp.run() for every one
    >>> res[0].rows                          # DataFrame: key, quantity, seed, ours, error, ...
    >>> res[0].verdicts                      # DataFrame: criterion, holds, detail, explanation
"""

from __future__ import annotations

import csv
import importlib
import math
import os
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tlblab.errors import UserError

DATA = Path(__file__).parent / "reproductions"

KINDS = {
    "within": ("rows",),
    "range": ("rows",),
    "order": ("rows",),
    "ratio": ("num", "den"),
    "seed_ratio": ("num", "den", "factor"),
    "same_sign": ("rows",),
    "crossover": ("rows",),
    "equal": ("rows",),
}


@dataclass
class Reproduction:
    """One reproduction file, checked on load (a malformed file names its field)."""

    path: Path
    seed: str
    id: str
    title: str
    source: str
    machine: str
    setup: str
    experiment: str
    rows: list[dict[str, Any]]
    criteria: list[dict[str, Any]]

    @property
    def name(self) -> str:
        return f"{self.seed}/{self.id}"


@dataclass
class Outcome:
    """What running one reproduction gave."""

    reproduction: Reproduction
    ours: dict[str, float]
    seconds: float
    row_records: list[dict[str, Any]] = field(default_factory=list)
    verdict_records: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""

    @property
    def holds(self) -> bool:
        return not self.error and all(v["holds"] for v in self.verdict_records)

    @property
    def rows(self):
        import pandas as pd

        return pd.DataFrame(self.row_records)

    @property
    def verdicts(self):
        import pandas as pd

        return pd.DataFrame(self.verdict_records)


def _fail(path: Path, msg: str) -> UserError:
    return UserError(f"{path}: {msg}")


def load_file(path: Path) -> Reproduction:
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise _fail(path, f"not valid TOML: {e}") from None
    for k in ("seed", "id", "title", "source", "machine", "setup", "experiment"):
        if not isinstance(data.get(k), str) or not data[k]:
            raise _fail(path, f"'{k}': expected a non-empty string, found {data.get(k)!r}")
    if data["id"] != path.stem:
        raise _fail(path, f"'id' is '{data['id']}' but the file is named {path.name}")
    rows = data.get("rows") or []
    if not rows:
        raise _fail(path, "expected at least one [[rows]] entry")
    keys = set()
    for i, r in enumerate(rows):
        if not isinstance(r.get("key"), str):
            raise _fail(path, f"rows[{i}].key: expected a string")
        if r["key"] in keys:
            raise _fail(path, f"rows[{i}].key: '{r['key']}' appears twice")
        keys.add(r["key"])
        if "seed" in r and not isinstance(r["seed"], (int, float)):
            raise _fail(path, f"rows[{i}] ({r['key']}).seed: expected a number, found {r['seed']!r}")
        if not isinstance(r.get("quantity"), str):
            raise _fail(path, f"rows[{i}] ({r['key']}).quantity: expected a string")
    crit = data.get("criteria") or []
    if not crit:
        raise _fail(path, "expected at least one [[criteria]] entry: a reproduction decides something")
    ids = set()
    for i, c in enumerate(crit):
        where = f"criteria[{i}] ({c.get('id', '?')})"
        if not isinstance(c.get("id"), str) or c["id"] in ids:
            raise _fail(path, f"{where}.id: expected a unique string")
        ids.add(c["id"])
        if c.get("kind") not in KINDS:
            raise _fail(path, f"{where}.kind: expected one of {', '.join(KINDS)}, found {c.get('kind')!r}")
        for need in KINDS[c["kind"]]:
            if need not in c:
                raise _fail(path, f"{where}: kind '{c['kind']}' needs '{need}'")
        named = list(c.get("rows", [])) + [c[k] for k in ("num", "den") if k in c]
        for k in named:
            if k not in keys:
                raise _fail(path, f"{where}: row '{k}' is not a key of [[rows]]")
        if c["kind"] in ("within", "seed_ratio", "same_sign", "equal"):
            for k in named:
                if "seed" not in next(r for r in rows if r["key"] == k):
                    raise _fail(path, f"{where}: kind '{c['kind']}' compares with the seed, but row '{k}' has no seed value")
    return Reproduction(path=path, seed=data["seed"], id=data["id"], title=data["title"],
                        source=data["source"], machine=data["machine"], setup=data["setup"],
                        experiment=data["experiment"], rows=rows, criteria=crit)


def catalog() -> list[Reproduction]:
    """Every reproduction, by seed and id."""
    return [load_file(p) for p in sorted(DATA.glob("*/*.toml"))]


def select(which: str | None = None) -> list[Reproduction]:
    """`None` (all), `SEED` or `SEED/ID`."""
    every = catalog()
    if not which:
        return every
    seed, _, rid = which.partition("/")
    chosen = [r for r in every if r.seed == seed and (not rid or r.id == rid)]
    if not chosen:
        names = ", ".join(r.name for r in every) or "none"
        raise UserError(f"no reproduction '{which}': expected SEED or SEED/ID, one of {names}")
    return chosen


def _experiment(rep: Reproduction):
    mod, _, fn = rep.experiment.partition(":")
    try:
        m = importlib.import_module(f"tlblab.experiments.{mod}")
        return getattr(m, fn)
    except (ImportError, AttributeError) as e:
        raise _fail(rep.path, f"experiment '{rep.experiment}' not found: {e}") from None


def _num(x: Any) -> float:
    return float("nan") if x is None else float(x)


def evaluate(rep: Reproduction, ours: dict[str, float]) -> list[dict[str, Any]]:
    """Each criterion's verdict on our values: id, kind, says, holds, detail, explanation."""
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
            elif kind == "equal":
                bad = [f"{k}: ours {ours[k]:g}, seed {seed[k]:g}" for k in c["rows"] if ours[k] != seed[k]]
                holds, detail = not bad, "; ".join(bad) or f"all {len(c['rows'])} rows equal"
            elif kind == "range":
                lo, hi = c.get("min", -math.inf), c.get("max", math.inf)
                bad = [f"{k}: {ours[k]:g}" for k in c["rows"] if not lo <= ours[k] <= hi]
                holds, detail = not bad, (f"outside [{lo:g}, {hi:g}]: " + "; ".join(bad)) if bad else f"all within [{lo:g}, {hi:g}]"
            elif kind == "order":
                vals = [ours[k] for k in c["rows"]]
                inc = c.get("direction", "increasing") == "increasing"
                strict = c.get("strict", False)
                pairs = list(zip(vals, vals[1:]))
                ok = [(b > a if strict else b >= a) if inc else (b < a if strict else b <= a) for a, b in pairs]
                holds = all(ok)
                detail = ", ".join(f"{k}={v:g}" for k, v in zip(c["rows"], vals))
            elif kind == "ratio":
                r = ours[c["num"]] / ours[c["den"]]
                lo, hi = c.get("min", -math.inf), c.get("max", math.inf)
                holds, detail = lo <= r <= hi, f"ratio {r:.4g}, expected [{lo:g}, {hi:g}]"
            elif kind == "seed_ratio":
                r = ours[c["num"]] / ours[c["den"]]
                s = seed[c["num"]] / seed[c["den"]]
                f = c["factor"]
                holds = s != 0 and r / s > 0 and 1 / f <= r / s <= f
                detail = f"ours {r:.4g}, seed {s:.4g}, within a factor {f:g}: {holds}"
            elif kind == "same_sign":
                sign = lambda v: (v > 0) - (v < 0)  # noqa: E731
                bad = [f"{k}: ours {ours[k]:g}, seed {seed[k]:g}" for k in c["rows"] if sign(ours[k]) != sign(seed[k])]
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
        out.append({"criterion": c["id"], "kind": kind, "says": c.get("says", ""), "holds": bool(holds),
                    "detail": detail, "explanation": c.get("explanation", "") if not holds else ""})
    return out


def run_one(rep: Reproduction, quick: bool = False) -> Outcome:
    fn = _experiment(rep)
    t0 = time.monotonic()
    try:
        ours = {k: float(v) for k, v in fn(quick).items()}
    except (ValueError, RuntimeError) as e:
        return Outcome(rep, {}, time.monotonic() - t0, error=f"the experiment failed: {e}")
    dt = time.monotonic() - t0
    o = Outcome(rep, ours, dt)
    listed = set()
    for r in rep.rows:
        k = r["key"]
        listed.add(k)
        s, v = r.get("seed"), ours.get(k)
        err = (v - s) if (s is not None and v is not None) else None
        rel = (err / abs(s)) if (err is not None and s) else None
        o.row_records.append({"key": k, "quantity": r["quantity"], "unit": r.get("unit", ""),
                              "series": r.get("series", ""), "x": r.get("x"), "seed": s, "ours": v,
                              "error": err, "rel_error": rel, "note": r.get("note", "")})
    for k in sorted(set(ours) - listed):
        o.row_records.append({"key": k, "quantity": "(ours only)", "unit": "", "series": "", "x": None,
                              "seed": None, "ours": ours[k], "error": None, "rel_error": None, "note": ""})
    o.verdict_records = evaluate(rep, ours)
    return o


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    """Atomically, with the umask's mode: an interrupted run leaves no partial file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fields: list[str] = []
    for r in rows:
        for k in r:
            if k not in fields:
                fields.append(k)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            w.writerows(rows)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write(outcomes: list[Outcome], out: Path) -> None:
    """`<seed>/<id>.csv`, `<seed>/<id>.verdicts.csv` and `summary.csv` under `out`."""
    summary = []
    for o in outcomes:
        rep = o.reproduction
        _write_csv(out / rep.seed / f"{rep.id}.csv", o.row_records)
        _write_csv(out / rep.seed / f"{rep.id}.verdicts.csv", o.verdict_records)
        summary.append({"reproduction": rep.name, "title": rep.title, "source": rep.source,
                        "machine": rep.machine, "criteria": len(o.verdict_records),
                        "hold": sum(v["holds"] for v in o.verdict_records),
                        "verdict": "error" if o.error else ("holds" if o.holds else "does not hold"),
                        "error": o.error, "seconds": round(o.seconds, 2)})
    _write_csv(out / "summary.csv", summary)


def run(which: str | None = None, quick: bool = False, out: str | Path | None = None,
        progress=None) -> list[Outcome]:
    """Runs the reproductions `which` selects (`None`, `SEED`, `SEED/ID`); writes them under
    `out` when given. `progress(i, n, name)` is called before each."""
    reps = select(which)
    outcomes = []
    for i, rep in enumerate(reps):
        if progress:
            progress(i, len(reps), rep.name)
        outcomes.append(run_one(rep, quick))
    if out is not None:
        write(outcomes, Path(out))
    return outcomes
