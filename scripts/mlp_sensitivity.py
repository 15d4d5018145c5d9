"""How seed 001's GUPS verdict depends on the machine's miss slots (`timing.mlp.miss_slots`).

Zen 3's count of L1D misses in flight is the one `ZEN3_MLP` constant no source here states
(docs/technique-pt_baker.md). This runs `at_scale`'s GUPS windows (32 GiB, Table 5.2's size)
with the slot count varied and everything else as `tlblab reproduce 001` runs it (walkers
min(6, slots): the machine refuses more walkers than slots), and prints each count's
helper speedups and DRAM walk-reference cuts with their 95% half-widths.

    python scripts/mlp_sensitivity.py 4 8 16 24 48

About 30 s of CPU a count once `out/checkpoints` holds GUPS' population.
"""

import sys

from tlblab.seeds.s001_pt_baker import experiments as E

WORKLOAD, REGION = E.SCALES["seed"][0][1], E.SCALES["seed"][0][2]


def main(counts: list[int]) -> None:
    keys = ("kernel/speedup", "user/speedup", "kernel/dram_cut", "user/dram_cut")
    print("slots", *keys, sep="\t")
    for slots in counts:
        E.ZEN3_MLP["miss_slots"] = slots
        E.ZEN3_MLP["walkers"] = min(6, slots)
        m = E.machine()
        runs = {}
        for variant in ("none", "kernel", "user"):
            tech = E.VARIANTS[variant][2]
            runs[variant] = E.window_sums(m, WORKLOAD, tech.format(region=REGION) if tech else None, False)
        rows = E.window_rows(runs)
        print(slots, *(f"{rows[k]:.2f} ±{rows[k + '/half_width']:.2f}" for k in keys), sep="\t", flush=True)


if __name__ == "__main__":
    try:
        main([int(a) for a in sys.argv[1:]] or [4, 8, 16, 24, 48])
    except ValueError as e:
        sys.exit(f"mlp_sensitivity: {e}")
