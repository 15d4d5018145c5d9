"""Seed 001 (Chatzopoulos 2024, PT-Baker): the experiments behind its reproductions.

This module holds the tables at Table 5.2's footprints and `prepare`; the runs they read are in
`runs.py`, the tables at small footprints in `small_tables.py` (split by table, issue 84), and
every name of both is re-exported here, as the reproductions (`seed001:<function>`), the tests
and the scripts name them.

Each function returns {row key: our value} for `python/tlblab/seeds/s001_pt_baker/reproductions/<id>.toml`.
Every run is the zen3 preset (seed 001 Table 5.1) or zen3-virt (§6.2), widened to the cores the
run needs (seed 001 §5.1: a 12-core 5900X; the app, the helper and the stressors each on a core
of one CCX). The application's numbers are its own thread's (thread 0): the helper and the
stressors are other threads (`pt_baker.rs`: 0xF000, 0xF001..).

The seed's workloads are 5.5-32 GB (Table 5.2); a simulation of that many references is hours.
The runs here keep the seed's regime where it matters: the swept region's leaf page-table
entries (one 8-byte PTE per 4 KiB page) outgrow what the application's own data traffic leaves
of the 32 MiB L3 between two uses of a PTE line. `quick` runs fewer references of the same
footprints.
"""

from __future__ import annotations

import re

from typing import Any, Callable

# Every name of the two modules, as before the split: the reproductions, the tests and the scripts
# read them from here.
from tlblab.seeds.s001_pt_baker.runs import (
    APP, AppRun, CANNEAL_READ, CANNEAL_SEED_STEPS, COMPANION_WARM, CSR, GRAPHS, LIMIT, PLAN, PV_PLAN, PV_WINDOWS, QUICK_SCALE, QUICK_STANDINS,
    ROLES, RUN_SECONDS, RUN_SECONDS_SHIPPED, SCALES, SENSITIVITY, SPAN_STEP, STANDINS, STREAM_DRAM, STREAM_SLEEPS,
    THROTTLE, TIMING_DRAM, VARIANTS, WINDOWS, WORKLOADS, ZEN3_DRAM, ZEN3_MLP, _BASIC, _COUNTERS,
    _ENGINE_TAG, _PLACEHOLDER_RUN, _RUNS, _THROTTLED, _app, _cached, _describe, _graphs, _job_digest,
    _longest_first, _made, _plan_runs, _quick, _read_seconds, _run, _run_job, adopt_runs, plan_runs, run_costs,
    SETTLED_WARM, THROTTLE_WARM, _throttled, settled_warm, _timed_job, _variant_machine, _write_seconds, app_cycles, companion_warm, pv_windows,
    csr_runs, dram_share, dram_walk_refs, machine, measured_span, placement_machine, placement_runs,
    population, prefetch_runs, ratio_estimate, scale_runs, window_spec, window_sums)
from tlblab.seeds.s001_pt_baker.small_tables import (
    HOST_PRESET, _effect, _pressure, _workloads, helper_effect, host_ptwarm_prediction, placement,
    pressure_virt, throttle, walk_locality)


def prepare(quick: bool, experiments: list[str], workers: int | None = None,
            progress: Callable[[str], None] | None = None) -> dict[str, float]:
    """Makes every run the experiments named (functions of this module, as the reproductions
    name them) will read, all in one `prefetch_runs` (`tlblab.reproduce.run_all` calls it
    before the reproductions of this seed): one pool for them all, so that the processes stay
    busy from the first run to the last instead of waiting at each experiment's last run. An
    experiment gathers its runs by running whole on placeholders (`_made`), its own
    `prefetch_runs` call included."""
    return prefetch_runs(quick, *_functions(experiments), workers=workers, progress=progress)


def _functions(experiments: list[str]) -> list[Callable[[bool], Any]]:
    return [globals()[name] for name in experiments if callable(globals().get(name))]


# `tlblab reproduce`'s way to the same runs on its own worker processes (`tlblab.reproduce`,
# "prepared runs"): `plan` the runs `prepare` would make, each made by `make` wherever the
# scheduler puts it, and `adopt`ed in the process that then runs the reproductions.
def plan(quick: bool, experiments: list[str]) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    return plan_runs(quick, *_functions(experiments))


