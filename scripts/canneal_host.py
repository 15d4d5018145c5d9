#!/usr/bin/env python3
"""PARSEC's canneal on this host with and without transparent huge pages, beside tlblab's model
of it (seed 001's Canneal, §5.2 and §6.1.1; docs/lab/measurements.md, 2026-11-28).

Writes a random netlist in canneal's input format (`N max_x max_y`, then one line an element:
name, type, its fan-in names, END), builds canneal from PARSEC 3.0's sources with timing hooks of
its own under PARSEC's hook names (thread CPU time and wall time of the set-up, which reads the
netlist, and of the region of interest, the annealer), and runs it with
/sys/kernel/mm/transparent_hugepage/enabled set to each mode in turn (root; the setting is put
back afterwards), sampling the process's AnonHugePages. With `--model`, the same netlist size
in tlblab (seed 001's zen3 machine, its windows): 4 KiB pages, 2 MiB pages as THP backs canneal
(`canneal:thp=1`, the element array only) and 2 MiB pages everywhere (`thp=0`).

    python scripts/canneal_host.py --canneal-src PARSEC/pkgs/kernels/canneal/src
        [--elements 5000000] [--steps 200] [--swaps 30000] [--reps 2] [--model] [--helper] [--out DIR]

`--helper` compares, at THP `never`, canneal alone with canneal beside `tlblab warm --pid` (libtlblab's
helper warming the page-table entries of its element array, its largest anonymous mapping, from CPU 1
from the moment the annealer begins), canneal on CPU 0.

PARSEC is not packaged in Debian: get its sources (PARSEC 3.0, pkgs/kernels/canneal/src) yourself.
Host timings are noisy on a shared VM: the modes alternate within each repetition, and the
medians and ranges are printed.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")
SOURCES = ["annealer_thread.cpp", "rng.cpp", "netlist.cpp", "main.cpp", "netlist_elem.cpp"]

# PARSEC's hook names (main.cpp calls them with ENABLE_PARSEC_HOOKS), timing what they bracket.
HOOKS_H = """#ifndef TIMING_HOOKS_H
#define TIMING_HOOKS_H
enum { __parsec_canneal = 1 };
#ifdef __cplusplus
extern "C" {
#endif
void __parsec_bench_begin(int);
void __parsec_bench_end(void);
void __parsec_roi_begin(void);
void __parsec_roi_end(void);
#ifdef __cplusplus
}
#endif
#endif
"""
HOOKS_C = r"""#include <stdio.h>
#include <time.h>
#include "hooks.h"
static struct timespec c0, w0, c1, w1;
static double d(struct timespec a, struct timespec b) {
    return (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9;
}
void __parsec_bench_begin(int b) {
    (void)b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    clock_gettime(CLOCK_MONOTONIC, &w0);
}
void __parsec_roi_begin(void) {
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    clock_gettime(CLOCK_MONOTONIC, &w1);
    fprintf(stderr, "setup cpu=%.3f wall=%.3f\n", d(c0, c1), d(w0, w1));
}
void __parsec_roi_end(void) {
    struct timespec c2, w2;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c2);
    clock_gettime(CLOCK_MONOTONIC, &w2);
    fprintf(stderr, "roi cpu=%.3f wall=%.3f\n", d(c1, c2), d(w1, w2));
}
void __parsec_bench_end(void) {}
"""


def write_netlist(path: Path, n: int, degree: int = 6) -> None:
    """n elements named e0..e{n-1} on the smallest square grid, each with `degree` fan-ins drawn
    uniformly (xorshift64, fixed seed): canneal's generated inputs connect elements at random."""
    if path.exists():
        return
    side = int(n ** 0.5) + 1
    tmp = path.with_suffix(".tmp")
    s = 0x9E3779B97F4A7C15
    mask = (1 << 64) - 1
    with open(tmp, "w") as f:
        f.write(f"{n}\t{side}\t{side}\n")
        for i in range(n):
            ins = []
            for _ in range(degree):
                s ^= (s << 13) & mask
                s ^= s >> 7
                s ^= (s << 17) & mask
                ins.append(f"e{s % n}")
            f.write(f"e{i}\t1\t" + "\t".join(ins) + "\tEND\n")
    tmp.replace(path)


def build(src: Path, out: Path) -> Path:
    missing = [s for s in SOURCES if not (src / s).exists()]
    if missing:
        sys.exit(f"canneal_host: {src}: not canneal's sources (missing {', '.join(missing)})")
    (out / "hooks.h").write_text(HOOKS_H)
    (out / "hooks.c").write_text(HOOKS_C)
    exe = out / "canneal"
    subprocess.run(["gcc", "-O2", "-c", str(out / "hooks.c"), "-o", str(out / "hooks.o")], check=True)
    subprocess.run(["g++", "-O3", "-DENABLE_PARSEC_HOOKS", f"-I{out}", "-w", "-o", str(exe)]
                   + [str(src / s) for s in SOURCES] + [str(out / "hooks.o"), "-lm"], check=True)
    return exe


def largest_anonymous_mapping(pid: int) -> str:
    """START-END (hex) of process `pid`'s largest anonymous writable mapping: canneal's element
    array, the one region the seed's helper sweeps (§5.2, Table 5.2's PT-Baker footprint)."""
    best = (0, "")
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        f = line.split()
        if len(f) == 5 and f[1].startswith("rw"):
            lo, hi = (int(x, 16) for x in f[0].split("-"))
            best = max(best, (hi - lo, f[0]))
    return best[1]


