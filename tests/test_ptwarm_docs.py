"""docs/ptwarm.md's C code blocks are the BEGIN/END sections of runtime/tests/test_ptwarm_example.c, which
ctest compiles and runs (ptwarm_docs_example): the examples in the doc cannot rot."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def sections() -> dict[str, str]:
    src = (ROOT / "runtime/tests/test_ptwarm_example.c").read_text()
    found = re.findall(r"// BEGIN (\w+)\n(.*?)    // END", src, re.S)
    return {name: "\n".join(line[4:] for line in body.rstrip("\n").split("\n")) for name, body in found}


def test_every_c_block_of_the_doc_is_a_compiled_example():
    doc = (ROOT / "docs/ptwarm.md").read_text()
    blocks = re.findall(r"```c\n(.*?)\n```", doc, re.S)
    examples = sections()
    assert set(examples) == {"ptwarm", "tlbmig"}
    assert len(blocks) == 2
    for block in blocks:
        assert block in examples.values(), f"docs/ptwarm.md block not in test_ptwarm_example.c:\n{block}"
