"""`tlblab probe`: measure this machine's TLBs by timing alone, print them beside CPUID's
declared values, optionally write a machine preset (`--out host.toml`) and check the simulator
against the measurements (`--validate`)."""

from __future__ import annotations

import json
import os
import sys

# Every default output goes under out/ (ignored by git), never into the working directory.
DEFAULT_PLOT = os.path.join("out", "probe", "validate.png")


def register(sub) -> None:
    p = sub.add_parser("probe", help="measure this machine's TLBs by timing alone")
    p.add_argument("--quick", action="store_true", help="fewer repetitions and strides (≤ 20 s instead of ≤ 2 min)")
    p.add_argument("--json", action="store_true", help="print the full report as JSON instead of the summary")
    p.add_argument("--out", metavar="HOST.toml", help="write a machine preset with the measured values")
    p.add_argument("--base", help="preset whose unmeasured fields --out keeps (default: zen3-virt in a VM, whose "
                                  "walks are two-dimensional, else zen3)")
    p.add_argument("--validate", action="store_true",
                   help="simulate the probe's pointer chase on the measured preset; print measured vs simulated")
    p.add_argument("--plot", metavar="PNG",
                   help=f"where --validate writes its plot (default: {DEFAULT_PLOT}, its directory made)")
    p.add_argument("--sections", help="comma-separated subset of the measurements (see --list)")
    p.add_argument("--list", action="store_true", help="list the measurement sections and exit")
    p.add_argument("--cpu", type=int, help="CPU to measure on (default: the first allowed)")
    p.add_argument("--other-cpu", type=int, help="second CPU for the sharing and migration tests")
    p.add_argument("--simulate", metavar="MACHINE",
                   help="run the data-TLB sections on a simulated host instead (a preset or machine file, timed "
                        "by the simulator with a shared VM's noise added): what the probe reads on such a host")
    p.add_argument("--seed", type=int, default=1, help="seed of the probe's random page orders (default: 1)")
    p.add_argument("--no-priority", action="store_true", help="do not raise the measuring thread's priority")
    p.set_defaults(func=run)


def run(args) -> int:
    from tlblab import probe as tp
    from tlblab.errors import UserError
    from tlblab.machines import machine_config

    if args.list:
        print("\n".join(tp.SECTIONS))
        return 0
    sections = [s.strip() for s in args.sections.split(",") if s.strip()] if args.sections else None
    if args.out and not args.out.endswith((".toml", ".json")):
        raise UserError(f"--out {args.out}: expected a .toml or .json file name")
    for flag, path in (("--out", args.out), ("--plot", args.plot if args.validate else None)):
        if path and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            raise UserError(f"{flag} {path}: directory {os.path.dirname(os.path.abspath(path))} does not exist")
    for s in sections or []:
        if s not in tp.SECTIONS:
            raise UserError(f"unknown probe section '{s}': expected one of {', '.join(tp.SECTIONS)}")
    for flag, machine in (("--base", args.base), ("--simulate", args.simulate)):
        # Checked before measuring: a bad --base once failed only after the probe's 13 s.
        if machine:
            try:
                machine_config(machine)
            except ValueError as e:
                raise UserError(f"{flag}: {e}") from None
    if args.simulate:
        if args.validate:
            raise UserError("--validate compares with this host's timings; it does not apply with --simulate")
        print(f"tlblab probe: simulating {args.simulate} (data-TLB sections) ...", file=sys.stderr, flush=True)
        r = tp.probe_simulated(args.simulate, quick=args.quick, sections=sections, seed=args.seed)
        print(json.dumps(r.raw, indent=2) if args.json else tp.format_text(r))
        if args.out:
            # The simulated machine is the base (its caches, walker, clock), not this host's.
            m = tp.host_machine(r, base=args.base or args.simulate, sysfs=False)
            tp.write_preset(args.out, m)
            print(f"wrote {args.out}", file=sys.stderr)
        return 0
    print("tlblab probe: measuring (pinned, interleaved repetitions; "
          f"{'≈15 s' if args.quick else 'about a minute'}) ...", file=sys.stderr, flush=True)
    r = tp.probe(quick=args.quick, sections=sections, cpu=args.cpu, other_cpu=args.other_cpu, seed=args.seed,
                 raise_priority=not args.no_priority, validation_curve=args.validate)
    if args.json:
        print(json.dumps(r.raw, indent=2))
    else:
        print(tp.format_text(r))
    machine = None
    if args.out or args.validate:
        machine = tp.host_machine(r, base=args.base)
    if args.out:
        tp.write_preset(args.out, machine)
        print(f"wrote {args.out} (load it with: tlblab simulate --machine {args.out})", file=sys.stderr)
        l3 = next((c for c in machine.get("cache", []) if c.get("level") == 3), None)
        if l3 is not None and tp.L3_SHARE in l3.get("source", ""):
            # A guest on a CPU whose L3 other tenants use: say so, it moves from minute to minute.
            print(f"  its L3: a share of {l3['size'] / (1 << 20):.1f} MiB at {l3['latency']} cycles, what this host got "
                  "of it while probed (other cores take the rest; docs/probe.md, \"The L3's share\")", file=sys.stderr)
    if args.validate:
        from tlblab.report_text import format_table

        rows = tp.validate(r, machine)
        table = [[x["pages"], f"{x['measured_ns']:.2f}", f"{x['measured_iqr']:.2f}", f"{x['simulated_ns']:.2f}",
                  f"{100 * x['error']:+.0f}%"] for x in rows]
        out = sys.stderr if args.json else sys.stdout
        print("validation: the probe's random pointer chase, measured vs simulated on the measured preset", file=out)
        print(format_table(["pages", "measured ns", "IQR", "simulated ns", "error"], table), file=out)
        median, worst = tp.validation_errors(rows)
        print(f"median |error| {100 * median:.0f}%, worst {100 * worst:.0f}%", file=out)
        speed = tp.validation_speed_note(r, rows)
        if speed:
            print(speed, file=out)
        plot = args.plot or DEFAULT_PLOT
        if not args.plot:
            os.makedirs(os.path.dirname(plot), exist_ok=True)
        tp.plot_validation(rows, plot, title=f"tlblab probe --validate ({machine['frequency_mhz']} MHz est.)")
        print(f"wrote {plot}", file=sys.stderr)
    return 0
