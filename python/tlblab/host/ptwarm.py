"""`tlblab host ptwarm`: does the page-table warmer (PT-Baker, seed 001) help on this machine?

Runs the C program `ptwarm_bench` (runtime/bench/ptwarm_bench.c), which times a dependent chase and
independent loads over a large region of 4 KiB pages while a helper on the other CPU warms the page
tables (none / spin / touch / prefetch / mincore / pagemap / ... ; see that file), in paired, interleaved
rounds, and checks whether the two CPUs share the LLC before, during and after. This module picks a
region size that fits in memory, runs it, prints a table of median paired changes and rounds won, and
can save the raw JSON (written to a temporary file, then renamed).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from tlblab.errors import UserError
from tlblab.files import atomic_write
from tlblab.host import _runtime

# The probe's verdict threshold, as in ptwarm_config.probe_threshold_ns (ns per line).
LLC_SHARED_BELOW_NS = 40.0
# Default region and the fall-backs tried, largest first, when memory is short (MiB).
SIZES_MIB = [8192, 4096, 2048, 1024, 512]
QUICK = {"size_mib": 1024, "rounds": 5, "window_ms": 100, "settle_ms": 20}


def parse_size(text: str, what: str) -> int:
    """'8G', '512M', '512MiB', '0' -> MiB."""
    m = re.fullmatch(r"\s*(\d+)\s*([kKmMgGtT]?)(i?[bB])?\s*", text)
    if not m:
        raise UserError(f"{what}: expected a size like 8G or 512M, found '{text}'")
    n, unit = int(m.group(1)), m.group(2).upper()
    mib = {"": n, "K": n // 1024, "M": n, "G": n * 1024, "T": n * 1024 * 1024}[unit]
    if n and mib == 0:
        raise UserError(f"{what}: '{text}' is less than 1 MiB")
    return mib


def mem_available_mib() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    except OSError:
        pass
    return 0


def choose_sizes(size_mib: int | None, other_mib: int | None, avail_mib: int, margin_mib: int = 2048):
    """Region and unrelated-region sizes that fit in available memory with a margin. An explicit size
    that does not fit is an error; the default shrinks (8 GiB, 4 GiB, ...) until both regions fit."""
    if size_mib is not None:
        other = size_mib if other_mib is None else other_mib
        if avail_mib and size_mib + other + margin_mib > avail_mib:
            raise UserError(
                f"--size {size_mib} MiB plus --other-size {other} MiB needs more than the "
                f"{avail_mib} MiB available (keeping {margin_mib} MiB free); choose a smaller --size"
            )
        return size_mib, other
    for s in SIZES_MIB:
        other = s if other_mib is None else other_mib
        if not avail_mib or s + other + margin_mib <= avail_mib:
            return s, other
    raise UserError(f"only {avail_mib} MiB of memory available; the smallest region tried is {SIZES_MIB[-1]} MiB")


def run_json(exe: Path, args: list[str], what: str, preexec=None) -> dict:
    """Runs a runtime executable that prints one JSON object; its diagnostics pass through on stderr.
    `preexec`: the child's set-up before exec (`predict._isolated`)."""
    proc = subprocess.run([str(exe), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          preexec_fn=preexec)
    if proc.stderr:
        sys.stderr.write(proc.stderr)
    if proc.returncode != 0:
        last = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit status {proc.returncode}"
        raise UserError(f"{what} failed: {last}")
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        raise UserError(f"{what} printed malformed JSON (line {e.lineno}, column {e.colno}): {e.msg}") from None


def write_json_atomic(path: str, data: dict) -> None:
    try:
        atomic_write(path, json.dumps(data, indent=2) + "\n")
    except OSError as e:
        raise UserError(f"cannot write {path}: {e.strerror}") from None


def boost_default(flag: bool | None) -> bool:
    """--boost/--no-boost, else on when we may renice to -20 (root): without it, a build on the other
    CPU during the `none` windows and on ours during the helper windows swamps the effect measured."""
    return flag if flag is not None else os.geteuid() == 0


def two_cpus(app_cpu: int | None, helper_cpu: int | None) -> tuple[int, int]:
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise UserError(f"this measurement needs two CPUs; this process may run on {len(cpus)}")
    a = cpus[0] if app_cpu is None else app_cpu
    b = next(c for c in cpus if c != a) if helper_cpu is None else helper_cpu
    for c, name in ((a, "--app-cpu"), (b, "--helper-cpu")):
        if c not in cpus:
            raise UserError(f"{name} {c}: not a CPU this process may run on (allowed: {cpus})")
    if a == b:
        raise UserError("--app-cpu and --helper-cpu must differ")
    return a, b


def _quantile(vals: list[float], q: float) -> float:
    """Linear-interpolation quantile, as ptwarm_bench computes it."""
    t = sorted(vals)
    pos = q * (len(t) - 1)
    i = int(pos)
    return t[i] + (t[i + 1] - t[i]) * (pos - i) if i + 1 < len(t) else t[i]


def add_vs_spin(res: dict) -> None:
    """Adds, per variant, its paired change against `spin` of the same round. When the machine is shared,
    occupying the helper CPU at all changes what the neighbours can do to the measured CPU (it can even
    speed the measured thread up, by keeping a build off the other CPU and out of the L3); `spin` occupies
    it doing nothing useful, so variant/spin isolates what the warming itself does."""
    for data in res["workloads"].values():
        variants = data["variants"]
        spin = variants.get("spin")
        if not spin:
            continue
        for name, v in variants.items():
            if name == "spin":
                continue
            rel = [((1 + a / 100) / (1 + b / 100) - 1) * 100 for a, b in zip(v["changes"], spin["changes"])]
            v["vs_spin_pct_median"] = round(_quantile(rel, 0.5), 2)
            v["vs_spin_pct_q1"] = round(_quantile(rel, 0.25), 2)
            v["vs_spin_pct_q3"] = round(_quantile(rel, 0.75), 2)
            v["vs_spin_wins"] = sum(1 for x in rel if x > 0)


def add_by_llc_state(res: dict) -> None:
    """Splits each variant's paired changes by what the LLC probe said at the start of that round: the
    host moves the vCPUs between L3s while we measure, and the warmer can only help while they share one
    (docs/ptwarm.md: shared for 6 rounds, apart for 14 in one run). Adds `shared`/`not_shared`: {rounds, median, wins} per variant."""
    probes = res["llc_probe_ns_per_round"]
    for data in res["workloads"].values():
        for v in data["variants"].values():
            for key, pick in (("shared", lambda x: 0 < x < LLC_SHARED_BELOW_NS),
                              ("not_shared", lambda x: x >= LLC_SHARED_BELOW_NS)):
                ch = [c for c, p in zip(v["changes"], probes) if pick(p)]
                v[key] = {"rounds": len(ch), "median": round(_quantile(ch, 0.5), 2) if ch else None,
                          "wins": sum(1 for c in ch if c > 0)}


def llc_verdict(ns: float) -> str:
    if ns < 0:
        return "probe failed"
    return "shared" if ns < LLC_SHARED_BELOW_NS else "NOT shared"


def summarize(res: dict) -> str:
    out = []
    out.append(
        f"region {res['size_mib']} MiB of 4 KiB pages (unrelated region {res['other_mib']} MiB), "
        f"{res['rounds']} rounds x {res['window_ms']} ms windows, app CPU {res['app_cpu']}, helper CPU {res['helper_cpu']}"
    )
    out.append(
        f"LLC probe: before {res['llc_probe_ns_before']:.1f} ns/line ({llc_verdict(res['llc_probe_ns_before'])}), "
        f"after {res['llc_probe_ns_after']:.1f} ({llc_verdict(res['llc_probe_ns_after'])}); rounds 'not shared': "
        f"{sum(1 for v in res['llc_probe_ns_per_round'] if v >= LLC_SHARED_BELOW_NS)}/{res['rounds']}"
    )
    out.append(f"load average before: {res['loadavg_before']}; after: {res['loadavg_after']}")
    for wl, data in res["workloads"].items():
        b = data["baseline_macc_s"]
        out.append("")
        out.append(f"{wl}: baseline (none) {b['median']:.3f} M accesses/s [{b['q1']:.3f}-{b['q3']:.3f}]")
        out.append(
            f"  {'variant':<16}{'vs none: median':>16}{'[q1, q3]':>18}{'won':>7}"
            f"{'vs spin: median':>17}{'[q1, q3]':>18}{'won':>7}{'sweeps/s':>10}  helper state"
        )
        for name, v in data["variants"].items():
            vs = (
                f"{v['vs_spin_pct_median']:>+16.1f}%{'[' + format(v['vs_spin_pct_q1'], '+.1f') + ', ' + format(v['vs_spin_pct_q3'], '+.1f') + ']':>18}"
                f"{v['vs_spin_wins']:>4}/{v['rounds']:<2}"
                if "vs_spin_pct_median" in v
                else f"{'':>42}"
            )
            out.append(
                f"  {name:<16}{v['change_pct_median']:>+15.1f}%"
                f"{'[' + format(v['change_pct_q1'], '+.1f') + ', ' + format(v['change_pct_q3'], '+.1f') + ']':>18}"
                f"{v['wins']:>4}/{v['rounds']:<2}{vs}{v['helper_sweeps_per_s']:>10.1f}  {v['helper_state']}"
            )
        split = [
            f"{name} {v[k]['median']:+.1f}% ({v[k]['wins']}/{v[k]['rounds']} won)"
            for name, v in data["variants"].items()
            for k in ("shared",)
            if v.get(k, {}).get("rounds")
        ]
        nsplit = [
            f"{name} {v[k]['median']:+.1f}% ({v[k]['wins']}/{v[k]['rounds']} won)"
            for name, v in data["variants"].items()
            for k in ("not_shared",)
            if v.get(k, {}).get("rounds")
        ]
        if split:
            out.append("  rounds the probe called shared, median vs none: " + "; ".join(split))
        if nsplit:
            out.append("  rounds the probe called NOT shared, median vs none: " + "; ".join(nsplit))
    dep = res["workloads"].get("dep", {}).get("variants", {})
    if "mincore" in dep:
        m = dep["mincore"]
        out.append("")
        out.append(
            f"mincore, dependent chase: {m['change_pct_median']:+.1f} % median vs none over all rounds"
            + (f", {m['vs_spin_pct_median']:+.1f} % vs spin" if "vs_spin_pct_median" in m else "")
        )
        sh = m.get("shared", {})
        if sh.get("rounds"):
            out.append(f"  in the {sh['rounds']} rounds with a shared L3: {sh['median']:+.1f} % (target >= +10 %)")
        ma = dep.get("mincore-auto", {})
        auto = ma.get("not_shared", {})
        if auto.get("rounds"):
            out.append(
                f"  mincore-auto (the library default: sysfs topology, the probe where sysfs lists no LLC) in the "
                f"{auto['rounds']} rounds the probe called not shared: {auto['median']:+.1f} %"
                + (f"; sysfs overruled the probe in {ma['probe_overruled']} checks" if ma.get("probe_overruled") else "")
            )
    return "\n".join(out)


def predict_beside(res: dict, machine: str | None) -> dict:
    """The model's change of the dependent chase per helper (`ptwarm_model.ptwarm_prediction`) on
    `machine` (default: the probe's machine file of this host), over the region measured, beside
    the measured medians."""
    from tlblab import machine_config
    from tlblab.host.geometry import resolve_machine
    from tlblab.host.ptwarm_model import ptwarm_prediction

    path = resolve_machine(machine)
    pred = ptwarm_prediction(machine_config(path), size_mib=res["size_mib"])
    dep = res["workloads"].get("dep", {}).get("variants", {})
    rows = {}
    for name in ("touch", "prefetch", "mincore"):
        v = dep.get(name, {})
        rows[name] = {"predicted_pct": round(pred[f"{name}/change_pct"], 2),
                      "measured_pct": v.get("change_pct_median")}
        rows[name]["decision"] = decide(rows[name]["predicted_pct"], v.get("change_pct_median"), v.get("wins"),
                                        v.get("rounds"))
    return {"machine": str(path), "cycles_per_access_none": round(pred["none"], 2), "variants": rows}


def decide(predicted_pct: float, measured_pct: float | None, wins: int | None, rounds: int | None) -> str:
    """Whether to run a helper on this host, from what was measured where it was, else from what the
    model predicts: warm when the measured median change is positive and more than half the paired
    rounds were won (a measured gain is what the helper is for; the probe's timing alone idled one
    worth +18.3 %, issue 90), else when unmeasured and the model predicts a gain of at least 1 %."""
    if measured_pct is not None and rounds:
        won = wins or 0
        if measured_pct > 0 and 2 * won > rounds:
            return f"warm (measured {measured_pct:+.1f} %, {won}/{rounds} rounds won)"
        return f"do not warm (measured {measured_pct:+.1f} %, {won}/{rounds} rounds won)"
    if predicted_pct >= 1.0:
        return f"warm (not measured; the model predicts {predicted_pct:+.1f} %)"
    return f"do not warm (not measured; the model predicts {predicted_pct:+.1f} %)"


def summarize_prediction(p: dict) -> str:
    out = [f"model (machine {p['machine']}, {p['cycles_per_access_none']:.1f} cycles per access without a helper), "
           "dependent chase, change vs none:"]
    for name, r in p["variants"].items():
        meas = f"{r['measured_pct']:+.1f} %" if r["measured_pct"] is not None else "not measured"
        out.append(f"  {name:<10} predicted {r['predicted_pct']:+.1f} %, measured {meas}: {r['decision']}")
    return "\n".join(out)


def register(hsub) -> None:
    p = hsub.add_parser(
        "ptwarm",
        help="measure the page-table warmer (seed 001) on this machine",
        description="Paired, interleaved measurement of the page-table warming helper: none / spin / touch / "
        "prefetch / mincore / pagemap / mincore-auto / mincore-idle / *-other / warm-pid on a dependent chase "
        "and independent loads over a large 4 KiB-page region.",
    )
    p.add_argument("--size", help="region size (default 8G, smaller if memory is short)")
    p.add_argument("--other-size", help="unrelated-region size for the *-other controls (default: --size; 0 = skip)")
    p.add_argument("--rounds", type=int, default=15, help="paired, interleaved rounds (default: 15)")
    p.add_argument("--window-ms", type=int, default=200, help="length of each timed window, in ms (default: 200)")
    p.add_argument("--settle-ms", type=int, default=40, help="pause before each window for the helper to settle, in ms (default: 40)")
    p.add_argument("--workloads", default="dep,indep", help="dep (a dependent chase), indep (independent loads) or both (default: dep,indep)")
    p.add_argument("--variants", help="comma list starting with none (default: all)")
    p.add_argument("--app-cpu", type=int, help="CPU of the timed program (default: chosen with --helper-cpu to share the LLC)")
    p.add_argument("--helper-cpu", type=int, help="CPU of the page-table warmer (default: one sharing the LLC with --app-cpu)")
    p.add_argument("--seed", type=int, default=42, help="seed of the random page orders (default: 42)")
    p.add_argument("--boost", action=argparse.BooleanOptionalAction, default=None,
                   help="run in an own autogroup at nice -20, ahead of builds sharing the machine "
                   "(default: on when running as root)")
    p.add_argument("--quick", action="store_true", help="1 GiB, 5 rounds of 100 ms")
    p.add_argument("--wait-shared", type=float, default=0.0, metavar="SECONDS",
                   help="first poll the LLC probe every 10 s, up to this long, until the CPUs share the LLC")
    p.add_argument("--predict", action="store_true",
                   help="also the model's prediction of the dependent chase's change per helper, on this host's "
                        "machine file (the host tools' cached probe; --machine to choose another)")
    p.add_argument("--machine", metavar="HOST.toml", help="with --predict: the machine file (default: this host's probe)")
    p.add_argument("--json", action="store_true", help="print the raw JSON instead of the table")
    p.add_argument("--output", help="also write the raw JSON to this file")
    p.set_defaults(func=run)


def wait_shared(exe: Path, app: int, helper: int, seconds: float) -> list[float]:
    """Polls the LLC probe until it says "shared" or `seconds` pass; returns the probe values seen (the
    host moves this VM's vCPUs between L3s; docs/ptwarm.md)."""
    seen: list[float] = []
    deadline = time.monotonic() + seconds
    while True:
        r = run_json(exe, ["--probe-only", "1", "--app-cpu", str(app), "--helper-cpu", str(helper)], "ptwarm_bench")
        seen.append(r["llc_probe_ns"])
        if 0 < r["llc_probe_ns"] < LLC_SHARED_BELOW_NS or time.monotonic() + 10 > deadline:
            return seen
        time.sleep(10)


def run(args) -> int:
    size = parse_size(args.size, "--size") if args.size else None
    other = parse_size(args.other_size, "--other-size") if args.other_size is not None else None
    rounds, window, settle = args.rounds, args.window_ms, args.settle_ms
    if args.quick:
        size = size if size is not None else QUICK["size_mib"]
        rounds, window, settle = QUICK["rounds"], QUICK["window_ms"], QUICK["settle_ms"]
    if size is not None and size < 16:
        raise UserError(f"--size: at least 16 MiB, found {size} MiB")
    if not 1 <= rounds <= 200:
        raise UserError(f"--rounds: expected 1..200, found {rounds}")
    if window < 1 or settle < 0:
        raise UserError("--window-ms must be >= 1 and --settle-ms >= 0")
    size, other = choose_sizes(size, other, mem_available_mib())
    if other not in (0, size):
        raise UserError(f"--other-size must be 0 or equal to --size ({size} MiB), found {other} MiB")
    app, helper = two_cpus(args.app_cpu, args.helper_cpu)
    exe = _runtime.executable("ptwarm_bench")
    warm = _runtime.executable("ptwarm_pid")
    cmd = [
        "--size-mib", str(size), "--other-mib", str(other), "--rounds", str(rounds),
        "--window-ms", str(window), "--settle-ms", str(settle), "--workloads", args.workloads,
        "--app-cpu", str(app), "--helper-cpu", str(helper), "--seed", str(args.seed),
        "--warm-pid-exe", str(warm), "--boost", "1" if boost_default(args.boost) else "0",
    ]
    if args.variants:
        cmd += ["--variants", args.variants]
    waited = wait_shared(exe, app, helper, args.wait_shared) if args.wait_shared > 0 else []
    res = run_json(exe, cmd, "ptwarm_bench")
    if waited:
        res["wait_shared_probes_ns"] = waited
    add_vs_spin(res)
    add_by_llc_state(res)
    if args.predict:
        res["prediction"] = predict_beside(res, args.machine)
    if args.output:
        write_json_atomic(args.output, res)
    text = summarize(res)
    if "prediction" in res:
        text += "\n\n" + summarize_prediction(res["prediction"])
    print(json.dumps(res, indent=2) if args.json else text)
    return 0
