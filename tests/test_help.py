"""Help for people: every subcommand says what it does, every option what it means, and
`tlblab --version` answers."""

from __future__ import annotations

import argparse
import subprocess
import sys

from tlblab.cli import build_parser


def _parsers(parser: argparse.ArgumentParser, path: str = "tlblab"):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, p in action.choices.items():
                yield from _parsers(p, f"{path} {name}")


def test_every_subcommand_has_a_description_and_every_option_its_help():
    missing = []
    for path, p in _parsers(build_parser()):
        if not p.description:
            missing.append(f"{path}: no description")
        for a in p._actions:
            if isinstance(a, (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)):
                continue
            if not a.help:
                missing.append(f"{path} {'/'.join(a.option_strings) or a.dest}: no help")
    assert missing == []


def test_version():
    r = subprocess.run([sys.executable, "-m", "tlblab.cli", "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.startswith("tlblab ") and "unknown" not in r.stdout, r


def test_os_help_names_every_switch_policy():
    text = subprocess.run([sys.executable, "-m", "tlblab.cli", "simulate", "--help"], capture_output=True,
                          text=True).stdout
    for policy in ("auto", "flush_all", "asid_tagged", "hook"):
        assert policy in text
