"""The ARMv7 capture path (tlblab.capture_qemu): a tiny program cross-compiled for ARMv7, run under
qemu-arm with tlblab's plugin; its references checked against the program and the symbol table,
and the trace's bytes compared across two folders (seed 004's ISA, issue 87)."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tlblab import capture_qemu, trace

pytestmark = pytest.mark.skipif(
    shutil.which(capture_qemu.QEMU) is None or shutil.which(capture_qemu.CROSS_CC) is None,
    reason="qemu-user and gcc-arm-linux-gnueabihf (scripts/debian-packages.txt) are not installed")

PAGES = 16
SOURCE = f"""
static volatile char pages[{PAGES} * 4096];
int main(void) {{
    for (int i = 0; i < {PAGES}; i++)
        pages[i * 4096] = (char)i;
    return pages[4096] - 1;
}}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("armv7")
    (d / "tiny.c").write_text(SOURCE)
    # -no-pie: the symbol table's addresses are then the run's (a PIE loads at QEMU's base).
    return capture_qemu.cross_compile(d / "tiny.c", d / "tiny", ("-O1", "-no-pie"))


def symbol(binary: Path, name: str) -> int:
    out = subprocess.run(["arm-linux-gnueabihf-nm", str(binary)], capture_output=True, text=True, check=True).stdout
    return next(int(line.split()[0], 16) for line in out.splitlines() if line.endswith(f" {name}"))


def test_given_a_tiny_armv7_program_when_captured_then_its_stores_and_fetches_are_the_programs(program, tmp_path):
    out = tmp_path / "tiny.tlbt"
    report = capture_qemu.record([str(program)], out)
    assert report["exit_status"] == 0 and not report["killed_at_limit"]
    records = trace.records(out, 10_000_000)
    accesses = [r for r in records if "kind" in r]
    assert len(accesses) == report["references_seen"]
    base = symbol(program, "pages")
    stores = [r for r in accesses if r["kind"] == "store" and base <= r["vaddr"] < base + PAGES * 4096]
    # One byte stored at the start of each page of the array, in order: the loop, nothing else.
    assert [(r["vaddr"], r["size"]) for r in stores] == [(base + i * 4096, 1) for i in range(PAGES)]
    # main's instructions are fetched as 4-byte ARM instructions (-marm is Debian's armhf
    # default: Thumb-2 would give 2-byte ones too) from main's own address on.
    main = symbol(program, "main")
    fetched = {r["vaddr"] for r in accesses if r["kind"] == "instr"}
    assert main in fetched or main + 1 in fetched
    # 32-bit addresses only: an ARMv7 guest, not the host.
    assert max(r["vaddr"] for r in accesses) < 1 << 32


def test_given_two_folders_and_two_program_paths_then_the_trace_is_the_same_bytes(program, tmp_path):
    a_dir, b_dir = tmp_path / "a", tmp_path / "deeper" / "folder" / "b"
    a_dir.mkdir()
    b_dir.mkdir(parents=True)
    shutil.copy(program, b_dir / "tiny")
    cwd = os.getcwd()
    try:
        os.chdir(a_dir)
        capture_qemu.record([str(program)], a_dir / "t.tlbt")
        os.chdir(b_dir)
        capture_qemu.record(["./tiny"], b_dir / "t.tlbt")
    finally:
        os.chdir(cwd)
    assert (a_dir / "t.tlbt").read_bytes() == (b_dir / "t.tlbt").read_bytes()


def test_given_a_limit_then_the_program_stops_there(program, tmp_path):
    report = capture_qemu.record([str(program)], tmp_path / "cut.tlbt", limit=1000)
    assert report["references_seen"] == 1000 and report["killed_at_limit"]
    assert len([r for r in trace.records(tmp_path / "cut.tlbt", 5000) if "kind" in r]) == 1000
