"""The host's data prefetchers in the machine `tlblab host predict` simulates (docs/host-predict.md,
"A data prefetcher bound to the 4 KiB page").

AMD's Software Optimization Guide for family 19h (publication 56665, its data-prefetch section):
"AMD family 19h processors implement data prefetch logic for its L1 data cache and L2 cache. In
general, the L1 data prefetchers fetch lines into both the L1 data cache and the L2 cache, while
the L2 data prefetchers fetch lines into the L2 cache." Among them "L1 Stream: Uses history of
memory access patterns to fetch additional sequential lines in ascending or descending order",
"L1 Stride: Uses memory access history of individual instructions to fetch additional lines when
each access is a constant distance from the previous", and "L2 Stream: Uses history of memory access
patterns to fetch additional sequential lines in ascending or descending order" (the L1 Region and
L2 Up/Down prefetchers are not modelled: the first needs the instruction of each access, which a
capture does not keep per data reference, the second's "next or previous line for all memory
accesses" has no rule given). The family 1Ah guide (58455, Zen 5) could not be read here: this
host (family 1Ah) is assumed to keep family 19h's prefetchers.

The engine's prefetcher (`crates/tlblab-core/src/cache/prefetch.rs`) is the one model of them:
three misses one stride apart start a stream, fills are free. What the guide does not give is
assumed, and said so: the L1 one recognises strides of up to 4 lines either way (the Cortex-A7's
window, the one the engine had; a "constant distance" of any size is not distinguished from
random lines by three misses without the instruction), the L2 one sequential lines (window 1);
each keeps 8 lines ahead (with free fills the degree changes only how far a stride runs ahead,
not which lines hit); and each stream lives in one 4 KiB physical page (`per_page`): a stream on
physical addresses cannot know that the next frame is the next page, and on this host the
combined guest-and-host translation is 4 KiB in every mosaic (4 KiB host pages, measured)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

# AMD family 19h's L1 stream/stride and L2 stream prefetchers (module docstring), by cache level.
AMD_FAMILY_19H = {
    1: {"degree": 8, "window_lines": 4, "per_page": True},
    2: {"degree": 8, "window_lines": 1, "per_page": True},
}


def cpu_family(cpuinfo: Path = Path("/proc/cpuinfo")) -> tuple[str, int]:
    """(vendor_id, cpu family) of the first CPU in `cpuinfo`; ("", 0) when unreadable."""
    vendor, family = "", 0
    try:
        for line in cpuinfo.read_text().splitlines():
            k, _, v = line.partition(":")
            if k.strip() == "vendor_id" and not vendor:
                vendor = v.strip()
            elif k.strip() == "cpu family" and not family:
                family = int(v.strip() or 0)
            elif not line.strip() and vendor:
                break
    except (OSError, ValueError):
        return "", 0
    return vendor, family


def for_cpu(vendor: str, family: int) -> dict[int, dict[str, Any]] | None:
    """The prefetchers of a CPU by cache level, or None where none is sourced (module docstring:
    AMD family 19h, and 1Ah assumed to keep them)."""
    if vendor == "AuthenticAMD" and family >= 0x19:
        return AMD_FAMILY_19H
    return None


def with_prefetchers(m: dict[str, Any], levels: dict[int, dict[str, Any]] | None) -> dict[str, Any]:
    """`m` with a prefetcher on its private level-1 data cache and its private level-2 cache
    (`levels`: the config by level); `m` itself when `levels` is None or a level already has one."""
    if not levels:
        return m
    out = copy.deepcopy(m)
    for c in out.get("cache", []):
        lv = int(c.get("level", 0))
        private_data = not c.get("shared", False) and c.get("kind", "unified") != "instr"
        if lv in levels and private_data and (lv == 2 or c.get("kind") == "data") and "prefetch" not in c:
            c["prefetch"] = dict(levels[lv])
    return out
