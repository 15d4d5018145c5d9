"""Why the kernel-mode rows under stream pressure moved when the companions stopped running
before the first window (docs/technique-pt_baker.md, "What moved", 8fb4b0c: the hash join's
kernel-mode speedup 42.45 -> 44.57 %): a controlled pair on seed_scale's hash join windows under
the two stream stressors (2 windows, `PV_PLAN`), the baseline (stressors, no helper) and the
kernel-mode helper, each

- `windows`: as `reproduce 001` runs them, the companions in each window's last 0.5 M warm-up
  references and its measured part only (`in_windows=1`, `COMPANION_WARM`);
- `throughout`: the companions in every simulated reference, the population's included (pt_baker
  without `in_windows`, as before 8fb4b0c);
- `helper_throughout`: the helper in every reference, the stressors in the window phases only
  (`in_windows=2`);
- `stressors_throughout`: the stressors in every reference, the helper in the window phases only
  (`in_windows=3`).

The two differ in the companions' references during the population and the first 1.5 M of each
warm-up; docs/technique-pt_baker.md's table shows that the warm-up's share (J = 0.25 to 2 M)
does not move the speedup, so what moves it is the population phase; the last two settings tell
whether it is the helper's state or the stressors' that carries the move. Prints each setting's
speedup and cut of DRAM walk references with their 95% half-widths and the baseline's cycles a
reference.

    python scripts/companions_before_windows.py [SETTING ...]     # default: all four
"""

from __future__ import annotations

import json
import sys

import tlblab
from tlblab.seeds.s001_pt_baker import experiments as E
from tlblab.seeds.s001_pt_baker import runs


SETTINGS = {"windows": 1, "throughout": 0, "helper_throughout": 2, "stressors_throughout": 3}


def sums(wl: str, technique: str, k: int, setting: str) -> list[dict[str, float]]:
    """`runs.window_sums` on the stream machine, with the companions in the window phases only,
    throughout, or one of them throughout (`SETTINGS`: pt_baker's `in_windows`)."""
    if SETTINGS[setting]:
        return runs.window_sums(runs._variant_machine("4KiB", "stream"), wl, technique, False, k,
                                in_windows=SETTINGS[setting])
    _, warm, take, unit = runs.WINDOWS[False]
    m = runs.with_issue(runs._variant_machine("4KiB", "stream"), wl)
    spec = runs.window_spec(wl, False, k)
    with runs._graphs():
        s = tlblab.sample(m, spec, unit=unit, period=1, offset=0, head=0, technique=technique)
    return runs.unit_sums(s, wl, warm, take, k)


def main() -> int:
    _, wl, region = next(w for w in E.SCALES["seed"] if w[0] == "hash_join")
    k = runs.pv_windows("hash_join", False)
    for setting in sys.argv[1:] or list(SETTINGS):
        got = {v: sums(wl, runs.VARIANTS[v][2].format(region=region), k, setting)
               for v in ("stream_none", "stream_kernel")}
        rows = E.window_rows(got)
        base = got["stream_none"]
        cpr, _ = runs.ratio_estimate([w["cycles"] for w in base], [w["references"] for w in base])
        rec = {"companions": setting, "base_cycles_per_ref": cpr,
               **{key: rows[f"stream/kernel/{key}"] for key in
                  ("speedup", "speedup/half_width", "dram_cut", "dram_cut/half_width")}}
        print(json.dumps(rec), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
