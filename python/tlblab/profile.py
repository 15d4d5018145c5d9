"""The hot-page profiler of seed 004 §IV: a program's pages ranked by accesses, each named by the
mapping it lies in, so that the ranking applies to another run of the program at other addresses
(Valgrind lays memory out differently from a native run, and ASLR moves it again), and the
remapping of such a ranking to a new run's `/proc/PID/maps` (seed 004 §IV, Fig. 3).

Names (the `region` and `offset` columns of the profile CSV):

- a file mapping: the file's path, and the page's offset in the file (`mapping offset + page -
  mapping start`): the same in every run;
- `[heap]`: the brk heap, offset from its start (under Valgrind, whose brk segment is an unnamed
  mapping, the first unnamed writable mapping after the program's own file mappings);
- `[stack]`: the main thread's stack, offset from its top (negative; under Valgrind the client's
  stack is unnamed: the highest-placed unnamed mapping the program touched);
- `[anon] after NAME`: any other unnamed mapping, named by the mapping before it, offset from
  its start;
- `-`: no maps known (a built-in workload or a trace without them): the page is absolute.

Counting is the Rust engine's (`tlblab_trace::profile`, through `_native.page_counts`).
"""

from __future__ import annotations

import csv
import io
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tlblab import _native, phases
from tlblab.errors import UserError
from tlblab.files import atomic_write

PAGE = 4096
COLUMNS = ["rank", "process", "page", "region", "offset", "loads", "stores", "fetches", "accesses"]


@dataclass(frozen=True)
class Mapping:
    start: int
    end: int
    perms: str
    offset: int
    path: str  # "" for an unnamed mapping

    @property
    def named(self) -> bool:
        return bool(self.path)


def parse_maps(text: str, where: str = "maps") -> list[Mapping]:
    """The lines of a `/proc/PID/maps` file, in address order. A malformed line is an error
    naming it."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split(None, 5)
        try:
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            perms, off = parts[1], int(parts[2], 16)
        except (ValueError, IndexError):
            raise UserError(f"{where}:{n}: expected 'start-end perms offset dev inode [path]', found '{line}'")
        out.append(Mapping(lo, hi, perms, off, parts[5].strip() if len(parts) > 5 else ""))
    out.sort(key=lambda m: m.start)
    return out


def _program_path(maps: list[Mapping]) -> str:
    """The program's own file: the first file mapping (the executable is mapped lowest)."""
    for m in maps:
        if m.named and not m.path.startswith("["):
            return m.path
    return ""


def _heap(maps: list[Mapping]) -> Mapping | None:
    for m in maps:
        if m.path == "[heap]":
            return m
    # Valgrind's client brk segment: the first unnamed writable mapping after the program's files.
    prog = _program_path(maps)
    seen = False
    for m in maps:
        if m.path == prog:
            seen = True
        elif seen and not m.named and "w" in m.perms:
            return m
        elif seen and m.named:
            break
    return None


def _stack(maps: list[Mapping], touched: set[int]) -> Mapping | None:
    """The main thread's stack: `[stack]`, unless the program never touched it (under Valgrind,
    `[stack]` is Valgrind's own): then the highest unnamed mapping the program touched."""
    for m in maps:
        if m.path == "[stack]" and any(m.start <= p < m.end for p in touched):
            return m
    best = None
    for m in maps:
        if not m.named and "w" in m.perms and any(m.start <= p < m.end for p in touched):
            best = m
    return best


def name_page(page: int, maps: list[Mapping], heap: Mapping | None,
              stack: Mapping | None) -> tuple[str, int]:
    """(region, offset) of the page at address `page` (see the module docstring)."""
    prev = ""
    for m in maps:
        if m.start <= page < m.end:
            if m is stack:
                return "[stack]", page - m.end
            if m is heap:
                return "[heap]", page - m.start
            if m.named and not m.path.startswith("["):
                return m.path, m.offset + page - m.start
            if m.named:
                return m.path, page - m.start
            return f"[anon] after {prev or '-'}", page - m.start
        if m.named:
            prev = m.path
    return "-", page


def locate(region: str, offset: int, maps: list[Mapping], where: str = "maps") -> int:
    """The page address that (region, offset) names in another run's maps (seed 004 §IV, Fig. 3
    (b)-(c): the profiled run's mapping line is matched to the new run's, and the page's offset
    within it carried over)."""
    if region == "-":
        return offset
    if region == "[stack]":
        m = next((m for m in maps if m.path == "[stack]"), None)
        if m is None:
            raise UserError(f"{where}: no [stack] mapping to place a stack page in")
        return m.end + offset
    if region == "[heap]":
        m = _heap(maps)
        if m is None:
            raise UserError(f"{where}: no heap mapping ([heap]) to place a heap page in")
        return m.start + offset
    if region.startswith("[anon] after "):
        after = region[len("[anon] after "):]
        prev = "-"
        for m in maps:
            if not m.named and prev == after:
                return m.start + offset
            if m.named:
                prev = m.path
        raise UserError(f"{where}: no unnamed mapping after {after} to place a page of '{region}' in")
    if region.startswith("["):
        m = next((m for m in maps if m.path == region), None)
        if m is None:
            raise UserError(f"{where}: no {region} mapping")
        return m.start + offset
    for m in maps:
        if m.path == region and m.offset <= offset < m.offset + (m.end - m.start):
            return m.start + offset - m.offset
    raise UserError(f"{where}: no mapping of {region} holds file offset {offset:#x}")


