"""The report's HTML: one self-contained page, no scripts, no fetches.

Styles are inline, plots are inline SVG, links go only to the data files beside the page. Every
number shown in a table cell carries `data-value` (the full value, as in the CSV) and the cell's
column in `data-col`, so a reader's tool (or the browser test) can match page and CSV.
"""

from __future__ import annotations

import html
import math
from typing import Any, Iterable

CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;max-width:70rem;margin:1.5rem auto;padding:0 1rem;color:#1b1b1b}
h1{font-size:1.6rem}h2{border-bottom:2px solid #ddd;padding-bottom:.2rem;margin-top:2.2rem}
h3{margin-top:1.6rem}nav ol{columns:2}
table{border-collapse:collapse;margin:.6rem 0;font-size:.85rem}
th,td{border:1px solid #ddd;padding:.2rem .45rem;vertical-align:top}th{background:#f4f4f4;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.holds{color:#12651f;font-weight:600}.fails{color:#a11;font-weight:600}.error{color:#a11}
.scroll{max-height:26rem;overflow:auto;border:1px solid #eee}
figure{margin:.8rem 0}figure svg{max-width:100%;height:auto}
.meta{color:#555;font-size:.9rem}pre{background:#f7f7f7;padding:.6rem;overflow:auto;font-size:.8rem}
details{margin:.4rem 0}summary{cursor:pointer;color:#333}
"""


def esc(text: Any) -> str:
    return html.escape("" if text is None else str(text), quote=True)


def slug(text: str) -> str:
    return "".join(c if c.isalnum() or c == "_" else "-" for c in text).strip("-").lower()


def fmt(v: Any) -> str:
    """A number as shown: integers whole, others to 6 significant digits; absent as '—'."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) < 1e15):
        return f"{int(v):,}".replace(",", "\u2009")
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


# Columns whose numbers are fractions of a whole, shown as percentages (the CSV keeps the
# fraction, as does the cell's data-value).
PERCENT_COLS = {"rel_error"}


def fmt_percent(v: float) -> str:
    """A fraction as a signed percentage: -0.275362 -> '-27.5%'."""
    pct = 100 * v
    if pct == 0:
        return "0%"
    text = f"{pct:+.3g}" if abs(pct) < 1000 else f"{pct:+,.0f}".replace(",", "\u2009")
    return text + "%"


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def table(columns: list[tuple[str, str]], rows: Iterable[dict[str, Any]], table_id: str, cls: str = "",
          scroll: bool = False) -> str:
    """`columns` are (field, heading). Numeric cells carry data-value and data-col."""
    out = [f'<table id="{esc(table_id)}" class="{esc(cls)}"><thead><tr>']
    out += [f"<th scope=\"col\">{esc(h)}</th>" for _, h in columns]
    out.append("</tr></thead><tbody>")
    for r in rows:
        out.append("<tr>")
        for f, _ in columns:
            v = r.get(f)
            if hasattr(v, "item") and not isinstance(v, (str, bytes)):
                v = v.item()  # a NumPy scalar from a DataFrame: the plain number
            if isinstance(v, float) and math.isnan(v):
                v = None
            if _is_num(v):
                shown = fmt_percent(v) if f in PERCENT_COLS else fmt(v)
                out.append(f'<td class="num" data-col="{esc(f)}" data-value="{esc(repr(v))}">{esc(shown)}</td>')
            elif f == "holds" and isinstance(v, bool):
                out.append(f'<td data-col="holds" class="{"holds" if v else "fails"}">{"holds" if v else "does not hold"}</td>')
            else:
                out.append(f'<td data-col="{esc(f)}">{esc(fmt(v))}</td>')
        out.append("</tr>")
    out.append("</tbody></table>")
    body = "".join(out)
    return f'<div class="scroll">{body}</div>' if scroll else body


def links(files: dict[str, str], what: str) -> str:
    return (f'<p class="meta">{esc(what)}: <a href="{esc(files["csv"])}">CSV</a> · '
            f'<a href="{esc(files["parquet"])}">Parquet</a></p>')


def figure(svg: str | None, caption: str) -> str:
    if not svg:
        return ""
    return f"<figure>{svg}<figcaption class=\"meta\">{esc(caption)}</figcaption></figure>"


def document(title: str, nav: list[tuple[str, str]], body: list[str], generated: str) -> str:
    items = "".join(f'<li><a href="#{esc(a)}">{esc(t)}</a></li>' for a, t in nav)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
        # No scripts and nothing fetched: the page is complete without a network or JavaScript.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "img-src data:\">"
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
        f"<header><h1>{esc(title)}</h1><p class=\"meta\">{esc(generated)}</p></header>"
        f"<nav aria-label=\"sections\"><ol>{items}</ol></nav><main>"
        + "\n".join(body)
        + "</main></body></html>\n"
    )
