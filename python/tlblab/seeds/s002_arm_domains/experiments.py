"""Seed 002 (Wiggins, Tuch, Uhlig, Heiser 2003, fast address-space switching on the StrongARM):
the experiments behind its reproductions.

Each function returns {row key: our value} for `python/tlblab/seeds/s002_arm_domains/reproductions/<id>.toml`. The
original (standard) kernel is the flush-all switch policy of the `sa1100` preset; the fast one
is the `fass` technique. Times are in microseconds at the preset's 200 MHz.
"""

from __future__ import annotations

from functools import lru_cache

import tlblab

SA1100 = "sa1100"
MHZ = 200.0
LINUX = "fass"  # 3 kernel domains (ARM Linux, seed 002 §4.2)
L4 = "fass:kernel_domains=1"  # one kernel domain (L4, seed 002 §4.2)


# The SA-1100 has no I-TLB entry operation: ARM Linux's flush_tlb_range (munmap, mprotect)
# invalidates the whole I-TLB (the kernel's v4wb TLB model, TLB_V4_I_FULL without
# TLB_V4_I_PAGE; Linux 2.4's flush_tlb_range passes no VMA flags), issue 87:
# `OsConfig::range_flush_whole_itlb`.
OS = {"range_flush_whole_itlb": True}


# Once per process: fig5_after_cliff reads fig5's runs, and Figs. 2-4 and fig2_curves share
# lat_ctx's pipe and chunk runs (`_per_switch`), which made every one of them twice or more (a
# run is deterministic: the same workload and technique give the same cycles; issue 89).
# `tlblab reproduce` runs a seed's reproductions in one process.
@lru_cache(maxsize=None)
def _cycles(workload: str, technique: str | None) -> float:
    r = tlblab.simulate(SA1100, workload, technique=technique, os=OS)
    return float(r.stats["cycles"])


def table1(quick: bool) -> dict[str, float]:
    """Table 1's latency rows: hot potato round trips over fcntl locks, a FIFO, a pipe and a UNIX
    socket, original against fast kernel."""
    rounds = 100 if quick else 400
    out: dict[str, float] = {}
    for name, ipc in (("pipe", 0), ("fifo", 1), ("unix", 2), ("fcntl", 3)):
        _original_fast(out, name, f"hot_potato:ipc={ipc},rounds={rounds}", rounds)
    return out


def _original_fast(out: dict[str, float], name: str, workload: str, rounds: int) -> None:
    """`name`'s original (flush-all) and fast (fass) latency per round in us, and their ratio."""
    orig = _cycles(workload, None) / rounds / MHZ
    fast = _cycles(workload, LINUX) / rounds / MHZ
    out[f"{name}/original"] = orig
    out[f"{name}/fast"] = fast
    out[f"{name}/ratio"] = orig / fast


def table1_proc(quick: bool) -> dict[str, float]:
    """Table 1's process-creation rows: fork, fork+exec and system() latency per round,
    original against fast kernel (proc_create; its path lengths are calibrated on 20 rounds of
    fork and exec and 2 of shell, the quick sizes)."""
    out: dict[str, float] = {}
    for name, mode, rounds in (("fork", 0, 20 if quick else 60), ("exec", 1, 20 if quick else 60),
                               ("shell", 2, 2 if quick else 6)):
        _original_fast(out, name, f"proc_create:mode={mode},rounds={rounds}", rounds)
    return out


# Fig. 2's fast kernel is without TLB entry sharing (Fig. 3 adds sharing as a separate set of
# points); `sharing=false` places a shared mapping (libc) per process, as the fast kernel does
# without the modified dynamic linker (§3.2).
LINUX_UNSHARED = "fass:sharing=false"
# lat_ctx with lmbench's per-process footprint (a pipe per process, the executable's data,
# libc's stubs, each task's and pipe's kernel state; lat_ctx.rs, kernel_path.rs).
LAT_CTX = "lat_ctx:footprint=1"


