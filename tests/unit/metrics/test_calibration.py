"""workbench/metrics/calibration.py: the rank of a simulated truth among a fit's draws is uniform
when the draws come from the truth's own distribution, ties are broken at random, weighted
draws are ranked with their weights, MCMC draws are thinned by their ESS, and the quantities are
the model's variables then log_lik."""

import numpy as np
import pytest

import workbench as wb
from workbench.metrics.calibration import LOG_LIK, calibration_ranks, quantities, quantity_names, ranks_of_truth, sbc_draws
from workbench.targets.specs import simulated_target


def _uniformity_p(pit):
    from arviz_stats.base import array_stats

    return float(array_stats.uniformity_test(pit, method="pot_c")[0])


def test_the_pit_of_a_truth_drawn_like_the_draws_is_uniform_and_of_a_narrow_fit_is_not():
    rng = np.random.default_rng(0)
    exact, narrow = [], []
    for _ in range(300):
        truth = rng.standard_normal(1)
        exact.append(ranks_of_truth(rng.standard_normal((50, 1)), truth, None, rng)[1][0])
        narrow.append(ranks_of_truth(0.6 * rng.standard_normal((50, 1)), truth, None, rng)[1][0])
    assert _uniformity_p(np.array(exact)) > 0.05
    assert _uniformity_p(np.array(narrow)) < 1e-4


def test_ties_are_broken_at_random_and_weights_count():
    rng = np.random.default_rng(1)
    values = np.zeros((9, 1))  # every draw ties with the truth
    ranks = [ranks_of_truth(values, np.zeros(1), None, rng)[0][0] for _ in range(2000)]
    counts = np.bincount(ranks, minlength=10)
    assert counts.min() > 120 and counts.max() < 280  # uniform on 0..9: 200 each
    # weighted: all the weight below the truth
    ranks, pit = ranks_of_truth(np.array([[-1.0], [1.0]]), np.zeros(1), np.array([1.0, 0.0]), rng)
    assert pit[0] > 0.6 and ranks[0] == 2


def test_mcmc_draws_are_thinned_by_their_ess_and_independent_draws_are_not():
    t = wb.targets.gaussian(dim=3)
    nuts = wb.methods.NUTS(chains=2, warmup=200, draws=500, progress=False).run(t, seed=0)
    draws, weights, thin = sbc_draws(nuts)
    ess = nuts.info["diagnostics"]["ess_bulk_min"]
    assert weights is None and thin == max(1, int(1000 // ess)) and len(draws) == 2 * len(range(0, 500, thin))
    rwm = wb.methods.RandomWalkMH(chains=2, warmup=200, draws=500, progress=False).run(t, seed=0)
    assert sbc_draws(rwm)[2] > 3  # random-walk draws are strongly autocorrelated
    vi = wb.methods.MeanFieldVI(progress=False).run(t, seed=0, grad_budget=2000)
    assert sbc_draws(vi)[2] == 1
    importance = wb.methods.ImportanceSampling(n=500).run(t, seed=0)
    assert sbc_draws(importance)[1] is not None


def test_quantities_are_the_coordinates_then_log_lik():
    t = wb.targets.linear_regression(dim=3, n_data=20)
    names = quantity_names(t)
    assert names == (*t.param_names, LOG_LIK)
    theta = np.zeros((2, 3))
    q = quantities(t, theta)
    np.testing.assert_allclose(q[:, :3], theta)
    np.testing.assert_allclose(q[:, 3], t.generative.log_likelihood(theta, t.data))
    bnn = wb.targets.bnn(n_data=10, widths=[2])
    assert quantity_names(bnn)[:3] == bnn.identified.names[:3] and quantity_names(bnn)[-1] == LOG_LIK


def test_a_calibration_cell_ranks_the_simulated_truth():
    base = wb.targets.linear_regression(dim=2, n_data=15)
    sim = simulated_target(base, seed=3, index=4)
    res = wb.methods.Laplace(draws=999).run(sim, seed=0)
    out = calibration_ranks(res, sim)
    assert out["n_ranked"] == 999 and out["thin"] == 1
    assert out["_arrays"]["ranks"].shape == (3,) and np.all((out["_arrays"]["pit"] > 0) & (out["_arrays"]["pit"] < 1))
    with pytest.raises(ValueError, match="not a simulated data set"):
        calibration_ranks(res, base)


def test_the_tested_family_leaves_out_constants_mirror_entries_and_monotone_transforms():
    """An LKJ covariance's quantities: its correlation matrix has a diagonal of ones (constant)
    and mirror entries [j, i]; its packed coordinates are the Cholesky factor's entries (equal)
    or their logs (monotone). Holm over all of them would spend power on ties and copies."""
    pm = pytest.importorskip("pymc")
    from workbench.metrics.calibration import tested_quantities

    rng = np.random.default_rng(0)
    with pm.Model() as model:
        chol, corr, sds = pm.LKJCholeskyCov("chol", n=3, eta=2.0, sd_dist=pm.Exponential.dist(1.0, shape=3),
                                            compute_corr=True)
        pm.MvNormal("y", mu=np.zeros(3), chol=chol, observed=rng.normal(size=(20, 3)))
    target = wb.Target.from_pymc(model, observed_as_data=True)
    names = quantity_names(target)
    tested, left_out = tested_quantities(target)
    assert set(tested) | set(left_out) == set(names) and not set(tested) & set(left_out)
    for i in range(3):
        assert left_out[f"chol_corr[{i},{i}]"] == "constant over the prior"
    for i, j in [(0, 1), (0, 2), (1, 2)]:
        assert f"chol_corr[{i},{j}]" in tested and left_out[f"chol_corr[{j},{i}]"] == f"equal to chol_corr[{i},{j}]"
    packed = [n for n in names if n.startswith("chol_cholesky-cov-packed__")]
    assert len(packed) == 6 and not set(packed) & set(tested)  # each a copy or the log of a chol[k]
    assert LOG_LIK in tested and len(tested) == len(names) - 13
