"""The `tlblab` command line.

Each subcommand lives in its own module under `tlblab.commands` and exposes
`register(subparsers)`, which adds its parser and sets `func` on it. Modules are
discovered, so adding a command means adding one file.

User errors (bad input files, impossible geometries) are raised as `tlblab.errors.UserError`
or come back from the Rust extension as `ValueError`/`OSError`; they are printed as one line
on stderr with exit status 2, never as a traceback.

Ctrl-C (SIGINT) and SIGTERM stop every command the same way: the first signal raises
`Interrupted` (a `KeyboardInterrupt`, so every writer's clean-up runs), later ones are ignored
while that clean-up runs, and the command exits with 128 + the signal's number (130, 143)
after one line on stderr.
"""

from __future__ import annotations

import argparse
import os
import logging
import importlib
import pkgutil
import signal
import sys
import threading

from tlblab import commands
from tlblab.errors import UserError

try:
    from importlib.metadata import version as _dist_version

    __version__ = _dist_version("tlblab")
except Exception:  # not installed as a distribution (a source tree on sys.path)
    __version__ = "unknown"


class Interrupted(KeyboardInterrupt):
    """The command was stopped by SIGINT (Ctrl-C) or SIGTERM; `signum` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


# The signal that stopped the command, once one has: a second signal (a second Ctrl-C, or the
# terminal's Ctrl-C reaching us after valgrind died of it) must not raise inside the clean-up
# the first one started.
_stopping: int | None = None
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _on_stop_signal(signum, frame) -> None:
    global _stopping
    if _stopping is not None:
        return
    _stopping = signum
    raise Interrupted(signum)


def stopping() -> int | None:
    """The signal that is stopping this command, or None."""
    return _stopping


class _Parser(argparse.ArgumentParser):
    """argparse's parser, its errors one line (the README's promise: bad input gets one line and
    exit status 2), not its usage block first; the line says where the usage is. Subparsers
    are made of the parser's own class, so every subcommand's errors read the same."""

    def error(self, message: str):
        self.exit(2, f"tlblab: error: {printable(message)} (see {self.prog} --help)\n")


# The optional parts of tlblab: the import that fails, the extra that provides it
# (`pyproject.toml`'s [project.optional-dependencies]).
EXTRAS = {
    "dask": "cluster",
    "distributed": "cluster",
    "psutil": "cluster",
    "playwright": "browser",
}


def missing_part(e: ModuleNotFoundError) -> str:
    """The one line for a command that needs a package that is not installed."""
    top = (e.name or "").split(".")[0]
    extra = EXTRAS.get(top)
    if extra:
        return (f"this command needs the Python package '{top}', which tlblab's '{extra}' extra provides: "
                f"pip install 'tlblab[{extra}]'")
    return (f"this command needs the Python package '{top}', a dependency of tlblab that is not installed: "
            f"reinstall tlblab (pip install tlblab) or pip install {top}")


def os_message(e: BaseException) -> str:
    """`e` as one line for a person: an OSError with a file name as "FILE: reason" (no errno)."""
    if isinstance(e, OSError) and e.filename is not None and e.strerror:
        return f"{os.fsdecode(e.filename)}: {e.strerror[0].lower()}{e.strerror[1:]}"
    return str(e)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="tlblab",
        description="A laboratory for address translation: measure, simulate and apply TLB techniques.",
    )
    parser.add_argument("--version", action="version", version=f"tlblab {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"tlblab.commands.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(sub)
    _check_numbers(parser)
    _describe(parser)
    return parser


def _describe(parser: argparse.ArgumentParser) -> None:
    """Gives every subcommand without a description of its own its one-line help as one, so
    `tlblab COMMAND --help` says what the command does, not only its options."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, p in action.choices.items():
                if not p.description and helps.get(name):
                    text = helps[name]
                    p.description = text[0].upper() + text[1:] + ("" if text.endswith(".") else ".")
                _describe(p)


def printable(text: str) -> str:
    """`text` with control characters (and bytes that were not UTF-8) escaped: messages quote
    file contents and user input, and an escape sequence from a corrupt file must not reach the
    terminal as one."""
    out = []
    for ch in text:
        o = ord(ch)
        if ch == "\t" or (o >= 0x20 and o != 0x7F and not 0x80 <= o < 0xA0 and not 0xD800 <= o < 0xE000):
            out.append(ch)
        elif o < 0x100:
            out.append(f"\\x{o:02x}")
        else:
            out.append(f"\\u{o:04x}")
    return "".join(out)


U64_MAX = 2**64 - 1


