"""Per-technique Python, one optional module each, named as the Rust registry names the technique
(`tlblab techniques`): `tlblab/technique/<name>.py`. Modules are discovered, as the commands are
(`tlblab.cli`), so a technique that needs Python adds one file and nothing else.

What a module may define:

- `resolve(technique, machine) -> str`: the spec as the engine takes it, from one a person
  writes (`lockdown:pages=FILE.csv` → `lockdown:pages=0x..+0x..`: the engine does no I/O).
  `tlblab.simulate` calls it for the spec it is given; a spec it does not change passes as is.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from types import ModuleType
from typing import Any


@functools.cache
def names() -> frozenset[str]:
    """The techniques that have a module here."""
    return frozenset(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def module(name: str) -> ModuleType | None:
    """The module of technique `name`, or None when it has none."""
    return importlib.import_module(f"{__name__}.{name}") if name in names() else None


def resolve(technique: str, machine: str | dict[str, Any]) -> str:
    """`technique` (`NAME[:key=value,...]`) as the engine takes it: its module's `resolve`, if
    it has one, else unchanged."""
    m = module(technique.split(":", 1)[0].strip())
    hook = getattr(m, "resolve", None)
    return hook(technique, machine) if hook is not None else technique
