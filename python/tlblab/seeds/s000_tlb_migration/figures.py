"""Seed 000's statements about its figures that the table reproductions do not read: §4.3's
reduction of the access times and its indirect restore (Figs. 4.9-4.10), §6.1's Cortex-A7
against gem5 (Figs. 6.1-6.2), §5.2's "each faster than its predecessor" and §6.2's exception
(Fig. 6.4), all from the runs of the table reproductions (Tables A.4, A.6, A.11-A.14).

Each function takes the tables `experiments.py` computes ({row key: value}, keys
`<column>/p<pages>`) and returns {row key: our value}; the registration is at the end of
`experiments.py` (this module imports nothing of it: the package has no import cycles).
"""

from __future__ import annotations

# Listing 6.1's gem5 runs at 900 MHz, and §6 converts the Cortex-A7's cycles to ns at the same
# clock (Table A.4's 447 cycles are Fig. 6.1's 497 ns).
NS_PER_CYCLE = 1000.0 / 900.0
# The page counts Tables A.4 and A.11 share (Fig. 6.1's and Fig. 6.2's x axis).
COMMON_PAGES = (1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 64)
# TLB entries the save reads (§6.1: "the A7 has four times the number of entries as gem5").
ENTRIES = {"a7": 256, "gem5": 64}


def fig6_1(a4: dict[str, float], a11: dict[str, float]) -> dict[str, float]:
    """Fig. 6.1: the 68k-benchmark's cold and migrated access on the Cortex-A7 (Table A.4, in
    ns) and in gem5 with interface v1 (Table A.11), gem5 over the A7 at each page count, and
    each platform's 64-page over 32-page time."""
    out: dict[str, float] = {}
    for col in ("cold", "migrated"):
        for p in COMMON_PAGES:
            a7 = a4[f"{col}/p{p}"] * NS_PER_CYCLE
            g = a11[f"{col}/p{p}"]
            out[f"a7/{col}/p{p}"] = a7
            out[f"gem5/{col}/p{p}"] = g
            out[f"gem5_over_a7/{col}/p{p}"] = g / a7
        for plat in ("a7", "gem5"):
            out[f"{plat}/{col}/r64_32"] = out[f"{plat}/{col}/p64"] / out[f"{plat}/{col}/p32"]
    small = [out[f"gem5_over_a7/cold/p{p}"] for p in range(2, 9)]  # one page left out: its A7 time is fitted
    out["gem5_over_a7/cold/min_2_8"] = min(small)
    out["gem5_over_a7/cold/max_2_8"] = max(small)
    return out


def fig6_2(a4: dict[str, float], a11: dict[str, float]) -> dict[str, float]:
    """Fig. 6.2: the time to read all TLB entries and store the relevant ones (the save) on the
    Cortex-A7 (Table A.4, in ns) and in gem5 with interface v1 (Table A.11): the A7 over gem5,
    the time per TLB entry read, and each platform's growth from 1 to 64 pages."""
    out: dict[str, float] = {}
    for p in COMMON_PAGES:
        out[f"a7/save/p{p}"] = a4[f"save/p{p}"] * NS_PER_CYCLE
        out[f"gem5/save/p{p}"] = a11[f"save/p{p}"]
        out[f"a7_over_gem5/save/p{p}"] = out[f"a7/save/p{p}"] / out[f"gem5/save/p{p}"]
    for plat in ("a7", "gem5"):
        out[f"{plat}/save_per_entry/p1"] = out[f"{plat}/save/p1"] / ENTRIES[plat]
        out[f"{plat}/save/growth_64_1"] = out[f"{plat}/save/p64"] / out[f"{plat}/save/p1"]
    return out


def restore_order(tables: dict[int, dict[str, float]], pages=COMMON_PAGES) -> dict[str, float]:
    """§5.2 and §6.2 (Fig. 6.4): each interface's restore (ns, Tables A.11-A.14), v1-v4."""
    return {f"v{v}/restore/p{p}": t[f"restore/p{p}"] for v, t in tables.items() for p in pages}


A7_PAGES = (1, 2, 3, 4, 5, 6, 7, 8, 16, 17, 18, 32, 64)


def s4_3(a4: dict[str, float], a6: dict[str, float]) -> dict[str, float]:
    """§4.3 on the Cortex-A7 (cycles): the reduction of the access time by the migration (cold
    less migrated access, Fig. 4.9's 68k-benchmark, direct restore: Table A.4) and the direct
    and indirect restores (Fig. 4.10: Tables A.4 and A.6) with their ratio."""
    out: dict[str, float] = {}
    for p in A7_PAGES:
        out[f"reduction/p{p}"] = a4[f"cold/p{p}"] - a4[f"migrated/p{p}"]
        out[f"restore_direct/p{p}"] = a4[f"restore/p{p}"]
        out[f"restore_indirect/p{p}"] = a6[f"restore/p{p}"]
        out[f"direct_over_indirect/p{p}"] = a4[f"restore/p{p}"] / a6[f"restore/p{p}"]
        # Ours only: the indirect approach's reduction (§4.3: "very similar").
        out[f"reduction_indirect/p{p}"] = a6[f"cold/p{p}"] - a6[f"migrated/p{p}"]
    return out
