"""Seed 003's periodic tasks as real programs: built, captured under Valgrind, laid out as a
native run with ASLR put them, and replayed under rate-monotonic scheduling.

The program is `runtime/bench/seed003/rt_tasks.c` (with its harness, rt_harness.h and
rt_harness_run.h, which rt_tasks_fig6_13_14.c shares; the Table 6.1 kernels and §6.0.8's page
writes as pthreads of one process, allocating with glibc `malloc` or libtlblab's `tlb_malloc`,
every job between tlblab's region-of-interest marks). Three steps, each cached by content hash
under `out/seed003/`:

1. `build`: the binary, compiled with libtlblab's coloring allocator from the sources (by
   source text, compiler version and flags).
2. `capture`: `tlblab trace record --roi-only` of one run (tlblab's Valgrind tool): every job's
   references, instruction fetches, stack, libc and the heap included (by the binary, its
   arguments and Valgrind's version). The run's set-up is fixed as seed 004's x86 captures'
   (issue 87, `tlblab.trace.fixed_folder`): `./rt_tasks` in a folder named by the cache entry
   under /tmp, the environment `FIXED_ENV`, ASLR off, so that the capture is the same bytes
   from every checkout and on every run (Valgrind's client stack moved with the host's ASLR,
   the folder's path and the environment). Valgrind lays the process out itself, not as a
   native run, so `layouts` also runs the same binary natively `runs` times (in the same
   folder and environment), with the
   kernel's address-space randomization on (as a stock Linux has it) or off (`setarch -R`, as
   the seed had it for its noisy-set procedure, §6.0.6), and keeps where each run put the
   mappings the jobs touch (the program prints an anchor address in each). Those layouts are
   measurements of this host's kernel: cached with the capture, they make later runs repeat
   the same numbers; a clean clone measures new ones.
3. `replay`: the capture's jobs, each address moved from Valgrind's layout to a native run's
   (`relocations`), scheduled by `tlblab_trace::workloads::rt_replay` with the task set's
   phases, periods and execution times, written as a trace that `tlblab simulate` runs. The
   replay adds what the seed's kernel (Linux 2.6.32, x86-64) puts in the 4 KiB L1 DTLB around
   the jobs: the vDSO's page (where the native run put it) and the vsyscall page that
   `gettimeofday` reads after each job, and the local APIC's page that each release's timer
   interrupt writes; with `papi` (on in seed 003's reproductions, `PAPI`) the user side of the
   PAPI_read the seed's tasks made before and after each job (`papi_layout`; the program itself
   calls no PAPI).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tlblab import paths
from tlblab.errors import UserError
from tlblab.files import content_digest, one_maker, tool_version
from tlblab.trace import FIXED_ENV, fixed_folder

# The checkout the sources are read from (`paths.repository`; an installed wheel has none, and
# `build` says so in one line).
ROOT = paths.repository() or Path(__file__).resolve().parents[4]
RUNTIME = ROOT / "runtime"
SOURCE = RUNTIME / "bench" / "seed003" / "rt_tasks.c"
# Figs. 6.13-6.14's pairs are a program of their own, as each of the seed's experiments was (§5
# Alg. 4: main creates that experiment's tasks): their kernels in rt_tasks.c moved the Table 6.1
# program's pages, and with them its noisy sets and its misses.
FIG6_13_14_SOURCE = RUNTIME / "bench" / "seed003" / "rt_tasks_fig6_13_14.c"
LIBRARY_SOURCES = [RUNTIME / "src" / "color" / n for n in ("color.c", "prim_linux.c", "machine.c")]
# What the sources include, in the build's key: libtlblab's headers, the allocator's internal
# header and color.c's included part (color_check.c), the task programs' shared harness and
# Table 6.1 kernels.
HARNESS = [SOURCE.parent / n for n in ("rt_harness.h", "rt_harness_run.h", "rt_kernels_table6_1.h")]
HEADERS = [RUNTIME / "include" / "tlblab" / "color.h", RUNTIME / "include" / "tlblab" / "roi.h",
           *(RUNTIME / "src" / "color" / n for n in ("color_internal.h", "color_check.c")), *HARNESS]
CACHE = paths.cache("seed003")
# Bump when what a capture or a replay holds changes, so old files are not reused.
# (2: run in a fixed folder and environment without ASLR, the audio input by its file name:
# issue 87).
CAPTURE_VERSION = "2"
# Bump when what the replay adds to the jobs changes (2: Linux 2.6.32's vsyscall, vDSO and local
# APIC pages, `tlblab_trace::workloads::rt_replay`; 3: a job is the references of the thread
# whose reference comes first in its region, not of the thread with the most there; Valgrind's
# preload libraries dropped, the loader's heap moved by its anchor).
REPLAY_VERSION = "3"
# The replays' timer tick (issue 87): Linux 2.6.32's local APIC timer interrupt stores through the
# APIC's 4 KiB fixmap page every 1/HZ while a task runs (`rt_replay::Replay::with_tick`), as the
# synthetic task sets' `tick_hz` (experiments.NOISE). HZ = 1000 is the same assumption: Red Hat
# Enterprise Linux 6's 2.6.32 kernels are built with CONFIG_HZ=1000; the seed names no HZ.
TICK_HZ = 1000
# PAPI's reads around every job in the replays (issue 87): the seed counted each job's DTLB misses
# with PAPI (§4.0.3), as the synthetic task sets model it (experiments.NOISE's papi=1,
# rt_noise::PapiRead); the captured program makes no PAPI calls, so the replay adds them
# (rt_replay::Replay::with_papi).
PAPI = True
# glibc's thread arenas are 64 MiB-aligned heaps (HEAP_MAX_SIZE on 64-bit), thread stacks 8 MiB.
HEAP_MAX_SIZE = 64 << 20
STACK_SIZE = 8 << 20
# A relocation's delta that drops the references in its range (tlblab_trace::workloads::rt_replay::DROP).
DROP = -(1 << 63)

CFLAGS = ["-O2", "-std=c11", "-D_GNU_SOURCE", "-pthread", "-Wall", "-Wextra", "-Werror"]
TABLE6_1_KERNELS = ("bubble", "insertion", "nth", "stats", "pages")
KERNELS = (*TABLE6_1_KERNELS, "fft", "adpcm", "fir", "miadpcm")


def source_for(tasks: list["Task"]) -> Path:
    """The program that runs these tasks: rt_tasks.c unless a Fig. 6.13-6.14 kernel is among them."""
    return SOURCE if all(t.kernel in TABLE6_1_KERNELS for t in tasks) else FIG6_13_14_SOURCE


@dataclass(frozen=True)
class Task:
    """One task of a set: the kernel its jobs run, pages allocated and used, its colors (with
    tlb_malloc) and its timing in µs (Table 6.1: phase, period, execution)."""
    kernel: str
    alloc: int
    used: int
    phase_us: int
    period_us: int
    exec_us: int
    colors: tuple[int, ...] = ()

    def arg(self, allocator: str) -> str:
        a = f"{self.kernel}:{self.alloc}:{self.used}"
        return a + ":" + ",".join(map(str, self.colors)) if allocator == "tlb" else a


@dataclass(frozen=True)
class Capture:
    """A capture: the trace of the jobs, Valgrind's anchors, and the program's argv."""
    path: Path
    anchors: dict[str, int]
    argv: tuple[str, ...]
    binary: Path


def _unique(suffix: str) -> str:
    """A temporary file's suffix no other process or thread uses: the study runs reproductions
    on threads of one process, and two of them may build or capture the same thing at once."""
    import threading

    return f"{suffix}-{os.getpid()}-{threading.get_ident()}"


def build(cc: str = "gcc", cache: Path = CACHE, source: Path = SOURCE) -> Path:
    """The program `source` (rt_tasks.c or rt_tasks_fig6_13_14.c), compiled once per (sources,
    compiler, flags)."""
    paths.repository_file("runtime/bench/seed003", "seed 003's task programs (rt_capture)")
    sources = [source, *LIBRARY_SOURCES]
    key = content_digest(*(p.read_bytes() for p in [*sources, *HEADERS]), tool_version([cc, "--version"], "rt tasks"),
                  " ".join(CFLAGS))
    out = Path(cache) / "bin" / key / source.stem
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(_unique(".tmp"))
    cmd = [cc, *CFLAGS, f"-I{RUNTIME / 'include'}", f"-I{RUNTIME / 'src' / 'color'}", "-o", str(tmp),
           *map(str, sources), "-lm"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise UserError(f"rt tasks: compiling {source} failed:\n{r.stderr.strip()}")
    os.replace(tmp, out)
    return out


# The Mi adpcm's input (seed 003 §6.0.10: "operates on actual audio files", 450 kB): real recorded
# speech, the voice prompts of Debian's alsa-utils (48 kHz, 16-bit mono WAV), their samples
# concatenated in this order and cut at 450 KiB of raw PCM.
AUDIO_DIR = Path("/usr/share/sounds/alsa")
AUDIO_FILES = ("Front_Center.wav", "Front_Left.wav", "Front_Right.wav", "Rear_Center.wav")
AUDIO_BYTES = 450 * 1024


def audio_input(cache: Path = CACHE) -> Path:
    """The raw 16-bit PCM file the miadpcm task streams (cached by content)."""
    import wave

    pcm = b""
    for name in AUDIO_FILES:
        path = AUDIO_DIR / name
        if not path.is_file():
            raise UserError(f"rt tasks: {path} is missing: the Mi adpcm task's audio comes from Debian's "
                            "alsa-utils (scripts/debian-packages.txt; `make setup` installs it)")
        try:
            with wave.open(str(path)) as w:
                if w.getsampwidth() != 2 or w.getnchannels() != 1:
                    raise UserError(f"rt tasks: {path}: expected 16-bit mono PCM, found {8 * w.getsampwidth()}-bit "
                                    f"with {w.getnchannels()} channels")
                pcm += w.readframes(w.getnframes())
        except wave.Error as e:
            raise UserError(f"rt tasks: {path}: expected a PCM WAV file: {e}")
    if len(pcm) < AUDIO_BYTES:
        raise UserError(f"rt tasks: the audio files hold {len(pcm)} bytes of PCM, expected at least {AUDIO_BYTES}")
    pcm = pcm[:AUDIO_BYTES]
    out = Path(cache) / "audio" / f"{content_digest(pcm)}.pcm"
    if not out.is_file():
        from tlblab.files import atomic_write

        out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(out, pcm)
    return out


def argv_of(allocator: str, tasks: list[Task], jobs: int, repeat: int, elems: int, seed: int) -> list[str]:
    if allocator not in ("malloc", "tlb"):
        raise UserError(f"rt tasks: allocator must be malloc or tlb, got '{allocator}'")
    for t in tasks:
        if t.kernel not in KERNELS:
            raise UserError(f"rt tasks: unknown kernel '{t.kernel}' (expected one of {', '.join(KERNELS)})")
    # The audio input by its file name: the capture's folder holds a copy (`_inputs`), so the
    # cache's path is in neither the client's argv nor the capture's key.
    audio = [f"audio={audio_input().name}"] if any(t.kernel == "miadpcm" for t in tasks) else []
    return [allocator, str(jobs), str(repeat), str(elems), str(seed), *(t.arg(allocator) for t in tasks), *audio]


def parse_anchors(text: str) -> dict[str, int]:
    """The program's `anchor NAME ADDRESS` lines."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) == 3 and f[0] == "anchor":
            out[f[1]] = int(f[2], 16)
    return out


