"""Seed 004's real-time programs as whole-program captures, built and traced by tlblab itself.

Seed 004 §V.1 ran the MiBench binaries basicmath, qsort and susan on 32-bit ARM Linux and profiled
them under Valgrind Lackey (§IV). Here the programs of `runtime/bench/mibench/` (the same
algorithms on MiBench's small-input sizes: the sources say how each differs) are compiled as
32-bit x86 programs (`gcc -m32`: 32-bit virtual addresses and 4-byte pointers, as on the seed's
ARMv7, so their pages fit the cortex-a9 preset's 32-bit short-descriptor page table) and run under
Lackey through `tlblab trace record --tool lackey` (tlblab's own tool is built for amd64 only,
and these are 32-bit programs): the whole run, loader, libc, stack and the program's own pages as
Lackey sees them (no kernel references: Lackey sees user space only).

Everything is cached by content hash under `out/mibench/`: a binary by its source, compiler and
flags; a capture by the binary's bytes, its arguments, the reference limit and Valgrind's
version. A clean clone rebuilds both (gcc-multilib and valgrind are in
scripts/debian-packages.txt); nothing large is committed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tlblab.errors import UserError
from tlblab.files import atomic_write, content_digest, tool_version

ROOT = Path(__file__).resolve().parents[4]
SOURCES = ROOT / "runtime" / "bench" / "mibench"
CACHE = ROOT / "out" / "mibench"
# Bump when the capture's meaning changes (what is recorded, how), so old captures are not reused.
CAPTURE_VERSION = "1"
CFLAGS = ["-m32", "-O2", "-std=c11"]


@dataclass(frozen=True)
class Program:
    """One real-time program of seed 004 Table 1: the source in runtime/bench/mibench/, the
    arguments of its run (MiBench's small inputs), and what the seed says it does."""
    name: str
    source: str
    args: tuple[str, ...]
    what: str


PROGRAMS = {
    "basicmath": Program("basicmath", "basicmath_small", ("-q",), "Mathematical calculations"),
    "qsort": Program("qsort", "qsort_small", ("-q",), "Sort array of string (10,000 words)"),
    # MiBench runs susan's smoothing, edges and corners; this one program does all three on the
    # 76 x 95 image of MiBench's input_small.pgm size.
    "susan": Program("susan", "susan", (), "Recognize image corner and edge (smoothing, edges, corners)"),
}


def build(name: str, cc: str = "gcc", cache: Path = CACHE) -> Path:
    """The 32-bit binary of program `name`, compiled once per (source, compiler, flags)."""
    prog = _program(name)
    src = SOURCES / f"{prog.source}.c"
    key = content_digest(src.read_bytes(), tool_version([cc, "--version"], "mibench"), " ".join(CFLAGS))
    out = Path(cache) / "bin" / key / prog.source
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)

    def compile_to(tmp: str) -> None:
        r = subprocess.run([cc, *CFLAGS, "-o", tmp, str(src), "-lm"], capture_output=True, text=True)
        if r.returncode != 0:
            raise UserError(f"mibench: compiling {src} with '{cc} {' '.join(CFLAGS)}' failed "
                            f"(gcc-multilib missing?):\n{r.stderr.strip()}")

    # A temporary name per process (atomic_write's): two runs may build at once.
    atomic_write(out, compile_to)
    return out


def capture(name: str, *, limit: int = 0, args: tuple[str, ...] | None = None,
            valgrind: str = "valgrind", progress: bool = False, cache: Path = CACHE) -> Path:
    """The Lackey capture of program `name` (its whole run, or its first `limit` references),
    cached under out/mibench/ by content hash. `args` replaces the program's default input."""
    from tlblab.trace import record

    prog = _program(name)
    binary = build(name, cache=cache)
    argv = [str(binary), *(prog.args if args is None else args)]
    key = content_digest(binary.read_bytes(), "\0".join(argv[1:]), str(limit),
                  tool_version([valgrind, "--version"], "mibench"), CAPTURE_VERSION)
    out = Path(cache) / f"{prog.source}-{key}.tlbt"
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)

    def capture_to(tmp: str) -> None:
        try:
            record(argv, tmp, limit=limit or None, progress=progress, valgrind=valgrind,
                   stdout=os.devnull, tool="lackey")
        except ValueError as e:
            raise UserError(f"mibench: capturing {' '.join(argv)}: {e}")

    # A temporary name per process (atomic_write's): two runs may capture at once.
    atomic_write(out, capture_to)
    return out


def _program(name: str) -> Program:
    if name not in PROGRAMS:
        raise UserError(f"mibench: unknown program '{name}' (expected one of {', '.join(PROGRAMS)})")
    return PROGRAMS[name]


def clean(cache: Path = CACHE) -> None:
    """Removes every cached binary and capture."""
    shutil.rmtree(cache, ignore_errors=True)
