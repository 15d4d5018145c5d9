"""Seed 004: TLB lockdown of the pages a profiler finds hottest (lockdown).

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
