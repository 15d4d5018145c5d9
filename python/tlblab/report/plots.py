"""The report's plots, drawn with matplotlib as SVG text to inline in the page.

Deterministic (a fixed hash salt, no date in the metadata) and self-contained: text stays text
(`svg.fonttype = none`), so the page needs no font files, and each plot's element ids carry a
prefix of their own, so several SVGs in one page never share an id.

Drawn cheaply (issue 89: the report's 91 figures were a quarter of `tlblab study --quick`'s CPU
seconds): a figure is laid out once and drawn once (`to_svg`), and a log axis's tick labels are
plain text with Unicode superscripts (`log_scale`: 10⁻³, 2⁸), not mathtext, whose parser took
a seventh of the drawing.
"""

from __future__ import annotations

import functools
import io
import math
import re
from typing import Any

_IDS = re.compile(r'id="([^"]+)"')


def _mpl():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "tlblab", "font.size": 9,
                         "axes.spines.top": False, "axes.spines.right": False})
    return plt


# Unicode superscripts for a log axis's exponents.
_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
# What matplotlib's log formatter writes in mathtext: `$\mathdefault{[-][C\times]B^{E}}$` or `{V}`.
_MATHTEXT = re.compile(r"\$\\mathdefault\{(-?)(?:([0-9.]+)\\times)?([0-9.]+(?:e[+-]?[0-9]+)?)(?:\^\{(-?[0-9.]+)\})?\}\$")


@functools.cache
def _log_labels():
    """The formatter class of `log_scale`, made when first needed (matplotlib is imported only to
    draw)."""
    from matplotlib.ticker import LogFormatterSciNotation

    class LogLabels(LogFormatterSciNotation):
        """matplotlib's log-axis labels (the same ticks labelled, the same numbers) as plain text:
        `10⁻³`, `2×10⁴`, `2⁸`; mathtext's parser took 6.5 of the report's CPU seconds."""

        def __call__(self, x, pos=None):
            return _plain(super().__call__(x, pos))

    return LogLabels


def _plain(label: str) -> str:
    """A mathtext tick label of matplotlib's log formatter as plain text (`_MATHTEXT`); any other
    text as it is."""
    m = _MATHTEXT.fullmatch(label)
    if not m:
        return label
    sign, coeff, base, exp = m.groups()
    if exp is None:
        return f"{sign}{base}"
    return f"{sign}{coeff + '×' if coeff else ''}{base}{exp.translate(_SUPERSCRIPT)}"


def log_scale(ax, which: str, base: float = 10) -> None:
    """`ax.set_xscale("log", base=base)` (`which` "x") or `set_yscale`, with plain-text tick
    labels (the ticks matplotlib labels, written without mathtext)."""
    (ax.set_xscale if which == "x" else ax.set_yscale)("log", base=base)
    axis = ax.xaxis if which == "x" else ax.yaxis
    labels = _log_labels()
    # As matplotlib's LogScale sets them (major and minor: labelOnlyBase False, no subs).
    axis.set_major_formatter(labels(base))
    axis.set_minor_formatter(labels(base, labelOnlyBase=False))


def to_svg(fig, prefix: str) -> str:
    """The figure as an `<svg>` element (no XML prolog), ids prefixed with `prefix`.

    Laid out once (constrained layout: every label inside the figure, as `bbox_inches="tight"`
    kept it), then drawn once: `savefig` with a layout engine or a tight box draws the whole
    figure a first time without output to lay it out or measure it, then again."""
    import matplotlib

    plt = _mpl()
    if fig.get_layout_engine() is None:
        fig.set_layout_engine("constrained")
    fig.get_layout_engine().execute(fig)
    with matplotlib.rc_context({"figure.autolayout": False, "figure.constrained_layout.use": False}):
        fig.set_layout_engine(None)  # the layout is done: no engine, so savefig draws once
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    for ident in sorted(set(_IDS.findall(text)), key=len, reverse=True):
        new = f"{prefix}-{ident}"
        text = text.replace(f'id="{ident}"', f'id="{new}"').replace(f"#{ident})", f"#{new})") \
                   .replace(f'"#{ident}"', f'"#{new}"')
    # Screen readers and the browser test find the plot by its role and label.
    return text.replace("<svg ", f'<svg role="img" aria-label="{prefix}" class="plot" ', 1)


