"""The reproduction harness: each seed table or figure tlblab reproduces, held against the seed.

A reproduction is a data file, `python/tlblab/seeds/s<NNN>_*/reproductions/<id>.toml` (schema and
criterion kinds: `docs/reproductions.md`): the seed's numbers with their table and section, the
preset and workloads that stand in for the seed's setup, and the shape criteria written before
the first run. Its experiment (`experiment = "seed<NNN>:<function>"`, a function of the seed folder's
`experiments.py`) runs tlblab and returns our
value for every row. This module loads the files, runs the experiments, evaluates the
criteria and writes the results.

    >>> import tlblab.reproduce as rp
    >>> res = rp.run("003/fig6_2")          # or rp.run("003"), rp.run() for every one
    >>> res[0].rows                          # DataFrame: key, quantity, seed, ours, error, ...
    >>> res[0].verdicts                      # DataFrame: criterion, holds, detail, explanation
"""

from __future__ import annotations

import importlib
import math
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from tlblab import explanations, phases, reproduce_pool, reproduce_units, seeds
from tlblab.errors import UserError
from tlblab.files import atomic_write, csv_text
# The criteria's arithmetic, kept beside this module (its callers name them as `tlblab.reproduce`'s).
from tlblab.reproduce_verdicts import criterion_rows, evaluate, ratio_pairs  # noqa: F401

# The seed folders (tlblab.seeds); the reproduction files are DATA/sNNN_*/reproductions/*.toml.
DATA = seeds.ROOT

