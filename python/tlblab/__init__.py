"""tlblab: a laboratory for address translation.

The Python API is hand-written for people on top of the Rust extension `tlblab._native`:
`simulate`, `presets`, `machine_config`, `workloads`, `techniques` (see `tlblab.sim`);
`tlblab.reproduce` holds each seed's tables against tlblab; `curve`, `plot_curve` (miss curves
of every TLB size in one pass; `tlblab.curve` is the function, the module is `tlblab.curve`'s
import path).
"""

from tlblab.sim import (Result, check_technique, machine_config, machine_toml, presets, simulate,
                        techniques, workloads)
from tlblab.curve import curve, plot_curve  # noqa: E402

__version__ = "0.1.0"
__all__ = ["Result", "check_technique", "curve", "machine_config", "machine_toml", "plot_curve", "presets",
           "simulate", "techniques", "workloads"]
