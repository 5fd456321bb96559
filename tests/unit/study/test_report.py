"""Report pages and the index: what a page shows, references that fail their checks, settings text."""

from __future__ import annotations

import shutil

import pytest

from tests.study_fixtures import TINY, html_images, is_png
from workbench.study import Cell, Page, Study, run_and_report


def test_a_report_page_and_the_index(tmp_path):
    run, page = run_and_report(TINY, quick=True, executor="serial", out=tmp_path, progress=False)
    images = html_images(page)
    assert images == ["w1.png"] and all(is_png(page.parent / i) for i in images)
    text = page.read_text()
    for needle in ("6 cells ran.", "Versions:", "python studies/tiny.py --quick", "numba", "Settings", "0, 1"):
        assert needle in text
    index = (tmp_path / "index.html").read_text()
    assert "href='quick/tiny/index.html'" in index and "A tiny study" in index and "6 cells ran." in index
    assert "6 cells: 6 ran" in index  # which cells of each grid exist
    import re

    assert re.search(r"6 cells: 6 ran; \d+ s", index)  # and how long the study took


def test_a_reference_that_fails_its_checks_is_run_longer_and_marked(tmp_path):
    """A too-short reference fails posteriordb's ESS >= 400; the full grid climbs the ladder
    (10 chains, the draws its ESS per draw asks for); one that still fails is marked on every
    cell scored against it and on the page."""
    target = {"factory": "logistic_regression", "n_data": 50}
    short = {"method": "NUTS", "chains": 2, "warmup": 50, "draws": 10, "progress": False}

    def study(runs):
        return Study(name="short_reference", title="Short reference",
                     grid=lambda quick: [Cell(target, {"method": "Laplace", "draws": 500}, 0, labels={"method": "Laplace"})],
                     report=lambda run, folder: Page(finding="rendered"), reference_method=short, reference_runs=runs)

    # the ladder: the short run, the flow metric on the same run, then posteriordb's recipe
    run, page = run_and_report(study(3), quick=False, executor="serial", out=tmp_path, progress=False)
    (info,) = run.references.values()
    assert info["runs"] == 3 and info["method"]["chains"] == 10 and info["method"]["draws"] > short["draws"]
    failing, page = run_and_report(study(1), quick=False, executor="serial", out=tmp_path / "one", progress=False)
    (info,) = failing.references.values()
    assert not info["passes"] and info["runs"] == 1
    assert (failing.table["truth"] == "reference (long NUTS) FAILS its checks").all()
    assert "has no trustworthy reference" in page.read_text()
    # its table leads with the columns the text above it names, the diagnostics behind them after
    import re

    text = page.read_text()
    section = text[text.index("<h2>Reference posteriors</h2>"):text.index("<h2>Settings</h2>")]
    heads = [h.replace("<wbr>", "") for h in re.findall(r"<th>(.*?)</th>", section)]
    # one reference: the table is turned, its fields down the first column in the same order
    assert heads[0] == "target" and heads[2] == "passes"
    assert heads.index("runs") < heads.index("r_hat_max") < heads.index("bfmi_min")
    # the quick grid runs it once, says it fails, and keeps it apart from the full grid's
    quick, page = run_and_report(study(None), quick=True, executor="serial", out=tmp_path, progress=False)
    (info,) = quick.references.values()
    assert info["runs"] == 1 and not info["passes"] and quick.reference_keys != run.reference_keys
    assert "In the quick grid a reference that is not shipped is run once" in page.read_text()


def test_settings_are_shown_short():
    from workbench.study.report import _setting_text

    assert _setting_text(0.30000000000000004) == "0.3"
    assert _setting_text(list(range(10))) == "[0, 1, 2, …, 8, 9]"
    assert _setting_text({"means": [[0.123456789] * 10] * 5}) == "{means: (5 x 10 array)}"


def test_tables_are_shaped_for_a_narrow_screen():
    import pandas as pd

    from workbench.study.report import _table_html

    # names break after underscores, in the header and the cells ("d=100" stays whole)
    html = _table_html(pd.DataFrame({"method": ["NUTS (target_accept=0.95)", "NUTS"], "ess_bulk": [1.0, 2.0]}))
    assert "<th>ess_<wbr>bulk</th>" in html and "<td>NUTS (target_<wbr>accept=0.95)</td>" in html
    # a value the same in every row of three or more is said once, in the table's caption
    runs = pd.DataFrame({"target": ["a", "b", "c"], "error": [0.1, 0.2, float("nan")], "seed": [0, 0, 0],
                         "measured": ["2026-11-29"] * 3})
    html = _table_html(runs)
    assert "<caption>In every row: seed 0; measured 2026-11-29.</caption>" in html and "<th>seed</th>" not in html
    assert "<td>–</td>" in html  # a missing value
    assert "caption" not in _table_html(runs.iloc[:2])  # two rows: nothing to say once
    paths = pd.DataFrame({"target": ["a", "b", "c"], "error": [0.1, 0.2, 0.3], "cache": [r"C:\1\x"] * 3})
    assert r"In every row: cache C:\1\x." in _table_html(paths)  # said as it is, not read as a pattern
    # a few rows of many fields are turned: one column per row, one row per field, in order
    wide = pd.DataFrame({"target": ["eight schools"], **{f"field_{k}": [k + 0.123456] for k in range(8)}})
    html = _table_html(wide)
    assert "<th>eight schools</th>" in html and html.index("field_<wbr>0") < html.index("field_<wbr>7")
    assert "<td>7.123</td>" in html
    wide.loc[0, "field_3"] = None
    assert "<td>–</td>" in _table_html(wide)  # a missing value, turned


