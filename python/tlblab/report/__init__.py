"""The study's report: `out/study/report/index.html`, one page people read.

One section per seed (what it claims; each reproduction's figure redrawn from the transcribed
numbers beside ours; the rows with their errors; the verdicts, with the explanation where a
shape does not hold), the engine's own technique-free table, the host measurements when they
ran, and the time each section took. Every number is also in `data/` beside the page, as CSV
and Parquet. The page needs no network and no JavaScript (docs/report.md).

    >>> from tlblab.report import Study, build
    >>> build(Study(outcomes=tlblab.reproduce.run(quick=True)), "out/study/report")
"""

from __future__ import annotations

import datetime
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tlblab import seeds
from tlblab.report import page, plots
from tlblab.report.data import write_table


def _about(number: str) -> dict[str, str]:
    """The seed's citation and claims (its folder's CITE and CLAIMS), for the head of its section."""
    seed = seeds.get(number)
    return {"cite": seed.cite, "claims": seed.claims} if seed else {"cite": f"seed {number}", "claims": ""}


@dataclass
class HostRun:
    """One host measurement as the study ran it."""

    name: str
    argv: list[str]
    seconds: float
    data: dict[str, Any] | None = None
    error: str = ""


@dataclass
class Study:
    """Everything the page shows. Any part may be empty: the page says what did not run."""

    outcomes: list = field(default_factory=list)          # tlblab.reproduce.Outcome
    engine_summary: Any = None                           # DataFrame: summary.csv of the table
    engine_levels: Any = None                            # DataFrame: levels.csv
    engine_failures: list[str] = field(default_factory=list)
    curves: list | None = None                           # tlblab.report.curves.WorkloadCurves
    host: list[HostRun] | None = None                    # None: --host not given
    timings: list[dict[str, Any]] = field(default_factory=list)
    quick: bool = False
    command: str = "tlblab study"
    #: The size the reproductions ran at: "quick" (a smoke run, no verdict) or "full".
    size: str = "quick"
    #: The last full-size run of each reproduction (tlblab.records.Recorded), for a quick study.
    recorded: list = field(default_factory=list)
    records_error: str = ""
    #: Figures already drawn (`draw_into`: the study's side thread, while the reproductions
    #: still ran), by `figure_key`; `build` draws only the others.
    drawn: dict[str, str | None] = field(default_factory=dict)

    def verdict_outcomes(self) -> list:
        """The outcomes whose verdicts count: this run's at full size, else the recorded full runs'."""
        return list(self.outcomes) if self.size == "full" else [r.outcome for r in self.recorded]

    def shown(self) -> list[tuple[Any, str]]:
        """Each reproduction as its section shows it, with the size it ran at: the full-size
        outcome where there is one, else this run's smoke outcome."""
        if self.size == "full":
            return [(o, "full size, this run") for o in self.outcomes]
        rec = {r.outcome.reproduction.name: r for r in self.recorded}
        out = [(rec[o.reproduction.name].outcome, rec[o.reproduction.name].label()) if o.reproduction.name in rec
               else (o, "quick size, this run: a smoke run, no verdict") for o in self.outcomes]
        ran = {o.reproduction.name for o in self.outcomes}
        out += [(r.outcome, r.label()) for r in self.recorded if r.outcome.reproduction.name not in ran]
        return out

    def headline(self) -> str:
        """What the verdicts shown are, in one paragraph: the first thing the page and the
        terminal say."""
        from tlblab.records import FULL_RUN, FULL_RUN_TIME
        from tlblab.reproduce import seed_summary

        def counts(outcomes: list) -> str:
            ss = seed_summary(outcomes)
            p = sum(s["predictions_hold"] for s in ss), sum(s["predictions"] for s in ss)
            c = sum(s["consistency_hold"] for s in ss), sum(s["consistency"] for s in ss)
            u = sum(s["ours_hold"] for s in ss), sum(s["ours"] for s in ss)
            return (f"the seeds' predictions hold {p[0]} of {p[1]} (one count per claim); consistency checks "
                    f"{c[0]} of {c[1]}; tlblab's own claims {u[0]} of {u[1]}")

        if self.size == "full":
            return f"Full-size verdicts, from this run: {counts(self.outcomes)}."
        smoke = ("This run made the reproductions at their quick size: a smoke run that shows they still run, "
                 "never a verdict counted for a seed.")
        if self.records_error:
            smoke += f" A full run's record could not be read: {self.records_error}."
        if not self.recorded:
            return (f"No full-size verdicts exist for these reproductions yet. {smoke} Make them with "
                    f"`{FULL_RUN}` ({FULL_RUN_TIME}); the next `tlblab study` shows them.")
        recs = [r.record for r in self.recorded]
        commits = sorted({r["commit"] or "unknown" for r in recs})
        dates = sorted(r["date"][:10] for r in recs)
        when = dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}"
        stale = sum(r.stale for r in self.recorded)
        ran = {o.reproduction.name for o in self.outcomes}
        have = {r.outcome.reproduction.name for r in self.recorded}
        text = (f"Full-size verdicts from the last `{FULL_RUN}` (commit {', '.join(commits)}, {when}), "
                f"{len(recs)} of {len(ran | have)} reproductions: {counts(self.verdict_outcomes())}.")
        if stale:
            text += (f" STALE: the code that determines the numbers changed since {stale} of them ran; "
                     f"`{FULL_RUN}` makes them again ({FULL_RUN_TIME}).")
        missing = sorted(ran - have)
        if missing:
            text += f" No full-size run yet of {', '.join(missing)} (`{FULL_RUN} SEED/ID`)."
        return f"{text} {smoke}"


