"""Seed 001's Fig. 6.12 (§6.4): the package's power with the PT-Baker helper, by the energy model.

The seed measured the 5900X package's power (perf stat's `power/energy-pkg/`, Table 5.3) while
LibLinear, GAPBS BC and the hash join ran with the helper in four configurations: kernel mode
with NOPs (KWN), kernel mode with sleeps (KWS), user mode with NOPs (UWN), user mode with sleeps
(UWS). Here each is the same workload at Table 5.2's footprint in the windows of seed 001's
other reproductions (experiments.py: `window_spec`, its fast-forward, warm-up and companions),
and the power is `tlblab.energy`'s package power (the DRAM devices left out, as the package's
energy counter leaves them out) over every thread's counters in each window's measured part
(the application's, the helper's), against the same windows with no helper.

Power is a sum over all threads, so the windows here keep every thread's counters (experiments'
`window_sums` keeps the application's alone); the runs are their own, made in this process.
"""

from __future__ import annotations

from typing import Any

import tlblab
from tlblab.energy import energy_of, memory_lines, sum_units
from tlblab.seeds.s001_pt_baker import experiments as ex
from tlblab.seeds.s001_pt_baker.run_seconds import _write_seconds, run_costs
from tlblab.seeds.s001_pt_baker.runs import with_issue

# The workloads of Fig. 6.12 and the region the helper sweeps (experiments.py: LibLinear's
# stand-in from STANDINS, BC and the hash join from SCALES["seed"]), quick specs beside them.
WORKLOADS = ("liblinear", "gapbs_bc", "hash_join")
# The helper's throttles: the seed's text gives neither Fig. 6.12's NOP count nor its sleep
# length; 100 NOPs after each page and a 100 us sleep after each sweep are the middle values of
# its sensitivity runs (Figs. 6.10, 6.11: experiments.THROTTLE).
NOPS, SLEEP_US = 100, 100
VARIANTS = {
    "base": None,
    "KWN": f"pt_baker:mode=kernel,stride=8,region={{region}},nops={NOPS}",
    "KWS": f"pt_baker:mode=kernel,stride=8,region={{region}},sleep_us={SLEEP_US}",
    "UWN": f"pt_baker:mode=user,stride=8,region={{region}},nops={NOPS}",
    "UWS": f"pt_baker:mode=user,stride=8,region={{region}},sleep_us={SLEEP_US}",
}
# Windows per run: 2 at the full size (as the seed-scale runs under pressure and virtualized,
# experiments.PV_WINDOWS, to keep the runs few), the quick size's 3 otherwise.
K = {True: None, False: 2}


def _spec(name: str, quick: bool) -> tuple[str, str]:
    """(workload spec, swept region) of `name` at the full or quick size."""
    full = {n: (w, r) for n, w, r in ex.SCALES["seed"] + ex.STANDINS}
    small = {n: (w, r) for n, w, r in ex.QUICK_SCALE + ex.QUICK_STANDINS}
    return (small if quick else full)[name]


