"""Every study's quick grid runs and renders its page (the `make report` path)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.study_fixtures import html_images, is_png
from workbench.study import render_index


SMOKE_STUDIES = ("accuracy", "frontier")


@pytest.mark.slow
def test_the_quick_reports_render(quick_study):
    """`make report` in small: every quick study runs, every image exists and is a valid PNG,
    every table has its columns, and the index links every study."""
    from workbench.study import available_studies

    names = list(available_studies())
    assert {"accuracy", "performance"} <= set(names)
    for name in names:
        # the studies no other test reads a finding of run at their smallest budgets (every page
        # element is still drawn); the rest run their quick grids once, shared with those tests
        run, page = quick_study(name, smoke=name in SMOKE_STUDIES)
        images = html_images(page)
        assert len(images) >= (3 if name in ("accuracy", "performance") else 1), name
        for image in images:
            assert is_png(page.parent / image), (name, image)
        assert "Finding." in page.read_text()
        columns = set(run.table.columns)
        scores = {"simulation"} if name == "calibration" else {"w1_mean", "mean_err_max", "ess_bulk_min"}
        assert {"target", "method", "seed", "status", "grad_evals"} | scores <= columns, name
        assert (run.table["status"] == "ok").mean() > 0.9, run.table[run.table["status"] != "ok"][["target", "method", "error"]]
    out = run.out  # one folder for every quick study
    index = render_index(out).read_text()
    for name in names:
        assert f"href='quick/{name}/index.html'" in index
    perf = pd.read_csv(out / "quick" / "performance" / "table.csv")
    assert {"ess_per_second", "ess_per_1k_grad", "overhead", "grad_seconds"} <= set(perf.columns)
    assert (perf["overhead"].dropna() > 0.5).all()


