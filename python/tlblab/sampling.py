"""Sampled simulation: SMARTS's systematic sampling, every statistic with its confidence interval.

    >>> import tlblab
    >>> s = tlblab.sample("zen3", "graph500_bfs:scale=14", unit=10_000, period=20)
    >>> s.frame()           # one row per statistic: per-reference estimate, interval, total
    >>> s.estimate("tlb.L2D.misses")

The method is SMARTS's (Wunderlich, Wenisch, Falsafi and Hoe, "SMARTS: Accelerating
Microarchitecture Simulation via Rigorous Statistical Sampling", ISCA 2003, §3): the run is a
population of units of `unit` references; every `period`-th unit, from a start drawn at random
(from `seed`) in the first period, is measured; between measured units the machine runs on
unmeasured with its state updated exactly (functional warming: here the full model itself,
docs/sampling.md says why). One addition: the first `head` units (1 by default) are measured
in full, a take-all stratum (Cochran, Sampling Techniques, 3rd ed., 1977, ch. 5), because a
run's cold start (first touches, empty TLBs) sits there and a sample that misses it states a
zero-width interval around a wrong value (found by tests/test_sampling.py). The rest's total
of each counter is estimated as SMARTS estimates a mean: N_B times the sample mean, its
standard error N_B s / sqrt(n) (SMARTS's eq. 1-2, with the finite-population correction
1 - n/N_B, so a run that measures every unit has an interval of zero), its interval that error
times Student's t at the chosen confidence (SMARTS takes the normal quantile, t's limit; t is
wider for few units). A ratio of two counters (a miss rate) uses the combined ratio estimator,
its error from the residuals x - R y (Cochran §6.4, §6.11).

The population is the run's whole units: the last N mod `unit` references (fewer than one
unit) are not in it. Systematic sampling's variance is estimated as simple random sampling's,
as SMARTS does: a workload whose behaviour repeats with the sampling period can fool it.
"""

from __future__ import annotations

import json
import math
import random
import time
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

from tlblab import _native, phases
from tlblab.machines import machine_arg as _machine_arg

__all__ = ["SampledResult", "sample", "t_quantile"]


def t_cdf(t: float, dof: int) -> float:
    """Student's t distribution function for an integer `dof` (the finite sums of Abramowitz
    and Stegun 26.7.3-26.7.4)."""
    theta = math.atan(abs(t) / math.sqrt(dof))
    c2 = math.cos(theta) ** 2
    if dof % 2:
        term, acc = math.cos(theta), 0.0
        if dof > 1:
            acc = term
            for k in range(3, dof - 1, 2):
                term *= c2 * (k - 1) / k
                acc += term
        a = 2 / math.pi * (theta + math.sin(theta) * acc)
    else:
        term = acc = 1.0
        for k in range(2, dof - 1, 2):
            term *= c2 * (k - 1) / k
            acc += term
        a = math.sin(theta) * acc
    return 0.5 + math.copysign(a / 2, t)


def t_quantile(p: float, dof: int) -> float:
    """Student's t quantile at probability `p` for `dof` degrees of freedom: Newton's method on
    `t_cdf` from the Cornish-Fisher start (Abramowitz and Stegun 26.7.5)."""
    if dof < 1:
        raise ValueError(f"t quantile: expected at least 1 degree of freedom, found {dof}")
    if dof == 1:
        return math.tan(math.pi * (p - 0.5))
    z = NormalDist().inv_cdf(p)
    v = float(dof)
    t = z + (z**3 + z) / (4 * v) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
    log_norm = math.lgamma((v + 1) / 2) - math.lgamma(v / 2) - 0.5 * math.log(v * math.pi)
    for _ in range(50):
        density = math.exp(log_norm - (v + 1) / 2 * math.log1p(t * t / v))
        step = (t_cdf(t, dof) - p) / density
        t -= step
        if abs(step) < 1e-12:
            break
    return t


