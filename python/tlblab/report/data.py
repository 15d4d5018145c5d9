"""Every number of the report as files beside the page: CSV (any tool) and Parquet (typed).

Written atomically, like the rest of the study: an interrupted run leaves the last report's
files or none, never a half-written one.
"""

from __future__ import annotations

from pathlib import Path

from tlblab.files import atomic_write


def write_table(frame, directory: Path, name: str) -> dict[str, str]:
    """`<directory>/<name>.csv` and `.parquet`; returns their names relative to the page."""
    frame = frame.copy()
    for col in frame.columns:
        # Parquet needs one type per column: a column mixing numbers and text (an `x` that is
        # sometimes absent, a value column holding "full" and 4) is written as text.
        kinds = {type(v) for v in frame[col] if v is not None and v == v}
        if len(kinds) > 1 and not kinds <= {int, float, bool}:
            frame[col] = frame[col].map(lambda v: None if v is None or v != v else str(v))
    directory.mkdir(parents=True, exist_ok=True)
    atomic_write(directory / f"{name}.csv", lambda p: frame.to_csv(p, index=False))
    atomic_write(directory / f"{name}.parquet", lambda p: frame.to_parquet(p, index=False))
    return {"csv": f"{directory.name}/{name}.csv", "parquet": f"{directory.name}/{name}.parquet"}
