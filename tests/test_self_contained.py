"""Every reference the project makes resolves inside it: no file cites the design notes and seed
copies the project was started from (outside the repository, absent from a user's clone). A fact
cites its original source (a seed's section or table, a manual, a URL) instead."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE = re.compile(r"\b(?:DESIGN|STYLE)\.md\b|\bshared/(?:seeds|notes)\b|\.\./shared\b")


def test_no_tracked_file_points_outside_the_repository():
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    hits = []
    for name in files.decode().split("\0"):
        path = ROOT / name
        if not name or name == "tests/test_self_contained.py" or not path.is_file():
            continue
        try:
            text = path.read_text()
        except (UnicodeDecodeError, OSError):
            continue  # binary
        for n, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line):
                hits.append(f"{name}:{n}: {line.strip()[:120]}")
    assert not hits, "references outside the repository:\n" + "\n".join(hits)
