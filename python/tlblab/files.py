"""Writing output files: whole or not at all.

Every file tlblab writes goes through `atomic_write`: to a temporary file beside the target, then
renamed over it, so that a run that fails or is interrupted (Ctrl-C included) leaves the file it
found, or none, never a part of one.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Callable, Iterator, Union

#: Text (written as UTF-8), bytes, or a function that writes the file whose name it is given
#: (`frame.to_parquet`, `figure.savefig`: the temporary name keeps the target's extension).
Content = Union[str, bytes, Callable[[str], object]]


def atomic_write(path: str | os.PathLike[str], content: Content) -> None:
    """Writes `content` to `path` all at once. The file gets the mode a plain `open` would give
    it (0666 less the umask), not the temporary file's 0600. The directory must exist: an
    `OSError` (FileNotFoundError) otherwise, for the caller to word; its `filename` is `path`
    (never the temporary file's name)."""
    path = os.fspath(path)
    directory, name = os.path.split(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=os.path.splitext(name)[1])
    except OSError as e:
        # The error names the file asked for, not the temporary name beside it.
        e.filename, e.filename2 = path, None
        raise
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        if callable(content):
            os.close(fd)
            fd = -1
            content(tmp)
        else:
            with os.fdopen(fd, "wb") as f:
                fd = -1
                f.write(content.encode("utf-8") if isinstance(content, str) else content)
        os.replace(tmp, path)
    except BaseException as e:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(e, OSError) and e.filename in (tmp, None):
            e.filename, e.filename2 = path, None
        raise


@contextlib.contextmanager
def one_maker(path: str | os.PathLike[str]) -> Iterator[bool]:
    """While a cache entry `path` is made, one process at a time: holds an exclusive lock on a
    lock file named by a hash of `path`'s absolute name in the temporary folder's
    `tlblab-locks/` (kept there: removing it would let a third process lock a new file while a
    second still waits on the old one; nothing is left beside the cache entry) and yields
    whether `path` is still missing, so the caller makes it (with `atomic_write`) only then; a
    process that waited reads what the first one made. `tlblab reproduce`'s workers often want
    the same capture at once (seed 004's x86 Tables 2 and 3 both need a co-runner's capture and
    its system calls), and without the lock both made it: minutes of Valgrind twice."""
    import fcntl
    import hashlib

    path = os.fspath(path)
    if os.path.isfile(path):
        yield False
        return
    locks = os.path.join(tempfile.gettempdir(), "tlblab-locks")
    os.makedirs(locks, exist_ok=True)
    name = hashlib.sha256(os.path.abspath(path).encode()).hexdigest()[:32]
    with open(os.path.join(locks, f"{name}.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield not os.path.isfile(path)


def csv_text(rows: list[dict], fields: list[str] | None = None) -> str:
    """`rows` as CSV text (`csv.DictWriter`'s dialect: `\\r\\n` line ends), the columns in order of
    first appearance unless `fields` names them."""
    import csv
    import io

    if fields is None:
        fields = list(dict.fromkeys(k for r in rows for k in r))
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=fields)
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def content_digest(*parts: bytes | str) -> str:
    """A short, stable key for a cache entry built from `parts` (file contents, tool versions,
    flags): each part is length-prefixed, so no two different sequences of parts share a key."""
    import hashlib

    h = hashlib.sha256()
    for p in parts:
        b = p.encode() if isinstance(p, str) else p
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()[:20]


# (path, size, modification time) -> the file's sha256: `file_digest` reads a file once per
# process and version of it.
_FILE_DIGESTS: dict[tuple[str, int, int], str] = {}


def file_digest(path: str | os.PathLike[str]) -> str:
    """The sha256 of a file's bytes (a trace's, in a cache key of what was simulated on it), read
    once per process and version of the file (its path, size and modification time)."""
    import hashlib

    st = os.stat(path)
    key = (os.fspath(path), st.st_size, st.st_mtime_ns)
    if key not in _FILE_DIGESTS:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        _FILE_DIGESTS[key] = h.hexdigest()
    return _FILE_DIGESTS[key]


def tool_version(argv: list[str], who: str) -> str:
    """The first line a tool prints for `argv` (e.g. `gcc --version`), a part of a cache key;
    a missing or failing tool is a user error naming the packages that provide it."""
    import subprocess

    from tlblab.errors import UserError

    try:
        out = subprocess.run(argv, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        raise UserError(f"{who}: '{' '.join(argv)}' failed ({e}); `make setup` installs the "
                        "Debian packages of scripts/debian-packages.txt")
    return (out.stdout or out.stderr).splitlines()[0]
