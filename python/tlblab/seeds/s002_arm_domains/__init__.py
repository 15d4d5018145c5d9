"""Seed 002: ARM domains as address-space tags for fast context switches, and TLB entry sharing (fass)."""

CITE = (
    'Wiggins, Tuch, Uhlig, Heiser, Fast Address-Space Switching and TLB Sharing on the StrongARM'
)

CLAIMS = (
    "The StrongARM's virtually-indexed caches and untagged TLBs make a context switch flush "
    'everything. Using ARM domains as address-space tags (with PID relocation, a caching page '
    'directory and domain recycling) avoids most flushes and lets address spaces share TLB entries; '
    'lmbench lat_ctx, hot potato, the extreme benchmark and L4 IPC show it (Table 1).'
)
