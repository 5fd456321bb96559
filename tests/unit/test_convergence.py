"""R-hat and bulk and tail ESS of all coordinates at once: the same numbers as ArviZ's."""

import arviz as az
import numpy as np
import pytest

from workbench import convergence as C


def ar1_chains(rng, shape, phi):
    """(chains, draws, d) AR(1) chains, coordinate k with autocorrelation phi[k]."""
    x = np.zeros(shape)
    noise = rng.standard_normal(shape)
    for t in range(1, shape[1]):
        x[:, t] = phi * x[:, t - 1] + noise[:, t]
    return x


def metropolis_like(rng, shape, stay=0.6):
    """Chains that repeat their last value with probability ``stay``: ties, as a rejected move makes."""
    x = rng.standard_normal(shape)
    for t in range(1, shape[1]):
        keep = rng.random(shape[0:1] + shape[2:]) < stay
        x[:, t] = np.where(keep, x[:, t - 1], x[:, t])
    return x


CASES = {
    "independent": lambda rng: rng.standard_normal((4, 500, 5)),
    "autocorrelated": lambda rng: ar1_chains(rng, (4, 2000, 3), np.array([0.5, 0.95, 0.995])),
    "ties": lambda rng: metropolis_like(rng, (4, 500, 3)),
    "rounded": lambda rng: np.round(rng.standard_normal((3, 400, 4)), 1),  # many ties, also at the median
    "odd draws": lambda rng: rng.standard_normal((2, 301, 3)).cumsum(axis=1),
    "one chain": lambda rng: ar1_chains(rng, (1, 1000, 3), np.array([0.0, 0.7, 0.9])),
    # above PARALLEL_MIN_VALUES: blocks of coordinates on threads
    "many coordinates": lambda rng: ar1_chains(rng, (4, 1000, 30), np.linspace(0.0, 0.9, 30)),
    "not mixed": lambda rng: rng.standard_normal((4, 300, 2)) + np.array([0.0, 0.0, 0.0, 3.0])[:, None, None],
}


@pytest.mark.parametrize("case", CASES)
def test_rank_diagnostics_are_arviz_numbers(case):
    x = CASES[case](np.random.default_rng(1))
    got = C.rank_diagnostics(x, prob=0.89)
    np.testing.assert_allclose(got.ess_bulk, np.asarray(az.ess(x, method="bulk")).ravel(), rtol=1e-10)
    np.testing.assert_allclose(got.ess_tail, np.asarray(az.ess(x, method="tail", prob=0.89)).ravel(), rtol=1e-10)
    if x.shape[0] > 1:
        np.testing.assert_allclose(got.r_hat, np.asarray(az.rhat(x)).ravel(), rtol=1e-10)
    else:
        assert np.isnan(got.r_hat).all()


def test_the_many_coordinates_case_runs_on_threads():
    assert CASES["many coordinates"](np.random.default_rng(1)).size >= C.PARALLEL_MIN_VALUES


def test_the_checks_see_what_they_should():
    """The cases differ where they should (so the equality above is not of constants)."""
    rng = np.random.default_rng(1)
    slow = C.rank_diagnostics(CASES["autocorrelated"](rng), prob=0.89)
    assert slow.ess_bulk[0] > 10 * slow.ess_bulk[2]
    stuck = C.rank_diagnostics(CASES["not mixed"](rng), prob=0.89)
    assert stuck.r_hat.min() > 1.3


def test_a_constant_coordinate_and_non_finite_draws_are_arviz_too():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 200, 3))
    x[:, :, 1] = 2.0
    got = C.rank_diagnostics(x, prob=0.89)
    np.testing.assert_allclose(got.ess_bulk, np.asarray(az.ess(x, method="bulk")).ravel(), rtol=1e-10)
    np.testing.assert_array_equal(np.isnan(got.r_hat), np.isnan(np.asarray(az.rhat(x)).ravel()))
    x[0, 5, 0] = np.nan  # not finite: ArviZ decides
    got = C.rank_diagnostics(x, prob=0.89)
    np.testing.assert_array_equal(np.isnan(got.ess_bulk), np.isnan(np.asarray(az.ess(x, method="bulk")).ravel()))


@pytest.mark.parametrize("method, prob", [("bulk", None), ("tail", 0.89), ("mean", None)])
def test_ess_equals_arviz_on_long_autocorrelated_chains(method, prob):
    """ArviZ's numbers on AR(1) chains whose autocorrelation runs over hundreds of lags, by
    this module's path (bulk) and by ArviZ's own with the compiled lag loop (tail, mean)."""
    x = ar1_chains(np.random.default_rng(0), (4, 4000, 3), np.array([0.5, 0.95, 0.995]))
    kwargs = {} if prob is None else {"prob": prob}
    expected = np.asarray(az.ess(x, method=method, **kwargs)).ravel()
    np.testing.assert_allclose(C.ess(x, method=method, prob=prob), expected, rtol=1e-10)


def test_fold_sorted_orders_the_distances_from_the_median():
    rng = np.random.default_rng(3)
    s = np.sort(np.round(rng.standard_normal((3, 40)), 1), axis=1)
    order = np.tile(np.arange(40), (3, 1))
    median = np.median(s, axis=1)
    folded, folded_order = C.fold_sorted(s, order, median)
    np.testing.assert_array_equal(folded, np.sort(np.abs(s - median[:, None]), axis=1))
    np.testing.assert_array_equal(np.take_along_axis(np.abs(s - median[:, None]), folded_order, axis=1), folded)