ROW_COLS = [("key", "row"), ("quantity", "quantity"), ("unit", "unit"), ("x", "x"), ("seed", "seed"),
            ("ours", "tlblab"), ("error", "error"), ("rel_error", "relative error"),
            ("fitted", "fitted (not a prediction)"), ("note", "note")]
VERDICT_COLS = [("criterion", "criterion"), ("role", "role"), ("says", "says"), ("kind", "kind"),
                ("holds", "verdict"), ("detail", "what it looked at"),
                ("explanation", "why not (written after the run)"),
                ("stale", "explanation's numbers (when not this run's)"), ("because", "why a consistency check"),
                ("revised", "revisions (pre-registered criterion changed)")]
SEED_COLS = [("seed", "seed"), ("reproductions", "reproductions held"), ("predictions", "predictions held"),
             ("consistency", "consistency checks held"), ("ours", "ours held (not the seed's)"),
             ("worst", "worst relative error of a predicted row"), ("revisions", "revised criteria")]
# The per-reproduction table, narrow enough for a 1400 px window: each count as "held of all".
SUMMARY_COLS = [("reproduction", "reproduction"), ("size", "size"), ("verdict", "verdict"),
                ("predictions", "predictions held"), ("consistency", "consistency checks held"),
                ("ours", "ours held"), ("worst", "worst predicted error"), ("seconds", "seconds")]
FINDING_COLS = [("id", "finding"), ("source", "where in the seed"), ("seed_says", "the seed's words and numbers"),
                ("tlblab_shows", "what tlblab shows"), ("arithmetic", "the seed against itself"),
                ("reproduction", "reproduction")]


def _summary_row(o, size: str) -> dict[str, Any]:
    from tlblab.reproduce import summary_record

    r = summary_record(o)
    smoke = size.startswith("quick")
    return {"reproduction": r["reproduction"], "size": "quick (smoke)" if smoke else
            ("full, stale" if "STALE" in size else "full"),
            "verdict": "ran" if smoke and not o.error else ("not run" if o.error else r["verdict"]),
            "predictions": "" if smoke else f"{r['predictions_hold']} of {r['predictions']}"
            + (f" (counted in {r['counted_in']})" if r["counted_in"] else ""),
            "consistency": "" if smoke else f"{r['consistency_hold']} of {r['consistency']}",
            "ours": "" if smoke or not r["ours"] else f"{r['ours_hold']} of {r['ours']}",
            "worst": "" if smoke or r["worst_rel_error"] is None else
            f"{r['worst_rel_error']:+.0%} ({r['worst_row']})",
            "seconds": r["seconds"]}


