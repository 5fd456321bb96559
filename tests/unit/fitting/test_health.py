"""workbench/methods/vi_health.py: the k-hat messages at Yao et al.'s thresholds, and psis=True."""

import math
import warnings

import numpy as np
import pytest

import workbench as wb
from workbench.fitting import health as H
from workbench.fitting.health import PARETO_K_GOOD, PARETO_K_OK, pareto_check

T = wb.targets.gaussian(4, correlation=0.8)


def test_psis_resamples_the_draws_of_q_and_counts_the_evaluations():
    """Mean-field q is too narrow on a correlated Gaussian; Pareto-smoothed weights p / q move
    its draws toward the posterior (measured: w1 0.40 -> 0.32 sd, k-hat 0.62)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = wb.methods.MeanFieldVI(progress=False).run(T, seed=0)
        weighted = wb.methods.MeanFieldVI(progress=False, psis=True).run(T, seed=0)
    assert weighted.cost.grad_evals == plain.cost.grad_evals + weighted.info["psis"]["evaluations"]
    assert weighted.draws.shape == plain.draws.shape
    w1 = [wb.metrics.evaluate(r, T)["w1_mean"] for r in (plain, weighted)]
    assert w1[1] < 0.9 * w1[0]
    assert PARETO_K_OK < weighted.info["psis"]["khat"] < PARETO_K_GOOD
    assert any(m.startswith("psis: the draws are") for m in weighted.messages)


def test_psis_stays_within_the_budget():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = wb.methods.BatchAndMatch(psis=True, steps=50).run(T, seed=0, grad_budget=3000)
        spent = wb.methods.BatchAndMatch(psis=True).run(T, seed=0, grad_budget=3000)
    # the fit (50 x 20) and the k-hat check (300) leave 1,700 evaluations for the weights
    assert res.cost.grad_evals == 3000 and res.info["psis"]["evaluations"] == 1700
    assert "psis" not in spent.info and any("psis: not applied" in m for m in spent.messages)


@pytest.mark.parametrize("scale, expected", [(1.0, "none"), (0.6, "usable"), (0.3, "misses")])
def test_khat_messages_follow_the_05_and_07_thresholds(scale, expected):
    t = wb.targets.gaussian(2)
    q = wb.approximations.Gaussian(np.zeros(2), scale ** 2 * np.eye(2))
    draws = q.sample(1000, np.random.default_rng(0))
    khat, messages, spent = pareto_check(t, q, draws, 1000)
    assert spent == 1000
    if expected == "none":
        assert khat <= PARETO_K_OK and messages == []
    elif expected == "usable":
        assert PARETO_K_OK < khat <= PARETO_K_GOOD and "usable with importance weights" in messages[0]
    else:
        assert khat > PARETO_K_GOOD and "misses mass" in messages[0]


def test_a_funnel_is_only_suspected_while_the_fit_has_not_converged():
    from workbench.fitting.health import funnel_message, not_converged_first

    assert funnel_message(0.9)[0].startswith("funnel:")
    suspected = funnel_message(0.9, converged=False)[0]
    assert suspected.startswith("possibly a funnel") and "not converged" in suspected
    assert funnel_message(0.3, converged=False) == []
    ordered = not_converged_first(["status", "Pareto k-hat 0.9", "not converged: rising", "funnel"])
    assert ordered == ["not converged: rising", "status", "Pareto k-hat 0.9", "funnel"]



def test_the_weights_mean_shift_estimates_q_s_offset_in_its_sds():
    """q = N(0, 1), p = N(0.5, 1) in the first coordinate (the second exact): the Pareto-smoothed
    weights p / q move the first mean by 0.5 of q's sd and the second by nothing, within Monte
    Carlo error; the message names the first and only when k-hat lets the weights be trusted."""
    from workbench.fitting.health import MEAN_SHIFT_FLAG, mean_shift_message, weighted_mean_shift

    rng = np.random.default_rng(3)
    x = rng.standard_normal((4000, 2))
    log_r = -0.5 * (x[:, 0] - 0.5) ** 2 + 0.5 * x[:, 0] ** 2  # log p - log q, up to a constant
    shift = weighted_mean_shift(x, log_r)
    tol = 5 / np.sqrt(4000 / np.exp(0.25))  # 5 x the weighted mean's error, sd / sqrt(ESS), ESS = n e^-0.25
    assert abs(shift[0] - 0.5) < tol and abs(shift[1]) < tol
    (message,) = mean_shift_message(shift, ("a", "b"), khat=0.3)
    assert message.startswith("weights move the mean") and " a " in message
    assert mean_shift_message(shift, ("a", "b"), khat=0.9) == []  # above 0.7 the k-hat warning says more
    assert mean_shift_message(np.array([MEAN_SHIFT_FLAG / 2, 0.0]), ("a", "b"), khat=0.3) == []


def test_the_elbo_slope_of_an_exactly_flat_tail_is_zero_and_a_noiseless_line_infinitely_significant():
    assert H.elbo_slope(np.full(400, 4.08)) == (0.0, 0.0)
    slope, t = H.elbo_slope(np.arange(400, dtype=float))
    assert slope == pytest.approx(1000.0) and t == math.inf


def test_a_fit_that_left_a_better_elbo_ran_away_and_a_rising_one_did_not():
    from workbench.fitting.health import best_window_elbo, ran_away

    rising = np.linspace(-700.0, -600.0, 2000)
    assert best_window_elbo(rising, 200) == pytest.approx(rising[-200:].mean())
    assert not ran_away(rising[-200:].mean(), best_window_elbo(rising, 200))
    fell = np.concatenate([rising, np.full(1000, -900.0)])
    assert ran_away(-900.0, best_window_elbo(fell, 200))
    assert ran_away(-np.inf, -600.0)
    # within the noise (10 nats or 1% of the ELBO) is not a runaway
    assert not ran_away(-605.0, -600.0)
    # a first ELBO of 1e74 (a start far out) must not swallow the later digits of a running sum
    huge = np.concatenate([[-1.2e74], np.full(1999, -3600.0)])
    assert best_window_elbo(huge, 200) == pytest.approx(-3600.0)


def test_a_budget_that_ends_a_fit_before_its_stopping_rule_can_judge_it_says_not_converged():
    """88 steps of a fit whose rule compares means over windows of 200: nothing says it converged,
    whatever its noisy ELBO does; 2,000 steps of a flat ELBO stopped by the budget say nothing."""
    from workbench.diagnostics import health_flags
    from workbench.vi import fit as F

    rng = np.random.default_rng(0)
    short = -10.0 + 0.01 * rng.standard_normal(88)
    messages, _ = H.fit_messages(short, F.STATUS_BUDGET, 1e-4, window=200)
    assert health_flags(messages) == "not converged" and "after 88 steps" in messages[-1]
    flat = -10.0 + 0.01 * rng.standard_normal(2000)
    assert health_flags(H.fit_messages(flat, F.STATUS_BUDGET, 1e-4, window=200)[0]) == "ok"
    assert health_flags(H.fit_messages(short, F.STATUS_BUDGET, 1e-4)[0]) == "ok"  # no window given: no rule to judge by


def test_vi_at_a_budget_too_small_for_its_checks_is_flagged_on_the_three_peak_mixture():
    """At 1,000 gradients on the 2-d three-peak mixture, every Gaussian VI fit sits on one peak
    (1.4 sds off); none may read "ok": the budget cut its fit or left no room for the peak search."""
    from workbench.diagnostics import health_flags

    t = wb.targets.gaussian_mixture(dim=2, n_components=3, seed=0)
    for method in (wb.methods.FullRankVI(progress=False), wb.methods.DADVI(), wb.methods.BatchAndMatch(progress=False),
                   wb.methods.MeanFieldVI(progress=False)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = method.run(t, seed=0, grad_budget=1000)
        assert wb.metrics.evaluate(res, t)["mean_err_max"] > 0.5, method.name
        assert health_flags(res.messages) != "ok", (method.name, res.messages)
