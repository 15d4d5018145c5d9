"""Seed 001's runs: the machines (zen3 widened to the cores a run needs), one application run
(`AppRun`), and the windowed runs at the seed's and the small scale that the at-scale tables
read (`PLAN`, `window_sums`, `scale_runs`, ...), each made once per process (`_made`) or all at
once in worker processes (`prefetch_runs`). The tables themselves are in `small_tables.py` (the
quick footprints) and `experiments.py` (Table 5.2's footprints), which re-exports this module's
names for the reproductions, `tlblab reproduce`'s `prepare` and the scripts."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import tlblab
from tlblab import paths

from .run_seconds import (  # noqa: F401 (re-exported for experiments.py)
    RUN_SECONDS, RUN_SECONDS_SHIPPED, _job_digest, _longest_first, _read_seconds, _write_seconds, run_costs,
)

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


# The 5900X's core is out of order (seed 001 §5.1): references a workload marks independent
# (GUPS' updates, canneal's random elements, the stress-ng stressors) overlap their DRAM misses
# (`timing.mlp`, ARCHITECTURE.md "Timing"). A pointer chase (graph500's list-based BFS) and
# every unmarked workload run as before.
ZEN3_MLP = {
    # Assumed, not checked: Zen 3's L1D miss buffers, the number `stressor_mlp` already
    # assumed; AMD #56665 (Software Optimization Guide for family 19h) would state them, and
    # its text could not be read, nor any other source found (searched again for issue 86,
    # 2026-12-01); 24 of 44 load-queue entries. Bounded: the small tables' verdicts are the same
    # with 12 (scripts/slots_sensitivity.py); GUPS' gains at scale do not move above 16
    # (scripts/gups_sensitivity.py).
    "miss_slots": 24,
    # AnandTech, "AMD Zen 3 Ryzen Deep Dive Review" p. 4 (2020-11-05): "4 additional table
    # walkers on top of the 2 existing ones, meaning the Zen3 cores has a total of 6".
    "walkers": 6,
    # The same page: "the load queue has remained at 44 entries" (72 counting the address
    # generation queue): the references that may issue behind the oldest miss.
    "window": 44,
}

# The program's instructions between two of its references (`timing.mlp.issue_instructions`,
# ARCHITECTURE.md "Timing"): the generators issue their references back to back, the seed's
# programs do not. Measured here with callgrind (`valgrind --tool=callgrind --cache-sim=yes
# --toggle-collect=<kernel>`, the kernel's instructions Ir) on each program at a small size,
# against the references our generator makes for the same work (a TLB-only run's count): the
# instructions per generated reference less the reference's own, 2026-11-29
# (docs/technique-pt_baker.md, "Instructions between references"):
# - gups: HPCC 1.5.0 RandomAccess's update loop (core_single_cpu.c, gcc -O3), 2^18 words, 2^20
#   updates: 14,593,402 instructions, 2,097,152 references (a load and a store an update).
# - graph500_list: Graph500 v2 seq-list (gcc -O3), scale 13, edge factor 16, 64 searches,
#   `make_bfs_tree`: 228,606,821 instructions; graph500_list, the same size: 52,412,096.
# - gapbs_bc: GAPBS bc.cc (g++ -O3, OMP_NUM_THREADS=1), -g 13 -k 16 -n 1, `Brandes`:
#   3,468,579 instructions; gapbs_bc, the same size: 1,332,787.
# - liblinear: liblinear-train (Debian's liblinear 2.x, solver 1, the default) on 2,000
#   HIGGS-shaped rows, one iteration (-e 1000), `train`: 2,114,932 instructions (with the pass
#   before the first iteration, which the generator leaves out: an upper bound); liblinear,
#   the same size: 416,000.
# - canneal: PARSEC 3.0 canneal's annealer: 1,026 instructions a swap (callgrind,
#   docs/lab/measurements.md, 2026-11-28); canneal: 85.3 references a swap.
# - canneal_read: PARSEC 3.0 canneal's `netlist::netlist` (g++ -O3) on a 1e5-element netlist
#   of 6 fan-ins a line (scripts/canneal_host.py's): 1,284,332,613 instructions (12,843 a line:
#   the iostream parsing is most of them); canneal_read, the same size: 47,453,012.
# The hash join's program ([8] of the seed) is not available here: its references issue back
# to back, as before. Tenths of an instruction, issued by Zen 3's four integer ALUs a cycle
# (AnandTech, "AMD Zen 3 Ryzen Deep Dive Review", p. 4).
ISSUE_TENTHS = {"gups": 60, "graph500_list": 34, "gapbs_bc": 16, "liblinear": 41, "canneal": 110,
                "canneal_read": 261}
ISSUE_WIDTH = 4


def with_issue(m: dict[str, Any], wl: str) -> dict[str, Any]:
    """`m` with the instructions `wl`'s program runs between its references (`ISSUE_TENTHS`), on
    a machine with `timing.mlp`; `m` itself for a workload without a measurement."""
    tenths = ISSUE_TENTHS.get(wl.split(":")[0])
    if not tenths or "mlp" not in m.get("timing", {}):
        return m
    m = {**m, "timing": {**m["timing"], "mlp": {**m["timing"]["mlp"], "issue_instructions": tenths,
                                              "issue_width": ISSUE_WIDTH * 10}}}
    return m


# The 5900X's memory (seed 001 Table 5.1: "64GB, DDR4 4000MHz"; §5.1's AM4 platform has two
# 64-bit channels): every agent's lines from memory (the application's, the helper's, the
# stressors') share them (`timing.dram`, ARCHITECTURE.md "Timing"): 2 x 8 B x 4000 MT/s =
# 64 GB/s peak, a 64-byte line 2 ns on one channel (7.4 cycles at the preset's 3.7 GHz).
ZEN3_DRAM = {
    "channels": 2,
    "mega_transfers": 4000,
    "bus_bytes": 8,
    "line_bytes": 64,
}
# Whether `machine` adds `ZEN3_DRAM` by default. Off: with no stressor the channels change
# little (GUPS at 32 GiB, the most DRAM traffic of the seed's workloads, uses 13 GB/s of the
# 64: its speedups move by 0.01 point, docs/technique-pt_baker.md) and a machine with them runs
# every reference on the general path at about twice the cost. The windows under stress-ng's
# stream stressors have them (`STREAM_DRAM`): the stressors stream as fast as DRAM lets them.
TIMING_DRAM = False
# The seed-scale windows under two stream stressors run on the machine with `ZEN3_DRAM` (the
# variants of kind "stream", `_variant_machine`): stress-ng's stream is a bandwidth test (its
# triad misses every line), bounded on the seed's machine by the DDR4-4000 channels every core
# shares (Table 5.1), which the application's misses queue behind (issue 59, 2026-11-28).
STREAM_DRAM = True
# DDR4 row activations on those channels (`timing.dram`'s ranks, banks, row_bytes, t_rrd_ps,
# t_faw_ps; ARCHITECTURE.md "Timing"): JESD79-4C's values for x8 devices at DDR4-3200, the fastest
# bin the standard defines (its Tables 169-170 as CMU-SAFARI/ramulator2 tabulates them,
# src/dram/impl/DDR4.cpp at 525d045: nRRD_S 4 and nFAW 34 clocks of 625 ps; the DDR4_8Gb_x8 and
# 16Gb_x8 organisations, 4 bank groups of 4 banks, 2^10 columns of 8 bits: a 1 KiB page a chip,
# 8 KiB across the 8 chips of a 64-bit rank). Seed 001's DDR4-4000 (Table 5.1) is an overclocking
# profile above JEDEC's bins whose timings the seed does not give; the standard's floors are in
# nanoseconds, so they are kept. Ranks: 2 a channel, the fewest 64 GB on §5.1's two channels
# allows with unbuffered x8 devices of at most 16 Gb (assumed; the seed gives no DIMMs). On in
# every stream run since 2026-12-01 (`STREAM_ROWS`), when the engine's search for a rank's next
# activation stopped costing a stream run 1.7-3x its CPU seconds (docs/lab/2026-11-29-issue86-row-activations.md,
# docs/lab/2026-12-01-issue86-rows-on.md).
ZEN3_DRAM_ROWS = {"ranks": 2, "banks": 16, "row_bytes": 8192, "t_rrd_ps": 2500, "t_faw_ps": 21250}
STREAM_ROWS = True


def machine(cores: int = 4, virt: bool = False, ccx_cores: int = 0, dram: bool | None = None) -> dict[str, Any]:
    """zen3 (or zen3-virt) with `cores` cores, the core's memory-level parallelism
    (`ZEN3_MLP`) and, with `dram` (default `TIMING_DRAM`), the DRAM channels every core shares
    (`ZEN3_DRAM`); `ccx_cores` > 0 splits them into CCXs of that many cores (one L3 each, seed
    001 Fig. 4.5)."""
    m = tlblab.machine_config("zen3-virt" if virt else "zen3")
    m.setdefault("timing", {})["mlp"] = dict(ZEN3_MLP)
    if TIMING_DRAM if dram is None else dram:
        m["timing"]["dram"] = dict(ZEN3_DRAM)
    m["cores"] = cores
    m["name"] = m["name"] + f"-{cores}c"
    if ccx_cores:
        for c in m["cache"] if "cache" in m else m["caches"]:
            if c.get("shared"):
                c["cores_per_instance"] = ccx_cores
    return m


@dataclass(frozen=True)
class AppRun:
    """What the experiments read of one run: the application's counters (thread 0's statistics)
    and the names of the levels that serve walk references, in `walk_refs_by_source`'s order.
    Small, so that a worker process hands it back whole (`prefetch_runs`)."""

    app: dict[str, Any]
    sources: list[str]

    @classmethod
    def of(cls, r: tlblab.Result) -> "AppRun":
        return cls(r.stats["threads"][APP], list(r.stats["sources"]))


def _app(r: AppRun) -> dict[str, Any]:
    return r.app


def dram_share(r: AppRun) -> float:
    """Percent of the application's walk references served by memory (seed Figs. 3.2-3.3)."""
    src = _app(r)["walk_refs_by_source"]
    total = sum(src)
    return 100.0 * src[-1] / total if total else 0.0