def test_the_index_opens_with_the_verdict_map_and_one_sentence_per_study(tmp_path):
    """The accuracy study's table becomes the verdict map at the top of the index; each study
    is one sentence there (its headline, or its finding's first clause), the rest folded."""
    import dataclasses

    from workbench.study import render_index
    from workbench.study.report import first_clause

    def report(run, folder):
        page = TINY.report(run, folder)
        page.headline = "NUTS wins everywhere."
        return page

    study = dataclasses.replace(TINY, name="accuracy", report=report)
    _, page = run_and_report(study, quick=True, executor="serial", out=tmp_path, progress=False)
    text = page.read_text()
    assert text.index("<p class='headline'>NUTS wins everywhere.</p>") < text.index("Finding.")  # the answer first
    index = render_index(tmp_path).read_text()
    assert index.index("Verdict map") < index.index("<h2>Studies</h2>")
    assert "href='quick/accuracy/index.html'" in index and "<details>" in index
    assert "NUTS wins everywhere." in index  # the headline is the index's sentence
    assert first_clause("A is best; B is next. C.") == "A is best."
    assert first_clause("x " * 300).endswith(" ….") and len(first_clause("x " * 300)) < 230


def test_pages_keep_wide_tables_in_their_own_scroll_box_and_figures_in_the_column(tmp_path):
    """What can be checked without a browser (``scripts/check_pages.py`` checks the laid-out
    pages in headless Chromium at 1,280 and 800 px): every table of a page, however many
    columns it has, sits in a horizontally scrolling box; figures are scaled to the column."""
    import re

    import pandas as pd

    from workbench.study.report import STYLE

    wide = pd.DataFrame({f"a long column name {k}": [1.0, 2.0] for k in range(40)})

    def report(run, folder):
        page = TINY.report(run, folder)
        page.tables.append(("forty columns", wide))
        return page

    import dataclasses

    run, page = run_and_report(dataclasses.replace(TINY, report=report), quick=True, executor="serial",
                               out=tmp_path, progress=False)
    text = page.read_text()
    tables = [m.start() for m in re.finditer("<table", text)]
    assert len(tables) == 3  # the study's cells, the forty columns, the settings
    for start in tables:
        assert text[:start].rstrip().endswith("<div class='scroll'>"), text[start - 80:start]
    assert re.search(r"\.scroll \{ overflow-x: auto", STYLE) and "figure img { max-width: 100%" in STYLE
    assert "max-width: 1100px" in STYLE  # the column


def test_the_page_check_script_says_when_there_is_nothing_to_check(tmp_path, capsys):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "scripts" / "check_pages.py"
    spec = importlib.util.spec_from_file_location("check_pages", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main([str(tmp_path)]) == 1 and "run `make report` first" in capsys.readouterr().out


def _check_pages_module():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "scripts" / "check_pages.py"
    spec = importlib.util.spec_from_file_location("check_pages", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not any(shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome")),
                    reason="needs headless Chromium (Debian: apt install chromium)")
def test_the_page_check_fails_a_column_the_text_names_that_only_shows_after_scrolling(tmp_path):
    from workbench.study.report import STYLE

    module = _check_pages_module()
    cells = "".join(f"<th>a long column name {k}</th>" for k in range(30))

    def page(health_first: bool) -> str:
        head = "<th>health</th>" + cells if health_first else cells + "<th>health</th>"
        return (f"<html><head><style>{STYLE}</style></head><body><p>Check each run's health before its error.</p>"
                f"<div class='scroll'><table><tr>{head}</tr></table></div></body></html>")

    late, early = tmp_path / "late" / "index.html", tmp_path / "early" / "index.html"
    for path, first in ((late, False), (early, True)):
        path.parent.mkdir()
        path.write_text(page(first))
    chrome = module.browser()
    assert any('column "health"' in p for p in module.check_page(late, 1280, chrome))
    assert module.check_page(early, 1280, chrome) == []