def _inputs(binary: Path, args: list[str] | tuple[str, ...]) -> tuple[Path, ...]:
    """The files the capture's folder holds: the program and the audio input its argv names."""
    return (binary, *([audio_input()] if any(a.startswith("audio=") for a in args) else []))


def _folder(out: Path) -> str:
    """The name of the fixed folder (`tlblab.trace.fixed_folder`) of capture `out`, where its
    native runs run too."""
    return f"tlblab-rt-{out.stem}"


def capture(allocator: str, tasks: list[Task], *, jobs: int, repeat: int, elems: int = 4, seed: int = 0,
            valgrind: str = "valgrind", cache: Path = CACHE, source: Path | None = None) -> Capture:
    """The --roi-only capture of one run of the task set (cached), by `source` (default: the
    program that runs these tasks, source_for)."""
    from tlblab.trace import record

    binary = build(cache=cache, source=source or source_for(tasks))
    args = argv_of(allocator, tasks, jobs, repeat, elems, seed)
    key = content_digest(binary.read_bytes(), "\0".join(args), tool_version([valgrind, "--version"], "rt tasks"), CAPTURE_VERSION)
    out = Path(cache) / f"rt_tasks-{key}.tlbt"
    side = out.with_suffix(".anchors.txt")
    if out.is_file() and side.is_file():
        return Capture(out, parse_anchors(side.read_text()), tuple(args), binary)
    out.parent.mkdir(parents=True, exist_ok=True)
    with one_maker(out) as missing:  # one process makes the entry (the folder is locked too: fixed_folder)
        if missing or not side.is_file():
            tmp = out.with_suffix(_unique(".part"))
            tmp_side = side.with_suffix(_unique(".part"))
            try:
                with fixed_folder(_folder(out), _inputs(binary, args)) as d:
                    record([f"./{binary.name}", *args], tmp, stdout=tmp_side, roi_only=True, valgrind=valgrind,
                           cwd=d, env=FIXED_ENV, no_aslr=True)
            except ValueError as e:
                tmp.unlink(missing_ok=True)
                tmp_side.unlink(missing_ok=True)
                raise UserError(f"rt tasks: capturing {binary} {' '.join(args)}: {e}")
            except BaseException:
                tmp.unlink(missing_ok=True)
                tmp_side.unlink(missing_ok=True)
                raise
            os.replace(tmp_side, side)
            os.replace(tmp, out)
    return Capture(out, parse_anchors(side.read_text()), tuple(args), binary)