def dram_walk_refs(r: AppRun) -> int:
    return int(_app(r)["walk_refs_by_source"][-1])


def app_cycles(r: AppRun) -> float:
    """The application's cycles per reference of its own."""
    a = _app(r)
    return a["cycles"] / max(1, a["references"])


def _run(m, workload: str, technique: str | None) -> AppRun:
    """One run of `LIMIT` references, made once per process (`_made`: a worker may have made it)."""
    import json

    limit = LIMIT[_quick[0]]
    key = ("run", json.dumps(m, sort_keys=True), workload, technique, limit)
    return _made(key, ("run", m, workload, technique, limit), _PLACEHOLDER_RUN)


# What `_run` hands back while `prefetch_runs` only gathers the runs: counters of 1, so that the
# experiment's arithmetic goes through; never a number anyone reads.
_PLACEHOLDER_RUN = AppRun({"references": 1, "cycles": 1, "walks": 1, "walk_refs_by_source": [1, 1, 1, 1],
                           "data_by_source": [1, 1, 1, 1]}, ["L1", "L2", "L3", "DRAM"])



def placement_machine(place: str) -> dict[str, Any]:
    """The 2-core zen3 each helper placement of §4.4.5 needs (Figs. 4.4, 4.5): `ccx` one CCX (the
    L3 shared), `other_ccx` two CCXs of one core each (an L3 each), `smt` one core's 2 hardware
    threads (`threads_per_core`; the helper on the application's sibling)."""
    m = machine(cores=2, ccx_cores=1 if place == "other_ccx" else 0)
    if place == "smt":
        m["threads_per_core"] = 2
    return m



# Seed 001 at two scales (issue 59), each measured in windows spread over its measured phase.
# "seed": Table 5.2's footprints where this host can hold the workload's own data: GUPS' table
# 2^32 words = 32 GiB (Table 5.2: 32 GB); Graph500 as the seed ran it, "List-based version
# (scale 24)" (§5.2): the reference code's seq-list (graph500_list, crates/tlblab-trace/src/
# workloads/graph500_list.rs): a 4 GiB edge list and one 4.25 GiB allocation of head, deg and
# next (Table 5.2's PT-Baker footprint, 4.25 GB: the region its helper sweeps), 8.5 GiB in all
# with the BFS tree and queue (Table 5.2: 9.1 GB); building its graph takes 4.1 GB of host memory;
# its rows keep the name graph500_bfs, the seed's Graph500; GAPBS BC on the same R-MAT graph
# as a CSR (the seed ran it on the twitter graph,
# 14 GB; BC's neighbour array here 2 GiB of 4-byte ids); the hash join with the seed's bucket
# array order (2^28 8-byte buckets, 2 GiB; the seed's 1e8) and an inner table of 2^28 rows
# (8 GiB of tuples and chain nodes; 10.25 GiB in all against Table 5.2's 16.5 GB: the seed's
# 9e8 rows would need 10.8 GB of host memory for the generator's keys and chain links, more
# than this 24 GiB host leaves beside the other runs). "small": graph500 at scale 22 (the
# seed's program, as at the seed's scale) and a hash join of 2^24 rows, GUPS the same, for the
# report's comparison of the two scales. Graph500's measured phase is its searches (init=0):
# the seed's helper is created after the workload's initialisation (§4.1, Algorithm 1), and
# seq-list's initialisation builds the structure it sweeps; Graph500 times the searches only
# (TEPS). (name, spec, the region PT-Baker sweeps: seed §5.2.)
SCALES: dict[str, list[tuple[str, str, str]]] = {
    "small": [
        ("gups", "gups:log2_words=32,updates=100000000,populate=1", "table"),
        ("graph500_bfs", "graph500_list:scale=22,edge_factor=16,roots=1,init=0,populate=1", "head"),
        ("hash_join", "hash_join:buckets=268435456,inner_rows=16777216,outer_rows=16777216,populate=1",
         "hashtable"),
    ],
    "seed": [
        ("gups", "gups:log2_words=32,updates=100000000,populate=1", "table"),
        ("graph500_bfs", "graph500_list:scale=24,edge_factor=16,roots=1,init=0,populate=1", "head"),
        ("gapbs_bc", "gapbs_bc:scale=24,edge_factor=16,sources=1,populate=1", "neighbors"),
        ("hash_join", "hash_join:buckets=268435456,inner_rows=268435456,outer_rows=16777216,populate=1",
         "hashtable"),
    ],
}
# --quick (the test suite): the same experiment on small footprints, one list for both scales.
QUICK_SCALE = [
    ("gups", "gups:log2_words=20,updates=200000,populate=1", "table"),
    ("graph500_bfs", "graph500_list:scale=12,edge_factor=16,roots=1,init=0,populate=1", "head"),
    ("gapbs_bc", "gapbs_bc:scale=12,edge_factor=16,sources=1,populate=1", "neighbors"),
    ("hash_join", "hash_join:buckets=262144,inner_rows=262144,outer_rows=262144,populate=1", "hashtable"),
]

