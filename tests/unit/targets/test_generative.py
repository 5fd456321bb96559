"""Every built-in model with a generative form (``target.generative``) simulates data in its
target's own layout, and its log-likelihood is the data's part of the density: between two
simulated data sets, the density and the log-likelihood change by the same amount."""

import numpy as np
import pytest

import workbench as wb
from workbench.targets.specs import simulated_target

MODELS = {
    "linear": lambda: wb.targets.linear_regression(dim=4, n_data=20, correlation=0.9),
    "logistic": lambda: wb.targets.logistic_regression(dim=3, n_data=30),
    "eight_schools": lambda: wb.targets.eight_schools(),
    "eight_schools_centered": lambda: wb.targets.eight_schools(centered=True),
    "bnn": lambda: wb.targets.bnn(n_data=12, widths=[3]),
    **{name: (lambda name=name: wb.posteriors.load(name)) for name in
       ("diabetes_linear_sigma", "stochastic_volatility", "brownian_motion", "lgcp")},
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_simulated_data_fit_the_target_and_the_log_likelihood_is_the_datas_part(name):
    base = MODELS[name]()
    a, b = simulated_target(base, 0, 1), simulated_target(base, 0, 2)
    theta = a.truth.extras["simulated"]
    assert theta.shape == (base.dim,) and np.isfinite(a.logp(theta))
    assert [np.shape(x) for x in a.data] == [np.shape(x) for x in base.data]
    assert a.truth.source == "simulation" and a.spec["index"] == 1
    ll = base.generative.log_likelihood
    for point in (theta, b.truth.extras["simulated"]):
        change = a.logp(point) - b.logp(point)
        assert change == pytest.approx(float(ll(point[None], a.data)[0] - ll(point[None], b.data)[0]), rel=1e-8, abs=1e-8)


def test_a_simulation_is_reproducible_from_its_seed_and_index():
    base = wb.targets.eight_schools()
    one, again, other = simulated_target(base, 5, 3), simulated_target(base, 5, 3), simulated_target(base, 6, 3)
    np.testing.assert_array_equal(one.data[0], again.data[0])
    assert not np.array_equal(one.data[0], other.data[0])


def test_correlated_pairs_give_strongly_correlated_coefficients():
    t = wb.targets.linear_regression(dim=4, n_data=200, correlation=0.95)
    cov = t.truth.cov
    corr = cov[0, 1] / np.sqrt(cov[0, 0] * cov[1, 1])
    assert corr < -0.9


def test_a_target_without_a_generative_form_cannot_simulate():
    base = wb.targets.gaussian(dim=2)
    with pytest.raises(wb.TargetError, match="no generative form"):
        simulated_target(base, 0, 0)
