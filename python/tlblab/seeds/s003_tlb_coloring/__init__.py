"""Seed 003: TLB coloring, an allocator that isolates real-time tasks (tlb_coloring).

`rt_capture` builds and captures the real task program (runtime/bench/seed003/rt_tasks.c);
`tasksets/` holds Table 6.1's task sets as `tlblab isolate` reads them.
"""

CITE = (
    'Panchamukhi, Providing Task Isolation via TLB Coloring, MSc thesis, NC State 2014'
)

CLAIMS = (
    "Tasks that share TLB sets evict each other's entries, so a preempted real-time job misses again "
    'when it resumes. An allocator that gives each task its own TLB colors (tlb_malloc) places their '
    "pages in disjoint sets: the jobs' misses no longer depend on what else ran (periodic "
    'rate-monotonic task sets, Table 6.1, Figs. 6.2-6.8).'
)
