"""workbench/methods/gmmvi_state.py: the sample database's background density, the step-size
and deletion rules, the adding heuristic."""

import math

import numpy as np
from scipy import stats
from scipy.special import logsumexp

from workbench.fitting import gmmvi_state as S


def brute_force_background(x, draws_from):
    """log sum_j (n_j / n) N(x; mu_j, Sigma_j) over every (mean, cov, count) that drew the kept draws."""
    total = sum(n for _, _, n in draws_from)
    terms = [math.log(n / total) + stats.multivariate_normal.logpdf(x, m, c) for m, c, n in draws_from]
    return logsumexp(np.stack(terms, axis=-1), axis=-1)


def test_the_background_is_the_mixture_of_the_components_that_drew_the_kept_draws():
    rng = np.random.default_rng(0)
    d = 3
    db = S.SampleDatabase(d, archive_size=1000)
    history = []  # per iteration: [(mean, cov, count)]
    for it in range(6):
        means = rng.standard_normal((2, d))
        covs = np.stack([np.eye(d) * (1 + it), np.eye(d) + 0.3])
        counts = np.array([3 + it, 0 if it == 2 else 2])  # a component that drew nothing
        x = np.concatenate([rng.multivariate_normal(means[k], covs[k], size=counts[k]) for k in range(2)])
        db.add(x, rng.standard_normal(len(x)), rng.standard_normal((len(x), d)), counts, means, np.linalg.cholesky(covs))
        history.append([(means[k], covs[k], counts[k]) for k in range(2) if counts[k] > 0])
    db.keep_newest(12)  # the newest iterations holding >= 12 draws: the last two (8 + 2 and 7 + 2)
    x, _, _, background = db.sample()
    assert len(x) == 19
    np.testing.assert_allclose(background, brute_force_background(x, history[-2] + history[-1]), rtol=1e-10)
    db.keep_newest(0)
    assert len(db.sample()[0]) == 0


def test_the_archive_is_thinned_by_two_when_full():
    db = S.SampleDatabase(1, archive_size=10)
    for _ in range(3):
        db.add(np.zeros((4, 1)), np.zeros(4), np.zeros((4, 1)), np.array([4]), np.zeros((1, 1)), np.ones((1, 1, 1)))
    assert len(db.archive_logp) == 6  # 12 > 10: every second kept


def test_the_archive_keeps_the_draws_the_concatenate_and_halve_rule_keeps():
    """The in-place archive against the rule written plainly: append; when over the size, keep
    every second draw (the new ones included)."""
    rng = np.random.default_rng(3)
    db = S.SampleDatabase(2, archive_size=50)
    plain_x, plain_logp, counter = np.empty((0, 2)), np.empty(0), 0
    for n in rng.integers(1, 17, size=40):
        logp = np.arange(counter, counter + n, dtype=float)
        x = np.stack([logp, -logp], axis=1)
        counter += n
        db.add(x, logp, x, np.array([n]), np.zeros((1, 2)), np.eye(2)[None])
        plain_x, plain_logp = np.concatenate([plain_x, x]), np.concatenate([plain_logp, logp])
        if len(plain_logp) > 50:
            plain_x, plain_logp = plain_x[::2], plain_logp[::2]
        np.testing.assert_array_equal(db.archive_logp, plain_logp)
        np.testing.assert_array_equal(db.archive_x, plain_x)


def test_step_sizes_grow_after_an_improvement_and_shrink_otherwise_within_their_range():
    eps = np.array([0.5, 0.5, 0.999, 0.0011])
    rewards = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    np.testing.assert_allclose(S.improvement_step_sizes(eps, rewards, 0.001, 1.0), [0.575, 0.425, 1.0, 0.001])


def test_the_state_adds_and_removes_components_keeping_weights_normalised():
    state = S.MixtureState.new(np.zeros((2, 2)), np.stack([np.eye(2)] * 2), history=10, initial_eps=1.0)
    state.add(math.log(1e-29), np.ones(2), 2 * np.eye(2))
    assert state.size == 3 and math.isclose(state.weights.sum(), 1.0) and state.weights[2] < 1e-28
    assert state.entropies()[2] > state.entropies()[0]  # the wider component has more entropy
    state.remove(np.array([True, False, True]))
    assert state.size == 2 and math.isclose(state.weights.sum(), 1.0)


def test_a_stagnating_negligible_component_is_deleted_and_a_heavy_one_is_not():
    state = S.MixtureState.new(np.zeros((2, 1)), np.ones((2, 1, 1)), history=200, initial_eps=1.0)
    for _ in range(200):
        state.store_rewards(np.array([-1.0, -50.0]))  # both flat: neither improves
        state.set_log_weights(np.log([1 - 1e-9, 1e-9]))
    np.testing.assert_array_equal(S.stagnating_components(state, 100, 1e-6), [False, True])


def test_a_new_component_goes_where_p_is_high_and_q_low():
    rng = np.random.default_rng(1)
    state = S.MixtureState.new(np.zeros((1, 2)), np.eye(2)[None], history=10, initial_eps=1.0)
    db = S.SampleDatabase(2, archive_size=1000)
    x = np.array([[0.0, 0.0], [8.0, 8.0], [0.5, 0.0]])
    logp = np.array([0.0, -1.0, -0.1])  # the draw at (8, 8) has high p where q is ~0
    db.add(x, logp, np.zeros((3, 2)), np.array([3]), state.means, state.chols)
    mean, chol = S.new_component_location(state, db, 0, rng, prior_entropy=float(state.entropies()[0]), max_draws=100)
    np.testing.assert_array_equal(mean, [8.0, 8.0])
    assert np.allclose(chol, chol[0, 0] * np.eye(2))  # isotropic, with the blended entropy (here the same)
    assert math.isclose(chol[0, 0], 1.0)


def test_the_background_of_diagonal_components_is_their_mixture():
    rng = np.random.default_rng(1)
    d = 3
    db = S.SampleDatabase(d, archive_size=1000, diagonal=True)
    history = []
    for _ in range(3):
        means, sds = rng.standard_normal((2, d)), rng.uniform(0.5, 2.0, (2, d))
        counts = np.array([4, 3])
        x = np.concatenate([means[k] + sds[k] * rng.standard_normal((counts[k], d)) for k in range(2)])
        db.add(x, rng.standard_normal(len(x)), rng.standard_normal((len(x), d)), counts, means, sds)
        history.append([(means[k], np.diag(sds[k] ** 2), counts[k]) for k in range(2)])
    x, _, _, background = db.sample()
    np.testing.assert_allclose(background, brute_force_background(x, [c for h in history for c in h]), rtol=1e-10)
    state = S.MixtureState.new(means, sds, history=10, initial_eps=1.0)
    np.testing.assert_allclose(state.entropies(), [stats.multivariate_normal(m, np.diag(s**2)).entropy()
                                                   for m, s in zip(means, sds)], rtol=1e-12)
    mean, sd = S.new_component_location(state, db, 0, rng, float(state.entropies()[0]), 100)
    assert sd.shape == (d,) and np.all(sd > 0)