def _sizes(study: Study) -> str:
    """The size each section ran at, in a short list under the headline."""
    repro = ("full size" if study.size == "full" else
             "quick size (a smoke run; the verdicts shown are the recorded full runs')" if study.recorded else
             "quick size (a smoke run; no full-size run recorded)")
    table = "300 K references a run (--quick)" if study.quick else "2 M references a run"
    return ("<ul class=\"meta\" id=\"sizes\">"
            f"<li>reproductions: {page.esc(repro)}</li><li>the engine's table: {page.esc(table)}</li></ul>")


def load_findings(seed: str) -> list[dict[str, Any]]:
    """The seed folder's `findings.toml` entries (tlblab.reproduce.load_findings), or []."""
    from tlblab.reproduce import load_findings as load

    s = seeds.get(seed)
    return load(s.folder / "findings.toml") if s else []


def _findings(seed: str, findings: list[dict[str, Any]], data_dir: Path) -> str:
    import pandas as pd

    if not findings:
        return (f'<section id="findings-{page.esc(seed)}"><h3>Findings</h3><p>None filed: no claim where the model '
                "does what the seed describes and still disagrees.</p></section>")
    files = write_table(pd.DataFrame(findings), data_dir, f"seed{seed}_findings")
    return (f'<section id="findings-{page.esc(seed)}"><h3>Findings</h3><p>Where the model does what the seed '
            "describes and still disagrees, or the seed's own numbers disagree with each other: the seed's "
            "exact words and numbers, what tlblab shows, and the arithmetic.</p>"
            + page.table(FINDING_COLS, findings, f"findings-table-{seed}", "findings")
            + page.links(files, "findings") + "</section>")


