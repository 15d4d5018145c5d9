"""How seed 001's GUPS verdict (at_scale's scale-gups-not-helped) depends on two constants no
source here states: the core's miss slots and the DRAM bandwidth its random lines get.

- `--slots N ...`: `timing.mlp.miss_slots` (Zen 3's L1D misses in flight; `ZEN3_MLP`'s 24 is
  unchecked, docs/technique-pt_baker.md), walkers min(6, N) (a machine refuses more walkers
  than slots), no DRAM channels, as `tlblab reproduce 001` runs.
- `--dram-mt MT ...`: the DRAM channels on (`timing.dram`, `ZEN3_DRAM`) at MT mega-transfers a
  second instead of Table 5.1's DDR4-4000: a stand-in for the sustained bandwidth of random
  lines, which the channel model at its peak leaves out. With `--reads-only`, without the
  writebacks of dirty lines (the channel model before 2026-11-28).
- `--dram-model NAME ...`: the DRAM channels on at Table 5.1's DDR4-4000 with the mechanisms
  NAME models: `reads` (peak bandwidth, reads only: the model before 2026-11-28), `writebacks`
  (dirty lines written back over the same channels, `DramConfig::writebacks`), `activations`
  and `activations-4ranks` (writebacks and row activations, `DramConfig`'s rows: DDR4 x8
  devices' tRRD_S and tFAW at DDR4-3200 and their 16 banks and 1 KiB pages, with 2 or 4 ranks
  a channel; `ROWS` has the sources).

Each runs at_scale's GUPS windows (32 GiB, Table 5.2's size) with no helper and both helpers and
prints the helpers' speedups and cuts of DRAM walk references, each with its 95% half-width.
`--workload canneal` runs standins' Canneal windows instead (the seed's 6e7 elements, 20 GB;
§6.1.1: not helped either), the same way.

    python scripts/gups_sensitivity.py --slots 4 8 16 24 48
    python scripts/gups_sensitivity.py --dram-mt 4000 2000 1000 500
    python scripts/gups_sensitivity.py --dram-model reads writebacks activations activations-4ranks
    python scripts/gups_sensitivity.py --workload canneal --dram-model activations

About 30 s of CPU a value once `out/checkpoints` holds GUPS' population.
"""

import argparse
import sys
import time

from tlblab.seeds.s001_pt_baker import experiments as E
from tlblab.seeds.s001_pt_baker import runs  # TIMING_DRAM is read there (machine), not in the re-export

# The workloads `--workload` names: (spec, the region PT-Baker sweeps), as reproduce 001 runs them.
WORKLOADS = {
    "gups": (E.SCALES["seed"][0][1], E.SCALES["seed"][0][2]),
    "canneal": (E.STANDINS[0][1], E.STANDINS[0][2]),
}
WORKLOAD, REGION = WORKLOADS["gups"]
# `--dram-model`'s fields of `timing.dram` over `ZEN3_DRAM` (Table 5.1's DDR4-4000, two channels).
# Row activations of DDR4 x8 devices (JESD79-4C as Ramulator 2 tabulates it: CMU-SAFARI/ramulator2,
# src/dram/impl/DDR4.cpp at 525d045): at DDR4-3200, the fastest JEDEC bin (tCK 625 ps; the seed's
# DDR4-4000 is an overclocking profile whose timings it does not state), nRRD_S = 4 and nFAW = 34
# clocks: 2,500 and 21,250 ps (one tRRD for the rank: tRRD_S, between bank groups, as random banks
# mostly are; tRRD_L is 5 ns). An x8 device has 4 bank groups of 4 banks and 2^10 columns of 8
# bits, a 1 KiB page: a rank of 8 devices on the 64-bit channel, a row of 8 KiB. Ranks: 64 GB on
# two channels (Table 5.1, §5.1) is 32 GB a channel and a rank of 16 Gb devices 16 GB, so at
# least 2 (assumed unbuffered DIMMs of x8 devices; four 16 GB dual-rank DIMMs would make 4).
# The address mapping (rows over channels, then ranks, then banks) is assumed.
ROWS = {"banks": 16, "row_bytes": 8192, "t_rrd_ps": 2500, "t_faw_ps": 21250}
MODELS = {
    "reads": {"writebacks": False},
    "writebacks": {"writebacks": True},
    "activations": {"writebacks": True, "ranks": 2, **ROWS},
    "activations-4ranks": {"writebacks": True, "ranks": 4, **ROWS},
}
KEYS = ("kernel/speedup", "user/speedup", "kernel/dram_cut", "user/dram_cut")


def rows_at() -> dict[str, float]:
    m = E.machine()
    runs = {}
    for variant in ("none", "kernel", "user"):
        tech = E.VARIANTS[variant][2]
        runs[variant] = E.window_sums(m, WORKLOAD, tech.format(region=REGION) if tech else None, False)
    return E.window_rows(runs)


def main() -> None:
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = a.add_mutually_exclusive_group(required=True)
    g.add_argument("--slots", type=int, nargs="+")
    g.add_argument("--dram-mt", type=int, nargs="+")
    g.add_argument("--dram-model", nargs="+", choices=sorted(MODELS))
    a.add_argument("--reads-only", action="store_true", help="with --dram-mt: no writebacks")
    a.add_argument("--workload", choices=sorted(WORKLOADS), default="gups",
                   help="at_scale's GUPS windows (default) or standins' Canneal windows")
    o = a.parse_args()
    global WORKLOAD, REGION
    WORKLOAD, REGION = WORKLOADS[o.workload]
    print("slots" if o.slots else "dram_mt" if o.dram_mt else "dram_model", *KEYS, "cpu_s", sep="\t")
    for value in o.slots or o.dram_mt or o.dram_model:
        if o.slots:
            E.ZEN3_MLP["miss_slots"], E.ZEN3_MLP["walkers"] = value, min(6, value)
        elif o.dram_mt:
            runs.TIMING_DRAM, E.ZEN3_DRAM["mega_transfers"] = True, value
            E.ZEN3_DRAM["writebacks"] = not o.reads_only
        else:
            runs.TIMING_DRAM = True
            for k in ("ranks", *ROWS):
                E.ZEN3_DRAM.pop(k, None)
            E.ZEN3_DRAM.update(MODELS[value])
        cpu = time.process_time()
        rows = rows_at()
        cpu = time.process_time() - cpu
        print(value, *(f"{rows[k]:.2f} ±{rows[k + '/half_width']:.2f}" for k in KEYS), f"{cpu:.0f}", sep="\t",
              flush=True)


if __name__ == "__main__":
    try:
        main()
    except ValueError as e:
        sys.exit(f"gups_sensitivity: {e}")
