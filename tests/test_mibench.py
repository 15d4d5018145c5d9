"""Seed 004's whole-program captures (tlblab.seeds.s004_tlb_lockdown.mibench): 32-bit builds of runtime/bench/mibench under
Valgrind Lackey, cached by content hash; the cache is reused, and bad input gets one message."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import tlblab
from tlblab import _native
from tlblab.seeds.s004_tlb_lockdown import mibench
from tlblab.errors import UserError
from tlblab.trace import info, records

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


def test_given_the_four_core_scenario_then_core0_runs_the_program_last_beside_three_looping_cores(tmp_path):
    # Seed 004 §V.1: core 0 runs cjpeg, djpeg, then the real-time program (process 0); cores 1-3
    # loop cjpeg, djpeg and typeset, each run a new process. Bounded captures keep it short.
    if not (shutil.which("cjpeg") and shutil.which("troff")):
        pytest.skip("cjpeg/troff not installed (scripts/debian-packages.txt)")
    four = mibench.scenario("basicmath", 4, limit=20_000, corunner_limit=5_000, cache=tmp_path)
    one = mibench.scenario("basicmath", 1, limit=20_000, corunner_limit=5_000, cache=tmp_path)
    assert mibench.scenario("basicmath", 4, limit=20_000, corunner_limit=5_000, cache=tmp_path) == four
    r4 = tlblab.simulate("cortex-a9", str(four), stall_cycles=True, os={"fault_kernel_pages": 4})
    r1 = tlblab.simulate("cortex-a9", str(one), stall_cycles=True, os={"fault_kernel_pages": 4})
    rt = info(mibench.capture("basicmath", limit=20_000, cache=tmp_path))["accesses"]["total"]
    # The program is process 0 in both, whole; the cores advance at one rate, so while it runs
    # (after 10,000 references of cjpeg and djpeg on core 0) each other core runs as many.
    assert r4.stats["processes"]["0"]["references"] == r1.stats["processes"]["0"]["references"] == rt
    assert r1.stats["cores"][0]["references"] == rt + 10_000
    assert all(c["references"] == 0 for c in r1.stats["cores"][1:])
    assert all(c["references"] >= rt for c in r4.stats["cores"][1:])
    # 5,000-reference co-runners end many times: every run is a process of its own.
    assert len(r4.stats["processes"]) > 3 * (rt // 5_000)
    assert not list(tmp_path.glob(".*")), "no partial file is left behind"
    # Every program's system calls are kernel entries (issue 62), the real-time program's too;
    # with a timer every core ticks.
    # (The loader's first call comes some 30,000 references into the run.)
    own = mibench.program_syscalls("basicmath", limit=100_000, cache=tmp_path)
    longer = mibench.scenario("basicmath", 1, limit=100_000, corunner_limit=5_000, cache=tmp_path)
    assert own and info(longer)["events"]["by_type"].get("kernel_entry", 0) >= len(own)
    ticked = mibench.scenario("basicmath", 4, limit=20_000, corunner_limit=5_000, tick=1_000, cache=tmp_path)
    entries = lambda t: info(t)["events"]["by_type"].get("kernel_entry", 0)  # noqa: E731
    assert entries(ticked) >= entries(four) + 4 * 20
    # Another phase of the background loops: another trace, the same each time, the program's
    # own references unchanged.
    bg = {b: mibench.capture_corunner(b, limit=5_000, cache=tmp_path) for b in mibench.CORUNNERS}
    assert mibench.phase_offsets(0, 4, bg) == [(0, 0), (1, 0), (2, 0)]
    offs = mibench.phase_offsets(1, 4, bg)
    assert offs == mibench.phase_offsets(1, 4, bg) and offs != mibench.phase_offsets(2, 4, bg)
    assert all(0 <= o < 5_000 for _, o in offs)
    p1 = mibench.scenario("basicmath", 4, limit=20_000, corunner_limit=5_000, phase=1, cache=tmp_path)
    assert p1 != four
    r = tlblab.simulate("cortex-a9", str(p1), stall_cycles=True, os={"fault_kernel_pages": 4})
    assert r.stats["processes"]["0"]["references"] == rt


def test_given_a_64_bit_capture_then_its_stack_moves_below_the_3_gib_split(tmp_path):
    if not shutil.which("cjpeg"):
        pytest.skip("cjpeg not installed (scripts/debian-packages.txt)")
    t = mibench.capture_corunner("cjpeg", limit=5_000, cache=tmp_path)
    [(lo, hi, delta)] = mibench.relocations_32(t)
    assert lo >= 1 << 32 and hi == (1 << 64) - 1
    # The highest page the capture touches (not its footer's maps, a snapshot that a capture
    # this short may end before the stack is mapped) ends at the 32-bit stack top.
    top = max((vpn + 1) << 12 for _, vpn, *_ in _native.page_counts(str(t)))
    assert top + delta == mibench.STACK_TOP_32


def test_given_a_32_bit_capture_then_nothing_moves_and_its_pages_are_not_counted(tmp_path, monkeypatch):
    t = mibench.capture("qsort", limit=20_000, cache=tmp_path)
    pages = _native.page_counts(str(t))
    assert max((vpn + 1) << 12 for _, vpn, *_ in pages) <= 1 << 32
    # Its accesses lie below 4 GiB (trace info's address range): no scan of its pages (issue 89).
    monkeypatch.setattr(_native, "page_counts", lambda path: pytest.fail(f"{path} scanned"))
    assert mibench.relocations_32(t) == []


def test_given_a_background_program_then_its_mapping_calls_are_traced_at_their_places(tmp_path):
    # Lackey records no system calls; the same binary on the same input under Lackey with
    # --trace-syscalls gives them in the capture's layout. cjpeg (as strace shows it outside
    # Valgrind): four RELRO mprotects and the munmap of ld.so.cache at start-up; Valgrind's own
    # preload library's mprotect is left out.
    if not shutil.which("cjpeg"):
        pytest.skip("cjpeg not installed (scripts/debian-packages.txt)")
    calls = mibench.corunner_syscalls("cjpeg", cache=tmp_path)
    assert [k for _, k, *_ in calls if k != "syscall"] == ["mprotect"] * 4 + ["munmap"]
    records = info(mibench.capture_corunner("cjpeg", cache=tmp_path))["accesses"]["total"]
    at = [a for a, *_ in calls]
    maps = [a for a, k, *_ in calls if k != "syscall"]
    assert at == sorted(at) and 0 < at[0] and maps[-1] < records // 2, "start-up mapping calls, early in the run"
    assert at[-1] <= records, "every call (the last its exit_group) within the run"
    assert all(prot == 1 for _, k, _, _, prot in calls if k == "mprotect"), "RELRO: read-only"
    assert mibench.corunner_syscalls("cjpeg", cache=tmp_path) == calls, "cached"
    # Cut at a limit: only the calls before it.
    cut = mibench.corunner_syscalls("cjpeg", limit=200_000, cache=tmp_path)
    assert 1 <= len(cut) < len(calls) and all(c[0] < 200_000 for c in cut)
    assert [c[1:] for c in cut] == [c[1:] for c in calls[: len(cut)]]


def test_given_a_program_then_every_system_call_of_a_native_run_is_a_kernel_entry_at_its_place(tmp_path):
    # Every system call enters the kernel (issue 62: KernelEntry). The Lackey run's calls less
    # Valgrind's own (its preload library, ld.so's /usr/lib/debug search under it) are those of
    # the program run natively: strace counts the same number (execve, before the capture
    # starts, aside).
    if not shutil.which("strace"):
        pytest.skip("strace not installed")
    import subprocess

    calls = mibench.program_syscalls("basicmath", cache=tmp_path)
    binary = mibench.build("basicmath", cache=tmp_path)
    log = tmp_path / "strace.txt"
    # Output to /dev/null, as in the traced run (to a pipe glibc makes one call fewer).
    subprocess.run(["strace", "-f", "-o", str(log), str(binary), *mibench.PROGRAMS["basicmath"].args],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    native = [x for x in log.read_text().splitlines()
              if "(" in x and "execve(" not in x and "+++ exited" not in x and "resumed>" not in x]
    assert len(calls) == len(native), (len(calls), len(native))
    at = [a for a, *_ in calls]
    records = info(mibench.capture("basicmath", cache=tmp_path))["accesses"]["total"]
    assert at == sorted(at) and at[-1] <= records
    assert sum(k == "mprotect" for _, k, *_ in calls) >= 3, "the loader's RELRO mprotects"


def test_given_two_checkouts_and_environments_then_a_bounded_capture_is_the_same_bytes(tmp_path, monkeypatch):
    # Issue 87: the client's stack moved with ASLR, the folder's path and the environment; the
    # capture runs in a fixed folder and environment without ASLR (mibench._lackey_capture).
    made = []
    for where, extra in (("a", "x"), ("a-much-longer-checkout-folder/out/mibench", "y" * 300)):
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("TLBLAB_TEST_PADDING", extra)
        cache = tmp_path / where
        cache.mkdir(parents=True)
        monkeypatch.chdir(cache)
        made.append(_content(mibench.capture("qsort", limit=20_000, cache=cache)))
    assert made[0] == made[1]


def _content(path):
    """A capture's header, references and mappings, and its footer but the run's timings."""
    i = info(path)
    footer = {k: v for k, v in i["footer"].items() if k not in ("capture_seconds", "stream_bytes")}
    return i["meta"], footer, i["mappings"], records(path, int(i["records"]))


# troff's date registers, written to stdout by -a (ASCII text).
DATE_REGISTERS = ".nf\ndate \\n(yr \\n(mo \\n(dy \\n(dw\n"


def test_given_typesets_environment_then_troff_reads_no_clock_and_no_time_zone_file(tmp_path):
    # groff 1.22.4 sets its date registers from time() and localtime() at start-up, a number of
    # steps that depends on the time and the host's /etc/localtime: typeset's capture moved
    # between runs (issue 89). In `_corunner_env("typeset")` it takes SOURCE_DATE_EPOCH's time
    # and glibc UTC without a file (TZ=":"). Under Valgrind (no vDSO) the clock is a system call.
    if not shutil.which("troff"):
        pytest.skip("troff not installed (groff-base, scripts/debian-packages.txt)")
    import subprocess

    (tmp_path / "d.tr").write_text(DATE_REGISTERS)

    def run(env):
        r = subprocess.run(["valgrind", "--tool=none", "--trace-syscalls=yes", "troff", "-a", "d.tr"],
                           env=env, cwd=tmp_path, capture_output=True, text=True, check=True)
        calls = [x for x in r.stderr.splitlines() if x.startswith("SYSCALL")]
        return r.stdout, [x for x in calls if any(s in x for s in ("sys_time", "clock_gettime", "gettimeofday",
                                                                     "localtime", "zoneinfo"))]

    out, clock = run(mibench._corunner_env("typeset"))
    assert clock == [] and "date 122 1 1 7" in out  # 2022-01-01, a Saturday
    # FIXED_ENV alone (cjpeg's and djpeg's): the clock and the host's zone file are read.
    assert len(run(mibench.FIXED_ENV)[1]) >= 2


def test_given_typesets_environment_then_two_lackey_runs_of_troff_start_alike(tmp_path):
    # The strings typeset's environment adds to the stack are a multiple of 4 bytes: ld.so's
    # strcspn reads past a string's end into AT_RANDOM's bytes otherwise (mibench.CORUNNER_ENV),
    # and the capture's first 30,000 references differed between runs.
    if not shutil.which("troff"):
        pytest.skip("troff not installed (groff-base, scripts/debian-packages.txt)")
    import shlex
    import subprocess

    from tlblab.files import content_digest

    mibench._corunner_inputs(tmp_path)
    # `env -i`: exactly the capture's environment (bash would add PWD, SHLVL and _ to it).
    env = " ".join(shlex.quote(f"{k}={v}") for k, v in mibench._corunner_env("typeset").items())
    cmd = (f"env -i {env} setarch -R valgrind --tool=lackey --trace-mem=yes --log-fd=3 troff -man -Tutf8 "
           "small.man 3>&1 1>/dev/null 2>/dev/null | grep -E '^(I | L | S | M )' | head -30000")
    # Valgrind adds the client's PWD to its environment, so the folder's name is on the stack too:
    # the runs are made where the capture runs, in the fixed folder of a cache entry of the real
    # entries' length. In pytest's tmp_path, whose name's length varies, two runs differed in a
    # fresh clone's CI (2026-12-01, /tmp/pytest-of-root/pytest-2/test_given_typesets_environmen1).
    entry = Path(f"bg-typeset-{'0' * len(content_digest(b''))}.tlbt")
    with mibench._fixed_folder(entry, mibench._corunner_files(tmp_path)) as d:
        runs = [subprocess.run(["bash", "-c", cmd], cwd=d, capture_output=True, text=True).stdout
                for _ in range(2)]
    assert len(runs[0].splitlines()) == 30_000 and runs[0] == runs[1]
