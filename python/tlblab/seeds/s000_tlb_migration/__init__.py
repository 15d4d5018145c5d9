"""Seed 000: migrating a thread's TLB contents with the thread (tlb_migration).

This folder holds the seed whole: its citation and claims (below, shown at the head of its section
in the report), `experiments.py` (one function per reproduction, running tlblab and returning our
value for every row), and `reproductions/` (one data file per table or figure: the seed's numbers,
the criteria written before the first run, docs/reproductions.md)."""

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