def _log_worthy(values: list[float]) -> bool:
    pos = [v for v in values if v is not None and not math.isnan(v) and v > 0]
    return len(pos) == len([v for v in values if v is not None and not math.isnan(v)]) and len(pos) > 1 \
        and max(pos) / min(pos) > 1000


def _num(v: Any) -> float | None:
    if v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


# What a unit's short name means on an axis.
UNIT_LABELS = {"x": "ratio (×)", "%": "percent", "us": "µs", "fraction": "fraction"}


def _unit_label(unit: str) -> str:
    return UNIT_LABELS.get(unit, unit) or "value"


def _ours_only_kind(row: dict[str, Any]) -> str:
    """What a row without a unit counts, for its panel: a row of ours only (an experiment's extra
    value: pages, references, faults, ...) is named by the last part of its key without a digit
    (`qsort/page_faults` -> "page faults", `unmigrated/p16` -> "unmigrated"), so that one axis
    holds one quantity; "" for a row the reproduction lists (its quantity says what it is)."""
    if row.get("quantity") != "(ours only)":
        return ""
    parts = [p for p in str(row.get("key", "")).split("/") if p and not any(c.isdigit() for c in p)]
    return parts[-1].replace("_", " ") if parts else ""


def statistic(quantity: str) -> str:
    """The statistic a row's quantity states ("mean", "maximum", "standard deviation",
    "coefficient of variation"), or "" for a plain value: rows of different statistics are not
    drawn on one axis, even in one unit."""
    q = quantity.lower()
    for words, name in ((("standard deviation",), "standard deviation"),
                        (("coefficient of variation",), "coefficient of variation"),
                        (("most ", "maximum", "largest", "max "), "maximum")):
        if any(w in q for w in words):
            return name
    return ""


def reproduction(rows: list[dict[str, Any]], title: str, prefix: str, x_label: str = "") -> str | None:
    """The seed's numbers beside ours, one panel per unit and statistic: where every row of the
    panel has an `x`, a curve per series (the seed dashed with open markers where it states a
    number, ours solid over every row); else paired bars per row (the seed hatched). Every row
    with a number of either side is drawn. `x_label` names the x axis (the reproduction file's
    `x_label`)."""
    plt = _mpl()
    ours_only = not any(_num(r.get("seed")) is not None for r in rows)
    rows = [r for r in rows if _num(r.get("seed")) is not None or _num(r.get("ours")) is not None]
    if not rows:
        return None
    units: dict[tuple[str, str], list] = {}
    for r in rows:
        units.setdefault((r.get("unit") or _ours_only_kind(r), statistic(r.get("quantity") or "")), []).append(r)
    kinds = {u: not ours_only and all(_num(r.get("x")) is not None for r in rs) for u, rs in units.items()}
    heights = [2.8 if kinds[u] else 0.6 + 0.2 * len(rs) for u, rs in units.items()]
    fig, axes = plt.subplots(len(units), 1, figsize=(7.5, sum(heights) + 0.4), squeeze=False,
                             gridspec_kw={"height_ratios": heights}, layout="constrained")
    # Element ids the browser test reads: `xlabel-P`/`ylabel-P` each panel's axis names,
    # `ours-P-I` each of tlblab's curves or bars (one marker or bar per row of ours).
    for panel, (ax, ((unit, stat), mine)) in enumerate(zip(axes.flat, units.items())):
        value_label = _unit_label(unit) if not stat else f"{stat}, {_unit_label(unit)}"
        vals = [v for v in [_num(r.get("seed")) for r in mine] + [_num(r.get("ours")) for r in mine]
                if v is not None]
        if kinds[(unit, stat)]:
            series: dict[str, list] = {}
            for r in mine:
                series.setdefault(r.get("series") or r.get("quantity", ""), []).append(r)
            for i, (name, rs) in enumerate(series.items()):
                rs = sorted(rs, key=lambda r: _num(r["x"]))
                color = f"C{i % 10}"
                seed = [(_num(r["x"]), _num(r.get("seed"))) for r in rs if _num(r.get("seed")) is not None]
                ours = [(_num(r["x"]), _num(r.get("ours"))) for r in rs if _num(r.get("ours")) is not None]
                if seed:
                    ax.plot(*zip(*seed), "--o", color=color, mfc="none", ms=6, label=f"{name}: seed")
                if ours:
                    ax.plot(*zip(*ours), "-s", color=color, ms=3, label=f"{name}: tlblab",
                            gid=f"ours-{panel}-{i}")
            if _log_worthy([_num(r["x"]) for r in mine]):
                log_scale(ax, "x", base=2)
            ax.legend(fontsize=7, frameon=False, ncols=2 if len(series) > 2 else 1)
            ax.set_ylabel(value_label)
            ax.set_xlabel(x_label or "x (see each row's quantity in the table)")
        else:
            ys = list(range(len(mine)))
            seed = [_num(r.get("seed")) for r in mine]
            ours = [_num(r.get("ours")) for r in mine]
            if not ours_only:
                # No bar where the seed states no number (a row of ours only), not a bar of 0.
                seed_bars = ax.barh([y - 0.2 for y in ys], [v if v is not None else 0.0 for v in seed], height=0.4,
                                    color="#bbbbbb", edgecolor="#555555", hatch="//", label="seed")
                for bar, v in zip(seed_bars, seed):
                    bar.set_visible(v is not None)
            bars = ax.barh([y + 0.2 for y in ys], [v if v is not None else 0.0 for v in ours], height=0.4,
                           color="C0", label="tlblab")
            for k, (bar, v) in enumerate(zip(bars, ours)):
                if v is None:
                    bar.set_visible(False)
                else:
                    bar.set_gid(f"ours-{panel}-{k}")
            ax.set_yticks(ys, [r["key"] for r in mine], fontsize=7)
            ax.invert_yaxis()
            ax.set_xlabel(value_label)
            ax.set_ylabel("row")
            ax.legend(fontsize=7, frameon=False, loc="best")
        if _log_worthy(vals):
            log_scale(ax, "y" if kinds[(unit, stat)] else "x")
        ax.xaxis.label.set_gid(f"xlabel-{panel}")
        ax.yaxis.label.set_gid(f"ylabel-{panel}")
    fig.suptitle(title, fontsize=9)
    return to_svg(fig, prefix)