def unit_counters(stats: dict[str, Any]) -> dict[str, int]:
    """The counters of one unit's statistics (the engine's layout) by name: `cycles` (the
    machine's time), `reference_cycles`, `walks`, `walk_refs`, `pwc_hits`, `walk_cycles`,
    `page_faults`, `invalidations`, `tlb.LEVEL.{accesses,hits,misses,evictions}`,
    `cache.LEVEL.{...}`, `walk_refs.SOURCE`, `data_refs.SOURCE`."""
    t = stats["total"]
    out: dict[str, int] = {"references": t["references"], "cycles": stats["cycles"],
                           "reference_cycles": t["cycles"]}
    for k in ("walks", "walk_refs", "pwc_hits", "walk_cycles", "page_faults", "invalidations"):
        out[k] = t[k]
    for kind, names in (("tlb", stats["tlb_levels"]), ("cache", stats["cache_levels"])):
        for name, lv in zip(names, t[kind]):
            for k in ("accesses", "hits", "misses", "evictions"):
                out[f"{kind}.{name}.{k}"] = lv[k]
    for key, label in (("walk_refs_by_source", "walk_refs"), ("data_by_source", "data_refs")):
        for src, n in zip(stats["sources"], t[key]):
            out[f"{label}.{src}"] = n
    return out


def full_run_value(counters: dict[str, int], name: str, references: int) -> float:
    """What a sample's estimate `name` estimates, computed from a full run's `counters`
    (`unit_counters`) over `references` references: a level's miss rate, or a counter per
    reference."""
    if name.endswith(".miss_rate"):
        base = name[: -len(".miss_rate")]
        acc = counters[f"{base}.accesses"]
        return counters[f"{base}.misses"] / acc if acc else 0.0
    return counters[name] / references


def ratio_pairs(names: list[str]) -> dict[str, tuple[str, str]]:
    """The ratios reported beside the counters: each TLB and cache level's miss rate."""
    out = {}
    for n in names:
        if n.endswith(".misses") and n.startswith(("tlb.", "cache.")):
            base = n[: -len(".misses")]
            out[f"{base}.miss_rate"] = (n, f"{base}.accesses")
    return out


@dataclass
class Estimate:
    """One statistic's estimate: per reference (a ratio for `miss_rate`s), its interval's
    half-width at the result's confidence, and the run's total (per reference × references)."""

    name: str
    value: float
    half_width: float
    total: float | None

    @property
    def interval(self) -> tuple[float, float]:
        return (self.value - self.half_width, self.value + self.half_width)


