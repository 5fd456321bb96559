"""workbench/discrete/markov.py: stationary distributions, exact and simulated (within 4 Monte Carlo SEs)."""

import numpy as np
import pytest

from workbench.discrete import markov


def test_stationary_distribution_by_linear_algebra():
    pi = markov.stationary_distribution()
    np.testing.assert_allclose(np.round(pi, 3), [0, 0.2, 0.4, 0.4, 0])
    np.testing.assert_allclose(pi @ markov.TRANSITION, pi, atol=1e-12)


@pytest.mark.parametrize("start", [0, 4])
def test_stationary_distribution_by_simulation(start):
    pi = markov.stationary_distribution()
    freq, se = markov.visit_frequencies(markov.simulate(200_000, start=start, seed=start), burn_in=200)
    closed = [1, 2, 3]
    assert np.all(np.abs(freq[closed] - pi[closed]) < 4 * se[closed])
    assert freq[0] == 0 and freq[4] == 0  # transient states are not visited after burn-in


def test_non_unique_or_impossible_stationary_distributions_are_refused():
    with pytest.raises(ValueError, match="not unique"):
        markov.stationary_distribution(np.eye(2))  # two closed classes
    with pytest.raises(ValueError, match="no stationary distribution"):
        markov.stationary_distribution(np.array([[0.5, 0.5], [0.5, 0.6]]))  # rows do not sum to 1
