"""Seed 004: TLB lockdown of the pages a profiler finds hottest (lockdown).

This folder holds the seed whole: its citation and claims (below, shown at the head of its section
in the report), `experiments.py` (one function per reproduction, running tlblab and returning our
value for every row), and `reproductions/` (one data file per table or figure: the seed's numbers,
the criteria written before the first run, docs/reproductions.md).
`mibench` builds and captures the whole MiBench programs (runtime/bench/mibench/).
"""

CITE = (
    'Song, Park, Kim, Investigation on TLB Miss Impact through TLB Lockdown in Multi-core Systems, '
    '2022'
)

CLAIMS = (
    "Profiling a program's memory references (Valgrind Lackey) finds its hottest pages; locking those "
    "in the Cortex-A9's 4 lockable main-TLB entries cuts the program's TLB misses, alone and beside "
    'background processes on other cores (MiBench, Tables 1-3).'
)
