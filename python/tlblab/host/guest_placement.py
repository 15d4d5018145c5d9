"""The guest OS's placement of a program's pages in guest-physical memory, measured on this host
(docs/host-predict.md, "A gap in the model"), for `[virtualization] guest_placement`.

Under a hypervisor every guest page-walk reference and the data's guest-physical address are
translated again by the host's tables (the 2D walk, seed 001 §2.3). Where the guest's frames lie
decides how many host page-table lines and host page-directory entries a program's walks need:
frames in order share the host's PTE lines 8 to a line and its PDEs 512 to an entry, frames
scattered over the guest's memory need one of each per page. The model's default places frames
in order (`memory.placement = "sequential"`, a freshly booted machine); a guest after hours of
uptime does not. This module reads it: `n` fresh 4 KiB pages (an anonymous mapping under
`MADV_NOHUGEPAGE`, each touched once) and their frame numbers in `/proc/self/pagemap`, which
Linux shows only to a process with CAP_SYS_ADMIN (Documentation/admin-guide/mm/pagemap.rst: "the
PFNs are zeroed" otherwise). The statistics are those the host's walk depends on: distinct 2 MiB
guest-physical frames (host PDEs) and neighbouring pages in consecutive frames (shared host PTE
lines, a pair counted whether its frames ascend or descend). The host's own placement of guest memory in host-physical memory cannot be read from
inside the guest: it stays the machine's `memory.placement`.
"""

from __future__ import annotations

import ctypes
import math
import mmap
import struct
import time
from typing import Any

PAGE = 4096
FRAMES_2M = 512
MADV_NOHUGEPAGE = 15  # <linux/mman.h>
PAGEMAP = "/proc/self/pagemap"
MEMINFO = "/proc/meminfo"


def memory_bytes() -> int | None:
    """The guest's memory (/proc/meminfo MemTotal) rounded down to 2 MiB; None when unreadable."""
    try:
        with open(MEMINFO) as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024 // (2 << 20) * (2 << 20)
    except (OSError, ValueError, IndexError):
        return None
    return None