make, adopt, costs, describe = _run_job, adopt_runs, run_costs, _describe


def _huge_pages_speedup(runs: dict[str, list[dict[str, float]]]) -> tuple[float, float]:
    """The speed-up of 2 MiB pages over 4 KiB with no helper, in percent, and its half-width."""
    hp = ratio_estimate(_per_ref(runs["none"], "cycles"), _per_ref(runs["none_2m"], "cycles"))
    return 100.0 * (hp[0] - 1.0), 100.0 * hp[1]


def _per_ref(ws: list[dict[str, float]], counter: str) -> list[float]:
    return [w[counter] / w["references"] for w in ws]


def window_rows(runs: dict[str, list[dict[str, float]]], prefix: str = "") -> dict[str, float]:
    """One workload's rows from its variants' windows: for each baseline (none, none_2m,
    stream_none, virt_none) its DRAM share of walk references, walks, DRAM walk references and
    DRAM data references per 1,000 references; for each helper its cut of DRAM walk references
    and its speed-up over that baseline; each with `.../half_width`, its 95% interval."""
    out: dict[str, float] = {}

    def put(key: str, est: tuple[float, float], scale: float = 1.0, shift: float = 0.0) -> None:
        out[f"{prefix}{key}"] = scale * (est[0] + shift)
        out[f"{prefix}{key}/half_width"] = abs(scale) * est[1]

    for variant, ws in runs.items():
        tag, label, base_name = ROLES[variant]
        if base_name is None:
            put(f"{tag}{label}/dram_share",
                ratio_estimate([w["walk_dram"] for w in ws], [w["walk_refs"] for w in ws]), 100.0)
            refs = [w["references"] for w in ws]
            for c, name in (("walks", "walks_per_kref"), ("walk_dram", "walk_dram_per_kref"),
                            ("data_dram", "data_dram_per_kref")):
                put(f"{tag}{label}/{name}", ratio_estimate([w[c] for w in ws], refs), 1000.0)
            continue
        base = runs.get(base_name)
        if base is None:
            continue
        if any(w["walk_dram"] for w in base):
            put(f"{tag}{label}/dram_cut", ratio_estimate(_per_ref(ws, "walk_dram"), _per_ref(base, "walk_dram")),
                -100.0, -1.0)
        else:  # no DRAM walk reference to cut (a --quick footprint): none cut, as `_effect` says
            put(f"{tag}{label}/dram_cut", (0.0, float("nan")))
        put(f"{tag}{label}/speedup", ratio_estimate(_per_ref(base, "cycles"), _per_ref(ws, "cycles")), 100.0, -1.0)
    return out


