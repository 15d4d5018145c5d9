"""`tlblab presets` and `tlblab workloads`: what is built in."""

from __future__ import annotations

from tlblab.report_text import format_table


def register(sub) -> None:
    p = sub.add_parser("presets", help="list the built-in machine presets, or print one as TOML")
    p.add_argument("name", nargs="?", help="print this preset's TOML")
    p.set_defaults(func=run_presets)
    w = sub.add_parser("workloads", help="list the built-in workloads and their parameters")
    w.set_defaults(func=run_workloads)


def run_presets(args) -> int:
    import tlblab

    if args.name:
        print(tlblab.machine_toml(args.name), end="")
        return 0
    print(format_table(["preset", "description"], sorted(tlblab.presets().items())))
    return 0


def run_workloads(args) -> int:
    import tlblab

    for w in tlblab.workloads():
        print(f"{w['name']}: {w['summary']}" + (f"  [{w['source']}]" if w["source"] else ""))
        for p in w["params"]:
            print(f"    {p['name']}={p['default']}  {p['meaning']}")
    return 0
