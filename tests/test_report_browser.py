"""The study's report in a real headless Chromium (Debian's, driven by Playwright): the page loads
with no console error and fetches nothing, every seed that has a reproduction has its section and
every reproduction its plot, and numbers on the page equal those in the CSV beside it.

Skipped, with the reason, only when no browser can be had (no Playwright, or no chromium: `make
setup` installs both)."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from tlblab import cli, reproduce, seeds

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("study")
    # Seed 000's full-size verdicts, recorded by a real full run (seconds), for the study to show;
    # the other seeds' reproductions are the quick study's smoke runs, with no verdict.
    assert cli.main(["reproduce", "000", "--out", str(out / "full")]) == 0
    status = cli.main(["study", "--quick", "--machines", "zen3,sa1100", "--workloads", "random",
                       "--out", str(out), "--verdicts-from", str(out / "full")])
    assert status == 0
    return out


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("no browser: the playwright package is not installed (make setup installs it)")
    if not CHROMIUM:
        pytest.skip("no browser: chromium is not installed (scripts/debian-packages.txt; make setup)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


def _num(text: str) -> float:
    return float(text.replace("\u2009", "").replace(",", ""))


def test_given_the_quick_study_when_the_report_is_opened_then_every_section_plot_and_number_is_there(
        report, browser):
    index = report / "report" / "index.html"
    assert index.is_file()
    page = browser.new_page()
    errors, fetched = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: fetched.append(r.url) if not r.url.startswith("file:") else None)
    page.goto(index.as_uri())
    assert errors == []
    assert fetched == [], "the page works offline: it fetches nothing"
    assert page.locator("script").count() == 0, "readable without JavaScript: there is none"

    reps = reproduce.catalog()
    # The first screen says whose verdicts it shows and at which size each section ran.
    headline = page.locator("#headline").inner_text()
    assert headline.startswith("Full-size verdicts from the last `tlblab reproduce`") and "smoke run" in headline
    assert "quick size" in page.locator("#sizes").inner_text()
    for seed in sorted({r.seed for r in reps}):
        assert page.locator(f"section#seed-{seed}").count() == 1, f"seed {seed} has its section"
        assert page.locator(f"section#findings-{seed}").count() == 1, f"seed {seed} has its findings"
    for f in reproduce.load_findings(seeds.get("000").folder / "findings.toml"):
        assert page.locator(f"#findings-table-000 td[data-col=id]:text-is('{f['id']}')").count() == 1
    assert page.locator('#summary a[href="#findings-000"]').count() == 1
    for r in reps:
        art = page.locator(f'article.reproduction[data-name="{r.name}"]')
        assert art.count() == 1, r.name
        assert art.locator("svg.plot").count() == 1, f"{r.name} has its plot"
        if r.seed != "000":
            # A smoke run: its rows and figure, no verdict.
            assert "smoke run" in art.locator("p.meta").first.inner_text(), r.name
            assert art.locator("table.verdicts").count() == 0, r.name
            continue
        assert "full size" in art.locator("p.meta").first.inner_text(), r.name
        assert art.locator("table.verdicts td[data-col=holds]").count() == len(r.criteria)
        roles = art.locator("table.verdicts td[data-col=role]").all_inner_texts()
        assert sorted(roles) == sorted(c["role"] for c in r.criteria), r.name
        # Every revision of a pre-registered criterion is printed beside it.
        for rv in r.revisions:
            row = art.locator("table.verdicts tbody tr").filter(
                has=page.locator(f'td[data-col=criterion]:text-is("{rv["criterion"]}")'))
            assert rv["date"] in row.locator("td[data-col=revised]").inner_text(), (r.name, rv["criterion"])

    # The summary counts predictions apart from consistency checks, per seed, as the CSV beside it.
    per_seed = pd.read_csv(report / "report" / "data" / "seeds_summary.csv", dtype={"seed": str})
    shown = page.locator("#seeds-summary tbody tr")
    assert shown.count() == 1, "only seed 000 has full-size verdicts"
    for i in range(shown.count()):
        cells = shown.nth(i)
        seed = cells.locator("td[data-col=seed]").inner_text()
        row = per_seed[per_seed["seed"] == seed].iloc[0]
        assert cells.locator("td[data-col=predictions]").inner_text() == \
            f"{row['predictions_hold']} of {row['predictions']}"
        assert cells.locator("td[data-col=consistency]").inner_text() == \
            f"{row['consistency_hold']} of {row['consistency']}"
        assert int(cells.locator("td[data-col=revisions]").inner_text()) == \
            sum(len(r.revisions) for r in reps if r.seed == seed)
    assert page.locator("#engine svg.plot").count() == 1
    # A miss-curve figure per workload of the table, its points in the CSV beside it.
    art = page.locator('#curves article.curve[data-workload^="random"]')
    assert art.locator("svg.plot").count() == 1
    curves = pd.read_csv(report / "report" / "data" / "miss_curves.csv")
    assert set(curves["level"]) == {"L1D", "L2D"}
    full = curves[(curves["level"] == "L1D")].set_index("entries")["miss_ratio"]
    assert full.is_monotonic_decreasing, "LRU's inclusion property: more entries never miss more"

    # The engine's table: a number on the page is the one in its CSV.
    engine = pd.read_csv(report / "report" / "data" / "engine_summary.csv")
    cells = page.locator("#engine-summary tbody tr").first.locator("td")
    shown = {cells.nth(i).get_attribute("data-col"): cells.nth(i).inner_text() for i in range(cells.count())}
    row = engine.iloc[0]
    assert shown["machine"] == row["machine"]
    assert _num(shown["walks"]) == row["walks"]
    assert _num(shown["cycles_per_ref"]) == pytest.approx(row["cycles_per_ref"], rel=1e-5)
    # And one row of each reproduction: the value shown for tlblab is the one in the CSV.
    for r in reps:
        stem = f"seed{r.seed}_{r.id.lower()}"
        csv = pd.read_csv(report / "report" / "data" / f"{stem}.csv")
        ours = csv["ours"].dropna()
        if ours.empty:
            continue
        i = ours.index[0]
        cell = page.locator(f'article.reproduction[data-name="{r.name}"] table.rows tbody tr').nth(int(i)) \
            .locator("td[data-col=ours]")
        assert math.isclose(_num(cell.inner_text()), float(ours.iloc[0]), rel_tol=1e-5), r.name
    page.close()


def test_given_the_quick_study_then_every_reproduction_figure_names_its_axes_and_draws_every_row_of_ours(
        report, browser):
    """Each reproduction's figure: every panel's axes carry a name (not a placeholder), and
    tlblab's numbers are all drawn, one marker or bar per row of the CSV that has one, whether
    the seed states a number for that row or not."""
    page = browser.new_page()
    page.goto((report / "report" / "index.html").as_uri())
    for r in reproduce.catalog():
        svg = page.locator(f'article.reproduction[data-name="{r.name}"] svg.plot')
        assert svg.count() == 1, r.name
        for axis in ("xlabel", "ylabel"):
            labels = svg.locator(f'g[id*="-{axis}-"]')
            assert labels.count() >= 1, f"{r.name}: no {axis}"
            for i in range(labels.count()):
                text = labels.nth(i).text_content().strip()
                assert text and "position on the seed's axis" not in text and text != "x", (r.name, axis, text)
        stem = f"seed{r.seed}_{r.id.lower()}"
        csv = pd.read_csv(report / "report" / "data" / f"{stem}.csv")
        want = int(csv["ours"].notna().sum())
        drawn = svg.locator('g[id*="-ours-"]')
        # A curve is one group with a marker (`use`) per point; a bar is one group each.
        points = sum(max(drawn.nth(i).locator("use").count(), 1) for i in range(drawn.count()))
        assert points == want, f"{r.name}: {points} of tlblab's {want} rows drawn"
    page.close()
