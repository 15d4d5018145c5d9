"""Docs that run: the README's code blocks are executed (Python) or are the compiled example (C)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _blocks(lang: str) -> list[str]:
    parts = README.split(f"```{lang}\n")[1:]
    return [p.split("```", 1)[0] for p in parts]


def test_readme_python_quickstart_runs():
    blocks = _blocks("python")
    assert blocks, "the README has a Python quickstart"
    for b in blocks:
        exec(compile(b, "README.md", "exec"), {})


def test_readme_c_quickstart_is_the_compiled_example():
    doc = (ROOT / "docs/color.md").read_text().split("```c\n", 1)[1].split("```", 1)[0]
    assert _blocks("c") == [doc]
