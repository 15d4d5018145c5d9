"""tlblab: a laboratory for address translation.

The Python API is hand-written for people on top of the Rust extension `tlblab._native`:
`simulate`, `presets`, `machine_config`, `workloads`, `techniques` (see `tlblab.sim`);
`tlblab.reproduce` holds each seed's tables against tlblab.
"""

from tlblab.sim import (Result, check_technique, machine_config, machine_toml, presets, simulate,
                        techniques, workloads)

__version__ = "0.1.0"
__all__ = ["Result", "check_technique", "machine_config", "machine_toml", "presets", "simulate",
           "techniques", "workloads"]
