"""Machine descriptions: a preset's name, a .toml/.json machine file's path, or a dict with the
same fields, as the Rust extension reads them. The lowest layer of the Python API: `tlblab.sim`
runs machines, the technique modules (`tlblab.technique`) read them, and both import this.
"""

from __future__ import annotations

import json
from typing import Any

from tlblab import _native


def machine_arg(machine: str | dict[str, Any]) -> tuple[str, str]:
    """`machine` as the extension takes it: (text, format)."""
    if isinstance(machine, dict):
        return json.dumps(machine), "json"
    return str(machine), "auto"


def presets() -> dict[str, str]:
    """Built-in machine presets: name → description."""
    return dict(_native.presets())


def machine_config(machine: str | dict[str, Any]) -> dict[str, Any]:
    """The validated machine description as a dict (edit it and pass it back to `simulate`)."""
    spec, fmt = machine_arg(machine)
    return json.loads(_native.machine_json(spec, machine_format=fmt))


def page_sizes(machine: str | dict[str, Any]) -> list[str]:
    """The page sizes the machine's page-table format can map ("4KiB", "2MiB", "1MiB", ...)."""
    spec, fmt = machine_arg(machine)
    return list(_native.machine_page_sizes(spec, machine_format=fmt))


def machine_toml(machine: str | dict[str, Any]) -> str:
    spec, fmt = machine_arg(machine)
    return _native.machine_toml(spec, machine_format=fmt)


def machine_file_text(machine: str | dict[str, Any], path: str) -> str:
    """`machine` as the text of a machine file named `path`: JSON for a `.json` name, else TOML
    (the format of presets/*.toml). Written by the Rust configuration crate, validated, and
    parsed back to the same machine (`machine_files_round_trip`)."""
    spec, fmt = machine_arg(machine)
    return _native.machine_file_text(spec, str(path), machine_format=fmt)
