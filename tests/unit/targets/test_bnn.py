"""workbench/targets/bnn.py: the network's log density is its Gaussian likelihood plus prior."""

import numpy as np
from scipy import stats

import workbench as wb
from workbench.targets.bnn import bnn_predict, layer_sizes, n_parameters


def test_log_density_is_the_likelihood_of_the_predictions_plus_the_gaussian_prior():
    t = wb.targets.bnn(n_data=20, widths=(5, 4))
    X, y, inv_sigma, _, sizes, inv_prior_var = t.data
    assert t.dim == n_parameters(layer_sizes(t)) == 1 * 5 + 5 + 5 * 4 + 4 + 4 * 1 + 1
    theta = np.random.default_rng(0).standard_normal(t.dim)
    f = bnn_predict(theta, X, sizes)
    prior_sd = 1.0 / np.sqrt(inv_prior_var[0])
    expected = stats.norm.logpdf(y, f, 1.0 / inv_sigma).sum() + stats.norm.logpdf(theta, 0.0, prior_sd).sum()
    # the prior may be left unnormalised: compare differences between two points
    theta2 = theta * 0.5
    f2 = bnn_predict(theta2, X, sizes)
    expected2 = stats.norm.logpdf(y, f2, 1.0 / inv_sigma).sum() + stats.norm.logpdf(theta2, 0.0, prior_sd).sum()
    np.testing.assert_allclose(t.logp(theta) - t.logp(theta2), expected - expected2, rtol=1e-10)
