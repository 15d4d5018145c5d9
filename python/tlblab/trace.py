"""Memory traces from Python: inspect, convert, capture and generate them.

The work happens in Rust (`tlblab-trace`, through `tlblab._native`); this module gives it
typed signatures and Python return values. Formats: the native `.tlbt` (docs/formats/trace.md),
Valgrind Lackey text, ChampSim binary (optionally .xz/.gz).

    >>> from tlblab import trace
    >>> trace.generate("strided", "s.tlbt", pages=64, rounds=2)      # doctest: +SKIP
    >>> trace.info("s.tlbt")["accesses"]["total"]                   # doctest: +SKIP
    128
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from tlblab import _native, phases
from tlblab.errors import UserError
from tlblab.files import one_maker


def _path(p: str | os.PathLike[str]) -> str:
    return os.fspath(p)


def info(path: str | os.PathLike[str], fmt: str | None = None) -> dict[str, Any]:
    """Counts, events, threads and the 4 KiB-page footprint (per region and mapping) of a trace."""
    return json.loads(_native.trace_info(_path(path), fmt))


def convert(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    *,
    from_fmt: str | None = None,
    to_fmt: str | None = None,
    skip: int = 0,
    limit: int | None = None,
) -> dict[str, Any]:
    """Converts between tlbt, lackey and champsim; formats are detected when not given.

    `skip`/`limit` keep a window of records. The output appears only if the whole conversion
    succeeded.
    """
    with phases.phase(phases.GENERATION):
        return json.loads(_native.trace_convert(_path(src), _path(dst), from_fmt, to_fmt, skip, limit))


def head(path: str | os.PathLike[str], n: int = 20, skip: int = 0, fmt: str | None = None) -> list[str]:
    """The first `n` records after `skip`, one text line each."""
    return list(_native.trace_head(_path(path), n, skip, fmt))


def records(path: str | os.PathLike[str], n: int, skip: int = 0) -> list[dict[str, Any]]:
    """Up to `n` records as dicts (accesses: thread/kind/vaddr/size; events: `event` plus fields)."""
    return json.loads(_native.trace_records(_path(path), n, skip))


def tool_dir() -> str:
    """The directory of tlblab's Valgrind tool (`tlblab-amd64-linux`, beside links to Valgrind's
    core files and to Lackey), built with the C runtime; built now if it is missing."""
    from tlblab.host import _runtime

    return str(_runtime.executable("valgrind/tlblab-amd64-linux").parent)


def record(
    argv: Sequence[str],
    output: str | os.PathLike[str],
    *,
    skip: int = 0,
    limit: int | None = None,
    progress: bool = False,
    valgrind: str = "valgrind",
    stdin: str | os.PathLike[str] | None = None,
    stdout: str | os.PathLike[str] | None = None,
    tool: str = "tlblab",
    roi_only: bool = False,
    skip_instructions: int = 0,
    max_instructions: int | None = None,
    trace_syscalls: bool = False,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    no_aslr: bool = False,
    own_pid_namespace: bool = False,
    dependence: bool = False,
) -> dict[str, Any]:
    """Runs `argv` under Valgrind and writes its references to `output` as they stream.

    `tool` is "tlblab" (tlblab's own Valgrind tool, built with the C runtime: thread ids,
    region-of-interest marks, instruction windows) or "lackey" (Valgrind's Lackey: the same
    references, as text, 10-30 times slower). `skip`/`limit` capture a window of references: the
    first `skip` references are dropped and the program is stopped after `limit` more. With the
    tlblab tool, `roi_only` traces only between the program's TLBLAB_ROI_BEGIN()/END()
    (tlblab/roi.h), `skip_instructions` runs that many instructions untraced first, and
    `max_instructions` stops the program after that many traced instructions; the code outside
    is not instrumented. `stdin`/`stdout` redirect the program's input and output to files (no
    shell: the tool would trace the shell, not the program). With Lackey, `trace_syscalls` also
    traces the program's system calls: the report's `syscalls` are Valgrind's SYSCALL lines, each
    as [memory lines before it, line], and `memory_lines` the run's memory lines in all.
    `cwd` is the program's working folder; `env`, when given, its whole environment (Lackey then
    runs from the installed Valgrind: `VALGRIND_LIB` would put the checkout's path in the
    program's LD_PRELOAD; tlblab's tool, which needs it, is reached through a link in `cwd`,
    `TOOL_LINK`, so that the preload's path is the folder's, not the checkout's); `no_aslr`
    turns address-space randomization off (as `setarch -R`). Together they make a capture the
    same bytes on every run (docs/traces.md; `fixed_folder`, `FIXED_ENV`). `own_pid_namespace`
    runs Valgrind as pid 1 of a PID namespace of its own, for a program whose memory holds its
    pid (troff); where none can be made here it runs as without and says why on stderr.
    `dependence` (tlblab's tool, not with `skip_instructions`) puts a `depends` event before
    each load whose address came from an earlier load within 4096 references (the tool's
    `--dependence=yes`: register dataflow from the load's value to the address), which a
    machine with `timing.mlp` follows (docs/traces.md, "Dependences").
    """
    if tool not in ("tlblab", "lackey"):
        raise ValueError(f"unknown capture tool '{tool}': expected tlblab or lackey")
    directory: str | None
    try:
        directory = tool_dir()
    except (UserError, OSError, subprocess.CalledProcessError) as e:
        if tool == "tlblab":
            if isinstance(e, UserError):  # it names the remedy: build it, or where it was looked for
                raise UserError(f"tlblab's Valgrind tool is not available: {e}; or use --tool lackey "
                                f"(Valgrind's own tool: the same references, slower)") from None
            raise UserError(f"tlblab's Valgrind tool is not available ({e}); it is built with the C runtime "
                            "(`make setup`, which needs the Debian package valgrind), or use --tool lackey") from None
        directory = None  # Lackey runs without the runtime's build
    if directory is not None and tool == "tlblab" and env is not None and cwd is not None:
        # Valgrind names its preload libraries by VALGRIND_LIB in the client's LD_PRELOAD, an
        # environment string on the client's stack: the checkout's path would move the stack.
        link = Path(cwd) / TOOL_LINK
        link.unlink(missing_ok=True)
        link.symlink_to(directory, target_is_directory=True)
        directory = str(link.absolute())
    with phases.phase(phases.CAPTURE):
        return json.loads(
            _native.trace_record(
                list(argv), _path(output), skip, limit, progress, valgrind,
                None if stdin is None else _path(stdin), None if stdout is None else _path(stdout),
                tool, directory, roi_only, skip_instructions, max_instructions, trace_syscalls,
                None if cwd is None else _path(cwd), None if env is None else sorted(env.items()), no_aslr,
                own_pid_namespace, dependence,
            )
        )


# What a capture's bytes depend on besides the program, its input and Valgrind (issue 87;
# docs/lab/2026-11-29-issue87-x86-deterministic-captures.md has the experiments): the client's
# stack is laid out from Valgrind's own initial stack pointer (ASLR: off, as `setarch -R`), the
# program's full path (Valgrind puts the path it resolves on the client's stack; the folder's
# length moved the stack by 16 bytes) and every environment string (one more variable moved it
# too). So a capture runs in a fixed environment, as `./name` in a folder named by its cache entry
# under /tmp (not the temporary folder the caller's TMPDIR names: that would be in the path).
FIXED_ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}
FIXED_ROOT = Path("/tmp")
# The link in a fixed capture's folder to tlblab's Valgrind tool (`record`).
TOOL_LINK = "valgrind-lib"


@contextlib.contextmanager
def fixed_folder(name: str, files: Sequence[Path]) -> Iterator[Path]:
    """The folder `FIXED_ROOT/name` holding copies of `files`, made afresh for one capture (or
    one run of the same set-up) and removed after it: a caller names it by its cache entry, so
    that the path depends on the entry alone. One process at a time holds it (the lock of
    `files.one_maker` on the folder's name): two caches (two checkouts, a test's two folders)
    making the same entry at once share the name, and each would remove the other's folder."""
    d = FIXED_ROOT / name
    with one_maker(d):
        shutil.rmtree(d, ignore_errors=True)
        try:
            d.mkdir(parents=True)
            for f in files:
                shutil.copy2(f, d / f.name)
        except OSError as e:
            raise UserError(f"cannot prepare the capture's folder {d}: {e}") from None
        try:
            yield d
        finally:
            shutil.rmtree(d, ignore_errors=True)


def catalog() -> list[dict[str, Any]]:
    """The built-in workloads: name, summary, seed section, parameters with defaults."""
    return json.loads(_native.trace_workload_catalog())


def generate(name: str, output: str | os.PathLike[str], seed: int = 1, **params: int) -> dict[str, Any]:
    """Writes built-in workload `name` (with integer `params`) as a native trace."""
    return json.loads(_native.workload_generate(name, {k: int(v) for k, v in params.items()}, seed, _path(output)))


def decode_bench(path: str | os.PathLike[str], repeats: int = 3) -> dict[str, Any]:
    """Times full sequential reads of a native trace on one thread (see `tlblab bench trace_decode`)."""
    return json.loads(_native.trace_decode_bench(_path(path), repeats))