def read_frames(n: int) -> tuple[list[int] | None, str]:
    """The guest-physical frame numbers of `n` fresh, touched 4 KiB pages, or None and why not."""
    libc = ctypes.CDLL(None, use_errno=True)
    m = mmap.mmap(-1, n * PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    buf = ctypes.c_char.from_buffer(m)
    try:
        addr = ctypes.addressof(buf)
        # 4 KiB pages only: a huge page would hand out 512 consecutive frames whatever the
        # allocator's state.
        if libc.madvise(ctypes.c_void_p(addr), ctypes.c_size_t(n * PAGE), MADV_NOHUGEPAGE) != 0:
            return None, f"madvise(MADV_NOHUGEPAGE) failed (errno {ctypes.get_errno()})"
        for i in range(n):
            m[i * PAGE] = 1
        try:
            with open(PAGEMAP, "rb") as f:
                f.seek((addr // PAGE) * 8)
                raw = f.read(8 * n)
        except OSError as e:
            return None, f"{PAGEMAP}: not readable ({e.strerror})"
    finally:
        del buf
        m.close()
    if len(raw) != 8 * n:
        return None, f"{PAGEMAP}: expected {8 * n} bytes, found {len(raw)}"
    entries = struct.unpack(f"<{n}Q", raw)
    # Bit 63: present; bits 0-54: the frame number (pagemap.rst).
    if not all(e >> 63 & 1 for e in entries):
        return None, f"{PAGEMAP}: a touched page is not present"
    pfns = [e & ((1 << 55) - 1) for e in entries]
    if not any(pfns):
        return None, (f"{PAGEMAP}: every frame number reads 0 (Linux shows them only with CAP_SYS_ADMIN: "
                      "run as root)")
    return pfns, ""


def statistics_of(pfns: list[int]) -> dict[str, Any]:
    n = len(pfns)
    return {"pages": n,
            "distinct_2m_frames": len({p // FRAMES_2M for p in pfns}),
            # Either way: Linux's per-CPU lists hand recently freed pages back last in, first out,
            # so a run may descend; up or down, the two frames share a host PTE line the same way.
            "consecutive_neighbours": sum(1 for a, b in zip(pfns, pfns[1:]) if abs(b - a) == 1),
            "span_bytes": (max(pfns) - min(pfns) + 1) * PAGE}


def expected_distinct(placement: dict[str, Any], pages: int, guest_bytes: int) -> float:
    """About how many distinct 2 MiB frames `pages` 4 KiB pages take under the model's
    `placement`: in order, pages / 512; `clustered { p }` (random when p = 0), about
    1 + (pages - 1)(1 - p) runs of consecutive frames, each starting at a uniformly random frame:
    the occupancy of that many balls in R = guest_bytes / 2 MiB bins, R (1 - (1 - 1/R)^runs)
    (a run crossing a 2 MiB boundary, and runs of the same bin, neglected)."""
    if placement["type"] == "sequential":
        return float(math.ceil(pages / FRAMES_2M))
    p = placement.get("consecutive", 0.0)
    runs = 1 + (pages - 1) * (1 - p)
    r = guest_bytes / (2 << 20)
    return r * (1.0 - (1.0 - 1.0 / r) ** runs)


# The least memory the model's guest draws its frames from: room for the largest program's heap
# (gups: 1 GiB used) several times over with its page tables, whatever the sample says.
DRAWN_FLOOR = 4 << 30


def drawn_bytes(placement: dict[str, Any], pages: int, distinct: int, guest_bytes: int) -> int:
    """The guest memory, in 2 MiB frames, that `placement`'s random run starts must be drawn from
    for `pages` pages to take `distinct` 2 MiB frames (`expected_distinct` solved for R, which
    rises with R), between DRAWN_FLOOR and the guest's memory. Linux hands out frames from its
    free lists, not from all of memory: with most of it holding the page cache (free(1) here: about
    1 GiB free of 24 GiB) a program's pages fall in fewer 2 MiB frames than uniform draws over all
    of memory would give (measured: 2,700-3,500 distinct frames for 8192 scattered pages, where
    uniform draws over 24 GiB give 5,900)."""
    hi = guest_bytes // (2 << 20)
    lo = min(hi, DRAWN_FLOOR // (2 << 20))
    if expected_distinct(placement, pages, lo * (2 << 20)) >= distinct:
        return lo * (2 << 20)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if expected_distinct(placement, pages, mid * (2 << 20)) < distinct:
            lo = mid
        else:
            hi = mid
    return hi * (2 << 20)


def measure(pages: int = 262144) -> dict[str, Any]:
    """This guest's placement statistics and the model's placement that reproduces them:
    {"placement": {"type": "clustered", "consecutive": p} | None, "guest_bytes": ..., "source":
    str, "stats": {...}}; placement None (and `source` the reason) when the frames cannot be read.
    p is the measured fraction of neighbouring pages in consecutive frames (to two decimals);
    guest_bytes the memory the runs are drawn from (`drawn_bytes`) for the measured distinct 2 MiB
    frames. Nothing a predicted program measures enters."""
    guest = memory_bytes()
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    # As much as the larger programs allocate (1 GiB): a small sample's statistics depend on the
    # minute's free lists (samples of 8192 pages here: consecutive 0.0-0.99 within ten minutes),
    # and within one large allocation they change (its first 128 MiB scattered single pages,
    # then blocks of 2, 4, 8, 16 consecutive frames: the buddy allocator's orders), so the model
    # takes the statistics of an allocation of the programs' size (1 GiB twice in a row here:
    # consecutive 0.52 and 0.46, 8,110 and 8,225 distinct 2 MiB frames).
    pfns, why = read_frames(pages)
    if pfns is None or guest is None:
        return {"placement": None, "stats": None, "guest_bytes": guest,
                "source": why or f"{MEMINFO}: no MemTotal"}
    st = statistics_of(pfns)
    p = round(st["consecutive_neighbours"] / (pages - 1), 2)
    placement = {"type": "clustered", "consecutive": p}
    d = st["distinct_2m_frames"]
    drawn = drawn_bytes(placement, pages, d, guest)
    source = (f"measured {when}: /proc/self/pagemap of {pages} fresh 4 KiB pages (MADV_NOHUGEPAGE, each "
              f"touched once): {st['consecutive_neighbours']} of {pages - 1} neighbours in consecutive "
              f"frames (consecutive = {p}), {d} distinct 2 MiB guest-physical frames (sequential placement: "
              f"{pages // FRAMES_2M}; uniform over the guest's {guest >> 20} MiB: "
              f"{expected_distinct(placement, pages, guest):.0f}; the runs drawn from {drawn >> 20} MiB: "
              f"{expected_distinct(placement, pages, drawn):.0f}), span {st['span_bytes'] / 2**30:.1f} GiB; "
              "the host's placement of guest memory is not visible from the guest (memory.placement kept)")
    return {"placement": placement, "stats": st, "guest_bytes": drawn, "memtotal_bytes": guest, "source": source}


def of_run(pagemap: dict[str, Any], guest: int | None, what: str) -> dict[str, Any] | None:
    """The model's placement of one measured run's own heap, as `measure` makes it from its sample:
    from the mosaic allocator's pagemap statistics (`pfn_pages` pages in `frames_2m` distinct 2 MiB
    frames, `consecutive` of `neighbour_pairs` virtual neighbours in consecutive frames); None without
    frame numbers (not root) or the guest's memory size. `what` names the run in the source text.
    The consecutive share counts virtual neighbours, which is the allocation order only for a
    program that first touches its heap in order; the distinct frames fix the memory the runs are
    drawn from either way (`drawn_bytes`)."""
    pages, d, pairs = (int(pagemap.get(k) or 0) for k in ("pfn_pages", "frames_2m", "neighbour_pairs"))
    if pages < 2 or d < 1 or pairs < 1 or guest is None:
        return None
    p = round(int(pagemap.get("consecutive") or 0) / pairs, 2)
    placement = {"type": "clustered", "consecutive": p}
    drawn = drawn_bytes(placement, pages, d, guest)
    return {"placement": placement, "guest_bytes": drawn, "memtotal_bytes": guest,
            "source": f"{what}'s own heap (its allocator report's pagemap): {pages} pages in {d} distinct 2 MiB "
                      f"frames, consecutive = {p}, runs drawn from {drawn >> 20} MiB"}


def apply(nested: dict[str, Any], got: dict[str, Any], memory_bytes_limit: int) -> dict[str, Any]:
    """`nested` (a machine's `[virtualization]`) with the measured guest placement and the guest's
    memory size; unchanged when nothing was measured."""
    if got["placement"] is None:
        return nested
    out = dict(nested, guest_placement=got["placement"], guest_placement_source=got["source"])
    if got["guest_bytes"]:
        out["guest_memory_bytes"] = min(int(got["guest_bytes"]), memory_bytes_limit)
    return out
