"""`tlblab profile`: the hot-page profiler of seed 004 §IV.

  tlblab profile [-o pages.csv] [--top N] -- PROGRAM ARGS   trace PROGRAM under Valgrind (tlblab's tool)
  tlblab profile --trace FILE|WORKLOAD [-o pages.csv]        profile a trace or built-in workload
  tlblab profile --remap pages.csv --maps MAPS -o new.csv    place a profile in another run

Pages are ranked by accesses (loads, stores and fetches counted apart) and named by their mapping
in the process's /proc/PID/maps, so the ranking applies to another run of the program.
"""

from __future__ import annotations

import sys


def register(sub) -> None:
    p = sub.add_parser("profile", help="rank a program's pages by accesses (seed 004's hot-page profiler)")
    p.add_argument("-o", "--output", default=None, help="write the whole ranking as CSV here")
    p.add_argument("--trace", default=None, metavar="FILE|WORKLOAD",
                   help="profile a trace file (native, Lackey, ChampSim) or a built-in workload spec")
    p.add_argument("--maps", default=None, metavar="FILE",
                   help="a /proc/PID/maps file: names pages for --trace (default: the capture's own), "
                        "or the new run's maps for --remap")
    p.add_argument("--remap", default=None, metavar="PROFILE.csv",
                   help="place PROFILE.csv's pages in the run whose maps --maps gives (seed 004 §IV, Fig. 3)")
    p.add_argument("--process", type=int, default=None, help="only this process's pages")
    p.add_argument("--top", type=int, default=10, help="rows to print (default 10)")
    p.add_argument("--seed", type=int, default=0, help="seed of a built-in workload")
    p.add_argument("--keep-trace", default=None, metavar="FILE", help="keep the capture (.tlbt) here")
    p.add_argument("--valgrind", default="valgrind", help="valgrind executable (default: valgrind)")
    p.add_argument("argv", nargs="*", help="-- PROGRAM ARGS")
    p.set_defaults(func=run)


def run(args) -> int:
    from tlblab import profile as pf
    from tlblab.errors import UserError
    from tlblab.report_text import format_table

    modes = sum(x is not None and x != [] for x in (args.trace, args.remap, args.argv or None))
    if modes != 1:
        raise UserError("profile: give exactly one of -- PROGRAM ARGS, --trace FILE, --remap PROFILE.csv")
    maps = None
    if args.maps:
        try:
            with open(args.maps) as f:
                maps = f.read()
        except OSError as e:
            raise UserError(f"{args.maps}: cannot read the maps ({e.strerror})")
    if args.remap:
        if maps is None:
            raise UserError("profile --remap: --maps FILE (the new run's /proc/PID/maps) is required")
        rows = pf.remap(pf.read_csv(args.remap), maps, args.maps)
    elif args.trace:
        rows = pf.profile(args.trace, seed=args.seed, maps=maps, process=args.process)
    else:
        rows = pf.profile_program(args.argv, valgrind=args.valgrind, keep_trace=args.keep_trace,
                                  process=args.process)
    if args.output:
        pf.write_csv(rows, args.output)
    total = sum(r["accesses"] for r in rows)
    print(f"{len(rows)} pages, {total} accesses" + (f"; ranking in {args.output}" if args.output else ""))
    off = lambda o: f"-{-o:#x}" if o < 0 else f"{o:#x}"  # noqa: E731
    print(format_table(["rank", "process", "page", "region", "offset", "loads", "stores", "fetches", "share"],
                       [[r["rank"], r["process"], f"{r['page']:#x}", r["region"], off(r["offset"]), r["loads"],
                         r["stores"], r["fetches"], f"{r['accesses'] / max(total, 1):.3f}"]
                        for r in rows[:args.top]]))
    sys.stdout.flush()
    return 0
