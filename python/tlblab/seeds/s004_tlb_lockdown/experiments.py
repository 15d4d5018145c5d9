"""Seed 004 (Song, Park, Kim 2022, TLB lockdown): the experiments behind its reproductions.

Each function returns {row key: our value} for `python/tlblab/seeds/s004_tlb_lockdown/reproductions/<id>.toml`:
per program, the micro and main data TLB miss stall cycles per run without and with the 4
most-accessed pages locked, their decrease (Tables 2-3), the share removed, the run's length and
stall share (§V.2), and the simulation-guided selection beside the seed's (ours).

The programs are whole runs (`mibench` beside this file: 32-bit builds of runtime/bench/mibench/ captured
under Valgrind Lackey, loader and libc included, cached under out/mibench/), with the kernel's
entries Lackey does not see added: its page faults by the engine (`FAULT_KERNEL_PAGES`), the
programs' system calls and the timer's ticks by the composition (`SYSCALL_KERNEL_PAGES`,
`TICK_KERNEL_PAGES`, `tick_references`). Table 3 averages its stalls over `PHASES` placements
of the background loops. `quick` captures
and simulates the first `QUICK_REFERENCES` references of each run instead (the study's --quick
and CI): the loader, libc's start-up and the start of the program's own work.
"""

from __future__ import annotations

from typing import Any, Callable

import tlblab.technique.lockdown as ld
from tlblab.seeds.s004_tlb_lockdown import mibench, selection
from tlblab.profile import profile
from tlblab.sim import simulate

# `tlblab reproduce`'s units (tlblab.reproduce_units): Table 3 reads Table 2's `_program` of its
# ISA from this module's caches, so the two run in one process; the two ISAs share no run and no
# capture, and run beside each other.
PROCESS_GROUPS = (("table2", "table3"), ("table2_armv7", "table3_armv7"))

