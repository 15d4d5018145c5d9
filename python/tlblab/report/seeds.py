"""What each seed is and claims, in a few lines, for the head of its section in the report.

Written from the seed documents' abstracts (each named by its `source` in the reproduction
files); the numbers themselves come from the reproduction files
(python/tlblab/reproductions/<seed>/), never from here.
"""

from __future__ import annotations

SEEDS: dict[str, dict[str, str]] = {
    "000": {
        "cite": "Landsberg, Analyzing and Optimizing TLB-Induced Thread Migration Costs on Linux/ARM, "
                "MSc thesis, Hannover 2018",
        "claims": "A thread that migrates to another core finds a cold TLB there and pays for refilling it. "
                  "Saving the thread's TLB entries and restoring them on the new core (filtered entries, "
                  "pld-based direct and indirect restore, gem5 TLB interfaces v1-v4) cuts that cost for "
                  "working sets of some pages; the 4k/68k-stride and round-robin benchmarks measure it "
                  "(Tables A.1-A.17).",
    },
    "001": {
        "cite": "Chatzopoulos, Improving the Locality of Page Table Walks in the Cache Hierarchy "
                "(PT-Baker), BSc thesis, Athens 2024",
        "claims": "Page-table walks are slow when the page-table entries have left the caches. A helper "
                  "thread on another core (user mode: loads or prefetches; kernel mode: PTE walks) keeps "
                  "them warm in the shared cache, so walks of a TLB-thrashing application are served from "
                  "the cache; stride, throttling, placement, memory pressure and 2D walks change how much "
                  "it helps (Zen 3, Table 5.1).",
    },
    "002": {
        "cite": "Wiggins, Tuch, Uhlig, Heiser, Fast Address-Space Switching and TLB Sharing on the StrongARM",
        "claims": "The StrongARM's virtually-indexed caches and untagged TLBs make a context switch flush "
                  "everything. Using ARM domains as address-space tags (with PID relocation, a caching page "
                  "directory and domain recycling) avoids most flushes and lets address spaces share TLB "
                  "entries; lmbench lat_ctx, hot potato, the extreme benchmark and L4 IPC show it (Table 1).",
    },
    "003": {
        "cite": "Panchamukhi, Providing Task Isolation via TLB Coloring, MSc thesis, NC State 2014",
        "claims": "Tasks that share TLB sets evict each other's entries, so a preempted real-time job "
                  "misses again when it resumes. An allocator that gives each task its own TLB colors "
                  "(tlb_malloc) places their pages in disjoint sets: the jobs' misses no longer depend on "
                  "what else ran (periodic rate-monotonic task sets, Table 6.1, Figs. 6.2-6.8).",
    },
    "004": {
        "cite": "Song, Park, Kim, Investigation on TLB Miss Impact through TLB Lockdown in Multi-core "
                "Systems, 2022",
        "claims": "Profiling a program's memory references (Valgrind Lackey) finds its hottest pages; "
                  "locking those in the Cortex-A9's 4 lockable main-TLB entries cuts the program's TLB "
                  "misses, alone and beside background processes on other cores (MiBench, Tables 1-3).",
    },
}


def about(seed: str) -> dict[str, str]:
    """The seed's citation and claim; an unknown seed number gets a plain placeholder title."""
    return SEEDS.get(seed, {"cite": f"seed {seed}", "claims": ""})
