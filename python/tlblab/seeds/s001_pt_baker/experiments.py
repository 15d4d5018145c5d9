"""Seed 001 (Chatzopoulos 2024, PT-Baker): the experiments behind its reproductions.

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

from pathlib import Path

from typing import Any

import tlblab

APP = "0"

# (name, workload spec quick, workload spec full, the region PT-Baker sweeps: seed §5.2)
WORKLOADS = [
    ("gups", "gups:log2_words=28,updates=150000", "gups:log2_words=30,updates=1000000", "table"),
    ("graph500_bfs", "graph500_bfs:scale=17,edge_factor=16,roots=1",
     "graph500_bfs:scale=20,edge_factor=16,roots=1", "adjacency"),
    ("hash_join", "hash_join:buckets=67108864,inner_rows=150000,outer_rows=150000",
     "hash_join:buckets=268435456,inner_rows=1000000,outer_rows=1000000", "hashtable"),
]

# References per run (the application's prefix; a user-mode helper's own references count
# against it too, so every comparison is per application reference).
LIMIT = {True: 400_000, False: 3_000_000}
_quick = [True]


def machine(cores: int = 4, virt: bool = False, ccx_cores: int = 0) -> dict[str, Any]:
    """zen3 (or zen3-virt) with `cores` cores; `ccx_cores` > 0 splits them into CCXs of that
    many cores (one L3 each, seed 001 Fig. 4.5)."""
    m = tlblab.machine_config("zen3-virt" if virt else "zen3")
    m["cores"] = cores
    m["name"] = m["name"] + f"-{cores}c"
    if ccx_cores:
        for c in m["cache"] if "cache" in m else m["caches"]:
            if c.get("shared"):
                c["cores_per_instance"] = ccx_cores
    return m


def _app(r: tlblab.Result) -> dict[str, Any]:
    return r.stats["threads"][APP]


def dram_share(r: tlblab.Result) -> float:
    """Percent of the application's walk references served by memory (seed Figs. 3.2-3.3)."""
    src = _app(r)["walk_refs_by_source"]
    total = sum(src)
    return 100.0 * src[-1] / total if total else 0.0


def dram_walk_refs(r: tlblab.Result) -> int:
    return int(_app(r)["walk_refs_by_source"][-1])


def app_cycles(r: tlblab.Result) -> float:
    """The application's cycles per reference of its own."""
    a = _app(r)
    return a["cycles"] / max(1, a["references"])


def _run(m, workload: str, technique: str | None) -> tlblab.Result:
    return tlblab.simulate(m, workload, technique=technique, max_references=LIMIT[_quick[0]])


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
            for level, n in zip(r.stats["sources"], src):
                out[f"{setting}/{name}/{level}"] = 100.0 * n / total
            shares.append(dram_share(r))
        out[f"{setting}/avg"] = sum(shares) / len(shares)
        out[f"{setting}/max"] = max(shares)
    return out


def _effect(m, wl: str, region: str, tech: str, base: tlblab.Result, pressure: str = "") -> dict[str, float]:
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
    # (the helper's parameter, its row label, the spread's label, the values tried)
    knobs = [("nops", "nops", "nop_spread", [0, 100, 1000]),
             ("sleep_us", "sleep", "sleep_spread", [10, 100, 1000])]
    for mode in ("user", "kernel"):
        for param, label, spread, values in knobs:
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
    cases = {
        "ccx": machine(cores=2, ccx_cores=0),
        "other_ccx": machine(cores=2, ccx_cores=1),
    }
    smt = machine(cores=2)
    smt["threads_per_core"] = 2
    cases["smt"] = smt
    for place, m in cases.items():
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
HOST_PRESET = str(Path(__file__).resolve().parents[4] / "docs" / "data" / "host-xeon-2vcpu.toml")


def host_ptwarm_prediction(machine: str = HOST_PRESET, size_mib: int = 1024, passes: int = 3) -> dict[str, float]:
    """The model's prediction for `tlblab host ptwarm --quick`'s dependent chase (ptwarm_bench `dep`:
    a random cyclic chase over every 4 KiB page of a `size_mib` region, one line per page) on a
    host-like preset: the application's cycles per access in the last pass (the first ones populate
    the region and fill the caches: the difference of two runs cut `passes - 1` and `passes` passes
    in), with no helper and with the helper as `touch` (user mode, a load every 8 pages), `prefetch`
    and `mincore` (kernel mode: the kernel reads every PTE, §4.3; stride 1 as mincore reads them all).
    Returns {variant: cycles per access, variant/change_pct: the speedup over none in percent}."""
    pages = size_mib * 256
    wl = lambda n: f"chase:pages={pages},accesses={n * pages},stride=4096"  # noqa: E731
    # `chase` announces no Region: the helper is given the chase's range (its default base).
    rng = f"range=0x60000000:{size_mib}M"
    variants = {
        "none": None,
        "touch": f"pt_baker:mode=user,stride=8,{rng}",
        "prefetch": f"pt_baker:mode=prefetch,stride=8,{rng}",
        "mincore": f"pt_baker:mode=kernel,stride=1,{rng}",
    }
    out: dict[str, float] = {}
    for name, tech in variants.items():
        a = _app(tlblab.simulate(machine, wl(passes - 1), technique=tech))
        b = _app(tlblab.simulate(machine, wl(passes), technique=tech))
        out[name] = (b["cycles"] - a["cycles"]) / (b["references"] - a["references"])
        out[f"{name}/dram_walk_refs_per_access"] = (
            (b["walk_refs_by_source"][-1] - a["walk_refs_by_source"][-1]) / (b["references"] - a["references"]))
        out[f"{name}/dram_data_per_access"] = (
            (b["data_by_source"][-1] - a["data_by_source"][-1]) / (b["references"] - a["references"]))
    for name in variants:
        out[f"{name}/change_pct"] = 100.0 * (out["none"] / out[name] - 1.0)
    return out


