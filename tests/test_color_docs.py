"""Docs that run: the C example in docs/color.md is the EXAMPLE region of
runtime/tests/test_color_example.c, which ctest compiles and runs (color_example)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_given_docs_example_then_it_is_the_compiled_example_verbatim():
    src = (ROOT / "runtime/tests/test_color_example.c").read_text()
    region = src.split("/* EXAMPLE BEGIN */\n", 1)[1].split("/* EXAMPLE END */", 1)[0]
    doc = (ROOT / "docs/color.md").read_text()
    block = doc.split("```c\n", 1)[1].split("```", 1)[0]
    assert block == '#include "tlblab/color.h"\n\n' + region
