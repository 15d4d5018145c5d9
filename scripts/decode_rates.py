#!/usr/bin/env python3
"""Decoding rates of one ChampSim trace compressed each way (docs/champsim.md, "Decoding compressed
traces"): run in a folder holding gups.champsimtrace{,.xz,.zst,.gz,.bz2}. The second row runs
/work/main's tlblab (the build before the reading thread) when it is there."""
import subprocess, sys, time, json
rows = []
def timed(cmd):
    t0 = time.perf_counter(); r0 = __import__("resource").getrusage(__import__("resource").RUSAGE_CHILDREN)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=True)
    r1 = __import__("resource").getrusage(__import__("resource").RUSAGE_CHILDREN)
    return time.perf_counter() - t0, (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime), p.stdout
t, c, _ = timed(["sh", "-c", "xz -dc gups.champsimtrace.xz > /dev/null"])
print(f"xz -dc alone: {t:.2f} s wall, {c:.2f} s CPU, {850000/t/1e6:.2f} M records/s")
for label, tl, f in [("this branch", "/work/wt/champsim47/.venv/bin/tlblab", "gups.champsimtrace.xz"),
                     ("main (no reading thread)", "/work/main/.venv/bin/tlblab", "gups.champsimtrace.xz"),
                     ("this branch", "/work/wt/champsim47/.venv/bin/tlblab", "gups.champsimtrace"),
                     ("this branch", "/work/wt/champsim47/.venv/bin/tlblab", "gups.champsimtrace.zst"),
                     ("this branch", "/work/wt/champsim47/.venv/bin/tlblab", "gups.champsimtrace.gz"),
                     ("this branch", "/work/wt/champsim47/.venv/bin/tlblab", "gups.champsimtrace.bz2")]:
    t, c, out = timed([tl, "simulate", "--machine", "zen3", "--workload", f, "--json"])
    d = json.loads(out); refs = d["total"]["references"]
    print(f"{label}: {f}: {refs} refs, {t:.2f} s wall (process), {c:.2f} s CPU, {refs/t/1e6:.2f} M refs/s; run block: {d.get('run')}")