def build(study: Study, out: str | Path) -> Path:
    """Writes `index.html` and `data/` under `out`; returns the page's path."""
    import pandas as pd

    out = Path(out)
    data_dir = out / "data"
    body: list[str] = []
    nav: list[tuple[str, str]] = [("summary", "Summary")]

    # The verdicts of every reproduction first: what a reader looks for. Predictions (criteria
    # that can fail on what the model does) are counted apart from consistency checks (fitted
    # rows, or true by construction): only the first are evidence that the model reproduces.
    from tlblab.reproduce import seed_summary, summary_record

    shown = study.shown()
    verdicts = study.verdict_outcomes()
    findings = {seed: load_findings(seed) for seed in sorted({o.reproduction.seed for o, _ in shown})}
    body.append('<section id="summary"><h2>Summary</h2>')
    body.append(f'<p id="headline"><strong>{page.esc(study.headline())}</strong></p>')
    body.append(_sizes(study))
    if any(findings.values()):
        linked = [f'<a href="#findings-{seed}">seed {seed} ({len(fs)})</a>' for seed, fs in findings.items() if fs]
        body.append("<p>Findings, where the model does what the seed describes and still disagrees, or the seed "
                    "contradicts itself: " + ", ".join(linked) + ".</p>")
    if verdicts:
        per_seed = seed_summary(verdicts)
        files = write_table(pd.DataFrame(per_seed), data_dir, "seeds_summary")
        body.append("<p>Per seed, at full size. A <em>prediction</em> is a claim of the seed's that can fail on "
                    "what the model does, counted once (a reproduction that repeats another's claims at a smaller "
                    "size is shown, not counted); a <em>consistency check</em> reads only rows calibrated from the "
                    "seed's numbers, or holds by construction, and is no evidence either way; <em>ours</em> are "
                    "tlblab's own claims, not the seed's. The worst relative error is over the rows the "
                    "predictions read, fitted rows left out. A revised criterion changed after it was "
                    "pre-registered; its revisions are listed beside it.</p>")
        rows = [{"seed": r["seed"], "reproductions": f"{r['reproductions_hold']} of {r['reproductions']}",
                 "predictions": f"{r['predictions_hold']} of {r['predictions']}",
                 "consistency": f"{r['consistency_hold']} of {r['consistency']}",
                 "ours": f"{r['ours_hold']} of {r['ours']}", "worst": r["worst"],
                 "revisions": r["revisions"]} for r in per_seed]
        body.append(page.table(SEED_COLS, rows, "seeds-summary"))
        body.append(page.links(files, "per seed"))
    if shown:
        summary_rows = [_summary_row(o, size) for o, size in shown]
        files = write_table(pd.DataFrame([dict(summary_record(o), size=size) for o, size in shown]), data_dir,
                            "verdicts_summary")
        body.append("<h3>Per reproduction</h3>")
        body.append(page.table(SUMMARY_COLS, summary_rows, "verdicts-summary"))
        body.append(page.links(files, "verdicts"))
    else:
        body.append("<p>No reproduction ran.</p>")
    if study.timings:
        files = write_table(pd.DataFrame(study.timings), data_dir, "timings")
        body.append("<h3>Time per section</h3>")
        body.append(page.table([("section", "section"), ("seconds", "seconds"), ("status", "status")],
                               study.timings, "timings"))
        body.append(page.links(files, "timings"))
    body.append("</section>")

    by_seed: dict[str, list] = {}
    for o, size in shown:
        by_seed.setdefault(o.reproduction.seed, []).append((o, size))
    # Every figure of the page (the reproductions' and the miss curves') drawn at once, on both
    # cores (`_figures`).
    curve_svgs: list[str | None] = []
    drawn = iter(_figures([o for seed in sorted(by_seed) for o, _ in by_seed[seed]], study.curves or [],
                          curve_svgs, study.drawn))
    figures = {seed: [next(drawn) for _ in by_seed[seed]] for seed in sorted(by_seed)}
    for seed in sorted(by_seed):
        info = _about(seed)
        sid = f"seed-{seed}"
        nav.append((sid, f"Seed {seed}: {info['cite'].split(',')[0]}"))
        body.append(f'<section id="{sid}" class="seed" data-seed="{page.esc(seed)}">')
        body.append(f"<h2>Seed {page.esc(seed)}</h2><p class=\"meta\">{page.esc(info['cite'])}</p>")
        if info["claims"]:
            body.append(f"<p><strong>What it claims.</strong> {page.esc(info['claims'])}</p>")
        outs = by_seed[seed]
        body.append("<p><strong>Reproduced here:</strong></p><ul>" + "".join(
            f"<li>{page.esc(o.reproduction.title)} <span class=\"meta\">({page.esc(o.reproduction.source)}; "
            f"{page.esc(size)})</span></li>" for o, size in outs) + "</ul>")
        body.append(_findings(seed, findings.get(seed, []), data_dir))
        for (o, size), svg in zip(outs, figures[seed]):
            body.append(_reproduction(o, data_dir, size, svg))
        migrate = next((r for r in study.host or [] if r.name == "migrate" and r.data
                        and r.data.get("prediction")), None)
        if seed == "000" and migrate:
            # The model predicting this host's re-warm (tlblab host migrate --predict), drawn here
            # too: the seed's technique measured on the machine the study ran on.
            body.append('<article class="host-prediction"><h3>This host: re-warming after a migration, measured and '
                        'predicted</h3><p>The measured curves of <code>tlblab host migrate</code> beside the model\'s '
                        "prediction for this host (its probed machine, its L3 as the LLC probe found it, the re-warm "
                        'cost measured on it); every number in <a href="#host-migrate">This host</a>.</p>')
            body.extend(_migrate_figures(migrate.data, "seed-000-host-migrate"))
            body.append("</article>")
        body.append("</section>")

    nav.append(("engine", "The engine's own table"))
    body.append(_engine(study, data_dir))
    if study.curves is not None:
        nav.append(("curves", "Miss curves"))
        body.append(_curves(study.curves, data_dir, curve_svgs))
    if study.host is not None:
        nav.append(("host", "This host"))
        body.append(_host(study.host, data_dir))

    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    mode = " --quick" if study.quick else ""
    text = page.document("tlblab study: the seeds' results beside tlblab's", nav, body,
                         f"Written by `{study.command}`{mode} on {stamp}. Every number is also in data/ "
                         "(CSV and Parquet).")
    out.mkdir(parents=True, exist_ok=True)
    index = out / "index.html"
    from tlblab.files import atomic_write

    atomic_write(index, text)
    return index


