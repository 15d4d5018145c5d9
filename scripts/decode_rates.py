#!/usr/bin/env python3
"""Decoding rates of one ChampSim trace compressed each way (docs/champsim.md, "Decoding compressed
traces"): the system's `xz -dc`, `gzip -dc` and `bzip2 -dc` alone, then `tlblab simulate` (zen3,
full model) on the trace plain, .zst, .xz, .gz and .bz2. Prints wall and CPU seconds and
references per second, and the load average before and after; a benchmark, not a test.

    python scripts/decode_rates.py DIR/gups.champsimtrace [--baseline OTHER/tlblab]

DIR must hold the plain trace and its .xz, .zst, .gz and .bz2 (`xz -k`, `zstd`, `gzip -k`,
`bzip2 -k`). `--baseline` also times another tlblab build on the compressed forms (the one
before a change).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time


def timed(cmd: list[str]) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds of the command (children included), its stdout."""
    t0, r0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter() - t0, (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime), p.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace", help="the plain ChampSim trace (its compressed copies beside it)")
    ap.add_argument("--baseline", help="another tlblab executable to time on the .xz")
    args = ap.parse_args()
    here = [sys.executable, "-m", "tlblab.cli"]
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for tool, ext in (("xz", ".xz"), ("gzip", ".gz"), ("bzip2", ".bz2")):
        t, c, _ = timed(["sh", "-c", f"{tool} -dc '{args.trace}{ext}' > /dev/null"])
        print(f"{tool} -dc alone: {t:.2f} s wall, {c:.2f} s CPU")
    runs = [("this build", here, ext) for ext in ("", ".zst", ".xz", ".gz", ".bz2")]
    if args.baseline:
        runs += [("baseline", [args.baseline], ext) for ext in (".xz", ".gz", ".bz2")]
    for label, tl, ext in runs:
        t, c, out = timed([*tl, "simulate", "--machine", "zen3", "--workload", args.trace + ext, "--json"])
        refs = json.loads(out)["total"]["references"]
        print(f"{label}: {args.trace}{ext}: {refs} refs, {t:.2f} s wall, {c:.2f} s CPU (decompressor "
              f"included), {refs / t / 1e6:.2f} M refs/s")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
