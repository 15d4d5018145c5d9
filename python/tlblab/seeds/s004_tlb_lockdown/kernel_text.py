"""How many 1 MiB sections of kernel text each kernel path of seed 004's runs spans, measured on
a real 32-bit ARM kernel's symbol table.

Seed 004 §III: the Cortex-A9's main TLB is unified, shared by the instruction and data sides, so
the kernel's code, fetched on every system call, timer tick and page fault of the program's run,
takes main-TLB entries beside the program's data. Linux maps its image with 1 MiB sections
(arch/arm/mm/mmu.c, `map_lowmem`; with CONFIG_STRICT_KERNEL_RWX the text starts on a section
boundary), so a path's code costs one main-TLB entry per distinct section its functions lie in.

The seed ran Linux 4.14 with PREEMPT_RT (§V.1), whose build is not published. Measured here:
Debian 12's PREEMPT_RT ARMv7 multiplatform kernel (`linux-image-6.1.0-50-rt-armmp`, 6.1.176-1,
which runs the i.MX6), whose real System.map is in its `-dbg` package. The paths' functions are
named as in Linux 6.1's ARM code (below, `PATHS`); a function of 4.14's path that 6.1 inlines
into its caller is found at the caller's address, and a name not in the map is reported and left
out. Kernel layout follows the link order (arch/arm, kernel/, mm/, fs/, ..., drivers/, lib/, then
the scheduler's and lock text), the same in 4.14, so which subsystems a path crosses, and so
roughly how many sections, carries over; the exact addresses do not.

`bounds()` (`--bounds`) runs Table 2's single-core scenarios with the sections moved to other
main-TLB sets and with every path fetching the whole text: how far the text can move the rows.
`linear_map_bounds()` (`--linear-map-bounds`) does the same for the kernel's linear map and
exception vectors (`os.fault_linear_map`, `os.vectors_page`): each alone and both, and with the
frames scattered over memory, on the OS of the run before `os.fault_highmem` and
`os.kernel_data_sections`. `highmem_bounds()` (`--highmem-bounds`) runs the OS before those two
on the same captures, and bounds the main TLB's lookup time (the lookup at 1 cycle against the preset's 7).
`knobs_one_at_a_time()` (`--knobs [--quick] [--x86]`) runs those two each alone, on the ARMv7
captures by default. `mechanisms_one_at_a_time()` (`--mechanisms [--quick]`) runs issue 87's
fault-path mechanisms each alone on the ARMv7 captures (the clear's 4 KiB of stores, PREEMPT_RT's
kunmap_atomic) with the bound on the main TLB's contended lookup (`lookup_bound`).

`measure()` downloads the package with apt (armhf added as a foreign architecture), keeps only
its System.map under out/kernel/ (the 620 MB package is removed), and caches the counts as JSON
beside it. `python -m tlblab.seeds.s004_tlb_lockdown.kernel_text` prints them. The engine's
constants (`experiments.SYSCALL_TEXT_SECTIONS`, `TICK_TEXT_SECTIONS`, `FAULT_TEXT_SECTIONS`) are
this measurement's result, copied with their source, so a reproduction does not download
anything.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tlblab import paths
from tlblab.errors import UserError
from tlblab.files import atomic_write

CACHE = paths.cache("kernel")
PACKAGE = "linux-image-6.1.0-50-rt-armmp-dbg"
VERSION = "6.1.176-1"
MAP = "usr/lib/debug/boot/System.map-6.1.0-50-rt-armmp"
SECTION_SHIFT = 20  # ARMv7 short-descriptor section: 1 MiB
# Bump when PATHS or the counting changes.
MEASURE_VERSION = "1"

# Each kernel path's functions, in Linux 6.1's ARMv7 names, in the order the path runs them.
PATHS: dict[str, tuple[str, ...]] = {
    # A system call (arch/arm/kernel/entry-common.S): `vector_swi` saves the registers and calls
    # the handler from sys_call_table; `ret_fast_syscall` returns, `ret_slow_syscall` and
    # `do_work_pending` when work is pending. The handler: the programs' calls are few (brk,
    # mmap2, read, write, exit_group: mibench.syscalls_of); the write path's generic layers stand
    # for them (`sys_write` → `ksys_write` → `vfs_write`, copying through `arm_copy_from_user`);
    # the file system's or the tty's own write is left out.
    "syscall": ("vector_swi", "sys_write", "ksys_write", "vfs_write", "arm_copy_from_user",
                "ret_fast_syscall", "ret_slow_syscall", "do_work_pending"),
    # A timer tick from user mode (entry-armv.S `__irq_usr` → `gic_handle_irq`, the Cortex-A9
    # MPCore's GIC; the per-CPU TWD timer's interrupt, arch/arm/kernel/smp_twd.c; high-resolution
    # timers as the RT kernel builds them): the IRQ's generic layers, the hrtimer queue, the
    # scheduler tick (`task_tick_rt`: the real-time program runs SCHED_FIFO, seed 004 §V.1), the
    # timekeeping update by the CPU that does it, the next event programmed, the EOI, the exit.
    "tick": ("__irq_usr", "gic_handle_irq", "irq_enter_rcu", "generic_handle_domain_irq",
             "handle_irq_desc", "handle_percpu_devid_irq", "twd_handler", "hrtimer_interrupt",
             "__hrtimer_run_queues", "tick_sched_timer", "tick_sched_do_timer",
             "tick_do_update_jiffies64", "update_wall_time", "timekeeping_advance",
             "tick_sched_handle", "update_process_times", "account_process_tick",
             "scheduler_tick", "task_tick_rt", "rcu_sched_clock_irq", "raise_softirq",
             "hrtimer_update_next_event", "tick_program_event", "clockevents_program_event",
             "twd_set_next_event", "gic_eoi_irq", "irq_exit_rcu", "irq_exit",
             "ret_to_user_from_irq"),
    # A demand-paging fault on a user data page (entry-armv.S `__dabt_usr` → arch/arm/mm/fault.c
    # `do_DataAbort` → `do_page_fault` → mm/memory.c `handle_mm_fault`, whose anonymous-page path
    # 6.1 inlines): the VMA lookup, the page allocation, the page cleared
    # (arch/arm/mm/copypage-v6.c, `clear_page` is `memset`), the new page's rmap and LRU, the
    # PTE written (`set_pte_at` → `cpu_v7_set_pte_ext`), the exception's return.
    "fault": ("__dabt_usr", "do_DataAbort", "do_page_fault", "lock_mm_and_find_vma", "find_vma",
              "handle_mm_fault", "__alloc_pages", "get_page_from_freelist", "__mem_cgroup_charge",
              "v6_clear_user_highpage_nonaliasing", "memset", "page_add_new_anon_rmap",
              "folio_add_lru", "set_pte_at", "__sync_icache_dcache", "cpu_v7_set_pte_ext",
              "ret_from_exception"),
}


def read_map(path: Path) -> list[tuple[int, str, str]]:
    """System.map's symbols (address, type, name), by address."""
    out = []
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 3:
            try:
                out.append((int(parts[0], 16), parts[1], parts[2]))
            except ValueError:
                continue
    out.sort()
    return out