# at_scale (issue 59): footprints nearer Table 5.2's, measured in the seed's steady state from one
# checkpoint per workload where its region of interest begins (after the population and, for
# graph500, the graph's construction, which the workload does before its first record).
# (name, quick spec, full spec, the region PT-Baker sweeps: seed §5.2). Full: gups' table is
# 2^32 words = 32 GiB, Table 5.2's 32 GB; graph500 scale 22 (adjacency 2^22 x 16 x 2 x 8 B =
# 1 GiB; the seed's scale 24 is 4.25 GB, Table 5.2, whose R-MAT graph the workload builds in the
# host's memory first: 268 M edges, past what this 2-core VM builds in the run's time); the
# hash join's bucket array 2^28 x 8 B = 2 GiB (the seed's table: 1e8 buckets; its inner table of
# 9e8 rows is 14 GB of host memory the workload would hold, so 2^24 rows here).
AT_SCALE = [
    ("gups", "gups:log2_words=22,updates=100000000,populate=1",
     "gups:log2_words=32,updates=100000000,populate=1", "table"),
    ("graph500_bfs", "graph500_bfs:scale=14,edge_factor=16,roots=64,populate=1",
     "graph500_bfs:scale=22,edge_factor=16,roots=64,populate=1", "adjacency"),
    ("hash_join", "hash_join:buckets=1048576,inner_rows=1048576,outer_rows=1048576,populate=1",
     "hash_join:buckets=268435456,inner_rows=16777216,outer_rows=16777216,populate=1", "hashtable"),
]

# References run after the checkpoint (the measured window; a user-mode helper's own loads count
# in it, so every comparison is per application reference, as in helper_effect).
AT_SCALE_WINDOW = {True: 100_000, False: 3_000_000}


def first_search_span(wl: str, directory: str = "out/checkpoints") -> tuple[int, int]:
    """(population, first search): the references of graph500 spec `wl`'s population (its
    warm-up) and of its first search (parent reset and BFS), from a TLB-only run of the same
    spec with one root (the record stream depends on neither the machine nor the mode, and a
    search's records on nothing after it); cached beside the checkpoints, as the graph's
    construction alone takes minutes at scale 22."""
    import json
    import re

    from tlblab.files import atomic_write, content_digest

    one = re.sub(r"roots=\d+", "roots=1", wl)
    path = Path(directory) / f"{content_digest('first_search_span', one)}.json"
    if not path.is_file():
        r = tlblab.simulate("zen3", one, tlb_only=True)
        span = {"workload": one, "population": int(r.stats["warmup"]["references"]),
                "first_search": int(r.total["references"])}
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(span) + "\n")
    span = json.loads(path.read_text())
    return int(span["population"]), int(span["first_search"])


def at_scale_point(wl: str) -> int | str:
    """Where the measured window of `wl` begins: the region of interest's start (after the
    population), except for graph500, whose first search starts from one vertex and spends its
    first millions of references on a narrow frontier (short runs of consecutive adjacency
    pages, few walks): there it is the middle of the second search (half a first search's
    length into it; at scale 14 the second search is exactly as long as the first), in the
    wide levels of a BFS whose page tables the first search has already walked (seed 001 times
    64 searches, §5.2). The run pauses at the batch boundary at or after it."""
    if not wl.startswith("graph500_bfs:"):
        return "roi"
    population, first = first_search_span(wl)
    return population + first + first // 2


# The at_scale windows run so far in this process: huge_pages reads at_scale's 4 KiB runs
# again, and reproduce 001 runs both in one process. Key: (quick, page size, workload, variant).
_AT_SCALE_RUNS: dict[tuple[bool, str, str, str], dict[str, Any]] = {}

AT_SCALE_MODES = {"none": None, "kernel": "mode=kernel,stride=8", "user": "mode=user,stride=8"}


