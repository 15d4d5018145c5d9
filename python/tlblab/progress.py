"""Progress bars (tqdm) that suit where stderr goes: redrawn in place on a terminal; in a file
or a pipe (a CI log, `2> log`), one line per update at most every 10 s, for the in-place
redraws (carriage returns) once ran together into one line of the whole run."""

from __future__ import annotations

import sys
from typing import Any, TextIO


class _Lines:
    """A stream for tqdm that turns each redraw into a line of its own."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> None:
        text = text.replace("\r", "").replace("\x1b[A", "")
        if text.strip():
            self.stream.write(text.rstrip("\n") + "\n")

    def flush(self) -> None:
        self.stream.flush()


def bar(total: int, desc: str, unit: str, initial: int = 0, **kw: Any):
    """A tqdm bar on stderr for `total` units."""
    from tqdm import tqdm

    err = sys.stderr
    if err.isatty():
        return tqdm(total=total, initial=initial, desc=desc, unit=unit, file=err, dynamic_ncols=True, **kw)
    return tqdm(total=total, initial=initial, desc=desc, unit=unit, file=_Lines(err), ncols=80, ascii=True,
                **{"mininterval": 10.0, **kw})