def spans(symbols: list[tuple[int, str, str]], paths: dict[str, tuple[str, ...]] = PATHS) -> dict:
    """Per path: the sections (relative to the first section of the kernel's text, `_stext`) its
    functions' code lies in, from each function's address to the next symbol's (a function that
    crosses a section boundary counts both), and the names not found."""
    by_name: dict[str, list[int]] = {}
    nexts: dict[int, int] = {}
    for i, (addr, kind, name) in enumerate(symbols):
        if kind in "tTW":
            by_name.setdefault(name, []).append(addr)
        later = next((a for a, _, _ in symbols[i + 1:i + 8] if a > addr), addr + 1)
        nexts.setdefault(addr, later)
    starts = [a for a, _, n in symbols if n == "_stext"]
    ends = [a for a, _, n in symbols if n == "_etext"]
    if not starts or not ends:
        raise UserError("kernel_text: the System.map has no _stext or _etext")
    base = starts[0] >> SECTION_SHIFT
    out: dict = {"text_sections": (ends[0] - 1 >> SECTION_SHIFT) - base + 1, "paths": {}}
    union: set[int] = set()
    for path, names in paths.items():
        secs: set[int] = set()
        missing = []
        for name in names:
            addrs = by_name.get(name)
            if not addrs:
                missing.append(name)
                continue
            for a in addrs:  # a static name defined twice (gic_handle_irq): both
                secs.update(range((a >> SECTION_SHIFT) - base, ((nexts[a] - 1) >> SECTION_SHIFT) - base + 1))
        union |= secs
        out["paths"][path] = {"sections": sorted(secs), "count": len(secs),
                              "mask": sum(1 << s for s in secs), "missing": missing}
    out["union"] = sorted(union)
    return out


