"""`tlblab sweep GRID.toml`: run a grid of configurations on a Dask cluster (docs/sweeps.md).

Writes `<out>/sweep.parquet` (one row per point) and `<out>/sweep.csv`, and keeps each point's
result in `<out>/points/`, so a killed sweep re-run with the same `--out` runs only the points
it had not finished.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tlblab import paths


def register(sub) -> None:
    p = sub.add_parser("sweep", help="run a grid of configurations (machines, techniques, OS, workloads) on Dask")
    p.add_argument("grid", help="the grid file (TOML: [base] and [axes]; see docs/sweeps.md)")
    p.add_argument("--out", default="", help=f"output directory (default: {paths.out('sweep')}/<grid name>)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--scheduler", default="", metavar="tcp://HOST:PORT",
                       help="run on this existing Dask scheduler (default: a LocalCluster over this machine's cores)")
    where.add_argument("--serial", action="store_true", help="run every point in this process, no cluster")
    p.add_argument("--workers", type=int, default=0, help="LocalCluster worker processes (default: one per core)")
    p.add_argument("--check", action="store_true", help="check the grid and print its points, run nothing")
    p.set_defaults(func=run)


def run(args) -> int:
    from tlblab.errors import UserError
    from tlblab.sweeps import LAST, expand, headline, load, sweep

    if args.workers < 0:
        raise UserError(f"--workers: expected a positive number, found {args.workers}")
    grid = load(args.grid)
    if args.check:
        points = expand(grid)
        print(f"{args.grid}: {len(points)} points over {', '.join(grid.axes) or 'no axes'}")
        for p in points[:20]:
            print(f"  {p.index}: " + ", ".join(f"{k}={v!r}" for k, v in p.values.items()))
        if len(points) > 20:
            print(f"  ... and {len(points) - 20} more")
        return 0
    out = Path(args.out) if args.out else paths.out("sweep", Path(args.grid).stem)
    df = sweep(grid, out, scheduler=args.scheduler or None, workers=args.workers or None,
               serial=args.serial)
    csv = out / "sweep.csv"
    from tlblab.files import atomic_write

    atomic_write(csv, lambda tmp: df.to_csv(tmp, index=False))
    from tlblab.report_text import format_table

    print(format_table(*headline(df, grid, limit=40)))
    if len(df) > 40:
        print(f"... and {len(df) - 40} more rows")
    print(f"\n{LAST}", file=sys.stderr)
    print(f"{len(df)} rows in {out / 'sweep.parquet'} and {csv}")
    return 0
