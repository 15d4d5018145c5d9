"""A sweep's grid: read, checked and expanded into points before any simulation runs.

A grid (TOML, or the same as a dict) has a `[base]` table — what every point runs unless an
axis says otherwise — and an `[axes]` table whose keys each name one setting and whose values
are the list of values to sweep; the points are the cross product, in the order the axes are
written. docs/sweeps.md has the keys:

    machine                   a preset name or machine file
    machine.<path>            a field of the machine dict (`tlblab.machine_config`): list
                              elements by their `name` (TLBs, caches) or `level` (page-walk
                              caches) or index, e.g. machine.tlb.L1D.entries,
                              machine.walker.pwc.2.entries, machine.page_table.page_size
    technique                 "none" or NAME[:key=value,...] (the machine's [technique] table)
    technique.<param>         one parameter of the technique
    os.<field>                the OS model (switch, asid_bits, switch_cycles, ipi_cycles,
                              kernel_pages, kernel_return_pages, fault_kernel_pages,
                              migrate_kernel_pages, tlb_maintenance, syscall_kernel_pages,
                              tick_kernel_pages)
    workload                  a built-in workload spec or a trace file (read by the workers:
                              give a path every worker can read)
    seed, max_references, mode (full | no_caches | tlb_only)
    warmup, roi               references of warm-up, then of the region of interest the
                              statistics cover (as `tlblab simulate --warmup/--roi`)

Every error names the key (and the point) and is raised before the first point runs.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tlblab import technique
from tlblab.errors import UserError

MODES = ("full", "no_caches", "tlb_only")
SCALARS = ("machine", "technique", "workload", "seed", "max_references", "mode", "warmup", "roi")
NAMESPACES = ("machine.", "technique.", "os.")
OS_FIELDS = ("switch", "asid_bits", "switch_cycles", "ipi_cycles", "kernel_pages", "kernel_return_pages",
             "fault_kernel_pages", "migrate_kernel_pages", "tlb_maintenance", "syscall_kernel_pages",
             "tick_kernel_pages")
# Grids larger than this are almost certainly a typo in an axis (and would take days).
MAX_POINTS = 1_000_000


@dataclass
class Grid:
    """A checked grid: the base settings, the axes in order, where it came from."""

    base: dict[str, Any]
    axes: dict[str, list[Any]]
    where: str = "<grid>"
    root: Path = field(default_factory=Path.cwd)

    @property
    def size(self) -> int:
        n = 1
        for v in self.axes.values():
            n *= len(v)
        return n


@dataclass
class Point:
    """One configuration of the grid: its axis values and everything a worker needs to run it."""

    index: int
    values: dict[str, Any]
    machine: dict[str, Any]
    workload: str
    seed: int
    max_references: int
    mode: str
    os: dict[str, Any]
    warmup: int = 0
    roi: int | None = None
    _key: str | None = field(default=None, init=False, repr=False, compare=False)

    def key(self) -> str:
        """A hash of everything that decides the point's result (not of its index or of the grid
        it came from): a resumed or reordered grid finds the points it already ran. Computed
        once: a point is not changed after `expand` made it."""
        if self._key is None:
            self._key = self._hash()
        return self._key

    def _hash(self) -> str:
        fields = {"machine": self.machine, "workload": self.workload, "seed": self.seed,
                  "max_references": self.max_references, "mode": self.mode, "os": self.os}
        # (Only when set: the keys of points without a warm-up stay what they were.)
        if self.warmup or self.roi is not None:
            fields.update(warmup=self.warmup, roi=self.roi)
        blob = json.dumps(fields, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:24]

    def task(self) -> dict[str, Any]:
        """What a worker receives: plain data, picklable without tlblab."""
        return {"key": self.key(), "values": self.values, "machine": self.machine,
                "workload": self.workload, "seed": self.seed, "max_references": self.max_references,
                "mode": self.mode, "os": self.os, "warmup": self.warmup, "roi": self.roi}


#: The grids that come with tlblab (examples/ of a clone links here): `tlblab sweep NAME` runs one
#: from any directory, installed from a wheel too.
BUILT_IN = Path(__file__).resolve().parent / "examples"


def built_in() -> dict[str, Path]:
    """The built-in grids by name (`sweep_l1d`)."""
    return {f.stem: f for f in sorted(BUILT_IN.glob("*.toml"))}


def load(path: str | Path) -> Grid:
    """Reads a grid file, or a built-in grid by its name (`sweep_l1d`); relative paths in it
    (machine files, traces) are relative to it."""
    p = Path(path)
    grids = built_in()
    if not p.exists() and str(path) in grids:
        p = grids[str(path)]
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise UserError(f"{p}: no such grid file (a relative path is from the working directory; the built-in "
                        f"grids run from anywhere by name: {', '.join(grids)})") from None
    except OSError as e:
        raise UserError(f"{p}: cannot read the grid: {e.strerror or e}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{p}: not valid TOML: {e}") from None
    return parse(data, where=str(p), root=p.resolve().parent)


def parse(data: dict[str, Any], where: str = "<grid>", root: Path | None = None) -> Grid:
    """Checks a grid's shape (tables, keys, value lists); `expand` checks the values."""
    if not isinstance(data, dict):
        raise UserError(f"{where}: expected a table with [base] and [axes], found {type(data).__name__}")
    unknown = set(data) - {"base", "axes"}
    if unknown:
        raise UserError(f"{where}: unknown table '{sorted(unknown)[0]}': expected [base] and [axes]")
    base = data.get("base", {})
    axes = data.get("axes", {})
    for name, t in (("base", base), ("axes", axes)):
        if not isinstance(t, dict):
            raise UserError(f"{where}: [{name}]: expected a table, found {type(t).__name__}")
    if not base and not axes:
        # An empty file is a mistake (the wrong file, one not saved yet), not a request for one
        # point of every default.
        raise UserError(f"{where}: nothing to sweep: expected a [base] table, an [axes] table or both "
                        "(docs/sweeps.md), found neither")
    for k in list(base) + list(axes):
        _check_key(k, where, "base" if k in base else "axes")
    for k, v in axes.items():
        if not isinstance(v, list) or not v:
            raise UserError(f"{where}: axes.\"{k}\": expected a non-empty list of values, found {v!r}")
        seen = []
        for x in v:
            if x in seen:
                raise UserError(f"{where}: axes.\"{k}\": the value {x!r} appears twice")
            seen.append(x)
    both = set(base) & set(axes)
    if both:
        k = sorted(both)[0]
        raise UserError(f"{where}: '{k}' is in both [base] and [axes]: give it in one")
    g = Grid(base=dict(base), axes={k: list(v) for k, v in axes.items()}, where=where,
             root=root or Path.cwd())
    if g.size > MAX_POINTS:
        raise UserError(f"{where}: {g.size} points (more than {MAX_POINTS}): check the axes' lengths")
    return g