def layouts(cap: Capture, runs: int, *, aslr: bool, cache: Path = CACHE) -> list[dict[str, int]]:
    """The anchors of `runs` native runs of the captured program, address-space randomization
    on or off (`setarch -R`); measured once and cached beside the capture."""
    path = cap.path.with_suffix(f".layouts-{'aslr' if aslr else 'fixed'}.json")
    have: list[dict[str, int]] = json.loads(path.read_text()) if path.is_file() else []
    if len(have) >= runs:
        return have[:runs]
    prefix = [] if aslr else ["setarch", platform.machine(), "-R"]
    for _ in range(runs - len(have)):
        # The capture's set-up (`capture`): without ASLR the stack's place follows the folder,
        # argv[0] and the environment, as under Valgrind.
        with fixed_folder(_folder(cap.path), _inputs(cap.binary, cap.argv)) as d:
            r = subprocess.run([*prefix, f"./{cap.binary.name}", *cap.argv], capture_output=True, text=True,
                               cwd=d, env=FIXED_ENV)
        if r.returncode != 0:
            raise UserError(f"rt tasks: the native run of {cap.binary} {' '.join(cap.argv)} failed "
                            f"(exit {r.returncode}): {r.stderr.strip()}")
        have.append(parse_anchors(r.stdout))
        if not aslr:
            break  # the layout without randomization is the same every run
    from tlblab.files import atomic_write

    atomic_write(path, json.dumps(have))
    return [have[i % len(have)] for i in range(runs)]


