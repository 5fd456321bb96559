"""A fuzz test: random settings of every method (numbers at the edges, NaN, inf, strings,
None, booleans, lists) on a target that counts its own calls. Each case must end in one of
two ways: a clear error (a ValueError or the workbench's own, naming the setting when the
method refuses it as built), or a Result whose cost is exactly the calls made and that keeps
to its budget. Anything else (a TypeError, an IndexError, a NumPy error from deep inside, a
wrong count) is a failure of the class this test keeps at zero."""

import dataclasses
import math
import warnings

import numpy as np
import pytest

import workbench as wb
from tests.method_checks import example
from workbench.errors import WorkbenchError

VALUES = [0, 1, 2, 3, -1, 0.5, 1e-9, 10**9, math.nan, math.inf, "x", None, True, [1, 2]]
NO_BUDGET = ("Exact", "Laplace")  # they take none: no huge counts for them (a run would take hours)


def _cases(n, seed=20261125):
    rng = np.random.default_rng(seed)
    names = sorted(wb.methods.METHODS)
    for i in range(n):
        name = names[rng.integers(len(names))]
        fields = [f.name for f in dataclasses.fields(wb.methods.METHODS[name]) if f.name not in ("progress", "threads")]
        field = fields[rng.integers(len(fields))]
        value = VALUES[rng.integers(len(VALUES))]
        if name in NO_BUDGET and value == 10**9:
            value = 3
        yield pytest.param(name, field, value, [1000, 5000][rng.integers(2)], id=f"{i}-{name}-{field}={value!r}")


@pytest.mark.parametrize("name, field, value, budget", list(_cases(120)))
def test_random_settings_give_a_clear_error_or_an_honest_result(counted, name, field, value, budget):
    target, counter = counted
    try:
        method = dataclasses.replace(example(wb.methods.METHODS[name], "quick", target.dim), **{field: value})
    except WorkbenchError:
        return
    except (ValueError, TypeError) as exc:
        assert field in str(exc), f"{type(exc).__name__} does not name {field}: {exc}"
        return
    before = int(counter[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            res = method.run(target, seed=0, grad_budget=None if name in NO_BUDGET else budget)
        except (ValueError, WorkbenchError, MemoryError):
            return  # refused by name (the wording is tested where each check lives)
    calls = int(counter[0]) - before
    assert res.cost.grad_evals == calls == res.cost.logp_evals
    if name not in NO_BUDGET:
        assert calls <= 1.02 * budget


def _calm_wrong_answer_cases():
    """Runs measured to end far from the posterior (the error against a long NUTS run, or an
    importance ESS of 1): each must carry a health flag, never return calmly."""
    import workbench as wb
    from tests.unit.methods.test_pathfinder import _log_log_regression

    return [
        # one draw of 10,000 carries the weight (k-hat was NaN and silent)
        ("ImportanceSampling", lambda: wb.targets.bnn(n_data=40, widths=[5]), {}, 10_000),
        # the Gaussian at the joint mode, 0.9 sd below log sigma's mean, k-hat 0.36-0.65
        ("Pathfinder", _log_log_regression, {}, None),
        # four paths at different optima of a funnel, the draws 0.58 sd off, k-hat 0.56
        ("Pathfinder", lambda: wb.targets.posterior("eight_schools_noncentered"), {"paths": 4}, None),
        # a density that is NaN beyond x0 = 1.5: 7-13% of q's draws lay there, health "ok"
        ("FullRankVI", _nan_beyond_an_edge, {}, None),
        ("DADVI", _nan_beyond_an_edge, {}, None),
    ]


def _nan_beyond_an_edge():
    from tests.unit.methods.test_faults import nan_target

    return nan_target()


@pytest.mark.parametrize("case", range(5))
def test_a_run_known_to_be_far_off_says_so(case):
    import workbench as wb
    from workbench.diagnostics import health_flags

    name, make, settings, budget = _calm_wrong_answer_cases()[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = getattr(wb.methods, name)(**settings).run(make(), seed=0 if case != 1 else 1, grad_budget=budget)
    assert health_flags(res.messages) != "ok", res.messages


@pytest.mark.parametrize("budget", [20_000, 150_000])
def test_smc_under_a_budget_finishes_its_ladder_or_refuses_at_the_start(budget):
    """At its defaults on centred eight schools SMC ended "ladder incomplete" at every budget up
    to 10^6 (2,000 particles a run); now it cuts its particles to finish, or refuses."""
    import workbench as wb

    target = wb.targets.posterior("eight_schools_centered")
    try:
        res = wb.methods.SMC(progress=False).run(target, seed=0, grad_budget=budget)
    except ValueError as err:
        assert budget == 20_000 and "grad_budget is too small" in str(err)
        return
    assert res.cost.grad_evals <= budget
    assert not any(r["jumped_to_end"] for r in res.info["runs"])
    assert res.messages[0].startswith("budget: ")