def _x_label(rep) -> str:
    """The reproduction file's `x_label` (what its rows' `x` counts), or ""."""
    try:
        version = Path(rep.path).stat().st_mtime_ns
    except OSError:
        return ""
    return _x_label_of(str(rep.path), version)


@functools.lru_cache(maxsize=None)
def _x_label_of(path: str, version: int) -> str:
    # Read once a process and version of the file: a figure's arguments are made to draw it
    # ahead and again to find it.
    import tomllib

    try:
        value = tomllib.loads(Path(path).read_text()).get("x_label", "")
    except (OSError, tomllib.TOMLDecodeError):
        return ""
    return value if isinstance(value, str) else ""


def _rows(o) -> list[dict[str, Any]]:
    """The rows outcome `o` shows and draws: its own, or the file's without ours when it did not run."""
    rep = o.reproduction
    return o.row_records or [{"key": r["key"], "quantity": r["quantity"], "unit": r.get("unit", ""),
                              "series": r.get("series", ""), "x": r.get("x"), "seed": r.get("seed"),
                              "ours": None, "error": None, "rel_error": None, "note": r.get("note", "")}
                             for r in rep.rows]


def _rid(rep) -> str:
    return f"repro-{rep.seed}-{page.slug(rep.id)}"


def _figure(o) -> tuple[list[dict[str, Any]], str, str, str]:
    """The arguments of `plots.reproduction` for outcome `o`: its rows (the file's, without
    ours, when it did not run), title, element id prefix and x axis label."""
    rep = o.reproduction
    rows = _rows(o)
    has_seed = any(r.get("seed") is not None for r in rows)
    source = rep.source.split("(")[0].strip()
    title = f"{source}: seed vs tlblab" if has_seed else f"{source}: tlblab (the seed states no numbers here)"
    return rows, title, f"plot-{_rid(rep)}", _x_label(rep)


# Reproductions from which their figures are drawn on two processes (`_figures`): each takes
# about half a second of matplotlib, and the page is written when every other section is done,
# one core idle beside it.
PARALLEL_FIGURES = 8


def _figures(outcomes: list, curves: list | None = None, curve_svgs: list | None = None,
             drawn: dict[str, str | None] | None = None) -> list[str | None]:
    """Each outcome's figure (`plots.reproduction`), on two worker processes when there are
    PARALLEL_FIGURES or more and two CPUs (`tlblab.reproduce_pool`: the same SVG bytes, in the
    outcomes' order; Ctrl-C stops the workers). With `curves`, their figures too, in the same
    pool (they were drawn one after another once the others were done, 14 of the report's 37 s on
    a Zen 4 guest, 2026-11-30), put in `curve_svgs` in the curves' order (None where not drawn).
    A figure in `drawn` (`figure_key`: drawn ahead, `draw_into`) is taken from there."""
    import os

    from tlblab import reproduce_pool

    units = [reproduction_unit(o) for o in outcomes]
    curve_units = [curve_unit(c) for c in curves or []]
    units += [u for u in curve_units if u is not None]
    drawn = drawn or {}
    keys = [figure_key(u) for u in units]
    todo = [u for u, k in zip(units, keys) if k not in drawn]
    jobs = min(2, os.cpu_count() or 1) if len(todo) >= PARALLEL_FIGURES else 1
    new = iter(reproduce_pool.run_units(_draw, todo, jobs=jobs))
    svgs = [drawn[k] if k in drawn else next(new) for k in keys]
    rest = iter(svgs[len(outcomes):])
    if curve_svgs is not None:
        curve_svgs.extend(None if u is None else next(rest) for u in curve_units)
    return svgs[:len(outcomes)]


def _draw(kind: str, *args) -> str | None:
    """One figure of `_figures`, in a worker: `plots.reproduction` or `plots.lines`."""
    return plots.reproduction(*args) if kind == "reproduction" else plots.lines(*args)


def reproduction_unit(o) -> tuple:
    """Outcome `o`'s figure as `_draw`'s arguments."""
    return ("reproduction", *_figure(o))


def curve_unit(c) -> tuple | None:
    """A workload's miss curves' figure as `_draw`'s arguments, or None (not drawn)."""
    u = _curve_figure(c)
    return None if u is None else ("lines", *u)


