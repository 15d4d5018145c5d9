"""`tlblab reproduce`'s units finer than a seed (`tlblab.reproduce.run_all` with two jobs or more):
what the pool (`tlblab.reproduce_pool.run_dynamic`) hands its workers, longest first.

- A seed's **groups**: its reproductions that share what a process keeps (a module's caches,
  `sim.reusing`'s runs) run in one process, in their order. A seed is one group unless its
  experiments module says otherwise (`PROCESS_GROUPS`: tuples of reproduction ids; the ids it
  does not name are one more group). Seed 004's two ISAs share nothing, so its Tables 2-3 on
  x86 and on ARMv7 run beside each other.
- A seed's **prepared runs**: a module that offers `plan`, `make` and `adopt` has its runs
  planned in a worker (`plan_seed`), each run made as a unit of its own (`make_run`) on
  whichever worker is free, and adopted by the process that then runs the seed's groups. Seed
  001's (its `prepare`'s runs) were a pool of their own inside the seed's unit: three processes
  on two cores beside another seed, and one core idle while the seed's last runs ended. Seed
  004's are each program's Table 2 runs on each ISA, which Table 3 reads too.

Each run and each reproduction is deterministic and independent of the process it runs in, so
the outcomes are those of one job, in the reproductions' order.
"""

from __future__ import annotations

import importlib
import time
from typing import Any, Callable

from tlblab import phases, reproduce_pool, seeds


def prepare_modules(reps: list[Any]) -> dict[Any, tuple[str, list[str]]]:
    """{module: (seed, the names of its experiment functions among `reps`)}, each module one
    whose functions `reps` name (experiments.py, or another module of the seed's folder:
    "seed001:power.fig6_12"); a name no seed folder or module answers is left out (the
    reproduction says what is wrong with it when it runs)."""
    by_module: dict[Any, tuple[str, list[str]]] = {}
    for rep in reps:
        mod, _, fn = rep.experiment.partition(":")
        seed = seeds.get(mod.removeprefix("seed")) if mod.startswith("seed") else None
        if seed is None:
            continue
        other, _, fn = fn.rpartition(".")
        try:
            module = importlib.import_module(f"{seed.package}.{other}") if other else seed.experiments()
        except ImportError:
            continue
        by_module.setdefault(module, (rep.seed, []))[1].append(fn)
    return by_module


def groups(reps: list[Any]) -> list[tuple[str, list[int]]]:
    """The groups of `reps` as (seed, indices into `reps`), in the order of each group's first
    reproduction: per seed, one per `PROCESS_GROUPS` entry of its experiments module (those with
    a reproduction in `reps`) and one of the rest."""
    by_seed: dict[str, list[int]] = {}
    for i, rep in enumerate(reps):
        by_seed.setdefault(rep.seed, []).append(i)
    out = []
    for seed, idx in by_seed.items():
        found = seeds.get(seed)
        declared = getattr(found.experiments(), "PROCESS_GROUPS", ()) if found else ()
        parts: dict[int, list[int]] = {}
        for i in idx:
            g = next((k for k, ids in enumerate(declared) if reps[i].id in ids), len(declared))
            parts.setdefault(g, []).append(i)
        out += [(seed, part) for part in parts.values()]
    return sorted(out, key=lambda g: g[1][0])


# A plan and a run start no process and write only whole caches: stopped at once (as seed 001's
# own pool's workers were), not after a graph's build that does not check for signals.
@reproduce_pool.stops_at_once
def plan_seed(reps: list[Any], quick: bool, guarded: bool) -> dict[str, Any]:
    """In a worker: the runs each planning module of `reps`' seed would make
    (`module.plan(quick, experiment names)`), as {"runs": [(module name, key, job, seconds
    expected or None, what it is)], "timing"}. A plan that fails leaves its runs to the reproductions,
    which make them and report the failure (as `tlblab.reproduce.prepare`)."""
    runs: list[tuple[str, Any, Any, float, str]] = []
    with phases.measure() as ledger:
        for module, (_, fns) in prepare_modules(reps).items():
            if not hasattr(module, "plan"):
                continue
            try:
                jobs = module.plan(quick, fns)
            except (ValueError, RuntimeError):
                continue
            except Exception:  # noqa: BLE001 - guarded (the study): as run_seed's prepare
                if not guarded:
                    raise
                continue
            cost = module.costs(jobs) if hasattr(module, "costs") else {}
            for key, job in jobs.items():
                what = module.describe(job) if hasattr(module, "describe") else repr(key)
                runs.append((module.__name__, key, job, cost.get(key), what))
    return {"runs": runs, "timing": timing(ledger)}