A9 = "cortex-a9"
PROGRAMS = ("basicmath", "qsort", "susan")
QUICK_REFERENCES = 500_000
# The kernel's entries in the program's run: Lackey records user space only, so the kernel's
# demand-paging faults are added by the engine (`OsConfig::fault_kernel_pages`): on every first
# touch of a page Linux 4.14 (the seed's kernel, §V.1) enters do_page_fault, whose data lie in
# the kernel's global low-memory mapping and take entries of the main TLB the program uses (seed
# 004 §III). Four pages: the kernel stack the exception entry saves the registers on, the task's
# mm_struct and VMAs (find_vma), the page allocator's struct pages, and the page-table page
# set_pte_at writes. An assumption from the fault path's code, not a measured or fitted number.
FAULT_KERNEL_PAGES = 4
# How the kernel's TLB maintenance reaches the other cores (seed 004 §III: the OS keeps the cores'
# TLBs coherent with the page table, and the Cortex-A9 "invalidates each core's micro TLB and
# main TLB through TLB invalidate instructions"; §VI names this synchronisation as the cause of
# the multi-core scenario's higher stalls). Linux 4.14 on the Cortex-A9 MPCore uses the ARMv7
# inner-shareable operations the hardware broadcasts (arch/arm/include/asm/tlbflush.h): a
# process's exit flushes its ASID on every core (TLBIASIDIS), a munmap its pages (TLBIMVAIS), and
# each flushes the receiving cores' micro TLBs (`tlblab_core::os::TlbMaintenance::Broadcast`).
# The kernel's other entries in the run (issue 62), which Lackey does not see either: every
# system call of every program (traced apart under Lackey --trace-syscalls, mibench.syscalls_of)
# and the timer's tick on every busy core, each a `KernelEntry` whose data pages are touched
# through the core's data micro and main TLBs as global entries (`OsConfig::syscall_kernel_pages`,
# `tick_kernel_pages`). Linux 4.14 on ARMv7 (the seed's kernel, §V.1):
# - a system call (arch/arm/kernel/entry-common.S, `vector_swi`) saves the user registers on the
#   task's kernel stack, whose thread_info `ret_fast_syscall` reads on the way out (1), loads the
#   handler from `sys_call_table` in the kernel image (2), and the handler works on the task's
#   own kernel objects, its task_struct, mm_struct or file table (3): 3 pages;
# - a tick (entry-armv.S `__irq_usr`/`__irq_svc` → `gic_handle_irq` → the local timer's
#   handler → `tick_sched_timer` → `update_process_times`/`scheduler_tick`) saves the registers
#   on the kernel stack (1), reads the GIC's CPU interface and the private timer's registers,
#   both in the Cortex-A9 MPCore's private memory region, PERIPHBASE + 0x100 and + 0x600, one
#   4 KiB page (2; Cortex-A9 MPCore TRM DDI0407, Table 1-3), updates the CPU's runqueue (3) and
#   jiffies with the timekeeper (4): 4 pages.
# Assumptions from the code paths, not measured or fitted; each path's pages are its own (the
# kernel stack each path saves on is one page in Linux: the model counts it once per path, so up
# to two more distinct kernel pages than there are).
# The kernel's text: fetched through the instruction side, whose stalls the seed's counters do
# not count (the Cortex-A9 counts instruction-side main- and micro-TLB miss stalls in events 0x82
# and 0x84, the data side's, the seed's (§V.1), in 0x83 and 0x85: TRM DDI0388, Table 11-6), but
# through the main TLB both sides share (seed 004 §III): each kernel-text translation the
# instruction side allocates there (event 0x8D, "TLB allocations because of instruction
# requests") can evict a data entry. Linux maps its image in 1 MiB sections (arch/arm/mm/mmu.c,
# map_lowmem), so a path's code takes one global section entry per section its functions lie in
# (`OsConfig::syscall_text_sections`, a mask of the text's sections, fetched through uTLB-I into
# the unified main TLB before the path's data pages). Measured (kernel_text.py beside this file,
# `python -m tlblab.seeds.s004_tlb_lockdown.kernel_text`) on the System.map of Debian 12's
# PREEMPT_RT ARMv7 kernel, linux-image-6.1.0-50-rt-armmp 6.1.176-1 (the seed's 4.14 build is not
# published; the link order that decides which subsystems lie in which sections is 4.14's too,
# the addresses are not): of the text's 11 sections, a system call's code lies in sections 0
# (entry-common.S), 2 (fs/'s write) and 10 (arch/arm/lib's user copy), a tick's in 0 (the IRQ
# entry, the IRQ core, the TWD handler, kernel/sched's tick, RCU), 1 (kernel/time: hrtimers,
# tick-sched, timekeeping) and 4 (the GIC driver's EOI), the page fault's in 0 (the abort entry,
# arch/arm/mm), 2 (mm/) and 10 (do_page_fault, memset): 3 each, 5 together. The paths'
# variations (other system calls' handlers, a file fault's page-cache code) are left out.
# Two more kernel translations every entry or fault takes (2026-11-28, `OsConfig::vectors_page`,
# `fault_linear_map`):
# - the exception vectors: every entry (a system call's SVC, a tick's IRQ, a fault's data abort)
#   fetches its vector from the high vectors' page at 0xffff0000 and loads from the stubs page
#   at 0xffff1000 (arch/arm/mm/mmu.c devicemaps_init; arch/arm/kernel/entry-armv.S: an SVC's
#   `ldr pc` reads vector_swi's address there, an IRQ's or abort's vector_stub runs there and
#   reads its handler table): two global 4 KiB entries, the stubs page's on the data side;
# - the clear of the fault's new anonymous frame (clear_user_highpage → kmap_atomic →
#   page_address for low memory) through the kernel's linear map, which ARM Linux builds of
#   1 MiB sections (mmu.c map_lowmem): a global 1 MiB data-side entry whose main-TLB set
#   follows the frame's physical address. The four FAULT_KERNEL_PAGES stay: they are the
#   handler's other objects, not the frame it clears.
# Since 2026-11-28 (issue 62, later; `OsConfig::fault_highmem`, `kernel_data_sections`):
# - the frame is high memory, so the clear goes through the CPU's kmap_atomic fixmap page, not
#   the linear map: the board's 1 GiB (i.MX6 SABRE Lite) with the 3G/1G split and Linux's
#   default 240 MiB vmalloc area leaves low memory at 768 MiB (arch/arm/mm/mmu.c vmalloc_min,
#   VMALLOC_END 0xff800000) and 256 MiB of high memory (imx_v6_v7_defconfig: CONFIG_HIGHMEM=y),
#   and user pages (GFP_HIGHUSER_MOVABLE) are taken from ZONE_HIGHMEM first (mm/page_alloc.c's
#   zonelist order), far more than a run's few hundred faults; Linux 4.14's kmap_atomic
#   (arch/arm/mm/highmem.c, via v6_clear_user_highpage_nonaliasing, arch/arm/mm/copypage-v6.c)
#   writes the slot's PTE, flushes the slot's address from the local TLBs (TLBIMVA; with
#   broadcast maintenance the micro TLBs whole), and the clear's stores walk it again;
# - the rest of the kernel's data as the linear map's 1 MiB sections: the handler's, the
#   system call's and the tick's data pages (task_struct, kernel stack, slab, mm_struct, struct
#   pages, page tables: lowmem) are translated as the global section that holds them (mmu.c
#   map_lowmem), not as 4 KiB pages; the stubs page keeps its 4 KiB vectors mapping.
SYSCALL_TEXT_SECTIONS = 0b100_0000_0101  # sections 0, 2, 10
TICK_TEXT_SECTIONS = 0b000_0001_0011     # sections 0, 1, 4
FAULT_TEXT_SECTIONS = 0b100_0000_0101    # sections 0, 2, 10
SYSCALL_KERNEL_PAGES = 3
TICK_KERNEL_PAGES = 4
# The timer: Linux 4.14's ARM Kconfig has no fixed HZ for the i.MX6 (HZ_FIXED is 0 but for
# EBSA110, S3C24XX, S5PV210, EXYNOS4 and AT91RM9200) and its "Timer frequency" choice has no
# default, so its first entry, HZ_100, is chosen unless a configuration says otherwise;
# imx_v6_v7_defconfig sets no CONFIG_HZ. At the seed's 792 MHz (§V.1) that is a tick every
# 7,920,000 cycles of every busy core.
HZ = 100
TICK_CYCLES = 792_000_000 // HZ
# The programs' run lengths, §V.2 ("about 15 million, 37 million and 33 million cycles"): with
# them a program's tick period in references is its capture's references over the ticks its
# run takes on the seed's board (the composition runs all cores at one reference rate, so the
# period holds for the co-runners too). --quick leaves the timer out: its captures are prefixes,
# whose share of the run's time the seed does not give.
SEED_CYCLES = {"basicmath": 15_000_000, "qsort": 37_000_000, "susan": 33_000_000}
OS = {"fault_kernel_pages": FAULT_KERNEL_PAGES, "tlb_maintenance": "broadcast",
      "syscall_kernel_pages": SYSCALL_KERNEL_PAGES, "tick_kernel_pages": TICK_KERNEL_PAGES,
      "syscall_text_sections": SYSCALL_TEXT_SECTIONS, "tick_text_sections": TICK_TEXT_SECTIONS,
      "fault_text_sections": FAULT_TEXT_SECTIONS, "fault_highmem": True,
      "kernel_data_sections": True, "vectors_page": True}
