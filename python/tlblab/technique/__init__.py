"""Per-technique Python, one optional module each, named as the Rust registry names the technique
(`tlblab techniques`): `tlblab/technique/<name>.py`. Modules are discovered, as the commands are
(`tlblab.cli`), so a technique that needs Python adds one file and nothing else.

A technique is a table here, as in a machine file's `[technique]` section: `{"name": ...,
"key": "value", ...}`, every value text. The engine parses a spec a person writes
(`NAME[:key=value,...]`) into it (`table`, through `tlblab._native`): Python never splits a
spec nor writes one back as text.

What a module may define:

- `resolve(table, machine) -> dict`: the table as the engine takes it, from one a person
  writes (`pages=FILE.csv` → `pages=0x..+0x..`: the engine does no I/O). `tlblab.simulate`
  calls it for the technique it is given or the machine file's table; a table it does not
  change passes as is.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import pkgutil
from types import ModuleType
from typing import Any

from tlblab import _native
from tlblab.machines import machine_config


@functools.cache
def names() -> frozenset[str]:
    """The techniques that have a module here."""
    return frozenset(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def module(name: str) -> ModuleType | None:
    """The module of technique `name`, or None when it has none."""
    return importlib.import_module(f"{__name__}.{name}") if name in names() else None


def table(technique: str | dict[str, Any]) -> dict[str, str]:
    """The `[technique]` table of `technique`: a spec `NAME[:key=value,...]` parsed by the engine
    (`techniques::parse_spec`: an empty item or a key given twice is a ValueError naming it), or
    a table (a dict, as a machine file holds it) with its values made text as the engine reads
    them."""
    if isinstance(technique, dict):
        return json.loads(_native.technique_table_json(json.dumps(technique)))
    if not isinstance(technique, str):
        raise ValueError(f"technique: expected NAME[:key=value,...] or a table, found {technique!r}")
    return json.loads(_native.technique_table(technique))


def resolve(technique: dict[str, str], machine: str | dict[str, Any]) -> dict[str, str]:
    """`technique` (a table) as the engine takes it: its module's `resolve`, if it has one, else
    unchanged."""
    hook = getattr(module(technique["name"]), "resolve", None)
    return hook(technique, machine) if hook is not None else technique


def machine_table(machine: str | dict[str, Any]) -> dict[str, Any] | None:
    """The machine's own `[technique]` table, or None. Presets carry none, so only a machine
    file or a dict is read."""
    if isinstance(machine, dict):
        return machine.get("technique")
    if str(machine).endswith((".toml", ".json")) and os.path.isfile(machine):
        return machine_config(machine).get("technique")
    return None


def run_table(technique: str | dict[str, Any] | None, machine: str | dict[str, Any]) -> str:
    """The technique a run installs, as the JSON table `tlblab._native.simulate` takes (empty:
    none): `technique` if given, else the machine's own table, resolved by its module."""
    given = technique if technique else machine_table(machine)
    return json.dumps(resolve(table(given), machine)) if given else ""
