"""The model's prediction beside `tlblab host coloring` (`--predict`): the very sweeps color_sweep
measures, simulated on the machine file the probe wrote for this host.

color_sweep prints its placement with `--dump 1` (each variant's A and B sweeps as the addresses
they read, in order: the colored arena's and glibc's real addresses), so the model runs the same
pages in the same order, not a re-derivation of the placement. The trace per variant is the
benchmark's loop: a warm-up job pair (A, B), then `jobs` job pairs (B, then A timed after it);
the model's statistics cover the last A only (the references before it are the warm-up), its
cycles per access at the machine file's clock. The machine is what `tlblab host predict` runs
(`predict.host_machine`: on a VM the hypervisor's 2D walk, 4 KiB host pages unless the machine
file says otherwise). Nothing is fitted to the measurement it stands beside.

With `--set-curve` the colored level's ways are the ones one set keeps among others, read from a
separate measurement, the per-set capacity curve (`coloring.set_curve`, `effective_ways`): on the
Zen 5 VM a set keeps 8 of a color's pages while its 16 ways hold 16 consecutive pages
(docs/lab/2026-11-30-issue90-coloring.md). The level is then written as the probe writes a level
whose random chains keep fewer ways than it has (`ways` the kept ones, `hardware_ways` the
structure's; `python/tlblab/probe.py`), so the placement stays the one measured."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any


# Job pairs before the predicted A: enough for the TLBs and caches to settle into the cycle the
# measurement's 201 jobs settle into (each pair sweeps every page of both tasks once).
JOBS = 3


# A point of the per-set curve whose median excess passes this share of the curve's largest (every
# access of the set missing) is a miss: the same tenth the probe's one-set curves use at most for
# their first misses (crates/tlblab-probe/src/measure/set_index/one_set.rs, `first_miss_share`).
MISS_SHARE = 0.10


def effective_ways(points: list[dict[str, float]]) -> int | None:
    """The ways one set keeps: the last pages-a-set `k` before the first misses, the first point
    whose median excess (ns per access over consecutive pages) passes MISS_SHARE of the largest
    with the next point passing too (one point alone is a busy moment: a run at load 3 read 1.43 ns
    at 7 pages and 0.00 at 8). `points`: the per-set curve (`coloring.set_curve`). None when no two
    points pass (the curve never rose) or the first two already do (no k kept them all)."""
    pts = sorted(points, key=lambda p: p["k"])
    top = max((p["excess_ns"] for p in pts), default=0.0)
    if top <= 0:
        return None
    miss = [p["excess_ns"] > MISS_SHARE * top for p in pts]
    for i in range(len(pts) - 1):
        if miss[i] and miss[i + 1]:
            return int(pts[i - 1]["k"]) if i > 0 else None
    return None


def curve_replacement(points: list[dict[str, float]], ways: int) -> str | None:
    """"random" when the per-set curve's four points past the kept ways (`ways` + 1 .. `ways` + 4
    pages a set, `effective_ways`) average below 3/4 of its largest excess, else None. An LRU set
    of `ways` ways misses every access of a cyclic chase of more of its pages, so its curve is at
    the top at all four; the Zen 5 VM's averages 0.41-0.51 of it (still rising to 18-20 pages:
    docs/lab/2026-11-30-issue90-coloring.md). The mean of four, not one point: one busy moment
    (3.71 ns at 9 pages, then 2.00 at 10) must not read LRU. Random is the engine's policy whose
    misses rise gradually past the ways; what the hardware does is not known (as for the Zen 4's
    L2 DTLB, docs/probe.md)."""
    top = max((p["excess_ns"] for p in points), default=0.0)
    past = [p["excess_ns"] for p in points if ways < p["k"] <= ways + 4]
    if top <= 0 or len(past) < 4:
        return None
    return "random" if sum(past) / len(past) < 0.75 * top else None


def with_ways(m: dict[str, Any], ways: int, note: str, replacement: str | None = None) -> dict[str, Any]:
    """`m` with its colored level (the set-associative data level with the most entries, as
    `geometry` picks it) keeping `ways` a set: `entries` = sets x ways, the structure's ways in
    `hardware_ways`, `note` appended to its source; its replacement `replacement` when given."""
    import copy

    m = copy.deepcopy(m)
    data = [t for t in m.get("tlb", []) if t.get("kind") in ("data", "unified") and t.get("ways") != "full"]
    c = max(data, key=lambda t: t["entries"])
    hw = int(c.get("hardware_ways") or c["ways"])
    sets = int(c["entries"]) // int(c["ways"])
    c["hardware_ways"] = hw
    c["ways"] = ways
    c["entries"] = sets * ways
    if replacement is not None:
        c["replacement"] = replacement
    c["source"] = f"{c.get('source', '')}; {note}"
    return m


def dump(args: list[str]) -> dict[str, dict[str, list[int]]]:
    """color_sweep's sweeps (`args`: its command line without --dump) as addresses in order."""
    from tlblab.host.ptwarm import run_json

    return run_json(Path(args[0]), [*args[1:], "--dump", "1"], "color_sweep --dump")


def predict(args: list[str], machine: str | None, ways: int | None = None, ways_note: str = "",
            replacement: str | None = None) -> dict[str, Any]:
    """{"variants": {name: {"a_ns_per_access", "a_cycles_per_access"}}, "same_over_diff",
    "machine": how the machine was determined}. `ways`: the colored level keeps these a set
    (`with_ways`, `ways_note` the measurement they come from) with `replacement` when given."""
    from tlblab import _native
    from tlblab.host import predict as hp
    from tlblab.host.sim_cache import simulate

    m, how = hp.host_machine(machine)
    if ways is not None:
        m = with_ways(m, ways, ways_note, replacement)
        how += (f"; the colored level keeps {ways} ways a set"
                + (f", replacement {replacement}" if replacement else "") + f" ({ways_note})")
    ghz = float(m["frequency_mhz"]) / 1000.0
    out: dict[str, Any] = {"variants": {}, "machine": how}
    with tempfile.TemporaryDirectory(prefix="tlblab-coloring-") as tmp:
        for name, v in dump(args).items():
            a, b = v["a"], v["b"]
            seq = a + b + (b + a) * JOBS + b
            text = Path(tmp) / f"{name}.txt"
            text.write_text("".join(f" L {x:x},8\n" for x in seq + a))
            trace = Path(tmp) / f"{name}.tlbt"
            _native.trace_convert(str(text), str(trace), "lackey", "tlbt")
            stats = simulate(m, trace, [], len(seq))[0]
            cpa = stats["cycles"] / len(a)
            out["variants"][name] = {"a_cycles_per_access": cpa, "a_ns_per_access": cpa / ghz}
    got = out["variants"]
    if "same" in got and "diff" in got and got["diff"]["a_ns_per_access"] > 0:
        out["same_over_diff"] = got["same"]["a_ns_per_access"] / got["diff"]["a_ns_per_access"]
    return out