# The seed's ISA's tables (issue 87, 2026-11-29, the mechanisms the notes had left out), on top
# of OS, which the x86 tables keep:
# - the fault's clear as the 4 KiB of stores Linux makes (`os.fault_clear_lines`): ARM's
#   clear_page is memset(page, 0, PAGE_SIZE) (arch/arm/include/asm/page.h; arch/arm/lib/
#   memset.S stores every word), 128 lines of the Cortex-A9's 32-byte L1D (TRM DDI0388I §7.1),
#   allocated on the store misses (ARM Linux maps memory Write-Back Write-Allocate on SMP,
#   arch/arm/mm/mmu.c build_mem_type_table), so each fault's clear takes 4 KiB of the L1D and
#   the L2 from the page-table lines the walks read there;
# - PREEMPT_RT's kunmap_atomic (`os.kunmap_flush`): the 4.14-rt patch "arm/highmem: Flush tlb
#   on unmap" clears the fixmap slot's PTE after the clear (set_fixmap_pte(idx, __pte(0)):
#   a store and a TLBIMVA, which on the Cortex-A9 flushes both micro TLBs, TRM DDI0388I
#   §6.2.1); seed 004 §V.1 runs Linux 4.14 with the PREEMPT_RT patch.
OS_ARMV7 = {**OS, "fault_clear_lines": True, "kunmap_flush": True}


