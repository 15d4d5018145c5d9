"""`tlblab.files.atomic_write`, through which every output file is written: whole or not at all,
with the mode a plain `open` gives; `one_maker`, which lets one process make a cache entry."""

from __future__ import annotations

import multiprocessing
import os
import time

import pytest

from tlblab import files
from tlblab.files import atomic_write, csv_text


def test_a_file_is_written_whole_with_the_umasks_mode(tmp_path):
    old = os.umask(0o027)
    try:
        atomic_write(tmp_path / "a.txt", "tlb\n")
        atomic_write(tmp_path / "b.bin", b"\x00\x01")
        atomic_write(tmp_path / "c.csv", lambda tmp: open(tmp, "w").write("x\n"))
    finally:
        os.umask(old)
    assert (tmp_path / "a.txt").read_text() == "tlb\n"
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    assert (tmp_path / "c.csv").read_text() == "x\n"
    assert {p.stat().st_mode & 0o777 for p in tmp_path.iterdir()} == {0o640}


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.csv"
    target.write_text("the last run's\n")

    def interrupted(tmp: str) -> None:
        with open(tmp, "w") as f:
            f.write("half a")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(target, interrupted)
    assert target.read_text() == "the last run's\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]


def test_a_missing_directory_is_an_oserror_for_the_caller_to_word(tmp_path):
    with pytest.raises(FileNotFoundError):
        atomic_write(tmp_path / "no" / "such.txt", "x")


def test_csv_text_keeps_the_columns_in_order_of_first_appearance():
    assert csv_text([{"a": 1}, {"b": 2, "a": 3}]) == "a,b\r\n1,\r\n3,2\r\n"


def test_content_digest_is_stable_and_tells_part_boundaries_apart():
    from tlblab.files import content_digest

    assert content_digest(b"ab", "c") == content_digest("ab", b"c")
    assert content_digest("ab", "c") != content_digest("a", "bc")  # length-prefixed parts
    assert len(content_digest("x")) == 20


def test_a_missing_tool_is_one_user_error_naming_it():
    import pytest

    from tlblab.errors import UserError
    from tlblab.files import tool_version

    with pytest.raises(UserError, match=r"^rt tasks: 'no-such-tool-xyz --version' failed .*debian-packages.txt"):
        tool_version(["no-such-tool-xyz", "--version"], "rt tasks")


def _make_slowly(path, started, made_by):
    # A worker of the test below: makes `path` under its lock unless someone already has.
    with files.one_maker(path) as missing:
        started.set()
        if missing:
            time.sleep(0.5)  # long enough for the other process to reach the lock
            files.atomic_write(path, str(os.getpid()))
            made_by.put(os.getpid())


def test_one_maker_lets_one_process_make_a_file_and_the_others_read_it(tmp_path):
    # Two processes want the same cache entry at once: exactly one makes it, the other waits on
    # the lock and then finds it made; a third, later, does not take the lock at all.
    ctx = multiprocessing.get_context("fork")
    path = tmp_path / "capture.tlbt"
    started, made_by = ctx.Event(), ctx.Queue()
    first = ctx.Process(target=_make_slowly, args=(path, started, made_by))
    first.start()
    assert started.wait(30)
    second = ctx.Process(target=_make_slowly, args=(path, ctx.Event(), made_by))
    second.start()
    first.join(30)
    second.join(30)
    assert first.exitcode == 0 and second.exitcode == 0
    assert path.read_text() == str(first.pid)
    assert made_by.get(timeout=5) == first.pid and made_by.empty()
    with files.one_maker(path) as missing:
        assert missing is False
    assert sorted(p.name for p in tmp_path.iterdir()) == ["capture.tlbt"]  # no lock file beside it
