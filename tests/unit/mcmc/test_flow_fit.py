"""workbench/mcmc/flow_fit.py: fitted to exact draws and gradients, the flow learns the exact
transforms of a banana and a funnel (the draws it maps to z are standard normal), finds the
drivers, and adds nothing to a Gaussian that the diagonal map already fits."""

import numpy as np
import pytest

import workbench as wb
from workbench.mcmc import flow_fit as F
from workbench.sampling.flow_metric import gradients


def _exact(target, n, rng):
    x = target.truth.sample(n, rng)
    return x, gradients(target, x)[1]


def _kurtosis(z):
    c = z - z.mean(axis=0)
    return (c ** 4).mean(axis=0) / z.var(axis=0) ** 2


@pytest.mark.parametrize("name, target", [("banana", wb.targets.banana()), ("funnel", wb.targets.funnel(dim=10))])
def test_the_flow_of_exact_draws_maps_fresh_ones_to_a_standard_normal(name, target):
    rng = np.random.default_rng(0)
    fit = F.fit_flow(*_exact(target, 800, rng), rng)
    assert fit.better_than_diagonal and fit.flow_loss < 0.01 * fit.diagonal_loss, (fit.diagonal_loss, fit.flow_loss)
    z = fit.flow.inverse(target.truth.sample(20_000, 1))
    # the diagonal map leaves the banana's second coordinate, and the funnel's x, far from normal
    np.testing.assert_allclose(z.std(axis=0), 1.0, atol=0.1 if name == "banana" else 0.35)
    assert np.all(np.abs(_kurtosis(z)[1:] - 3.0) < 0.5)


def test_the_drivers_are_the_banana_and_funnel_coordinates_others_depend_on():
    rng = np.random.default_rng(1)
    for target in (wb.targets.banana(), wb.targets.funnel(dim=10)):
        x, g = _exact(target, 800, rng)
        m, sigma = F.diagonal_map(x, g)
        y, h = (x - m) / sigma, g * sigma
        scores = F.driver_scores(y, h)
        assert F.global_coordinates(scores, y, h).tolist() == [0]


def test_no_layer_is_fitted_where_the_diagonal_map_already_fits_by_the_given_measure():
    """The first fit of NUTS(metric="auto") skips the layers when the diagonal map's held-out loss
    per coordinate is below ``easy_per_coordinate``; the same draws with a lower bar get layers."""
    x, g = _exact(wb.targets.banana(), 400, np.random.default_rng(0))
    fitted = F.fit_flow(x, g, np.random.default_rng(1), easy_per_coordinate=0.1)
    assert fitted.flow.layers and fitted.diagonal_loss / 2 > 0.1
    skipped = F.fit_flow(x, g, np.random.default_rng(1), easy_per_coordinate=1.1 * fitted.diagonal_loss / 2)
    assert not skipped.flow.layers and skipped.flow_loss == skipped.diagonal_loss == fitted.diagonal_loss


def test_a_gaussian_needs_no_flow():
    t = wb.targets.gaussian(dim=20, scales="logspace")
    rng = np.random.default_rng(2)
    fit = F.fit_flow(*_exact(t, 800, rng), rng)
    assert fit.diagonal_loss / t.dim < 0.05  # what metric="flow" reads as "the diagonal metric fits"


def test_a_layer_is_kept_only_if_it_helps_most_held_out_draws():
    before = np.full(100, 10.0)
    assert F.significant_gain(before, before - 2.0)
    noise = before + np.where(np.arange(100) < 50, -3.0, 2.9)  # half better, half worse
    assert not F.significant_gain(before, noise)
    funnel_like = before.copy()
    funnel_like[:90] -= 2.0
    funnel_like[90:] += 5.0  # a few draws worse, most better, the mean down
    assert F.significant_gain(before, funnel_like)


def test_the_low_rank_loss_sees_what_the_diagonal_misses():
    """Exact draws and scores of a 10-d Gaussian with correlation 0.9: the diagonal map leaves a
    Fisher divergence of about d (its precision is 10x its inverse variance on the diagonal); the
    diagonal-plus-low-rank map takes the one strong direction out and leaves noise."""
    rng = np.random.default_rng(0)
    d = 10
    cov = 0.9 * np.ones((d, d)) + 0.1 * np.eye(d)
    x = rng.standard_normal((2000, d)) @ np.linalg.cholesky(cov).T
    g = -np.linalg.solve(cov, x.T).T
    fit = F.fit_flow(x, g, rng)
    assert fit.diagonal_loss > 20 and fit.low_rank_loss < 0.05 * d
    # uncorrelated: no direction to correct, the two linear maps are the same
    scales = np.logspace(-1, 1, d)
    x = rng.standard_normal((2000, d)) * scales
    fit = F.fit_flow(x, -x / scales**2, rng)
    assert fit.low_rank_loss == pytest.approx(fit.diagonal_loss, rel=1e-6)