def os_of(isa: str) -> dict:
    """The OS model of `isa`'s tables: OS_ARMV7 on the seed's ISA, OS on x86."""
    return OS_ARMV7 if isa == "armv7" else OS


def _capture(prog: str, isa: str, limit: int = 0):
    """The real-time program's capture on `isa`: "x86" (gcc -m32 under Lackey) or "armv7" (the
    seed's ISA, under QEMU: mibench.capture_armv7)."""
    return mibench.capture(prog, limit=limit) if isa == "x86" else mibench.capture_armv7(prog, limit=limit)


def tick_references(prog: str, quick: bool, isa: str = "x86") -> int:
    """The references of a core between timer ticks in `prog`'s scenarios (0: no ticks, --quick):
    the program's capture's accesses times TICK_CYCLES over its run's cycles (SEED_CYCLES)."""
    if quick:
        return 0
    accesses = int(mibench.trace_info(_capture(prog, isa))["accesses"]["total"])
    return max(1, round(accesses * TICK_CYCLES / SEED_CYCLES[prog]))


def _stall_rows(out: dict[str, float], prog: str, base: dict[str, float], locked: dict[str, float],
                unit: dict[str, Any]) -> None:
    """The rows of one program's stalls without (`base`) and with the locks, and of its own run
    (`unit`, process 0's statistics): micro and main stalls, their decreases and shares, the
    references, cycles and stall share."""
    for lvl, name in (("micro", "uTLB-D"), ("main", "main")):
        b, w = base[name], locked[name]
        out[f"{prog}/{lvl}_base"] = b
        out[f"{prog}/{lvl}_locked"] = w
        out[f"{prog}/decreased_{lvl}"] = b - w
        out[f"{prog}/{lvl}_reduction"] = (b - w) / b if b else 0.0
    cycles = float(unit["cycles"])
    out[f"{prog}/references"] = float(unit["references"])
    out[f"{prog}/cycles"] = cycles
    out[f"{prog}/stall_share"] = (base["uTLB-D"] + base["main"]) / cycles if cycles else 0.0


def _once(cache: dict, make: Callable[..., Any], *key: Any) -> Any:
    """`make(*key)`, once per process under `key` in `cache` (or made on another worker and
    adopted there: `adopt`)."""
    if key not in cache:
        cache[key] = make(*key)
    return cache[key]


def _program(prog: str, quick: bool, isa: str = "x86") -> dict[str, float]:
    """`_program_made`, once per process (`_once`)."""
    return _once(_PROGRAMS, _program_made, prog, quick, isa)