# The windows (the workload's `every`/`windows` fast-forward, crates/tlblab-trace/src/workloads/
# fast_forward.rs): K windows, one in the middle of each K-th of the measured phase (systematic
# sampling, SMARTS §3), each a warm-up of W references (the TLBs and the 32 MiB L3 refill with
# the window's working set: SMARTS's detailed warming) and M measured references of the
# application's own; the references between windows are generated and not simulated (every page
# is mapped by the population, so no page-table entry the window reads is missing). Units of U
# references (`tlblab.sample`, every unit measured) tell the windows apart. Every number is the
# windows' estimate with its 95% interval over the K windows (Student's t, K - 1 degrees of
# freedom; the combined ratio estimator, Cochran §6.4, for a ratio of two sums).
WINDOWS = {True: (3, 10_000, 10_000, 1_000), False: (4, 2_000_000, 1_000_000, 50_000)}
# The companions' own warm-up: the helper and the stressors run only in each window's last
# COMPANION_WARM warm-up references and its measured part (`window_phase` and pt_baker's
# `in_windows`), idle before; the application's warm-up stays W. They make most of a window's
# references (two stream stressors about 80 per application reference on graph500, a user-mode
# helper about 16), and they turn the L3 over within thousands of application references, so
# they reach their steady state long before 500,000: one graph500 window at scale 24 under the
# stream stressors with 0.5 M and 2 M references of warm-up, stressors throughout, gives
# 657.88 and 657.79 M cycles without a helper, 632.94 and 632.47 M with the user-mode one
# (docs/technique-pt_baker.md, 2026-11-28 night). Half of each window's companion references go.
# A throttled helper (NOPs or sleeps, THROTTLE) sweeps too slowly for that: LibLinear's kernel-mode
# helper with 1,000 NOPs a page removes 41, 56 and 78 % of the DRAM walk references after 0.5, 1
# and 2 M references of companion warm-up, still rising; it gets the whole warm-up (W), as every
# companion had before, and its rows still depend on it (docs/technique-pt_baker.md).
COMPANION_WARM = {True: 5_000, False: 500_000}
_THROTTLED = re.compile(r"\b(nops|sleep_us)=(?!0\b)\d")


def companion_warm(technique: str | None, quick: bool, warm: int | None = None) -> int:
    """The references of each window's warm-up its companions run in (`COMPANION_WARM`; the whole
    warm-up, `warm` or `WINDOWS`', for a throttled helper)."""
    warm = warm or WINDOWS[quick][1]
    return warm if technique and _THROTTLED.search(technique) else COMPANION_WARM[quick]


# throttle_at_scale's runs (LibLinear's, `throttle_runs`) warm up for THROTTLE_WARM references a
# window instead of `WINDOWS`' 2 M (issue 86), the throttled helpers running through all of it.
# LibLinear's kernel-mode helper with 1,000 NOPs a page sweeps x_space's 155,762 visited pages
# (5.1 GB, stride 8) at 1,001 cycles a page or more (the NOPs and the loop; its counters give
# 1,140-1,390 with the PTE reads), 156-217 M cycles, 6-8.4 M of LibLinear's references at 26
# cycles each: at 2 M a window warmed up through a quarter to a third of a sweep. After 2 / 4 / 8 / 16 M references of warm-up
# (scripts/throttle_warmup.py, docs/lab/2026-12-01-issue86-seed001-mechanisms.md) that helper cut
# 81.1 / 83.1 / 84.0 / 84.3 % of the DRAM walk references, and the baseline's DRAM walk references
# rose too, 1.85 / 2.81 / 3.58 / 3.84 per 1,000 (the L3 loses the PTE lines the population and
# the window before left in it), so the speedups rose with both (that helper's 1.52 / 2.38 / 3.08
# / 3.31 %; the sleeping kernel-mode helper, whose cut is 99.5-99.8 % throughout, 1.86 / 2.87 /
# 3.68 / 3.94 %). Every run of the table warms up as long, its baseline and its unthrottled
# helpers included: 16 M, about two of the slowest helper's sweeps, where the windows agree
# (the baseline's DRAM walks ±2 %, every speedup within ±0.14 point). The other tables' throttled
# helpers (100 NOPs a page, 1 ms sleeps) sweep their regions in under 2 M and keep `WINDOWS`'.
THROTTLE_WARM = {True: None, False: 16_000_000}
# The same baseline effect in LibLinear's other runs without the stream stressors (issue 86): its
# native and virtualized runs (standins, Fig. 6.9's prefetches, seed_scale's and Fig. 6.6's
# virtualized ones) warm up for SETTLED_WARM references a window, as throttle_at_scale's
# (whose baseline and unthrottled helpers they then share). Virtualized, the baseline's DRAM walk
# references per 1,000 were 4.86 / 6.42 / 7.63 / 7.80 after 2 / 4 / 8 / 16 M references of
# warm-up and the user-mode helper's speedup 3.59 / 5.04 / 6.20 % (scripts/warmup_settle.py,
# docs/lab/2026-12-01-issue86-seed001-warmups.md); natively 1.85 / 2.81 / 3.58 / 3.84 (above).
# Under the two stream stressors nothing moved from 2 to 4 M (LibLinear's baseline 18.987 /
# 18.987 DRAM walk references per 1,000, the hash join's 234.78 / 234.77: the stressors turn
# the L3 over within thousands of references), so the runs of kinds "stream" and "virt_stream"
# keep `WINDOWS`' 2 M, as every other workload's runs do.
SETTLED_WARM = {"liblinear": {True: None, False: 16_000_000}}


