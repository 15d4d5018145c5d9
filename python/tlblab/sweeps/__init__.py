"""Sweeps: one grid of configurations, run on a Dask cluster, one DataFrame back.

    >>> import tlblab
    >>> df = tlblab.sweep("examples/sweep_l1d.toml")          # a LocalCluster over the cores
    >>> df = tlblab.sweep(grid, scheduler="tcp://host:8786")   # an existing cluster
    >>> df = tlblab.sweep(grid, serial=True)                  # in this process

The grid's keys: `tlblab.sweeps.grid` and docs/sweeps.md. Running and resuming: `tlblab.sweeps.run`.
"""

from tlblab.sweeps.grid import Grid, Point, expand, load, parse
from tlblab.sweeps.run import LAST, headline, run_point, sweep

__all__ = ["Grid", "LAST", "Point", "expand", "headline", "load", "parse", "run_point", "sweep"]