def _check_key(k: str, where: str, table: str) -> None:
    if k in SCALARS or any(k.startswith(ns) and len(k) > len(ns) for ns in NAMESPACES):
        if k.startswith("os.") and k[3:] not in OS_FIELDS:
            raise UserError(f"{where}: {table}.\"{k}\": unknown OS field '{k[3:]}': expected one of "
                            f"{', '.join(OS_FIELDS)}")
        return
    raise UserError(f"{where}: {table}.\"{k}\": unknown key: expected one of {', '.join(SCALARS)}, "
                    f"or machine.<field path>, technique.<param>, os.<field>")


def _set_path(machine: dict[str, Any], path: str, value: Any, what: str) -> None:
    """Sets machine[path] where `path` is dotted; list elements by name, level or index."""
    parts = path.split(".")
    node: Any = machine
    trail = "machine"
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        key: Any
        if isinstance(node, dict):
            if part not in node:
                raise UserError(f"{what}: '{trail}' has no field '{part}': expected one of "
                                f"{', '.join(node) or '(none)'}")
            key = part
        elif isinstance(node, list):
            key = _list_index(node, part)
            if key is None:
                names = [str(e.get("name", e.get("level", j))) if isinstance(e, dict) else str(j)
                         for j, e in enumerate(node)]
                raise UserError(f"{what}: '{trail}' has no element '{part}': expected one of "
                                f"{', '.join(names) or '(an empty list)'}")
        else:
            raise UserError(f"{what}: '{trail}' is a value ({node!r}), not a table: '{part}' cannot be under it")
        if last:
            node[key] = copy.deepcopy(value)
            return
        node = node[key]
        trail += "." + part


