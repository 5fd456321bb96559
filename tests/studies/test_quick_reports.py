"""Every study's quick grid runs and renders its page (the `make report` path)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.study_fixtures import html_images, is_png
from workbench.study import available_studies, render_index

SMOKE_STUDIES = ("accuracy", "frontier")
STUDIES = list(available_studies())


def test_the_report_has_its_studies():
    assert {"accuracy", "performance", "calibration", "evidence"} <= set(STUDIES)


@pytest.mark.slow
@pytest.mark.parametrize("name", STUDIES)
def test_the_quick_report_renders(quick_study, name):
    """`make report` in small, one study at a time: its quick grid runs, every image exists and is
    a valid PNG, its table has its columns, and the index links it. The studies no other test
    reads a finding of run at their smallest budgets (every page element is still drawn); the
    rest run their quick grids once, shared with those tests (tests/conftest.py runs a study's
    tests on one worker)."""
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
    index = render_index(run.out).read_text()  # one folder for every quick study of this worker
    assert f"href='quick/{name}/index.html'" in index
    if name == "performance":
        perf = pd.read_csv(run.out / "quick" / "performance" / "table.csv")
        assert {"ess_per_second", "ess_per_1k_grad", "overhead", "grad_seconds"} <= set(perf.columns)
        assert (perf["overhead"].dropna() > 0.5).all()
