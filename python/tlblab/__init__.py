"""tlblab: a laboratory for address translation.

The Python API is hand-written for people on top of the Rust extension `tlblab._native`:
`simulate`, `checkpoint`, `presets`, `machine_config`, `workloads`, `techniques` (see `tlblab.sim`);
`sample` (SMARTS sampled simulation, every statistic with its confidence interval: `tlblab.sampling`);
`intervals` (one run cut into intervals that run in parallel on Dask from one pass's checkpoints,
merged into one result; the module is importable as `from tlblab.intervals import ...`);
`isolate` (TLB isolation of a task set, `tlblab.isolation`);
`tlblab.reproduce` holds each seed's tables against tlblab; `sweep` runs a grid of
configurations on a Dask cluster (see `tlblab.sweeps`).
`curve`, `plot_curve` (miss curves of every TLB size in one pass; `tlblab.curve` is the
function, the module is importable as `from tlblab.curve import ...`).
"""

from tlblab.isolation import isolate
from tlblab.sim import (Result, check_technique, checkpoint, checkpoint_info, machine_config, machine_toml, page_sizes, presets,
                        simulate, techniques, workloads)
from tlblab.curve import curve, plot_curve  # noqa: E402
from tlblab.sampling import SampledResult, sample  # noqa: E402
from tlblab.intervals import IntervalRun, intervals  # noqa: E402

__version__ = "0.1.0"
__all__ = ["IntervalRun", "Result", "check_technique", "checkpoint", "checkpoint_info", "curve", "intervals", "isolate", "machine_config", "machine_toml", "page_sizes", "plot_curve",
           "presets", "SampledResult", "sample", "simulate", "sweep", "techniques", "workloads"]


def sweep(grid, out=None, **kwargs):
    """Runs a grid of configurations and returns one DataFrame (see `tlblab.sweeps.sweep`).
    Imported on first use: Dask is loaded only by the programs that sweep."""
    from tlblab.sweeps import sweep as _sweep

    return _sweep(grid, out, **kwargs)
