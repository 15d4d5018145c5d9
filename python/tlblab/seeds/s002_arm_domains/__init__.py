"""Seed 002: ARM domains as address-space tags for fast context switches, and TLB entry sharing (fass).

This folder holds the seed whole: its citation and claims (below, shown at the head of its section
in the report), `experiments.py` (one function per reproduction, running tlblab and returning our
value for every row), and `reproductions/` (one data file per table or figure: the seed's numbers,
the criteria written before the first run, docs/reproductions.md)."""

CITE = (
    'Wiggins, Tuch, Uhlig, Heiser, Fast Address-Space Switching and TLB Sharing on the StrongARM'
)

CLAIMS = (
    "The StrongARM's virtually-indexed caches and untagged TLBs make a context switch flush "
    'everything. Using ARM domains as address-space tags (with PID relocation, a caching page '
    'directory and domain recycling) avoids most flushes and lets address spaces share TLB entries; '
    'lmbench lat_ctx, hot potato, the extreme benchmark and L4 IPC show it (Table 1).'
)
