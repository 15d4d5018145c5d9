"""Miss curves: the misses of one TLB level at every size, from one pass over a workload.

    >>> import tlblab
    >>> df = tlblab.curve("gups:log2_words=20,updates=200000", machine="zen3", level="L1D",
    ...                   sets=[1, 2, 4, 8, 16, 32, 64, 128])
    >>> df[(df.sets == 1) & (df.entries == 64)]       # a 64-entry fully associative L1D
    >>> tlblab.plot_curve(df, "gups.svg")

Exact curves (LRU, low page-number bits indexing the set): a fully associative level of
every size up to `max_entries` (Mattson's stack distances), and every associativity 1..16 at
each set count in `sets` (Hill and Smith's per-set stacks). A level below others (`level="L2D"`)
gets the curves of the references the levels above it miss, those levels simulated exactly
as the engine does. `sample=R` replaces the exact fully associative curve by a SHARDS-sampled
one (Waldspurger et al., FAST 2015) at rate R, exact up to 8 entries. Each point equals a
separate `tlblab simulate --tlb-only` run of that geometry (docs/curves.md has the method, what
is modelled, and the numbers measured).
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from tlblab import _native
from tlblab.sim import _machine_arg

COLUMNS = ["group", "sets", "ways", "entries", "misses", "miss_ratio", "references", "exact"]


def curve(workload: str, machine: str | dict[str, Any] = "zen3", level: str | None = None,
          sets: Iterable[int] | str | None = "all", max_entries: int = 65536,
          sample: float | None = None, seed: int = 0, groups: bool = True):
    """The miss curves of TLB level `level` (default: the machine's first data level) of
    `machine` over `workload` (a built-in workload spec or a trace file), as a pandas DataFrame
    with columns group ("all"; a page size or "process N" when the trace has several), sets,
    ways, entries, misses, miss_ratio, references (that reached the level), exact (False for
    sampled estimates). `sets`: set counts (powers of two), "all" (1, 2, 4, ..., 4096) or None
    (only the fully associative curve). `df.attrs` has the level, its path, the levels above it
    and the flush policy."""
    import pandas as pd

    data = curve_json(workload, machine, level, sets, max_entries, sample, seed, groups)
    frames = []
    for g in data["groups"]:
        refs = g["references"]
        f = pd.DataFrame({"sets": g["sets"], "ways": g["ways"], "misses": g["misses"], "exact": g["exact"]})
        f.insert(0, "group", g["name"])
        f.insert(3, "entries", f["sets"] * f["ways"])
        f.insert(5, "miss_ratio", f["misses"] / refs if refs else 0.0)
        f.insert(6, "references", refs)
        frames.append(f)
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)
    df.attrs.update({k: v for k, v in data.items() if k != "groups"})
    df.attrs["workload"] = workload
    return df


def curve_json(workload: str, machine: str | dict[str, Any] = "zen3", level: str | None = None,
               sets: Iterable[int] | str | None = "all", max_entries: int = 65536,
               sample: float | None = None, seed: int = 0, groups: bool = True) -> dict[str, Any]:
    """`curve`'s data as plain lists (columns per group), without pandas."""
    m, fmt = _machine_arg(machine)
    # `max_entries` bounds the fully associative curve, exact or sampled.
    text = _native.curve(workload, machine=m, level=level, sets=parse_sets(sets), max_entries=max_entries,
                         sample=sample, sample_entries=max_entries, seed=seed, groups=groups,
                         machine_format=fmt)
    return json.loads(text)


ALL_SETS = [1 << i for i in range(13)]


def parse_sets(sets: Iterable[int] | str | None) -> list[int]:
    """`"all"` → 1, 2, 4, ..., 4096; `"1,2,8"` or `[1, 2, 8]` → those; None → none."""
    from tlblab.errors import UserError

    if sets is None:
        return []
    if isinstance(sets, str):
        if sets.strip() == "all":
            return list(ALL_SETS)
        parts = [p.strip() for p in sets.split(",") if p.strip()]
        try:
            sets = [int(p) for p in parts]
        except ValueError:
            raise UserError(f"sets: expected 'all' or powers of two like 1,2,4, found '{','.join(parts)}'") from None
    out = [int(s) for s in sets]
    for s in out:
        if s <= 0 or s & (s - 1):
            raise UserError(f"sets: expected powers of two, found {s}")
    return out


def plot_curve(df, path: str | None = None, title: str | None = None, group: str = "all",
               ways: Iterable[int] = (1, 2, 4, 8, 16)):
    """Plots `df` (from `curve`) to `path` (.svg, .png or .pdf, by matplotlib): the fully
    associative curve over entries (log scale), and for each set count the curves of `ways`
    as points at sets x ways entries. Returns `path`. Without `path` (a notebook) it returns
    the matplotlib figure, drawn by whatever backend is in use, for the cell to show."""
    import matplotlib

    from tlblab.errors import UserError

    if path is not None:
        # A file: no display needed, and none may exist (a server, CI).
        matplotlib.use("Agg")
        if not str(path).lower().endswith((".svg", ".png", ".pdf")):
            raise UserError(f"plot: expected a .svg, .png or .pdf file name, found '{path}'")
    import matplotlib.pyplot as plt

    d = df[df["group"] == group]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    fa = d[d["sets"] == 1]
    for exact, label, style in ((True, "fully associative (exact)", "-"), (False, "fully associative (sampled)", "--")):
        part = fa[fa["exact"] == exact].sort_values("entries")
        if len(part):
            ax.plot(part["entries"], part["miss_ratio"], style, color="black", lw=1.4, label=label)
    wanted = set(ways)
    multi = d[(d["sets"] > 1) & (d["exact"])]
    cmap = plt.get_cmap("viridis")
    counts = sorted(multi["sets"].unique())
    for i, s in enumerate(counts):
        part = multi[(multi["sets"] == s) & (multi["ways"].isin(wanted))].sort_values("entries")
        ax.plot(part["entries"], part["miss_ratio"], "o-", ms=3, lw=0.8,
                color=cmap(i / max(len(counts) - 1, 1)), label=f"{s} sets")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("TLB entries (sets x ways)")
    ax.set_ylabel("miss ratio")
    ax.set_ylim(bottom=0)
    ax.grid(True, which="both", alpha=0.3)
    a = df.attrs
    ax.set_title(title or f"{a.get('workload', '')}: {a.get('machine', '')} {a.get('level', '')} ({group})", fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    if path is None:
        return fig
    _atomic(path, lambda tmp: fig.savefig(tmp, format=str(path).rsplit(".", 1)[1].lower()))
    plt.close(fig)
    return path


def write_csv(df, path: str) -> None:
    """Writes `df` as CSV to `path`, whole or not at all."""
    _atomic(path, lambda tmp: df.to_csv(tmp, index=False))


def _atomic(path: str, write) -> None:
    """Runs `write(tmp)` on a temporary file beside `path`, then renames it to `path`: a
    failure leaves no partial file."""
    import os

    from tlblab.errors import UserError
    from tlblab.files import atomic_write

    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        raise UserError(f"{path}: no such directory '{d}'")
    atomic_write(path, write)
