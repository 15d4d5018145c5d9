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

import json
import os
import subprocess
from typing import Any, Mapping, Sequence

from tlblab import _native, phases
from tlblab.errors import UserError


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
    program's LD_PRELOAD); `no_aslr` turns address-space randomization off (as `setarch -R`).
    Together they make a capture the same bytes on every run (docs/traces.md).
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
    with phases.phase(phases.CAPTURE):
        return json.loads(
            _native.trace_record(
                list(argv), _path(output), skip, limit, progress, valgrind,
                None if stdin is None else _path(stdin), None if stdout is None else _path(stdout),
                tool, directory, roi_only, skip_instructions, max_instructions, trace_syscalls,
                None if cwd is None else _path(cwd), None if env is None else sorted(env.items()), no_aslr,
            )
        )


def catalog() -> list[dict[str, Any]]:
    """The built-in workloads: name, summary, seed section, parameters with defaults."""
    return json.loads(_native.trace_workload_catalog())


def generate(name: str, output: str | os.PathLike[str], seed: int = 1, **params: int) -> dict[str, Any]:
    """Writes built-in workload `name` (with integer `params`) as a native trace."""
    return json.loads(_native.workload_generate(name, {k: int(v) for k, v in params.items()}, seed, _path(output)))


def decode_bench(path: str | os.PathLike[str], repeats: int = 3) -> dict[str, Any]:
    """Times full sequential reads of a native trace on one thread (see `tlblab bench trace_decode`)."""
    return json.loads(_native.trace_decode_bench(_path(path), repeats))
