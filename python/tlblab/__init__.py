"""tlblab: a laboratory for address translation.

The Python API is hand-written for people on top of the Rust extension `tlblab._native`:
`simulate`, `presets`, `machine_config`, `workloads` (see `tlblab.sim`); `isolate` (TLB
isolation of a task set, `tlblab.isolation`).
"""

from tlblab.isolation import isolate
from tlblab.sim import Result, machine_config, machine_toml, presets, simulate, workloads

__version__ = "0.1.0"
__all__ = ["Result", "isolate", "machine_config", "machine_toml", "presets", "simulate", "workloads"]
