"""workbench/study/cells.py: a cell that fails or is interrupted is recorded, not cached."""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import numpy as np
import pytest

import workbench as wb
from tests.study_fixtures import GAUSS, TINY
from workbench.study import Cell, render_index, run_study


def test_a_failing_cell_is_recorded_and_the_others_complete(tmp_path):
    def grid(quick):
        good = TINY.grid(quick)[:2]
        bad_target = Cell({"factory": "gaussian", "dim": -1}, {"method": "Exact"}, 0, labels={"method": "Exact"})
        bad_method = Cell(GAUSS, {"method": "NUTS", "target_accept": 1.5}, 0, labels={"method": "NUTS"})
        # a budget the start and the first step-size search use up: no transition is left
        no_draws = Cell({"factory": "funnel", "dim": 5}, {"method": "NUTS", "warmup": 1000, "progress": False}, 0, 4,
                        labels={"method": "NUTS"})
        return good + [bad_target, bad_method, no_draws]

    run = run_study(replace(TINY, grid=grid), executor="serial", out=tmp_path, progress=False)
    t = run.table
    assert list(t["status"]) == ["ok", "ok", "error", "error", "failed"]
    assert "dim must be an integer" in t.loc[2, "error"] and "target_accept" in t.loc[3, "error"]
    assert "no draws within the budget" in t.loc[4, "error"]
    assert run.failed == 3 and np.isfinite(t.loc[:1, "w1_mean"]).all()
    # failures are cached too: a rerun does not retry them (use --fresh for that)
    assert run_study(replace(TINY, grid=grid), executor="serial", out=tmp_path, progress=False).computed == 0


def test_a_method_refusing_a_budget_too_small_is_recorded_as_such_not_as_a_failure(tmp_path):
    from workbench.errors import BudgetTooSmallError
    from workbench.study.main import render_run
    from workbench.study.options import RunOptions

    with pytest.raises(BudgetTooSmallError, match="is too small for SMC"):  # a ValueError too
        wb.methods.SMC(runs=4, particles=25, progress=False).run(wb.targets.gaussian(dim=10), seed=0, grad_budget=500)

    def grid(quick):
        smc = Cell(GAUSS, {"method": "SMC", "runs": 4, "particles": 25, "progress": False}, 0, 500,
                   labels={"method": "SMC"})
        return TINY.grid(quick)[:1] + [smc]

    study = replace(TINY, grid=grid)
    run = run_study(study, executor="serial", out=tmp_path, progress=False)
    assert list(run.table["status"]) == ["ok", "budget too small"] and run.failed == 0
    assert "is too small for SMC" in run.table.loc[1, "error"]
    page = render_run(study, run, RunOptions.of(None, out=tmp_path)).read_text()
    assert "0 failed, 1 refused a budget too small for the method" in page
    index = render_index(tmp_path).read_text()
    assert "2 cells: 1 ran, 1 refused a budget too small" in index  # the index line counts it too


@dataclasses.dataclass(frozen=True)
class AlwaysInterrupted(wb.methods.Method):
    """A method whose every run comes back as Ctrl-C leaves it (a partial Result)."""

    def _run(self, target, seed, budget):
        from workbench.running.clock import RunClock

        result = self.result(target, seed, np.zeros((1, 3, target.dim)), RunClock())
        result.interrupted = True
        return result


def test_an_interrupted_run_is_not_a_cells_answer_and_is_not_cached():
    from workbench.study.cells import Cell, run_cell

    cell = Cell({"factory": "gaussian", "dim": 2}, {"method": f"{__name__}:AlwaysInterrupted"}, 0)
    with pytest.raises(KeyboardInterrupt):
        run_cell(cell)