KINDS = {
    "within": ("rows",),
    "factor": ("rows", "factor"),
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
    revisions: list[dict[str, Any]] = field(default_factory=list)
    #: Another reproduction of the same seed that tests the same claims at the seed's scale: this
    #: one's criteria are shown but not counted (one count per claim).
    counted_in: str = ""

    @property
    def name(self) -> str:
        return f"{self.seed}/{self.id}"

    def fitted_keys(self) -> set[str]:
        """The rows calibrated from a seed number (their `fitted` says what and from where), and the
        rows whose value rests on a constant fitted to this table's rows (`rests_on`): neither is
        evidence about the model when held against this table."""
        return {r["key"] for r in self.rows if r.get("fitted") or r.get("rests_on")}

    def predicted_keys(self) -> set[str]:
        """The rows a prediction looks at, less the fitted ones: where the worst error is read."""
        keys: set[str] = set()
        for c in self.criteria:
            if c["role"] == "prediction":
                keys |= set(criterion_rows(c))
        return keys - self.fitted_keys()


@dataclass
class Outcome:
    """What running one reproduction gave."""

    reproduction: Reproduction
    ours: dict[str, float]
    seconds: float
    row_records: list[dict[str, Any]] = field(default_factory=list)
    verdict_records: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""
    #: Where its seconds went (`tlblab.phases`): wall and cpu, and per phase; empty when not measured.
    timing: dict[str, Any] = field(default_factory=dict)
    #: Its place in the list `run_all` ran (the scheduler's merge puts it back there).
    reproduction_index: int = -1

    @property
    def holds(self) -> bool:
        return not self.error and all(v["holds"] for v in self.verdict_records)

    def held(self, role: str) -> tuple[int, int]:
        """(criteria of that role that hold, criteria of that role)."""
        vs = [v for v in self.verdict_records if v["role"] == role]
        return sum(bool(v["holds"]) for v in vs), len(vs)

    def worst_predicted(self) -> tuple[str, float] | None:
        """The predicted row (read by a prediction, not fitted, with a non-zero seed value) whose
        relative error is the largest in magnitude, and that error; None when there is none."""
        keys = self.reproduction.predicted_keys()
        errs = [(r["key"], r["rel_error"]) for r in self.row_records
                if r["key"] in keys and r["rel_error"] is not None and math.isfinite(r["rel_error"])]
        return max(errs, key=lambda e: abs(e[1])) if errs else None

    @property
    def rows(self):
        import pandas as pd

        return pd.DataFrame(self.row_records)

    @property
    def verdicts(self):
        import pandas as pd

        return pd.DataFrame(self.verdict_records)


# prediction: a claim of the seed's that can fail on what the model does (the evidence);
# consistency: holds by construction or reads only fitted rows (no evidence either way);
# ours: a claim of tlblab's own, not the seed's (the tool against the model, a held-out check),
# counted apart from the seed's predictions.
ROLES = ("prediction", "consistency", "ours")

# What a `ratio` criterion's operands must be (`signs`, default "positive"): "A exceeds B" on two
# decreases of -149 and -21 is not what the words say, though -149 / -21 > 1. Positive: every
# denominator above 0, every numerator 0 or above (a zero numerator is a ratio of 0, judged by the
# bounds). Negative: every denominator below 0, every numerator 0 or below (two losses compared).
SIGNS = ("positive", "negative")


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
    if path.parent.name == "reproductions" and data["seed"] != seeds.number_of(path):
        raise _fail(path, f"'seed' is '{data['seed']}' but the file is in seed {seeds.number_of(path)}'s folder "
                    f"({path.parent.parent.name})")
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
        if "signs" in c and (c["kind"] != "ratio" or c["signs"] not in SIGNS):
            raise _fail(path, f"{where}.signs: expected one of {', '.join(SIGNS)} on a 'ratio' criterion, found "
                              f"{c['signs']!r} on kind '{c['kind']}' (a seed_ratio's operands take their seed "
                              "values' signs)")
        for k in ("num", "den"):
            v = c.get(k)
            if v is not None and not (isinstance(v, str) or (isinstance(v, list) and v and
                                                             all(isinstance(x, str) for x in v))):
                raise _fail(path, f"{where}.{k}: expected a row key or a list of row keys, found {v!r}")
        if "num" in c and isinstance(c["num"], list) != isinstance(c["den"], list) or \
                isinstance(c.get("num"), list) and len(c["num"]) != len(c["den"]):
            raise _fail(path, f"{where}: 'num' and 'den' are one key each or lists of one length")
        named = criterion_rows(c)
        for k in named:
            if k not in keys:
                raise _fail(path, f"{where}: row '{k}' is not a key of [[rows]]")
        by_key = {r["key"]: r for r in rows}
        if c["kind"] in ("within", "factor", "seed_ratio", "same_sign", "equal"):
            for k in named:
                if "seed" not in by_key[k]:
                    raise _fail(path, f"{where}: kind '{c['kind']}' compares with the seed, but row '{k}' has no seed value")
        if c["kind"] == "factor":
            if not isinstance(c["factor"], (int, float)) or not c["factor"] > 1:
                raise _fail(path, f"{where}.factor: expected a number above 1, found {c['factor']!r}")
            for k in named:
                if by_key[k]["seed"] == 0:
                    raise _fail(path, f"{where}: kind 'factor' needs a non-zero seed value, but row '{k}' has 0 "
                                      "(a factor of zero is zero: use 'range' or 'within' with abs_tol)")
        role = c.get("role")
        if role not in ROLES:
            raise _fail(path, f"{where}.role: expected one of {', '.join(ROLES)}, found {role!r} "
                              "(a prediction can fail on what the model does; a consistency check holds by "
                              "construction or reads only fitted rows)")
        if role in ("consistency", "ours") and not (isinstance(c.get("because"), str) and c["because"]):
            raise _fail(path, f"{where}.because: a {'consistency check' if role == 'consistency' else 'claim of ours'} "
                              "says why it is not the seed's prediction")
        if role == "prediction" and named and all(by_key[k].get("fitted") for k in named):
            raise _fail(path, f"{where}: every row it reads is fitted ({', '.join(named)}), so it holds by "
                              "calibration: role must be 'consistency'")
        resting = [k for k in named if by_key[k].get("rests_on")]
        if role == "prediction" and resting:
            raise _fail(path, f"{where}: row '{resting[0]}' rests on a constant fitted to this table "
                              f"({by_key[resting[0]]['rests_on']}), so holding it against the table predicts "
                              "nothing: role must be 'consistency'")
        if c["kind"] == "order" and role == "prediction":
            if not c.get("strict") or not (c.get("min_step", 0) > 0 or c.get("min_rel_step", 0) > 0):
                raise _fail(path, f"{where}: an order that predicts a rise or a fall is strict with a stated "
                                  "minimum step ('strict = true' and 'min_step' or 'min_rel_step' above 0)")
        err = explanations.check(c.get("explanation") or "", {r["key"] for r in rows if "seed" in r})
        if err is not None:
            raise _fail(path, f"{where}.explanation: {err}")
        if "ours_when_written" in c:
            err = explanations.check_stamp(c["ours_when_written"])
            if err is not None:
                raise _fail(path, f"{where}.ours_when_written: {err}")
    for r in rows:
        if "fitted" in r and not (isinstance(r["fitted"], str) and r["fitted"]):
            raise _fail(path, f"rows ({r['key']}).fitted: expected what was fitted and from which table, "
                              f"found {r['fitted']!r}")
        if "rests_on" in r and not (isinstance(r["rests_on"], str) and r["rests_on"]):
            raise _fail(path, f"rows ({r['key']}).rests_on: expected the constant this row's value rests on and "
                              f"the rows it was fitted to, found {r['rests_on']!r}")
    counted_in = data.get("counted_in", "")
    if counted_in:
        if not isinstance(counted_in, str) or not (path.parent / f"{counted_in}.toml").is_file() \
                or counted_in == data["id"]:
            raise _fail(path, f"'counted_in': expected the id of another reproduction of this seed that tests the "
                              f"same claims, found {counted_in!r}")
    revisions = data.get("revisions") or []
    for i, rv in enumerate(revisions):
        where = f"revisions[{i}]"
        for k in ("date", "criterion", "why"):
            if not isinstance(rv.get(k), str) or not rv[k]:
                raise _fail(path, f"{where}.{k}: expected a non-empty string, found {rv.get(k)!r}")
        if not isinstance(rv.get("before"), dict):
            raise _fail(path, f"{where}.before: expected the criterion as it was ([revisions.before])")
        if not isinstance(rv.get("after"), dict) and not rv.get("removed"):
            raise _fail(path, f"{where}.after: expected the criterion as it is now ([revisions.after]), "
                              "or 'removed = true'")
    return Reproduction(path=path, seed=data["seed"], id=data["id"], title=data["title"],
                        source=data["source"], machine=data["machine"], setup=data["setup"],
                        experiment=data["experiment"], rows=rows, criteria=crit, revisions=revisions,
                        counted_in=counted_in)


# A finding (a seed folder's findings.toml, [[findings]]): where the model does what the seed
# describes and still disagrees, or where the seed's own numbers disagree with each other.
FINDING_FIELDS = ("id", "source", "seed_says", "tlblab_shows")


def load_findings(path: Path) -> list[dict[str, Any]]:
    """The `[[findings]]` of `path` (none when there is no such file), each checked: `id`, `source`
    (section, table), `seed_says` (the seed's exact words and numbers), `tlblab_shows`, and
    optionally `arithmetic` (where the seed contradicts itself) and `reproduction` (SEED/ID)."""
    if not path.is_file():
        return []
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise _fail(path, f"not valid TOML: {e}") from None
    out, ids = [], set()
    for i, f in enumerate(data.get("findings") or []):
        for k in FINDING_FIELDS:
            if not isinstance(f.get(k), str) or not f[k].strip():
                raise _fail(path, f"findings[{i}].{k}: expected a non-empty string, found {f.get(k)!r}")
        for k in ("arithmetic", "reproduction"):
            if k in f and not isinstance(f[k], str):
                raise _fail(path, f"findings[{i}].{k}: expected a string, found {f[k]!r}")
        if f["id"] in ids:
            raise _fail(path, f"findings[{i}].id: '{f['id']}' appears twice")
        ids.add(f["id"])
        out.append({"id": f["id"], "source": f["source"], "seed_says": f["seed_says"],
                    "tlblab_shows": f["tlblab_shows"], "arithmetic": f.get("arithmetic", ""),
                    "reproduction": f.get("reproduction", "")})
    return out


def catalog() -> list[Reproduction]:
    """Every reproduction, by seed and id."""
    return [load_file(p) for p in seeds.reproduction_files(DATA)]


def select(which: str | list[str] | None = None) -> list[Reproduction]:
    """`None` (all), `SEED` or `SEED/ID`, or a list of them: their union, in the catalog's order."""
    every = catalog()
    if which is None:
        return every
    if not isinstance(which, str):
        chosen = {r.name for name in which for r in select(name)}
        return [r for r in every if r.name in chosen]
    if not which.strip():
        # An empty name (`reproduce ''`, a shell variable that was not set) once ran everything.
        raise UserError("no reproduction '': expected SEED or SEED/ID (or no argument for every reproduction)")
    seed, _, rid = which.partition("/")
    chosen = [r for r in every if r.seed == seed and (not rid or r.id == rid)]
    if not chosen:
        names = ", ".join(r.name for r in every) or "none"
        raise UserError(f"no reproduction '{which}': expected SEED or SEED/ID, one of {names}")
    return chosen


def _named(rep: Reproduction) -> tuple[Any, str, str]:
    """What `rep.experiment` ("seedNNN:FUNCTION") names: the seed (None when no seed folder
    has that number), the module part and the function's name."""
    mod, _, fn = rep.experiment.partition(":")
    return (seeds.get(mod.removeprefix("seed")) if mod.startswith("seed") else None), mod, fn


def _experiment(rep: Reproduction):
    seed, mod, fn = _named(rep)
    if seed is None:
        raise _fail(rep.path, f"experiment '{rep.experiment}': expected seedNNN:FUNCTION naming a seed folder "
                    f"(python/tlblab/seeds/sNNN_*), found '{mod}'")
    try:
        # "seedNNN:MODULE.FUNCTION": a function of another module of the seed's folder (seed
        # 001's power.py); "seedNNN:FUNCTION": one of its experiments.py.
        module, _, name = fn.rpartition(".")
        if module:
            return getattr(importlib.import_module(f"{seed.package}.{module}"), name)
        return getattr(seed.experiments(), fn)
    except (ImportError, AttributeError) as e:
        raise _fail(rep.path, f"experiment '{rep.experiment}' not found: {e}") from None


def run_one(rep: Reproduction, quick: bool = False) -> Outcome:
    """Runs `rep`'s experiment and evaluates its criteria; its `timing` says where the seconds
    went (`tlblab.phases`: capture, generation, simulation, analysis, Python; wall and CPU)."""
    fn = _experiment(rep)
    t0 = time.monotonic()
    with phases.measure() as ledger:
        try:
            ours = {k: float(v) for k, v in fn(quick).items()}
        except (ValueError, RuntimeError) as e:
            o = Outcome(rep, {}, time.monotonic() - t0, error=f"the experiment failed: {e}")
            ours = None
    if ours is not None:
        o = outcome(rep, ours, time.monotonic() - t0)
    o.timing = reproduce_units.timing(ledger)
    return o


def verdict_lines(which: list[str], tag: dict[str, Any], quick: bool = False,
                  values: bool = False) -> list[dict[str, Any]]:
    """Every criterion's verdict of the reproductions `which` (`select`), run one after the other in
    this process: {**tag, reproduction (SEED/ID), criterion, holds, detail}, a reproduction's error as a
    criterion "(error)", and with `values` each reproduction's values last as a criterion "(ours)"
    (`ours`). For the side experiments that run a seed's reproductions under another setting
    (scripts/slots_sensitivity.py, scripts/virt_placement_bound.py)."""
    out: list[dict[str, Any]] = []
    for rep in select(list(which)):
        o = run_one(rep, quick=quick)
        name = f"{rep.seed}/{rep.id}"
        if o.error:
            out.append({**tag, "reproduction": name, "criterion": "(error)", "holds": False, "detail": o.error})
        for v in o.verdict_records:
            out.append({**tag, "reproduction": name, "criterion": v["criterion"], "holds": bool(v["holds"]),
                        "detail": v["detail"]})
        if values:
            out.append({**tag, "reproduction": name, "criterion": "(ours)", "holds": True,
                        "detail": "the reproduction's values", "ours": o.ours})
    return out


def run_guarded(rep: Reproduction, quick: bool = False) -> Outcome:
    """`run_one`, with any failure of the experiment (bad input, a bug: an exception of any kind
    but an interruption) its Outcome's error, named, instead of stopping the other reproductions
    (the study's way: they land one by one, and one that breaks must not hide the others)."""
    t0 = time.monotonic()
    try:
        return run_one(rep, quick)
    except UserError as e:
        return Outcome(rep, {}, time.monotonic() - t0, error=str(e))
    except Exception as e:  # noqa: BLE001 - named in the outcome, see above
        return Outcome(rep, {}, time.monotonic() - t0, error=f"the experiment raised {type(e).__name__}: {e}")


def outcome(rep: Reproduction, ours: dict[str, float], seconds: float, error: str = "") -> Outcome:
    """`rep`'s rows and verdicts on the values `ours` (a run's, or a recorded run's: tlblab.records)."""
    o = Outcome(rep, ours, seconds, error=error)
    if error:
        return o
    listed = set()
    for r in rep.rows:
        k = r["key"]
        listed.add(k)
        s, v = r.get("seed"), ours.get(k)
        err = (v - s) if (s is not None and v is not None) else None
        rel = (err / abs(s)) if (err is not None and s) else None
        o.row_records.append({"key": k, "quantity": r["quantity"], "unit": r.get("unit", ""),
                              "series": r.get("series", ""), "x": r.get("x"), "seed": s, "ours": v,
                              "error": err, "rel_error": rel, "fitted": r.get("fitted") or
                              (f"rests on {r['rests_on']}" if r.get("rests_on") else ""),
                              "note": r.get("note", "")})
    for k in sorted(set(ours) - listed):
        o.row_records.append({"key": k, "quantity": "(ours only)", "unit": "", "series": "", "x": None,
                              "seed": None, "ours": ours[k], "error": None, "rel_error": None, "fitted": "",
                              "note": ""})
    o.verdict_records = evaluate(rep, ours)
    return o


def prepare(reps: list[Reproduction], quick: bool = False,
            on_prepare: Callable[[str, int], None] | None = None,
            on_prepared: Callable[[dict[str, Any]], None] | None = None,
            on_run: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Lets each seed whose experiments module has `prepare(quick, experiment names)` make the
    runs its reproductions among `reps` share, all at once (seed 001: its window runs, in
    worker processes, longest first), before they run. `on_prepare(seed, n)` before each seed's
    (`n` of its reproductions), `on_prepared(record)` after it, `on_run(line)` as each run
    of it is made (where the seed says so). Returns the records of what each
    did: `seed`, `runs`, `seconds`. The reproductions then read those runs; their own `seconds`
    leave them out."""
    done = []
    for module, (seed, fns) in reproduce_units.prepare_modules(reps).items():
        if not hasattr(module, "prepare"):
            continue
        if on_prepare:
            on_prepare(seed, len(fns))
        try:
            with phases.measure() as ledger:
                did = module.prepare(quick, fns, progress=on_run)
        except (ValueError, RuntimeError):
            continue  # the reproduction that makes the failing run reports it (run_one)
        done.append({"seed": seed, "runs": int(did["runs"]), "seconds": round(float(did["seconds"]), 2),
                     "timing": reproduce_units.timing(ledger)})
        if on_prepared:
            on_prepared(done[-1])
    return done


def run_all(reps: list[Reproduction], quick: bool = False, *, jobs: int = 1, guarded: bool = False,
            on_start: Callable[[int, Reproduction], None] | None = None,
            on_done: Callable[[Outcome], None] | None = None,
            on_prepare: Callable[[str, int], None] | None = None,
            on_prepared: Callable[[dict[str, Any]], None] | None = None,
            on_run: Callable[[str], None] | None = None,
            on_seed: Callable[[dict[str, Any]], None] | None = None,
            seed_seconds: dict[str, float] | None = None) -> list[Outcome]:
    """Runs `reps` (`run_one`; `run_guarded` with `guarded`), each seed's after the runs they share
    (`prepare`, whose callbacks `on_prepare`, `on_prepared` and `on_run` are), `on_start(i, rep)`
    before the i-th (from 0), `on_done(outcome)` after each and `on_seed(record)` after each seed
    (`seed`, `reproductions`, `wall`, `cpu`, `prepared`), for a caller that shows progress.

    With one job the seeds run here in the reproductions' order, each seed's prepare and then its
    reproductions in turn (seed 001's prepare on a pool of its own). With more, the units are
    finer than a seed (`tlblab.reproduce_units`: a seed's groups of reproductions that share a
    process's caches, and the runs a seed prepares, each a unit) on `jobs` processes
    (`tlblab.reproduce_pool`), longest first by `seed_seconds` (the CPU seconds of each seed and
    reproduction last time, `reproduce_timings.last_seconds`; SEED_SECONDS when not given). The
    outcomes come back in `reps`' order whatever the order the units finish in: every file
    written from them is the same for any `jobs`. With jobs > 1 the callbacks come as the
    processes reach them, the seeds' interleaved; `on_done` of a group's reproductions when the
    group is done."""
    known = seed_seconds or SEED_SECONDS
    done: list[dict[str, Any]] = []

    def message(m: tuple[Any, ...]) -> None:
        kind, *rest = m
        if kind == "start" and on_start:
            on_start(rest[0], reps[rest[0]])
        elif kind == "prepare" and on_prepare:
            on_prepare(*rest)
        elif kind == "prepared" and on_prepared:
            on_prepared(*rest)
        elif kind == "run" and on_run:
            on_run(*rest)
        elif kind == "done" and on_done:
            on_done(rest[0])

    def finished(unit: dict[str, Any], told: bool) -> None:
        for o in unit["outcomes"]:
            o.reproduction = reps[o.reproduction_index]  # the caller's object, not a copy
            if on_done and not told:
                on_done(o)
        done.append(unit)

    if jobs > 1:
        reproduce_units.schedule(reps, quick, guarded, jobs, _run_seed, known, SEED_SECONDS, message,
                                 on_prepare, on_prepared, on_run,
                                 lambda unit: finished(unit, unit["told"]), on_seed)
    else:
        units: dict[str, list[int]] = {}
        for i, rep in enumerate(reps):
            units.setdefault(rep.seed, []).append(i)
        # One process: each outcome is told as it is made.
        args = [([(i, reps[i]) for i in units[seed]], quick, guarded, True) for seed in units]

        def seed_done(k: int, unit: dict[str, Any]) -> None:
            finished(unit, True)
            if on_seed:
                on_seed(unit["record"])

        reproduce_pool.run_units(_run_seed, args, jobs=1, on_message=message, on_result=seed_done)
    by_index = {o.reproduction_index: o for unit in done for o in unit["outcomes"]}
    return [by_index[i] for i in range(len(reps))]


# Each seed's seconds in a full-size `tlblab reproduce` (wall, one job), the longest-first order of
# the units when no timings of a last run are at hand (`reproduce_timings`): issue 89's
# measurement on a two-core Intel host (seed 001 about 34 minutes, seed 004's Table 2 about 21 of
# its minutes). Only the order reads them.
SEED_SECONDS = {"001": 2040.0, "004": 1800.0, "003": 300.0, "002": 120.0, "000": 30.0}


def _run_seed(items: list[tuple[int, Reproduction]], quick: bool, guarded: bool,
              tell_done: bool = True, made: dict[str, dict[Any, Any]] | None = None) -> dict[str, Any]:
    """One seed's unit, or one group of its reproductions (`run_all`): its shared runs
    (`prepare`; `made`, {module name: runs}, those made on other workers, `adopt`ed first), then
    its reproductions in turn, each told to the parent (`reproduce_pool.post`) as it starts and,
    with `tell_done`, ends. Returns the outcomes (each with `reproduction_index`, its place in
    the caller's list), the seed's record and whether the outcomes were `told`."""
    from tlblab import sim

    post = reproduce_pool.post
    reps = [rep for _, rep in items]
    # The seed's runs made once each, whichever of its reproductions asks again (`sim.reusing`).
    with phases.measure() as ledger, sim.reusing():
        for module, runs in (made or {}).items():
            importlib.import_module(module).adopt(runs)
        # What was planned and made elsewhere is not told of again (its prepare finds it made).
        tell = made is None
        try:
            prepared = prepare(reps, quick, on_prepare=(lambda seed, n: post(("prepare", seed, n))) if tell else None,
                               on_prepared=(lambda did: post(("prepared", did))) if tell else None,
                               on_run=lambda line: post(("run", line)))
        except Exception:  # noqa: BLE001 - guarded: each reproduction makes its runs itself and names the failure
            if not guarded:
                raise
            prepared = []
        outcomes = []
        for i, rep in items:
            post(("start", i))
            o = run_guarded(rep, quick) if guarded else run_one(rep, quick)
            o.reproduction_index = i
            outcomes.append(o)
            if tell_done:
                post(("done", o))
    record = {"seed": reps[0].seed, "reproductions": len(reps), "wall": round(ledger.wall, 3),
              "cpu": round(ledger.cpu, 3), "prepared": prepared,
              "peak_rss_mib": phases.peak_rss_mib()}
    return {"outcomes": outcomes, "record": record, "told": tell_done}


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    """Whole or not at all (`atomic_write`), the columns in order of first appearance."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, csv_text(rows))


def worst_text(rel: float | None, name: str, row: dict[str, Any] | None) -> str:
    """`+828318% (001/seed_scale: pressure/gups, DRAM walk refs: seed 0.01, ours 82.8)`: the worst
    relative error with the row it is on and what that row holds, or ""."""
    if rel is None:
        return ""
    ctx = f"{name}: {row['key']}" if row else name
    if row:
        unit = f" {row['unit']}" if row.get("unit") else ""
        ctx += f", {row['quantity']}: seed {row['seed']:.4g}{unit}, ours {row['ours']:.4g}"
    return f"{rel:+.0%} ({ctx})"


def summary_record(o: Outcome) -> dict[str, Any]:
    """One reproduction's line of the summary: its predictions apart from its consistency checks
    and from tlblab's own claims (`ours`); `counted_in` names the reproduction that counts its
    claims when this one repeats them at a smaller size."""
    rep = o.reproduction
    p_held, p_all = o.held("prediction")
    c_held, c_all = o.held("consistency")
    u_held, u_all = o.held("ours")
    worst = o.worst_predicted()
    return {"reproduction": rep.name, "title": rep.title, "source": rep.source, "machine": rep.machine,
            "predictions": p_all, "predictions_hold": p_held, "consistency": c_all, "consistency_hold": c_held,
            "ours": u_all, "ours_hold": u_held, "counted_in": f"{rep.seed}/{rep.counted_in}" if rep.counted_in else "",
            "worst_rel_error": worst[1] if worst else None, "worst_row": worst[0] if worst else "",
            "revisions": len(rep.revisions),
            "verdict": "error" if o.error else ("holds" if o.holds else "does not hold"),
            "error": o.error, "seconds": round(o.seconds, 2)}


def seed_summary(outcomes: list[Outcome]) -> list[dict[str, Any]]:
    """Per seed: the seed's predictions that hold / all of them, one count per claim (a
    reproduction whose claims another counts, `counted_in`, is left out), consistency checks and
    tlblab's own claims apart, the worst relative error among predicted rows (with its row), and
    how many criteria were revised."""
    by_seed: dict[str, list[Outcome]] = {}
    for o in outcomes:
        by_seed.setdefault(o.reproduction.seed, []).append(o)
    out = []
    for seed in sorted(by_seed):
        outs = by_seed[seed]
        counted = [o for o in outs if not o.reproduction.counted_in]
        recs = [summary_record(o) for o in counted]
        worst = [(o, w) for o in counted if (w := o.worst_predicted())]
        w = max(worst, key=lambda e: abs(e[1][1])) if worst else None
        row = next((r for r in w[0].row_records if r["key"] == w[1][0]), None) if w else None
        out.append({"seed": seed, "reproductions": len(outs),
                    "reproductions_hold": sum(o.holds for o in outs),
                    "predictions": sum(r["predictions"] for r in recs),
                    "predictions_hold": sum(r["predictions_hold"] for r in recs),
                    "consistency": sum(r["consistency"] for r in recs),
                    "consistency_hold": sum(r["consistency_hold"] for r in recs),
                    "ours": sum(r["ours"] for r in recs), "ours_hold": sum(r["ours_hold"] for r in recs),
                    "not_counted": ", ".join(o.reproduction.name for o in outs if o.reproduction.counted_in),
                    "worst_rel_error": w[1][1] if w else None,
                    "worst_row": f"{w[0].reproduction.name}: {w[1][0]}" if w else "",
                    "worst": worst_text(w[1][1], w[0].reproduction.name, row) if w else "",
                    "revisions": sum(len(o.reproduction.revisions) for o in outs)})
    return out


def write(outcomes: list[Outcome], out: Path) -> None:
    """`<seed>/<id>.csv`, `<seed>/<id>.verdicts.csv`, `summary.csv` (one line per reproduction) and
    `seeds.csv` (one per seed) under `out`."""
    for o in outcomes:
        rep = o.reproduction
        _write_csv(out / rep.seed / f"{rep.id}.csv", o.row_records)
        _write_csv(out / rep.seed / f"{rep.id}.verdicts.csv", o.verdict_records)
    _write_csv(out / "summary.csv", [summary_record(o) for o in outcomes])
    _write_csv(out / "seeds.csv", seed_summary(outcomes))


def run(which: str | None = None, quick: bool = False, out: str | Path | None = None,
        progress=None) -> list[Outcome]:
    """Runs the reproductions `which` selects (`None`, `SEED`, `SEED/ID`); writes them under
    `out` when given. `progress(i, n, name)` is called before each."""
    reps = select(which)
    outcomes = run_all(reps, quick, on_start=(lambda i, rep: progress(i, len(reps), rep.name)) if progress else None)
    if out is not None:
        write(outcomes, Path(out))
    return outcomes