def run_once(exe: Path, netlist: Path, swaps: int, steps: int, warm: bool) -> dict[str, float]:
    """One run of canneal on CPU 0; `warm`: `tlblab warm` keeps its page-table entries warm from
    CPU 1 (the user-level helper of seed 001 §4, from outside the process) from the moment its
    annealer begins until it exits."""
    p = subprocess.Popen(["taskset", "-c", "0", str(exe), "1", str(swaps), "2000", str(netlist), str(steps)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    huge_kb = [0]

    def sample() -> None:
        while p.poll() is None:
            try:
                m = re.search(r"AnonHugePages:\s+(\d+)", Path(f"/proc/{p.pid}/smaps_rollup").read_text())
                huge_kb[0] = max(huge_kb[0], int(m.group(1)) if m else 0)
            except OSError:
                pass
            time.sleep(1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    err, helper = [], None
    assert p.stderr is not None
    for line in p.stderr:
        err.append(line)
        if warm and line.startswith("setup ") and helper is None:
            helper = subprocess.Popen([str(Path(sys.executable).with_name("tlblab")), "warm", "--pid", str(p.pid),
                                       "--range", largest_anonymous_mapping(p.pid),
                                       "--cpu", "1", "--app-cpu", "0", "--llc-check", "off", "--json"],
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    p.wait()
    sampler.join()
    text = "".join(err)
    got: dict[str, float] = {}
    for k, cpu, wall in re.findall(r"(setup|roi) cpu=([\d.]+) wall=([\d.]+)", text):
        got[f"{k}_cpu"], got[f"{k}_wall"] = float(cpu), float(wall)
    if p.returncode != 0 or len(got) != 4:
        sys.exit(f"canneal_host: canneal failed (exit {p.returncode}): {text.strip()[-300:]}")
    if helper is not None:
        out, _ = helper.communicate(timeout=60)
        m = re.search(r'"sweeps":\s*(\d+)', out)
        got["sweeps"] = float(m.group(1)) if m else float("nan")
    got["huge_mb"] = huge_kb[0] / 1024
    return got


def model(elements: int) -> None:
    from tlblab.seeds.s001_pt_baker import experiments as ex

    base = f"canneal:elements={elements},degree=6,swaps=30000,temp_steps=20,start_temp=2000,populate=1"
    rates = {}
    for label, size, wl in (("4 KiB", "4KiB", base), ("2 MiB as THP (thp=1)", "2MiB", base + ",thp=1"),
                            ("2 MiB everywhere (thp=0)", "2MiB", base + ",thp=0")):
        ws = ex.window_sums(ex._variant_machine(size, "native"), wl, None, False)
        rates[label] = sum(w["cycles"] for w in ws) / sum(w["references"] for w in ws)
        print(f"model {label}: {rates[label]:.3f} cycles per reference")
    for label, r in rates.items():
        if label != "4 KiB":
            print(f"model speed-up of {label}: {100 * (rates['4 KiB'] / r - 1):.1f}%")


def main() -> None:
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a.add_argument("--canneal-src", type=Path, required=True)
    a.add_argument("--elements", type=int, default=5_000_000)
    a.add_argument("--steps", type=int, default=200)
    a.add_argument("--swaps", type=int, default=30_000)
    a.add_argument("--reps", type=int, default=2)
    a.add_argument("--modes", default="never,always")
    a.add_argument("--model", action="store_true")
    a.add_argument("--helper", action="store_true",
                   help="no helper against `tlblab warm` beside the annealer, THP never (instead of the THP modes)")
    a.add_argument("--out", type=Path, default=Path("out/lab/canneal"))
    o = a.parse_args()
    o.out.mkdir(parents=True, exist_ok=True)
    netlist = o.out / f"{o.elements}.nets"
    write_netlist(netlist, o.elements)
    exe = build(o.canneal_src, o.out)
    before = re.search(r"\[(\w+)\]", THP.read_text())
    # (label, THP mode, helper): the THP modes, or with --helper no helper against `tlblab warm`
    # at THP `never` (4 KiB pages, as the seed's helper runs).
    cases = ([("none", "never", False), ("warm", "never", True)] if o.helper
             else [(m, m, False) for m in o.modes.split(",")])
    runs: dict[str, list[dict[str, float]]] = {c[0]: [] for c in cases}
    try:
        for rep in range(o.reps):
            for label, mode, warm in cases:
                THP.write_text(mode)
                r = run_once(exe, netlist, o.swaps, o.steps, warm)
                runs[label].append(r)
                print(f"rep {rep + 1} {label} (THP {mode}): setup {r['setup_cpu']:.2f} s CPU, annealer "
                      f"{r['roi_cpu']:.2f} s CPU ({1e6 * r['roi_cpu'] / (o.swaps * o.steps):.3f} us a swap), "
                      f"{r['huge_mb']:.0f} MB in huge pages"
                      + (f", {r['sweeps']:.0f} helper sweeps" if "sweeps" in r else ""), flush=True)
    finally:
        if before:
            THP.write_text(before.group(1))
    labels = [c[0] for c in cases]
    for key in ("setup_cpu", "roi_cpu"):
        med = {m: statistics.median(r[key] for r in runs[m]) for m in labels}
        rng = {m: (min(r[key] for r in runs[m]), max(r[key] for r in runs[m])) for m in labels}
        print(f"{key}: " + ", ".join(f"{m} {med[m]:.2f} s ({rng[m][0]:.2f}-{rng[m][1]:.2f})" for m in labels))
        first, second = labels[0], labels[-1]
        print(f"  speed-up of {second} over {first} ({key}, medians): {100 * (med[first] / med[second] - 1):.1f}%")
    if o.model:
        model(o.elements)


if __name__ == "__main__":
    main()
