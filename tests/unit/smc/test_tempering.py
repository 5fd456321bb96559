"""The tempering ladder's pieces against direct computations."""

import math

import numpy as np
import pytest
from scipy.special import logsumexp

from workbench.smc import tempering as T


@pytest.fixture
def particles():
    rng = np.random.default_rng(0)
    log_w = T.normalise(rng.normal(0.0, 0.5, 500))
    increment = rng.normal(-3.0, 2.0, 500)  # log p - log p0 at the particles
    return log_w, increment


def test_conditional_ess_is_one_for_a_zero_step_and_matches_its_formula(particles):
    log_w, u = particles
    assert T.conditional_ess_fraction(log_w, u, 0.0) == pytest.approx(1.0)
    W, w = np.exp(log_w), np.exp(0.3 * u)
    assert T.conditional_ess_fraction(log_w, u, 0.3) == pytest.approx(np.sum(W * w) ** 2 / np.sum(W * w * w))


def test_the_next_temperature_keeps_the_conditional_ess_at_its_target(particles):
    log_w, u = particles
    beta = 0.2
    nxt = T.next_temperature(beta, log_w, u, 0.5)
    assert beta < nxt < 1.0
    assert T.conditional_ess_fraction(log_w, u, nxt - beta) == pytest.approx(0.5, abs=1e-6)


def test_the_next_temperature_is_one_when_the_rest_of_the_ladder_is_cheap(particles):
    log_w, u = particles
    assert T.next_temperature(0.2, log_w, 1e-3 * u, 0.5) == 1.0


def test_reweighting_estimates_the_evidence_ratio_as_the_weighted_mean_increment(particles):
    log_w, u = particles
    new, log_ratio = T.reweight(log_w, u, 0.25)
    assert log_ratio == pytest.approx(math.log(np.sum(np.exp(log_w) * np.exp(0.25 * u))))
    assert logsumexp(T.normalise(new)) == pytest.approx(0.0)


def test_particles_with_a_nan_or_minus_inf_density_get_weight_zero(particles):
    log_w, u = particles
    u = u.copy()
    u[:3] = [np.nan, -np.inf, np.nan]
    new, log_ratio = T.reweight(log_w, u, 0.5)
    assert np.all(np.isneginf(new[:3])) and math.isfinite(log_ratio)
    assert 0.0 < T.conditional_ess_fraction(log_w, u, 0.5) < 1.0


def test_ess_fraction_of_equal_and_of_one_point_weights():
    assert T.ess_fraction(np.zeros(10)) == pytest.approx(1.0)
    assert T.ess_fraction(np.array([0.0] + [-np.inf] * 9)) == pytest.approx(0.1)
    assert np.all(np.isneginf(T.normalise(np.full(4, -np.inf))))