@reproduce_pool.stops_at_once
def make_run(module: str, job: Any, guarded: bool = False) -> dict[str, Any]:
    """In a worker: one planned run (`module.make(job)`), its wall seconds and timing; a run
    that fails (of any error, `guarded`) is left to the reproduction that reads it (`failed`)."""
    t0 = time.monotonic()
    with phases.measure() as ledger:
        try:
            result, failed = importlib.import_module(module).make(job), False
        except (ValueError, RuntimeError):
            result, failed = None, True
        except Exception:  # noqa: BLE001 - guarded (the study): as run_seed's prepare
            if not guarded:
                raise
            result, failed = None, True
    return {"result": result, "failed": failed, "seconds": time.monotonic() - t0, "timing": timing(ledger)}


def timing(ledger: phases.Ledger) -> dict[str, Any]:
    return {"wall": round(ledger.wall, 3), "cpu": round(ledger.cpu, 3), "phases": ledger.record()}


def add_timing(into: dict[str, Any], more: dict[str, Any]) -> None:
    """Adds timing `more` (`timing`'s form) to `into`: wall, CPU and each phase's wall, CPU and
    calls, so a seed's prepared runs keep where their seconds went (capture, generation,
    simulation), not only how many there were."""
    for k in ("wall", "cpu"):
        into[k] = round(into[k] + more[k], 3)
    for name, ph in more["phases"].items():
        mine = into["phases"].setdefault(name, {"wall": 0.0, "cpu": 0.0, "calls": 0})
        for k in ("wall", "cpu"):
            mine[k] = round(mine[k] + ph[k], 3)
        mine["calls"] += ph["calls"]
    into["phases"] = {name: into["phases"][name] for name in phases.ORDER if name in into["phases"]}


