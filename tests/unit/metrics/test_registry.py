"""workbench/metrics/registry.py: study metrics are found by name, and a bad name fails when a
cell is defined, not in a worker."""

import pytest

import workbench as wb
from workbench.study import Cell


def test_the_built_in_study_metrics_are_registered():
    assert {"marginal_accuracy", "marginal_transfer", "chain_scaling", "vi_quality", "vi_ablation",
            "posterior_sd_ratios", "theorem1_quantities"} <= set(wb.metrics.available())
    assert wb.metrics.study_metric("vi_quality") is wb.metrics.vi.vi_quality


def test_a_typo_in_a_cells_metric_fails_when_the_cell_is_made_and_lists_the_names():
    with pytest.raises(ValueError, match=r"unknown study metric 'marginal_acuracy'.*marginal_accuracy"):
        Cell({"factory": "gaussian", "dim": 2}, {"method": "Exact"}, extra="marginal_acuracy")
    with pytest.raises(ValueError, match="cannot be imported"):
        Cell({"factory": "gaussian", "dim": 2}, {"method": "Exact"}, extra="no_such_module:f")


def test_a_registered_metric_is_found_and_names_are_unique():
    @wb.metrics.register("test_draw_count")
    def draw_count(result, target, reference=None):
        return {"draw_count": result.draws.shape[1]}

    try:
        assert Cell({"factory": "gaussian", "dim": 2}, {"method": "Exact"}, extra="test_draw_count").extra
        with pytest.raises(ValueError, match="already registered"):
            wb.metrics.register("test_draw_count")(lambda r, t, ref=None: {})
    finally:
        wb.metrics.registry.STUDY_METRICS.pop("test_draw_count")
