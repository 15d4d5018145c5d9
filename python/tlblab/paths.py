"""Where tlblab writes what no one named a place for: its outputs, caches and checkpoints.

Every default directory of a command or a library function (`tlblab study`'s CSVs, the
intervals' checkpoints, the seeds' capture caches) is `out(...)` below, so none piles up in
whatever directory a command happens to run from (issue 88):

1. `TLBLAB_OUT`, when set: that directory.
2. Run from inside a tlblab checkout (the current directory or one above it holds the
   repository's `Cargo.toml` and `python/tlblab/`): the checkout's `out/` (ignored by git), as
   the relative path `out` when run from the checkout's root, as the README's commands are.
3. Anywhere else: the per-user cache, `$XDG_CACHE_HOME/tlblab` (`~/.cache/tlblab` when unset;
   the XDG Base Directory Specification's place for data a program can make again).

A command's `--out` (or a function's directory argument) still wins over all three. The
library writes nothing here by itself; this only names the place (docs/paths.md).

Some reproductions build programs from the repository's C sources (`runtime/`: seed 003's task
programs, seed 004's MiBench programs), which an installed wheel does not carry: `repository`
finds the checkout the package runs from, or the one `TLBLAB_REPO` names, and `repository_file`
fails with one line that says so when there is none. Their capture caches stay in that
checkout's `out/` (`cache`), shared by every command whatever directory it runs from.
"""

from __future__ import annotations

import os
from pathlib import Path

from tlblab.errors import UserError

ENV = "TLBLAB_OUT"
REPO_ENV = "TLBLAB_REPO"


def _is_checkout(d: Path) -> bool:
    return (d / "Cargo.toml").is_file() and (d / "python" / "tlblab" / "__init__.py").is_file()


def checkout(start: str | os.PathLike[str] | None = None) -> Path | None:
    """The tlblab checkout that `start` (default: the current directory) lies in, or None."""
    here = Path(start if start is not None else os.getcwd()).resolve()
    for d in (here, *here.parents):
        if _is_checkout(d):
            return d
    return None


def out_root() -> Path:
    """The directory every default output goes under (the rules of the module's docstring)."""
    env = os.environ.get(ENV, "").strip()
    if env:
        return Path(env).expanduser()
    repo = checkout()
    if repo is not None:
        return Path("out") if repo == Path.cwd().resolve() else repo / "out"
    cache = os.environ.get("XDG_CACHE_HOME", "").strip()
    # The spec says a relative XDG_CACHE_HOME is invalid and must be ignored.
    base = Path(cache) if cache and os.path.isabs(cache) else Path.home() / ".cache"
    return base / "tlblab"


def out(*parts: str) -> Path:
    """`out_root()` joined with `parts`: `out("study")` is `out/study` in the checkout."""
    return out_root().joinpath(*parts)


def repository() -> Path | None:
    """The tlblab checkout this package runs from (installed editable, or on the path from
    `python/`), else the one `TLBLAB_REPO` names, else None (an installed wheel)."""
    own = Path(__file__).resolve().parents[2]
    if _is_checkout(own):
        return own
    env = os.environ.get(REPO_ENV, "").strip()
    if env and _is_checkout(Path(env).expanduser().resolve()):
        return Path(env).expanduser().resolve()
    return None


def repository_file(relative: str, need: str) -> Path:
    """The repository's file or folder `relative` (e.g. `runtime/bench/mibench`), which `need`
    (what is built from it, named in the message) reads; one line saying how to get it when there
    is no checkout."""
    repo = repository()
    path = repo / relative if repo is not None else None
    if path is None or not path.exists():
        env = os.environ.get(REPO_ENV, "").strip()
        found = f"{REPO_ENV}={env} is not a tlblab checkout with it" if env else f"{REPO_ENV} is not set"
        raise UserError(f"{need}: built from the tlblab repository's {relative}, which an installed tlblab does not carry "
                        f"({found}): run it from a clone of tlblab (git clone, then `make setup`) or set "
                        f"{REPO_ENV} to one")
    return path


def cache(*parts: str) -> Path:
    """Where the seeds' builds and captures are cached: the checkout's `out/` (absolute, so every
    command shares it wherever it runs), else `out(...)`."""
    repo = repository()
    return repo.joinpath("out", *parts) if repo is not None else out(*parts)