def _per_switch(procs: int, rounds: int, technique: str | None, kib: int = 0) -> float:
    """lmbench lat_ctx's figure: time per token pass less lmbench's overhead, in us. The
    overhead is as lat_ctx.c computes it: the pipe's cost (one process passing the token to
    itself, `pipe_cost`) plus the summing's cost measured on one 4 KiB chunk in a warm cache and
    scaled to the size (`sumit(CHUNK)` less `sumit(0)`, times size / CHUNK)."""
    turns = rounds * procs

    def one(kib_: int) -> float:
        return _cycles(f"{LAT_CTX},procs=1,kib={kib_},rounds={turns}", technique) / turns

    t = _cycles(f"{LAT_CTX},procs={procs},kib={kib},rounds={rounds}", technique) / turns
    pipe = one(0)
    overhead = pipe + (one(CHUNK_KIB) - pipe) * kib / CHUNK_KIB if kib > 0 else pipe
    return (t - overhead) / MHZ


# lat_ctx.c's CHUNK (4 KiB): the size its summing overhead is measured on.
CHUNK_KIB = 4


def fig2(quick: bool) -> dict[str, float]:
    """Fig. 2 (0 KiB): lat_ctx per-switch latency over the number of processes."""
    rounds = 20 if quick else 60
    out: dict[str, float] = {}
    for n in (2, 4, 6, 8, 10, 12, 13, 14, 15, 16, 18, 20):
        orig = _per_switch(n, rounds, None)
        fast = _per_switch(n, rounds, LINUX_UNSHARED)
        out[f"original/{n}"] = orig
        out[f"fast/{n}"] = fast
        out[f"ratio/{n}"] = orig / fast
    return out


def fig2_data(quick: bool) -> dict[str, float]:
    """Fig. 2 with memory accessed between the IPCs (4 and 16 KiB a process): the original's
    and the fast kernel's per-switch latency, and their difference, beside the 0 KiB case."""
    rounds = 10 if quick else 30
    out: dict[str, float] = {}
    for kib in (0, 4, 16):
        for n in (2, 4, 8):
            orig = _per_switch(n, rounds, None, kib)
            fast = _per_switch(n, rounds, LINUX_UNSHARED, kib)
            out[f"original/{kib}/{n}"] = orig
            out[f"fast/{kib}/{n}"] = fast
            out[f"diff/{kib}/{n}"] = orig - fast
    for kib in (4, 16):
        for n in (2, 4, 8):
            out[f"diff_rel/{kib}/{n}"] = out[f"diff/{kib}/{n}"] / out[f"diff/0/{n}"]
    return out


def fig3(quick: bool) -> dict[str, float]:
    """Fig. 3: lat_ctx (0 KiB) on the fast kernel without and with TLB entry sharing (libc's
    text one shared region, §3.2), and the improvement sharing brings."""
    rounds = 20 if quick else 60
    out: dict[str, float] = {}
    best = 0.0
    for n in (2, 4, 6, 8, 10, 12):
        unshared = _per_switch(n, rounds, LINUX_UNSHARED)
        shared = _per_switch(n, rounds, LINUX)
        out[f"unshared/{n}"] = unshared
        out[f"shared/{n}"] = shared
        out[f"improvement/{n}"] = 1.0 - shared / unshared
        best = max(best, 1.0 - shared / unshared)
    out["max_improvement"] = best
    return out


def fig4(quick: bool) -> dict[str, float]:
    """Fig. 4: extreme, private against shared pages, on the fast kernel; cycles per child loop
    iteration."""
    rounds = 20 if quick else 60
    out: dict[str, float] = {}
    for n in (2, 4, 16):
        best = 0.0
        for p in (1, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40):
            iters = rounds * n
            priv = _cycles(f"extreme:procs={n},pages={p},shared=0,rounds={rounds}", LINUX) / iters
            shar = _cycles(f"extreme:procs={n},pages={p},shared=1,rounds={rounds}", LINUX) / iters
            out[f"private/{n}/{p}"] = priv
            out[f"shared/{n}/{p}"] = shar
            out[f"ratio/{n}/{p}"] = priv / shar
            best = max(best, priv / shar)
        out[f"max_ratio/{n}"] = best
    return out