def _program_made(prog: str, quick: bool, isa: str = "x86") -> dict[str, float]:
    """One program's numbers in seed 004 §V.1's single-core scenario (cjpeg, djpeg, then the
    program on one core; `_scenario_run`), the pages chosen on the program's run alone (§IV)."""
    alone = str(_capture(prog, isa, limit=QUICK_REFERENCES if quick else 0))
    out: dict[str, float] = {}
    # seed 004 §IV: the program's data accesses over its whole run, pages ranked (loads + stores);
    # the seed profiles the program by itself, so the ranking is of its run alone.
    rows = profile(alone, process=0)
    geom = ld.geometry(A9)
    pages = ld.most_frequent(rows, 4, process=0, geom=geom)
    trace, base, unit = _scenario_run(prog, 1, quick, isa=isa)
    locked = selection.stall_of(A9, trace, pages, process=0, os=os_of(isa))
    # The program's own references and cycles (process 0), not cjpeg's and djpeg's before it.
    _stall_rows(out, prog, base, locked, unit)
    out[f"{prog}/data_pages"] = float(sum(1 for x in rows if x["loads"] + x["stores"]))
    out[f"{prog}/page_faults"] = float(unit.get("page_faults", 0))
    candidates = 5  # C(5, 4) = 5 subsets: an exhaustive search that fits a whole run's budget
    sel = selection.simulation_guided(A9, trace, rows, 4, process=0, candidates=candidates, os=os_of(isa))
    out[f"{prog}/guided_gain"] = sel.gain_over_frequent
    out[f"{prog}/guided_simulations"] = sel.simulations
    out[f"{prog}/frequent_stall"] = sel.frequent
    out[f"{prog}/guided_stall"] = sel.guided
    # Held out: the guided search sees only the first half of the program's run alone (its
    # profile and its simulations); its set is then charged over the whole single-core scenario,
    # against the best set the search finds with the whole scenario in view (the optimum among
    # its candidates).
    half = _references(alone) // 2
    first = _profile_prefix(alone, half)
    held = selection.simulation_guided(A9, alone, first, 4, process=0, candidates=candidates,
                                max_references=half, os=os_of(isa))
    held_whole = sum(selection.stall_of(A9, trace, held.pages, process=0, os=os_of(isa)).values())
    best = min(sel.evaluated.values())
    removable = sel.baseline - best
    out[f"{prog}/heldout_stall"] = held_whole
    out[f"{prog}/heldout_reach"] = (sel.baseline - held_whole) / removable if removable else 1.0
    _SELECTIONS[(prog, quick, isa)] = (rows, pages, held.pages)
    return out


def _references(trace: str) -> int:
    """The number of references the engine simulates for a capture: its accesses, a
    page-crossing access counting once per page (as `simulate`'s summary counts them)."""
    i = mibench.trace_info(trace)
    return int(i["accesses"]["total"]) + int(i["page_crossing_accesses"])


# (program, quick, isa) -> (its page profile, the 4 most-accessed pages, the guided set chosen on the
# first half of its run alone): what Table 3's four-core runs lock (the seed profiles each
# program alone, §IV, and locks the same pages in both scenarios).
_SELECTIONS: dict[tuple[str, bool, str], tuple[list[dict], list[int], list[int]]] = {}


def _profile_prefix(trace: str, n: int) -> list[dict]:
    """The page ranking of the first `n` references of `trace` (a capture of that prefix)."""
    import os
    import tempfile

    from tlblab.trace import convert

    with tempfile.TemporaryDirectory(prefix="tlblab-seed004-") as tmp:
        part = os.path.join(tmp, "prefix.tlbt")
        convert(trace, part, limit=n)
        return profile(part, process=0)


def table2(quick: bool, isa: str = "x86") -> dict[str, float]:
    """Table 2: seed 004 §V.1's single-core scenario (cjpeg, djpeg, then the real-time program on
    one core); Table 3 is the same with cores 1-3 busy."""
    out: dict[str, float] = {}
    for prog in PROGRAMS:
        out.update(_program(prog, quick, isa))
    return out