@dataclass
class SampledResult:
    """A sampled run's estimates (`sample`): `units` the measured units' counters, `population`
    the run's whole units, `references` the run's length."""

    machine: str
    workload: str
    unit: int
    period: int
    offset: int
    head: int
    confidence: float
    references: int
    #: References before the units begin (the warm-up, `sample(warmup=)`): not in the population.
    warmup: int
    units: list[dict[str, int]]
    run: dict[str, Any] = field(default_factory=dict)
    #: Per measured unit, each software thread's counters in the engine's layout (`references`,
    #: `cycles`, `walks`, `walk_refs_by_source`, `data_by_source`, ...), keyed by thread id:
    #: a thread's own share of a unit when helpers or co-runners share the machine.
    threads: list[dict[str, dict[str, Any]]] = field(default_factory=list)

    @property
    def population(self) -> int:
        return (self.references - self.warmup) // self.unit

    @property
    def measured(self) -> int:
        return len(self.units)

    def estimates(self) -> dict[str, Estimate]:
        """Every statistic's estimate with its interval (module doc for the method)."""
        head = self.units[: self.head]
        rest = self.units[self.head:]
        n, big_n = len(rest), self.population - len(head)
        if n < 2:
            raise ValueError(
                f"sample: {n} unit(s) measured after the first {self.head} of {self.population} in the run "
                f"({self.references} references, unit {self.unit}, period {self.period}): an interval needs "
                f"at least 2; give a smaller unit or period")
        fpc = max(0.0, 1.0 - n / big_n)
        t = t_quantile(0.5 + self.confidence / 2, n - 1)
        # Stratified: the head's units are counted whole, the rest's total is estimated from its
        # sample (N_B / n times its sum), and only that part has an error.
        def total(name: str, units: list[dict[str, int]]) -> float:
            return sum(u[name] for u in units)

        names = list(self.units[0])
        out: dict[str, Estimate] = {}
        population_refs = self.population * self.unit
        for name in names:
            xs = [u[name] for u in rest]
            mean = sum(xs) / n
            var = sum((x - mean) ** 2 for x in xs) / (n - 1)
            whole = total(name, head) + big_n * mean
            half = t * big_n * math.sqrt(fpc * var / n)
            rate = whole / population_refs
            out[name] = Estimate(name, rate, half / population_refs, rate * (self.references - self.warmup))
        for name, (num, den) in ratio_pairs(names).items():
            y_whole = total(den, head) + big_n * sum(u[den] for u in rest) / n
            if y_whole == 0:
                out[name] = Estimate(name, 0.0, 0.0, None)
                continue
            x_whole = total(num, head) + big_n * sum(u[num] for u in rest) / n
            r = x_whole / y_whole
            ds = [u[num] - r * u[den] for u in rest]
            dbar = sum(ds) / n
            var = sum((d - dbar) ** 2 for d in ds) / (n - 1)
            half = t * big_n * math.sqrt(fpc * var / n) / y_whole
            out[name] = Estimate(name, r, half, None)
        return out

    def estimate(self, name: str) -> Estimate:
        e = self.estimates()
        if name not in e:
            raise KeyError(f"{name}: no such statistic (one of {', '.join(e)})")
        return e[name]

    def frame(self):
        """One row per statistic: estimate (per reference, or the ratio), half_width, low, high,
        relative (half-width over the estimate), total (over the run's references)."""
        import pandas as pd

        rows = []
        for e in self.estimates().values():
            rows.append({"statistic": e.name, "estimate": e.value, "half_width": e.half_width,
                         "low": e.value - e.half_width, "high": e.value + e.half_width,
                         "relative": e.half_width / abs(e.value) if e.value else 0.0,
                         "total": e.total})
        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        # One line (the dataclass's repr printed every unit's counters).
        return (f"SampledResult(machine {self.machine!r}, workload {self.workload!r}: {self.references} references, "
                f"{self.measured} of {self.population} units of {self.unit} measured, period {self.period}, "
                f"confidence {self.confidence})")

    def _repr_html_(self) -> str:
        from tlblab.sim import _frame_html, _html

        head = (f"<p><b>{_html(self.machine)}</b>, workload <code>{_html(self.workload)}</code>: "
                f"{self.references} references, {self.measured} of {self.population} units of {self.unit} "
                f"measured (SMARTS, period {self.period})</p>")
        try:
            table = _frame_html(self.frame(), f"estimates per reference, {self.confidence:.0%} intervals")
        except ValueError as e:  # too few units for an interval: say so in the cell
            table = f"<p>{_html(e)}</p>"
        return head + table

    def to_dict(self) -> dict[str, Any]:
        """What `tlblab simulate --sample --json` prints."""
        return {"machine": self.machine, "workload": self.workload,
                "sample": {"unit": self.unit, "period": self.period, "offset": self.offset, "head": self.head,
                           "confidence": self.confidence, "warmup": self.warmup, "measured_units": self.measured,
                           "population_units": self.population, "references": self.references,
                           "method": "SMARTS systematic sampling (Wunderlich et al., ISCA 2003); "
                                     "Student t interval with finite-population correction; "
                                     "ratio estimator for miss rates"},
                "estimates": {e.name: {"estimate": e.value, "half_width": e.half_width,
                                       "total": e.total} for e in self.estimates().values()},
                "run": self.run}


