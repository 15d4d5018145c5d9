"""Pre-registration of the reproductions' criteria: a lock file CI holds them to.

A criterion is written before the first run and never loosened (docs/reproductions.md). This
module makes that checkable. `python/tlblab/seeds/criteria.lock.toml` holds, for every
criterion, a digest of what it tests (everything but its `explanation`, which is written after
a run, and its `because`, the words for its role) and its role, as the criterion was first
committed, with that commit. A criterion whose digest or role differs from its lock entry must
carry the change in its file as a chain of `[[revisions]]` (date, criterion, why, the criterion
`before` and `after` as tables), the first revision's `before` being the locked criterion and
the last one's `after` the criterion as it is now. `check()` lists every break in that chain;
the test suite fails on any.

    >>> import tlblab.prereg as pr
    >>> pr.check()                 # [] when every criterion is as registered or revised
    >>> pr.preregister()           # adds the criteria not in the lock yet; never rewrites one
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tlblab.errors import UserError
from tlblab.seeds import reproduction_files

# Fields that do not change what a criterion tests: written after the run (the explanation and the
# values its prose quotes), or the role's words.
UNLOCKED = ("explanation", "ours_when_written", "because", "role")

HEADER = """\
# Pre-registration: every criterion of python/tlblab/seeds/*/reproductions/*.toml as first committed.
# digest: sha256 of the criterion's fields but explanation, because and role (canonical JSON);
# role: prediction or consistency; commit: the commit that first held it so.
# Never edit an entry: change a criterion with a [[revisions]] entry in its file (docs/reproductions.md);
# `tlblab reproduce --preregister` appends the criteria that are new.
"""


def lock_path(data: Path) -> Path:
    return data / "criteria.lock.toml"


def digest(criterion: dict[str, Any]) -> str:
    """What the criterion tests, as a short stable hash."""
    core = {k: v for k, v in criterion.items() if k not in UNLOCKED}
    text = json.dumps(core, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class State:
    """A criterion as the lock sees it."""

    digest: str
    role: str


def state_of(criterion: dict[str, Any], role_before: str = "") -> State:
    return State(digest(criterion), criterion.get("role", role_before))


def read_lock(path: Path) -> dict[str, dict[str, Any]]:
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{path}: not valid TOML: {e}") from None
    out = {}
    for i, e in enumerate(data.get("criteria", [])):
        for k in ("name", "digest", "role", "commit"):
            if not isinstance(e.get(k), str):
                raise UserError(f"{path}: criteria[{i}].{k}: expected a string, found {e.get(k)!r}")
        out[e["name"]] = e
    return out


def _files(data: Path) -> list[tuple[Path, dict[str, Any]]]:
    out = []
    for p in reproduction_files(data):
        try:
            out.append((p, tomllib.loads(p.read_text())))
        except tomllib.TOMLDecodeError as e:
            raise UserError(f"{p}: not valid TOML: {e}") from None
    return out


def _name(d: dict[str, Any], cid: str) -> str:
    return f"{d['seed']}/{d['id']}#{cid}"


def check(data: Path | None = None) -> list[str]:
    """Every criterion that is not as pre-registered or revised, one line each ([] when all are)."""
    from tlblab.reproduce import DATA

    data = data or DATA
    lock = read_lock(lock_path(data))
    problems: list[str] = []
    seen: set[str] = set()
    for path, d in _files(data):
        revisions = d.get("revisions") or []
        current = {c.get("id"): c for c in d.get("criteria", [])}
        names = set(current) | {rv.get("criterion") for rv in revisions}
        for cid in sorted(n for n in names if n):
            name = _name(d, cid)
            seen.add(name)
            entry = lock.get(name)
            if entry is None:
                if cid in current:
                    problems.append(f"{path}: criterion '{cid}' is not pre-registered: commit it before its first "
                                    "run and add it with `tlblab reproduce --preregister`")
                else:
                    problems.append(f"{path}: a revision names '{cid}', which is neither a criterion nor in the lock")
                continue
            state: State | None = State(entry["digest"], entry["role"])
            for i, rv in enumerate(r for r in revisions if r.get("criterion") == cid):
                before, after = rv.get("before"), rv.get("after")
                if state is None:
                    problems.append(f"{path}: revision {i + 1} of '{cid}' follows its removal")
                    break
                if not isinstance(before, dict) or state_of(before, state.role) != state:
                    problems.append(f"{path}: revision {i + 1} of '{cid}' ({rv.get('date', '?')}): its 'before' is "
                                    "not the criterion as registered (or as the previous revision left it)")
                    state = None
                    break
                state = None if rv.get("removed") else state_of(after or {}, state.role)
            else:
                if cid in current:
                    now = state_of(current[cid])
                    if state is None:
                        problems.append(f"{path}: criterion '{cid}' was revised as removed but is still there")
                    elif now != state:
                        what = "role" if now.digest == state.digest else "digest"
                        problems.append(f"{path}: criterion '{cid}' changed since it was pre-registered ({what} "
                                        f"{getattr(now, what)}, registered {getattr(state, what)}) and no "
                                        "[[revisions]] entry records the change (date, criterion, before, after, why)")
                elif state is not None:
                    problems.append(f"{path}: criterion '{cid}' is gone without a revision that removes it")
    for name in sorted(set(lock) - seen):
        problems.append(f"{lock_path(data)}: '{name}' was pre-registered but its reproduction file no longer has it "
                        "(a removal is a [[revisions]] entry with removed = true)")
    return problems


def _first_commit(path: Path, cid: str, want: str) -> str:
    """The oldest commit whose version of `path` holds criterion `cid` with digest `want`."""
    try:
        root = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=path.parent, capture_output=True,
                              text=True, check=True).stdout.strip()
        rel = path.resolve().relative_to(root)
        log = subprocess.run(["git", "log", "--reverse", "--format=%h", "--", str(rel)], cwd=root,
                             capture_output=True, text=True, check=True).stdout.split()
        for h in log:
            shown = subprocess.run(["git", "show", f"{h}:{rel}"], cwd=root, capture_output=True, text=True)
            if shown.returncode:
                continue
            try:
                crit = tomllib.loads(shown.stdout).get("criteria", [])
            except tomllib.TOMLDecodeError:
                continue
            if any(c.get("id") == cid and digest(c) == want for c in crit):
                return h
    except (OSError, subprocess.CalledProcessError, ValueError):
        pass
    return "uncommitted"


def preregister(data: Path | None = None) -> list[str]:
    """Appends every criterion not in the lock yet (with the commit that first held it, or
    'uncommitted' until one does), fills in the commit of entries still 'uncommitted', and
    returns the names it added. A registered criterion is never rewritten."""
    from tlblab.files import atomic_write
    from tlblab.reproduce import DATA

    data = data or DATA
    path = lock_path(data)
    lock = read_lock(path)
    added = []
    for p, d in _files(data):
        for c in d.get("criteria", []):
            name = _name(d, c["id"])
            if name not in lock:
                lock[name] = {"name": name, "digest": digest(c), "role": c.get("role", ""), "commit": "uncommitted"}
                added.append(name)
            e = lock[name]
            if e["commit"] == "uncommitted":
                e["commit"] = _first_commit(p, c["id"], e["digest"])
    lines = [HEADER]
    for name in sorted(lock):
        e = lock[name]
        lines.append(f'\n[[criteria]]\nname = {json.dumps(name)}\ndigest = "{e["digest"]}"\n'
                     f'role = "{e["role"]}"\ncommit = "{e["commit"]}"\n')
    text = "".join(lines)
    atomic_write(path, text)
    return added