def settled_warm(wl: str, kind: str, quick: bool) -> int | None:
    """The warm-up of `wl`'s runs on a machine of `kind` (`VARIANTS`) if not `WINDOWS`'
    (`SETTLED_WARM`; None: `WINDOWS`')."""
    if kind in ("stream", "virt_stream"):
        return None
    return SETTLED_WARM.get(wl.split(":")[0], {}).get(quick)

# Variants: (label, page size, machine, technique with {region} for the swept region). A label
# with a prefix (stream_, virt_) is measured under that setting against its own baseline.
VARIANTS = {
    "none": ("4KiB", "native", None),
    "kernel": ("4KiB", "native", "pt_baker:mode=kernel,stride=8,region={region}"),
    "user": ("4KiB", "native", "pt_baker:mode=user,stride=8,region={region}"),
    "prefetch": ("4KiB", "native", "pt_baker:mode=prefetch,stride=8,region={region}"),
    "none_2m": ("2MiB", "native", None),
    "kernel_2m": ("2MiB", "native", "pt_baker:mode=kernel,stride=8,region={region}"),
    "user_2m": ("2MiB", "native", "pt_baker:mode=user,stride=8,region={region}"),
    "stream_none": ("4KiB", "stream", "pt_baker:mode=none,pressure=stream"),
    "stream_kernel": ("4KiB", "stream", "pt_baker:mode=kernel,stride=8,region={region},pressure=stream"),
    "stream_user": ("4KiB", "stream", "pt_baker:mode=user,stride=8,region={region},pressure=stream"),
    "virt_none": ("4KiB", "virt", None),
    "virt_kernel": ("4KiB", "virt", "pt_baker:mode=kernel,stride=8,region={region}"),
    "virt_user": ("4KiB", "virt", "pt_baker:mode=user,stride=8,region={region}"),
}
# placement_at_scale (§4.4.5, Fig. 6.8): the helper on the application's SMT sibling and on another
# CCX, each machine (`placement_machine`) with its own baseline; on another core of the CCX it is
# the kernel and user variants above (zen3 made 4 cores, the helper on core 1).
for _place in ("smt", "other_ccx"):
    VARIANTS[f"{_place}_none"] = ("4KiB", _place, None)
    for _mode in ("kernel", "user"):
        VARIANTS[f"{_place}_{_mode}"] = (
            "4KiB", _place, f"pt_baker:mode={_mode},stride=8,region={{region}},place={_place}")
# throttle and throttle_at_scale (§4.4.4, Figs. 6.10, 6.11): the NOP counts and sleep lengths tried
# (the helper's parameter, its rows' label, the spread's label, the values); 0 NOPs is the
# unthrottled helper above.
THROTTLE = [("nops", "nops", "nop_spread", [0, 100, 1000]), ("sleep_us", "sleep", "sleep_spread", [10, 100, 1000])]


def _throttled(mode: str, label: str, value: int) -> str:
    """The variant of a `mode` helper throttled by `value` of `label` (`THROTTLE`)."""
    return mode if label == "nops" and value == 0 else f"{mode}_{label}{value}"


for _mode in ("kernel", "user"):
    for _param, _label, _, _values in THROTTLE:
        for _v in _values:
            if _throttled(_mode, _label, _v) != _mode:
                VARIANTS[_throttled(_mode, _label, _v)] = (
                    "4KiB", "native", f"pt_baker:mode={_mode},stride=8,region={{region}},{_param}={_v}")
# Each variant's rows: (prefix, label, the baseline it is compared with; None: it is one).
ROLES = {
    "none": ("", "base", None), "kernel": ("", "kernel", "none"), "user": ("", "user", "none"),
    "prefetch": ("", "prefetch", "none"),
    "none_2m": ("", "base_2m", None), "kernel_2m": ("", "kernel_2m", "none_2m"),
    "user_2m": ("", "user_2m", "none_2m"),
    "stream_none": ("stream/", "base", None), "stream_kernel": ("stream/", "kernel", "stream_none"),
    "stream_user": ("stream/", "user", "stream_none"),
    "virt_none": ("virt/", "base", None), "virt_kernel": ("virt/", "kernel", "virt_none"),
    "virt_user": ("virt/", "user", "virt_none"),
}
for _place in ("smt", "other_ccx"):
    ROLES[f"{_place}_none"] = (f"{_place}/", "base", None)
    for _mode in ("kernel", "user"):
        ROLES[f"{_place}_{_mode}"] = (f"{_place}/", _mode, f"{_place}_none")
for _v in VARIANTS:
    if _v not in ROLES:  # the throttled helpers: kernel_nops100 -> rows kernel/nops100/...
        ROLES[_v] = ("", _v.replace("_", "/", 1), "none")
_BASIC = ("none", "kernel", "user", "none_2m", "kernel_2m", "user_2m")
# Which variants each workload runs at each scale: at_scale and huge_pages everywhere; the
# prefetch variant (Fig. 6.9: Graph500, BC, LibLinear), the stream pressure (Figs. 6.3, 6.4) and
# the virtual machine (Fig. 6.6) at the seed's scale on graph500 (their largest gains, §6.1.2,
# §6.2), BC with the 4 KiB helpers (Fig. 6.1) and prefetch.
PLAN = {
    ("small", "gups"): _BASIC, ("small", "graph500_bfs"): _BASIC, ("small", "hash_join"): _BASIC,
    ("seed", "gups"): _BASIC,
    ("seed", "graph500_bfs"): _BASIC + ("prefetch", "stream_none", "stream_kernel", "stream_user",
                                        "virt_none", "virt_kernel", "virt_user"),
    ("seed", "gapbs_bc"): ("none", "kernel", "user", "prefetch"),
    ("seed", "graph500_csr"): ("none", "kernel"),
    ("seed", "hash_join"): _BASIC,
    ("seed", "canneal"): ("none", "kernel", "user", "none_2m"),
    ("seed", "liblinear"): ("none", "kernel", "user"),
    # placement_at_scale: graph500's at_scale runs (another core of the CCX) and the other places.
    ("seed", "graph500_placement"): ("none", "kernel", "user") + tuple(
        f"{p}_{v}" for p in ("smt", "other_ccx") for v in ("none", "kernel", "user")),
    # throttle_at_scale: liblinear's standins runs and the throttled helpers.
    ("seed", "liblinear_throttle"): ("none", "kernel", "user") + tuple(
        _throttled(m, label, v) for m in ("kernel", "user") for _, label, _, vals in THROTTLE for v in vals
        if _throttled(m, label, v) != m),
}
# Figs. 6.3 and 6.4 (the source of §1.2's 11.2 % and 22.4 %) throttle the helpers with the sleep
# parameter; the text gives no lengths. The unthrottled helpers are what the criteria read; the
# hash join under the stream stressors also runs with each helper sleeping 1 ms after each sweep
# (THROTTLE's longest sleep), ours-only rows (`stream/kernel/sleep1000/...`) that show what a sleep
# near the stressors' turnover of the L3 does to each mode (docs/technique-pt_baker.md).
STREAM_SLEEPS = ("stream_kernel_sleep1000", "stream_user_sleep1000")
for _mode in ("kernel", "user"):
    VARIANTS[f"stream_{_mode}_sleep1000"] = (
        "4KiB", "stream", f"pt_baker:mode={_mode},stride=8,region={{region}},sleep_us=1000,pressure=stream")
    ROLES[f"stream_{_mode}_sleep1000"] = ("stream/", f"{_mode}/sleep1000", "stream_none")
