"""The `tlblab` command line.

Each subcommand lives in its own module under `tlblab.commands` and exposes
`register(subparsers)`, which adds its parser and sets `func` on it. Modules are
discovered, so adding a command means adding one file.

User errors (bad input files, impossible geometries) are raised as `tlblab.errors.UserError`
or come back from the Rust extension as `ValueError`/`OSError`; they are printed as one line
on stderr with exit status 2, never as a traceback.
"""

from __future__ import annotations

import argparse
import os
import importlib
import pkgutil
import sys

from tlblab import commands
from tlblab.errors import UserError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tlblab",
        description="A laboratory for address translation: measure, simulate and apply TLB techniques.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"tlblab.commands.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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
        print(f"tlblab: error: {e}", file=sys.stderr)
        return 2
    except (ValueError, OSError) as e:
        # The extension reports bad input as ValueError/OSError with a complete message.
        print(f"tlblab: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tlblab: interrupted", file=sys.stderr)
        return 130
    return int(status or 0)


if __name__ == "__main__":
    sys.exit(main())
