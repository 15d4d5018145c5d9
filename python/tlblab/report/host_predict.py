"""The report's part for `tlblab host predict` (docs/host-predict.md): predicted against measured
runtimes with the y = x line, one colour per program, and the distribution of the errors beside the
linear baseline's. Called from `report._host` for the `predict` host run."""

from __future__ import annotations

from html import escape
from typing import Any

from tlblab.report.plots import _mpl, to_svg


def figures(data: dict[str, Any], hid: str) -> list[str]:
    rows = [r for r in data.get("rows", []) if r.get("measured_s") is not None and r.get("predicted_s") is not None]
    if not rows:
        return ['<p class="meta">No row with both a measured and a predicted runtime.</p>']
    plt = _mpl()
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(9.5, 4))
    programs = sorted({r["program"] for r in rows})
    for p in programs:
        mine = [r for r in rows if r["program"] == p]
        ax.scatter([r["measured_s"] for r in mine], [r["predicted_s"] for r in mine], s=14, label=p)
    lo = min(min(r["measured_s"], r["predicted_s"]) for r in rows)
    hi = max(max(r["measured_s"], r["predicted_s"]) for r in rows)
    ax.plot([lo, hi], [lo, hi], color="black", linewidth=0.8, label="y = x")
    ax.set_xlabel("measured ROI time (s)")
    ax.set_ylabel("predicted ROI time (s)")
    ax.set_title("Each program on each mosaic")
    ax.legend(fontsize=7)
    model = sorted(abs(r["error_pct"]) for r in rows if r["mosaic"] != "4k" and r.get("error_pct") is not None)
    linear = sorted(abs(r["linear_error_pct"]) for r in rows
                    if r["mosaic"] not in ("4k", "2m") and r.get("linear_error_pct") is not None)
    for name, errs in (("model", model), ("linear baseline", linear)):
        if errs:
            bx.step(errs, [(i + 1) / len(errs) for i in range(len(errs))], where="post", label=name)
    bx.set_xlabel("|error| (% of the all-4 KiB runtime)")
    bx.set_ylabel("share of the mosaics")
    bx.set_title("Error distribution")
    bx.legend(fontsize=7)
    caption = ("Predicted from one measured run per program (the all-4 KiB mosaic) and the simulated cycles of "
               "each mosaic; the linear baseline is fitted on the all-4 KiB and all-2 MiB runs.")
    return [f'<figure id="{hid}-figure">{to_svg(fig, hid)}<figcaption>{escape(caption)}</figcaption></figure>']
