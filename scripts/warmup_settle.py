"""Whether seed 001's windowed runs have settled after the windows' 2 M-reference warm-up (issue
86): the runs of one set (below) made at a longer warm-up W (`runs.window_sums(..., warm=W)`,
or `power.window_energy(..., warm=W)` for the power set: each window begins earlier by W - 2 M,
so its measured part stays where `reproduce 001` puts it; a throttled helper and its companions
run through all of W, every other run's companions through the last 0.5 M, as `reproduce 001`
would run them at that warm-up), and their rows as the reproductions compute them
(`experiments.window_rows`; the power set's package power and increase as `power.fig6_12`).

Each run's window sums go to --json as one line ({"set", "variant", "W", "sums"}, appended), so
that runs made in several processes are reported together (--report reads them back):

    python scripts/warmup_settle.py --set bc_stream --warm 4e6 --variants stream_none --json out/lab/settle.jsonl
    python scripts/warmup_settle.py --report out/lab/settle.jsonl

The sets (the 2 M runs are `reproduce 001`'s own; compare with its CSVs):
  bc_stream   sensitivity_at_scale's BC under two stream stressors (Fig. 6.5), 2 windows
  hj_stream   the hash join's throttled runs under the stressors, natively (seed_scale,
              sensitivity_at_scale) and virtualized (Fig. 6.7), 2 windows
  ll_stream   LibLinear's runs under the stressors, natively and virtualized, 4 windows
  ll_virt     LibLinear virtualized (Fig. 6.6), 4 windows
  ll_native   LibLinear natively (standins, Fig. 6.9's prefetches), 4 windows
  gups_native, g500_native, bc_native, hj_native, canneal_native
              the other workloads natively, without a helper and with the user-mode one, 4 windows
  g500_stream seed_scale's list-based Graph500 under the stressors (Figs. 6.3, 6.4), 4 windows
  (--rows: the stream runs with DDR4 row activations, to measure what they cost and move)
  power       power's 15 runs (Fig. 6.12: LibLinear, BC and the hash join; no helper, KWN, KWS,
              UWN, UWS), 2 windows
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from tlblab.seeds.s001_pt_baker import experiments as E
from tlblab.seeds.s001_pt_baker import power as P
from tlblab.seeds.s001_pt_baker import runs

SETS = {
    "bc_stream": ("gapbs_bc", ("stream_none", "stream_kernel_nops100", "stream_user_nops100",
                               "stream_kernel_sleep1000", "stream_user_sleep1000")),
    "hj_stream": ("hash_join", ("stream_none", "stream_kernel_sleep1000", "stream_user_sleep1000",
                                "virt_stream_none", "virt_stream_kernel_sleep1000")),
    "ll_stream": ("liblinear", ("stream_none", "stream_kernel", "stream_user", "stream_kernel_sleep1000",
                                "virt_stream_none", "virt_stream_kernel_sleep1000")),
    "ll_virt": ("liblinear", ("virt_none", "virt_user")),
    "ll_native": ("liblinear", ("none", "kernel", "user", "prefetch")),
    # The other workloads' unthrottled native runs (seed_scale's), baseline and user-mode helper.
    "gups_native": ("gups", ("none", "user")),
    "g500_native": ("graph500_bfs", ("none", "user")),
    "bc_native": ("gapbs_bc", ("none", "user")),
    "hj_native": ("hash_join", ("none", "user")),
    "canneal_native": ("canneal", ("none", "user")),
    "g500_stream": ("graph500_bfs", ("stream_none", "stream_kernel", "stream_user")),
}


def _workload(name: str) -> tuple[str, str]:
    _, wl, region = next(w for w in runs.SCALES["seed"] + runs.STANDINS if w[0] == name)
    return wl, region


def _windows(set_name: str, name: str) -> int:
    if set_name.startswith(("ll_native", "g500_stream")) or set_name.endswith("_native"):
        return 4  # WINDOWS' (at_scale's and seed_scale's unthrottled runs)
    return runs.pv_windows(name, False)


def run_one(set_name: str, variant: str, warm: int) -> list[dict[str, float]]:
    """One run of the set at warm-up `warm`: its window sums (power: its window energies)."""
    if set_name == "power":
        name, v = variant.split("/")
        wl, region = P._spec(name, False)
        tech = P.VARIANTS[v]
        return P.window_energy(E.machine(), wl, tech.format(region=region) if tech else None, False, P.K[False],
                               warm)
    name, _ = SETS[set_name.split("+")[0]]
    wl, region = _workload(name)
    size, kind, tech = runs.VARIANTS[variant]
    return runs.window_sums(runs._variant_machine(size, kind), wl, tech.format(region=region) if tech else None,
                            False, _windows(set_name, name), warm)


def variants_of(set_name: str) -> list[str]:
    if set_name == "power":
        return [f"{n}/{v}" for n in P.WORKLOADS for v in P.VARIANTS]
    return list(SETS[set_name][1])


def report(path: str) -> None:
    """Each set's rows at each warm-up, from the runs in `path`."""
    got: dict[tuple[str, int], dict[str, list[dict[str, float]]]] = {}
    cpu: dict[tuple[str, int], float] = {}
    for line in open(path):
        r = json.loads(line)
        got.setdefault((r["set"], r["W"]), {})[r["variant"]] = r["sums"]
        cpu[(r["set"], r["W"])] = cpu.get((r["set"], r["W"]), 0.0) + r.get("cpu_s", 0.0)
    for (set_name, warm), by in sorted(got.items()):
        print(f"## {set_name} W={warm:,} ({len(by)} runs, {cpu[(set_name, warm)]:.0f} CPU-s)")
        if set_name == "power":
            for name in P.WORKLOADS:
                if f"{name}/base" not in by:
                    continue
                base = by[f"{name}/base"]
                pb = E.ratio_estimate([w["package_j"] for w in base], [w["seconds"] for w in base])
                line = [f"{name} base {pb[0]:.3f} W +- {pb[1]:.3f}"]
                for v in P.VARIANTS:
                    ws = by.get(f"{name}/{v}")
                    if v == "base" or ws is None:
                        continue
                    p = E.ratio_estimate([w["package_j"] for w in ws], [w["seconds"] for w in ws])
                    line.append(f"{v} {p[0]:.3f} +- {p[1]:.3f} ({100 * (p[0] / pb[0] - 1):+.3f} %)")
                print("  " + "; ".join(line))
            continue
        rows = E.window_rows(by)
        for key in sorted(rows):
            if key.endswith("/half_width") or not key.endswith(("speedup", "dram_cut", "walk_dram_per_kref")):
                continue
            print(f"  {key:45s} {rows[key]:10.4f} +- {rows.get(key + '/half_width', float('nan')):.4f}")
        for v, ws in by.items():
            if runs.ROLES[v][2] is None:
                c = E.ratio_estimate([w["cycles"] for w in ws], [w["references"] for w in ws])
                print(f"  {v} cycles a reference {c[0]:.4f} +- {c[1]:.4f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", choices=list(SETS) + ["power"])
    ap.add_argument("--warm", type=float, nargs="+", help="warm-ups W (references; 2 M is reproduce 001's)")
    ap.add_argument("--variants", nargs="*", help="default: the set's every run")
    ap.add_argument("--rows", action="store_true",
                    help="the stream runs with DDR4 row activations (runs.ZEN3_DRAM_ROWS; set name gets '+rows')")
    ap.add_argument("--json", help="append each run's window sums to this file")
    ap.add_argument("--report", help="print the rows of the runs in this file")
    a = ap.parse_args(argv)
    if a.report:
        report(a.report)
        return 0
    runs.STREAM_ROWS = a.rows
    for warm in (int(x) for x in a.warm):
        for v in a.variants or variants_of(a.set):
            t0 = time.process_time()
            sums = run_one(a.set, v, warm)
            rec = {"set": a.set + ("+rows" if a.rows else ""), "variant": v, "W": warm, "sums": sums, "cpu_s": time.process_time() - t0}
            print(f"# {a.set} {v} W={warm:,}: {rec['cpu_s']:.0f} CPU-s", file=sys.stderr, flush=True)
            if a.json:
                with open(a.json, "a") as f:
                    f.write(json.dumps(rec) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
