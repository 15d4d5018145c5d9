"""`tlblab host ...`: measurements of techniques on the machine tlblab runs on.

Each measurement is a module in `tlblab.host` with `register(subparsers)`; modules are discovered.
"""

from __future__ import annotations

import importlib
import pkgutil


def register(sub) -> None:
    from tlblab import host

    p = sub.add_parser("host", help="measure techniques on this machine (coloring, ptwarm, migrate)")
    hsub = p.add_subparsers(dest="host_command", metavar="MEASUREMENT")
    hsub.required = True
    for info in sorted(pkgutil.iter_modules(host.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"tlblab.host.{info.name}")
        if hasattr(module, "register"):
            module.register(hsub)
