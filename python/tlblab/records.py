"""The verdicts of full-size runs, kept so that the main job can show them.

A reproduction's quick size is a smoke run: it shows the experiment still runs, never a verdict
for the seed (seed 001's seed-scale tables have nothing to measure at it). Only a full
`tlblab reproduce` says what the model predicts, and it takes about an hour on a 2-core host, far
beyond the study's budget. So each full run records, per reproduction, what it measured and the
code that measured it, `<out>/full/<seed>/<id>.json`:

    {"reproduction": "003/fig6_2", "size": "full", "commit": "b590653", "dirty": false,
     "date": "2026-11-29T03:10:00+00:00", "code": "<sha256 of the code that determines the numbers>",
     "seconds": 0.9, "error": "", "ours": {"row key": value, ...}}

`tlblab study` reads them (`load`), evaluates the current criteria on the recorded numbers, and
shows those verdicts with their commit and date, marked stale when the code that determines the
numbers (`code_hash(seed)`: the package's Python but its presentation and the other seeds'
folders, the seed's own folder, the engine's Rust sources and presets, or the built extension
where the sources are not beside the package) changed since.

    >>> from tlblab import records
    >>> records.load("out/reproduce")      # [Recorded(outcome, record, stale), ...]
"""

from __future__ import annotations

import datetime
import hashlib
import json
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from tlblab.errors import UserError
from tlblab.files import atomic_write

PACKAGE = Path(__file__).parent
# The package's modules that only present numbers (printing, the page, the CLI): a change to them
# leaves every recorded number as it was.
PRESENTATION = ("report", "commands", "cli.py", "report_text.py", "records.py")

# What a full run costs, for the user told to make one: `tlblab reproduce` at e218074 on a 2-core
# Intel host (issue 59), seed 001's share from its own run.
FULL_RUN = "tlblab reproduce"
FULL_RUN_TIME = "27-46 minutes on a 2-core host (a Zen 5 guest, a Zen 4 guest); seed 001 alone is `tlblab reproduce 001`"


@lru_cache(maxsize=None)
def code_hash(seed: str = "") -> str:
    """sha256 (16 hex digits) of what determines seed `seed`'s numbers: the package's Python but
    its presentation and the other seeds' folders, the engine, and the seed's own folder (its
    experiments and data, not its reproduction files: the criteria are evaluated afresh)."""
    h = hashlib.sha256()
    def counts(p: Path) -> bool:
        rel = p.relative_to(PACKAGE).parts
        if rel[0] in PRESENTATION or p.parent.name == "reproductions" or \
                p.name in ("criteria.lock.toml", "findings.toml"):
            return False
        # Another seed's folder does not determine this seed's numbers.
        return not (rel[0] == "seeds" and len(rel) > 2 and not rel[1].startswith(f"s{seed}_"))

    files = [p for p in sorted(PACKAGE.rglob("*")) if p.is_file() and "__pycache__" not in p.parts
             and p.suffix in (".py", ".toml", ".txt", ".c", ".S") and counts(p)]
    root = PACKAGE.parent.parent
    if (root / "crates").is_dir():
        files += sorted(p for p in (root / "crates").rglob("*.rs") if "target" not in p.parts)
        files += sorted((root / "presets").rglob("*.toml")) + [root / "Cargo.lock"]
    else:
        files += sorted(PACKAGE.glob("_native*"))
    for p in files:
        if p.is_file():
            h.update(str(p.relative_to(root) if p.is_relative_to(root) else p.name).encode())
            h.update(p.read_bytes())
    return h.hexdigest()[:16]


def commit() -> str:
    """The checkout's commit (short), with `+changes` when its files differ from it; "" outside git."""
    try:
        run = lambda *a: subprocess.run(["git", *a], cwd=PACKAGE, capture_output=True, text=True,  # noqa: E731
                                        check=True).stdout.strip()
        head = run("rev-parse", "--short", "HEAD")
        dirty = run("status", "--porcelain", "--untracked-files=no", "--", ".")
        return head + ("+changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return ""


def write_records(outcomes: list, out: Path) -> str:
    """One record per full-size outcome under `out/full/`; returns where."""
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    head = commit()
    for o in outcomes:
        rep = o.reproduction
        rec = {"reproduction": rep.name, "size": "full", "commit": head, "date": now, "code": code_hash(rep.seed),
               "seconds": round(o.seconds, 2), "error": o.error, "ours": o.ours}
        path = out / "full" / rep.seed / f"{rep.id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(rec, indent=1, sort_keys=True))
    return str(out / "full")


@dataclass
class Recorded:
    """A reproduction's last full-size run: its outcome under the current criteria, the record it
    was rebuilt from, and whether the code changed since (`stale`)."""

    outcome: Any          # tlblab.reproduce.Outcome
    record: dict[str, Any]
    stale: bool

    def label(self) -> str:
        r = self.record
        when = r["date"][:16].replace("T", " ")
        return f"full size, `{FULL_RUN}` at {r['commit'] or 'an unknown commit'} on {when} UTC" + \
            (" — STALE: the code changed since" if self.stale else "")


def _read(path: Path) -> dict[str, Any]:
    try:
        rec = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise UserError(f"{path}: not a record of a full run: {e}") from None
    for k, kind in (("reproduction", str), ("commit", str), ("date", str), ("code", str), ("ours", dict)):
        if not isinstance(rec.get(k), kind):
            raise UserError(f"{path}: '{k}': expected a {kind.__name__}, found {rec.get(k)!r}")
    return rec


def load(out: str | Path, which: list[str] | None = None) -> list[Recorded]:
    """The full-size records under `out/full/` (reproductions named in `which`, or every one), each
    rebuilt as an outcome of its reproduction's current file. A record whose reproduction no longer
    exists is left out."""
    from tlblab import reproduce

    base = Path(out) / "full"
    if not base.is_dir():
        return []
    reps = {r.name: r for r in reproduce.catalog()}
    got = []
    for path in sorted(base.glob("*/*.json")):
        rec = _read(path)
        rep = reps.get(rec["reproduction"])
        if rep is None or (which is not None and rep.name not in which):
            continue
        ours = {k: float(v) for k, v in rec["ours"].items() if isinstance(v, (int, float))}
        o = reproduce.outcome(rep, ours, float(rec.get("seconds", 0.0)), str(rec.get("error", "")))
        got.append(Recorded(o, rec, rec["code"] != code_hash(rep.seed)))
    return got
