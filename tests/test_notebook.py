"""The notebook under examples/ runs: every code cell executed in order in one namespace, as a
kernel would (plain execution: nbclient is not among the pinned dependencies), with a
non-interactive matplotlib backend; a cell's last expression is displayed through the object's
`_repr_html_` where it has one, as Jupyter shows it."""

from __future__ import annotations

import ast
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "examples/tlblab_tour.ipynb"


def _display(value) -> str:
    html = getattr(value, "_repr_html_", None)
    return html() if callable(html) else repr(value)


def test_the_notebook_runs_cell_by_cell_and_its_results_display(tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)  # anything a cell writes lands here
    nb = json.loads(NOTEBOOK.read_text())
    assert nb["nbformat"] == 4
    ns: dict = {}
    shown = []
    for i, cell in enumerate(c for c in nb["cells"] if c["cell_type"] == "code"):
        assert not cell["outputs"], f"cell {i}: committed with outputs; clear them"
        tree = ast.parse("".join(cell["source"]), f"cell {i}")
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        exec(compile(tree, f"{NOTEBOOK.name} cell {i}", "exec"), ns)
        if last is not None:
            shown.append(_display(eval(compile(ast.Expression(last.value), f"cell {i}", "eval"), ns)))
    # The simulation's display is a short HTML table, not the stats dict.
    first = shown[0]
    assert first.startswith("<p><b>zen3</b>") and "<table" in first and len(first) < 6000
    assert len(repr(ns["r"])) < 400 and "\n" not in repr(ns["r"])
    # The miss curve's figure was drawn.
    assert ns["fig"].axes and ns["fig"].axes[0].lines
    # The technique ran and is named.
    assert shown[-1].startswith("('tlb_coloring'")