def _apt(*args: str, cwd: Path | None = None) -> None:
    r = subprocess.run(list(args), cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        raise UserError(f"kernel_text: {' '.join(args)} failed: {r.stderr.strip()[-400:]}")


def system_map(cache: Path = CACHE) -> Path:
    """The kernel's System.map under `cache`, downloaded once (`apt-get download` of PACKAGE at
    VERSION for armhf; needs root for `dpkg --add-architecture armhf` and `apt-get update`)."""
    dest = cache / f"{PACKAGE}_{VERSION}.System.map"
    if dest.exists():
        return dest
    cache.mkdir(parents=True, exist_ok=True)
    arches = subprocess.run(["dpkg", "--print-foreign-architectures"], capture_output=True, text=True)
    if "armhf" not in arches.stdout.split():
        _apt("dpkg", "--add-architecture", "armhf")
        _apt("apt-get", "update", "-qq")
    deb = cache / f"{PACKAGE}_{VERSION}_armhf.deb"
    try:
        _apt("apt-get", "download", f"{PACKAGE}:armhf={VERSION}", cwd=cache)
        got = sorted(cache.glob(f"{PACKAGE}_*_armhf.deb"))
        if not got:
            raise UserError(f"kernel_text: apt-get download left no {PACKAGE} package in {cache}")
        deb = got[0]
        # The map is near the archive's start: stop after it (--occurrence).
        r = subprocess.run(["bash", "-c", 'dpkg-deb --fsys-tarfile "$1" | tar -xO --occurrence=1 "./$2"',
                            "bash", str(deb), MAP], capture_output=True)
        if not r.stdout:
            raise UserError(f"kernel_text: {MAP} not found in {deb.name}")
        atomic_write(dest, r.stdout)
    finally:
        for d in cache.glob(f"{PACKAGE}_*_armhf.deb"):
            d.unlink()
    return dest


def measure(cache: Path = CACHE) -> dict:
    """The measurement (`spans` of the package's System.map), cached as JSON under `cache`."""
    out = cache / f"{PACKAGE}_{VERSION}.sections-{MEASURE_VERSION}.json"
    if out.exists():
        return json.loads(out.read_text())
    res = {"package": f"{PACKAGE} {VERSION} armhf", **spans(read_map(system_map(cache)))}
    atomic_write(out, json.dumps(res, indent=1).encode())
    return res


def bounds(shifts: tuple[int, ...] = (0, 4, 8, 12, 16, 20)) -> dict[str, dict]:
    """How much the kernel's text can move Table 2's single-core runs (the bounds the
    explanations quote): per program, the main TLB's misses of the program and its main stall
    with the measured sections shifted by each of `shifts` sections (other main-TLB sets, as
    another kernel's layout would put them), and with every path fetching all of the text's
    sections, with the locks' micro and main decreases then. Uses the cached captures."""
    import tlblab.technique.lockdown as ld
    from tlblab.profile import profile
    from tlblab.seeds.s004_tlb_lockdown import experiments as ex, mibench, selection
    from tlblab.sim import simulate

    keys = ("syscall_text_sections", "tick_text_sections", "fault_text_sections")
    out: dict[str, dict] = {}
    every = (1 << measure()["text_sections"]) - 1
    for prog in ex.PROGRAMS:
        trace = str(mibench.scenario(prog, 1, limit=0, corunner_limit=0,
                                     tick=ex.tick_references(prog, False), phase=0))

        def run(os_: dict) -> tuple[int, float, dict]:
            r = simulate(ex.A9, trace, technique="lockdown:process=0", stall_cycles=True, os=os_)
            return int(r.stats["processes"]["0"]["tlb"][-1]["misses"]), r.stall_cycles("process 0"), os_

        shifted = {sh: run({**ex.OS, **{k: ex.OS[k] << sh for k in keys}}) for sh in shifts}
        misses, stall, os_all = run({**ex.OS, **{k: every for k in keys}})
        rows = profile(str(mibench.capture(prog)), process=0)
        pages = ld.most_frequent(rows, 4, process=0, geom=ld.geometry(ex.A9))
        locked = selection.stall_of(ex.A9, trace, pages, process=0, os=os_all)
        out[prog] = {"shifted": {sh: {"main_misses": m, "main": s_["main"]} for sh, (m, s_, _) in shifted.items()},
                     "all_sections": {"main_misses": misses, "main": stall["main"],
                                      "decreased_micro": stall["uTLB-D"] - locked["uTLB-D"],
                                      "decreased_main": stall["main"] - locked["main"]}}
    return out


def _single_core(prog: str, isa: str = "x86", quick: bool = False) -> tuple[str, list[int]]:
    """Table 2's single-core scenario of `prog` on `isa` (its cached trace; `quick`: the
    reproduction's --quick prefixes) and the four pages its profile ranks first (the seed's
    lockdown set)."""
    import tlblab.technique.lockdown as ld
    from tlblab.profile import profile
    from tlblab.seeds.s004_tlb_lockdown import experiments as ex, mibench

    bound = ex.QUICK_REFERENCES if quick else 0
    trace = str(mibench.scenario(prog, 1, limit=bound, corunner_limit=bound,
                                 tick=ex.tick_references(prog, quick, isa), phase=0, isa=isa))
    rows = profile(str(ex._capture(prog, isa, limit=bound)), process=0)
    return trace, ld.most_frequent(rows, 4, process=0, geom=ld.geometry(ex.A9))


def linear_map_bounds() -> dict[str, dict]:
    """What the kernel's linear map and exception vectors (`os.fault_linear_map`,
    `os.vectors_page`) do to Table 2's single-core runs (the numbers the explanations quote):
    per program, the program's main-TLB misses and micro and main stalls without locks with the
    two off, each alone and both; and a bound with the frames scattered over memory
    (`memory.placement = random`: each fault's linear-map section in another main-TLB set),
    the two off and on, with the four most-accessed pages' micro and main decreases. Uses the
    cached captures."""
    from tlblab.seeds.s004_tlb_lockdown import selection
    from tlblab.machines import machine_config
    from tlblab.seeds.s004_tlb_lockdown import experiments as ex
    from tlblab.sim import simulate

    # The OS of the run these numbers were quoted from (before os.fault_highmem and
    # os.kernel_data_sections): the fault's clear through the linear map, the kernel's data pages
    # as 4 KiB entries.
    LINEAR_MAP_OS = {**ex.OS, "fault_highmem": False, "kernel_data_sections": False}
    scattered = machine_config(ex.A9)
    scattered["memory"]["placement"] = {"type": "random"}
    variants = {"off": (False, False), "linear": (True, False), "vectors": (False, True), "both": (True, True)}
    out: dict[str, dict] = {}
    for prog in ex.PROGRAMS:
        trace, pages = _single_core(prog)
        out[prog] = {}
        for name, (lm, vp) in variants.items():
            os_ = {**LINEAR_MAP_OS, "fault_linear_map": lm, "vectors_page": vp}
            r = simulate(ex.A9, trace, technique="lockdown:process=0", stall_cycles=True, os=os_)
            s_ = r.stall_cycles("process 0")
            out[prog][name] = {"main_misses": int(r.stats["processes"]["0"]["tlb"][-1]["misses"]),
                               "micro": s_["uTLB-D"], "main": s_["main"]}
        for name in ("off", "both"):
            lm, vp = variants[name]
            os_ = {**LINEAR_MAP_OS, "fault_linear_map": lm, "vectors_page": vp}
            b = selection.stall_of(scattered, trace, [], process=0, os=os_)
            locked = selection.stall_of(scattered, trace, pages, process=0, os=os_)
            out[prog][f"scattered_{name}"] = {"micro": b["uTLB-D"], "main": b["main"],
                                              "decreased_micro": b["uTLB-D"] - locked["uTLB-D"],
                                              "decreased_main": b["main"] - locked["main"]}
    return out


def highmem_bounds(lookups: tuple[int, ...] = (1,)) -> dict[str, dict]:
    """What a high-memory frame's clear through the kmap_atomic fixmap page and the kernel's data
    as 1 MiB sections (`os.fault_highmem`, `os.kernel_data_sections`) do to Table 2's single-core
    runs, and how the main TLB's lookup time moves the locks' decreases (the numbers the
    explanations quote): per program, the program's micro and main stalls without locks and the
    four most-accessed pages' micro and main decreases on the same captures with the OS of the
    run before the two (`before`: the linear map's clear, 4 KiB kernel data; with both, the OS is
    experiments.OS, the reproduction's own rows); then, under experiments.OS, the same with the
    main TLB's lookup (`latency`, 7 in the preset) at each of `lookups` cycles (`lookup_N`). The
    seed (§III) says the lookup time varies and gives no cycles, nor does the Cortex-A9 TRM: a
    bound, not a constant. Uses the cached captures."""
    from tlblab.seeds.s004_tlb_lockdown import selection
    from tlblab.machines import machine_config
    from tlblab.seeds.s004_tlb_lockdown import experiments as ex

    before = {**ex.OS, "fault_highmem": False, "kernel_data_sections": False, "fault_linear_map": True}
    variants = {"before": before}
    machines: dict[str, object] = {name: ex.A9 for name in variants}
    for lat in lookups:
        m = machine_config(ex.A9)
        for t in m["tlb"]:
            if t["name"] == "main":
                t["latency"] = lat
        machines[f"lookup_{lat}"] = m
        variants[f"lookup_{lat}"] = ex.OS
    out: dict[str, dict] = {}
    for prog in ex.PROGRAMS:
        trace, pages = _single_core(prog)
        out[prog] = {}
        for name, os_ in variants.items():
            b = selection.stall_of(machines[name], trace, [], process=0, os=os_)
            locked = selection.stall_of(machines[name], trace, pages, process=0, os=os_)
            out[prog][name] = {"micro": b["uTLB-D"], "main": b["main"],
                               "decreased_micro": b["uTLB-D"] - locked["uTLB-D"],
                               "decreased_main": b["main"] - locked["main"]}
    return out


def knobs_one_at_a_time(isa: str = "armv7", quick: bool = False) -> dict[str, dict]:
    """The two kernel translations of 2026-11-28, later, run one at a time on Table 2's
    single-core scenarios (issue 87: until now only both off, `highmem_bounds`'s `before`, and
    both on, the reproduction's OS, were run). `off`: a fault clears its frame through the linear
    map (`os.fault_linear_map`) and the kernel's data pages are 4 KiB entries; `highmem`: the
    clear through kmap_atomic's fixmap slot alone (`os.fault_highmem`); `sections`: the kernel's
    data as 1 MiB sections alone (`os.kernel_data_sections`, the clear through the linear map);
    `both`: the reproduction's OS (`experiments.os_of(isa)`). Per program and variant, the
    program's micro and main stalls without locks and the four most-accessed pages' decreases.
    Uses the cached captures."""
    from tlblab.seeds.s004_tlb_lockdown import experiments as ex

    def os_of(hm: bool, ds: bool) -> dict:
        # The fixmap clear replaces the linear map's (both together are refused), and
        # PREEMPT_RT's unmap is the fixmap's.
        os_ = {**ex.os_of(isa), "fault_highmem": hm, "fault_linear_map": not hm, "kernel_data_sections": ds}
        os_["kunmap_flush"] = os_.get("kunmap_flush", False) and hm
        return os_

    variants = {"off": os_of(False, False), "highmem": os_of(True, False),
                "sections": os_of(False, True), "both": os_of(True, True)}
    return _variants_of(isa, quick, variants)


def mechanisms_one_at_a_time(isa: str = "armv7", quick: bool = False) -> dict[str, dict]:
    """Issue 87's two fault-path mechanisms on Table 2's single-core scenarios, one at a time:
    `off` (experiments.OS, the clear's first byte and the mainline kunmap_atomic), `clear` (the
    clear's 4 KiB of stores, `os.fault_clear_lines`), `kunmap` (PREEMPT_RT's unmap of the
    fixmap slot, `os.kunmap_flush`), `both` (experiments.OS_ARMV7, the ARMv7 tables' OS). Per
    program and variant the program's micro and main stalls without locks and the four
    most-accessed pages' decreases, and from the runs' statistics the bound on the main TLB's
    contended lookup (`lookup_bound`). Uses the cached captures."""
    from tlblab.seeds.s004_tlb_lockdown import experiments as ex

    variants = {name: {**ex.OS, "fault_clear_lines": cl, "kunmap_flush": ku}
                for name, (cl, ku) in {"off": (False, False), "clear": (True, False),
                                       "kunmap": (False, True), "both": (True, True)}.items()}
    return _variants_of(isa, quick, variants, bound=ex.os_of(isa))


def _variants_of(isa: str, quick: bool, variants: dict[str, dict],
                 bound: dict | None = None) -> dict[str, dict]:
    """Per program of Table 2's single-core scenarios on `isa` and per named OS of `variants`,
    the program's (process 0's) micro and main stalls without locks and what locking its four
    most-accessed pages removes of each; with `bound` (an OS) the program's `lookup_bound`
    under it too."""
    from tlblab.seeds.s004_tlb_lockdown import experiments as ex, selection

    out: dict[str, dict] = {}
    for prog in ex.PROGRAMS:
        trace, pages = _single_core(prog, isa, quick)
        out[prog] = {}
        for name, os_ in variants.items():
            b = selection.stall_of(ex.A9, trace, [], process=0, os=os_)
            locked = selection.stall_of(ex.A9, trace, pages, process=0, os=os_)
            out[prog][name] = {"micro": b["uTLB-D"], "main": b["main"],
                               "decreased_micro": b["uTLB-D"] - locked["uTLB-D"],
                               "decreased_main": b["main"] - locked["main"]}
        if bound is not None:
            out[prog]["lookup_bound"] = lookup_bound(trace, pages, bound)
    return out


def lookup_bound(trace: str, pages: list[int], os_: dict) -> dict[str, float]:
    """A bound on what the main TLB's variable lookup could add to the program's (process 0's)
    data micro-TLB stall, without and with `pages` locked, from the run's counts (issue 87).
    Cortex-A9 TRM DDI0388I §6.2.2: "Accesses to the main TLB take a variable number of cycles,
    according to competing requests from each of the micro TLBs and other
    implementation-dependent factors". The competitor of a data-side lookup is the instruction
    micro TLB's: a data micro-TLB miss that finds an instruction-side lookup in the main TLB
    waits at most one lookup (the preset's 7 cycles) for it, and no more such waits happen than
    there are instruction micro-TLB misses, nor than there are data micro-TLB misses: the
    bound is 7 × min(instruction misses, data misses) per run. The decrease's bound is the
    larger of the two runs' (either can gain it). The "other implementation-dependent factors"
    the TRM names are not bounded by any source."""
    from tlblab.seeds.s004_tlb_lockdown import experiments as ex
    from tlblab.sim import simulate
    from tlblab.technique.lockdown import pages_spec

    lookup = 7  # presets/cortex-a9.toml's main-TLB latency (7-cpu.com, Exynos 4210)
    out: dict[str, float] = {}
    for name, locked in (("base", []), ("locked", pages)):
        spec = "lockdown:process=0" + (f",pages={pages_spec(locked)}" if locked else "")
        r = simulate(ex.A9, trace, technique=spec, stall_cycles=True, os=os_)
        levels = r.stats["tlb_levels"]
        tlb = r.stats["processes"]["0"]["tlb"]
        imiss = float(tlb[levels.index("uTLB-I")]["misses"])
        dmiss = float(tlb[levels.index("uTLB-D")]["misses"])
        out[f"{name}_instr_micro_misses"] = imiss
        out[f"{name}_data_micro_misses"] = dmiss
        out[f"{name}_micro_stall"] = float(r.stall_cycles("process 0")["uTLB-D"])
        out[f"{name}_bound"] = lookup * min(imiss, dmiss)
    out["decrease_bound"] = max(out["base_bound"], out["locked_bound"])
    return out


if __name__ == "__main__":
    if sys.argv[1:2] == ["--mechanisms"] and set(sys.argv[2:]) <= {"--quick"}:
        print(json.dumps(mechanisms_one_at_a_time("armv7", "--quick" in sys.argv), indent=1))
        sys.exit(0)
    if sys.argv[1:2] == ["--knobs"] and set(sys.argv[2:]) <= {"--quick", "--x86"}:
        print(json.dumps(knobs_one_at_a_time("x86" if "--x86" in sys.argv else "armv7",
                                             "--quick" in sys.argv), indent=1))
        sys.exit(0)
    if sys.argv[1:] == ["--highmem-bounds"]:
        print(json.dumps(highmem_bounds(), indent=1))
        sys.exit(0)
    if sys.argv[1:] == ["--bounds"]:
        print(json.dumps(bounds(), indent=1))
        sys.exit(0)
    if sys.argv[1:] == ["--linear-map-bounds"]:
        print(json.dumps(linear_map_bounds(), indent=1))
        sys.exit(0)
    try:
        r = measure()
    except UserError as e:
        print(f"tlblab: error: {e}", file=sys.stderr)
        sys.exit(2)
    print(r["package"], f"text: {r['text_sections']} sections of 1 MiB")
    for p, d in r["paths"].items():
        print(f"{p}: {d['count']} sections {[hex(s) for s in d['sections']]} mask {d['mask']:#x}"
              + (f" (not in the map: {', '.join(d['missing'])})" if d["missing"] else ""))
    print(f"all paths: {len(r['union'])} sections")
