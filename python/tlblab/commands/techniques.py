"""`tlblab techniques`: the techniques you can switch on, with their parameters and seeds."""

from __future__ import annotations

import json


def register(sub) -> None:
    p = sub.add_parser("techniques", help="list the techniques (--technique NAME[:key=value,...])")
    p.add_argument("name", nargs="?", help="show one technique's parameters")
    p.add_argument("--json", action="store_true", help="print the catalog as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    import tlblab
    from tlblab.errors import UserError

    catalog = tlblab.techniques()
    if args.name:
        catalog = [t for t in catalog if t["name"] == args.name]
        if not catalog:
            names = ", ".join(t["name"] for t in tlblab.techniques())
            raise UserError(f"unknown technique '{args.name}': expected one of {names}")
    if args.json:
        print(json.dumps(catalog, indent=2))
        return 0
    for t in catalog:
        print(f"{t['name']}: {t['summary']}")
        print(f"  follows {t['seed']}")
        for p in t["params"]:
            default = p["default"] if p["default"] != "" else "(machine's)"
            print(f"  {p['name']:<20} default {default:<12} {p['meaning']}")
        print()
    print("use: tlblab simulate --technique NAME[:key=value,...]   "
          "(Python: tlblab.simulate(..., technique=\"NAME:key=value\"))")
    return 0
