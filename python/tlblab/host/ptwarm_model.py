"""The model's prediction for `tlblab host ptwarm`'s dependent chase (`--predict`), on the machine
file the probe wrote for this host: a library module of the host tools (seed 001's reproductions
call it too, on their host-like preset; no host tool imports a seed folder)."""

from __future__ import annotations

import tlblab

# The application's thread in the statistics (the helper is another).
APP = "0"


def ptwarm_prediction(machine: str | dict, size_mib: int = 1024, passes: int = 3) -> dict[str, float]:
    """The model's prediction for `tlblab host ptwarm`'s dependent chase (ptwarm_bench `dep`: a
    random cyclic chase over every 4 KiB page of a `size_mib` region, one line per page) on
    `machine`: the application's cycles per access in the last pass (the first ones populate the
    region and fill the caches: the difference of two runs cut `passes - 1` and `passes` passes
    in), with no helper and with the helper as `touch` (user mode, a load every 8 pages),
    `prefetch` and `mincore` (kernel mode: the kernel reads every PTE, seed 001 §4.3; stride 1 as
    mincore reads them all). Returns {variant: cycles per access, variant/change_pct: the speedup
    over none in percent, variant/dram_walk_refs_per_access, variant/dram_data_per_access}."""
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
        a = tlblab.simulate(machine, wl(passes - 1), technique=tech).stats["threads"][APP]
        b = tlblab.simulate(machine, wl(passes), technique=tech).stats["threads"][APP]
        refs = b["references"] - a["references"]
        out[name] = (b["cycles"] - a["cycles"]) / refs
        out[f"{name}/dram_walk_refs_per_access"] = (b["walk_refs_by_source"][-1] - a["walk_refs_by_source"][-1]) / refs
        out[f"{name}/dram_data_per_access"] = (b["data_by_source"][-1] - a["data_by_source"][-1]) / refs
    for name in variants:
        out[f"{name}/change_pct"] = 100.0 * (out["none"] / out[name] - 1.0)
    return out
