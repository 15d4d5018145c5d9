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

import contextlib
import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from tlblab import paths
from tlblab.errors import UserError
from tlblab.files import atomic_write, content_digest, one_maker, tool_version
from tlblab.trace import FIXED_ENV, fixed_folder

# The checkout the sources are read from (`paths.repository`; an installed wheel has none, and
# `build` says so in one line).
ROOT = paths.repository() or Path(__file__).resolve().parents[4]
SOURCES = ROOT / "runtime" / "bench" / "mibench"
CACHE = paths.cache("mibench")
# Bump when the capture's meaning changes (what is recorded, how), so old captures are not reused.
# 2: a whole run's capture traces its system calls in the same Lackey run (`_lackey_capture`),
# where a second run, in another environment, gave them before; 3: the capture's process is
# fixed (`_fixed_folder`, `FIXED_ENV`, no ASLR: issue 87), so its bytes are the same on every run;
# 4: the key holds the program's environment, and typeset's fixes troff's clock (`CORUNNER_ENV`).
CAPTURE_VERSION = "4"
CFLAGS = ["-m32", "-O2", "-std=c11"]


# Seed 004's tables ask for the same binaries, captures and scenarios dozens of times a run
# (each of Table 3's scenarios names every background capture four times): their cache keys
# hash binaries and ask tools for their versions (subprocesses), and a scenario's needs its
# captures' relocations, a scan of each whole trace. `_kept` computes a path once per process
# and arguments (again if the file is gone); `trace_info` and `relocations_32` read a trace
# once per process and version of the file.
def _kept(fn: Callable[..., Path]) -> Callable[..., Path]:
    memo: dict[tuple[Any, ...], Path] = {}

    @functools.wraps(fn)
    def kept(*args: Any, **kwargs: Any) -> Path:
        key = (args, tuple(sorted(kwargs.items())))
        path = memo.get(key)
        if path is None or not path.is_file():
            path = memo[key] = fn(*args, **kwargs)
        return path

    return kept


def _file_version(path: str | Path) -> tuple[str, int, int]:
    st = os.stat(path)
    return str(path), st.st_size, st.st_mtime_ns


@functools.lru_cache(maxsize=None)
def _info_of(version: tuple[str, int, int]) -> dict[str, Any]:
    from tlblab.trace import info

    return info(version[0])


def trace_info(path: str | Path) -> dict[str, Any]:
    """`tlblab.trace.info` of a capture, read once per process and version of the file (the
    caller must not change it)."""
    return _info_of(_file_version(path))


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


@_kept
def build(name: str, cc: str = "gcc", cache: Path = CACHE) -> Path:
    """The 32-bit binary of program `name`, compiled once per (source, compiler, flags)."""
    prog = _program(name)
    paths.repository_file("runtime/bench/mibench", "seed 004's MiBench programs")
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

    with one_maker(out) as missing:  # two workers may want it at once: one builds it
        if missing:
            atomic_write(out, compile_to)
    return out


@_kept
def capture(name: str, *, limit: int = 0, args: tuple[str, ...] | None = None,
            valgrind: str = "valgrind", progress: bool = False, cache: Path = CACHE) -> Path:
    """The Lackey capture of program `name` (its whole run, or its first `limit` references),
    cached under out/mibench/ by content hash. `args` replaces the program's default input."""
    prog = _program(name)
    binary = build(name, cache=cache)
    argv = [f"./{binary.name}", *(prog.args if args is None else args)]
    key = content_digest(binary.read_bytes(), "\0".join(argv[1:]), str(limit), _env_key(FIXED_ENV),
                         tool_version([valgrind, "--version"], "mibench"), CAPTURE_VERSION)
    out = Path(cache) / f"{prog.source}-{key}.tlbt"
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    _lackey_capture(argv, (binary,), out, limit, valgrind, progress)
    return out


@contextlib.contextmanager
def _fixed_folder(out: Path, files: tuple[Path, ...]) -> Iterator[Path]:
    """`tlblab.trace.fixed_folder` named by cache entry `out` (`/tmp/tlblab-lackey-<out's name>`)."""
    with fixed_folder(f"tlblab-lackey-{out.stem}", files) as d:
        yield d