def figure_key(unit: tuple) -> str:
    """A figure's arguments as text (floats exactly, `repr`): a plot is a function of its
    arguments, the same key the same SVG."""
    return repr(unit)


def draw_into(drawn: dict[str, str | None], unit: tuple) -> None:
    """Draws `unit` (`reproduction_unit`, `curve_unit`) here into `drawn`, by `figure_key`,
    unless it is there: the study draws figures on its side thread while the reproductions'
    last units still run on the worker processes (a core was idle there, and the report drew
    every figure after them, issue 89); `build` then draws only the rest."""
    k = figure_key(unit)
    if k not in drawn:
        drawn[k] = _draw(*unit)


def _curve_figure(c) -> tuple | None:
    """The arguments of `plots.lines` for a workload's miss curves, or None (not drawn)."""
    if c.error:
        return None
    cid = f"curve-{page.slug(c.workload)}"
    series: dict[str, list[tuple[float, float]]] = {}
    for lvl in c.levels:
        label = lvl if lvl == c.levels[0] else f"{lvl} ({c.levels[0]} fixed)"
        series[label] = [(p["entries"], p["miss_ratio"]) for p in c.points if p["level"] == lvl]
    return (series, f"{c.workload} on {c.machine}", "entries (fully associative LRU)", "miss ratio",
            f"plot-{cid}", True, {f"{lvl}: {n}": n for lvl, n in c.preset_entries.items()})


def _reproduction(o, data_dir: Path, size: str = "", svg: str | None = None) -> str:
    """One reproduction's article (`svg`: its figure, drawn by `_figures`; else drawn here)."""
    import pandas as pd

    rep = o.reproduction
    rid = _rid(rep)
    parts = [f'<article id="{rid}" class="reproduction" data-name="{page.esc(rep.name)}">',
             f"<h3>{page.esc(rep.title)}</h3>",
             f"<p class=\"meta\">{page.esc(rep.source)} · machine <code>{page.esc(rep.machine)}</code> · "
             f"{o.seconds:.1f} s · <strong>{page.esc(size)}</strong></p>",
             f"<details><summary>Setup: how tlblab stands in for the seed's machine and benchmark</summary><p>{page.esc(rep.setup)}</p></details>"]
    if o.error:
        parts.append(f'<p class="error">Not run: {page.esc(o.error)}</p>')
    elif size.startswith("quick"):
        parts.append("<p>No verdict: a smoke run at the quick size (its numbers are not the seed's scale). "
                     "<code>tlblab reproduce " + page.esc(rep.name) + "</code> makes the full-size one.</p>")
    else:
        verdict = "holds" if o.holds else "does not hold"
        p_held, p_all = o.held("prediction")
        c_held, c_all = o.held("consistency")
        u_held, u_all = o.held("ours")
        parts.append(f'<p>Verdict: <span class="{"holds" if o.holds else "fails"}">{verdict}</span> '
                     f"(predictions: {p_held} of {p_all} hold; consistency checks: {c_held} of {c_all}"
                     + (f"; ours, not the seed's: {u_held} of {u_all}" if u_all else "")
                     + (f"; its claims are counted in {page.esc(rep.seed)}/{page.esc(rep.counted_in)}"
                        if rep.counted_in else "") + ").</p>")
    # The figure's arguments only when it is drawn here (`_figure` reads the file again).
    rows = _rows(o)
    has_seed = any(r.get("seed") is not None for r in rows)
    svg = plots.reproduction(*_figure(o)) if svg is None else svg
    parts.append(page.figure(svg, "The seed's numbers (transcribed, hatched or dashed) beside tlblab's, every "
                                  "row of tlblab's drawn." if has_seed else "tlblab's numbers: the seed states "
                                  "a shape, not numbers, for these rows."))
    stem = f"seed{rep.seed}_{page.slug(rep.id)}"
    files = write_table(pd.DataFrame(rows), data_dir, stem)
    parts.append(page.table(ROW_COLS, rows, f"rows-{rid}", "rows", scroll=len(rows) > 14))
    parts.append(page.links(files, "rows"))
    if o.verdict_records and not size.startswith("quick"):
        revised: dict[str, list[str]] = {}
        for rv in rep.revisions:
            revised.setdefault(rv["criterion"], []).append(_revision_text(rv))
        verdicts = [dict(v, revised=" | ".join(revised.get(v["criterion"], []))) for v in o.verdict_records]
        vfiles = write_table(pd.DataFrame(verdicts), data_dir, f"{stem}_verdicts")
        parts.append(page.table(VERDICT_COLS, verdicts, f"verdicts-{rid}", "verdicts"))
        parts.append(page.links(vfiles, "verdicts"))
    parts.append("</article>")
    return "\n".join(parts)