# seed_scale's stream pressure and virtual machine beyond graph500 (§1.2's 22.4 %, 11.2 % and
# 38.2 % are maxima over the seed's workloads): the workloads whose native gains the seed's text
# names besides Graph500's, the hash join (kernel 5.4 %) and LibLinear (4.1 % user, 5.4 % kernel;
# with Graph500 the only workloads whose virtualized gains §6.2 calls significant). GUPS and
# Canneal are left out: the seed's helper does not speed them up natively (§6.1.1) and §6.2 names
# neither among the virtualized gains; BC's gains need NOPs (§6.1.1, Fig. 6.5), which these
# unthrottled runs do not have. In `PV_WINDOWS` windows (the same warm-up and measured lengths),
# fewer than graph500's to keep `reproduce 001` inside its half hour (docs/technique-pt_baker.md).
PV_PLAN = {
    "hash_join": ("stream_none", "stream_kernel", "stream_user", "virt_none", "virt_user")
    + STREAM_SLEEPS,
    "liblinear": ("stream_none", "stream_kernel", "stream_user", "virt_none", "virt_user"),
}
for _name, _variants in PV_PLAN.items():
    PLAN[("seed_pv", _name)] = _variants
PV_WINDOWS = {True: None, False: 2}
# LibLinear's `PV_PLAN` and `SENSITIVITY` runs in 4 windows (issue 86): in 2 its virtualized
# user-mode speedup was 1.23 +- 20.5 % (the two windows' cycles differ by a quarter and Student's
# t with one degree of freedom is 12.7), an interval no criterion could be read against. Its runs
# are the cheapest of `PV_PLAN` (7-22 CPU-s each at 2 windows), so 4 add about 90 CPU-s to
# `reproduce 001`; the hash join's (up to 63 CPU-s each) keep 2.
PV_WINDOWS_OF = {"liblinear": 4}


def pv_windows(name: str, quick: bool) -> int | None:
    """The windows of `name`'s runs under stream pressure and virtualized (`PV_PLAN`, the "pv"
    runs of `SENSITIVITY`): `PV_WINDOWS_OF` at the full size if it names `name`, else
    `PV_WINDOWS` (the quick size's `WINDOWS` either way)."""
    return PV_WINDOWS[quick] if quick else PV_WINDOWS_OF.get(name, PV_WINDOWS[quick])

# sensitivity_at_scale: the claims of §6.1.2-§6.3.2 no other table reads (issue 86), each on the
# runs the seed's text names. Fig. 6.5: BC under memory pressure (two stream stressors, the level
# of `stream_*`) with each helper throttled by NOPs against the same helper throttled by sleeps
# (the seed gives neither the NOP count nor the sleep length: THROTTLE's 100 NOPs and the 1 ms
# sleep of `STREAM_SLEEPS`). Fig. 6.7: the kernel-mode helper with sleeps in the virtual machine
# under two stream stressors (zen3-virt with the stream stressors and `ZEN3_DRAM`: kind
# "virt_stream"), on the hash join (one of "most workloads") and LibLinear (one of the two
# exceptions §6.2 names), against the same helper natively under the same pressure. These in
# `PV_WINDOWS` windows, as the other pressured and virtualized runs beyond graph500. Fig. 6.9:
# LibLinear's user-mode helper with prefetches, in its standins windows; §6.3.1: BC's user-mode
# helper on the SMT sibling (`placement_machine("smt")`), in at_scale's windows.
for _mode in ("kernel", "user"):
    VARIANTS[f"stream_{_mode}_nops100"] = (
        "4KiB", "stream", f"pt_baker:mode={_mode},stride=8,region={{region}},nops=100,pressure=stream")
    ROLES[f"stream_{_mode}_nops100"] = ("stream/", f"{_mode}/nops100", "stream_none")
VARIANTS["virt_stream_none"] = ("4KiB", "virt_stream", "pt_baker:mode=none,pressure=stream")
ROLES["virt_stream_none"] = ("virt_stream/", "base", None)
VARIANTS["virt_stream_kernel_sleep1000"] = (
    "4KiB", "virt_stream", "pt_baker:mode=kernel,stride=8,region={region},sleep_us=1000,pressure=stream")
ROLES["virt_stream_kernel_sleep1000"] = ("virt_stream/", "kernel/sleep1000", "virt_stream_none")
# (plan name, workload as named in SCALES["seed"] or STANDINS, variants, windows: None for
# `WINDOWS`', "pv" for `PV_WINDOWS`').
SENSITIVITY = [
    ("gapbs_bc_stream", "gapbs_bc", ("stream_none", "stream_kernel_nops100", "stream_user_nops100")
     + STREAM_SLEEPS, "pv"),
    ("gapbs_bc_smt", "gapbs_bc", ("smt_none", "smt_user"), None),
    ("hash_join_virt_stream", "hash_join", ("stream_none", "stream_kernel_sleep1000", "virt_stream_none",
                                            "virt_stream_kernel_sleep1000"), "pv"),
    ("liblinear_virt_stream", "liblinear", ("stream_none", "stream_kernel_sleep1000", "virt_stream_none",
                                            "virt_stream_kernel_sleep1000"), "pv"),
    ("liblinear_prefetch", "liblinear", ("none", "user", "prefetch"), None),
    # The runs of at_scale and seed_scale the table compares with (the same runs: the same
    # workload, variant and windows make the same `_made` key), named here so that the table
    # makes only those when run alone: BC's helpers with loads and prefetches (Figs. 6.1, 6.9),
    # graph500 (4 windows) and the hash join and LibLinear (2) virtualized (Fig. 6.6), the hash
    # join's native helpers (Fig. 6.1).
    ("gapbs_bc_native", "gapbs_bc", ("none", "user", "prefetch"), None),
    ("graph500_virt", "graph500_bfs", ("virt_none", "virt_kernel", "virt_user"), None),
    ("hash_join_native", "hash_join", ("none", "kernel", "user"), None),
    ("hash_join_virt", "hash_join", ("virt_none", "virt_user"), "pv"),
    ("liblinear_virt", "liblinear", ("virt_none", "virt_user"), "pv"),
]
for _plan, _, _variants, _ in SENSITIVITY:
    PLAN[("seed_fig", _plan)] = _variants

