"""workbench/methods/mixture_start.py: where an NN4Post fit starts: a given mixture (its weights,
means and scales as they were), a given Gaussian (components spread by its sds around its mean:
Pathfinder's, where the mode search finds no mode), the paper's box, or the mode search, which
refuses a budget too small for it and the fit."""

import math

import numpy as np
import pytest

import workbench as wb
from workbench.approximations import Gaussian, GaussianMixture
from workbench.errors import BudgetTooSmallError
from workbench.fitting.component_adaptation import softplus_inv
from workbench.fitting.mixture_start import initial_parameters, mode_search
from workbench.result import Budget


def _split(params, k, d):
    return params[:k], params[k:k + k * d].reshape(k, d), params[k + k * d:].reshape(k, d)


def test_a_given_mixture_of_the_same_size_is_the_start_as_it_was():
    t = wb.targets.gaussian(3)
    q = GaussianMixture([0.25, 0.75], [[0.0, 1.0, 2.0], [-1.0, 0.0, 1.0]], [[0.5, 1.0, 2.0], [1.0, 1.0, 1.0]])
    method = wb.methods.NN4Post(n_components=2, init_from=q, progress=False)
    params, _ = initial_parameters(method, t, np.random.default_rng(0), None)
    a, mu, zeta = _split(params, 2, 3)
    np.testing.assert_allclose(np.exp(a) / np.exp(a).sum(), q.weights)
    np.testing.assert_array_equal(mu, q.means)
    np.testing.assert_allclose(zeta, softplus_inv(q.scales))


def test_a_gaussian_start_spreads_the_components_by_its_sds_around_its_mean():
    t = wb.targets.gaussian(2)
    start = Gaussian(np.array([3.0, -3.0]), np.diag([4.0, 0.01]))
    method = wb.methods.NN4Post(n_components=400, progress=False)
    params, lr_scale = initial_parameters(method, t, np.random.default_rng(1), None, start=start)
    _, mu, zeta = _split(params, 400, 2)
    assert np.all(np.abs(mu.mean(0) - [3.0, -3.0]) < 4 * np.array([2.0, 0.1]) / 20)  # 4 standard errors
    np.testing.assert_allclose(mu.std(0), [2.0, 0.1], rtol=0.15)
    np.testing.assert_allclose(zeta, np.tile(softplus_inv([2.0, 0.1]), (400, 1)))
    one = wb.methods.NN4Post(n_components=1, progress=False)
    params, _ = initial_parameters(one, t, np.random.default_rng(1), None, start=start)
    np.testing.assert_array_equal(_split(params, 1, 2)[1][0], [3.0, -3.0])  # one component: at the mean


def test_the_box_start_and_bad_weights():
    t = wb.targets.gaussian(4)
    method = wb.methods.NN4Post(n_components=3, init="box", progress=False)
    params, lr_scale = initial_parameters(method, t, np.random.default_rng(2), None)
    _, mu, _ = _split(params, 3, 4)
    assert np.all(np.abs(mu - t.initial_point) <= math.sqrt(4)) and np.all(lr_scale == 1.0)
    bad = wb.methods.NN4Post(n_components=3, init="box", init_weights=[1.0, -1.0, 1.0], progress=False)
    with pytest.raises(ValueError, match="init_weights must be 3 positive finite numbers"):
        initial_parameters(bad, t, np.random.default_rng(2), None)


def test_the_mode_search_refuses_a_budget_too_small_for_it_and_the_fit():
    t = wb.targets.gaussian(5)
    method = wb.methods.NN4Post(n_components=2, progress=False)
    with pytest.raises(BudgetTooSmallError, match="too small for init='modes'"):
        mode_search(method, t, 0, Budget(grad_evals=50))
    assert mode_search(wb.methods.NN4Post(init="box", progress=False), t, 0, Budget(grad_evals=10_000)) is None