def _revision_text(rv: dict[str, Any]) -> str:
    """`date: field before -> after, ...; why` for one [[revisions]] entry."""
    before, after = rv.get("before", {}), rv.get("after") or {}
    changed = [f"{k} {before.get(k, '(none)')} -> {after.get(k, '(none)')}"
               for k in sorted(set(before) | set(after)) if before.get(k) != after.get(k)]
    what = "removed" if rv.get("removed") else ", ".join(changed) or "no field changed"
    return f"{rv['date']}: {what}. {rv['why']}"


ENGINE_COLS = [("machine", "machine"), ("workload", "workload"), ("references", "references"),
               ("walks", "walks"), ("walk_refs", "walk refs"), ("walk_refs_memory", "walk refs from memory"),
               ("cycles", "cycles"), ("cycles_per_ref", "cycles/ref")]


def _engine(study: Study, data_dir: Path) -> str:
    parts = ['<section id="engine"><h2>The engine\'s own table</h2>',
             "<p>Every built-in workload of the default set on every machine preset, no technique: TLB "
             "misses, page walks, where the walks' references were served, cycles (what "
             "<code>tlblab study</code> prints).</p>"]
    s = study.engine_summary
    if s is None or len(s) == 0:
        parts.append("<p>Not run.</p></section>")
        return "\n".join(parts)
    s = s.copy()
    s["workload_name"] = s["workload"].map(lambda w: str(w).split(":")[0])
    files = write_table(s.drop(columns=["workload_name"]), data_dir, "engine_summary")
    parts.append(page.figure(plots.grouped_bars(s, "workload_name", "machine", "cycles_per_ref",
                                                "Cycles per reference, no technique", "cycles / reference",
                                                "plot-engine"), "Each workload on each preset."))
    cols = [(c, h) for c, h in ENGINE_COLS if c in s]
    parts.append(page.table(cols, s.to_dict("records"), "engine-summary", "engine", scroll=len(s) > 14))
    parts.append(page.links(files, "one row per machine × workload, every counter"))
    if study.engine_levels is not None and len(study.engine_levels):
        lfiles = write_table(study.engine_levels, data_dir, "engine_levels")
        parts.append(page.links(lfiles, "one row per TLB level"))
    for f in study.engine_failures:
        parts.append(f'<p class="error">not run: {page.esc(f)}</p>')
    parts.append("</section>")
    return "\n".join(parts)


def _curves(curves: list, data_dir: Path, svgs: list | None = None) -> str:
    import pandas as pd

    parts = ['<section id="curves"><h2>Miss curves</h2>',
             "<p>Each workload of the engine's table: the misses of its first data TLB level at every "
             "size (fully associative LRU, exact, from one pass), and of the second data level with "
             "the first fixed at the preset's geometry. A dashed line marks the preset's own size. "
             "The same curves, for any level, set count and trace: <code>tlblab curve</code> "
             "(docs/curves.md).</p>"]
    points = [p for c in curves for p in c.points]
    if points:
        files = write_table(pd.DataFrame(points), data_dir, "miss_curves")
        parts.append(page.links(files, "every point drawn (a geometric grid of sizes)"))
    for i, c in enumerate(curves):
        cid = f"curve-{page.slug(c.workload)}"
        parts.append(f'<article id="{cid}" class="curve" data-workload="{page.esc(c.workload)}">')
        parts.append(f"<h3><code>{page.esc(c.workload)}</code></h3>")
        if c.error:
            parts.append(f'<p class="error">not drawn: {page.esc(c.error)}</p></article>')
            continue
        refs = {lvl: next((p["references"] for p in c.points if p["level"] == lvl), 0) for lvl in c.levels}
        # Drawn beside the reproductions' figures (`_figures`), or here.
        svg = svgs[i] if svgs is not None and i < len(svgs) else plots.lines(*_curve_figure(c))
        reached = ", ".join(f"{lvl}: {n:,} references" for lvl, n in refs.items())
        parts.append(page.figure(svg, f"References that reached each level: {reached}. {c.seconds:.1f} s."))
        parts.append("</article>")
    parts.append("</section>")
    return "\n".join(parts)


