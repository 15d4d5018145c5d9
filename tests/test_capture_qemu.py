"""The ARMv7 capture path (tlblab.capture_qemu): a tiny program cross-compiled for ARMv7, run under
qemu-arm with tlblab's plugin; its references checked against the program and the symbol table,
its system calls against the calls it makes, and the trace's bytes compared across two folders
(seed 004's ISA, issue 87)."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tlblab import capture_qemu, trace

pytestmark = pytest.mark.skipif(
    shutil.which(capture_qemu.QEMU) is None or shutil.which(capture_qemu.CROSS_CC) is None
    or shutil.which(capture_qemu.CROSS_LD) is None,
    reason="qemu-user, clang and binutils-arm-linux-gnueabihf (scripts/debian-packages.txt) are not installed")

PAGES = 16
SOURCE = f"""
static volatile char pages[{PAGES} * 4096];
int main(void) {{
    for (int i = 0; i < {PAGES}; i++)
        pages[i * 4096] = (char)i;
    return pages[4096] - 1;
}}
"""
# A known sequence of system calls after the loader's: map 3 pages, store to the first, make it
# read-only, unmap the other two, ask for the pid, exit.
CALLS = """
#include <sys/mman.h>
#include <unistd.h>
int main(void) {
    char *p = mmap(0, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    p[0] = 1;
    mprotect(p, 4096, PROT_READ);
    munmap(p + 4096, 2 * 4096);
    return getpid() < 0;
}
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


def test_given_a_program_of_known_system_calls_then_the_footer_has_them_in_place(tmp_path, monkeypatch):
    from tlblab.seeds.s004_tlb_lockdown import mibench

    (tmp_path / "calls.c").write_text(CALLS)
    binary = capture_qemu.cross_compile(tmp_path / "calls.c", tmp_path / "calls", ("-O1",))
    out = tmp_path / "calls.tlbt"
    report = capture_qemu.record([str(binary)], out)
    calls = capture_qemu.syscalls_of(out)
    assert report["exit_status"] == 0 and report["syscalls"] == len(calls)
    # ARM EABI numbers (arch/arm/tools/syscall.tbl): mmap2 192, mprotect 125, munmap 91,
    # getpid 20, exit_group 248; the loader's calls come first.
    mask = 0xFFFF_FFFF
    mmap = max(i for i, c in enumerate(calls) if c[1] == 192 and c[3] & mask == 3 * 4096)
    tail = calls[mmap:]
    assert [c[1] for c in tail] == [192, 125, 91, 20, 248]
    p = tail[0][5] & mask
    assert [(c[2] & mask, c[3] & mask) for c in tail[1:3]] == [(p, 4096), (p + 4096, 8192)]
    assert tail[1][4] & mask == 1 and tail[1][5] == 0 and tail[2][5] == 0  # PROT_READ; both succeed
    # getpid's result (the host's pid) is left out; exit_group never returns.
    assert tail[3][5] is None and tail[4][5] is None
    # Each call's place: the reference before it is the fetch of its SVC; the store to p[0]
    # lies between the mmap and the mprotect.
    records = [r for r in trace.records(out, 10_000_000) if "kind" in r]
    assert all(records[c[0] - 1]["kind"] == "instr" for c in calls)
    stores = [i for i, r in enumerate(records) if r["kind"] == "store" and r["vaddr"] == p]
    assert len(stores) == 1 and tail[0][0] <= stores[0] < tail[1][0]
    # As seed 004's scenarios take them (mibench.armv7_syscalls, the x86 path's kinds): each
    # call a kernel entry, the mprotect and the munmap with their ranges.
    kinds = mibench.armv7_syscalls(out)
    assert len(kinds) == len(calls)
    assert kinds[mmap + 1:mmap + 3] == [(tail[1][0], "mprotect", p, 4096, 1), (tail[2][0], "munmap", p + 4096, 8192, 0)]
    assert {k[1] for k in kinds[:mmap + 1]} <= {"syscall", "mprotect", "munmap"}
    # Asked again (every scenario of a table asks for its captures' calls), the capture is not
    # read again: syscalls_of scans the whole trace (issue 89). A new version of the file is.
    read = []
    real = capture_qemu.syscalls_of
    monkeypatch.setattr(capture_qemu, "syscalls_of", lambda t, whole=None: read.append(t) or real(t, whole))
    assert mibench.armv7_syscalls(out) == kinds and read == []
    os.utime(out, ns=(0, 0))
    assert mibench.armv7_syscalls(out) == kinds and len(read) == 1


# Reads the file argv[1] names and returns its first byte: the input of a background program.
READER = """
#include <stdio.h>
int main(int argc, char **argv) {
    FILE *f = fopen(argv[1], "rb");
    return f ? fgetc(f) : 99;
}
"""


def test_given_an_input_file_from_two_folders_then_the_guest_reads_it_and_the_trace_is_the_same_bytes(tmp_path):
    (tmp_path / "reader.c").write_text(READER)
    binary = capture_qemu.cross_compile(tmp_path / "reader.c", tmp_path / "reader", ("-O1",))
    outs = []
    for d in (tmp_path / "a", tmp_path / "a" / "much" / "deeper"):
        d.mkdir(parents=True)
        (d / "input.bin").write_bytes(b"\x2a" + bytes(100))
        out = d / "t.tlbt"
        # The input is copied beside the guest program and named by file name alone.
        report = capture_qemu.record([str(binary), "input.bin"], out, files=[d / "input.bin"])
        assert report["exit_status"] == 42  # the file's first byte: the guest opened the copy
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


# Writes its environment, one variable a line.
ENVIRON = """
#include <stdio.h>
extern char **environ;
int main(void) {
    for (char **e = environ; *e; e++)
        puts(*e);
    return 0;
}
"""


def test_given_an_environment_then_the_guest_sees_exactly_it_and_the_metadata_names_it(tmp_path):
    (tmp_path / "environ.c").write_text(ENVIRON)
    binary = capture_qemu.cross_compile(tmp_path / "environ.c", tmp_path / "environ", ("-O1",))
    env = {"SOURCE_DATE_EPOCH": "1640995200", "TZ": ":", "B": "x=y"}
    report = capture_qemu.record([str(binary)], tmp_path / "e.tlbt", stdout=tmp_path / "e.txt", env=env)
    assert report["exit_status"] == 0
    # These variables in this order, nothing of ours or QEMU's: the guest's stack is the given one.
    assert (tmp_path / "e.txt").read_text().splitlines() == ["SOURCE_DATE_EPOCH=1640995200", "TZ=:", "B=x=y"]
    assert trace.info(tmp_path / "e.tlbt")["meta"]["capture"]["environment"] == [
        "SOURCE_DATE_EPOCH=1640995200", "TZ=:", "B=x=y"]
    # Without one, the guest's is empty, and the metadata says so as before.
    capture_qemu.record([str(binary)], tmp_path / "none.tlbt", stdout=tmp_path / "none.txt")
    assert (tmp_path / "none.txt").read_text() == ""
    assert trace.info(tmp_path / "none.tlbt")["meta"]["capture"]["environment"] == "empty"
    with pytest.raises(ValueError, match="'A=B=1'"):
        capture_qemu.record([str(binary)], tmp_path / "bad.tlbt", env={"A=B": "1"})


# Writes its pid as text into memory it then reads, as troff's pdfpic.tmac does with \n[$$].
GETPID = """
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(void) {
    char text[32];
    snprintf(text, sizeof text, "/tmp/pdfpic%d", (int)getpid());
    printf("%d %zu\\n", (int)getpid(), strlen(text));
    return 0;
}
"""


def test_given_its_own_pid_namespace_then_the_guest_is_pid_one_and_its_trace_the_same_bytes(tmp_path):
    # Seed 004's typeset (troff) formats its pid into a macro: with a 4-digit pid its capture was
    # shorter than with a 5-digit one (issue 89). In a PID namespace of its own QEMU, and so the
    # guest, is pid 1 on every run.
    from tlblab import _native

    words, why = _native.pid_namespace_wrapper()
    if why:
        pytest.skip(why)
    (tmp_path / "getpid.c").write_text(GETPID)
    binary = capture_qemu.cross_compile(tmp_path / "getpid.c", tmp_path / "getpid", ("-O1",))
    outs = []
    for i in range(2):
        out = tmp_path / f"p{i}.tlbt"
        report = capture_qemu.record([str(binary)], out, stdout=tmp_path / "pid.txt", own_pid_namespace=True)
        assert report["exit_status"] == 0
        assert (tmp_path / "pid.txt").read_text().split() == ["1", "12"]
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    capture_qemu.record([str(binary)], tmp_path / "own.tlbt", stdout=tmp_path / "pid.txt")
    assert (tmp_path / "pid.txt").read_text().split()[0] != "1"


@pytest.mark.slow  # the Debian armhf root (apt-get download of its packages, ldconfig as root)
def test_given_typesets_environment_then_armv7_troff_reads_no_clock(tmp_path):
    # Seed 004's ARMv7 typeset (mibench.capture_corunner_armv7): troff's date registers came from
    # clock_gettime64 and localtime (the host's /etc/localtime: the armhf root has none), and the
    # capture's length moved with the time of day (issue 89). With mibench.CORUNNER_ENV's
    # variables the guest makes no clock call and its registers hold SOURCE_DATE_EPOCH's date.
    from tlblab.seeds.s004_tlb_lockdown import mibench

    root = mibench.armhf_root()
    (tmp_path / "d.tr").write_text(".nf\ndate \\n(yr \\n(mo \\n(dy \\n(dw\n")
    troff = [str(root / "usr" / "bin" / "troff"), "-a", "d.tr"]
    clock = {403, 263, 13, 78}  # ARM EABI clock_gettime64, clock_gettime, time, gettimeofday

    def calls(env):
        out = tmp_path / "t.tlbt"
        capture_qemu.record(troff, out, sysroot=root, files=[tmp_path / "d.tr"], stdout=tmp_path / "out.txt", env=env)
        return [c[1] for c in capture_qemu.syscalls_of(out)], (tmp_path / "out.txt").read_text()

    nums, text = calls(mibench.CORUNNER_ENV["typeset"])
    assert not clock & set(nums) and "date 122 1 1 7" in text
    # Without them (the guest's environment empty, as before), troff reads the clock.
    assert clock & set(calls({})[0])