def _share_band(out: dict[str, float], rows: dict[str, float], prefix: str) -> None:
    """The least and the largest share of micro and main stall cycles the locks remove over the
    programs (`{prefix}/micro_share_min` ...): what seed 004 §V.2 states of Figs. 4 and 5, a
    band per figure and counter ("micro data TLB stall cycle은 최소 5.1% 최대 29.7% 감소"), not
    which program gives which end."""
    for lvl in ("micro", "main"):
        shares = [rows[f"{prog}/{lvl}_reduction"] for prog in PROGRAMS]
        out[f"{prefix}/{lvl}_share_min"] = min(shares)
        out[f"{prefix}/{lvl}_share_max"] = max(shares)


def table2_armv7(quick: bool) -> dict[str, float]:
    """Table 2 with the real-time programs on the seed's ISA: ARMv7 binaries captured under
    qemu-arm -cpu cortex-a9 (mibench.capture_armv7), their system calls from the capture; with
    Fig. 4's band of shares (`_share_band`)."""
    out = table2(quick, "armv7")
    _share_band(out, out, "band")
    return out


def _scenario_run(prog: str, cores: int, quick: bool, phase: int = 0,
                  isa: str = "x86") -> tuple[str, dict[str, float], dict]:
    """`_scenario_made`, once per process (`_once`; adopted with its program)."""
    return _once(_SCENARIOS, _scenario_made, prog, cores, quick, phase, isa)


def _scenario_made(prog: str, cores: int, quick: bool, phase: int = 0,
                   isa: str = "x86") -> tuple[str, dict[str, float], dict]:
    """Seed 004 §V.1's scenario on `cores` cores (mibench.scenario: cjpeg, djpeg, then the
    program on core 0; on four cores cores 1-3 loop cjpeg, djpeg and typeset, where `phase`
    puts them): the trace, the program's (process 0's) stall cycles per level without lockdown,
    and its statistics."""
    # --quick bounds the background captures too (troff's whole run is 146 M references, a
    # capture of minutes): their programs then end, and start again as new processes, sooner.
    bound = QUICK_REFERENCES if quick else 0
    trace = str(mibench.scenario(prog, cores, limit=bound, corunner_limit=bound,
                                 tick=tick_references(prog, quick, isa), phase=phase, isa=isa))
    r = simulate(A9, trace, technique="lockdown:process=0", stall_cycles=True, os=os_of(isa))
    _SHOOTDOWNS[(prog, cores, quick, phase, isa)] = int(r.stats["os"]["shootdowns"])
    return trace, r.stall_cycles("process 0"), r.stats["processes"]["0"]


# (program, cores, quick, phase, isa) -> the TLB maintenance operations of the scenario's run
# (`_scenario_run`).
_SHOOTDOWNS: dict[tuple[str, int, bool, int, str], int] = {}
# What this process made or adopted: (program, quick, isa) -> `_program_made`'s rows;
# (program, cores, quick, phase, isa) -> `_scenario_made`'s run.
_PROGRAMS: dict[tuple[str, bool, str], dict[str, float]] = {}
_MULTI: dict[tuple[str, bool, str], dict[str, float]] = {}  # `_multi_made`'s rows
_SCENARIOS: dict[tuple[str, int, bool, int, str], tuple[str, dict[str, float], dict]] = {}

# `tlblab reproduce`'s way to Tables 2-3 on its own workers (tlblab.reproduce_units,
# docs/reproductions.md): each (program, ISA) the tables read is one run, made wherever the
# scheduler puts it (its single-core scenario, profile, locks and guided searches, Table 2's, and
# with Table 3 its four-core scenarios), and adopted, with the selection and the scenario runs
# the tables read of it, by the process that runs the tables. The tables' numbers are the same
# as made in turn (each run is deterministic and independent of the process).
ISAS = {"table2": "x86", "table3": "x86", "table2_armv7": "armv7", "table3_armv7": "armv7"}


