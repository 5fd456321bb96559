"""NUTS on a PyMC model compiled through PyTensor's Numba backend matches a long reference."""

import arviz as az
import numpy as np

import workbench as wb


def test_nuts_on_pymc_eight_schools_matches_a_long_reference_within_4_mcse():
    pymc_target = wb.posteriors.load("eight_schools_noncentered", backend="pymc")
    numba_target = wb.posteriors.load("eight_schools_noncentered")  # the same density, by hand
    ref = wb.methods.NUTS(chains=4, warmup=1000, draws=25_000, target_accept=0.95).run(numba_target, seed=100)
    res = wb.methods.NUTS(chains=4, warmup=1000, draws=2000, target_accept=0.95).run(pymc_target, seed=7)
    assert res.cost.grad_evals > 0
    se_mean = np.hypot(np.asarray(az.mcse(res.draws)), np.asarray(az.mcse(ref.draws)))
    se_sd = np.hypot(np.asarray(az.mcse(res.draws, method="sd")), np.asarray(az.mcse(ref.draws, method="sd")))
    mean_err = np.abs(res.draws.mean((0, 1)) - ref.draws.mean((0, 1)))
    sd_err = np.abs(res.draws.std((0, 1)) - ref.draws.std((0, 1)))
    assert np.all(mean_err < 4 * se_mean), (mean_err / se_mean).round(2)
    assert np.all(sd_err < 4 * se_sd), (sd_err / se_sd).round(2)
    # the check can fail: a 10% narrower posterior is caught
    assert np.any(np.abs(0.9 * res.draws.std((0, 1)) - ref.draws.std((0, 1))) > 4 * se_sd)