def _lackey_capture(argv: list[str], files: tuple[Path, ...], out: Path, limit: int, valgrind: str,
                    progress: bool = False, env: dict[str, str] = FIXED_ENV, own_pid: bool = False) -> None:
    """Captures `argv` under Lackey into `out` (its first `limit` references, or its whole run),
    one process at a time, in `_fixed_folder` with copies of `files` (`argv` names them by file
    name), environment `env` (`FIXED_ENV`; a background program's adds `CORUNNER_ENV`'s) and no
    ASLR (and with `own_pid`, as pid 1 of a PID namespace of its own). A whole run's capture also traces the program's system calls in the
    same run (`tlblab.trace.record(..., trace_syscalls=True)`) and writes them beside it, as
    `syscalls_of` gives them, before the capture itself appears: the calls' places are then
    the captured run's own, and the program runs under Valgrind once, not twice (troff's
    second run under Lackey cost minutes; it also ran without the capture's environment, so its
    calls' places were another run's, scaled). A limited capture's calls still come from
    `syscalls_of`'s second run, which stops at the limit."""
    import json

    from tlblab.trace import record

    calls_path = out.with_suffix(f".syscalls{SYSCALLS_VERSION}.json")

    def capture_to(tmp: str) -> None:
        try:
            with _fixed_folder(out, files) as d:
                report = record(argv, tmp, limit=limit or None, progress=progress, valgrind=valgrind,
                                stdout=os.devnull, tool="lackey", trace_syscalls=not limit,
                                cwd=d, env=env, no_aslr=True, own_pid_namespace=own_pid)
        except ValueError as e:
            raise UserError(f"mibench: capturing {' '.join(argv)}: {e}")
        if not limit:
            logged = [(int(n), str(text)) for n, text in report["syscalls"]]
            calls = calls_from_log(logged, int(report["memory_lines"]), Path(tmp))
            atomic_write(calls_path, json.dumps(calls))

    with one_maker(out) as missing:  # two workers may want it at once: one captures it
        if missing:
            atomic_write(out, capture_to)



# The seed's ISA (issue 87): the same programs cross-compiled for ARMv7 (Debian's armhf port)
# and captured under qemu-arm -cpu cortex-a9 with tlblab's plugin (tlblab.capture_qemu): the
# same bytes on every host and in every folder, the program's system calls in the capture's
# footer (`armv7_syscalls`), where the x86 path traces them in a second run under Lackey.
# Linked statically, as MiBench's own Makefiles build these programs (automotive/qsort:
# `gcc -static qsort_small.c -O3 -o qsort_small -lm`; basicmath `-static -O3`, susan
# `-static -O4`; MiBench 1.0, as the embecosm/mibench copy keeps it): no dynamic
# loader runs before main. -O2 stays the x86 path's level, so that the two ISAs' captures differ
# in the ISA and the linking only.
ARMV7_CFLAGS = ["-O2", "-std=c11", "-static"]
# 2: the system calls recorded (the footer's `syscalls`), clang for Debian's armhf baseline;
# 3: run on Debian's armhf root with its ld.so.cache (armhf_root), inputs beside the program
# (the real-time programs static since).
# 4: the key holds the guest's environment, and typeset's fixes troff's clock (`CORUNNER_ENV`).
ARMV7_CAPTURE_VERSION = "4"


@_kept
def build_armv7(name: str, cache: Path = CACHE) -> Path:
    """The ARMv7 (armhf) binary of program `name`, compiled once per (source, compiler, flags)."""
    from tlblab import capture_qemu

    prog = _program(name)
    src = SOURCES / f"{prog.source}.c"
    key = content_digest(src.read_bytes(), capture_qemu.toolchain_versions(), " ".join(ARMV7_CFLAGS))
    out = Path(cache) / "bin-armv7" / key / prog.source
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with one_maker(out) as missing:  # two workers may want it at once: one builds it
        if missing:
            capture_qemu.cross_compile(src, out, ARMV7_CFLAGS, ["-lm"])
    return out


@_kept
def capture_armv7(name: str, *, limit: int = 0, cache: Path = CACHE) -> Path:
    """The ARMv7 capture of program `name` under QEMU (its whole run, or its first `limit`
    references), cached under out/mibench/ by the binary's bytes, its arguments, the limit, the
    toolchain's and QEMU's versions, the plugin's source and the armhf root's packages."""
    prog = _program(name)
    binary = build_armv7(name, cache=cache)
    return _qemu_capture(f"armv7-{prog.source}", [str(binary), *prog.args], (), limit, cache)


# The armhf root the ARMv7 captures run on (capture_qemu.debian_sysroot, with Debian's libc6 and
# its ldconfig's cache, as on a board running Debian's armhf port): the background programs'
# packages and their libraries (libjpeg-turbo-progs: cjpeg, djpeg; groff-base: troff).
ARMHF_PACKAGES = ("libjpeg-turbo-progs", "libjpeg62-turbo", "groff-base", "libstdc++6", "libgcc-s1",
                  "libuchardet0")


def armhf_root(cache: Path = CACHE) -> Path:
    from tlblab import capture_qemu

    return capture_qemu.debian_sysroot(ARMHF_PACKAGES, Path(cache))