def plan(quick: bool, experiments: list[str]) -> dict[tuple[str, bool, str], tuple[str, bool, str, bool]]:
    isas = sorted({ISAS[e] for e in experiments if e in ISAS})
    multi = {ISAS[e] for e in experiments if e in ISAS and e.startswith("table3")}
    return {(p, quick, isa): (p, quick, isa, isa in multi) for isa in isas for p in PROGRAMS
            if (p, quick, isa) not in (_MULTI if isa in multi else _PROGRAMS)}


def make(job: tuple[str, bool, str, bool]) -> dict[str, Any]:
    from tlblab import sim

    prog, quick, isa, multi = job
    key = (prog, quick, isa)
    with sim.reusing():  # its selections simulate the scenario's own run again (as the tables' units)
        out = _program(prog, quick, isa)
        rows = _multi(prog, quick, isa) if multi else None
    mine = [k for k in _SCENARIOS if (k[0], k[2], k[4]) == key]
    return {"out": out, "multi": rows, "selection": _SELECTIONS[key], "scenarios": {k: _SCENARIOS[k] for k in mine},
            "shootdowns": {k: _SHOOTDOWNS[k] for k in mine if k in _SHOOTDOWNS}}


def adopt(made: dict[tuple[str, bool, str], tuple[Any, dict[str, Any], float]]) -> None:
    for key, (_, r, _) in made.items():
        _PROGRAMS[key] = r["out"]
        if r["multi"] is not None:
            _MULTI[key] = r["multi"]
        _SELECTIONS[key] = r["selection"]
        _SCENARIOS.update(r["scenarios"])
        _SHOOTDOWNS.update(r["shootdowns"])


def describe(job: tuple[str, bool, str, bool]) -> str:
    return f"{job[0]} ({job[2]}): Table {'2 and 3' if job[3] else '2'}'s runs of it"

# Seed 004 §V.1 measures the real-time program 100 times while cores 1-3 loop their programs,
# and reports the measurements' averages: each run meets the background loops at another place.
# Table 3's stall rows average the runs of PHASES placements of the loops (mibench.phase_offsets:
# phase 0 every background core at a program's start, the others drawn from generators seeded
# by the phase's number), each without and with the locks; the guided and held-out rows are
# phase 0's alone (their searches simulate each candidate set: PHASES times their cost).
PHASES = 4


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def _four_core(prog: str, quick: bool, pages: list[int],
               isa: str = "x86") -> tuple[dict[str, float], dict[str, float], dict, float]:
    """The program's stall cycles per level in §V.1's four-core scenario without and with
    `pages` locked, each averaged over the PHASES placements of the background loops; its
    averaged statistics (cycles, references, page faults, the main TLB's misses); and the
    averaged TLB maintenance operations of the whole scenario."""
    bases, lockeds, units, maint = [], [], [], []
    for phase in range(PHASES):
        trace, base, unit = _scenario_run(prog, 4, quick, phase, isa)
        bases.append(base)
        lockeds.append(selection.stall_of(A9, trace, pages, process=0, os=os_of(isa)))
        units.append(unit)
        maint.append(float(_SHOOTDOWNS[(prog, 4, quick, phase, isa)]))

    def avg(ds: list[dict[str, float]]) -> dict[str, float]:
        return {k: _mean([float(d[k]) for d in ds]) for k in ds[0]}

    unit = {
        "cycles": _mean([float(u["cycles"]) for u in units]),
        "references": _mean([float(u["references"]) for u in units]),
        "page_faults": _mean([float(u.get("page_faults", 0)) for u in units]),
        "tlb": [{"misses": _mean([float(u["tlb"][-1]["misses"]) for u in units])}],
    }
    return avg(bases), avg(lockeds), unit, _mean(maint)


def _walk_cost(stall: dict[str, float], unit: dict) -> float:
    """The main TLB's data stall cycles per main-TLB miss of the unit (the unified main TLB's
    misses of both sides: the PMU-free model counts them together)."""
    misses = unit["tlb"][-1]["misses"]
    return stall["main"] / misses if misses else 0.0


