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
  (dirty lines written back over the same channels, `DramConfig::writebacks`).

Each runs at_scale's GUPS windows (32 GiB, Table 5.2's size) with no helper and both helpers and
prints the helpers' speedups and cuts of DRAM walk references, each with its 95% half-width.

    python scripts/gups_sensitivity.py --slots 4 8 16 24 48
    python scripts/gups_sensitivity.py --dram-mt 4000 2000 1000 500
    python scripts/gups_sensitivity.py --dram-model reads writebacks

About 30 s of CPU a value once `out/checkpoints` holds GUPS' population.
"""

import argparse
import sys
import time

from tlblab.seeds.s001_pt_baker import experiments as E

WORKLOAD, REGION = E.SCALES["seed"][0][1], E.SCALES["seed"][0][2]
# `--dram-model`'s fields of `timing.dram` over `ZEN3_DRAM` (Table 5.1's DDR4-4000, two channels).
MODELS = {
    "reads": {"writebacks": False},
    "writebacks": {"writebacks": True},
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
    o = a.parse_args()
    print("slots" if o.slots else "dram_mt" if o.dram_mt else "dram_model", *KEYS, "cpu_s", sep="\t")
    for value in o.slots or o.dram_mt or o.dram_model:
        if o.slots:
            E.ZEN3_MLP["miss_slots"], E.ZEN3_MLP["walkers"] = value, min(6, value)
        elif o.dram_mt:
            E.TIMING_DRAM, E.ZEN3_DRAM["mega_transfers"] = True, value
            E.ZEN3_DRAM["writebacks"] = not o.reads_only
        else:
            E.TIMING_DRAM = True
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
