"""Every method's cost counts every call it makes of the target's density: a target that
counts its own calls (``counted``, conftest.py: an atomic counter, the chains run on threads)
is run by every method, with and without a gradient budget, and no method passes a budget by
more than 2%."""

import pytest

import workbench as wb
from tests.method_checks import check_cost_counts_every_call

BUILT_IN = sorted(wb.methods.METHODS)


def test_every_built_in_method_declares_what_the_shared_checks_need():
    """Its family, style and the settings these checks run it with (running/method.py)."""
    from workbench.running.method import FAMILIES, Examples

    for name in BUILT_IN:
        cls = wb.methods.METHODS[name]
        assert cls.family in FAMILIES and cls.colour.startswith("#") and cls.marker, name
        assert isinstance(cls.examples, Examples), name


@pytest.mark.parametrize("name", BUILT_IN)
@pytest.mark.parametrize("with_budget", [False, True], ids=["no budget", "budget"])
def test_the_cost_is_every_call_of_the_density(counted, name, with_budget):
    cls = wb.methods.METHODS[name]
    if with_budget and cls.examples.budget is None:
        pytest.skip(f"{name} takes no gradient budget")
    check_cost_counts_every_call(cls, counted, with_budget)