def _scale_rows(quick: bool, scale: str, prefix: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, runs in scale_runs(quick)[scale].items():
        out.update(window_rows(runs, f"{prefix}{name}/"))
    return out


def _maxima(out: dict[str, float], prefix: str, names: list[str], keys: list[str]) -> None:
    for key in keys:
        vals = [out[f"{prefix}{n}/{key}"] for n in names if f"{prefix}{n}/{key}" in out]
        if vals:
            out[f"{prefix}max/{key}"] = max(vals)


def at_scale(quick: bool) -> dict[str, float]:
    """helper_effect at the seed's footprints (`SCALES["seed"]`, 4 KiB pages), in windows over the
    measured phase (`window_sums`); the same at the small scale under `small/`."""
    prefetch_runs(quick, scale_runs)
    out: dict[str, float] = {}
    for scale, prefix in (("seed", ""), ("small", "small/")):
        rows = _scale_rows(quick, scale, prefix)
        out.update({k: v for k, v in rows.items() if "/stream/" not in k and "/virt/" not in k
                    and "_2m" not in k and "/prefetch/" not in k})
        names = [n for n, *_ in SCALES[scale]]
        _maxima(out, prefix, names, ["base/dram_share", "kernel/dram_cut", "user/dram_cut", "kernel/speedup",
                                     "user/speedup"])
    return out


def huge_pages(quick: bool) -> dict[str, float]:
    """at_scale's windows with 4 KiB and with 2 MiB pages: the speed-up of 2 MiB pages with no
    helper, each helper's speed-up with 2 MiB pages, and the share of the 4 KiB-to-2 MiB speed-up
    the kernel-mode helper gives with 4 KiB pages; both scales (the small one under `small/`)."""
    prefetch_runs(quick, scale_runs)
    out: dict[str, float] = {}
    for scale, prefix in (("seed", ""), ("small", "small/")):
        names = []
        for name, runs in scale_runs(quick)[scale].items():
            if "none_2m" not in runs:
                continue
            names.append(name)
            p = f"{prefix}{name}/"
            rows = window_rows(runs, p)
            out[f"{p}huge_pages/speedup"], out[f"{p}huge_pages/speedup/half_width"] = _huge_pages_speedup(runs)
            for key in ("kernel/speedup", "kernel_2m/speedup", "user_2m/speedup", "base_2m/walks_per_kref"):
                out[p + key] = rows[p + key]
                out[p + key + "/half_width"] = rows[p + key + "/half_width"]
            gap = out[f"{p}huge_pages/speedup"]
            out[f"{p}kernel/gap_closed"] = 100.0 * out[f"{p}kernel/speedup"] / gap if gap > 0 else 0.0
        out[f"{prefix}count/huge_pages_help"] = float(sum(out[f"{prefix}{n}/huge_pages/speedup"] >= 5.0
                                                          for n in names))
        _maxima(out, prefix, names, ["huge_pages/speedup", "kernel_2m/speedup", "user_2m/speedup",
                                     "kernel/gap_closed"])
    return out


def seed_scale(quick: bool) -> dict[str, float]:
    """What the seed shows beyond helper_effect, at its scale (`SCALES["seed"]`): Fig. 3.1's miss
    frequencies per 1,000 references, the user-mode helper with prefetches (Fig. 6.9), graph500
    under two stream stressors (Figs. 6.3, 6.4) and virtualized (Fig. 6.6), GAPBS BC, and the CSR
    BFS on Graph500's graph (`CSR`) under graph500_csr/."""
    prefetch_runs(quick, scale_runs, pv_runs)
    out = _scale_rows(quick, "seed", "")
    names = [n for n, *_ in SCALES["seed"]]
    others = [n for n in names if n != "graph500_bfs"]
    out["others/min/base/data_dram_per_kref"] = min(out[f"{n}/base/data_dram_per_kref"] for n in others)
    out.update(window_rows(csr_runs(quick), "graph500_csr/"))
    out.update(pv_rows(quick))
    names += list(PV_PLAN)
    for setting in ("stream", "virt"):
        for mode in ("kernel", "user"):
            out[f"{setting}/max/{mode}/speedup"] = max(
                out[f"{n}/{setting}/{mode}/speedup"] for n in names if f"{n}/{setting}/{mode}/speedup" in out)
    return out


def pv_runs(quick: bool) -> dict[str, dict[str, list[dict[str, float]]]]:
    """{workload: {variant: window sums}} of `PV_PLAN` in `pv_windows` windows: the seed-scale
    workloads (`SCALES["seed"]`, `STANDINS`) under stream pressure and virtualized."""
    specs = {n: (q if quick else f, r) for (n, f, r), (_, q, _) in
             zip(SCALES["seed"] + STANDINS, [_quick_of(n) for n, *_ in SCALES["seed"] + STANDINS])}
    return {name: _plan_runs(quick, "seed_pv", name, *specs[name], k=pv_windows(name, quick)) for name in PV_PLAN}


def _quick_of(name: str) -> tuple[str, str, str]:
    return next(w for w in QUICK_SCALE + QUICK_STANDINS if w[0] == name)


def pv_rows(quick: bool) -> dict[str, float]:
    """`pv_runs`' rows under `<workload>/stream/...` and `<workload>/virt/...` (`window_rows`)."""
    out: dict[str, float] = {}
    for name, runs in pv_runs(quick).items():
        out.update(window_rows(runs, f"{name}/"))
    return out


def standin_runs(quick: bool) -> dict[str, dict[str, list[dict[str, float]]]]:
    """{stand-in: {variant: window sums}} of `STANDINS` (`PLAN[("seed", name)]`), and of
    Canneal's netlist reading (`CANNEAL_READ`, under "canneal_read")."""
    out = {name: _plan_runs(quick, "seed", name, small if quick else full, region)
           for (name, full, region), (_, small, _) in zip(STANDINS, QUICK_STANDINS)}
    out["canneal_read"] = _plan_runs(quick, "seed", "canneal_read", CANNEAL_READ[quick], "elements")
    return out


def _canneal_whole(out: dict[str, float], anneal: dict[str, list[dict[str, float]]],
                   read: dict[str, list[dict[str, float]]], quick: bool) -> None:
    """Canneal's whole run, as the seed times it (§5.3): the reading's references at its
    windows' cycles a reference (no helper: §4.1) plus the seed's 15,000 temperature steps of
    the annealer's at theirs. The speed-up rows become the whole run's; the annealer's alone
    stay under `canneal/anneal/`, the reading's under `canneal/read/`."""
    spec = next(w for w in (QUICK_STANDINS if quick else STANDINS) if w[0] == "canneal")[1]
    steps = int(re.search(r"temp_steps=(\d+)", spec).group(1))
    refs_read = float(measured_span(CANNEAL_READ[quick]))
    refs_anneal = float(measured_span(spec)) * (CANNEAL_SEED_STEPS if not quick else steps) / steps

    def cpr(ws: list[dict[str, float]]) -> tuple[float, float]:
        return ratio_estimate([w["cycles"] for w in ws], [w["references"] for w in ws])

    def time(v: str) -> tuple[float, float, float, float]:
        (a, ha), (r, hr) = cpr(anneal[v]), cpr(read["none_2m" if v == "none_2m" else "none"])
        return refs_anneal * a, refs_anneal * ha, refs_read * r, refs_read * hr

    base = time("none")
    t0 = base[0] + base[2]
    out["canneal/read/share"] = 100.0 * base[2] / t0
    out["canneal/read/base/cycles_per_ref"] = cpr(read["none"])[0]
    out["canneal/read/huge_pages/speedup"] = 100.0 * (cpr(read["none"])[0] / cpr(read["none_2m"])[0] - 1.0)
    for v, key in (("kernel", "kernel"), ("user", "user"), ("none_2m", "huge_pages")):
        out[f"canneal/anneal/{key}/speedup"] = out[f"canneal/{key}/speedup"]
        out[f"canneal/anneal/{key}/speedup/half_width"] = out[f"canneal/{key}/speedup/half_width"]
        t = time(v)
        out[f"canneal/{key}/speedup"] = 100.0 * (t0 / (t[0] + t[2]) - 1.0)
        # The annealer's and the reading's intervals, each scaled to its share of the time.
        rel = [(base[1] + t[1]) / (t[0] + t[2])]
        if v == "none_2m":
            rel.append((base[3] + t[3]) / (t[0] + t[2]))
        out[f"canneal/{key}/speedup/half_width"] = 100.0 * t0 / (t[0] + t[2]) * sum(x * x for x in rel) ** 0.5


def standins(quick: bool) -> dict[str, float]:
    """Seed 001's Canneal and LibLinear (§5.2, §6.1.1) at Table 5.2's footprints (`STANDINS`), in
    the windows of `window_sums`: each one's rows as `window_rows` gives them (no helper, kernel
    and user mode, 4 KiB pages; Canneal's no-helper run with 2 MiB pages under `base_2m/`) and
    Canneal's speed-up from 2 MiB pages."""
    prefetch_runs(quick, standin_runs)
    out: dict[str, float] = {}
    runs_of = standin_runs(quick)
    read = runs_of.pop("canneal_read")
    for name, runs in runs_of.items():
        out.update(window_rows(runs, f"{name}/"))
        if "none_2m" in runs:
            out[f"{name}/huge_pages/speedup"], out[f"{name}/huge_pages/speedup/half_width"] = (
                _huge_pages_speedup(runs))
    _canneal_whole(out, runs_of["canneal"], read, quick)
    return out


def placement_at_scale(quick: bool) -> dict[str, float]:
    """placement (§4.4.5, Figs. 4.4, 4.5, 6.8) on the seed-scale Graph500 in at_scale's windows
    (`placement_runs`): the helper on another core of the CCX (at_scale's runs, rows ccx/...), on
    the SMT sibling (smt/...) and on another CCX (other_ccx/...), kernel and user modes, each
    against its own machine's baseline; every row with its 95% interval (`window_rows`)."""
    prefetch_runs(quick, placement_runs)
    out: dict[str, float] = {}
    for key, v in window_rows(placement_runs(quick)).items():
        out[key if key.startswith(("smt/", "other_ccx/")) else f"ccx/{key}"] = v
    return out


def throttle_runs(quick: bool) -> dict[str, list[dict[str, float]]]:
    """{variant: window sums} of `PLAN[("seed", "liblinear_throttle")]` on the LibLinear stand-in
    (`STANDINS`): the throttled helpers of throttle_at_scale, every run with `THROTTLE_WARM`'s
    warm-up (its own baseline and unthrottled helpers, not standins')."""
    _, full, region = next(w for w in STANDINS if w[0] == "liblinear")
    small = next(w[1] for w in QUICK_STANDINS if w[0] == "liblinear")
    return _plan_runs(quick, "seed", "liblinear_throttle", small if quick else full, region,
                      warm=THROTTLE_WARM[quick])


def throttle_at_scale(quick: bool) -> dict[str, float]:
    """throttle (§4.4.4, §6.3.3, Figs. 6.10, 6.11) on the LibLinear stand-in at Table 5.2's shape
    (`STANDINS`) in standins' windows: each mode's speedup at every NOP count and sleep length of
    `THROTTLE` (rows user/nops100, kernel/sleep10, ...; with `.../dram_cut` and the 95% intervals),
    and its spread over each parameter's values."""
    prefetch_runs(quick, throttle_runs)
    rows = window_rows(throttle_runs(quick))
    out = {k: v for k, v in rows.items() if k.startswith("base/")}
    for mode in ("user", "kernel"):
        for _, label, spread, values in THROTTLE:
            for v in values:
                src = ROLES[_throttled(mode, label, v)][1]
                out[f"{mode}/{label}{v}"] = rows[f"{src}/speedup"]
                for suffix in ("speedup/half_width", "dram_cut", "dram_cut/half_width"):
                    out[f"{mode}/{label}{v}/{suffix}"] = rows[f"{src}/{suffix}"]
            vals = [out[f"{mode}/{label}{v}"] for v in values]
            out[f"{mode}/{spread}"] = max(vals) - min(vals)
    return out


def sensitivity_runs(quick: bool) -> dict[str, dict[str, list[dict[str, float]]]]:
    """{plan: {variant: window sums}} of `SENSITIVITY` (`PLAN[("seed_fig", plan)]`), each workload
    at its seed-scale footprint (`SCALES["seed"]`, `STANDINS`)."""
    out: dict[str, dict[str, list[dict[str, float]]]] = {}
    for plan, name, _, windows in SENSITIVITY:
        _, wl, region = next(w for w in SCALES["seed"] + STANDINS if w[0] == name)
        wl = wl if not quick else _quick_of(name)[1]
        out[plan] = _plan_runs(quick, "seed_fig", plan, wl, region, pv_windows(name, quick) if windows == "pv" else None)
    return out


def sensitivity_at_scale(quick: bool) -> dict[str, float]:
    """The claims of §6.1.2-§6.3.2 no other table reads (`SENSITIVITY`): BC under two stream
    stressors with NOPs and with sleeps (Fig. 6.5), the kernel-mode helper with sleeps virtualized
    under the same pressure (Fig. 6.7: the hash join and LibLinear), LibLinear's user-mode helper
    with prefetches (Fig. 6.9), BC's user-mode helper on the SMT sibling (§6.3.1); with BC's
    at_scale rows its SMT and prefetch rows are compared with, and Fig. 6.6's virtualized rows of
    graph500 (at_scale's runs), the hash join and LibLinear (seed_scale's) with the hash join's
    native rows (`window_rows`, every row with its 95% interval; the runs at_scale and seed_scale
    read are the same runs, made once). Keys
    `<workload>/<setting>/<mode>[/<throttle>]/speedup`."""
    prefetch_runs(quick, sensitivity_runs)
    out: dict[str, float] = {}
    for plan, runs in sensitivity_runs(quick).items():
        name = next(n for p, n, *_ in SENSITIVITY if p == plan)
        out.update(window_rows(runs, f"{name}/"))
    out["virt/others/max/user/speedup"] = max(out[f"{n}/virt/user/speedup"] for n in ("hash_join", "liblinear"))
    return out