# Seed 001's LibLinear and Canneal (§5.2), as generators following the programs' own loops
# (crates/tlblab-trace/src/workloads/canneal.rs, liblinear.rs): the programs themselves cannot be
# captured at this size here (PARSEC is not packaged; liblinear-train is, and its capture on 2,000
# HIGGS-shaped rows makes 281 M references, docs/traces.md: 11e6 rows would make about 1.5e12, a
# day of capture and hundreds of GB of trace). At Table 5.2's footprints: Canneal's
# netlist of the seed's 6e7 elements (20.2 GB: its element array, the region PT-Baker sweeps,
# 5.3 GB) with the seed's 3e4 swaps per temperature step and start temperature 2000, 20
# temperature steps of the seed's 15000 (the windows fall in them; the run's later steps only
# cool further); LibLinear on HIGGS' shape (11e6 instances x 28 features: x_space 5.1 GB,
# 5.5 GB in all), one outer iteration of the solver (its windows are inside that pass's
# coordinate descent). Only the 4 KiB helpers run (and, for Canneal, 2 MiB pages, §6.1.1), to
# keep `reproduce 001` inside its half hour. They are not in SCALES: at_scale's and
# huge_pages' rows (and their maxima) stay over the workloads they were pre-registered on.
STANDINS = [
    ("canneal", "canneal:elements=60000000,degree=6,swaps=30000,temp_steps=20,start_temp=2000,populate=1",
     "elements"),
    ("liblinear", "liblinear:instances=11000000,features=28,iterations=1,populate=1", "x_space"),
]
# Canneal's netlist reading (canneal_read.rs), the same netlist as STANDINS' Canneal: the seed
# times canneal whole (perf stat, §5.3), and its helper is spawned once the program's regions
# are allocated and initialised, before the "main algorithm" (§4.1, Algorithm 1; §4.2), the
# annealer: the reading runs without a helper, with 4 KiB and 2 MiB pages. (full, quick, the
# seed's temperature steps, which the annealer's windows (STANDINS: 20 of them) stand for.)
CANNEAL_READ = ("canneal_read:elements=60000000,degree=6,populate=1",
                "canneal_read:elements=65536,degree=6,populate=1")
CANNEAL_SEED_STEPS = 15000
PLAN[("seed", "canneal_read")] = ("none", "none_2m")
QUICK_STANDINS = [
    ("canneal", "canneal:elements=65536,degree=6,swaps=3000,temp_steps=1,start_temp=2000,populate=1",
     "elements"),
    ("liblinear", "liblinear:instances=2048,features=28,iterations=1,populate=1", "x_space"),
]