def _flatten(d: Any, prefix: str = "") -> list[dict[str, Any]]:
    out = []
    if isinstance(d, dict):
        for k, v in d.items():
            out += _flatten(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(d, list):
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in d) and len(d) <= 8:
            out.append({"field": prefix, "value": ", ".join(page.fmt(v) for v in d)})
        else:
            for i, v in enumerate(d):
                out += _flatten(v, f"{prefix}[{i}]")
    else:
        out.append({"field": prefix, "value": d})
    return out


def _migrate_figures(data: dict[str, Any], hid: str) -> list[str]:
    """`tlblab host migrate`'s re-touch curves per stride, with the model's prediction for this
    host beside them when the run has one (`--predict`)."""
    parts = []
    for stride, d in (data.get("strides") or {}).items():
        series = {}
        for variant in ("dep", "rewarm+dep", "indep", "rewarm+indep"):
            pts = [(row["n"], row[variant][1]) for row in d.get("rows", []) if variant in row]
            if pts:
                series[variant] = pts
        pred = ((data.get("prediction") or {}).get("strides") or {}).get(stride)
        caption = "Seed 000 §4.3's benchmark on this host, with and without re-warming."
        if pred:
            # The model's prediction for this host beside the measured curves (seed 000's
            # host_migrate_prediction: this host's probed machine, LLC probe and re-warm cost).
            for variant in ("dep", "rewarm+dep"):
                series[f"model {variant}"] = [(row["n"], row[variant]) for row in pred["rows"]]
            caption += (f" Model: re-warming pays from N = {pred['first_win_n']}, best "
                        f"{pred['best_gain']:.2f}x at N = {pred['best_gain_n']}; measured: from N = "
                        f"{pred['measured_first_win_n']}, best {pred['measured_best_gain']:.2f}x at N = "
                        f"{pred['measured_best_gain_n']}.")
        parts.append(page.figure(plots.lines(series, f"stride {stride} B: re-touch after a migration",
                                             "pages", "ns per pass (median)", f"plot-{hid}-{stride}", logx=True),
                                 caption))
    return parts


def _host(runs: list[HostRun], data_dir: Path) -> str:
    import pandas as pd

    parts = ['<section id="host"><h2>This host</h2>',
             "<p>The techniques measured on the machine the study ran on (<code>tlblab probe</code>, "
             "<code>tlblab host coloring / ptwarm / migrate</code>). Timing on a shared machine is noisy: "
             "each tool reports medians and spreads.</p>"]
    for r in runs:
        hid = f"host-{page.slug(r.name)}"
        parts.append(f'<article id="{hid}" class="host"><h3>{page.esc(r.name)}</h3>'
                     f"<p class=\"meta\"><code>{page.esc(' '.join(r.argv))}</code> · {r.seconds:.1f} s</p>")
        if r.error:
            parts.append(f'<p class="error">{page.esc(r.error)}</p></article>')
            continue
        if r.name == "migrate" and r.data:
            parts.extend(_migrate_figures(r.data, hid))
        if r.name == "predict" and r.data:
            from tlblab.report import host_predict

            parts.extend(host_predict.figures(r.data, hid))
        flat = _flatten(r.data or {})
        files = write_table(pd.DataFrame(flat if flat else [{"field": "", "value": ""}]), data_dir,
                            f"host_{page.slug(r.name)}")
        parts.append(page.table([("field", "field"), ("value", "value")], flat, f"table-{hid}", "host",
                                scroll=True))
        parts.append(page.links(files, "every field of the measurement"))
        parts.append("</article>")
    parts.append("</section>")
    return "\n".join(parts)
