"""A density that raises at a proposal is log p = -inf there, for every method (density_faults.py).

The target is a standard normal whose gradient is written f'/f with f = exp(-30 theta^2): f
underflows to 0.0 beyond |theta_i| = 4.98 and the division raises ZeroDivisionError (Numba's
default error model). The posterior's mass there is 6e-7, so each method must still find the
standard normal, and count and report the faults its proposals met. Without the rule, every run
below ended in a DensityError at its first far proposal.
"""

import arviz as az
import numpy as np
import pytest

import workbench as wb
from tests import user_functions as uf
from workbench.approximations import Gaussian

TRUTH = wb.Truth(mean=np.zeros(2), sd=np.ones(2))


@pytest.fixture(scope="module")
def underflowing():
    # started near the edge, so that every method's early proposals cross it
    return wb.Target.from_numba(uf.underflowing_gradient, dim=2, name="underflowing", truth=TRUTH,
                                initial_point=np.full(2, 4.0))


def _run(method, target, seed=1):
    with pytest.warns(RuntimeWarning, match="density faults"):
        res = method.run(target, seed=seed)
    assert res.info["density_faults"] > 0
    (message,) = [m for m in res.messages if m.startswith("density faults")]
    assert "ZeroDivisionError('division by zero')" in message and "log p = -inf" in message
    return res


SAMPLERS = {  # each rejects a faulting proposal: a divergence (NUTS, HMC), a Metropolis rejection
    "NUTS": wb.methods.NUTS(),
    "HMC": wb.methods.HMC(),
    "RandomWalkMH": wb.methods.RandomWalkMH(),
    "MAMS": wb.methods.MAMS(init_jitter=4.0),
}


@pytest.mark.parametrize("name", SAMPLERS)
def test_a_sampler_rejects_faulting_proposals_and_samples_the_posterior(name, underflowing):
    res = _run(SAMPLERS[name], underflowing)
    draws = res.draws
    mean_err = np.abs(draws.mean((0, 1)))
    sd_err = np.abs(draws.std((0, 1)) - 1.0)
    mcse_mean, mcse_sd = np.asarray(az.mcse(draws)), np.asarray(az.mcse(draws, method="sd"))
    assert np.all(mean_err < 4 * mcse_mean), (mean_err / mcse_mean).round(2)
    assert np.all(sd_err < 4 * mcse_sd), (sd_err / mcse_sd).round(2)


def test_importance_sampling_gives_faulting_draws_weight_zero(underflowing):
    res = _run(wb.methods.ImportanceSampling(proposal=Gaussian(np.zeros(2), 4.0 * np.eye(2)), n=20_000), underflowing)
    logw = res.log_weights.ravel()
    x = res.draws[0]
    assert np.isneginf(logw).sum() == res.info["density_faults"]
    assert np.all(np.isneginf(logw[np.any(np.abs(x) > 4.99, axis=1)]))
    w = np.exp(logw - logw.max())
    w /= w.sum()
    ess = 1.0 / np.sum(w ** 2)
    mean = w @ x
    sd = np.sqrt(w @ (x - mean) ** 2)
    # the weighted mean's and sd's standard errors are about 1 / sqrt(ESS) and 1 / sqrt(2 ESS)
    assert np.all(np.abs(mean) < 4 / np.sqrt(ess)) and np.all(np.abs(sd - 1) < 4 / np.sqrt(ess / 2)), (mean, sd, ess)


def test_smc_gives_faulting_particles_weight_zero(underflowing):
    res = _run(wb.methods.SMC(), underflowing)
    x = res.draws.reshape(-1, 2)
    assert np.all(np.abs(x) < 4.98)  # no particle survives where the density raised
    # 4 runs x 2,000 particles: the moments' errors are a few hundredths
    assert np.all(np.abs(x.mean(0)) < 0.1) and np.all(np.abs(x.std(0) - 1) < 0.1)


def test_vi_leaves_faulting_draws_out_of_its_steps(underflowing):
    start = Gaussian(np.full(2, 3.0), np.eye(2))  # q's draws reach past 4.98 in the first steps
    res = _run(wb.methods.MeanFieldVI(init_from=start), underflowing)
    q = res.approximation
    assert np.all(np.abs(q.mean) < 0.1) and np.all(np.abs(np.sqrt(np.diag(q.cov)) - 1) < 0.1), (q.mean, q.cov)


def test_laplace_skips_faulting_starts(underflowing):
    res = _run(wb.methods.Laplace(starts=4, start_scale=5.0), underflowing)
    assert np.allclose(res.approximation.mean, 0.0, atol=1e-6)
    assert np.allclose(res.approximation.cov, np.eye(2), atol=1e-3)
