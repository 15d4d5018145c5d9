"""How far seed 001's throttled helpers are from their steady state after the windows' warm-up
(issue 86): throttle_at_scale's LibLinear windows (Table 5.2's shape, 4 windows, 1 M measured
references each) with the companions running in the last J references of each window's warm-up,
for growing J. Up to 2 M (the windows' own warm-up W) only the companions' share grows; above
it the application's warm-up grows with it (W = J) and each window's skip shrinks by as much,
so that every measured part stays where `reproduce 001` puts it. Each J has its own baseline
(no helper, warm-up W), printed as variant "none" (its cycles a reference and DRAM walk references
per 1,000, each with its 95% half-width).

For each helper (kernel and user mode with 100 or 1,000 NOPs a page, or a 1 ms sleep after each
sweep; `experiments.THROTTLE`) it prints the speedup and the cut of DRAM walk references with
their 95% half-widths (`window_rows`), and the helper's sweeps over the whole run (its counters,
from `--counters`: one extra run each, without windows' units).

    python scripts/throttle_warmup.py --warm 2e6 4e6 8e6 16e6
    python scripts/throttle_warmup.py --warm 2e6 --variants kernel_nops1000 --counters

About 9 CPU-s a run at J = 2 M, growing with W + 1 M.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time

import tlblab
from tlblab.seeds.s001_pt_baker import experiments as E
from tlblab.seeds.s001_pt_baker import runs

VARIANTS = ("kernel_nops100", "user_nops100", "kernel_nops1000", "user_nops1000", "kernel_sleep1000",
            "user_sleep1000")


def spec_for(wl: str, k: int, warm: int, companions: int) -> str:
    """`runs.window_spec(wl, False, k)` with the warm-up `warm` (>= W: the skip shortened by the
    difference, so the measured parts stay put) and the companions' last `companions` of it."""
    spec = runs.window_spec(wl, False, k)
    w0 = runs.WINDOWS[False][1]
    skip = int(re.search(r"skip=(\d+)", spec).group(1))
    assert warm >= w0 and skip >= warm - w0, (warm, skip)
    spec = re.sub(r"skip=\d+", f"skip={skip - (warm - w0)}", spec)
    spec = re.sub(r"warm=\d+", f"warm={warm}", spec)
    return re.sub(r"window_phase=\d+", f"window_phase={companions}", spec)


def sums(wl: str, technique: str | None, k: int, warm: int, companions: int) -> list[dict[str, float]]:
    """`runs.window_sums` at the warm-up `warm` with the companions in its last `companions`."""
    _, _, take, unit = runs.WINDOWS[False]
    m = runs.with_issue(runs.machine(), wl)
    spec = spec_for(wl, k, warm, companions)
    tech = technique + ",in_windows=1" if technique else None
    with runs._graphs():
        s = tlblab.sample(m, spec, unit=unit, period=1, offset=0, head=0, technique=tech)
    return runs.unit_sums(s, wl, warm, take, k)


def counters(wl: str, technique: str, k: int, warm: int, companions: int) -> dict[str, float]:
    """The helper's counters and the application's cycles over the whole run (no units)."""
    m = runs.with_issue(runs.machine(), wl)
    with runs._graphs():
        r = tlblab.simulate(m, spec_for(wl, k, warm, companions), technique=technique + ",in_windows=1")
    c = r.technique["counters"]
    app = r.stats.get("threads", {}).get(runs.APP, r.stats)
    return {"sweeps": c["sweeps"], "pages_touched": c["pages_touched"], "range_pages": c["range_pages"],
            "helper_busy_cycles": c["helper_busy_cycles"], "helper_sleep_cycles": c["helper_sleep_cycles"],
            "app_cycles": app.get("cycles"), "app_references": app.get("references")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--warm", type=float, nargs="+", required=True, help="companion warm-ups J (references)")
    ap.add_argument("--variants", nargs="*", default=list(VARIANTS))
    ap.add_argument("--windows", type=int, default=runs.WINDOWS[False][0])
    ap.add_argument("--counters", action="store_true", help="also the helpers' counters (one more run each)")
    ap.add_argument("--json", help="append each result as a JSON line to this file")
    a = ap.parse_args(argv)
    _, wl, region = next(w for w in E.STANDINS if w[0] == "liblinear")
    w0 = runs.WINDOWS[False][1]
    for j in (int(x) for x in a.warm):
        warm = max(w0, j)
        t0 = time.process_time()
        got = {"none": sums(wl, None, a.windows, warm, j)}
        for v in a.variants:
            got[v] = sums(wl, runs.VARIANTS[v][2].format(region=region), a.windows, warm, j)
        rows = E.window_rows(got)
        base = got["none"]
        cpr, cpr_hw = runs.ratio_estimate([w["cycles"] for w in base], [w["references"] for w in base])
        rec = {"J": j, "W": warm, "variant": "none", "cycles_per_ref": cpr, "cycles_per_ref_hw": cpr_hw,
               "walk_dram_per_kref": rows["base/walk_dram_per_kref"],
               "walk_dram_per_kref_hw": rows["base/walk_dram_per_kref/half_width"]}
        print(json.dumps(rec), flush=True)
        if a.json:
            with open(a.json, "a") as f:
                f.write(json.dumps(rec) + "\n")
        for v in a.variants:
            src = runs.ROLES[v][1]
            rec = {"J": j, "W": warm, "variant": v, "speedup": rows[f"{src}/speedup"],
                   "speedup_hw": rows[f"{src}/speedup/half_width"], "dram_cut": rows[f"{src}/dram_cut"],
                   "dram_cut_hw": rows[f"{src}/dram_cut/half_width"]}
            if a.counters:
                rec.update(counters(wl, runs.VARIANTS[v][2].format(region=region), a.windows, warm, j))
            print(json.dumps(rec), flush=True)
            if a.json:
                with open(a.json, "a") as f:
                    f.write(json.dumps(rec) + "\n")
        print(f"# J={j:,} W={warm:,}: {time.process_time() - t0:.0f} CPU-s", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