def at_scale_windows(quick: bool, page_size: str = "4KiB") -> dict[str, dict[str, dict[str, Any]]]:
    """{workload: {variant: numbers}} for the windows of `AT_SCALE` with every page `page_size`:
    per workload one checkpoint where the measured window begins (`at_scale_point`;
    `tlblab.checkpoint`, cached under out/checkpoints), then the baseline ("none") and the kernel-
    and user-mode helper (stride 8, core 1) from it over the same window. Each variant's numbers:
    the application's cycles per reference, DRAM walk references per reference, DRAM share of
    its walk references, walks per 1,000 references, references, and the window's start."""
    m = machine()
    if page_size != "4KiB":
        m["page_table"]["page_size"] = page_size
        m["name"] = m["name"] + f"-{page_size}"
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for name, q, f, region in AT_SCALE:
        wl = q if quick else f
        todo = [v for v in AT_SCALE_MODES if (quick, page_size, wl, v) not in _AT_SCALE_RUNS]
        if todo:
            path = tlblab.checkpoint(m, wl, at=at_scale_point(wl))
            start = tlblab.checkpoint_info(path)["references"]
            for variant in todo:
                tech = AT_SCALE_MODES[variant]
                r = tlblab.simulate(m, wl, from_checkpoint=path, max_references=start + AT_SCALE_WINDOW[quick],
                                    technique=f"pt_baker:{tech},region={region}" if tech else None)
                a = _app(r)
                _AT_SCALE_RUNS[(quick, page_size, wl, variant)] = {
                    "cycles_per_ref": app_cycles(r),
                    "dram_walk_refs_per_ref": dram_walk_refs(r) / max(1, a["references"]),
                    "dram_share": dram_share(r),
                    "walks_per_kref": 1000.0 * a["walks"] / max(1, a["references"]),
                    "references": a["references"], "window_start": start}
        out[name] = {v: _AT_SCALE_RUNS[(quick, page_size, wl, v)] for v in AT_SCALE_MODES}
    return out


def at_scale(quick: bool) -> dict[str, float]:
    """helper_effect at the footprints of `AT_SCALE` (`at_scale_windows`, 4 KiB pages)."""
    out: dict[str, float] = {}
    for name, runs in at_scale_windows(quick).items():
        base = runs["none"]
        out[f"{name}/window_start"] = base["window_start"]
        out[f"{name}/base/dram_share"] = base["dram_share"]
        out[f"{name}/base/walks_per_kref"] = base["walks_per_kref"]
        out[f"{name}/base/app_references"] = base["references"]
        for mode in ("kernel", "user"):
            r = runs[mode]
            b_dram, r_dram = base["dram_walk_refs_per_ref"], r["dram_walk_refs_per_ref"]
            out[f"{name}/{mode}/dram_cut"] = 100.0 * (b_dram - r_dram) / b_dram if b_dram else 0.0
            out[f"{name}/{mode}/speedup"] = 100.0 * (base["cycles_per_ref"] / r["cycles_per_ref"] - 1.0)
    names = [n for n, *_ in AT_SCALE]
    out["max/base/dram_share"] = max(out[f"{n}/base/dram_share"] for n in names)
    for mode in ("kernel", "user"):
        out[f"max/{mode}/dram_cut"] = max(out[f"{n}/{mode}/dram_cut"] for n in names)
        out[f"max/{mode}/speedup"] = max(out[f"{n}/{mode}/speedup"] for n in names)
    return out


def huge_pages(quick: bool) -> dict[str, float]:
    """at_scale's windows with 4 KiB and with 2 MiB pages (`at_scale_windows`): the speed-up of
    2 MiB pages with no helper, each helper's speed-up with 2 MiB pages, and the share of the
    4 KiB-to-2 MiB speed-up the kernel-mode helper gives with 4 KiB pages."""
    out: dict[str, float] = {}
    small, huge = at_scale_windows(quick), at_scale_windows(quick, "2MiB")
    speed = lambda a, b: 100.0 * (a["cycles_per_ref"] / b["cycles_per_ref"] - 1.0)  # noqa: E731
    for name in small:
        s, h = small[name], huge[name]
        out[f"{name}/huge_pages/speedup"] = speed(s["none"], h["none"])
        out[f"{name}/kernel/speedup"] = speed(s["none"], s["kernel"])
        for mode in ("kernel", "user"):
            out[f"{name}/{mode}_2m/speedup"] = speed(h["none"], h[mode])
        out[f"{name}/base_2m/walks_per_kref"] = h["none"]["walks_per_kref"]
        gap = out[f"{name}/huge_pages/speedup"]
        out[f"{name}/kernel/gap_closed"] = 100.0 * out[f"{name}/kernel/speedup"] / gap if gap > 0 else 0.0
    names = list(small)
    out["count/huge_pages_help"] = float(sum(out[f"{n}/huge_pages/speedup"] >= 5.0 for n in names))
    for key in ("huge_pages/speedup", "kernel_2m/speedup", "user_2m/speedup", "kernel/gap_closed"):
        out[f"max/{key}"] = max(out[f"{n}/{key}"] for n in names)
    return out
