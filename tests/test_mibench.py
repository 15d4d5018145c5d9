"""Seed 004's whole-program captures (tlblab.seeds.s004_tlb_lockdown.mibench): 32-bit builds of runtime/bench/mibench under
Valgrind Lackey, cached by content hash; the cache is reused, and bad input gets one message."""

from __future__ import annotations

import shutil

import pytest

import tlblab
from tlblab.seeds.s004_tlb_lockdown import mibench
from tlblab.errors import UserError
from tlblab.trace import info

pytestmark = pytest.mark.skipif(not shutil.which("valgrind"), reason="valgrind is not installed (make setup)")


def test_given_a_program_when_built_then_the_binary_is_32_bit_and_built_once(tmp_path):
    a = mibench.build("qsort", cache=tmp_path)
    assert a.read_bytes()[:5] == b"\x7fELF\x01", "ELFCLASS32: 32-bit addresses, as on the seed's ARMv7"
    mtime = a.stat().st_mtime_ns
    assert mibench.build("qsort", cache=tmp_path) == a and a.stat().st_mtime_ns == mtime


def test_given_a_bounded_capture_when_asked_twice_then_the_second_is_the_cached_file(tmp_path):
    t = mibench.capture("basicmath", limit=20_000, cache=tmp_path)
    assert info(t)["records"] >= 20_000 > 0
    mtime = t.stat().st_mtime_ns
    assert mibench.capture("basicmath", limit=20_000, cache=tmp_path) == t
    assert t.stat().st_mtime_ns == mtime
    assert not list(tmp_path.glob(".*")), "no partial file is left behind (atomic_write's temporaries are hidden)"
    # Every page of the capture fits the 32-bit ARMv7 page table of the cortex-a9 preset.
    r = tlblab.simulate("cortex-a9", str(t), tlb_only=True)
    assert r.summary()["references"] >= 20_000


def test_given_an_unknown_program_then_one_message_names_the_choices(tmp_path):
    with pytest.raises(UserError, match="unknown program 'gzip'.*basicmath, qsort, susan"):
        mibench.capture("gzip", cache=tmp_path)