def _count(text: str) -> int:
    """An integer flag: 0 .. 2^64-1, written as workload specs write values (`4096`, `0x1000`,
    `64k`, `2M`), so a negative or huge value is one message naming the flag, not an
    OverflowError from the extension."""
    from tlblab import _native

    v = _native.parse_number(text)
    if v is None:
        raise argparse.ArgumentTypeError(
            f"expected a non-negative integer (e.g. 4096, 0x1000, 64k, 2M) up to {U64_MAX}, found '{text}'")
    return int(v)


def _seconds(text: str) -> float:
    """A float flag (durations, pauses): finite and not negative."""
    import math

    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not math.isfinite(v) or v < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative number, found '{text}'")
    return v


_count.__name__ = "integer"
_seconds.__name__ = "number"


def _check_numbers(parser: argparse.ArgumentParser) -> None:
    """Gives every `type=int` / `type=float` flag of every subcommand a checked type (no flag
    of tlblab takes a negative number), so commands need not repeat the range checks."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for p in set(action.choices.values()):
                _check_numbers(p)
        elif action.type is int:
            action.type = _count
        elif action.type is float:
            action.type = _seconds


def main(argv: list[str] | None = None) -> int:
    global _stopping
    _stopping = None
    previous = {}
    # The handlers go in before the parser is built: building it imports every command's
    # module, and a Ctrl-C in those first few hundred milliseconds is a stop like any other.
    if threading.current_thread() is threading.main_thread():
        for s in STOP_SIGNALS:
            previous[s] = signal.signal(s, _on_stop_signal)
    try:
        try:
            args = build_parser().parse_args(argv)
        except KeyboardInterrupt as e:
            return _report_stop(e)
        return _run(args)
    finally:
        # Stopped, the program exits with its line already written: a late signal (a second
        # Ctrl-C a few milliseconds after the first) is ignored to the end, for the handlers
        # restored here would let it kill the exiting process (status -2 instead of 130; the
        # interpreter puts SIGINT back to its default as it shuts down, unless it is ignored).
        # Called in-process with `argv` (tests, other programs), the caller's handlers return.
        stopped_program = _stopping is not None and argv is None
        for s, h in previous.items():
            signal.signal(s, signal.SIG_IGN if stopped_program else h)


def _run(args) -> int:
    global _stopping
    try:
        status = args.func(args)
    except BrokenPipeError:
        # The reader went away (`tlblab ... | head`): not an error of ours; stay quiet.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
    except UserError as e:
        print(f"tlblab: error: {printable(str(e))}", file=sys.stderr)
        return 2
    except (ValueError, OSError) as e:
        # The extension reports bad input as ValueError/OSError with a complete message; an
        # OSError of Python's own reads "[Errno 13] Permission denied: 'x'": said as "x: ...".
        print(f"tlblab: error: {printable(os_message(e))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        # Interrupted: our handler's; a plain KeyboardInterrupt: the extension's, for a child
        # (valgrind) stopped by the terminal's signal before our handler ran. Our handler may
        # then still run here, late, and raise once more: that is the same stop, not a second.
        while True:
            try:
                return _report_stop(e)
            except KeyboardInterrupt as late:
                e = late
    except ModuleNotFoundError as e:
        # An optional part not installed (a wheel without its extra): say which extra, not a
        # traceback. Only a missing package: tlblab's own modules are always there.
        if (e.name or "").split(".")[0] == "tlblab":
            raise
        print(f"tlblab: error: {missing_part(e)}", file=sys.stderr)
        return 2
    except OverflowError as e:
        # A number past what the extension takes (a flag not range-checked above, or a value
        # computed from one): bad input, not a crash.
        print(f"tlblab: error: a number is out of range: {printable(str(e))}", file=sys.stderr)
        return 2
    return int(status or 0)


def _report_stop(e: KeyboardInterrupt) -> int:
    """The one line of a stopped command, and its exit status (128 + the signal)."""
    global _stopping
    _stopping = _stopping or getattr(e, "signum", None) or _signal_in(str(e)) or signal.SIGINT
    signum = getattr(e, "signum", None) or _stopping
    name = "terminated" if signum == signal.SIGTERM else "interrupted"
    # The stop's line is the last one: a Dask scheduler still starting in this process (a
    # sweep's LocalCluster) would otherwise log after it while the process exits.
    logging.disable(logging.CRITICAL)
    try:
        print(f"tlblab: {name}", file=sys.stderr)
    except OSError:
        pass
    return 128 + int(signum)


def _signal_in(message: str) -> int | None:
    """The signal number in the extension's "interrupted: ... stopped by signal N ..."."""
    import re

    m = re.search(r"by signal (\d+)", message)
    return int(m.group(1)) if m and int(m.group(1)) in (signal.SIGINT, signal.SIGTERM) else None


if __name__ == "__main__":
    sys.exit(main())
