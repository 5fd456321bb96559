"""workbench/metrics/b2.py: b^2 of the running second moments, and the gradients to cross 0.01."""

import math

import numpy as np

import workbench as wb
from workbench.metrics.b2 import b2_curves, final_b2, gradients_to_cross, second_moments


def test_b2_of_iid_draws_is_about_one_over_n():
    """For n independent draws, E[b^2_i] = 1 / n exactly (the running mean of x^2 has variance
    Var[x^2] / n)."""
    rng = np.random.default_rng(0)
    ex2, var_x2 = second_moments(np.zeros(200), np.ones(200))
    draws = rng.standard_normal((4, 1000, 200))
    b2_max, b2_avg = final_b2(draws, ex2, var_x2)
    assert abs(b2_avg - 1e-3) < 3e-4  # mean of 200 coordinates: relative error sqrt(2/200)
    assert b2_max > 3 * b2_avg  # the worst of 200 chi-square(1)/n values
    counts, worst, average = b2_curves(draws, ex2, var_x2)
    assert counts[-1] == 1000 and np.allclose(average[:, -1], ((draws ** 2).mean(1) - 1) ** 2 / 2 @ np.ones(200) / 200)


def test_second_moments_of_a_gaussian_and_from_draws_agree():
    rng = np.random.default_rng(1)
    mean, sd = np.array([1.0, -2.0]), np.array([0.5, 3.0])
    ex2, var_x2 = second_moments(mean, sd)
    ex2_d, var_d = second_moments(mean, sd, rng.normal(mean, sd, (200_000, 2)))
    np.testing.assert_allclose(ex2, mean ** 2 + sd ** 2)
    np.testing.assert_allclose(var_d, var_x2, rtol=0.03)


def test_gradients_to_cross_is_where_the_curve_stays_below():
    counts = np.array([1, 10, 100, 1000])
    # dips below at 10 draws, rises again, and stays below from 1,000 on
    total, sampling = gradients_to_cross(counts, np.array([1.0, 0.001, 0.02, 0.005]), 1000, grads=11_000,
                                         warmup_grads=1_000)
    assert sampling == 10_000 * 1.0 and total == 11_000
    total, sampling = gradients_to_cross(counts, np.array([1.0, 0.5, 0.005, 0.001]), 1000, 11_000, 1_000)
    assert sampling == 10_000 * 0.1 and total == 2_000
    assert all(math.isnan(v) for v in gradients_to_cross(counts, np.array([1.0, 0.5, 0.2, 0.1]), 1000, 11_000, 1_000))


def test_a_run_whose_final_b2_is_below_the_threshold_has_crossed_it():
    """The crossing is read from the same median-over-chains curve the tables report, so a
    run that ends below 0.01 always has a crossing (they disagreed when each chain's crossing
    was taken first and a chain ending above made the median undefined)."""
    from workbench.metrics.b2 import b2_crossing

    t = wb.targets.gaussian(5)
    res = wb.methods.NUTS(chains=4, draws=3000, progress=False).run(t, seed=0)
    row = wb.metrics.evaluate(res, t)
    out = b2_crossing(res, t)
    assert row["b2_max"] < 0.01 and 0 < out["grads_to_b2_max"] <= res.cost.grad_evals


def test_evaluate_reports_b2_for_equal_weight_draws_only():
    t = wb.targets.gaussian(5)
    row = wb.metrics.evaluate(wb.methods.Exact(draws=2000).run(t, seed=0), t)
    assert 0 < row["b2_avg"] < 0.01 and row["b2_max"] >= row["b2_avg"]
    row = wb.metrics.evaluate(wb.methods.ImportanceSampling(n=2000).run(t, seed=0), t)
    assert math.isnan(row["b2_max"])


def test_the_accuracy_column_and_the_crossing_score_b2_alike_on_a_non_gaussian_target():
    """On the banana, whose x^2 is heavy-tailed, evaluate's b2_max is the crossing curve's last
    point: both take Var[x^2] from the same fixed stream of exact draws (evaluate's own exact
    draws of each cell gave 10% less here), so a page's figure (b2_max against cost) and its
    table (the crossings) agree."""
    from workbench.metrics.b2 import b2_crossing

    t = wb.targets.banana()
    res = wb.methods.NUTS(chains=4, draws=1000, progress=False).run(t, seed=0)
    row = wb.metrics.evaluate(res, t)
    curve = b2_crossing(res, t)["_arrays"]["b2_max_curve"]
    np.testing.assert_allclose(row["b2_max"], curve[-1], rtol=1e-12)
