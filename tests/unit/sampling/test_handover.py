"""workbench/sampling/handover.py: what one warmup phase hands the next (each chain's diagonal
metric and step; a low-rank metric estimated from every chain's draws at once)."""

from types import SimpleNamespace

import numpy as np

import workbench as wb
from workbench.sampling.handover import adapted, pooled_low_rank


def test_the_next_phase_starts_from_the_metric_and_median_step_and_only_a_same_metric_keeps_the_target():
    run = SimpleNamespace(info={"inv_mass": np.array([[1.0, 4.0], [1.2, 3.8]]), "step_size": [0.3, float("nan"), 0.5],
                                "target_accept_raised_to": [0.95, 0.8]})
    start = adapted(run)
    np.testing.assert_array_equal(start["inv_metric"], run.info["inv_mass"])
    assert start["step_size"] == 0.4 and "target_accept" not in start  # NaN steps left out
    assert adapted(run, same_metric=True)["target_accept"] == 0.95
    broken = SimpleNamespace(info={"inv_mass": np.array([[1.0, -1.0]]), "step_size": []})
    assert adapted(broken) == {}  # a metric not positive is not handed on, nor a missing step


def _metric_covariance(t) -> np.ndarray:
    """A A^T of the map x = A y (mcmc/metric.py): the covariance the metric stands for."""
    k = int(t.rank[0])
    u = t.vecs[:k].T
    a = np.diag(t.sigma) @ (np.eye(t.sigma.size) + u @ np.diag(t.sqrt_vals[:k] - 1.0) @ u.T)
    return a @ a.T


def test_the_pooled_low_rank_metric_of_exact_draws_is_the_posteriors_covariance():
    """For a Gaussian the Fisher-divergence metric is the covariance (Seyboldt et al. 2026): from 400
    exact draws and their gradients, its eigenvalues within 15% of the posterior's."""
    t = wb.targets.gaussian(6, correlation=0.9)
    x = t.truth.sample(400, np.random.default_rng(0))
    g = np.array([t.logp_and_grad(row)[1] for row in x])
    resume = pooled_low_rank(x, g, chains=3, step_size=0.3, gamma=1e-5, cutoff=2.0)
    assert resume.step_sizes == [0.3, 0.3, 0.3] and len(resume.transforms) == 3
    assert int(resume.transforms[0].rank[0]) >= 1  # the correlated direction is a correction
    got = np.linalg.eigvalsh(_metric_covariance(resume.transforms[0]))
    want = np.linalg.eigvalsh(t.truth.cov)
    np.testing.assert_allclose(got, want, rtol=0.15)


def test_an_unusable_estimate_hands_nothing_on():
    x = np.zeros((50, 4))
    x[3, 1] = np.nan
    assert pooled_low_rank(x, np.ones((50, 4)), chains=2, step_size=0.3, gamma=1e-5, cutoff=2.0) is None