def parse_maps(text: str) -> list[tuple[int, int, str]]:
    """(lo, hi, path) of each line of a /proc/PID/maps snapshot (path '' when anonymous)."""
    out = []
    for line in text.splitlines():
        f = line.split(maxsplit=5)
        if len(f) >= 5 and "-" in f[0]:
            lo, hi = (int(x, 16) for x in f[0].split("-"))
            out.append((lo, hi, f[5].strip() if len(f) == 6 else ""))
    return out


def relocations(valgrind_anchors: dict[str, int], native_anchors: dict[str, int],
                maps: list[tuple[int, int, str]]) -> list[tuple[int, int, int]]:
    """(lo, hi, delta) per anchored mapping of the capture (Valgrind's `maps`): an address in
    [lo, hi) moves by delta to where the native run put that mapping. A file's anchor moves
    every mapping of that file and the anonymous one right after its last (its .bss); an
    anonymous anchor (a thread's stack, a heap arena, the dynamic loader's own heap of link
    maps, `ldheap`) moves its own mapping. Valgrind's preload libraries, which a native run
    does not have but which the dynamic loader's symbol lookups search first under Valgrind,
    are dropped (delta DROP). Addresses in no anchored mapping stay where Valgrind put them."""
    out = [(lo, hi, DROP) for lo, hi, path in maps if "/vgpreload_" in path]
    for name, a in sorted(valgrind_anchors.items(), key=lambda kv: kv[1]):
        if name not in native_anchors:
            continue
        delta = (native_anchors[name] & ~0xfff) - (a & ~0xfff)
        hit = [k for k, (lo, hi, _) in enumerate(maps) if lo <= a < hi]
        if not hit and name.startswith("stack."):
            # A joined thread's stack that glibc unmapped before the last snapshot: it caches
            # at most 40 MiB of stacks (nptl's stack_cache_maxsize), so with five or more 8 MiB
            # stacks the first ones go. The jobs touch their stack near the anchor (a local of
            # the task's start routine; the thread's TLS and descriptor sit just above it), so
            # the range moved is the hole it left, within 4 MiB below and 64 KiB above.
            below = max((hi for lo, hi, _ in maps if hi <= a), default=0)
            above = min((lo for lo, hi, _ in maps if lo > a), default=1 << 64)
            page = a & ~0xfff
            out.append((max(below, page - (4 << 20)), min(above, page + (64 << 10)), delta))
            continue
        if not hit:
            raise UserError(f"rt tasks: anchor {name} ({a:#x}) lies in no mapping of the capture")
        k = hit[0]
        if maps[k][2] == "" and k > 0 and maps[k - 1][1] == maps[k][0] and maps[k - 1][2]:
            k -= 1  # an anonymous mapping right after a file's: that file's .bss
        path = maps[k][2]
        if path and not path.startswith("["):
            ks = [j for j, m in enumerate(maps) if m[2] == path]
            last = ks[-1]
            if last + 1 < len(maps) and maps[last + 1][2] == "" and maps[last + 1][0] == maps[last][1]:
                ks.append(last + 1)
        else:
            ks = [k]
        out.extend((maps[j][0], maps[j][1], delta) for j in ks)
    return out


