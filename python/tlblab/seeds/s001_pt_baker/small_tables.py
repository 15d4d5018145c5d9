"""Seed 001's tables at small footprints (`WORKLOADS`): walk locality (Figs. 3.2, 3.3), the
helper's effect (Figs. 6.1, 6.2), throttling (Figs. 6.10, 6.11), placement (Figs. 4.4, 4.5,
6.8), pressure and virtualization (Figs. 6.3-6.7), and the host ptwarm prediction. Their runs
are `runs.py`'s; `experiments.py` re-exports these functions for the reproductions."""

from __future__ import annotations

from pathlib import Path

import tlblab
from tlblab.seeds.s001_pt_baker.runs import (
    AppRun, THROTTLE, WORKLOADS, _app, _quick, _run, app_cycles, dram_share, dram_walk_refs, machine,
    placement_machine)


def _pressure(kind: str) -> str:
    return f"pt_baker:mode=none,pressure={kind}" if kind not in ("", "none") else ""


def _workloads(quick: bool):
    _quick[0] = quick
    for name, q, f, region in WORKLOADS:
        yield name, (q if quick else f), region


def walk_locality(quick: bool) -> dict[str, float]:
    """Figs. 3.2 and 3.3: where the application's walk references are served, no helper: native,
    under one stress-ng `cache` stressor, under two `stream` stressors, virtualized."""
    out: dict[str, float] = {}
    settings = {
        "native": (machine(), None),
        "cache": (machine(), "pt_baker:mode=none,pressure=cache"),
        "stream": (machine(), "pt_baker:mode=none,pressure=stream"),
        "virt": (machine(virt=True), None),
    }
    for setting, (m, tech) in settings.items():
        shares = []
        for name, wl, _ in _workloads(quick):
            r = _run(m, wl, tech)
            src = _app(r)["walk_refs_by_source"]
            total = sum(src) or 1
            for level, n in zip(r.sources, src):
                out[f"{setting}/{name}/{level}"] = 100.0 * n / total
            shares.append(dram_share(r))
        out[f"{setting}/avg"] = sum(shares) / len(shares)
        out[f"{setting}/max"] = max(shares)
    return out


def _effect(m, wl: str, region: str, tech: str, base: AppRun, pressure: str = "") -> dict[str, float]:
    spec = f"pt_baker:{tech},region={region}" + (f",pressure={pressure}" if pressure else "")
    r = _run(m, wl, spec)
    per_ref = lambda x: dram_walk_refs(x) / max(1, _app(x)["references"])  # noqa: E731
    b_dram, r_dram = per_ref(base), per_ref(r)
    return {
        "dram_cut": 100.0 * (b_dram - r_dram) / b_dram if b_dram else 0.0,
        "speedup": 100.0 * (app_cycles(base) / app_cycles(r) - 1.0),
    }


def helper_effect(quick: bool) -> dict[str, float]:
    """Figs. 6.1 and 6.2 (and the abstract): the helper on another core of the CCX, kernel and
    user modes, stride 8: the cut in DRAM walk references and the speedup, per workload."""
    out: dict[str, float] = {}
    m = machine()
    modes = {"kernel": "mode=kernel,stride=8", "user": "mode=user,stride=8"}
    for name, wl, region in _workloads(quick):
        base = _run(m, wl, None)
        out[f"{name}/base/dram_share"] = dram_share(base)
        for mode, tech in modes.items():
            e = _effect(m, wl, region, tech, base)
            out[f"{name}/{mode}/dram_cut"] = e["dram_cut"]
            out[f"{name}/{mode}/speedup"] = e["speedup"]
    for mode in modes:
        out[f"max/{mode}/dram_cut"] = max(out[f"{n}/{mode}/dram_cut"] for n, *_ in WORKLOADS)
        out[f"max/{mode}/speedup"] = max(out[f"{n}/{mode}/speedup"] for n, *_ in WORKLOADS)
    return out


def throttle(quick: bool) -> dict[str, float]:
    """Figs. 6.10 and 6.11: speedup against the NOP count and the sleep length, user and kernel
    modes, on one workload (the seed used LibLinear; graph500_bfs here)."""
    out: dict[str, float] = {}
    m = machine()
    name, wl, region = next((n, w, r) for n, w, r in _workloads(quick) if n == "graph500_bfs")
    base = _run(m, wl, None)
    for mode in ("user", "kernel"):
        for param, label, spread, values in THROTTLE:
            vals = []
            for v in values:
                speedup = _effect(m, wl, region, f"mode={mode},stride=8,{param}={v}", base)["speedup"]
                out[f"{mode}/{label}{v}"] = speedup
                vals.append(speedup)
            out[f"{mode}/{spread}"] = max(vals) - min(vals)
    return out


def placement(quick: bool) -> dict[str, float]:
    """§4.4.5, Figs. 4.4, 4.5 and 6.8: the helper on the SMT sibling, on another core of the CCX,
    on another CCX (nothing shared), kernel and user modes, on graph500_bfs."""
    out: dict[str, float] = {}
    name, wl, region = next((n, w, r) for n, w, r in _workloads(quick) if n == "graph500_bfs")
    for place in ("ccx", "other_ccx", "smt"):
        m = placement_machine(place)
        base = _run(m, wl, None)
        for mode in ("kernel", "user"):
            e = _effect(m, wl, region, f"mode={mode},stride=8,place={place}", base)
            out[f"{place}/{mode}/dram_cut"] = e["dram_cut"]
            out[f"{place}/{mode}/speedup"] = e["speedup"]
    return out


def pressure_virt(quick: bool) -> dict[str, float]:
    """Figs. 6.3, 6.4 and 6.6: the kernel- and user-mode helper's speedup under two stream
    stressors (native) and in the virtualized machine, with the native numbers beside them."""
    out: dict[str, float] = {}
    for setting, m, pressure in (("native", machine(), ""), ("stream", machine(), "stream"),
                                 ("virt", machine(virt=True), "")):
        for name, wl, region in _workloads(quick):
            if name == "gups":
                continue
            base = _run(m, wl, _pressure(pressure) or None)
            for mode in ("kernel", "user"):
                e = _effect(m, wl, region, f"mode={mode},stride=8", base, pressure)
                out[f"{setting}/{name}/{mode}/speedup"] = e["speedup"]
                out[f"{setting}/{name}/{mode}/dram_cut"] = e["dram_cut"]
        for mode in ("kernel", "user"):
            out[f"{setting}/max/{mode}/speedup"] = max(
                v for k, v in out.items() if k.startswith(f"{setting}/") and k.endswith(f"/{mode}/speedup")
                and "/max/" not in k)
    return out


# The host-like preset `tlblab probe` and sysfs gave on the development VM (docs/data/).
# Package data (docs/data/host-xeon-2vcpu.toml links to it), so an installed wheel has it too.
HOST_PRESET = str(Path(__file__).resolve().parents[2] / "data" / "host-xeon-2vcpu.toml")


def host_ptwarm_prediction(machine: str = HOST_PRESET, size_mib: int = 1024, passes: int = 3) -> dict[str, float]:
    """The model's prediction for `tlblab host ptwarm --quick`'s dependent chase on a host-like
    preset: `tlblab.host.ptwarm_model.ptwarm_prediction` (the host tool's `--predict` runs the same
    on the probe's machine file)."""
    from tlblab.host.ptwarm_model import ptwarm_prediction

    return ptwarm_prediction(machine, size_mib, passes)
