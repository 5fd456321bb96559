"""workbench/calibration/design.py: the methods a calibration runs and its grid of cells."""

import pytest

import workbench as wb
from workbench.calibration import design


def test_methods_by_panel_label_class_name_or_instance():
    specs = dict(design.method_specs(None, 10_000))
    assert "NUTS" in specs and "Laplace" in specs and "IS" in specs and "Exact" not in specs
    chosen = design.method_specs(["NUTS", "ImportanceSampling", wb.methods.NUTS(chains=3), wb.methods.NUTS()], 10_000)
    assert [label for label, _ in chosen] == ["NUTS", "ImportanceSampling", "NUTS (2)", "NUTS (3)"]
    assert chosen[1][1]["method"] == "ImportanceSampling" and chosen[2][1]["chains"] == 3
    with pytest.raises(ValueError, match="unknown method"):
        design.method_specs(["NotAMethod"], 10_000)


def test_the_grid_is_one_cell_per_simulation_and_method():
    spec = {"factory": "eight_schools", "centered": False}
    cells = design.grid(spec, "eight_schools", design.method_specs(["NUTS", "Laplace"], 5000), 7, seed=3, budget=5000)
    assert len(cells) == 14
    first = cells[0]
    assert first.target == {"factory": "simulated", "of": spec, "seed": 3, "index": 0}
    assert first.extra == "calibration_ranks" and not first.score and first.grad_budget == 5000
    assert cells[1].grad_budget is None  # Laplace takes no budget
    assert {c.labels["simulation"] for c in cells} == set(range(7))


def test_nuts_on_a_learned_transform_is_asked_for_by_its_label():
    """Not in the default panel (its fits cost a second or more each, times every simulation);
    by its label at a budget that fits a flow; below one the label is refused, naming it."""
    assert "NUTS (flow)" not in dict(design.method_specs(None, 10_000))
    ((label, spec),) = design.method_specs(["NUTS (flow)"], 10_000)
    assert label == "NUTS (flow)" and spec["metric"] == "flow"
    with pytest.raises(ValueError, match="NUTS \\(flow\\)"):
        design.method_specs(["NUTS (flow)"], 1_000)
