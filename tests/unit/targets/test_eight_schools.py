"""workbench/targets/eight_schools.py: both forms against the model written out with scipy."""

import numpy as np
from scipy import stats

import workbench as wb
from workbench.targets.eight_schools import MU_SD, SIGMA, TAU_SCALE, Y


def _model(mu, tau, theta):
    return (stats.norm.logpdf(mu, 0, MU_SD) + stats.halfcauchy.logpdf(tau, 0, TAU_SCALE)
            + stats.norm.logpdf(Y, theta, SIGMA).sum())


def test_noncentred_and_centred_forms_are_the_same_model_with_their_jacobians():
    """Up to one constant per form: log p at several points against the model written out."""
    rng = np.random.default_rng(0)
    nc, c = wb.targets.eight_schools(), wb.targets.eight_schools(centered=True)
    offsets_nc, offsets_c = [], []
    for _ in range(4):
        mu, log_tau, eta = rng.normal(), rng.normal(), rng.standard_normal(8)
        tau = np.exp(log_tau)
        theta = mu + tau * eta
        # non-centred: eta ~ N(0, 1); both forms add log tau, the Jacobian of tau = exp(log tau)
        expected_nc = _model(mu, tau, theta) + stats.norm.logpdf(eta).sum() + log_tau
        offsets_nc.append(nc.logp(np.concatenate([[mu, log_tau], eta])) - expected_nc)
        expected_c = _model(mu, tau, theta) + stats.norm.logpdf(theta, mu, tau).sum() + log_tau
        offsets_c.append(c.logp(np.concatenate([[mu, log_tau], theta])) - expected_c)
    assert np.ptp(offsets_nc) < 1e-9 and np.ptp(offsets_c) < 1e-9
