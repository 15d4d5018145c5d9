"""`tlblab bench`: throughput and latency benchmarks, printed as JSON.

Each benchmark is a module in `tlblab.benchmarks` with `NAME` and `run(quick: bool) -> dict`;
modules are discovered. Benchmarks print numbers; they never pass or fail.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys
import time


def register(sub) -> None:
    p = sub.add_parser("bench", help="run throughput/latency benchmarks and print JSON")
    p.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    p.add_argument("--quick", action="store_true", help="smaller inputs, fewer repetitions")
    p.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    p.set_defaults(func=run)


def _modules():
    from tlblab import benchmarks

    for info in sorted(pkgutil.iter_modules(benchmarks.__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            yield importlib.import_module(f"tlblab.benchmarks.{info.name}")


def run(args) -> int:
    mods = {m.NAME: m for m in _modules()}
    if args.list:
        for name, m in mods.items():
            print(f"{name}\t{(m.__doc__ or '').strip().splitlines()[0]}")
        return 0
    from tlblab.errors import UserError

    for n in args.names:
        if n not in mods:
            raise UserError(f"unknown benchmark '{n}': expected one of {', '.join(mods)}")
    results = {}
    for name, m in mods.items():
        if args.names and name not in args.names:
            continue
        print(f"bench: {name} ...", file=sys.stderr, flush=True)
        t0 = time.monotonic()
        results[name] = m.run(quick=args.quick)
        print(f"bench: {name} done in {time.monotonic() - t0:.1f} s", file=sys.stderr, flush=True)
    print(json.dumps(results, indent=2))
    return 0
