"""workbench/methods/hmc.py: how a gradient budget shapes a NUTS run (budget_limits), and the
defaults NUTS runs at."""

import math

import numpy as np
import pytest

import workbench as wb
from workbench.methods.hmc import WARMUP_SHARE, budget_limits


def test_no_budget_no_limits():
    assert budget_limits(-1, 1000, 10) == {"warmup_grad_cap": -1, "warmup_max_depth": 10, "max_depth": 10}


@pytest.mark.parametrize("per_chain, min_draws", [(2_500, 20), (25_000, 200), (250_000, 200)])
def test_a_budget_leaves_room_for_its_draws(per_chain, min_draws):
    limits = budget_limits(per_chain, 1000, 10)
    assert limits["warmup_grad_cap"] == int(WARMUP_SHARE * per_chain)
    # the deepest sampling tree (2^k - 1 gradients) fits min_draws times into the rest
    deepest = 2 ** limits["max_depth"] - 1
    assert deepest * min_draws <= (1 - WARMUP_SHARE) * per_chain
    assert limits["max_depth"] == 10 or 2 * (deepest + 1) * min_draws > (1 - WARMUP_SHARE) * per_chain
    assert 2 ** limits["warmup_max_depth"] - 1 <= 0.05 * per_chain
    assert 1 <= limits["warmup_max_depth"] <= 10


def test_tiny_budgets_still_allow_one_leapfrog_step():
    limits = budget_limits(3, 1000, 10)
    assert limits["max_depth"] == 1 and limits["warmup_max_depth"] == 1


def test_nuts_defaults_are_the_measured_ones():
    nuts = wb.methods.NUTS()
    assert (nuts.metric, nuts.warmup, nuts.target_accept, nuts.jitter, nuts.max_depth, nuts.adapt_target) == (
        "auto", 1000, 0.8, 0.1, 10, True)
    # the kernel metrics warm up 400 iterations; with no warmup there is nothing for "auto" to choose by
    assert wb.methods.NUTS(metric="diag").warmup == 400 and wb.methods.HMC().metric == "diag"
    assert wb.methods.NUTS(warmup=0).metric == "diag"
    with pytest.raises(ValueError, match=r"jitter must lie in \[0, 1\), got 1.5"):
        wb.methods.NUTS(jitter=1.5)
    assert math.isclose(WARMUP_SHARE, 0.4)


def test_warmup_trees_deeper_than_sampling_trees_stay_inside_the_checkpoint_buffer():
    """At 75,000 gradients a chain, warmup trees may reach depth 10 and sampling trees 8: the
    U-turn checkpoints are sized for the deeper (a smaller buffer was written past its end,
    which showed as a negative count of NaN densities)."""
    limits = budget_limits(75_000, 37_500, 10)
    assert limits["warmup_max_depth"] > limits["max_depth"]
    t = wb.targets.logistic_regression("breast_cancer")
    res = wb.methods.NUTS(draws=37_500).run(t, seed=0, grad_budget=300_000)
    assert res.info["nan_density_evals"] == 0 and res.draws.shape[1] > 200
    assert res.cost.grad_evals <= 300_000


@pytest.mark.parametrize("budget", [3_000, 20_000])
def test_nuts_with_walnuts_stays_within_its_gradient_budget_and_counts_every_call(counted, budget):
    target, counter = counted
    before = int(counter[0])
    res = wb.methods.NUTS(walnuts=True, chains=2, warmup=200, draws=1000, progress=False).run(
        target, seed=0, grad_budget=budget)
    calls = int(counter[0]) - before
    assert res.cost.grad_evals == calls <= budget and res.draws.shape[1] > 0


def test_walnuts_removes_the_divergences_nuts_has_on_the_banana():
    """The banana's arms curve more than the step adapted in its bulk can follow: plain NUTS with
    the diagonal metric diverges there (at its target acceptance, not raised), WALNUTS halves its
    step instead (divergences are only leaves that 32 micro steps cannot hold)."""
    t = wb.targets.banana()
    plain = wb.methods.NUTS(metric="diag", adapt_target=False, progress=False).run(t, seed=11)
    walnuts = wb.methods.NUTS(metric="diag", walnuts=True, progress=False).run(t, seed=11)
    assert plain.stats["diverging"].sum() >= 10 and walnuts.stats["diverging"].sum() == 0


def test_trial_steps_after_stans_window_restarts_do_not_raise_the_target():
    """Under Stan's windows dual averaging restarts at each window's end and tries long steps,
    which diverge on any posterior; counting those raised every Gaussian's target to 0.9875.
    Divergences count only 50 iterations or more after a restart."""
    t = wb.targets.gaussian(100, scales="logspace")
    for seed in range(3):
        res = wb.methods.NUTS(metric="diag_stan", progress=False).run(t, seed=seed)
        assert "target_accept_raised_to" not in res.info, (seed, res.info.get("target_accept_raised_to"))
        assert abs(float(np.mean(res.stats["accept_prob"])) - 0.8) < 0.05


def test_a_given_inverse_metric_is_kept_by_the_identity_metric_and_checked():
    t = wb.targets.gaussian(dim=3, scales=np.array([0.1, 1.0, 10.0]))
    inv = np.array([0.01, 1.0, 100.0])
    res = wb.methods.NUTS(metric="identity", inv_metric=inv, chains=2, warmup=100, draws=200,
                          progress=False).run(t, seed=0)
    np.testing.assert_array_equal(res.info["inv_mass"], np.tile(inv, (2, 1)))
    # the metric fits the scales, so the step size is near the unit Gaussian's, not 0.1's
    assert min(res.info["step_size"]) > 0.5
    with pytest.raises(ValueError, match=r"inv_metric has shape \(2,\)"):
        wb.methods.NUTS(inv_metric=np.ones(2), progress=False).run(t, seed=0)
    with pytest.raises(ValueError, match="inv_metric must be the diagonal of the inverse metric, positive"):
        wb.methods.NUTS(inv_metric=np.array([1.0, -1.0, 1.0]))