def _list_index(node: list, part: str) -> int | None:
    for j, e in enumerate(node):
        if isinstance(e, dict) and e.get("name") == part:
            return j
    for j, e in enumerate(node):
        if isinstance(e, dict) and "level" in e and str(e["level"]) == part and "name" not in e:
            return j
    if part.isdigit() and int(part) < len(node):
        return int(part)
    return None


def _technique(spec: Any, what: str) -> dict[str, Any] | None:
    """"none" → None; "NAME[:k=v,...]" → the [technique] table (parsed by the engine,
    `tlblab.technique.table`); a table as is."""
    if spec is None or spec == "none" or spec == "":
        return None
    if isinstance(spec, dict):
        if not isinstance(spec.get("name"), str):
            raise UserError(f"{what}: a technique table needs a 'name'")
        return dict(spec)
    if not isinstance(spec, str):
        raise UserError(f"{what}: expected \"none\" or NAME[:key=value,...], found {spec!r}")
    try:
        return technique.table(spec)
    except ValueError as e:
        raise UserError(f"{what}: {e}") from None


def _resolve_path(value: str, root: Path) -> str:
    """A machine file or trace given relative to the grid file, made absolute (workers may run
    elsewhere; the path must be one they can read)."""
    p = Path(value)
    if not p.is_absolute() and (root / p).exists():
        return str((root / p).resolve())
    return value


def _looks_like_file(w: str) -> bool:
    return "/" in w or w.endswith((".tlbt", ".txt", ".xz", ".gz", ".champsim"))