# The L4 kernel's IPC path length with each thread's TCB traced (l4_ipc footprint=1: Pistachio's
# 4 KiB page-mapped TCBs): calibrated, as L4_IPC_INSTRS is without them, so that the standard
# (flushing) kernel gives Fig. 5's 135 us at one client (ours 135.29 us at 2,000 IPCs, with
# the sa1100 preset's uncached walks, one-operation I-cache invalidation and write buffer). Fitted: the
# standard rows say so.
L4_FOOTPRINT_INSTRS = 625


def fig5(quick: bool) -> dict[str, float]:
    """Fig. 5: L4 round-trip IPC time over the number of clients."""
    ipcs = 2000 if quick else 10000
    out: dict[str, float] = {}
    for c in (1, 2, 4, 8, 12, 14, 15, 16, 18, 20, 24, 30):
        w = f"l4_ipc:clients={c},ipcs={ipcs},footprint=1,kernel_instrs={L4_FOOTPRINT_INSTRS}"
        # The start-up (each client IPCs back once) is a small part; it is counted as IPCs too.
        n = ipcs + c
        out[f"standard/{c}"] = _cycles(w, None) / n / MHZ
        out[f"fast/{c}"] = _cycles(w, L4) / n / MHZ
    return out


def table1_bw(quick: bool) -> dict[str, float]:
    """Table 1's bandwidth rows: lmbench's bw_pipe and bw_unix (bw_ipc) on the sa1100 preset
    (with the SA-1100's write buffer and bus, `[timing.write_buffer]`), original against fast
    kernel, in MB/s of 2^20 bytes (lmbench's mb()); the ratio is fast / original, as Table 1's
    last column (the FASS kernel's performance relative to the original)."""
    nbytes = (256 << 10) if quick else (1 << 20)
    cycles = _cycles
    out: dict[str, float] = {}
    for name, ipc in (("pipe", 0), ("unix", 2)):
        workload = f"bw_ipc:ipc={ipc},bytes={nbytes}"
        orig = nbytes / (cycles(workload, None) / (MHZ * 1e6)) / (1 << 20)
        fast = nbytes / (cycles(workload, LINUX) / (MHZ * 1e6)) / (1 << 20)
        out[f"{name}/original"] = orig
        out[f"{name}/fast"] = fast
        out[f"{name}/ratio"] = fast / orig
    return out


# ---------------------------------------------------------------------------------------------
# Issue 87: Fig. 5's shape past the cliff, from fig5's runs (reproduction fig5_after_cliff), and
# Fig. 2's curves with memory accessed over all its process counts (fig2_curves).


def fig5_after_cliff(quick: bool) -> dict[str, float]:
    """Fig. 5 past the domain cliff: the fast kernel's round-trip IPC time's rise per added client
    from 14 to 18, 18 to 24 and 24 to 30 clients (us per client), beside fig5's values."""
    t = fig5(quick)
    out = dict(t)
    for a, b in ((14, 18), (18, 24), (24, 30)):
        out[f"rise/{a}_{b}"] = (t[f"fast/{b}"] - t[f"fast/{a}"]) / (b - a)
    return out


def fig2_curves(quick: bool) -> dict[str, float]:
    """Fig. 2's curves with memory accessed (4 and 16 KiB a process) over fig2's process counts:
    the original's and the fast kernel's per-switch latency (us)."""
    rounds = 10 if quick else 30
    out: dict[str, float] = {}
    for kib in (4, 16):
        for n in (2, 4, 6, 8, 10, 12, 13, 14, 15, 16, 18, 20):
            out[f"original/{kib}/{n}"] = _per_switch(n, rounds, None, kib)
            out[f"fast/{kib}/{n}"] = _per_switch(n, rounds, LINUX_UNSHARED, kib)
    return out