def measured_span(wl: str, directory: str | None = None) -> int:
    """The accesses of `wl`'s measured phase (after its population), rounded up to a multiple of
    `SPAN_STEP`: counted without simulating them (`_native.measured_accesses`: a generator that
    skips by itself passes them, canneal_read's 6e7 lines in seconds), rounded as the windows of
    one access every `SPAN_STEP` that counted them before did (one reference a window), so that
    the windows placed by it stay where they were; cached beside the checkpoints by a digest of
    the spec (the count depends on nothing else)."""
    from tlblab import _native

    return int(_cached(directory, ("measured_span", wl, str(SPAN_STEP)), lambda: {
        "workload": wl, "step": SPAN_STEP,
        "accesses": -(-_native.measured_accesses(wl) // SPAN_STEP) * SPAN_STEP})["accesses"])


def _cached(directory: str | None, parts: tuple[str, ...], make: Any) -> dict[str, Any]:
    """The JSON record `make()` returns, kept in `directory` under a digest of `parts`: made by
    one process at a time (a lock file beside it; the workers of `prefetch_runs` often want
    the same one at once, and the others then read it instead of making it again), with the
    graph workloads' graphs cached (`_graphs`)."""
    import fcntl
    import json

    from tlblab.files import atomic_write, content_digest

    path = Path(directory if directory is not None else paths.out("checkpoints")) / f"{content_digest(*parts)}.json"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not path.is_file():
                with _graphs():
                    record = make()
                atomic_write(path, json.dumps(record) + "\n")
    return json.loads(path.read_text())


# The graph workloads' graphs (graph500_list's, the R-MAT CSR of gapbs_bc and graph500_bfs) are
# cached here while a run of this module builds one (`tlblab.intervals.graph_cache`, the files
# tagged with a digest of the engine's bytes, so a rebuilt engine never reads an older one's):
# the first process to need a graph builds and writes it, the others read it (seed 001's scale
# 24 graph: over a minute to build, seconds to read).
GRAPHS = paths.out("checkpoints", "graphs")
_ENGINE_TAG: list[str] = []


def _graphs() -> Any:
    from tlblab import _native
    from tlblab.files import content_digest
    from tlblab.intervals import graph_cache

    if not _ENGINE_TAG:
        _ENGINE_TAG.append(content_digest(Path(_native.__file__).read_bytes()))
        _drop_stale_graphs(Path(GRAPHS), _ENGINE_TAG[0])
    return graph_cache(GRAPHS, _ENGINE_TAG[0])


def _drop_stale_graphs(directory: Path, tag: str) -> None:
    """Removes the graphs another build of the engine wrote (`<kind><params>.g<generator>.<tag>.graph`
    with another tag): this build never reads them, and seed 001's full-size graphs are 7.7 GB a
    build (scale 24's list and CSR, scale 22's list), so each rebuilt engine left that much behind
    in out/checkpoints (13 GB there after two builds on 2026-11-29). A process that still reads
    one holds it open; one that had not opened it yet builds it again, as on a fresh machine."""
    import contextlib

    for p in directory.glob("*.graph"):
        if not p.name.endswith(f".{tag}.graph"):
            with contextlib.suppress(FileNotFoundError):
                p.unlink()


SPAN_STEP = 4096


def population(wl: str, directory: str | None = None) -> int:
    """The stores of `wl`'s population (`populate=1`: one per 4 KiB page of its regions), read
    from a TLB-only run that stops one access into its region of interest; cached as
    `measured_span` is."""
    return int(_cached(directory, ("population", wl), lambda: {
        "workload": wl,
        "stores": int(tlblab.simulate("zen3", f"{wl},warm=1,take=1", tlb_only=True)
                      .stats["warmup"]["references"]) - 1})["stores"])


def window_spec(wl: str, quick: bool, k: int | None = None, companions: int | None = None,
                warm: int | None = None) -> str:
    """`wl` as the K windows of `WINDOWS` (or `k` of them), one centred in each K-th of its
    measured phase, each with its window phase for the companions, the last `companions`
    references of its warm-up (default `COMPANION_WARM`). A longer warm-up `warm` than
    `WINDOWS`' begins earlier: each measured part stays where `WINDOWS`' warm-up puts it."""
    k0, warm0, take, _ = WINDOWS[quick]
    k = k or k0
    warm = warm or warm0
    every = measured_span(wl) // k
    skip = every // 2 - (warm0 + take) // 2 - (warm - warm0)
    if every < warm + take or skip < 0:
        raise ValueError(f"{wl}: a measured phase of {every * k} accesses is too short for {k} windows "
                         f"of {warm} + {take}")
    return (f"{wl},skip={skip},warm={warm},take={take},every={every},windows={k},"
            f"window_phase={companions or COMPANION_WARM[quick]}")


def _variant_machine(page_size: str, kind: str) -> dict[str, Any]:
    """The machine of a variant of `kind` (`VARIANTS`): native, virt (zen3-virt), stream (native
    with `ZEN3_DRAM` when `STREAM_DRAM`), virt_stream (zen3-virt, the same), smt or other_ccx
    (`placement_machine`)."""
    if kind in ("smt", "other_ccx"):
        m = placement_machine(kind)
    else:
        m = machine(virt=kind in ("virt", "virt_stream"),
                    dram=STREAM_DRAM if kind in ("stream", "virt_stream") else None)
        if STREAM_ROWS and kind in ("stream", "virt_stream") and "dram" in m["timing"]:
            m["timing"]["dram"].update(ZEN3_DRAM_ROWS)
    if page_size != "4KiB":
        m["page_table"]["page_size"] = page_size
        m["name"] = m["name"] + f"-{page_size}"
    return m


_COUNTERS = ("references", "cycles", "walks", "walk_refs", "walk_dram", "data_dram")


def window_sums(m: dict[str, Any], wl: str, technique: str | None, quick: bool,
                k: int | None = None, warm: int | None = None, in_windows: int = 1) -> list[dict[str, float]]:
    """The application's counters in each window of `window_spec(wl, quick, k)` (`_COUNTERS`: its references
    and cycles, walks, walk references and those served by DRAM, data references served by
    DRAM), from one run whose every unit is measured: a unit belongs to window k when all of
    the application's references in it lie in that window's measured part (units that straddle
    a window's edge, or lie in a warm-up, are left out). `warm`: each window's warm-up, if not
    `WINDOWS`' (`window_spec`). `in_windows`: pt_baker's, which companions run in the window phases
    only (1: both, as every reproduction runs them; 2: the stressors, 3: the helper, the other
    throughout: scripts/companions_before_windows.py)."""
    k0, warm0, take, unit = WINDOWS[quick]
    k = k or k0
    warm = warm or warm0
    m = with_issue(m, wl)
    spec = window_spec(wl, quick, k, companion_warm(technique, quick, warm), warm)
    if technique is not None:
        technique += f",in_windows={in_windows}"  # its companions in the window phases only (COMPANION_WARM)
    with _graphs():
        s = tlblab.sample(m, spec, unit=unit, period=1, offset=0, head=0, technique=technique)
    sums = unit_sums(s, wl, warm, take, k)
    if any(d["references"] == 0 for d in sums):
        raise ValueError(f"{wl}: a window has no whole unit measured (units of {unit} references, windows "
                         f"of {take})")
    return sums


def unit_sums(s, wl: str, warm: int, take: int, k: int) -> list[dict[str, float]]:
    """The application's counters (`_COUNTERS`) of a sampled run `s` (units of one reference
    stream, `tlblab.sample`), summed per window: k windows of `warm` warm-up and `take` measured
    references each, after `wl`'s population; a unit counts where it lies whole in a measured part."""
    period = warm + take
    sums = [dict.fromkeys(_COUNTERS, 0.0) for _ in range(k)]
    # The units cover the run from its first reference: the application's references before
    # window 0's measured part are the population's and the first warm-up's.
    pos = -(population(wl) + warm)
    for th in s.threads:
        a = th.get(APP)
        n = int(a["references"]) if a else 0
        w, q = divmod(pos, period)
        if a and n and pos >= 0 and w < k and q + n <= take:
            d = sums[w]
            d["references"] += n
            d["cycles"] += a["cycles"]
            d["walks"] += a["walks"]
            d["walk_refs"] += sum(a["walk_refs_by_source"])
            d["walk_dram"] += a["walk_refs_by_source"][-1]
            d["data_dram"] += a["data_by_source"][-1]
        pos += n
    return sums


def ratio_estimate(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """(R, half-width): the combined ratio estimator R = sum(xs) / sum(ys) over the windows and
    its 95% interval's half-width, Student's t with n - 1 degrees of freedom on the residuals
    x - R y (Cochran, Sampling Techniques, 3rd ed., §6.4)."""
    from tlblab.sampling import t_quantile

    n, big_x, big_y = len(xs), sum(xs), sum(ys)
    r = big_x / big_y if big_y else 0.0
    if n < 2 or not big_y:
        return r, float("nan")
    s2 = sum((x - r * y) ** 2 for x, y in zip(xs, ys)) / (n - 1)
    return r, t_quantile(0.975, n - 1) * (s2 / n) ** 0.5 / (big_y / n)


# Every run the experiments make, once per process: {key: its result}, the key naming all the
# result depends on. at_scale, huge_pages and seed_scale read the same window runs; `prepare`
# makes the runs of all of `reproduce 001`'s experiments in worker processes up front.
_RUNS: dict[tuple[Any, ...], Any] = {}
# The runs `_made` would make, gathered by `prefetch_runs` instead of made; None otherwise.
_COLLECTING: dict[tuple[Any, ...], tuple[Any, ...]] | None = None


def _made(key: tuple[Any, ...], job: tuple[Any, ...], placeholder: Any) -> Any:
    """`_run_job(job)`, made once per process under `key`; while `prefetch_runs` gathers the
    runs, `job` is noted and `placeholder` handed back instead."""
    if key in _RUNS:
        return _RUNS[key]
    if _COLLECTING is not None:
        _COLLECTING[key] = job
        return placeholder
    _RUNS[key] = _run_job(job)
    return _RUNS[key]


def scale_runs(quick: bool) -> dict[str, dict[str, dict[str, list[dict[str, float]]]]]:
    """{scale: {workload: {variant: window sums}}} for `PLAN`, every run done once per process
    (the runs of one R-MAT graph follow each other, so the graph is built once: rmat.rs)."""
    out: dict[str, dict[str, dict[str, list[dict[str, float]]]]] = {}
    for scale, wls in SCALES.items():
        for name, full, region in wls:
            q = next((w for w in QUICK_SCALE if w[0] == name), None)
            out.setdefault(scale, {})[name] = _plan_runs(quick, scale, name, q[1] if quick and q else full, region)
            if scale == "seed" and name == "graph500_bfs":
                placement_runs(quick)
            if scale == "seed" and name == "gapbs_bc":
                csr_runs(quick)
    return out


# The CSR BFS (graph500_bfs.rs) on the same R-MAT graph as the seed-scale Graph500 (rmat.rs:
# edge_list, the same edges; BC's CSR graph, so it runs right after BC and the graph is built
# once): seed_scale's comparison of what the list-based program's reads change. (spec, quick
# spec, region.)
CSR = ("graph500_bfs:scale=24,edge_factor=16,roots=1,populate=1",
       "graph500_bfs:scale=12,edge_factor=16,roots=1,populate=1", "adjacency")


def csr_runs(quick: bool) -> dict[str, list[dict[str, float]]]:
    """{variant: window sums} of the CSR BFS (`CSR`, `PLAN[("seed", "graph500_csr")]`)."""
    return _plan_runs(quick, "seed", "graph500_csr", CSR[1] if quick else CSR[0], CSR[2])


def placement_runs(quick: bool) -> dict[str, list[dict[str, float]]]:
    """{variant: window sums} of `PLAN[("seed", "graph500_placement")]` on the seed-scale Graph500
    (`SCALES["seed"]`); scale_runs runs them right after its Graph500 runs, so the graph is built
    and the generator's skips are made once."""
    _, full, region = next(w for w in SCALES["seed"] if w[0] == "graph500_bfs")
    small = next(w[1] for w in QUICK_SCALE if w[0] == "graph500_bfs")
    return _plan_runs(quick, "seed", "graph500_placement", small if quick else full, region)


def _plan_runs(quick: bool, scale: str, name: str, wl: str, region: str,
               k: int | None = None, warm: int | None = None) -> dict[str, list[dict[str, float]]]:
    """{variant: window sums} for `PLAN[(scale, name)]` on `wl` (in `k` windows, default
    `WINDOWS`', each warming up for `warm` references, default `WINDOWS`'), each run once per
    process. A run with its own warm-up (`warm`, else `settled_warm`'s) has it at the end of its
    job and key."""
    out: dict[str, list[dict[str, float]]] = {}
    # While runs are only gathered: windows of counters of 1 (the experiment's arithmetic goes through).
    placeholder = [dict.fromkeys(_COUNTERS, 1.0) for _ in range(k or WINDOWS[quick][0])]
    for variant in PLAN[(scale, name)]:
        size, kind, tech = VARIANTS[variant]
        w = warm or settled_warm(wl, kind, quick)
        own = (w,) if w else ()
        job = ("windows", size, kind, wl, tech.format(region=region) if tech else None, quick, k) + own
        out[variant] = _made((quick, wl, variant, k) + own, job, placeholder)
    return out


def _run_job(job: tuple[Any, ...]) -> Any:
    """One run: ("windows", page size, machine kind, workload, technique, quick, k[, warm-up]) ->
    `window_sums` (`_plan_runs`); ("run", machine, workload, technique, references) -> `AppRun`
    (`_run`). Module-level so that a worker process can run it."""
    if job[0] == "windows":
        _, size, kind, wl, tech, quick, k, *warm = job
        return window_sums(_variant_machine(size, kind), wl, tech, quick, k, warm[0] if warm else None)
    _, m, wl, tech, limit = job
    return AppRun.of(tlblab.simulate(with_issue(m, wl), wl, technique=tech, max_references=limit))


def _timed_job(job: tuple[Any, ...]) -> tuple[Any, float]:
    """`_run_job(job)` and the wall seconds it took."""
    import time

    t0 = time.monotonic()
    result = _run_job(job)
    return result, time.monotonic() - t0


def prefetch_runs(quick: bool, *run_sets: Any, workers: int | None = None,
                  progress: Callable[[str], None] | None = None) -> dict[str, float]:
    """Makes the runs the functions `run_sets` (scale_runs, pv_runs, whole experiments, ...)
    would make, in `workers` processes at once (default: 2, or 1 on a one-core machine), the
    longest first (`_longest_first`), so that they then find every run made. Each run is
    deterministic and independent of the others (a graph, a population and a measured span
    come from `out/checkpoints` or are built the same in any process), so the numbers are the
    same as made in turn, bit for bit (tests/test_technique_pt_baker.py). Two at a time because
    a seed-scale run's simulated memory takes up to about 5.6 GB of the host's; `--quick` runs
    stay in-process (`workers` 1), whose runs take seconds. Called while runs are being
    gathered (an experiment's own call inside `prepare`), it only gathers. `progress(line)`
    is told of each run made in a worker. Returns `runs` (how many were made) and `seconds`
    (wall)."""
    import time

    if _COLLECTING is not None:
        for run_set in run_sets:
            run_set(quick)
        return {"runs": 0, "seconds": 0.0}
    t0 = time.monotonic()
    jobs = plan_runs(quick, *run_sets)
    import os

    workers = workers if workers is not None else (1 if quick else min(2, os.cpu_count() or 1))
    if workers <= 1 or len(jobs) <= 1:
        for key, job in jobs.items():
            _RUNS[key] = _run_job(job)
        return {"runs": len(jobs), "seconds": time.monotonic() - t0}
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from concurrent.futures import as_completed

    order = _longest_first(jobs)
    seconds: dict[tuple[Any, ...], float] = {}
    import signal

    # spawn, not fork: the parent holds the simulator's native state and maybe threads.
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        # The workers start with SIGINT blocked (a signal mask survives spawn's fork and exec), so
        # a terminal's Ctrl-C, sent to the whole process group, reaches this process alone,
        # which stops them, instead of each printing its own KeyboardInterrupt.
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            futures = {pool.submit(_timed_job, jobs[key]): key for key in order}  # handed out in this order
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        try:
            for n, f in enumerate(as_completed(futures), 1):
                key = futures[f]
                _RUNS[key], seconds[key] = f.result()
                if progress:
                    progress(f"run {n}/{len(order)} made in {seconds[key]:.0f} s: {_describe(jobs[key])}")
        except BaseException:
            # A failed run, Ctrl-C or SIGTERM: the runs not begun are not made, and those in
            # flight are stopped now rather than finished (minutes each at the seed's scale;
            # ProcessPoolExecutor has no public way to stop a running task).
            for proc in list((getattr(pool, "_processes", None) or {}).values()):
                proc.terminate()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    _write_seconds(jobs, seconds)
    return {"runs": len(jobs), "seconds": time.monotonic() - t0}


def plan_runs(quick: bool, *run_sets: Any) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """{key: job} of the runs the functions `run_sets` would make that this process has not
    made: gathered by running them on placeholders (`_made`), none made. `prefetch_runs` makes
    them in its workers; `tlblab reproduce` hands them to its own (`adopt_runs`)."""
    global _COLLECTING
    _COLLECTING = {}
    try:
        for run_set in run_sets:
            run_set(quick)
        return _COLLECTING
    finally:
        _COLLECTING = None


def adopt_runs(made: dict[tuple[Any, ...], tuple[tuple[Any, ...], Any, float]]) -> None:
    """Keeps the runs made in other processes ({key: (job, result, wall seconds)}, `plan_runs`'
    jobs) as this process's, and their seconds for the next run's order (`_write_seconds`)."""
    for key, (_, result, _) in made.items():
        _RUNS[key] = result
    if made:
        _write_seconds({k: job for k, (job, _, _) in made.items()}, {k: s for k, (_, _, s) in made.items()})


def _describe(job: tuple[Any, ...]) -> str:
    """A run in a few words: its workload, machine and technique."""
    if job[0] == "windows":
        _, size, kind, wl, tech, _, k, *warm = job
        return (f"{wl.split(',')[0]} on {kind} {size}, {tech or 'no technique'}" + (f", {k} windows" if k else "")
                + (f", {warm[0]:,} references of warm-up" if warm else ""))
    _, m, wl, tech, limit = job
    return f"{wl.split(',')[0]} on {m['name']}, {tech or 'no technique'}, {limit:,} references"
