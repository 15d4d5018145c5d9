"""Worst-case timing of the TLB-coloring allocator (tlb_malloc/tlb_free) against glibc malloc/free.

Runs the C harness `color_wcet` (runtime/bench/color_wcet.c): one seeded random workload is
replayed alternately on both allocators and every single call is timed with lfence+rdtsc. Reports
p50/p99/p99.9/max in TSC ticks per operation, warm (back-to-back) and cold (caches and TLBs flushed
by a 64 MiB sweep before every 50th operation). `max` includes whatever the VM and kernel did to
the thread at that moment (preemption shows up as millions of ticks); p99.9 is the figure to
compare. On this VM the TSC advances in steps of about 24 ticks and one timing costs ~49 ticks
(reported as `timer_overhead`); the numbers include it.
"""

from __future__ import annotations

import json
import subprocess

from tlblab.errors import UserError
from tlblab.host._runtime import executable

NAME = "alloc"


def _run(args: list[str]) -> dict:
    exe = executable("color_wcet")
    proc = subprocess.run([str(exe), *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise UserError(f"color_wcet failed (exit {proc.returncode}): {proc.stderr.strip()}")
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        raise UserError(f"color_wcet printed malformed JSON at offset {e.pos}: {e.msg}") from None


def run(quick: bool) -> dict:
    warm = _run(["--ops", "20000" if quick else "200000", "--reps", "2" if quick else "5"])
    cold = _run(["--ops", "2000" if quick else "20000", "--reps", "1" if quick else "2", "--cold-every", "50"])
    out = {"unit": "TSC ticks per call (including timer_overhead)", "ns_per_tick": warm["ns_per_tick"]}
    for name, res in (("warm", warm), ("cold", cold)):
        out[name] = {k: res[k] for k in ("timer_overhead", "tlb_malloc", "tlb_free", "glibc_malloc", "glibc_free")}
        out[name]["tlb_malloc_failures"] = res["tlb_malloc_failures"]
        out[name]["ops"] = res["ops"]
        out[name]["reps"] = res["reps"]
    return out
