"""tlblab's Valgrind tool (runtime/valgrind/) against Lackey, and what only it can do.

Question: does `tlblab trace record` (tlblab's tool) give the same reference stream as
`--tool lackey` for the same run, and do its regions of interest, instruction windows, threads
and failure paths behave as docs/traces.md says?

Both tools run with the same VALGRIND_LIB (the runtime's build/runtime/valgrind), so the program
sees the same environment and stack addresses under both. Two Lackey runs of a dynamically
linked program still differ in a couple of stack addresses (the kernel's AT_RANDOM bytes reach
the loader's string handling), so exact sequences are asserted for a static program that uses
no libc, and for the dynamic ones: equal counts, equal kinds and sizes in order, equal page
sets, and addresses equal at all but a handful of positions.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tlblab import trace

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "tlblab.cli"]

pytestmark = pytest.mark.skipif(
    shutil.which("valgrind") is None or shutil.which("cc") is None, reason="needs valgrind and cc"
)

# A static program with no libc: nothing in it depends on the environment's random bytes, so
# two runs under Valgrind are identical reference for reference. No data address repeats, so a
# window of its trace is found at one place only in the whole.
NOLIBC = r"""
static unsigned long data[8192];
void _start(void) {
    unsigned long s = 0;
    for (int r = 0; r < 3; r++)
        for (int i = r; i < 8192; i += 7) { data[i] += (unsigned long)i * r; s += data[i]; }
    __asm__ volatile("syscall" :: "a"(60), "D"(s == 12345));  /* exit(0) */
    __builtin_unreachable();
}
"""

THREADS = r"""
#include <pthread.h>
static unsigned char a[2][16 * 4096];
static void *work(void *p) {
    unsigned char *m = p;
    for (int i = 0; i < 16; i++) m[i * 4096] = 1;
    return 0;
}
int main(void) {
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], 0, work, a[i]);
    for (int i = 0; i < 2; i++) pthread_join(t[i], 0);
    return 0;
}
"""

CRASH = r"""
int main(void) { volatile int *p = 0; *p = 1; return 0; }
"""


def _cc(tmp: Path, name: str, src: str, *flags: str) -> str:
    c = tmp / f"{name}.c"
    c.write_text(src)
    exe = tmp / name
    subprocess.run(["cc", "-O1", "-o", str(exe), str(c), *flags], check=True)
    return str(exe)


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vgtool")
    small_dir = tmp / "dir"
    small_dir.mkdir()
    for n in ("a", "bb", "ccc"):
        (small_dir / n).write_text(n)
    return {
        "nolibc": [_cc(tmp, "nolibc", NOLIBC, "-static", "-nostdlib", "-fno-stack-protector", "-fno-pie", "-no-pie")],
        "roi": [_cc(tmp, "roi", (REPO / "runtime/tests/vgtool_roi_program.c").read_text(), f"-I{REPO}/runtime/include")],
        "threads": [_cc(tmp, "threads", THREADS, "-pthread")],
        "crash": [_cc(tmp, "crash", CRASH)],
        "true": ["/bin/true"],
        "ls": ["ls", str(small_dir)],
    }


def _accesses(path) -> list[tuple[str, int, int]]:
    n = trace.info(path)["records"]
    return [(r["kind"], r["vaddr"], r["size"]) for r in trace.records(path, n) if "kind" in r]


def _capture(argv, out, **kw):
    return trace.record(argv, out, stdout=os.devnull, **kw)


def test_given_a_static_program_when_captured_by_both_tools_then_the_sequences_are_identical(programs, tmp_path):
    ours, lackey = tmp_path / "ours.tlbt", tmp_path / "lackey.tlbt"
    _capture(programs["nolibc"], ours)
    _capture(programs["nolibc"], lackey, tool="lackey")
    a, b = _accesses(ours), _accesses(lackey)
    assert len(a) > 10_000
    assert a == b


def test_given_lackey_with_system_calls_then_the_same_references_and_each_call_at_its_place(programs, tmp_path):
    # The no-libc program makes one system call, its exit, after every reference: traced in the
    # same run (seed 004's x86 captures), it comes after all the memory lines, and the
    # references are those of a capture without the calls.
    plain, traced = tmp_path / "plain.tlbt", tmp_path / "traced.tlbt"
    _capture(programs["nolibc"], plain, tool="lackey")
    rep = _capture(programs["nolibc"], traced, tool="lackey", trace_syscalls=True)
    assert _accesses(traced) == _accesses(plain)
    [(at, line)] = rep["syscalls"]
    assert line.startswith("SYSCALL[") and "](60) exit(" in line
    assert at == rep["memory_lines"] > 10_000
    assert _capture(programs["nolibc"], tmp_path / "p2.tlbt", tool="lackey")["syscalls"] is None


@pytest.mark.parametrize("name", ["true", "ls", "roi"])
def test_given_a_dynamic_program_when_captured_by_both_tools_then_counts_pages_and_order_agree(programs, name, tmp_path):
    ours, lackey = tmp_path / "ours.tlbt", tmp_path / "lackey.tlbt"
    _capture(programs[name], ours)
    _capture(programs[name], lackey, tool="lackey")
    a, b = _accesses(ours), _accesses(lackey)
    assert Counter(k for k, _, _ in a) == Counter(k for k, _, _ in b)
    assert [(k, s) for k, _, s in a] == [(k, s) for k, _, s in b]
    assert {v >> 12 for _, v, _ in a} == {v >> 12 for _, v, _ in b}
    differ = sum(x != y for x, y in zip(a, b))
    assert differ <= 8, f"{differ} of {len(a)} addresses differ"


def test_given_roi_marks_when_captured_roi_only_then_only_the_region_is_traced(programs, tmp_path):
    full, roi = tmp_path / "full.tlbt", tmp_path / "roi.tlbt"
    _capture(programs["roi"], full)
    _capture(programs["roi"], roi, roi_only=True)
    n = trace.info(full)["records"]
    recs = trace.records(full, n)
    begin = next(i for i, r in enumerate(recs) if r.get("event") == "phase_begin")
    end = next(i for i, r in enumerate(recs) if r.get("event") == "phase_end")
    inside = [(r["kind"], r["vaddr"], r["size"]) for r in recs[begin + 1:end]]
    # The region's 64 one-byte stores, one per page, and nothing else but its loop.
    stores = [v for k, v, s in inside if k == "store" and s == 1]
    assert len(stores) == 64 and len({v >> 12 for v in stores}) == 64
    # With --roi-only the trace is exactly the region (the code outside is not instrumented).
    got = trace.records(roi, trace.info(roi)["records"])
    assert got[0].get("event") == "phase_begin" and got[-1].get("event") == "phase_end"
    assert [(r["kind"], r["vaddr"], r["size"]) for r in got[1:-1]] == inside
    d = trace.info(roi)
    assert d["meta"]["regions"] == ["roi"] and d["meta"]["capture"]["roi_only"] is True


def test_given_an_instruction_window_when_captured_then_it_is_a_piece_of_the_full_run(programs, tmp_path):
    full, win = tmp_path / "full.tlbt", tmp_path / "win.tlbt"
    _capture(programs["nolibc"], full)
    rep = _capture(programs["nolibc"], win, skip_instructions=20_000, max_instructions=5_000)
    assert rep["stopped_at_max_instructions"] is True
    a, w = _accesses(full), _accesses(win)
    assert sum(k == "instr" for k, _, _ in w) == 5_000
    # Tracing starts at the first superblock entered after the skipped instructions.
    fetches_before = 0
    for start in range(len(a)):
        if a[start:start + len(w)] == w:
            break
        fetches_before += a[start][0] == "instr"
    else:
        pytest.fail("the window is not a contiguous piece of the full run")
    assert 20_000 <= fetches_before <= 20_000 + 64


def test_given_two_threads_when_captured_then_each_keeps_its_own_id_and_pages(programs, tmp_path):
    out = tmp_path / "threads.tlbt"
    _capture(programs["threads"], out)
    recs = trace.records(out, trace.info(out)["records"])
    started = [r["thread"] for r in recs if r.get("event") == "thread_start"]
    assert started == [1, 2]
    pages_of = {t: {r["vaddr"] >> 12 for r in recs if r.get("kind") == "store" and r["thread"] == t and r["size"] == 1}
                for t in (1, 2)}
    # Each worker's 16 one-byte stores land on its own 16 pages.
    assert len(pages_of[1]) >= 16 and len(pages_of[2]) >= 16
    assert not (pages_of[1] & pages_of[2])


def test_given_a_program_that_crashes_then_its_trace_is_kept_complete_with_the_signal(programs, tmp_path):
    out = tmp_path / "crash.tlbt"
    r = subprocess.run(CLI + ["trace", "record", "--no-progress", "-o", str(out), "--"] + programs["crash"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    d = trace.info(out)
    assert d["complete"] and d["footer"]["signal"] == signal.SIGSEGV
    assert d["accesses"]["store"] > 0


def test_given_bad_options_then_one_line_and_no_file(programs, tmp_path):
    out = tmp_path / "x.tlbt"
    for extra, says in ((["--tool", "lackey", "--roi-only"], "need the tlblab tool"),
                        (["--max-instructions", "0"], "at least 1")):
        r = subprocess.run(CLI + ["trace", "record", "-o", str(out)] + extra + ["--", "/bin/true"],
                           capture_output=True, text=True)
        assert r.returncode != 0 and says in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = subprocess.run(CLI + ["trace", "record", "-o", str(out), "--", "/no/such/program"], capture_output=True, text=True)
    assert r.returncode != 0 and "cannot find program" in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_given_a_file_size_limit_when_the_trace_outgrows_it_then_one_line_and_no_file(programs, tmp_path):
    """A full disk, as far as a test can make one: writes beyond RLIMIT_FSIZE fail (EFBIG; Python
    ignores SIGXFSZ) through the same error path as ENOSPC."""
    import resource

    out = tmp_path / "big.tlbt"
    r = subprocess.run(CLI + ["trace", "record", "--no-progress", "-o", str(out), "--"] + programs["ls"],
                       capture_output=True, text=True, stdin=subprocess.DEVNULL,
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000)))
    assert r.returncode != 0 and str(out) in r.stderr and "File too large" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    assert list(tmp_path.iterdir()) == []


# Two loops inside regions of interest: a pointer chase (each load's address is the value the
# load before it read) and a sum over an array by index (no address comes from a load). A
# static program with no libc, so nothing else is traced and the loop's code is the compiler's.
DEPENDENCE = r"""
#include "tlblab/roi.h"
#define N 4096
static void *chain[N];
static unsigned long data[N];
void _start(void) {
    for (long i = 0; i < N; i++) chain[i] = &chain[(i * 2053 + 1) % N];  /* one cycle */
    void **p = chain[0];
    unsigned long s = 0;
    TLBLAB_ROI_BEGIN();
    for (long i = 0; i < N; i++) p = (void **)*p;
    TLBLAB_ROI_END();
    TLBLAB_ROI_BEGIN();
    for (long i = 0; i < N; i++) s += ((volatile unsigned long *)data)[i];
    TLBLAB_ROI_END();
    /* The chase again with its pointer kept in memory between steps (a spill): stored, then
     * loaded back and followed. */
    void **volatile kept = chain[0];
    TLBLAB_ROI_BEGIN();
    for (long i = 0; i < N; i++) kept = (void **)*kept;
    TLBLAB_ROI_END();
    __asm__ volatile("syscall" :: "a"(60), "D"((p == 0) + (s == 1) + (kept == 0)));  /* exit(0) */
    __builtin_unreachable();
}
"""


def _regions(path) -> list[list[dict]]:
    """The records of each region of interest, in order."""
    n = trace.info(path)["records"]
    regions, inside = [], None
    for r in trace.records(path, n):
        if r.get("event") == "phase_begin":
            inside = []
        elif r.get("event") == "phase_end":
            regions.append(inside)
            inside = None
        elif inside is not None:
            inside.append(r)
    return regions


def test_given_dependence_then_a_chase_depends_on_its_last_load_even_through_memory_and_a_sum_on_none(tmp_path):
    exe = _cc(tmp_path, "dep", DEPENDENCE, f"-I{REPO}/runtime/include", "-static", "-nostdlib",
              "-fno-stack-protector", "-fno-pie", "-no-pie")
    out, plain = tmp_path / "dep.tlbt", tmp_path / "plain.tlbt"
    _capture([exe], out, roi_only=True, dependence=True)
    assert trace.info(out)["meta"]["capture"]["dependence"] is True
    chase, walk, spilled = _regions(out)
    # The program's own loads (the region's marks are client requests, which load from the
    # stack, far above the static arrays).
    ours = lambda r: r.get("kind") == "load" and r["vaddr"] < 1 << 32
    loads = [i for i, r in enumerate(chase) if ours(r)]
    assert len(loads) == 4096
    # Every load but the first comes right after a depends event naming the load before it:
    # back counts the thread's references between them (the loop's fetches and the load).
    backs = []
    for k, i in enumerate(loads):
        before = chase[i - 1]
        if k == 0:
            continue
        assert before.get("event") == "depends", (k, before)
        refs_between = sum(1 for r in chase[loads[k - 1]:i] if "kind" in r)
        assert before["back"] == refs_between, (k, before, refs_between)
        backs.append(before["back"])
    assert len(set(backs)) == 1 and backs[0] >= 2  # the loop's instructions are fetched between
    # The indexed sum: 4096 loads, none depending on a load.
    assert sum(1 for r in walk if ours(r)) == 4096
    assert not any(r.get("event") == "depends" for r in walk)
    # Through memory: each step loads the kept pointer back (a store-to-load forward of the
    # last step's value) and follows it; the chain's load depends on the chain's load before
    # it, not on the reload.
    chain_loads = [i for i, r in enumerate(spilled) if ours(r)]
    assert len(chain_loads) == 4096
    for k in range(1, len(chain_loads)):
        i, before = chain_loads[k], spilled[chain_loads[k] - 1]
        assert before.get("event") == "depends", (k, before)
        refs_between = sum(1 for r in spilled[chain_loads[k - 1]:i] if "kind" in r)
        assert before["back"] == refs_between, (k, before, refs_between)
    # Without the option the references are the same and no event is added.
    _capture([exe], plain, roi_only=True)
    strip = lambda rs: [(r["kind"], r["vaddr"], r["size"]) for rs_ in rs for r in rs_ if "kind" in r]
    assert strip(_regions(plain)) == strip([chase, walk, spilled])
    assert not any(r.get("event") == "depends" for rs in _regions(plain) for r in rs)


def test_given_dependence_with_lackey_or_a_skip_then_one_clear_error(programs, tmp_path):
    out = tmp_path / "x.tlbt"
    r = subprocess.run([*CLI, "trace", "record", "--tool", "lackey", "--dependence", "-o", str(out), "--", "/bin/true"],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "--dependence" in r.stderr and "Traceback" not in r.stderr, r.stderr
    r = subprocess.run([*CLI, "trace", "record", "--dependence", "--skip-instructions", "10", "-o", str(out), "--",
                        "/bin/true"], capture_output=True, text=True)
    assert r.returncode != 0 and "--skip-instructions" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not out.exists()


# Branches on loaded values: one that a per-branch counter cannot predict (the low bit of a
# random word), one that it can (every word is below the bound). The loads are indexed, so only
# the branches can make a later reference wait for them.
BRANCHES = r"""
#include "tlblab/roi.h"
#define N 4096
static unsigned long data[N];
void _start(void) {
    unsigned long x = 88172645463325252ul, s = 0;
    for (long i = 0; i < N; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; data[i] = x >> 1; }
    TLBLAB_ROI_BEGIN();
    for (long i = 0; i < N; i++)
        if (((volatile unsigned long *)data)[i] & 1) s += i; else s ^= i;
    TLBLAB_ROI_END();
    TLBLAB_ROI_BEGIN();
    for (long i = 0; i < N; i++)
        if (((volatile unsigned long *)data)[i] < (1ul << 63)) s += i; else s ^= i;
    TLBLAB_ROI_END();
    __asm__ volatile("syscall" :: "a"(60), "D"(s == 1));  /* exit(0) */
    __builtin_unreachable();
}
"""


def test_given_dependence_then_a_mispredicted_branch_makes_the_next_fetch_wait_for_its_load(tmp_path):
    exe = _cc(tmp_path, "br", BRANCHES, f"-I{REPO}/runtime/include", "-static", "-nostdlib",
              "-fno-stack-protector", "-fno-pie", "-no-pie", "-fno-if-conversion", "-fno-if-conversion2")
    out = tmp_path / "br.tlbt"
    _capture([exe], out, roi_only=True, dependence=True)
    random_bits, always = _regions(out)

    def waits(region):
        """Fetches right after a depends event, each naming a load of `data` by its distance."""
        n = 0
        for k in range(1, len(region)):
            before, r = region[k - 1], region[k]
            if before.get("event") == "depends" and r.get("kind") == "instr":
                named = [x for x in region[:k] if "kind" in x][-before["back"]]
                assert named["kind"] == "load" and named["vaddr"] < 1 << 32, (k, named)
                n += 1
        return n

    # Half the random bits change the branch's way, and the counter mispredicts about half of
    # them or more; the predictable branch is learnt within its first few iterations.
    assert waits(random_bits) > 4096 // 4, waits(random_bits)
    assert waits(always) < 16, waits(always)
