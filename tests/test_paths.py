"""Where default outputs go (tlblab.paths, docs/paths.md): the checkout's out/ when a command
runs inside the checkout, the per-user cache anywhere else, TLBLAB_OUT over both; never the
directory a command happens to run from (issue 88: out/ and checkpoint folders piled up there)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tlblab import paths

REPO = Path(__file__).resolve().parents[1]


def test_given_the_checkout_root_when_asked_then_out_is_the_relative_out_the_readme_uses(monkeypatch):
    monkeypatch.delenv("TLBLAB_OUT", raising=False)
    monkeypatch.chdir(REPO)
    assert paths.checkout() == REPO
    assert paths.out("study") == Path("out/study")


def test_given_a_folder_inside_the_checkout_then_out_is_the_checkouts_out(monkeypatch):
    monkeypatch.delenv("TLBLAB_OUT", raising=False)
    monkeypatch.chdir(REPO / "docs")
    assert paths.out("intervals") == REPO / "out" / "intervals"


def test_given_a_folder_outside_any_checkout_then_out_is_the_user_cache(monkeypatch, tmp_path):
    monkeypatch.delenv("TLBLAB_OUT", raising=False)
    monkeypatch.chdir(tmp_path)
    assert paths.checkout() is None
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert paths.out("checkpoints") == tmp_path / "cache" / "tlblab" / "checkpoints"
    # A relative XDG_CACHE_HOME is invalid (XDG Base Directory Specification): ~/.cache then.
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")
    assert paths.out() == Path.home() / ".cache" / "tlblab"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert paths.out() == Path.home() / ".cache" / "tlblab"


def test_given_tlblab_out_then_it_wins_inside_and_outside_the_checkout(monkeypatch, tmp_path):
    monkeypatch.setenv("TLBLAB_OUT", str(tmp_path / "mine"))
    for where in (REPO, tmp_path):
        monkeypatch.chdir(where)
        assert paths.out("sweep", "g") == tmp_path / "mine" / "sweep" / "g"


def test_given_a_command_run_outside_the_checkout_then_nothing_is_written_where_it_ran(tmp_path):
    """`simulate --intervals` keeps its checkpoints under the default out: in the user cache here,
    and the directory the command ran from stays empty."""
    work, cache = tmp_path / "work", tmp_path / "cache"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "TLBLAB_OUT"}
    env["XDG_CACHE_HOME"] = str(cache)
    p = subprocess.run([sys.executable, "-m", "tlblab.cli", "simulate", "--machine", "zen3", "--workload",
                        "random:pages=64,accesses=20k", "--intervals", "2", "--serial"],
                       cwd=work, env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert list(work.iterdir()) == []
    assert any((cache / "tlblab" / "intervals").iterdir())
    assert str(cache / "tlblab" / "intervals") in p.stdout


def test_a_repository_file_is_found_in_the_checkout_and_named_in_one_line_without_one(monkeypatch):
    """A reproduction that builds programs from the repository's C sources finds them in the checkout
    the package runs from; from a wheel (no checkout) it says what it needs and how to get it."""
    import pytest

    from tlblab.errors import UserError

    assert paths.repository() == REPO
    assert paths.repository_file("runtime/bench/mibench", "x") == REPO / "runtime/bench/mibench"
    monkeypatch.setattr(paths, "repository", lambda: None)
    monkeypatch.delenv("TLBLAB_REPO", raising=False)
    with pytest.raises(UserError) as e:
        paths.repository_file("runtime/bench/seed003", "seed 003's task programs")
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("seed 003's task programs: built from the tlblab repository's "
                                              "runtime/bench/seed003") and "set TLBLAB_REPO" in msg, msg