def _qemu_capture(stem: str, argv: list[str], files: tuple[Path, ...], limit: int, cache: Path,
                  env: dict[str, str] | None = None, own_pid: bool = False) -> Path:
    """A capture under QEMU on the armhf root, cached as `<stem>-<key>.tlbt` by the binary's and
    the input files' bytes, the arguments and limit, the guest's environment `env` (none by
    default), whether it runs as pid 1 of a PID namespace of its own (`own_pid`), the tools',
    plugin's and root's versions."""
    from tlblab import capture_qemu

    root = armhf_root(cache)
    plugin_src = ROOT / "runtime" / "qemu-plugin" / "tlblab_qemu.c"
    key = content_digest(Path(argv[0]).read_bytes(), *(f.read_bytes() for f in files), "\0".join(argv[1:]),
                         str(limit), _env_key(env or {}), capture_qemu.toolchain_versions(), plugin_src.read_bytes(),
                         capture_qemu.sysroot_id(root), ARMV7_CAPTURE_VERSION, *(["own-pid"] if own_pid else []))
    out = Path(cache) / f"{stem}-{key}.tlbt"
    if out.is_file():
        return out
    with one_maker(out) as missing:  # two workers may want it at once: one captures it
        if missing:
            atomic_write(out, lambda tmp: capture_qemu.record(argv, tmp, limit=limit or None, sysroot=root,
                                                              files=files, env=env, own_pid_namespace=own_pid))
    return out


def capture_corunner_armv7(name: str, *, limit: int = 0, cache: Path = CACHE) -> Path:
    """The ARMv7 capture of background program `name`: Debian's armhf build of it (the root's
    /usr/bin) under QEMU on its generated input, the input copied beside the guest program and
    named by file name alone, its environment `CORUNNER_ENV`'s (else none)."""
    import tempfile

    root = armhf_root(cache)
    with tempfile.TemporaryDirectory(prefix="tlblab-mibench-") as tmp:
        d = Path(tmp)
        _corunner_inputs(d)
        tool, *args = _corunner_argv(name, Path("."))  # the inputs by file name alone
        argv = [str(root / "usr" / "bin" / tool), *args]
        files = tuple(d / f for f in ("input_small.ppm", "input_small.jpg", "small.man") if f in argv)
        return _qemu_capture(f"armv7-bg-{name}", argv, files, limit, cache, CORUNNER_ENV.get(name, {}),
                             own_pid=name in CORUNNER_OWN_PID)


# ARM EABI system call numbers (Linux arch/arm/tools/syscall.tbl): the calls that change a
# mapping, as `syscalls_of` reads them by name on the x86 path.
ARM_BRK, ARM_MUNMAP, ARM_MPROTECT = 45, 91, 125


def armv7_syscalls(trace: Path) -> list[tuple[int, str, int, int, int]]:
    """The system calls of an ARMv7 capture (tlblab.capture_qemu.syscalls_of) as `syscalls_of`
    gives the x86 path's: (position, "munmap" | "mprotect" | "syscall", start, length, prot),
    every call a kernel entry, a successful munmap, mprotect or heap-shrinking brk also its
    mapping change. The guest's registers are 32 bits: QEMU's widened values are cut to them.
    Read once per process and version of the file (`_kept`'s comment): `syscalls_of` reads the
    footer through `tlblab.trace.info`, a scan of the whole trace (here `trace_info`'s, which
    the scenarios read anyway), and every scenario of an ARMv7 table asked for its four
    captures' calls again (20 scans, 36 of the 44 CPU-s outside any phase of a fresh
    `basicmath (armv7)` unit, issue 89)."""
    return list(_armv7_syscalls(_file_version(trace)))


@functools.lru_cache(maxsize=None)
def _armv7_syscalls(version: tuple[str, int, int]) -> tuple[tuple[int, str, int, int, int], ...]:
    """`armv7_syscalls` of one version of a capture."""
    from tlblab import capture_qemu

    calls: list[tuple[int, str, int, int, int]] = []
    brk = 0
    for at, num, a1, a2, a3, ret in capture_qemu.syscalls_of(version[0], _info_of(version)):
        a1, a2, a3 = a1 & 0xFFFF_FFFF, a2 & 0xFFFF_FFFF, a3 & 0xFFFF_FFFF
        # Linux returns -errno (-4095..-1) on failure; a brk's result is the break, an address.
        ok = ret is not None and not -4096 < ret < 0
        if num == ARM_BRK and ret is not None:
            new = ret & 0xFFFF_FFFF
            if brk and new < brk:
                calls.append((at, "munmap", new, brk - new, 0))
                brk = new
                continue
            brk = new
        elif num == ARM_MUNMAP and ok:
            calls.append((at, "munmap", a1, a2, 0))
            continue
        elif num == ARM_MPROTECT and ok:
            calls.append((at, "mprotect", a1, a2, a3))
            continue
        calls.append((at, "syscall", 0, 0, 0))
    return tuple(calls)