def schedule(reps: list[Any], quick: bool, guarded: bool, jobs: int, run_group: Callable[..., dict[str, Any]],
             known: dict[str, float], fallback: dict[str, float], message: Callable[[Any], None],
             on_prepare: Callable[[str, int], None] | None, on_prepared: Callable[[dict[str, Any]], None] | None,
             on_run: Callable[[str], None] | None, on_group: Callable[[dict[str, Any]], None],
             on_seed: Callable[[dict[str, Any]], None] | None) -> None:
    """Runs `reps` as groups (`run_group(items, quick, guarded, tell_done, made)`, a module-level
    function returning {"outcomes", "record"}) after their seed's prepared runs, on `jobs`
    workers, longest first: a group by its reproductions' CPU seconds last time (`known`, by
    name; else its share of its seed's `known` or `fallback` seconds), a run by its module's
    `costs` plus its seed's longest group when that was measured (it waits for the run), a
    plan first. `on_group(result)` as each
    group ends, `on_seed(record)` as each seed's last unit does (its groups' records merged:
    wall and CPU summed, the prepared runs' beside them)."""
    parts = groups(reps)
    by_seed: dict[str, list[list[int]]] = {}
    for seed, idx in parts:
        by_seed.setdefault(seed, []).append(idx)

    def group_cost(seed: str, idx: list[int]) -> float:
        names = [reps[i].name for i in idx]
        if all(n in known for n in names):
            return sum(known[n] for n in names)
        total = sum(1 for r in reps if r.seed == seed)
        return known.get(seed, fallback.get(seed, 0.0)) * len(idx) / total

    planning = {seed for seed, idx in by_seed.items()
                if any(hasattr(m, "plan") for m in prepare_modules([reps[i] for g in idx for i in g]))}
    # A group alone, with no plan, runs in this process (`alone`: its outcomes told as made).
    alone = len(parts) <= 1 and not planning
    made: dict[str, dict[str, dict[Any, Any]]] = {}
    waiting: dict[str, int] = {}
    prepared: dict[str, dict[str, Any]] = {}
    records: dict[str, list[dict[str, Any]]] = {}
    left = {seed: len(idx) for seed, idx in by_seed.items()}

    def seed_groups(seed: str) -> list[reproduce_pool.Unit]:
        return [reproduce_pool.Unit(run_group, ([(i, reps[i]) for i in idx], quick, guarded, alone, made.get(seed)),
                                    group_cost(seed, idx), ("group", seed))
                for idx in by_seed[seed]]

    def tail(seed: str) -> float:
        # Only a measured one: SEED_SECONDS' whole seed is mostly its prepared runs themselves.
        return max((group_cost(seed, idx) for idx in by_seed[seed]
                    if all(reps[i].name in known for i in idx)), default=0.0)

    def finished(unit: reproduce_pool.Unit, result: Any) -> list[reproduce_pool.Unit]:
        kind, seed, *rest = unit.key
        if kind == "plan":
            prepared[seed] = {"seed": seed, "runs": len(result["runs"]), "seconds": 0.0,
                              "timing": result["timing"]}
            waiting[seed] = len(result["runs"])
            if not result["runs"]:
                return _prepared(seed)
            # A run its module gives no seconds for: an even share of its seed's.
            share = known.get(seed, fallback.get(seed, 0.0)) / len(result["runs"])
            return [reproduce_pool.Unit(make_run, (module, job, guarded),
                                        (share if cost is None else cost) + tail(seed),
                                        ("run", seed, module, key, job, what))
                    for module, key, job, cost, what in result["runs"]]
        if kind == "run":
            module, key, job, what = rest
            if not result["failed"]:
                made.setdefault(seed, {}).setdefault(module, {})[key] = (job, result["result"], result["seconds"])
            p = prepared[seed]
            p["seconds"] += result["seconds"]
            add_timing(p["timing"], result["timing"])
            p.setdefault("each", []).append({"what": what, "wall": result["timing"]["wall"],
                                             "cpu": result["timing"]["cpu"]})
            n = p["runs"] - waiting[seed] + 1
            if on_run:
                on_run(f"run {n}/{p['runs']} made in {result['seconds']:.0f} s: {what}")
            waiting[seed] -= 1
            return _prepared(seed) if waiting[seed] == 0 else []
        on_group(result)
        records.setdefault(seed, []).append(result["record"])
        left[seed] -= 1
        if left[seed] == 0 and on_seed:
            on_seed(_merged(records[seed], prepared.get(seed)))
        return []

    def _prepared(seed: str) -> list[reproduce_pool.Unit]:
        p = prepared[seed]
        p["seconds"] = round(p["seconds"], 2)
        if on_prepared:
            on_prepared(p)
        return seed_groups(seed)

    first: list[reproduce_pool.Unit] = []
    for seed in by_seed:
        if seed in planning:
            if on_prepare:
                on_prepare(seed, sum(len(g) for g in by_seed[seed]))
            idx = [i for g in by_seed[seed] for i in g]
            first.append(reproduce_pool.Unit(plan_seed, ([reps[i] for i in idx], quick, guarded), float("inf"),
                                             ("plan", seed)))
        else:
            first += seed_groups(seed)
    reproduce_pool.run_dynamic(first, jobs=1 if alone else jobs, on_message=message, on_result=finished)


def _merged(records: list[dict[str, Any]], prepared: dict[str, Any] | None) -> dict[str, Any]:
    """One seed's record from its groups' (`wall` and `cpu` summed over them: process seconds,
    not the seed's span) and its prepared runs' (counted in `cpu`, listed in `prepared`)."""
    pre = [prepared] if prepared else []
    return {"seed": records[0]["seed"], "reproductions": sum(r["reproductions"] for r in records),
            "wall": round(sum(r["wall"] for r in records) + sum(p["timing"]["wall"] for p in pre), 3),
            "cpu": round(sum(r["cpu"] for r in records) + sum(p["timing"]["cpu"] for p in pre), 3),
            "prepared": pre + [p for r in records for p in r["prepared"]],
            "peak_rss_mib": {k: max(r["peak_rss_mib"][k] for r in records) for k in ("self", "children")}}