def parse_sample(text: str) -> tuple[int, int, int | None]:
    """`--sample UNIT:PERIOD[:OFFSET]` (counts as specs write them: 10k, 0x100) as
    (unit, period, offset or None)."""
    parts = text.split(":")
    nums = [_native.parse_number(p) for p in parts]
    if len(parts) not in (2, 3) or any(n is None for n in nums):
        raise ValueError(f"--sample: expected UNIT:PERIOD[:OFFSET], counts such as 10k:50 or 10k:50:7, found '{text}'")
    return int(nums[0]), int(nums[1]), (int(nums[2]) if len(nums) == 3 else None)


def sample(machine: str | dict[str, Any] = "zen3", workload: str = "random", *, unit: int, period: int,
           offset: int | None = None, head: int = 1, seed: int = 0, confidence: float = 0.95, tlb_only: bool = False,
           caches: bool = True, data_accesses: bool = True, walks: bool = True, max_references: int = 0,
           os: dict[str, Any] | None = None, technique: str | None = None, progress: bool = False,
           warmup: int = 0) -> SampledResult:
    """Simulates `workload` on `machine`, measuring the first `head` units of `unit` references
    in full, then every `period`-th unit from unit `head + offset` on (`offset` default: drawn
    from `seed` in [0, period)), and returns the estimates with their intervals at `confidence`
    (module doc). The other options are
    `simulate`'s; with `warmup=W` the units are counted from the W-th reference on, and the
    estimates cover the run after it (the region of interest), as `simulate(warmup=W)` does."""
    from tlblab.sim import _count
    from tlblab import technique as technique_modules

    # UNIT, PERIOD and OFFSET are --sample's fields, not flags of their own.
    unit = _count("unit", unit, minimum=1, flag="UNIT of --sample UNIT:PERIOD")
    period = _count("period", period, minimum=1, flag="PERIOD of --sample UNIT:PERIOD")
    if offset is None:
        offset = random.Random(seed).randrange(period)
    offset = _count("offset", offset, flag="OFFSET of --sample UNIT:PERIOD:OFFSET")
    head = _count("head", head, flag="--sample-head")
    if offset >= period:
        raise ValueError(f"sample: the offset ({offset}) is a unit of the first period: expected 0..{period - 1}")
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 < confidence < 1:
        raise ValueError(f"confidence: expected a probability strictly between 0 and 1, found {confidence!r}")
    max_references = _count("max_references", max_references)
    _count("warmup", warmup)
    from tlblab.sim import _check_cores

    _check_cores(machine, workload)
    spec, fmt = _machine_arg(machine)
    if tlb_only:
        caches = data_accesses = walks = False
    technique_json = technique_modules.run_table(technique, machine)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    with phases.phase(phases.SIMULATION):  # tlblab reproduce's timings (seed 001's windows run here)
        raw = _native.simulate(spec, workload, seed=seed, caches=caches, data_accesses=data_accesses, walks=walks,
                               max_references=max_references, machine_format=fmt, os_json=json.dumps(os or {}),
                               technique_json=technique_json, progress=progress, warmup=warmup,
                               sample_unit=unit, sample_period=period, sample_offset=offset, sample_head=head)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    out = json.loads(raw)
    units = out["units"]
    refs = out["references"]
    name = units[0]["machine"] if units else (machine if isinstance(machine, str) else "machine")
    run = {"references": refs, "wall_seconds": round(wall, 6), "cpu_seconds": round(cpu, 6),
           "refs_per_second": round(refs / wall) if wall > 0 else 0}
    result = SampledResult(machine=name, workload=workload, unit=unit, period=period, offset=offset, head=head,
                           confidence=float(confidence), references=refs, warmup=warmup,
                           units=[unit_counters(u) for u in units], run=run,
                           threads=[u.get("threads", {}) for u in units])
    result.estimates()  # an interval needs two units: say so now, not when first read
    return result
