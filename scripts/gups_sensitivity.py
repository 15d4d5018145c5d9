"""How seed 001's GUPS verdict (at_scale's scale-gups-not-helped) depends on two constants no
source here states: the core's miss slots and the DRAM bandwidth its random lines get.

- `--slots N ...`: `timing.mlp.miss_slots` (Zen 3's L1D misses in flight; `ZEN3_MLP`'s 24 is
  unchecked, docs/technique-pt_baker.md), walkers min(6, N) (a machine refuses more walkers
  than slots), no DRAM channels, as `tlblab reproduce 001` runs.
- `--dram-mt MT ...`: the DRAM channels on (`timing.dram`, `ZEN3_DRAM`) at MT mega-transfers a
  second instead of Table 5.1's DDR4-4000: a stand-in for the sustained bandwidth of random
  lines and their writebacks, which the channel model (peak bandwidth, reads only) leaves out.

Each runs at_scale's GUPS windows (32 GiB, Table 5.2's size) with no helper and both helpers and
prints the helpers' speedups and cuts of DRAM walk references, each with its 95% half-width.

    python scripts/gups_sensitivity.py --slots 4 8 16 24 48
    python scripts/gups_sensitivity.py --dram-mt 4000 2000 1000 500

About 30 s of CPU a value once `out/checkpoints` holds GUPS' population.
"""

import argparse
import sys

from tlblab.seeds.s001_pt_baker import experiments as E

WORKLOAD, REGION = E.SCALES["seed"][0][1], E.SCALES["seed"][0][2]
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
    o = a.parse_args()
    print("slots" if o.slots else "dram_mt", *KEYS, sep="\t")
    for value in o.slots or o.dram_mt:
        if o.slots:
            E.ZEN3_MLP["miss_slots"], E.ZEN3_MLP["walkers"] = value, min(6, value)
        else:
            E.TIMING_DRAM, E.ZEN3_DRAM["mega_transfers"] = True, value
        rows = rows_at()
        print(value, *(f"{rows[k]:.2f} ±{rows[k + '/half_width']:.2f}" for k in KEYS), sep="\t", flush=True)


if __name__ == "__main__":
    try:
        main()
    except ValueError as e:
        sys.exit(f"gups_sensitivity: {e}")
