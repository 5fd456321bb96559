"""Every study's quick grid runs and renders its page (the `make report` path)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from workbench.study import render_index



def _html_images(path: Path) -> list[str]:
    import re

    return re.findall(r"<img src='([^']+)'", path.read_text())


def _is_png(path: Path) -> bool:
    from PIL import Image

    with open(path, "rb") as f:
        if f.read(8) != b"\x89PNG\r\n\x1a\n":
            return False
    with Image.open(path) as im:
        im.verify()
    return True


@pytest.mark.slow
def test_the_quick_reports_render(quick_study):
    """`make report` in small: every quick study runs, every image exists and is a valid PNG,
    every table has its columns, and the index links every study."""
    from workbench.study import available_studies

    names = list(available_studies())
    assert {"accuracy", "performance"} <= set(names)
    for name in names:
        run, page = quick_study(name)
        images = _html_images(page)
        assert len(images) >= (3 if name in ("accuracy", "performance") else 1), name
        for image in images:
            assert _is_png(page.parent / image), (name, image)
        assert "Finding." in page.read_text()
        columns = set(run.table.columns)
        assert {"target", "method", "seed", "status", "grad_evals", "w1_mean", "mean_err_max", "ess_bulk_min"} <= columns
        assert (run.table["status"] == "ok").mean() > 0.9, run.table[run.table["status"] != "ok"][["target", "method", "error"]]
    out = run.out  # one folder for every quick study
    index = render_index(out).read_text()
    for name in names:
        assert f"href='quick/{name}/index.html'" in index
    perf = pd.read_csv(out / "quick" / "performance" / "table.csv")
    assert {"ess_per_second", "ess_per_1k_grad", "overhead", "grad_seconds"} <= set(perf.columns)
    assert (perf["overhead"].dropna() > 0.5).all()