def window_energy(m: dict[str, Any], wl: str, technique: str | None, quick: bool,
                  k: int | None = None, warm: int | None = None) -> list[dict[str, float]]:
    """Each window's energy (joules) and time (seconds) over its measured part: the run of
    `ex.window_sums` (the same windows, units and companions), with every thread's counters of
    the units that lie wholly in a window's measured part summed (TLB lookups, cache accesses,
    walks, lines from memory; each thread's cycles its busy time) and the application's cycles
    as the window's time (it never sleeps; the helper does). `m` issues the program's
    instructions between its references (`with_issue`), as in `ex.window_sums`' runs. `warm`:
    each window's warm-up, if not `WINDOWS`' (`ex.window_spec`: the measured parts stay put)."""
    k0, warm0, take, unit = ex.WINDOWS[quick]
    k = k or k0
    warm = warm or warm0
    m = with_issue(m, wl)
    spec = ex.window_spec(wl, quick, k, ex.companion_warm(technique, quick, warm), warm)
    if technique is not None:
        technique += ",in_windows=1"  # its companions in the window phases only (COMPANION_WARM)
    with ex._graphs():
        s = tlblab.sample(m, spec, unit=unit, period=1, offset=0, head=0, technique=technique)
    period = warm + take
    windows: list[list[dict[str, Any]]] = [[] for _ in range(k)]
    pos = -(ex.population(wl) + warm)
    for th in s.threads:
        a = th.get(ex.APP)
        n = int(a["references"]) if a else 0
        w, q = divmod(pos, period)
        if a and n and pos >= 0 and w < k and q + n <= take:
            windows[w].append(th)
        pos += n
    if any(not units for units in windows):
        raise ValueError(f"{wl}: a window has no whole unit measured (units of {unit} references, windows of {take})")
    tlbs = [t["name"] for t in m["tlb"]]
    caches = [c["name"] for c in m.get("cache", [])]
    out = []
    for units in windows:
        threads: dict[str, list[dict[str, Any]]] = {}
        for th in units:
            for tid, counters in th.items():
                threads.setdefault(tid, []).append(counters)
        per_thread = {tid: sum_units(cs) for tid, cs in threads.items()}
        total = sum_units(per_thread.values())
        e = energy_of(
            m["energy"],
            tlb_accesses={name: lv["accesses"] for name, lv in zip(tlbs, total["tlb"])},
            cache_accesses={name: lv["accesses"] for name, lv in zip(caches, total.get("cache", []))},
            walks=int(total["walks"]),
            memory_lines=memory_lines(m, {"cache_levels": caches}, total),
            # One thread a core (the helper on core 1, PT-Baker's default placement); the
            # machine's other cores idle.
            busy_cycles=[t["cycles"] for t in per_thread.values()] + [0] * max(0, m["cores"] - len(per_thread)),
            cycles=per_thread[ex.APP]["cycles"],
            frequency_mhz=float(m["frequency_mhz"]),
        )
        out.append({"energy_j": e["energy_j"], "package_j": e["package_j"], "seconds": e["seconds"],
                    "app_references": per_thread[ex.APP]["references"],
                    **{f"{part}_j": j for part, j in e["parts"].items()}})
    return out


_RUNS: dict[tuple[Any, ...], list[dict[str, float]]] = {}


def _jobs(quick: bool) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """{run key: (workload, technique, quick, k)} of every run `power_runs` reads. LibLinear's keep
    `WINDOWS`' 2 M of warm-up, unlike its other native runs (`runs.SETTLED_WARM`): after 4 M every
    one of the 15 runs' package power was within its 95 % interval of the 2 M run's, the largest
    move LibLinear's UWS, 35.44 -> 35.49 W (+-0.68), its increase 66.73 -> 66.96 %; the others
    within 0.03 W (scripts/warmup_settle.py --set power, docs/lab/2026-12-01-issue86-seed001-warmups.md)."""
    out = {}
    for name in WORKLOADS:
        wl, region = _spec(name, quick)
        for variant, tech in VARIANTS.items():
            out[(quick, wl, variant)] = (wl, tech.format(region=region) if tech else None, quick, K[quick])
    return out


def _run_job(job: tuple[Any, ...]) -> list[dict[str, float]]:
    """One run of `_jobs` (module-level, so that a worker process can run it)."""
    wl, tech, quick, k = job
    return window_energy(ex.machine(), wl, tech, quick, k)


def power_runs(quick: bool) -> dict[str, dict[str, list[dict[str, float]]]]:
    """{workload: {variant: window energies}} for `WORKLOADS` x `VARIANTS`, each run once per
    process (`prepare` may have made them)."""
    out: dict[str, dict[str, list[dict[str, float]]]] = {}
    jobs = _jobs(quick)
    for (_, wl, variant), job in jobs.items():
        key = (quick, wl, variant)
        if key not in _RUNS:
            _RUNS[key] = _run_job(job)
        name = next(n for n in WORKLOADS if _spec(n, quick)[0] == wl)
        out.setdefault(name, {})[variant] = _RUNS[key]
    return out