def profile(workload: str, *, seed: int = 0, maps: str | None = None,
            process: int | None = None) -> list[dict[str, Any]]:
    """The pages of a trace file or built-in workload ranked by accesses (loads + stores +
    fetches, then page), each named by its mapping in `maps` (the text of `/proc/PID/maps`;
    default: the maps a `tlblab trace record` capture stored in its footer, if any).
    `process`: only that process's pages. Rows have the keys of `COLUMNS`."""
    if maps is None and os.path.isfile(workload):
        maps = _native.trace_maps(workload) or None
    try:
        with phases.phase(phases.ANALYSIS):
            counts = _native.page_counts(workload, seed=seed)
    except ValueError as e:
        raise UserError(str(e))
    if process is not None:
        counts = [c for c in counts if c[0] == process]
    ms = parse_maps(maps, "maps") if maps else []
    touched = {vpn * PAGE for _, vpn, *_ in counts}
    heap, stack = (_heap(ms), _stack(ms, touched)) if ms else (None, None)
    rows = []
    for proc, vpn, loads, stores, fetches in counts:
        page = vpn * PAGE
        region, offset = name_page(page, ms, heap, stack) if ms else ("-", page)
        rows.append({"process": proc, "page": page, "region": region, "offset": offset,
                     "loads": loads, "stores": stores, "fetches": fetches,
                     "accesses": loads + stores + fetches})
    rows.sort(key=lambda r: (-r["accesses"], r["process"], r["page"]))
    for i, r in enumerate(rows, 1):
        r["rank"] = i
    return rows


def profile_program(argv: list[str], *, valgrind: str = "valgrind", keep_trace: str | None = None,
                    process: int | None = None) -> list[dict[str, Any]]:
    """Runs `argv` under Valgrind (`tlblab trace record`, tlblab's tool: streamed, with `/proc/PID/maps`
    of the traced process in the trace's footer) and profiles the capture."""
    from tlblab.trace import record

    with tempfile.TemporaryDirectory(prefix="tlblab-profile-") as tmp:
        path = keep_trace or str(Path(tmp) / "capture.tlbt")
        try:
            record(argv, path, valgrind=valgrind)
        except ValueError as e:
            raise UserError(str(e))
        return profile(path, process=process)


def write_csv(rows: list[dict[str, Any]], path: str | os.PathLike[str]) -> None:
    """Writes a profile (pages and offsets in hex), all at once through a temporary file so a
    failure leaves no partial file."""
    buf = io.StringIO(newline="")
    w = csv.writer(buf)
    w.writerow(COLUMNS)
    for r in rows:
        w.writerow([r["rank"], r["process"], f"{r['page']:#x}", r["region"],
                    (f"-{-r['offset']:#x}" if r["offset"] < 0 else f"{r['offset']:#x}"),
                    r["loads"], r["stores"], r["fetches"], r["accesses"]])
    atomic_write(path, buf.getvalue())


def read_csv(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """A profile CSV (as `write_csv` writes it), in file order; a bad line is an error naming
    the file, the line and the field."""
    rows = []
    try:
        f = open(path, newline="")
    except OSError as e:
        raise UserError(f"{path}: cannot read the profile ({e.strerror})")
    with f:
        reader = csv.DictReader(f)
        missing = [c for c in ("page", "region", "offset") if c not in (reader.fieldnames or [])]
        if missing:
            raise UserError(f"{path}:1: a profile needs the columns page, region, offset; missing {', '.join(missing)}")
        for n, r in enumerate(reader, 2):
            try:
                row = {"page": int(r["page"], 0), "region": r["region"], "offset": int(r["offset"], 0)}
                for k in ("rank", "process", "loads", "stores", "fetches", "accesses"):
                    row[k] = int(r[k]) if r.get(k) not in (None, "") else 0
            except (ValueError, TypeError):
                raise UserError(f"{path}:{n}: expected numbers in page, offset and the counts, found {dict(r)}")
            rows.append(row)
    return rows


def remap(rows: list[dict[str, Any]], maps_text: str, where: str = "maps") -> list[dict[str, Any]]:
    """The same ranking with each page placed in another run (its `/proc/PID/maps` text)."""
    ms = parse_maps(maps_text, where)
    return [{**r, "page": locate(r["region"], r["offset"], ms, where)} for r in rows]
