"""Seed 000: migrating a thread's TLB contents with the thread (tlb_migration)."""

CITE = (
    'Landsberg, Analyzing and Optimizing TLB-Induced Thread Migration Costs on Linux/ARM, MSc thesis, '
    'Hannover 2018'
)

CLAIMS = (
    'A thread that migrates to another core finds a cold TLB there and pays for refilling it. Saving '
    "the thread's TLB entries and restoring them on the new core (filtered entries, pld-based direct "
    'and indirect restore, gem5 TLB interfaces v1-v4) cuts that cost for working sets of some pages; '
    'the 4k/68k-stride and round-robin benchmarks measure it (Tables A.1-A.17).'
)