# Seed 004 §V.1's background programs (SCHED_OTHER, Table 1's Consumer category): the Debian
# programs docs/traces.md stands in for MiBench's (cjpeg and djpeg from libjpeg-turbo-progs, the
# IJG code MiBench's consumer/jpeg is built from; troff from groff-base for typeset, as Lout is
# not packaged). They are Debian's 64-bit binaries: their captures' stacks lie above 4 GiB and
# are moved into the 32-bit layout when composed (`scenario`).
CORUNNER_INPUT_W, CORUNNER_INPUT_H = 256, 192   # MiBench consumer/jpeg's small input size
CORUNNERS = ("cjpeg", "djpeg", "typeset")
# ARM Linux's user stack lies just below the 3 GiB split (PAGE_OFFSET 0xc0000000; seed 004
# Fig. 3's stack mapping ends at 0xbe000000): a 64-bit capture's high mappings end here.
STACK_TOP_32 = 0xbf00_0000
# What a background program's environment adds to its capture's (FIXED_ENV on x86, none under
# QEMU). troff sets its date registers (dy, mo, yr, dw) from the clock at start-up, and glibc's
# localtime then takes a number of steps that depends on the time and on the time zone's file
# (/etc/localtime; under QEMU the host's, as the armhf root has none and -L falls back to host
# paths): the ARMv7 typeset capture had 185,032,248 references in one run and 185,032,273 in
# another (docs/lab/2026-11-30-issue89-fresh-captures.md). groff 1.22.4 (Debian's groff-base,
# amd64 and armhf) takes the time from SOURCE_DATE_EPOCH when it is set (libgroff's
# current_time) but still converts it with localtime; TZ=":" makes glibc's tzset use UTC and
# read no file (the name after the colon is empty). The time is 2022-01-01 00:00 UTC, the year of
# seed 004 (Song, Park, Kim 2022); any fixed value would do. Its two leading zeros (strtol reads
# them) make the strings added to the stack 36 bytes, a multiple of 4: under Valgrind the
# client's strings lie just below the 16 random bytes of AT_RANDOM, and x86-64 ld.so's strcspn
# reads a word at a time and looks each byte up, past a string's end, so with 1-3 bytes more or
# fewer the capture's addresses changed from run to run (troff's first 30,000 Lackey lines
# differed in 3 runs of 3 for every added length not a multiple of 4, and agreed for 0, 4, 8, 12
# and 16; docs/lab/2026-11-30-issue89-fresh-captures.md). cjpeg and djpeg, whose captures make no
# clock or time-zone call, run without: their captures keep their bytes.
CORUNNER_ENV = {"typeset": {"SOURCE_DATE_EPOCH": "001640995200", "TZ": ":"}}
# The background programs whose pid reaches their capture, captured as pid 1 of a PID namespace
# of their own (`tlblab_trace::pidns`): troff's troffrc loads pdfpic.tmac, whose macro
# interpolates \n[$$] (the pid) when it is defined, so troff's capture had other lengths with a
# 4-digit pid than with a 5-digit one, and two fresh machines' seed 004 tables differed
# (docs/lab/2026-12-01-issue89-troff-pid.md).
CORUNNER_OWN_PID = frozenset({"typeset"})


def _corunner_env(name: str) -> dict[str, str]:
    """Background program `name`'s environment on the x86 path: FIXED_ENV and `CORUNNER_ENV`'s."""
    return {**FIXED_ENV, **CORUNNER_ENV.get(name, {})}


def _env_key(env: dict[str, str]) -> str:
    """An environment in a cache key: the capture's bytes depend on it (it lies on the stack)."""
    return "\0".join(f"{k}={v}" for k, v in env.items())


def _corunner_inputs(d: Path) -> None:
    """The background programs' inputs, generated deterministically into `d`."""
    for name, data in _corunner_input_bytes():
        (d / name).write_bytes(data)