def grouped_bars(frame, group: str, bar: str, value: str, title: str, xlabel: str, prefix: str) -> str | None:
    """One row of bars per `group` value (top to bottom), one bar per `bar` value: the engine
    table's cycles per reference by workload and machine. Horizontal, so twenty workloads read."""
    plt = _mpl()
    if frame is None or frame.empty or value not in frame:
        return None
    groups = list(dict.fromkeys(frame[group]))
    bars = list(dict.fromkeys(frame[bar]))
    h = 0.8 / max(len(bars), 1)
    fig, ax = plt.subplots(figsize=(7.5, 0.9 + 0.16 * len(groups) * max(len(bars), 2) / 2), layout="constrained")
    for i, b in enumerate(bars):
        sub = frame[frame[bar] == b].set_index(group)[value]
        ax.barh([g + i * h - 0.4 + h / 2 for g in range(len(groups))],
                [float(sub.get(gname, float("nan"))) for gname in groups], height=h, label=str(b),
                color=f"C{i % 10}")
    ax.set_yticks(range(len(groups)), groups)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    if _log_worthy([float(v) for v in frame[value]]):
        log_scale(ax, "x")
    ax.legend(fontsize=7, frameon=False, loc="lower right")
    ax.set_title(title, fontsize=9)
    return to_svg(fig, prefix)


def lines(series: dict[str, list[tuple[float, float]]], title: str, xlabel: str, ylabel: str, prefix: str,
          logx: bool = False, marks: dict[str, float] | None = None) -> str | None:
    """Plain curves (the host measurements: ns per pass against pages; miss curves); `marks`
    draws a dashed vertical line at each x it names (a preset's own size)."""
    plt = _mpl()
    if not series:
        return None
    fig, ax = plt.subplots(figsize=(5.5, 3.2), layout="constrained")
    for i, (name, pts) in enumerate(series.items()):
        if pts:
            ax.plot(*zip(*pts), "-o", ms=3, color=f"C{i % 10}", label=name)
    for j, (name, x) in enumerate((marks or {}).items()):
        ax.axvline(x, ls="--", lw=0.8, color="0.4" if j == 0 else "0.65", label=name)
    if logx:
        log_scale(ax, "x", base=2)
    if _log_worthy([y for pts in series.values() for _, y in pts]):
        log_scale(ax, "y")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7, frameon=False)
    ax.set_title(title, fontsize=9)
    return to_svg(fig, prefix)
