"""`tlblab host predict`: real programs on mosaics of 4 KiB / 2 MiB pages, measured on this host and
predicted by the model side by side (docs/host-predict.md).

The method follows Mosmodel (Agbarya et al., "Predicting Execution Times With Partial Simulations in
Virtual Memory Research: Why and How", MICRO 2020): each program's memory comes from the mosaic
allocator (`libtlblab_mosaic.so`, runtime/include/tlblab/mosaic.h), whose layout file backs windows
of its heap pool with 2 MiB pages and the rest with 4 KiB pages. The 2 MiB pages are transparent
huge pages (`backing="thp"`, the default) or, as Mosalloc's, the kernel's reserved hugetlb pages
(`backing="hugetlb"`: `hugetlb_reserved` reserves them as root for the measured runs and gives the
kernel its pool size back after); the simulation is the same either way. Per program:

1. **Captured once**, under tlblab's Valgrind tool, region of interest only, with the all-4 KiB layout
   and two rounds of its measured phase (`runtime/bench/hostpredict/hp_common.h`: rounds are equal
   work); the capture's allocator report gives the pool's base address in the trace.
2. **Measured**: every mosaic, `reps` times, the mosaics interleaved (round-robin, rotated each
   repetition), pinned to one CPU and, as root, SCHED_FIFO there (`isolation`); a run's time is the
   CPU time of its rounds after the first (`run_seconds`); each run's allocator report must say the mosaic happened
   (`/proc/self/smaps`: the 2 MiB windows' resident memory in huge pages, no huge page elsewhere),
   else the run is not counted and the row says so.
3. **Simulated**: the capture on the machine file of this host (`tlblab probe --out`, the host
   tools' cached probe), each mosaic's 2 MiB windows announced as mappings of that page size
   before the trace's first record; the first round is the warm-up, the second is measured.
4. **Predicted**: one measured point per program, the all-4 KiB median m4; every other mosaic is
   m4 * runtime_cycles(mosaic) / runtime_cycles(4k), i.e. m4 + (r(mosaic) - r(4k)) / f_eff with
   f_eff = r(4k) / m4, the simulated cycles per measured second of that one run; runtime_cycles
   (`runtime_cycles`) are the simulated cycles without the L1 caches' hits, which an out-of-order
   core pipelines (Karkhanis and Smith, "A First-Order Superscalar Processor Model", ISCA 2004:
   the time is a steady state plus the miss events' penalties). Also reported, the
   clock model: m4 + rounds * (cycles(mosaic) - cycles(4k)) / f, f the machine file's clock
   (`frequency_mhz`, the probe's estimate); the engine's in-order sum of latencies counts every miss
   in full, where an out-of-order core overlaps independent ones, so its cycle differences are
   too large by about the factor m4 * f / (rounds * cycles(4k)) (measured: docs/host-predict.md).
   Nothing is fitted to the runs predicted.
5. **The peers' baseline**: Mosmodel §3's linear model, runtime = a + b * (page-walk cycles),
   fitted on the all-4 KiB and all-2 MiB runs (measured medians) and applied to the mixed mosaics;
   the walk cycles are the simulated ones (this host has no PMU to count them).

Errors are as % of the all-4 KiB runtime: (predicted - measured) / measured_4k.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import statistics
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from tlblab import files, paths
from tlblab.errors import UserError
from tlblab.host import _runtime
from tlblab.host.sim_cache import _engine_digest, simulate  # noqa: F401 (_engine_digest: callers' check)

MIB = 1 << 20
HUGE = 2 * MIB
THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")
#: The kernel's pool of 2 MiB hugetlb pages (Documentation/admin-guide/mm/hugetlbpage.rst).
HUGETLB_2M = Path("/sys/kernel/mm/hugepages/hugepages-2048kB")
#: How the mosaics' 2 MiB windows get their pages (the layout's backing word, tlblab/mosaic.h).
BACKINGS = ("thp", "hugetlb")


@dataclass(frozen=True)
class Program:
    """A program of the suite: its executable under build/runtime/hostpredict, its arguments for
    the measured runs (the last is ROUNDS), and what it is."""

    name: str
    args: tuple[str, ...]
    quick_args: tuple[str, ...]
    tiny_args: tuple[str, ...]
    heap: str
    what: str

    def argv(self, size: str, rounds: int | None = None) -> list[str]:
        a = list({"full": self.args, "quick": self.quick_args, "tiny": self.tiny_args}[size])
        if rounds is not None:
            a[-1] = str(rounds)
        exe = _runtime.executable(f"hostpredict/{self.name}")
        return [str(exe), *a]

    def rounds(self, size: str) -> int:
        return int({"full": self.args, "quick": self.quick_args, "tiny": self.tiny_args}[size][-1])


PROGRAMS: dict[str, Program] = {p.name: p for p in (
    Program("hashjoin", ("16M", "256k", "10"), ("8M", "128k", "6"), ("256k", "16k", "2"), "1G",
            "the probe phase of a chained hash join (Blanas et al., SIGMOD 2011), written in the project"),
    Program("bfs", ("18", "16", "8"), ("16", "16", "6"), ("12", "8", "2"), "1G",
            "top-down BFS on an R-MAT graph in CSR (Graph500 kernel 2, GAPBS bfs), written in the project"),
    Program("gups", ("27", "1M", "10"), ("26", "512k", "6"), ("20", "64k", "2"), "2G",
            "HPCC RandomAccess (GUPS), written in the project"),
    Program("kvstore", ("23", "1M", "10"), ("22", "512k", "6"), ("16", "64k", "2"), "1G",
            "a key-value store's open-addressing table under 90% GETs, 10% PUTs (YCSB B, uniform), written in the project"),
    Program("spmv", ("4M", "4", "6"), ("2M", "4", "4"), ("64k", "4", "2"), "1G",
            "sparse matrix-vector product in CSR, random columns (a power iteration), written in the project"),
    Program("pagerank", ("21", "4", "6"), ("20", "4", "4"), ("14", "4", "2"), "1G",
            "pull PageRank on an R-MAT graph (GAPBS pr), written in the project"),
    Program("radixsort", ("4M", "2", "6"), ("2M", "2", "4"), ("64k", "2", "2"), "1G",
            "LSD radix sort, 12-bit digits (Satish et al., SIGMOD 2010), written in the project"),
    Program("canneal", ("4M", "400k", "6"), ("2M", "200k", "6"), ("64k", "8k", "2"), "1G",
            "simulated annealing of a netlist's placement after PARSEC's canneal, written in the project"),
)}
MOSAICS = ("4k", "2m", "first-half", "second-half", "first-quarter", "alt-quarters", "three-quarters",
           "middle-half")
QUICK_MOSAICS = ("4k", "2m", "first-half")
QUICK_PROGRAMS = ("hashjoin", "kvstore")


def windows(mosaic: str, used: int, pool: int) -> list[tuple[int, int]]:
    """The 2 MiB windows of `mosaic` as [start, end) pool offsets, over the `used` bytes of the
    heap pool (the allocator's high-water mark, the same in every run), cut at 2 MiB."""
    def at(frac: float) -> int:
        return min(pool, int(used * frac) // HUGE * HUGE)

    spans = {
        "4k": [],
        "2m": [(0, pool)],
        "first-half": [(0, at(0.5))],
        "second-half": [(at(0.5), pool)],
        "first-quarter": [(0, at(0.25))],
        "alt-quarters": [(0, at(0.25)), (at(0.5), at(0.75))],
        "three-quarters": [(0, at(0.75))],
        "middle-half": [(at(0.25), at(0.75))],
    }
    if mosaic not in spans:
        raise UserError(f"--mosaics: expected some of {', '.join(MOSAICS)}, found '{mosaic}'")
    return [(s, e) for s, e in spans[mosaic] if e > s]


def layout_text(program: Program, wins: list[tuple[int, int]], backing: str = "thp") -> str:
    """The allocator's layout file: the heap pool, and `wins` in 2 MiB pages of `backing` (thp:
    the layout's default, written as before; hugetlb: `window ... 2M hugetlb`)."""
    word = " hugetlb" if backing == "hugetlb" else ""
    lines = [f"# tlblab host predict: {program.name}", f"pool heap {program.heap}"]
    lines += [f"window heap {s:#x} {e:#x} 2M{word}" for s, e in wins]
    return "\n".join(lines) + "\n"


def used_windows(wins: list[tuple[int, int]], used: int) -> list[tuple[int, int]]:
    """`wins` cut at the heap's used size rounded up to 2 MiB: the hugetlb windows. The kernel
    reserves a hugetlb window's pages when it is mapped, all of them, where a THP window takes pages
    only as they are touched; past the used size nothing is touched (the allocator's high-water
    mark is the same in every run, and `run_counts` checks it), so the cut windows back every byte
    the program touches as the whole ones would, and reserve no page it never touches."""
    top = -(-used // HUGE) * HUGE
    return [(s, min(e, top)) for s, e in wins if s < top]


def hugetlb_pages(wins: list[tuple[int, int]]) -> int:
    """The 2 MiB pages a layout of hugetlb windows `wins` reserves when it is mapped."""
    return sum((e - s) // HUGE for s, e in wins)


def _sysfs_int(path: Path) -> int:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError) as e:
        raise UserError(f"--backing hugetlb: {path}: expected a number, found {e}") from None


@contextmanager
def hugetlb_reserved(pages: int, say=None, pool: Path | None = None) -> Iterator[dict[str, int]]:
    """At least `pages` 2 MiB hugetlb pages free for new mappings (free_hugepages less those
    resv_hugepages holds for other mappings) while the block runs; as root, the kernel's pool
    (`pool`/nr_hugepages, HUGETLB_2M's by default) is grown to have them and set back to its old
    size afterwards, whatever happens inside. Refuses with a UserError when the pages are not free
    and this is not root, or when the kernel cannot reserve them (its memory too fragmented for
    2 MiB blocks). Yields what it did: {"pages", "nr_before", "nr_during"}."""
    say = say or (lambda s: None)
    d = pool or HUGETLB_2M
    if not d.is_dir():
        raise UserError(f"--backing hugetlb: {d}: not found: this kernel has no pool of 2 MiB hugetlb pages")
    nr = _sysfs_int(d / "nr_hugepages")
    avail = _sysfs_int(d / "free_hugepages") - _sysfs_int(d / "resv_hugepages")
    if avail >= pages:
        say(f"hugetlb: {pages} pages of 2 MiB needed, {avail} free already (nr_hugepages {nr}): none reserved")
        yield {"pages": pages, "nr_before": nr, "nr_during": nr}
        return
    if os.geteuid() != 0:
        raise UserError(f"--backing hugetlb: the runs need {pages} free 2 MiB hugetlb pages and {d} has {avail}; "
                        f"reserving them needs root (as root: echo {nr + pages - avail} > {d / 'nr_hugepages'})")
    target = nr + pages - avail
    try:
        try:
            (d / "nr_hugepages").write_text(f"{target}\n")
        except OSError as e:
            raise UserError(f"--backing hugetlb: cannot write {d / 'nr_hugepages'}: {e.strerror}") from None
        got = _sysfs_int(d / "nr_hugepages")
        now = _sysfs_int(d / "free_hugepages") - _sysfs_int(d / "resv_hugepages")
        if now < pages:
            raise UserError(f"--backing hugetlb: asked the kernel for {target} pages of 2 MiB (nr_hugepages {nr} -> "
                            f"{target}) to have {pages} free, it reserved {got} and has {now} free: its memory is too "
                            "fragmented for 2 MiB blocks (echo 1 > /proc/sys/vm/compact_memory may help; or reserve "
                            "them at boot, hugepages=N)")
        say(f"hugetlb: reserved {pages} pages of 2 MiB for the runs (nr_hugepages {nr} -> {got})")
        yield {"pages": pages, "nr_before": nr, "nr_during": got}
    finally:
        try:
            (d / "nr_hugepages").write_text(f"{nr}\n")
            say(f"hugetlb: nr_hugepages set back to {nr}")
        except OSError as e:
            say(f"hugetlb: could not set nr_hugepages back to {nr} ({e.strerror}): set it by hand")


def _size_bytes(text: str) -> int:
    return int(text[:-1]) << {"K": 10, "M": 20, "G": 30}[text[-1]]


def check_host(backing: str = "thp") -> None:
    """THP must be able to back a window: `madvise` or `always`; hugetlb windows need the kernel's
    pool of 2 MiB pages (its pages are reserved later, `hugetlb_reserved`)."""
    if backing not in BACKINGS:
        raise UserError(f"--backing: expected thp or hugetlb, found '{backing}'")
    if backing == "hugetlb":
        if not HUGETLB_2M.is_dir():
            raise UserError(f"--backing hugetlb: {HUGETLB_2M}: not found: this kernel has no pool of 2 MiB hugetlb "
                            "pages")
        return
    try:
        mode = THP.read_text()
    except OSError:
        raise UserError(f"{THP}: not readable: this kernel has no transparent huge pages, so no mosaic "
                        "can happen") from None
    if "[never]" in mode:
        raise UserError(f"{THP}: expected madvise or always, found never: no 2 MiB window can happen "
                        "(as root: echo madvise > that file)")


@dataclass
class Run:
    seconds: float | None
    ok: bool
    report: dict[str, Any]
    load: float
    wall_s: float = 0.0
    cpu_s: float = 0.0
    rounds: tuple[float, ...] = ()


# SCHED_FIFO priority of a measured run: above every normal task, so the scheduler moves them to the
# other CPU while it runs; below the kernel's own real-time threads (watchdogs at 99).
FIFO_PRIORITY = 50


def isolation() -> str:
    """How a measured run is isolated: "fifo" (root: SCHED_FIFO on its pinned CPU; the kernel's fair
    server still gives that CPU's normal tasks up to 50 ms a second, which the CPU-time clock leaves
    out), "boost" (root without SCHED_FIFO: own autogroup at nice -20) or "pinned" (taskset only)."""
    if os.geteuid() != 0:
        return "pinned"
    try:
        os.sched_get_priority_max(os.SCHED_FIFO)
    except (AttributeError, OSError):
        return "boost"
    return "fifo"


ISOLATION_TEXT = {
    "fifo": f"SCHED_FIFO priority {FIFO_PRIORITY}, pinned: the CPU's normal tasks move to the other CPUs",
    "boost": "pinned, own autogroup at nice -20 (SCHED_FIFO refused)",
    "pinned": "pinned only (not root: no SCHED_FIFO, no boost)",
}


def _isolated(cpu: int, how: str):
    """The child's set-up before exec (`isolation`)."""
    def setup() -> None:
        os.sched_setaffinity(0, {cpu})
        if how == "fifo":
            try:
                os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(FIFO_PRIORITY))
                return
            except OSError:
                pass  # RT refused (a container's limit): fall back to the boost
        if how in ("fifo", "boost"):
            os.setsid()
            try:
                with open("/proc/self/autogroup", "w") as f:
                    f.write("-20")
            except OSError:
                pass
            os.setpriority(os.PRIO_PROCESS, 0, -20)
    return setup


def parse_output(name: str, stdout: str) -> tuple[float, float, list[float]]:
    """A program's `roi_seconds=W roi_cpu_seconds=C ... round_cpu_seconds=r1,r2,...` line."""
    kv = dict(tok.split("=", 1) for tok in stdout.split() if "=" in tok)
    try:
        rounds = [float(x) for x in kv["round_cpu_seconds"].split(",") if x]
        return float(kv["roi_seconds"]), float(kv["roi_cpu_seconds"]), rounds
    except (KeyError, ValueError):
        raise UserError(f"{name}: expected a line roi_seconds=W roi_cpu_seconds=C ... round_cpu_seconds=..., "
                        f"found: {stdout.strip()[-200:]!r}") from None


def run_seconds(rounds: list[float]) -> float:
    """A run's measured ROI seconds: len(rounds) x the median CPU seconds of the rounds after the
    first. The model simulates the second of two captured rounds (the first is its warm-up), so the
    rounds after the first are what it predicts; their median is not moved by a burst of the other
    CPU's work (L3 and DRAM contention) in one of them. A one-round run is its own time."""
    if not rounds:
        raise UserError("a run reported no rounds")
    rest = rounds[1:] or rounds
    return len(rounds) * statistics.median(rest)


def quiet_seconds(runs: list[tuple[float, ...]]) -> float | None:
    """A mosaic's ROI seconds in the host's quiet phases: len(rounds) x the lower quartile of the
    rounds after the first, pooled over its runs. Some hosts slow a memory-bound program's rounds
    by 20-40% in phases of a few hundred milliseconds that come from outside the guest (measured on
    an AMD EPYC family 25 model 17 guest, 2026-11-30: hashjoin's rounds at about 20 ms, or at 24-28
    ms for several rounds in a row, within one run; a cache-resident input's rounds stay within 2%):
    a run's median then moves with how much of it such a phase covered. Those phases only ever slow
    a round, and nothing in the model has them, so the rounds below the pool's lower quartile are the
    machine the model describes. Reported beside the median (`measured_s`), never instead of it."""
    rest = [r for rounds in runs for r in (rounds[1:] or rounds)]
    if not rest:
        return None
    q1 = statistics.quantiles(rest, n=4, method="inclusive")[0] if len(rest) > 1 else rest[0]
    return len(runs[0]) * q1


def frames_2m_share(report: dict[str, Any]) -> float | None:
    """Distinct 2 MiB physical frames per resident 4 KiB page of a run's heap (the mosaic
    allocator's pagemap statistics: 1/512 when the pages lie in order, near 1 when scattered);
    None without frame numbers (not root)."""
    pm = report.get("pools", {}).get("heap", {}).get("pagemap") or {}
    return pm["frames_2m"] / pm["pfn_pages"] if pm.get("pfn_pages") else None


def run_program(program: Program, layout: Path, report: Path, size: str, cpu: int,
                rounds: int | None = None, how: str | None = None) -> Run:
    """One native run under the mosaic allocator, pinned to `cpu` and isolated (`isolation`)."""
    env = dict(os.environ, TLBLAB_MOSAIC=str(layout), TLBLAB_MOSAIC_REPORT=str(report),
               LD_PRELOAD=str(_runtime.executable("libtlblab_mosaic.so")))
    report.unlink(missing_ok=True)
    load = os.getloadavg()[0]
    p = subprocess.run(program.argv(size, rounds), env=env, capture_output=True, text=True,
                       preexec_fn=_isolated(cpu, how or isolation()))
    if p.returncode != 0:
        raise UserError(f"{program.name}: exit status {p.returncode}: {(p.stderr or p.stdout).strip()[-300:]}")
    wall, cpu_s, per_round = parse_output(program.name, p.stdout)
    try:
        rep = json.loads(report.read_text())
    except (OSError, ValueError) as e:
        raise UserError(f"{program.name}: the mosaic allocator wrote no report ({report}: {e})") from None
    return Run(run_seconds(per_round), bool(rep.get("ok")), rep, load, wall, cpu_s, tuple(per_round))


def llc_state(cpu: int) -> float | None:
    """The L3's state just before a run: ns per line of the LLC probe of `tlblab host ptwarm`
    (`ptwarm_bench --probe-only 1`: the median of three reads, on `cpu`, of lines the other CPU
    just wrote, about its private caches' size), or None where there is no other CPU or it failed.
    On a guest whose L3 other tenants' cores share, it reads 12-20 ns while this guest keeps its
    share and 90-125 ns while they take it (docs/probe.md, "The L3's share"): each counted run's
    reading goes into `PROGRAM.rounds.csv` beside its rounds, so that a slow run can be matched
    to the L3's state it ran in."""
    from tlblab.host.ptwarm import run_json

    other = next((c for c in sorted(os.sched_getaffinity(0)) if c != cpu), None)
    if other is None:
        return None
    try:
        got = run_json(_runtime.executable("ptwarm_bench"), ["--probe-only", "1", "--app-cpu", str(cpu),
                                                            "--helper-cpu", str(other)], "the LLC probe")
    except UserError:
        return None
    ns = float(got.get("llc_probe_ns", -1))
    return ns if ns > 0 else None


def capture(program: Program, layout: Path, out: Path, size: str,
            say: Callable[[str], None] | None = None, dependence: bool = False) -> dict[str, Any]:
    """The region of interest of two rounds under tlblab's Valgrind tool, the all-4 KiB layout
    preloaded; returns the allocator's report (the heap pool's base in the trace) with the trace's
    reference count. Cached: a capture is kept beside its report and reused (`say` is told which).
    `dependence`: each load's producer recorded too (`tlblab trace record --dependence`; the
    out-of-order model's capture, kept under its own name)."""
    from tlblab import trace as tt

    stem = f"{program.name}-{size}" + ("-dep" if dependence else "")
    trace, rep = out / f"{stem}.tlbt", out / f"{stem}.capture.json"
    # Kept for the same arguments and the same executable (a rebuilt program is captured again).
    exe_digest = hashlib.sha256(Path(program.argv(size, 2)[0]).read_bytes()).hexdigest()
    if trace.exists() and rep.exists():
        got = json.loads(rep.read_text())
        if got.get("argv") == program.argv(size, 2)[1:] and got.get("executable_sha256") == exe_digest:
            if say:
                say(f"{program.name}: its capture of two rounds is kept from before ({trace})")
            return got
    if say:
        say(f"{program.name}: capturing two rounds of its region of interest under Valgrind"
            + (" with each load's producer" if dependence else "") + " ...")
    report = out / f"{stem}.capture-report.json"
    saved = {k: os.environ.get(k) for k in ("TLBLAB_MOSAIC", "TLBLAB_MOSAIC_REPORT", "LD_PRELOAD")}
    os.environ.update(TLBLAB_MOSAIC=str(layout), TLBLAB_MOSAIC_REPORT=str(report),
                      LD_PRELOAD=str(_runtime.executable("libtlblab_mosaic.so")))
    try:
        info = tt.record(program.argv(size, 2), trace, roi_only=True, stdout=os.devnull, dependence=dependence)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    try:
        alloc = json.loads(report.read_text())
    except (OSError, ValueError) as e:
        raise UserError(f"{program.name}: the capture's mosaic report is missing ({report}: {e})") from None
    got = {"argv": program.argv(size, 2)[1:], "executable_sha256": exe_digest, "report": alloc, "record": info,
           "references": int(tt.info(trace)["records"])}
    files.atomic_write(rep, json.dumps(got, indent=1))
    return got


# The host page size check's program (runtime/bench/hostpredict/pagechase.c): a chase through one
# line of each of 8192 pages (32 MiB), past the L2 DTLB's reach in 4 KiB pages and within the L1
# DTLB's in 2 MiB ones, its lines in the L2 cache. Not one of the programs predicted.
PAGECHASE = Program("pagechase", ("8192", "1M", "1", "8"), ("8192", "1M", "1", "8"), ("8192", "64k", "1", "2"),
                    "256M", "a dependent chase through one line of each of 8192 pages: the host page size check")
# The same over 1024 pages (4 MiB): within the TLBs' reach in 2 MiB pages whatever the host does.
PAGECHASE_SMALL = Program("pagechase", ("1024", "1M", "1", "8"), ("1024", "1M", "1", "8"), ("1024", "64k", "1", "2"),
                          "256M", "the host page size check's chase over 1024 pages")
# 2 MiB guest pages widen the reach when the 8192-page chase costs less than this times the 1024-page
# one: with the reach widened both hit the L1 DTLB (16 and 2 entries) and their lines the L2 cache;
# without it the 8192-page chase walks every step (measured here: 2.8x).
REACH_RATIO_BELOW = 1.5


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def mosaic_happened(run: Run, backing: str, top: int) -> bool:
    """A run counts when its allocator report says the mosaic happened (`ok`: every window got the
    pages it asked for, tlblab/mosaic.h) and, with hugetlb windows cut at `top` (`used_windows`),
    when its heap stayed below the cut: past it the heap is in 4 KiB pages, where the mosaic's
    whole windows would have had 2 MiB ones."""
    if not run.ok:
        return False
    used = int(run.report.get("pools", {}).get("heap", {}).get("used_bytes", 0))
    return backing != "hugetlb" or used <= top


def _is_vm() -> bool:
    try:
        flags = Path("/proc/cpuinfo").read_text().split("flags", 2)[1].split("\n")[0]
    except (OSError, IndexError):
        return False
    return " hypervisor " in f" {flags} "


def pagechase_layouts(work: Path, program: Program = PAGECHASE, backing: str = "thp") -> dict[str, Path]:
    """`program`'s all-4 KiB and all-2 MiB layouts (2 MiB windows of `backing`), written under `work`."""
    pool = _size_bytes(program.heap)
    layouts = {}
    for mo in ("4k", "2m"):
        layouts[mo] = work / f"{program.name}-{mo}.layout"
        files.atomic_write(layouts[mo], layout_text(program, windows(mo, pool, pool), backing))
    return layouts


def pagechase_model(m: dict[str, Any], *, work: Path, size: str, cache: Path | None = None,
                    log=None, program: Program = PAGECHASE, backing: str = "thp"
                    ) -> tuple[dict[str, Path], dict[str, float]]:
    """`pagechase` (or `program`, any program of one heap pool: `stream_study` passes `stream`)
    captured (the all-4 KiB layout) and its all-2 MiB / all-4 KiB cycle ratio on `m` under 4 KiB and
    2 MiB host pages; returns the layouts written (2 MiB windows of `backing`) and the two ratios."""
    say = log or (lambda s: None)
    pool = _size_bytes(program.heap)
    layouts = pagechase_layouts(work, program, backing)
    cap = capture(program, layouts["4k"], work, size, say)
    base = int(cap["report"]["pools"]["heap"]["base"])
    trace = work / f"{program.name}-{size}.tlbt"  # where `capture` wrote it
    warm = cap["references"] // 2
    nested = m.get("virtualization") or _machine_config("zen3-virt")["virtualization"]
    predicted = {}
    for host in ("4KiB", "2MiB"):
        mm = with_host_pages(m, nested, host)
        cyc = {}
        for mo, spans in (("4k", []), ("2m", [(base, pool, 21)])):
            cyc[mo] = runtime_cycles(simulate(mm, trace, spans, warm, cache=cache)[0], mm)
        predicted[host] = cyc["2m"] / cyc["4k"]
    return layouts, predicted


def host_page_check(m: dict[str, Any], *, cpu: int, how: str, reps: int, work: Path, size: str,
                    log=None, cache: Path | None = None, backing: str = "thp",
                    placement: dict[str, Any] | None = None) -> dict[str, Any]:
    """The hypervisor's page size, measured (docs/host-predict.md, "The host page size"): `pagechase`
    over 8192 pages (32 MiB: past the L2 DTLB's reach in 4 KiB pages, within the L1 DTLB's in
    2 MiB ones) and over 1024 pages (4 MiB: within reach either way), both on all-2 MiB guest pages,
    interleaved with the 8192-page chase on all-4 KiB pages. When the host backs the guest's 2 MiB
    pages with 2 MiB or larger pages, the TLB holds 2 MiB translations and the two 2 MiB chases cost
    the same (ratio < REACH_RATIO_BELOW); when it backs them with 4 KiB pages, the TLB holds 4 KiB
    pieces and the 8192-page chase walks every step, only shorter walks. A property of the host, on
    a program that is not among those predicted; no model is involved in the verdict. Beside it,
    the model's all-2 MiB / all-4 KiB cycle ratio of the 8192-page chase on `m` under either host
    page size, against the measured ratio: how well the 2D walk's length is modelled. `backing`:
    the 2 MiB pages' (the runs' hugetlb pages reserved here, `hugetlb_reserved`). The model runs
    after the measurement, with the guest placement of the chase's own all-4 KiB runs where the
    host's was measured (`placement`, as `own_placement` does for the programs): on the Intel guest
    (2026-12-01) the chase's 8,201 pages lay in 4,232 distinct 2 MiB frames while the 1 GiB sample
    read consecutive 0.99, and the model's ratio was 0.974 with the sample's placement, 0.687 with
    the chase's own, against 0.641-0.662 measured (docs/lab/2026-12-01-issue90-intel-host.md, 5)."""
    say = log or (lambda s: None)
    layouts = pagechase_layouts(work, PAGECHASE, backing)
    runs = (("4k", PAGECHASE, "4k"), ("2m", PAGECHASE, "2m"), ("2m-small", PAGECHASE_SMALL, "2m"))
    times: dict[str, list[float]] = {k: [] for k, _, _ in runs}
    pagemaps: list[dict[str, Any]] = []
    pool = _size_bytes(PAGECHASE.heap)
    with (hugetlb_reserved(hugetlb_pages(windows("2m", pool, pool)), say) if backing == "hugetlb"
          else _nothing()):
        for rep in range(reps):
            for key, prog, mo in (runs if rep % 2 == 0 else runs[::-1]):
                r = run_program(prog, layouts[mo], work / f"pagechase-{key}.report.json", size, cpu, how=how)
                if not r.ok:
                    raise UserError(f"pagechase: the {mo} mosaic did not happen (allocator report: "
                                    f"{json.dumps(r.report)[:300]}): the host page size cannot be measured")
                times[key].append(r.seconds or 0.0)
                if key == "4k" and r.report["pools"]["heap"].get("pagemap"):
                    pagemaps.append(r.report["pools"]["heap"]["pagemap"])
    own, own_note = own_placement(m, placement, pagemaps, "pagechase")
    if own_note:
        say(own_note)
    predicted = pagechase_model(own, work=work, size=size, cache=cache, log=say, backing=backing)[1]
    med = {k: statistics.median(v) for k, v in times.items()}
    reach = med["2m"] / med["2m-small"]
    verdict = "2MiB" if reach < REACH_RATIO_BELOW else "4KiB"
    measured = med["2m"] / med["4k"]
    say(f"host page size: 2 MiB guest pages, 8192-page chase / 1024-page chase {reach:.2f} "
        f"(< {REACH_RATIO_BELOW} if they widened the reach): host pages {verdict}; all-2 MiB / all-4 KiB "
        f"{measured:.3f} measured, the model {predicted['4KiB']:.3f} (4 KiB host pages), {predicted['2MiB']:.3f} (2 MiB)")
    return {"host_page_size": verdict, "reach_ratio": reach, "measured_ratio": measured,
            "predicted_ratio": predicted, "times": times, "placement": own_note}


def _machine_config(m):
    from tlblab import machine_config

    return machine_config(m)


def host_machine(machine: str | None, check=None, placement: dict[str, Any] | None = None
                 ) -> tuple[dict[str, Any], str]:
    """The machine the model runs: a preset named by `machine` as it is; else the probed machine
    file of this host (`machine` when it names a file, as `tlblab probe --out` writes one: treated as
    the host tools' own probe; else the host tools' cached probe), with the hypervisor's
    second-stage translation when the CPU reports one (cpuinfo's
    `hypervisor` flag) and the file has none, its host page size from `check` (`host_page_check`,
    called with the machine; measured on this host) or, without one, 4 KiB (what the probe's THP
    reach and `host_page_check` measured on the hosts this ran on: docs/host-predict.md), and the
    guest's placement of its frames from `placement` (`guest_placement.measure`; none: the
    machine file's). Returns the machine and a sentence saying how it was determined."""
    from tlblab.host.geometry import resolve_machine

    if machine is not None and not probe_file(machine):
        return _machine_config(machine), f"machine {machine} as given"
    path = machine if machine is not None else resolve_machine(None)
    m = _machine_config(path)
    how = f"machine file {path} (" + ("given" if machine is not None else "the host tools'") + " probe of this host)"
    if _is_vm():
        nested = m.get("virtualization") or _machine_config("zen3-virt")["virtualization"]
        if placement is not None:
            from tlblab.host import guest_placement

            nested = guest_placement.apply(nested, placement, int(m["memory"]["bytes"]))
            how += ("; the guest's placement: " + json.dumps(nested.get("guest_placement"))
                    + f", guest memory {nested['guest_memory_bytes'] >> 20} MiB ({placement['source']})")
        if check is not None:
            got = check(dict(m, virtualization=nested))
            host = got["host_page_size"]
            how += (f"; a VM (cpuinfo: hypervisor): 2D walks, host pages {host}, measured by pagechase "
                    f"(in 2 MiB guest pages a chase over 8192 pages costs {got['reach_ratio']:.2f}x one over 1024 "
                    f"pages, < {REACH_RATIO_BELOW} if the reach widened; the 8192-page chase's all-2 MiB / all-4 KiB "
                    f"{got['measured_ratio']:.3f} measured, the model's {got['predicted_ratio']['4KiB']:.3f} with "
                    f"4 KiB host pages, {got['predicted_ratio']['2MiB']:.3f} with 2 MiB ones)")
        else:
            host = nested.get("host_page_size", "4KiB")
            how += f"; a VM (cpuinfo: hypervisor): 2D walks, host pages {host} (not measured in this run)"
        m = with_host_pages(m, nested, host)
        if m["memory"].get("placement") == nested.get("guest_placement") and host == "4KiB":
            how += "; the host's frames placed as the guest's (4 KiB host pages: an assumption, with_host_pages)"
    return m, how


def probe_file(machine: str | None) -> bool:
    """Whether `--machine` names a machine file (a probe's `--out`), which `tlblab host predict`
    treats as this host's probe: on a VM the guest's placement and the host page size are measured
    and put in, as for the host tools' cached probe. A preset name is taken as given. (Before
    2026-12-01 a file was taken as given too, so a run with the probe's own file left out the
    guest's placement: docs/lab/2026-12-01-issue90-intel-host.md.)"""
    return machine is not None and machine != "probe" and os.path.isfile(machine)


def own_placement(m: dict[str, Any], placement: dict[str, Any] | None, pagemaps: list[dict[str, Any]],
                  name: str) -> tuple[dict[str, Any], str | None]:
    """The machine a program's mosaics are simulated on: `m` with the guest's placement of that
    program's own all-4 KiB runs (the one measured point the runtime model uses: their allocator
    reports' pagemap, the run with the median number of distinct 2 MiB frames), where the host's
    placement was measured (`placement`, a VM as root) and its runs read their frames; else `m`.
    Why: one 1 GiB sample's placement is not what a program gets. On the Intel guest,
    2026-12-01 08:58 UTC, the sample read consecutive 0.99 (2,136 distinct 2 MiB frames a GiB)
    while the programs' all-4 KiB heaps took 0.03-0.35 distinct frames a page (a sample like it:
    0.008), and the measured all-2 MiB gains were 1.5-5x those of a run whose heaps lay in order;
    with each program's own placement the model's max / median error over that run's 56 rows went
    from 28.9 / 7.5 % to 24.6 / 6.0 % (docs/lab/2026-12-01-issue90-intel-host.md). Nothing is fitted:
    the placement is read from the anchor run's page frames, never from a runtime. Returns the
    machine and a note (None when `m` is kept)."""
    from tlblab.host import guest_placement

    nested = m.get("virtualization")
    if not nested or placement is None or placement.get("placement") is None or not pagemaps:
        return m, None
    pick = sorted(pagemaps, key=lambda pm: int(pm.get("frames_2m") or 0))[len(pagemaps) // 2]
    got = guest_placement.of_run(pick, placement.get("memtotal_bytes") or guest_placement.memory_bytes(),
                                 f"{name}'s median all-4 KiB run")
    if got is None:
        return m, None
    own = guest_placement.apply(nested, got, int(m["memory"]["bytes"]))
    out = with_host_pages(m, own, nested.get("host_page_size", "4KiB"))
    return out, f"{name}: simulated with the guest placement of {got['source']}"


def with_host_pages(m: dict[str, Any], nested: dict[str, Any], host: str) -> dict[str, Any]:
    """`m` with the hypervisor's `nested` translation at host page size `host`. Under 4 KiB host
    pages the host backs every 4 KiB of guest memory with a frame of its own, so even a guest
    2 MiB page is 512 separate host frames to the physically indexed caches; where the guest's
    placement was measured (`guest_placement`), the host's frames are placed by it too: an
    assumption (the host's allocator cannot be seen from inside the guest; a Linux host's free
    lists are taken to scatter as the guest's do), in place of the machine file's `sequential`,
    which made a guest 2 MiB page physically contiguous (docs/host-predict.md, the quiet run's
    bfs). Under 2 MiB host pages the machine file's placement stays."""
    out = dict(m, virtualization=dict(nested, host_page_size=host))
    placed = nested.get("guest_placement")
    if host == "4KiB" and placed is not None:
        out["memory"] = dict(m["memory"], placement=placed)
    return out


def runtime_cycles(stats: dict[str, Any], m: dict[str, Any]) -> int:
    """The simulated cycles that the runtime model scales (module docstring, 4): all of them but
    the L1 caches' hits, instruction fetches and data alike, at the machine's L1 latencies. The
    engine sums every reference's latency in order; an out-of-order core fetches ahead and issues
    the L1 hits' loads under the misses, so their cycles, the same in every mosaic, would only
    dilute the mosaics' differences (Karkhanis and Smith, ISCA 2004: a first-order model is the
    steady state plus the penalties of miss events; an L1 hit is no miss event). Measured here:
    pagechase with 4 chains adds L1 hits a step, and the model's all-2 MiB / all-4 KiB ratio rose
    from 0.59 to 0.66 with them while the host's stayed at 0.56 (docs/host-predict.md). The walks'
    own L1 hits stay: a walk's references are dependent, each waits for the one before."""
    lat = {c["name"]: int(c["latency"]) for c in m["cache"] if int(c["level"]) == 1}
    hits = stats["total"]["data_by_source"]
    return int(stats["cycles"]) - sum(lat.get(name, 0) * hits[i] for i, name in enumerate(stats["sources"])
                                      if i < len(hits))


def _l2_misses(stats: dict[str, Any]) -> int:
    """The last data TLB level's misses (the walks), summed over cores."""
    return int(stats["total"]["walks"])


def _walk_cycles(stats: dict[str, Any]) -> int:
    """The cycles the page walks took: the linear baseline's x (Mosmodel §3's walk-cycle models;
    the TLB-miss models fail where a page size changes the walk's length, not the misses: a
    hypervisor's 4 KiB host pages under 2 MiB guest pages)."""
    return int(stats["total"]["walk_cycles"])


@dataclass
class Row:
    program: str
    mosaic: str
    windows: str
    runs: int
    measured_s: float | None
    spread_s: float | None
    predicted_s: float | None = None
    error_pct: float | None = None
    predicted_clock_s: float | None = None
    error_clock_pct: float | None = None
    linear_s: float | None = None
    linear_error_pct: float | None = None
    sim_cycles: int = 0
    sim_walks: int = 0
    huge_kb: int = 0
    refused_runs: int = 0
    load: float = 0.0
    times: list[float] = field(default_factory=list)
    wall_s: float | None = None
    cpu_share: float | None = None
    sim_ratio: float | None = None
    sim_walk_cycles: int = 0
    frames_2m_share: float | None = None
    sim_runtime_cycles: int = 0
    quiet_s: float | None = None
    quiet_error_pct: float | None = None
    quiet_linear_error_pct: float | None = None

    def public(self) -> dict[str, Any]:
        return {"program": self.program, "mosaic": self.mosaic, "measured_s": self.measured_s,
                "spread_s": self.spread_s, "predicted_s": self.predicted_s, "error_pct": self.error_pct,
                "linear_error_pct": self.linear_error_pct}


COLUMNS = ("program", "mosaic", "windows", "runs", "refused_runs", "measured_s", "spread_s", "predicted_s",
           "error_pct", "predicted_clock_s", "error_clock_pct", "linear_s", "linear_error_pct", "sim_cycles", "sim_walks", "huge_kb", "load",
           "wall_s", "cpu_share", "sim_ratio", "sim_walk_cycles", "frames_2m_share", "sim_runtime_cycles",
           "quiet_s", "quiet_error_pct", "quiet_linear_error_pct")
#: `PROGRAM.rounds.csv`: every counted run's rounds, the raw data of both estimates, with the LLC
#: probe read just before the run (`llc_state`; empty where none could run).
ROUND_COLUMNS = ("program", "mosaic", "rep", "round", "cpu_s", "llc_probe_ns")


def guest_placement_of_host(outdir: Path, say) -> dict[str, Any]:
    """The guest's placement of its frames (`guest_placement.measure`), measured once and kept in
    `outdir`/guest-placement.json: a property of the host that the simulations' cache keys
    contain, so a re-measurement reuses them (delete the file to measure it again)."""
    from tlblab.host import guest_placement

    path = outdir / "guest-placement.json"
    if path.is_file():
        try:
            got = json.loads(path.read_text())
            if isinstance(got, dict) and got.get("placement") and got.get("source"):
                say(f"the guest's placement: kept from {path}: {json.dumps(got['placement'])}")
                return got
        except ValueError:
            pass  # damaged: measured again
    got = guest_placement.measure()
    if got["placement"] is not None:
        files.atomic_write(path, json.dumps(got, indent=1))
        say(f"the guest's placement: measured {json.dumps(got['placement'])} ({got['stats']})")
    else:
        say(f"the guest's placement: not measured ({got['source']}): the machine file's placement kept")
    return got


MODELS = ("in-order", "out-of-order")

# The out-of-order model's constants that the probe does not measure (docs/host-predict.md, "The
# out-of-order model"): the reorder window in references and the instructions issued a cycle,
# Golden Cove's (the Intel guest's core: its 192-entry load buffer and 6-wide allocation, Intel 64
# and IA-32 Architectures Optimization Reference Manual, the Golden Cove microarchitecture), and the
# level-1 data prefetcher: one stream a 4 KiB page for 32 pages, a line of stride either way, 8
# lines ahead (the manual's L2 streamer: "up to 32 streams", one forward and one backward a 4 KiB
# page, "up to 20 lines ahead"; 8 is the most `[cache.prefetch]` takes, and with fills free only
# how far a stream runs ahead moves with it).
OOO_WINDOW = 192
OOO_ISSUE_WIDTH = 6
OOO_STREAMER = {"degree": 8, "window_lines": 1, "streams": 32}


def out_of_order_machine(m: dict[str, Any], miss_slots: int, walkers: int) -> dict[str, Any]:
    """`m` with the out-of-order model: `timing.mlp` with the probe's misses and walks in flight
    (`miss_slots`, `walkers`), the window and width above and the first-order steady state, and the
    streamer on its private level-1 data cache."""
    import copy

    m = copy.deepcopy(m)
    walkers = max(1, min(walkers, miss_slots))
    m["timing"] = dict(m.get("timing", {}), mlp={"miss_slots": miss_slots, "walkers": walkers, "window": OOO_WINDOW,
                                                 "issue_width": OOO_ISSUE_WIDTH, "steady_state": True})
    l1d = [c for c in m["cache"] if c.get("level") == 1 and c.get("kind") == "data" and not c.get("shared")]
    if not l1d:
        raise UserError("--model out-of-order: the machine has no private level-1 data cache for its prefetcher")
    l1d[0]["prefetch"] = dict(OOO_STREAMER)
    return m


def measured_in_flight(cpu: int, quick: bool) -> tuple[int, int, str]:
    """This host's data misses and page walks in flight (`tlblab probe --sections mlp`, under a
    second), rounded to whole slots and walkers, with a note saying so."""
    from tlblab.probe import probe

    r = probe(sections=["mlp"], cpu=cpu, quick=quick).raw["mlp"]
    slots = max(1, min(64, round(r["miss_slots"])))
    walkers = max(1, min(slots, round(r["walkers"])))
    return slots, walkers, (f"out-of-order model: {slots} misses and {walkers} walks in flight (tlblab probe "
                            f"--sections mlp on CPU {cpu}: {r['miss_slots']:.1f} and {r['walkers']:.1f}), window "
                            f"{OOO_WINDOW} references and {OOO_ISSUE_WIDTH} instructions a cycle (not measured), "
                            "the first-order steady state, a stream a 4 KiB page on the L1D (32 streams); the "
                            "captures with each load's producer; runtime = all simulated cycles")


def predict(programs: list[str], mosaics: list[str], *, reps: int = 5, size: str = "full", cpu: int = 1,
            machine: str | None = None, out: str | os.PathLike[str] | None = None,
            tlb_only: bool = False, log=None, simulate_only: bool = False, backing: str = "thp",
            model: str = "in-order") -> dict[str, Any]:
    """Measures and predicts `programs` x `mosaics` (module docstring); writes one CSV per program
    under `out` and returns {"rows": [...], "machine": ..., "notes": [...]}. `simulate_only`:
    captures and simulates (filling the simulation cache, `simulate`) but measures nothing: the
    rows carry the simulated cycles and their ratio to the all-4 KiB ones. `backing`: the 2 MiB
    windows' pages, "thp" or "hugetlb" (each program's pages reserved for its measured runs, as root,
    `hugetlb_reserved`; its windows cut at its used heap, `used_windows`); the simulation is the
    same either way. `model`: "in-order" (the engine's in-order sum, the runtime its cycles without
    the L1 hits) or "out-of-order" (`out_of_order_machine`, the captures with each load's producer,
    the runtime all its cycles)."""
    if model not in MODELS:
        raise UserError(f"--model: expected in-order or out-of-order, found '{model}'")
    ooo = model == "out-of-order"
    if backing not in BACKINGS:
        raise UserError(f"--backing: expected thp or hugetlb, found '{backing}'")
    if not simulate_only:
        check_host(backing)
    if "4k" not in mosaics or len(set(mosaics)) != len(mosaics):
        raise UserError("--mosaics: expected 4k among them (the measured point), each once")
    for name in programs:
        if name not in PROGRAMS:
            raise UserError(f"--programs: expected some of {', '.join(PROGRAMS)}, found '{name}'")
    if cpu not in os.sched_getaffinity(0):
        raise UserError(f"--cpu {cpu}: not a CPU this process may run on (allowed: {sorted(os.sched_getaffinity(0))})")
    how = isolation()
    outdir = Path(out) if out is not None else paths.out("host-predict")
    outdir.mkdir(parents=True, exist_ok=True)
    work = outdir / "work"
    work.mkdir(exist_ok=True)
    cache = outdir / "sim-cache"
    say = log or (lambda s: None)
    page_check: dict[str, Any] = {}

    def check(mm: dict[str, Any]) -> dict[str, Any]:
        page_check.update(host_page_check(mm, cpu=cpu, how=how, reps=max(3, reps), work=work, size=size, log=say,
                                          cache=cache, backing=backing, placement=placement))
        return page_check

    placement = guest_placement_of_host(outdir, say) if (machine is None or probe_file(machine)) and _is_vm() else None
    m, how_machine = host_machine(machine, check=check if size != "tiny" and not simulate_only else None,
                                  placement=placement)
    if simulate_only and size != "tiny" and m.get("virtualization"):
        # The host page check's capture too, so that the measuring run finds it kept (its
        # simulations wait for the chase's own placement, read from its measured runs).
        capture(PAGECHASE, pagechase_layouts(work, PAGECHASE, backing)["4k"], work, size, say)
    if ooo:
        slots, walkers, ooo_note = measured_in_flight(cpu, quick=size != "full")
        m = out_of_order_machine(m, slots, walkers)
    f_hz = float(m["frequency_mhz"]) * 1e6
    rows: list[Row] = []
    notes = [how_machine, f"clock f = {m['frequency_mhz']} MHz (the machine file's frequency_mhz)",
             f"isolation: {how} on CPU {cpu} ({ISOLATION_TEXT[how]}); measured = rounds x the median CPU "
             "seconds of the rounds after the first",
             "2 MiB pages: " + ("the kernel's reserved hugetlb pages (--backing hugetlb), the windows cut at "
                                "each program's used heap" if backing == "hugetlb"
                                else "transparent huge pages (madvise)")]
    if ooo:
        notes.append(ooo_note)
    all_loads: list[float] = []
    for name in programs:
        prog = PROGRAMS[name]
        pool = _size_bytes(prog.heap)
        base_layout = work / f"{name}-4k.layout"
        files.atomic_write(base_layout, layout_text(prog, []))
        cap = capture(prog, base_layout, work, size, say, dependence=ooo)
        used = int(cap["report"]["pools"]["heap"]["used_bytes"])
        base = int(cap["report"]["pools"]["heap"]["base"])
        wins = {mo: windows(mo, used, pool) for mo in mosaics}
        sim_wins = wins  # the simulation's windows: the mosaic's whole, whatever the backing (the same runs)
        top = pool
        if backing == "hugetlb":
            wins = {mo: used_windows(w, used) for mo, w in wins.items()}
            top = -(-used // HUGE) * HUGE
        layouts = {}
        for mo in mosaics:
            layouts[mo] = work / f"{name}-{mo}.layout"
            files.atomic_write(layouts[mo], layout_text(prog, wins[mo], backing))
        times: dict[str, list[float]] = {mo: [] for mo in mosaics}
        walls: dict[str, list[float]] = {mo: [] for mo in mosaics}
        shares: dict[str, list[float]] = {mo: [] for mo in mosaics}
        refused = {mo: 0 for mo in mosaics}
        run_rounds: dict[str, list[tuple[float, ...]]] = {mo: [] for mo in mosaics}
        run_llc: dict[str, list[float | None]] = {mo: [] for mo in mosaics}
        huge = {mo: 0 for mo in mosaics}
        scatter: dict[str, list[float]] = {mo: [] for mo in mosaics}
        anchor_pagemaps: list[dict[str, Any]] = []  # the all-4 KiB runs' own placement (own_placement)
        loads: list[float] = []
        # One run at a time: the pages of the mosaic with the most are all a run needs.
        need = max(hugetlb_pages(w) for w in wins.values())
        with (hugetlb_reserved(need, lambda t: say(f"{name}: {t}")) if backing == "hugetlb" and not simulate_only
              else _nothing()):
            for rep in range(0 if simulate_only else reps):
                order = list(mosaics[rep % len(mosaics):]) + list(mosaics[:rep % len(mosaics)])
                for mo in order:
                    llc = llc_state(cpu)
                    r = run_program(prog, layouts[mo], work / f"{name}-{mo}.report.json", size, cpu, how=how)
                    loads.append(r.load)
                    all_loads.append(r.load)
                    heap = r.report["pools"]["heap"]
                    huge[mo] = int(heap["huge_kb"]) + int(heap.get("hugetlb_kb", 0))
                    share = frames_2m_share(r.report)
                    if share is not None:
                        scatter[mo].append(share)
                    if mosaic_happened(r, backing, top) and r.seconds is not None:
                        if mo == "4k" and heap.get("pagemap"):
                            anchor_pagemaps.append(heap["pagemap"])
                        times[mo].append(r.seconds)
                        run_rounds[mo].append(r.rounds)
                        run_llc[mo].append(llc)
                        walls[mo].append(r.wall_s)
                        shares[mo].append(r.cpu_s / r.wall_s if r.wall_s > 0 else 1.0)
                    else:
                        refused[mo] += 1
                say(f"{name}: repetition {rep + 1}/{reps} of {len(mosaics)} mosaics done (load {loads[-1]:.1f})")
        sims: dict[str, dict[str, Any]] = {}
        trace = work / (f"{name}-{size}" + ("-dep" if ooo else "") + ".tlbt")
        warm = cap["references"] // 2
        # The mosaics' simulations at once, one a CPU: the engine releases the GIL
        # (`_native.simulate_windows`), each is independent of the others and deterministic, so
        # threads give the same numbers in less wall time (the simulations are most of a cold run).
        pm, own_note = own_placement(m, placement, anchor_pagemaps, name)
        if own_note:
            notes.append(own_note)

        def one(mo: str) -> tuple[dict[str, Any], bool]:
            return simulate(pm, trace, [(base + s, e - s, 21) for s, e in sim_wins[mo]], warm, tlb_only=tlb_only,
                            cache=cache, independent=ooo)

        with ThreadPoolExecutor(max_workers=max(1, min(len(mosaics), len(os.sched_getaffinity(0))))) as workers:
            for mo, (sims[mo], kept) in zip(mosaics, workers.map(one, mosaics)):
                say(f"{name}: simulated {mo}: {sims[mo]['cycles']} cycles" + (" (kept in the cache)" if kept else ""))
        rounds = prog.rounds(size)
        med = {mo: statistics.median(t) if t else None for mo, t in times.items()}
        m4 = med["4k"]
        if m4 is None and not simulate_only:
            raise UserError(f"{name}: no all-4 KiB run counted: nothing to predict from")
        c4 = sims["4k"]["cycles"]

        def runtime(st: dict[str, Any]) -> int:
            # In order, the L1 hits are left out (an out-of-order core issues them under its
            # misses); out of order, the model charges them their issue already.
            return int(st["cycles"]) if ooo else runtime_cycles(st, m)

        r4 = runtime(sims["4k"])
        quiet = {mo: quiet_seconds(run_rounds[mo]) for mo in mosaics}
        q4 = quiet["4k"]
        lin = qlin = None
        if "2m" in mosaics and med["2m"] is not None:
            x4, x2 = _walk_cycles(sims["4k"]), _walk_cycles(sims["2m"])
            if x4 != x2:
                b = (m4 - med["2m"]) / (x4 - x2)
                lin = (m4 - b * x4, b)
                if q4 is not None and quiet["2m"] is not None:
                    qb = (q4 - quiet["2m"]) / (x4 - x2)
                    qlin = (q4 - qb * x4, qb)
        for mo in mosaics:
            t = times[mo]
            row = Row(name, mo, " ".join(f"{s // MIB}M-{e // MIB}M" for s, e in wins[mo]) or "-", len(t),
                      med[mo], (max(t) - min(t)) if t else None, refused_runs=refused[mo],
                      sim_cycles=int(sims[mo]["cycles"]), sim_walks=_l2_misses(sims[mo]), huge_kb=huge[mo],
                      load=round(statistics.fmean(loads), 2) if loads else 0.0, times=t,
                      wall_s=statistics.median(walls[mo]) if walls[mo] else None,
                      cpu_share=min(shares[mo]) if shares[mo] else None,
                      frames_2m_share=statistics.median(scatter[mo]) if scatter[mo] else None)
            row.sim_runtime_cycles = runtime(sims[mo])
            row.sim_ratio = row.sim_runtime_cycles / r4
            row.sim_walk_cycles = _walk_cycles(sims[mo])
            if m4 is None:  # simulate_only: nothing measured to predict from
                rows.append(row)
                continue
            row.predicted_s = m4 * row.sim_ratio  # exactly m4 for the 4k row
            row.predicted_clock_s = m4 + rounds * (sims[mo]["cycles"] - c4) / f_hz
            if lin is not None:
                row.linear_s = lin[0] + lin[1] * _walk_cycles(sims[mo])
            row.quiet_s = quiet[mo]
            if q4 is not None and row.quiet_s is not None:
                # The same prediction from the quiet-phase anchor, against the quiet-phase time.
                row.quiet_error_pct = 100 * (q4 * row.sim_ratio - row.quiet_s) / q4
                if qlin is not None:
                    row.quiet_linear_error_pct = 100 * (qlin[0] + qlin[1] * _walk_cycles(sims[mo]) - row.quiet_s) / q4
            if row.measured_s is not None:
                row.error_pct = 100 * (row.predicted_s - row.measured_s) / m4
                row.error_clock_pct = 100 * (row.predicted_clock_s - row.measured_s) / m4
                if row.linear_s is not None:
                    row.linear_error_pct = 100 * (row.linear_s - row.measured_s) / m4
            rows.append(row)
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(COLUMNS)
        for r in rows:
            if r.program == name:
                w.writerow(["" if getattr(r, c) is None else (round(getattr(r, c), 6)
                            if isinstance(getattr(r, c), float) else getattr(r, c)) for c in COLUMNS])
        files.atomic_write(outdir / f"{name}.csv", buf.getvalue())
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(ROUND_COLUMNS)
        for mo in mosaics:
            for rep, rounds in enumerate(run_rounds[mo]):
                llc = run_llc[mo][rep]
                w.writerows([name, mo, rep, i, t, "" if llc is None else round(llc, 1)] for i, t in enumerate(rounds))
        files.atomic_write(outdir / f"{name}.rounds.csv", buf.getvalue())
        if any(refused.values()):
            notes.append(f"{name}: runs whose mosaic did not happen (not counted): "
                         + ", ".join(f"{k} {v}" for k, v in refused.items() if v))
    if all_loads:
        notes.append(f"load (1-minute average, {os.cpu_count()} CPUs) during the runs: "
                     f"{min(all_loads):.1f}-{max(all_loads):.1f}, mean {statistics.fmean(all_loads):.1f}")
    errs = [abs(r.error_pct) for r in rows if r.error_pct is not None and r.mosaic != "4k"]
    lerrs = [abs(r.linear_error_pct) for r in rows if r.linear_error_pct is not None
             and r.mosaic not in ("4k", "2m")]
    qerrs = [abs(r.quiet_error_pct) for r in rows if r.quiet_error_pct is not None and r.mosaic != "4k"]
    qlerrs = [abs(r.quiet_linear_error_pct) for r in rows if r.quiet_linear_error_pct is not None
              and r.mosaic not in ("4k", "2m")]
    summary = {"max_abs_error_pct": max(errs) if errs else None,
               "median_abs_error_pct": statistics.median(errs) if errs else None,
               "linear_max_abs_error_pct": max(lerrs) if lerrs else None,
               "linear_median_abs_error_pct": statistics.median(lerrs) if lerrs else None,
               # The same against the quiet-phase estimate (`quiet_seconds`).
               "quiet_max_abs_error_pct": max(qerrs) if qerrs else None,
               "quiet_median_abs_error_pct": statistics.median(qerrs) if qerrs else None,
               "quiet_linear_max_abs_error_pct": max(qlerrs) if qlerrs else None,
               "quiet_linear_median_abs_error_pct": statistics.median(qlerrs) if qlerrs else None}
    return {"rows": [r.public() for r in rows], "detail": [r.__dict__ for r in rows], "summary": summary,
            "notes": notes, "reps": reps, "size": size, "simulate_only": simulate_only, "model": model,
            "time": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}


def format_table(res: dict[str, Any]) -> str:
    head = f"{'program':<10} {'mosaic':<15} {'measured s':>10} {'spread s':>9} {'predicted s':>11} {'error %':>8} {'linear %':>9}"
    out = [head, "-" * len(head)]

    def f(v, spec):
        return format(v, spec) if v is not None else "-".rjust(len(format(0.0, spec)))

    if res.get("simulate_only"):
        out = [f"{'program':<10} {'mosaic':<15} {'cycles':>14} {'/ all-4 KiB':>11}"]
        out += [f"{d['program']:<10} {d['mosaic']:<15} {d['sim_cycles']:>14} {d['sim_ratio']:>11.4f}"
                for d in res["detail"]]
        return "\n".join(out + [f"note: {n}" for n in res["notes"]])
    for r in res["rows"]:
        out.append(f"{r['program']:<10} {r['mosaic']:<15} {f(r['measured_s'], '10.3f')} {f(r['spread_s'], '9.3f')} "
                   f"{f(r['predicted_s'], '11.3f')} {f(r['error_pct'], '+8.2f')} {f(r['linear_error_pct'], '+9.2f')}")
    s = res["summary"]
    if s["max_abs_error_pct"] is not None:
        out.append(f"model: max |error| {s['max_abs_error_pct']:.2f}%, median {s['median_abs_error_pct']:.2f}% "
                   "of the all-4 KiB runtime")
    if s["linear_max_abs_error_pct"] is not None:
        out.append(f"linear baseline (mixed mosaics): max |error| {s['linear_max_abs_error_pct']:.2f}%, "
                   f"median {s['linear_median_abs_error_pct']:.2f}%")
    if s.get("quiet_max_abs_error_pct") is not None:
        out.append(f"in the host's quiet phases (each mosaic's lower-quartile round, PROGRAM.rounds.csv): model "
                   f"max {s['quiet_max_abs_error_pct']:.2f}%, median {s['quiet_median_abs_error_pct']:.2f}%"
                   + (f"; linear max {s['quiet_linear_max_abs_error_pct']:.2f}%, median "
                      f"{s['quiet_linear_median_abs_error_pct']:.2f}%"
                      if s.get("quiet_linear_max_abs_error_pct") is not None else ""))
    out += [f"note: {n}" for n in res["notes"]]
    return "\n".join(out)


def register(hsub) -> None:
    p = hsub.add_parser(
        "predict",
        help="real programs on mosaics of 4 KiB / 2 MiB pages, measured and predicted side by side",
        description=(__doc__ or "").splitlines()[0])
    p.add_argument("--programs", help=f"comma-separated (default: all: {','.join(PROGRAMS)})")
    p.add_argument("--mosaics", help=f"comma-separated, 4k among them (default: {','.join(MOSAICS)})")
    p.add_argument("--quick", action="store_true",
                   help=f"programs {','.join(QUICK_PROGRAMS)} on smaller inputs, mosaics {','.join(QUICK_MOSAICS)}, 3 repetitions")
    p.add_argument("--reps", type=int, help="runs of each mosaic (default 10; 3 with --quick)")
    p.add_argument("--cpu", type=int, default=1, help="the CPU the runs are pinned to (default 1)")
    p.add_argument("--backing", metavar="thp|hugetlb", default="thp",
                   help="the 2 MiB windows' pages: thp (transparent huge pages, madvise; the default) or hugetlb "
                        "(the kernel's reserved pages, as Mosalloc's: as root, enough are reserved before each "
                        "program's runs and nr_hugepages is set back after); the simulation is the same")
    p.add_argument("--machine", metavar="HOST.toml",
                   help="machine file (tlblab probe --out), treated as this host's probe: on a VM the guest's "
                        "placement and the host page size are measured and put in (default: the host tools' cached "
                        "probe of this host); a preset name is taken as given")
    p.add_argument("--simulate-only", action="store_true",
                   help="capture and simulate every program and mosaic, measure nothing: fills the simulation "
                        "cache (OUT/sim-cache, keyed by trace, machine, windows, warm-up and engine) that a "
                        "measuring run then reuses")
    p.add_argument("--model", metavar="in-order|out-of-order", default="in-order",
                   help="in-order (the default: the engine's in-order sum, the L1 hits left out) or out-of-order "
                        "(the probe's misses and walks in flight, the captures' load dependences, a streamer on "
                        "the L1D: docs/host-predict.md, \"The out-of-order model\")")
    p.add_argument("--tiny", action="store_true", help=argparse_suppress())
    p.add_argument("--out", default=str(paths.out("host-predict")), help="where the CSVs go (default %(default)s)")
    p.add_argument("--json", action="store_true",
                   help='print {"rows": [{program, mosaic, measured_s, spread_s, predicted_s, error_pct, '
                        'linear_error_pct}]}')
    p.set_defaults(func=run)


def argparse_suppress() -> str:
    import argparse

    return argparse.SUPPRESS


def run(args) -> int:
    import sys

    programs = args.programs.split(",") if args.programs else list(QUICK_PROGRAMS if args.quick else PROGRAMS)
    mosaics = args.mosaics.split(",") if args.mosaics else list(QUICK_MOSAICS if args.quick else MOSAICS)
    reps = args.reps if args.reps is not None else (3 if args.quick else 10)
    if not 1 <= reps <= 100:
        raise UserError(f"--reps: expected 1..100, found {reps}")
    size = "tiny" if args.tiny else "quick" if args.quick else "full"
    res = predict(programs, mosaics, reps=reps, size=size, cpu=args.cpu, machine=args.machine, out=args.out,
                  log=lambda s: print(f"tlblab: {s}", file=sys.stderr, flush=True),
                  simulate_only=args.simulate_only, backing=args.backing, model=args.model)
    if args.json:
        print(json.dumps({"rows": res["rows"], "summary": res["summary"], "notes": res["notes"]}))
    else:
        print(format_table(res))
    return 0
