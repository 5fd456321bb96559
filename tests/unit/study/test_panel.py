"""workbench/study/panel.py: every method at a budget, with room for the draws it buys."""

import pytest

from workbench.methods import build_method
from workbench.study.panel import method_panel


@pytest.mark.parametrize("budget", [2_000, 100_000, 10_000_000])
def test_the_panel_names_every_budgeted_method_once_and_each_spec_builds(budget):
    panel = method_panel(budget)
    labels = [label for label, _, _ in panel]
    assert len(labels) == len(set(labels))
    assert {"NUTS", "MAMS", "MCLMC", "FullRankVI", "BatchAndMatch", "DADVI", "SMC"} <= set(labels)
    for _, spec, b in panel:
        assert b == budget
        build_method(spec)  # every spec is a valid method


def test_mclmc_keeps_at_most_about_10000_rows_a_chain_at_any_budget():
    spec = {label: s for label, s, _ in method_panel(10_000_000)}["MCLMC"]
    per_chain = 10_000_000 // 2
    # two gradients a step: the steps the draws ask for cover a chain's budget (the budget binds)
    assert spec["draws"] * spec["thin"] * 2 >= per_chain - 2 * spec["thin"]
    assert spec["draws"] <= 10_001
