"""workbench/modes.py: the mode search, its weights and its cost."""

import numpy as np
import pytest

import workbench as wb
from tests import user_functions as uf
from workbench import modes as M
from workbench.errors import NonFiniteDensityError


def test_mode_search_weights_are_the_peaks_masses_and_its_cost_is_counted():
    t = wb.targets.gaussian_mixture(3, weights=[0.2, 0.8], means=[-4.0, 4.0], scales=[1.0, 0.5])
    search = M.find_modes(t, np.random.default_rng(0), starts=50)
    assert len(search.modes) == 2 and search.grad_evals > 0
    np.testing.assert_allclose(search.weights, [0.8, 0.2], atol=1e-6)  # Laplace is exact per peak
    np.testing.assert_allclose(search.modes[0].sd, 0.5, rtol=1e-4)
    limited = M.find_modes(t, np.random.default_rng(0), starts=50, max_grad_evals=200)
    assert limited.grad_evals <= 200 and limited.starts < 50


def test_mode_search_skips_failed_starts_and_refuses_a_density_finite_nowhere():
    # log p = -inf beyond radius 6: starts there are counted and skipped, the mode is found
    t = wb.Target.from_numba(uf.gaussian_in_a_disc, dim=2, name="disc")
    search = M.find_modes(t, np.random.default_rng(0), starts=40)
    assert search.failed > 0 and len(search.modes) == 1
    np.testing.assert_allclose(search.modes[0].x, [-1.0, 0.0], atol=1e-5)
    res = wb.methods.MeanFieldVI(progress=False).run(t, seed=0, grad_budget=20_000)
    assert res.info["mode_search"]["failed_starts"] > 0
    nowhere = wb.Target.from_numba(uf.nowhere_finite, dim=2, name="nowhere", validate=False)
    with pytest.raises(NonFiniteDensityError, match="found no point with a finite density"):
        wb.methods.MeanFieldVI(progress=False).run(nowhere, seed=0)


def test_probes_give_a_diagonal_hessian_from_four_gradients_at_any_dimension():
    t = wb.targets.gaussian(2000, scales="logspace")
    x = np.random.default_rng(0).standard_normal(t.dim)
    diag, settled, used = M.diagonal_by_probes(t, x)
    assert settled and used == 4
    np.testing.assert_allclose(diag, -1.0 / t.truth.sd**2, rtol=1e-4)
    hess, used = M.curvature(t, x)  # above FULL_HESSIAN_MAX_DIM: the probes, not 2 d columns
    assert hess.shape == (t.dim,) and used == 4


def test_coupled_coordinates_fall_back_to_columns_when_the_budget_allows():
    """A random-walk chain: each Hessian row has off-diagonal weight like its diagonal, so probes
    cannot settle to 2%; the exact diagonal (2 d more gradients) is taken when affordable."""
    d = 600
    t = wb.Target.from_numba(uf.random_walk_chain, dim=d, name="chain")
    exact = np.full(d, -2.0)
    exact[-1] = -1.0  # the last coordinate has one neighbour; the first has its own prior term
    _, settled, used = M.diagonal_by_probes(t, np.zeros(d))
    assert not settled and used == 2 * M.PROBES_MAX
    hess, used = M.curvature(t, np.zeros(d))
    np.testing.assert_allclose(hess, exact, rtol=1e-5)
    assert used == 2 * M.PROBES_MAX + 2 * d
    rough, used = M.curvature(t, np.zeros(d), max_grad_evals=1000)  # columns unaffordable
    assert used == 2 * M.PROBES_MAX and rough.shape == (d,)


def test_a_quiet_search_stops_when_its_last_starts_found_nothing_new():
    t = wb.targets.gaussian(4)
    quiet = M.find_modes(t, np.random.default_rng(0), starts=2000, quiet=30)
    assert quiet.settled and len(quiet.modes) == 1 and quiet.starts == 31  # the first run, then 30 quiet starts
    # a floor of evaluations keeps it going past the quiet point
    floor = M.find_modes(t, np.random.default_rng(0), starts=2000, quiet=30, min_search_grad_evals=2000)
    assert floor.grad_evals >= 2000 and floor.starts > 31
    # a cap that comes first leaves it unsettled when modes were still being found
    m = wb.targets.gaussian_mixture(2, n_components=3, seed=0)
    capped = M.find_modes(m, np.random.default_rng(0), starts=2000, quiet=10_000, max_grad_evals=3000)
    assert not capped.settled and capped.grad_evals <= 3000


def test_a_quiet_search_counts_only_modes_a_fit_would_use():
    """With quiet_top=1 a lighter mode found later does not restart the quiet count."""
    m = wb.targets.gaussian_mixture(2, weights=[0.2, 0.8], means=[-4.0, 4.0], scales=[1.0, 0.5])
    x0 = np.array([4.0, 4.0])  # the first run lands on the heavier peak
    every = M.find_modes(m, np.random.default_rng(1), starts=2000, quiet=20, x0=x0)
    top = M.find_modes(m, np.random.default_rng(1), starts=2000, quiet=20, x0=x0, quiet_top=1)
    assert len(every.modes) == 2
    assert top.starts == 21 and top.starts < every.starts


def test_the_search_reports_its_progress_against_its_limit_after_each_start():
    t = wb.targets.gaussian_mixture(3, weights=[0.2, 0.8], means=[-4.0, 4.0], scales=[1.0, 0.5])
    calls = []
    search = M.find_modes(t, np.random.default_rng(0), starts=20, max_grad_evals=5000,
                          on_progress=lambda used, total: calls.append((used, total)))
    assert len(calls) == search.starts - 1  # every start after the first from the initial point
    assert {total for _, total in calls} == {5000}
    spent = [used for used, _ in calls]
    assert spent == sorted(spent) and spent[-1] == search.grad_evals


def test_search_rng_is_reproducible_and_apart_from_the_fits_stream():
    first = M.search_rng(7).standard_normal(5)
    np.testing.assert_array_equal(first, M.search_rng(7).standard_normal(5))
    assert not np.allclose(first, M.search_rng(8).standard_normal(5))
    # a method's fit draws from default_rng(seed): the search must not repeat its numbers
    assert not np.allclose(first, np.random.default_rng(7).standard_normal(5))
