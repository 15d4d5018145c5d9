"""tlblab: a laboratory for address translation.

The Python API is hand-written for people on top of the Rust extension `tlblab._native`:
`simulate`, `presets`, `machine_config`, `workloads` (see `tlblab.sim`).
"""

from tlblab.sim import Result, machine_config, machine_toml, presets, simulate, workloads

__version__ = "0.1.0"
__all__ = ["Result", "machine_config", "machine_toml", "presets", "simulate", "workloads"]
