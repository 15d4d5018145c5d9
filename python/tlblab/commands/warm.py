"""`tlblab warm --pid PID`: warm another process's page tables from outside (seed 001 §8, future work).

Runs the runtime's `ptwarm_pid` (runtime/bench/ptwarm_pid.c): a page-table warmer in PAGEMAP mode on
/proc/PID/pagemap, using the PAGEMAP_SCAN ioctl when the kernel has it (Linux >= 6.7; the kernel then
reads only the PTEs) and pread() of the pagemap otherwise. It warms every private writable mapping of
the target (or the given --range), pinned to a CPU sharing the LLC with the target's, and idles while
the LLC-sharing probe says they do not share it. Whether it helps is measured by the `warm-pid`
variant of `tlblab host ptwarm` (see docs/ptwarm.md for the numbers on the machine it was built on).
"""

from __future__ import annotations

import json
import os
import re

from tlblab.errors import UserError
from tlblab.host import _runtime
from tlblab.host.ptwarm import run_json


def register(sub) -> None:
    p = sub.add_parser(
        "warm",
        help="warm another process's page tables from outside (PAGEMAP_SCAN / pagemap)",
        description="Keep the page-table entries of a running process warm in the cache it shares with a "
        "helper CPU, without touching its data. Runs until --duration, Ctrl-C, or the target exits.",
    )
    p.add_argument("--pid", type=int, required=True, help="the process to warm")
    p.add_argument("--duration", type=float, default=0.0, help="seconds to run (default: until Ctrl-C or exit)")
    p.add_argument("--range", action="append", default=[], metavar="START-END",
                   help="warm only this address range (hex, repeatable; default: all private writable mappings)")
    p.add_argument("--sleep-ms", type=float, default=0.0, help="pause between sweeps (throttling)")
    p.add_argument("--cpu", type=int, help="run the warmer on this CPU (default: one sharing the LLC)")
    p.add_argument("--app-cpu", type=int, help="the target's CPU (default: followed from /proc)")
    p.add_argument("--llc-check", choices=["probe", "topology", "off"], default="probe",
                   help="how to check that the warmer shares the LLC with the target: time it (probe, the default), "
                        "read the CPU topology, or not at all")
    p.add_argument("--json", action="store_true", help="print the statistics as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.pid <= 0 or not os.path.exists(f"/proc/{args.pid}"):
        raise UserError(f"--pid {args.pid}: no such process")
    if args.duration < 0 or args.sleep_ms < 0:
        raise UserError("--duration and --sleep-ms must be >= 0")
    cmd = ["--pid", str(args.pid), "--llc-check", args.llc_check, "--sleep-ms", str(args.sleep_ms)]
    if args.duration:
        cmd += ["--duration", str(args.duration)]
    for r in args.range:
        m = re.fullmatch(r"(?:0x)?([0-9a-fA-F]+)-(?:0x)?([0-9a-fA-F]+)", r)
        if not m or int(m.group(1), 16) >= int(m.group(2), 16):
            raise UserError(f"--range: expected START-END in hex with START < END, found '{r}'")
        cmd += ["--range", f"{m.group(1)}-{m.group(2)}"]
    if args.cpu is not None:
        cmd += ["--cpu", str(args.cpu)]
    if args.app_cpu is not None:
        cmd += ["--app-cpu", str(args.app_cpu)]
    res = run_json(_runtime.executable("ptwarm_pid"), cmd, "ptwarm_pid")
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    print(
        f"warmed pid {res['pid']}: {res['regions']} regions, {res['bytes'] / 2**20:.1f} MiB, via {res['mechanism']}; "
        f"{res['sweeps']} sweeps ({res['mean_sweep_ms']:.2f} ms each), warming {res['warm_s']:.2f} s, idle {res['idle_s']:.2f} s; "
        f"helper CPU {res['helper_cpu']}, target CPU {res['app_cpu']}; LLC checks {res['llc_checks']} "
        f"(shared {res['llc_shared']}, not shared {res['llc_not_shared']}, last probe {res['last_probe_ns']:.1f} ns/line); "
        f"final state {res['state']}, errors {res['errors']}"
    )
    return 0