@functools.cache
def _corunner_input_bytes() -> tuple[tuple[str, bytes], ...]:
    """The background programs' inputs as (file name, bytes), made once a process: every
    capture's cache key reads them, and seed 004's runs asked for them six times a run, each
    time the image drawn pixel by pixel and cjpeg run on it (5 of seed 004's 37 quick CPU
    seconds, issue 89)."""
    import tempfile

    w, h = CORUNNER_INPUT_W, CORUNNER_INPUT_H
    pixels = bytes(((x * 7 + y * 3 + (x * y) % 17) & 255) for y in range(h) for x in range(w) for _ in range(3))
    ppm = f"P6 {w} {h} 255\n".encode() + pixels
    with tempfile.TemporaryDirectory(prefix="tlblab-mibench-") as tmp:
        d = Path(tmp)
        (d / "input_small.ppm").write_bytes(ppm)
        r = subprocess.run(["cjpeg", "-outfile", str(d / "input_small.jpg"), str(d / "input_small.ppm")],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise UserError("mibench: cjpeg failed on the generated image (libjpeg-turbo-progs missing?): "
                            f"{r.stderr.strip()}")
        jpg = (d / "input_small.jpg").read_bytes()
    words = ("translation", "lookaside", "buffer", "page", "walk", "entry", "lockdown", "core")
    lines = [".TH DOC 1", ".SH NAME", "doc \\- a generated manual page", ".SH DESCRIPTION"]
    for i in range(60):
        lines += [".PP", f"Paragraph {i}. " + " ".join(words[(i * 7 + j * 3) % len(words)] for j in range(60))]
    man = ("\n".join(lines) + "\n").encode()
    return (("input_small.ppm", ppm), ("input_small.jpg", jpg), ("small.man", man))


def _corunner_files(d: Path) -> tuple[Path, ...]:
    return tuple(d / f for f in ("input_small.ppm", "input_small.jpg", "small.man"))


def _corunner_argv(name: str, d: Path) -> list[str]:
    if name == "cjpeg":
        return ["cjpeg", "-outfile", str(d / "out.jpg"), str(d / "input_small.ppm")]
    if name == "djpeg":
        return ["djpeg", "-outfile", str(d / "out.ppm"), str(d / "input_small.jpg")]
    if name == "typeset":
        # troff itself (the groff driver only forks troff and grotty, which Valgrind would not follow).
        return ["troff", "-man", "-Tutf8", str(d / "small.man")]
    raise UserError(f"mibench: unknown background program '{name}' (expected one of {', '.join(CORUNNERS)})")


@_kept
def capture_corunner(name: str, *, limit: int = 0, valgrind: str = "valgrind", cache: Path = CACHE) -> Path:
    """The Lackey capture of background program `name` (its whole run on its generated input, or
    its first `limit` references), cached by the program's bytes, its input, the limit, its
    environment (`_corunner_env`) and Valgrind's version."""
    import tempfile

    tool = shutil.which(_corunner_argv(name, Path("."))[0])
    if tool is None:
        raise UserError(f"mibench: background program '{name}' is not installed "
                        "(scripts/debian-packages.txt: libjpeg-turbo-progs, groff-base)")
    with tempfile.TemporaryDirectory(prefix="tlblab-mibench-") as tmp:
        d = Path(tmp)
        _corunner_inputs(d)
        inputs = b"".join((d / f).read_bytes() for f in ("input_small.ppm", "input_small.jpg", "small.man"))
        own_pid = name in CORUNNER_OWN_PID
        key = content_digest(Path(tool).read_bytes(), inputs, name, str(limit), _env_key(_corunner_env(name)),
                             tool_version([valgrind, "--version"], "mibench"), CAPTURE_VERSION,
                             *(["own-pid"] if own_pid else []))
        out = Path(cache) / f"bg-{name}-{key}.tlbt"
        if out.is_file():
            return out
        out.parent.mkdir(parents=True, exist_ok=True)
        _lackey_capture(_corunner_argv(name, Path(".")), _corunner_files(d), out, limit, valgrind,
                        env=_corunner_env(name), own_pid=own_pid)
        return out


# Bump when what `syscalls_of` records changes: 3, every system call (a kernel entry), not
# only the munmap/mprotect/brk-trim calls; 4, the calls on the file Valgrind's preload library
# was opened as (an asynchronous open's result is on its completion line) left out too.
SYSCALLS_VERSION = "4"


def corunner_syscalls(name: str, *, limit: int = 0, valgrind: str = "valgrind",
                      cache: Path = CACHE) -> list[tuple[int, str, int, int, int]]:
    """The system calls of background program `name`'s run (`syscalls_of`) on its generated
    input, within its first `limit` references with a `limit` (those of `capture_corunner`'s
    capture with that limit)."""
    import tempfile

    capture_path = capture_corunner(name, limit=limit, valgrind=valgrind, cache=cache)
    out = capture_path.with_suffix(f".syscalls{SYSCALLS_VERSION}.json")
    with one_maker(out) as missing:  # two workers may want them at once: one traces them
        if not missing:
            return _read_calls(out)
        with tempfile.TemporaryDirectory(prefix="tlblab-mibench-") as tmp:
            d = Path(tmp)
            _corunner_inputs(d)
            return syscalls_of(_corunner_argv(name, Path(".")), _corunner_files(d), capture_path, out,
                               limit=limit, valgrind=valgrind, env=_corunner_env(name),
                               own_pid=name in CORUNNER_OWN_PID)


def program_syscalls(name: str, *, limit: int = 0, valgrind: str = "valgrind",
                     cache: Path = CACHE) -> list[tuple[int, str, int, int, int]]:
    """The system calls of real-time program `name`'s run (`syscalls_of`), within its first
    `limit` references with a `limit` (those of `capture`'s capture with that limit)."""
    prog = _program(name)
    capture_path = capture(name, limit=limit, valgrind=valgrind, cache=cache)
    out = capture_path.with_suffix(f".syscalls{SYSCALLS_VERSION}.json")
    with one_maker(out) as missing:  # two workers may want them at once: one traces them
        if not missing:
            return _read_calls(out)
        binary = build(name, cache=cache)
        return syscalls_of([f"./{binary.name}", *prog.args], (binary,), capture_path, out, limit=limit,
                           valgrind=valgrind)


def _read_calls(path: Path) -> list[tuple[int, str, int, int, int]]:
    import json

    return [tuple(x) for x in json.loads(path.read_text())]


# Valgrind's own start-up in the client (its preloaded libraries, and ld.so's search of
# /usr/lib/debug that only happens under it: a native run, strace'd, makes no such calls).
_VALGRIND_PATHS = ("valgrind", "/usr/lib/debug")


def syscalls_of(argv: list[str], files: tuple[Path, ...], capture_path: Path, out: Path, *, limit: int = 0,
                valgrind: str = "valgrind", env: dict[str, str] = FIXED_ENV,
                own_pid: bool = False) -> list[tuple[int, str, int, int, int]]:
    """The system calls of the run of `argv` that `capture_path` captured, which a Lackey
    capture does not record: every call is a kernel entry ("syscall"), and each `munmap`,
    `mprotect` and `brk` that shrinks the heap (Linux's do_munmap) changes mappings, as
    (position, "munmap" | "mprotect" | "syscall", start, length, prot), the position the number
    of the capture's references before the call. Taken from a second run of the same binary on
    the same input under the same tool (Lackey, `--trace-mem=yes --trace-syscalls=yes`, in the
    capture's `_fixed_folder` with copies of `files`, its environment `env`, no ASLR and, with
    `own_pid`, the capture's PID namespace of its own: the same client
    layout as the capture's, and its memory lines give the call's place in the run),
    counted as it streams (troff's log is 146 M lines) and cached as JSON at `out`. Valgrind's
    own calls in the client (its preloaded library's open, reads, maps, close and RELRO
    mprotect; ld.so's probing of /usr/lib/debug under it) are left out. The `mmap`s with
    MAP_FIXED over the loader's reservations change no present entry (Linux flushes only a
    range with present entries, ARM's tlb_flush), so they are kernel entries only. With
    `limit`, the calls within the first `limit` references (the traced run is stopped there)."""
    import json

    # The log (fd 3) through awk: the memory lines counted, the system calls kept with the
    # count before them; the program's own output discarded.
    script = ('{ if ($0 ~ /^(I | L | S | M )/) { n++; if (LIMIT && n >= LIMIT) exit } '
              'else if ($0 ~ /^SYSCALL/) print n "\t" $0 } '
              'END { print n "\tEND" }').replace("LIMIT", str(int(limit)))
    # `env -i` and `setarch -R`: the capture's environment and personality (`_lackey_capture`); the
    # script is a shell variable, not exported, so the program's environment is `env` alone.
    cmd = (["env", "-i", *(f"{k}={v}" for k, v in env.items()), "setarch", "-R",
            valgrind, "--tool=lackey", "--trace-mem=yes", "--trace-syscalls=yes", "--log-fd=3", *argv])
    if own_pid:
        from tlblab import _native

        words, why = _native.pid_namespace_wrapper()
        if why:
            print(f"tlblab: no PID namespace of its own for {argv[0]}: {why}", file=sys.stderr)
        cmd = [*words, *cmd]
    from tlblab import phases

    with phases.phase(phases.CAPTURE), _fixed_folder(capture_path, files) as d:
        # tlblab reproduce's timings: the program's second run under Lackey
        r = subprocess.run(["bash", "-c", 'awk_script=$1; shift; "$@" 3>&1 1>/dev/null 2>/dev/null | awk "$awk_script"',
                            "bash", script, *cmd], capture_output=True, text=True, cwd=d)
    lines = r.stdout.splitlines()
    if r.returncode != 0 or not lines or not lines[-1].endswith("\tEND"):
        raise UserError(f"mibench: tracing the system calls of {' '.join(argv)} failed: {r.stderr.strip()[-400:]}")
    total = int(lines[-1].split("\t")[0])
    logged = [(int(n), text) for n, text in (line.split("\t", 1) for line in lines[:-1])]
    calls = calls_from_log(logged, total, capture_path)
    atomic_write(out, lambda t: Path(t).write_text(json.dumps(calls)))
    return calls


def calls_from_log(logged: list[tuple[int, str]], total: int, capture_path: Path) -> list[tuple[int, str, int, int, int]]:
    """`syscalls_of`'s calls from a Lackey run's `SYSCALL` lines, each with the memory lines
    before it (`logged`), `total` memory lines in all, for the capture at `capture_path` (its
    references and Valgrind's mappings): a second run's, or the capture's own run's
    (`tlblab.trace.record(..., trace_syscalls=True)`, `capture`)."""
    from tlblab.trace import info

    whole = info(str(capture_path))  # one scan of the capture for both
    records = int(whole["accesses"]["total"])
    valgrinds = [(int(m["start"], 16), int(m["end"], 16)) for m in whole["mappings"] if "valgrind" in m["name"]]
    calls: list[tuple[int, str, int, int, int]] = []
    brk = 0
    hidden_fds: set[int] = set()
    hidden_open = False  # an open of Valgrind's whose result is on its completion line
    for n, text in logged:
        if "... [async] -->" in text:
            # An asynchronous call's completion: no second call.
            if hidden_open and "Success(" in text:
                hidden_fds.add(int(text.rsplit("Success(", 1)[1].split(")")[0], 0))
            hidden_open = False
            continue
        hidden_open = False
        at = round(int(n) * records / total) if total else 0
        name = text.split(")", 1)[1].split("(", 1)[0].strip() if ")" in text else ""
        try:
            args = [int(a.split("(")[0].strip(), 0) for a in text.split("(", 2)[2].split(")")[0].split(",")
                    if a.strip()]
        except (IndexError, ValueError):
            args = []
        if any(v in text for v in _VALGRIND_PATHS):
            if name == "sys_openat" and "Success(" in text:
                hidden_fds.add(int(text.rsplit("Success(", 1)[1].split(")")[0], 0))
            elif name == "sys_openat":
                hidden_open = True
            continue
        if hidden_fds and args:
            fd = args[4] if name == "sys_mmap2" and len(args) > 4 else args[0]
            if fd in hidden_fds:
                if name == "sys_close":
                    hidden_fds.discard(fd)
                continue
        failed = "Failure" in text
        if name == "sys_brk" and not failed:
            new = int(text.rsplit("Success(", 1)[1].split(")")[0], 0)
            if brk and new < brk:
                calls.append((at, "munmap", new, brk - new, 0))
                brk = new
                continue
            brk = new
        elif name == "sys_munmap" and not failed:
            calls.append((at, "munmap", args[0], args[1], 0))
            continue
        elif name == "sys_mprotect" and not failed:
            if any(lo <= args[0] < hi for lo, hi in valgrinds):
                continue
            calls.append((at, "mprotect", args[0], args[1], args[2]))
            continue
        calls.append((at, "syscall", 0, 0, 0))
    return calls


def relocations_32(capture_path: Path) -> list[tuple[int, int, int]]:
    """Where a 64-bit capture's addresses above 4 GiB (Valgrind's amd64 client stack, about
    0x1fff000000) move in a 32-bit layout: all of them by one distance, so that the highest page
    the capture touches there ends at STACK_TOP_32; an error if they would then overlap the
    capture's low addresses. The pages the trace touches decide, not the mappings in its footer:
    those are a snapshot of /proc/PID/maps polled during the capture, which a short capture (a
    `limit`) can end before the stack is mapped or before the first poll, and a relocation must
    not depend on that race."""
    return _relocations_32(_file_version(capture_path))


@functools.lru_cache(maxsize=None)
def _relocations_32(version: tuple[str, int, int]) -> list[tuple[int, int, int]]:
    """`relocations_32` of one version of a capture (`_kept`'s comment)."""
    from tlblab import _native

    capture_path = version[0]
    # A capture whose accesses all start a page or more below 4 GiB (a 32-bit program's: every
    # ARMv7 and x86 real-time capture) touches no page above it: nothing moves, and its pages
    # need not be counted (a scan of the whole trace, ~1 s per ARMv7 capture and process).
    highest = trace_info(capture_path).get("address_range", ["0x0", "0x0"])[1]
    if int(highest, 16) < (1 << 32) - 4096:
        return []
    pages = [(vpn << 12, (vpn + 1) << 12) for _, vpn, *_ in _native.page_counts(str(capture_path))]
    maps = [(int(m["start"], 16), int(m["end"], 16)) for m in trace_info(capture_path)["mappings"]]
    high = [m for m in pages if m[1] > 1 << 32]
    if not high:
        return []
    lo_high = min(a for a, _ in high)
    hi_high = max(b for _, b in high)
    delta = STACK_TOP_32 - hi_high
    top_low = max((b for _, b in pages + maps if b <= 1 << 32), default=0)
    if lo_high + delta < top_low:
        raise UserError(f"mibench: {capture_path}: its mappings above 4 GiB span {hi_high - lo_high:#x} bytes "
                        f"and do not fit between {top_low:#x} and {STACK_TOP_32:#x}")
    return [(lo_high, (1 << 64) - 1, delta)]


# Bump when what `scenario` composes changes (not the captures): 2, every run's end carries its
# process's exit (`ProcessExit`, the kernel's exit_mmap); 3, the background programs' munmap,
# mprotect and brk-trim calls (`corunner_syscalls`) at their places in their runs; 4, every
# system call of every program, the real-time program's too, as a kernel entry
# (`KernelEntry`), and the timer's ticks (`tick`).
SCENARIO_VERSION = "4"

# Turns of the composed scenario: each core runs this many references before the next core's
# turn (all cores at one reference rate; the shared L2 sees their references interleaved).
SCENARIO_TURN = 256


@_kept
def scenario(name: str, cores: int, *, limit: int = 0, corunner_limit: int = 0, tick: int = 0,
             phase: int = 0, isa: str = "x86", cache: Path = CACHE) -> Path:
    """Seed 004 §V.1's scenario around real-time program `name` as one trace: on core 0 cjpeg,
    djpeg, then the program (process 0); with `cores` = 4, cores 1-3 loop cjpeg, djpeg and
    typeset (core c starts at program c - 1 of the three), each run a new process, with its
    system calls (`program_syscalls`, `corunner_syscalls`: each a kernel entry, munmap and
    mprotect with their TLB maintenance) and, with `tick`, a timer tick on every core every
    `tick` of its references. `limit` and `corunner_limit` bound the captures (0: whole runs).
    `phase` picks where the background cores are in their loops when core 0 starts cjpeg
    (`phase_offsets`; 0: every core at the start of a program). `isa` is the real-time
    program's: "x86" (`capture`, its calls traced under Lackey) or "armv7" (`capture_armv7`,
    its calls from the capture, `armv7_syscalls`), the background programs likewise (Debian's
    x86-64 binaries under Lackey, or its armhf builds under QEMU, `capture_corunner_armv7`).
    Cached by the captures' names (content hashes) and the composition's parameters."""
    from tlblab import _native

    if cores not in (1, 4):
        raise UserError(f"mibench: the seed's scenarios have 1 or 4 cores, not {cores}")
    if isa not in ("x86", "armv7"):
        raise UserError(f"mibench: the real-time program's ISA is x86 or armv7, not '{isa}'")
    if isa == "x86":
        rt = capture(name, limit=limit, cache=cache)
        bg = {b: capture_corunner(b, limit=corunner_limit, cache=cache) for b in CORUNNERS}
        # The background programs' mapping changes, which Lackey does not record (within the
        # first `corunner_limit` references when their captures are cut there).
        calls = {b: corunner_syscalls(b, limit=corunner_limit, cache=cache) for b in CORUNNERS}
    else:
        rt = capture_armv7(name, limit=limit, cache=cache)
        bg = {b: capture_corunner_armv7(b, limit=corunner_limit, cache=cache) for b in CORUNNERS}
        calls = {b: armv7_syscalls(p) for b, p in bg.items()}

    def prog(p: Path, c: list | None = None) -> tuple[str, list[tuple[int, int, int]], list[tuple]]:
        return (str(p), relocations_32(p), [tuple(x) for x in c or []])

    own = program_syscalls(name, limit=limit, cache=cache) if isa == "x86" else armv7_syscalls(rt)
    plans = [([prog(bg["cjpeg"], calls["cjpeg"]), prog(bg["djpeg"], calls["djpeg"]), prog(rt, own)], False)]
    order = list(CORUNNERS)
    offsets = [0]
    for c, (k, offset) in enumerate(phase_offsets(phase, cores, bg), start=1):
        plans.append(([prog(bg[b], calls[b]) for b in order[k:] + order[:k]], True))
        offsets.append(offset)
    key = content_digest(repr(plans), str(SCENARIO_TURN), str(int(tick)), repr(offsets), CAPTURE_VERSION,
                         SCENARIO_VERSION)
    out = Path(cache) / f"scenario-{PROGRAMS[name].source}-{cores}core-{key}.tlbt"
    if out.is_file():
        return out
    from tlblab import phases

    with phases.phase(phases.GENERATION), one_maker(out) as missing:  # tlblab reproduce's timings
        if missing:  # two workers may want it at once: one writes it
            atomic_write(out, lambda tmp: _native.corun_write(plans, SCENARIO_TURN, 32, tmp, int(tick), offsets))
    return out


def phase_offsets(phase: int, cores: int, bg: dict[str, Path]) -> list[tuple[int, int]]:
    """Where background cores 1..`cores` - 1 stand in their cjpeg-djpeg-typeset loops when core 0
    starts: (the index in CORUNNERS of the program each starts with, the references of it
    already run). Phase 0 is every core at a program's start, core c at program c - 1; phase
    k > 0 draws each core's program and its place in it uniformly, from a generator seeded by
    k alone (seed 004 §V.1 measures the real-time program 100 times while cores 1-3 loop: each
    measurement meets the loops wherever they are)."""
    import random

    if phase == 0:
        return [((c - 1) % 3, 0) for c in range(1, cores)]
    rng = random.Random(f"seed004-phase-{phase}")
    out = []
    for _ in range(1, cores):
        k = rng.randrange(len(CORUNNERS))
        length = int(trace_info(bg[CORUNNERS[k]])["accesses"]["total"])
        out.append((k, rng.randrange(length)))
    return out


def _program(name: str) -> Program:
    if name not in PROGRAMS:
        raise UserError(f"mibench: unknown program '{name}' (expected one of {', '.join(PROGRAMS)})")
    return PROGRAMS[name]


def clean(cache: Path = CACHE) -> None:
    """Removes every cached binary and capture."""
    shutil.rmtree(cache, ignore_errors=True)