# The anchor of the vDSO (the program names each loaded object by its soname).
VDSO_ANCHOR = "lib.linux-vdso.so.1"


def papi_layout(cap: Capture, tasks: list[Task], native: dict[str, int]) -> tuple[int, int, list[tuple[int, int]]]:
    """Where PAPI's reads go in the native layout `native` (`rt_replay::papi_reads`): glibc's
    writable data page (the page of libc's `stdout`; libpapi's .data and .bss are assumed the two
    pages below it, as in the synthetic sets), the page of the EventSet map (the main thread's brk
    heap, assumed the page after the executable's anchor in its .bss, randomization's brk offset
    not modelled), and per task its glibc arena and the page buffers it malloc'd there before
    PAPI's objects. A malloc task's arena is the one its buffers are in (its heap anchor); a
    tlb_malloc task mallocs nothing, so PAPI's first allocation makes its arena: glibc's
    `new_heap` maps 128 MiB below the lowest mapping (the last thread stack) and keeps the
    64 MiB-aligned half, one per task in creation order (assumed: it is where 112 of the 147
    malloc tasks' arenas in this host's cached layouts are). An arena's set bits are its
    offsets' either way (64 MiB-aligned)."""
    missing = [k for k in ("libc", "exe", *(f"stack.T{i + 1}" for i in range(len(tasks)))) if k not in native]
    malloc = cap.argv[0] == "malloc"
    if malloc:
        missing += [f"heap.T{i + 1}" for i in range(len(tasks)) if f"heap.T{i + 1}" not in native]
    if missing:
        raise UserError(f"rt tasks: the native layout of {cap.binary} has no anchor {', '.join(missing)} "
                        "(expected one per task's stack and heap, libc and exe)")
    low = min(native[f"stack.T{i + 1}"] for i in range(len(tasks))) - STACK_SIZE - 4096
    first = low // HEAP_MAX_SIZE * HEAP_MAX_SIZE - HEAP_MAX_SIZE
    arenas = [(native[f"heap.T{i + 1}"], t.alloc) if malloc else (first - 2 * i * HEAP_MAX_SIZE, 0)
              for i, t in enumerate(tasks)]
    return native["libc"] & ~0xfff, (native["exe"] & ~0xfff) + 0x1000, arenas


