"""Docs that run: the README's code blocks are executed (Python) or are the compiled example (C),
and every `tlblab` command it shows runs as written, on the built tree, in the README's order.

The commands are read from README.md itself, so the README cannot drift from what works.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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


# --- the command-line tour, as written ----------------------------------------------------------

def _tour_commands() -> list[tuple[str, int]]:
    """Every `tlblab ...` command of the README's indented blocks (the tour, the techniques'
    block, the `$ tlblab ...` example), joined across `\\` continuations, with the exit status
    the README shows: 0, unless its comment says `exit status N`."""
    cmds: list[tuple[str, int]] = []
    lines = README.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("    ") and line.strip().removeprefix("$ ").startswith("tlblab "):
            text = line.strip().removeprefix("$ ")
            while text.rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                text = text.rstrip()[:-1].rstrip() + " " + lines[i].strip()
            command, _, comment = text.partition("  #")
            m = re.search(r"exit status (\d+)", comment)
            cmds.append((command.strip(), int(m.group(1)) if m else 0))
        i += 1
    return cmds


TOUR = _tour_commands()


def test_the_readme_has_a_tour():
    names = {c.split()[1] for c, _ in TOUR}
    assert {"simulate", "study", "trace", "reproduce", "sweep", "bench", "presets", "workloads"} <= names, names


@pytest.fixture(scope="module")
def tour_dir(tmp_path_factory):
    """A fresh directory as a new user's clone would be, with the repository's examples: the
    tour's files (my.toml, ls.tlbt, out/) land there."""
    d = tmp_path_factory.mktemp("tour")
    (d / "examples").symlink_to(ROOT / "examples")
    return d


@pytest.mark.parametrize("command,status", TOUR, ids=[c for c, _ in TOUR])
def test_readme_tour_command_runs_as_written(tour_dir, command, status):
    """Each tour command, in the README's order (later ones use the files earlier ones made),
    exits with the status the README shows, and says nothing as a traceback."""
    if command.startswith("tlblab trace record") and shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed")
    # Outputs in the tour's out/ as in a clone's (tlblab.paths): the directory is no checkout.
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               TLBLAB_OUT=str(tour_dir / "out"))
    p = subprocess.run(["bash", "-c", command], cwd=tour_dir, env=env, capture_output=True, text=True,
                       timeout=600, stdin=subprocess.DEVNULL)
    assert p.returncode == status, f"{command}\nexit {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}"
    assert "Traceback" not in p.stderr, p.stderr
    if status == 2:
        # Bad input: one line naming what was wrong, nothing on stdout.
        assert len(p.stderr.strip().splitlines()) == 1 and p.stderr.startswith("tlblab: error: "), p.stderr
        assert p.stdout == ""
