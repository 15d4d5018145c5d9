"""The Python package has layers, not circles: no module imports, even inside a function, a
module that imports it back, directly or through others (issue 58: `commands/study.py` and
`report/study.py`, `lockdown.py` and `sim.py` did). No module outside the seeds' folders imports
one (issue 84: `host/migrate.py` did). The package façade (`import tlblab`) counts
as a module: a module that `tlblab/__init__.py` imports must not call `tlblab.simulate`.

And the layers: the CLI (`tlblab.cli`, `tlblab.commands.*`) binds, parsing arguments, calling the
library and printing; the library (every other module) never imports it back, so a sweep, a
reproduction or the probe's preset runs the same from Python as from the command line."""

from __future__ import annotations

import ast
from pathlib import Path

import tlblab

ROOT = Path(tlblab.__file__).parent


def _modules() -> dict[str, Path]:
    out = {}
    for p in ROOT.rglob("*.py"):
        parts = p.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = p
    return out


def _imports(name: str, path: Path, mods: dict[str, Path]) -> set[str]:
    """The package's modules `name` imports anywhere in its text (the nearest enclosing module
    of each name; the Rust extension `_native` is no Python module and has no imports)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base
                       for a in node.names if a.name != "_native"]
        else:
            continue
        for t in targets:
            while t and t not in mods:
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_package_has_no_import_circle():
    mods = _modules()
    graph = {m: _imports(m, p, mods) for m, p in mods.items()}
    assert "tlblab.sim" in graph["tlblab"], "the finder sees the façade's imports"
    assert _cycles(graph) == []


def test_the_finder_sees_a_circle_through_a_function_level_import():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def _is_binding(module: str) -> bool:
    """Whether `module` is the CLI's layer: `tlblab.cli`, `tlblab.commands` and its commands."""
    return module == "tlblab.cli" or module == "tlblab.commands" or module.startswith("tlblab.commands.")


def _layer_breaches(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """Each library module that imports the CLI's layer, with what it imports of it."""
    out = {}
    for m, targets in graph.items():
        up = sorted(t for t in targets if _is_binding(t))
        if up and not _is_binding(m):
            out[m] = up
    return out


def test_the_library_never_imports_the_cli():
    mods = _modules()
    graph = {m: _imports(m, p, mods) for m, p in mods.items()}
    assert "tlblab.commands.study" in mods and "tlblab.study" in graph["tlblab.commands.study"], \
        "the finder sees a command's imports of the library"
    assert _layer_breaches(graph) == {}


def test_the_layer_rule_sees_a_library_module_importing_a_command():
    graph = {"tlblab.commands.study": {"tlblab.study"}, "tlblab.study": {"tlblab.commands.study"},
             "tlblab.cli": {"tlblab.commands"}, "tlblab.report": {"tlblab.cli"}}
    assert _layer_breaches(graph) == {"tlblab.study": ["tlblab.commands.study"], "tlblab.report": ["tlblab.cli"]}


def _seed_breaches(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """Each module outside the seeds' folders (`tlblab.seeds.sNNN_*`) that imports one of them, with
    what it imports. Only the seed package itself (`tlblab.seeds`, which finds the folders) and
    the reproduction harness may: a seed folder is one seed's reproduction, and a library or a
    host tool built on its code would change when the reproduction does."""
    finders = {"tlblab.seeds", "tlblab.reproduce"}
    out = {}
    for m, targets in graph.items():
        into = sorted(t for t in targets if t.startswith("tlblab.seeds.s"))
        if into and m not in finders and not m.startswith("tlblab.seeds."):
            out[m] = into
    return out


def test_no_library_module_or_host_tool_imports_a_seed_folder():
    # `host/migrate.py` did (seed 000's `host_migrate_prediction`, now `host/migrate_model.py`).
    mods = _modules()
    graph = {m: _imports(m, p, mods) for m, p in mods.items()}
    assert "tlblab.host.migrate_model" in graph["tlblab.host.migrate"], "the finder sees a host tool's imports"
    assert _seed_breaches(graph) == {}


def test_the_seed_rule_sees_a_host_tool_importing_a_seed_folder():
    graph = {"tlblab.host.migrate": {"tlblab.seeds.s000_tlb_migration.experiments"},
             "tlblab.seeds.s000_tlb_migration.experiments": {"tlblab.sim"}, "tlblab.seeds": set()}
    assert _seed_breaches(graph) == {"tlblab.host.migrate": ["tlblab.seeds.s000_tlb_migration.experiments"]}