def replay(cap: Capture, tasks: list[Task], jobs: int, native: dict[str, int], hyperperiods: int,
           cache: Path = CACHE, tick_hz: int = 0, papi: bool = False) -> Path:
    """The rate-monotonic replay of the capture's jobs in the native layout `native` (cached),
    with `tick_hz` timer ticks a second while a task runs (0: none; `TICK_HZ`) and, with `papi`,
    PAPI's reads around every job (`PAPI`, `papi_layout`)."""
    from tlblab import _native, phases

    maps = _native.trace_maps(str(cap.path))
    if not maps:
        raise UserError(f"rt tasks: {cap.path} holds no /proc/PID/maps snapshot (capture it again)")
    rel = relocations(cap.anchors, native, parse_maps(maps))
    timing = [(t.phase_us, t.period_us, t.exec_us) for t in tasks]
    vdso = native.get(VDSO_ANCHOR)
    # A replay without ticks keeps the key it had before they existed.
    ticks = (f"tick_hz={tick_hz}",) if tick_hz else ()
    # Nor one without PAPI's reads.
    reads = papi_layout(cap, tasks, native) if papi else None
    extra = (*ticks, f"papi={json.dumps(reads)}") if papi else ticks
    key = content_digest(cap.path.name, json.dumps(timing), json.dumps(rel), str(jobs), str(hyperperiods),
                         str(vdso), CAPTURE_VERSION, REPLAY_VERSION, *extra)
    out = Path(cache) / "replay" / f"{key}.tlbt"
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        with phases.phase(phases.GENERATION):  # tlblab reproduce's timings
            _native.rt_replay_write(str(cap.path), timing, jobs, rel, hyperperiods, str(out), vdso=vdso,
                                   tick_hz=tick_hz, papi=reads)
    except ValueError as e:
        raise UserError(f"rt tasks: replaying {cap.path}: {e}")
    return out


def replayed_runs(allocator: str, tasks: list[Task], jobs: int, runs: int) -> Iterator[Path]:
    """The replays of `runs` runs of the tasks under `allocator`: run r is the program's seed r
    (its random choice of pages) in one native layout, randomized for malloc and not for
    tlb_malloc (seed 003 §6.0.6), two hyperperiods with the tick and PAPI's reads (Figs. 6.4-6.8,
    A.1-A.4)."""
    for run in range(runs):
        cap = capture(allocator, tasks, jobs=jobs, repeat=20, seed=run)
        native = layouts(cap, 1, aslr=(allocator == "malloc"))[0]
        yield replay(cap, tasks, jobs, native, hyperperiods=2, tick_hz=TICK_HZ, papi=PAPI)
