"""tlblab: a laboratory for address translation.

The Python API is hand-written for people on top of the Rust extension `tlblab._native`:
`simulate`, `presets`, `machine_config`, `workloads` (see `tlblab.sim`); `curve`, `plot_curve`
(miss curves of every TLB size in one pass, `tlblab.curve` the module).
"""

from tlblab.sim import Result, machine_config, machine_toml, presets, simulate, workloads
from tlblab.curve import curve, plot_curve  # noqa: E402  (`tlblab.curve` is the function)

__version__ = "0.1.0"
__all__ = ["Result", "curve", "machine_config", "machine_toml", "plot_curve", "presets", "simulate", "workloads"]
