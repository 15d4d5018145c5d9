"""Seed 001: PT-Baker, a helper thread that keeps page-table entries warm in the caches (pt_baker)."""

CITE = (
    'Chatzopoulos, Improving the Locality of Page Table Walks in the Cache Hierarchy (PT-Baker), BSc '
    'thesis, Athens 2024'
)

CLAIMS = (
    'Page-table walks are slow when the page-table entries have left the caches. A helper thread on '
    'another core (user mode: loads or prefetches; kernel mode: PTE walks) keeps them warm in the '
    'shared cache, so walks of a TLB-thrashing application are served from the cache; stride, '
    'throttling, placement, memory pressure and 2D walks change how much it helps (Zen 3, Table 5.1).'
)