def table3(quick: bool, isa: str = "x86") -> dict[str, float]:
    """Table 3: seed 004 §V.1's four-core scenario. Core 0 runs cjpeg, djpeg and then the
    real-time program while cores 1-3 loop cjpeg, djpeg and typeset (captured Debian programs,
    mibench.capture_corunner), the cores in turns of mibench.SCENARIO_TURN references, sharing
    the L2; the program locks the pages Table 2's profile chose (the seed profiles each program
    alone). `multi_over_single` compares the program's stalls with the single-core scenario of
    §V.1 (cjpeg, djpeg, then the program, on one core), so the difference is the co-runners'."""
    out: dict[str, float] = {}
    for prog in PROGRAMS:
        out.update(_multi(prog, quick, isa))
    return out


def _multi(prog: str, quick: bool, isa: str = "x86") -> dict[str, float]:
    """`_multi_made`, once per process (`_once`)."""
    return _once(_MULTI, _multi_made, prog, quick, isa)


def _multi_made(prog: str, quick: bool, isa: str = "x86") -> dict[str, float]:
    """One program's rows of Table 3 (`table3`)."""
    out: dict[str, float] = {}
    _program(prog, quick, isa)
    rows, pages, held_pages = _SELECTIONS[(prog, quick, isa)]
    base, locked, unit, maintenance = _four_core(prog, quick, pages, isa)
    trace, _, _ = _scenario_run(prog, 4, quick, 0, isa)
    _, single, single_unit = _scenario_run(prog, 1, quick, isa=isa)
    _stall_rows(out, prog, base, locked, unit)
    out[f"{prog}/page_faults"] = float(unit.get("page_faults", 0))
    s = single["uTLB-D"] + single["main"]
    m = base["uTLB-D"] + base["main"]
    out[f"{prog}/single_scenario_stall"] = float(s)
    out[f"{prog}/multi_scenario_stall"] = float(m)
    out[f"{prog}/multi_over_single"] = m / s if s else 1.0
    out[f"{prog}/micro_multi_over_single"] = (base["uTLB-D"] / single["uTLB-D"]
                                               if single["uTLB-D"] else 1.0)
    out[f"{prog}/maintenance_multi"] = maintenance
    w1, w4 = _walk_cost(single, single_unit), _walk_cost(base, unit)
    out[f"{prog}/walk_cost_single"] = w1
    out[f"{prog}/walk_cost_multi"] = w4
    out[f"{prog}/walk_cost_multi_over_single"] = w4 / w1 if w1 else 1.0
    candidates = 5
    sel = selection.simulation_guided(A9, trace, rows, 4, process=0, candidates=candidates, os=os_of(isa))
    out[f"{prog}/guided_gain"] = sel.gain_over_frequent
    out[f"{prog}/guided_simulations"] = sel.simulations
    out[f"{prog}/frequent_stall"] = sel.frequent
    out[f"{prog}/guided_stall"] = sel.guided
    # Held out twice over: the set the guided search chose seeing only the first half of the
    # program's run, alone on one core (Table 2's), charged over the whole four-core run.
    held_whole = sum(selection.stall_of(A9, trace, held_pages, process=0, os=os_of(isa)).values())
    best = min(sel.evaluated.values())
    removable = sel.baseline - best
    out[f"{prog}/heldout_stall"] = held_whole
    out[f"{prog}/heldout_reach"] = (sel.baseline - held_whole) / removable if removable else 1.0
    return out


def table3_armv7(quick: bool) -> dict[str, float]:
    """Table 3 with the real-time programs on the seed's ISA (`table2_armv7`), the background
    programs Debian's armhf builds; with Fig. 5's band of shares and, beside it, Fig. 4's from
    the same run's single-core scenario (`single/...`: `_program`'s rows, Table 2's)."""
    out = table3(quick, "armv7")
    _share_band(out, out, "band")
    single: dict[str, float] = {}
    for prog in PROGRAMS:
        single.update(_program(prog, quick, "armv7"))
    _share_band(out, single, "single")
    return out