def expand(grid: Grid, check: bool = True) -> list[Point]:
    """Every point of the grid, in order (the first axis varies slowest). With `check`, each
    distinct machine, technique, OS setting and workload is validated by the engine first."""
    from tlblab.machines import machine_config

    axes = list(grid.axes)
    # Each preset or file parsed once, kept as JSON text: a point's own copy is then one
    # `json.loads`, several times faster than `copy.deepcopy` of the nested dict.
    machines: dict[str, str] = {}
    points = []
    for index, combo in enumerate(itertools.product(*grid.axes.values())):
        values = dict(zip(axes, combo))
        s = {**grid.base, **values}
        what = grid.where + ": point " + ", ".join(f"{k}={v!r}" for k, v in values.items()) if values else grid.where
        mname = s.get("machine", "zen3")
        if not isinstance(mname, str):
            raise UserError(f"{grid.where}: machine: expected a preset name or file, found {mname!r}")
        mname = _resolve_path(mname, grid.root)
        if mname not in machines:
            try:
                machines[mname] = json.dumps(machine_config(mname))
            except (ValueError, OSError) as e:
                raise UserError(f"{grid.where}: machine = {mname!r}: {e}") from None
        m = json.loads(machines[mname])
        for k, v in s.items():
            if k.startswith("machine."):
                _set_path(m, k[len("machine."):], v, f"{what}: \"{k}\"")
        tech = _technique(s.get("technique", m.get("technique")), f"{what}: technique")
        params = {k[len("technique."):]: v for k, v in s.items() if k.startswith("technique.")}
        if params:
            if tech is None:
                k = next(k for k in s if k.startswith("technique."))
                raise UserError(f"{what}: \"{k}\": a technique parameter, but the point has no technique")
            tech.update(params)
        if tech is None:
            m.pop("technique", None)
        else:
            m["technique"] = tech
        workload = s.get("workload", "random")
        if not isinstance(workload, str):
            raise UserError(f"{what}: workload: expected a spec or a trace file, found {workload!r}")
        workload = _resolve_path(workload, grid.root)
        if _looks_like_file(workload) and not Path(workload).is_file():
            raise UserError(f"{what}: workload: no such trace file '{workload}'")
        mode = s.get("mode", "full")
        if mode not in MODES:
            raise UserError(f"{what}: mode: expected one of {', '.join(MODES)}, found {mode!r}")
        ints = {}
        for k, default in (("seed", 0), ("max_references", 0)):
            v = s.get(k, default)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise UserError(f"{what}: {k}: expected a non-negative integer, found {v!r}")
            ints[k] = v
        warmup, roi = s.get("warmup", 0), s.get("roi")
        try:
            from tlblab.sim import _run_limits

            _run_limits(ints["max_references"], warmup, roi, 0, None, True)
        except ValueError as e:
            raise UserError(f"{what}: {e}") from None
        os_opts = {k[3:]: v for k, v in s.items() if k.startswith("os.")}
        points.append(Point(index=index, values=values, machine=m, workload=workload,
                            seed=ints["seed"], max_references=ints["max_references"], mode=mode,
                            os=os_opts, warmup=warmup, roi=roi))
    if check:
        _check_with_engine(grid, points)
    return points


def _check_with_engine(grid: Grid, points: list[Point]) -> None:
    """Lets the engine refuse, here and now, what it would refuse mid-sweep (`check_jobs`)."""
    for job in check_jobs(grid, points):
        err = run_check(job)
        if err is not None:
            raise UserError(err)


def check_jobs(grid: Grid, points: list[Point]) -> list[dict[str, Any]]:
    """What the engine must accept before the first point runs: each distinct machine (with its
    technique), OS setting and mode built and run for one reference, each distinct workload
    opened. Plain data (`run_check` runs one, on a worker or here), in grid order, each with the
    message that names the axis values of the first point that has it."""
    jobs: list[dict[str, Any]] = []
    seen_cfg: set[str] = set()
    seen_wl: set[str] = set()
    for p in points:
        what = grid.where + (": point " + ", ".join(f"{k}={v!r}" for k, v in p.values.items()) if p.values else "")
        cfg = json.dumps([p.machine, p.os, p.mode], sort_keys=True)
        if cfg not in seen_cfg:
            seen_cfg.add(cfg)
            jobs.append({"machine": p.machine, "workload": "sequential:bytes=4096,rounds=1", "os": p.os,
                         "seed": 0, "mode": p.mode, "what": what})
        if p.workload not in seen_wl:
            seen_wl.add(p.workload)
            jobs.append({"machine": p.machine, "workload": p.workload, "os": None, "seed": p.seed,
                         "mode": p.mode, "what": f"{what}: workload {p.workload!r}"})
    return jobs


def run_check(job: dict[str, Any]) -> str | None:
    """Runs one of `check_jobs`: None if the engine accepts it, else the message."""
    from tlblab.sim import simulate

    try:
        simulate(job["machine"], job["workload"], max_references=1, os=job["os"], seed=job["seed"],
                 **_mode_kwargs(job["mode"]))
    except (ValueError, OSError) as e:
        return f"{job['what']}: {e}"
    return None


def _mode_kwargs(mode: str) -> dict[str, bool]:
    if mode == "tlb_only":
        return {"tlb_only": True}
    if mode == "no_caches":
        return {"caches": False, "data_accesses": False}
    return {}