def prepare(quick: bool, experiments: list[str], workers: int | None = None,
            progress: Any = None) -> dict[str, float]:
    """Makes the runs of `power_runs` before `fig6_12` reads them (`tlblab.reproduce.prepare`
    calls it): in two worker processes at the full size, as experiments.prefetch_runs makes the
    other reproductions' (each run deterministic and independent, so the numbers are those of
    the runs made in turn; a seed-scale run's simulated memory takes up to about 5.6 GB of the
    host's), in this process at the quick size. Returns `runs` (how many were made) and
    `seconds` (wall)."""
    import multiprocessing
    import os
    import signal
    import time
    from concurrent.futures import ProcessPoolExecutor, as_completed

    t0 = time.monotonic()
    jobs = {key: job for key, job in _jobs(quick).items() if key not in _RUNS}
    workers = workers if workers is not None else (1 if quick else min(2, os.cpu_count() or 1))
    if workers <= 1 or len(jobs) <= 1:
        for key, job in jobs.items():
            _RUNS[key] = _run_job(job)
        return {"runs": len(jobs), "seconds": time.monotonic() - t0}
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        # Ctrl-C reaches this process alone (the workers start with SIGINT blocked), which stops them.
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            futures = {pool.submit(_run_job, job): key for key, job in jobs.items()}
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        try:
            for n, f in enumerate(as_completed(futures), 1):
                key = futures[f]
                _RUNS[key] = f.result()
                if progress:
                    progress(f"run {n}/{len(jobs)} made: {key[1].split(',')[0]}, {key[2]}")
        except BaseException:
            for proc in list((getattr(pool, "_processes", None) or {}).values()):
                proc.terminate()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    return {"runs": len(jobs), "seconds": time.monotonic() - t0}


# `tlblab reproduce`'s way to the runs `prepare` makes (experiments.py's `plan`, the same protocol).
def plan(quick: bool, experiments: list[str]) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    return {key: job for key, job in _jobs(quick).items() if key not in _RUNS}


def adopt(made: dict[tuple[Any, ...], tuple[tuple[Any, ...], Any, float]]) -> None:
    """Keeps the runs made in other processes, and their seconds for the next run's order."""
    _RUNS.update({key: result for key, (_, result, _) in made.items()})
    if made:
        _write_seconds({k: job for k, (job, _, _) in made.items()}, {k: s for k, (_, _, s) in made.items()})


def describe(job: tuple[Any, ...]) -> str:
    """A run in a few words: its workload, technique and windows."""
    wl, tech, _, k = job
    return f"{wl}, {tech or 'no technique'}, {k or 'standard'} windows (power)"


# `tlblab reproduce` orders these runs by their seconds last time, as experiments.py's
# (run_seconds.py: the same file, keyed by the job; a power job is never a runs.py job).
make, costs = _run_job, run_costs


def fig6_12(quick: bool) -> dict[str, float]:
    """Fig. 6.12: each workload's package power with no helper and in KWN, KWS, UWN and UWS
    (watts, the windows' package energy over their time, with the 95% interval of the ratio estimator), each
    helper's increase over no helper (%), and their averages and maxima per mode and per
    throttle; ours-only: each part's share of the no-helper energy (DRAM included) and the energy
    per 1,000 application references (DRAM included)."""
    out: dict[str, float] = {}
    for name, runs in power_runs(quick).items():
        for variant, ws in runs.items():
            # The package's power, as perf's power/energy-pkg/ (RAPL's package domain) measures it.
            p, hw = ex.ratio_estimate([w["package_j"] for w in ws], [w["seconds"] for w in ws])
            out[f"{name}/{variant}/power_w"] = p
            out[f"{name}/{variant}/power_w/half_width"] = hw
            out[f"{name}/{variant}/energy_uj_per_kref"] = 1e9 * sum(w["energy_j"] for w in ws) / max(
                1, sum(w["app_references"] for w in ws))
        base = runs["base"]
        for part in ("tlb", "cache", "walk", "dram", "core_active", "core_idle", "uncore"):
            out[f"{name}/base/share/{part}"] = 100.0 * sum(w[f"{part}_j"] for w in base) / sum(
                w["energy_j"] for w in base)
        for variant in VARIANTS:
            if variant != "base":
                out[f"{name}/{variant}/increase"] = 100.0 * (
                    out[f"{name}/{variant}/power_w"] / out[f"{name}/base/power_w"] - 1.0)
    groups = {"kernel": ("KWN", "KWS"), "user": ("UWN", "UWS"), "kernel/nops": ("KWN",),
              "kernel/sleep": ("KWS",), "user/nops": ("UWN",), "user/sleep": ("UWS",)}
    for group, variants in groups.items():
        vals = [out[f"{n}/{v}/increase"] for n in WORKLOADS for v in variants]
        out[f"{group}/avg_increase"] = sum(vals) / len(vals)
        out[f"{group}/max_increase"] = max(vals)
    return out
