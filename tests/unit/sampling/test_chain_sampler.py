"""workbench/sampling/chain_sampler.py: what every chain sampler shares: starts, counts, warmup kept apart."""

import numpy as np
import pytest

import workbench as wb
from tests import user_functions as uf
from workbench.errors import NonFiniteDensityError
from workbench.result import Budget
from workbench.sampling.chain_sampler import Start, start_chains

DIAGONAL = wb.targets.gaussian(10, scales="logspace")


def test_gradient_counts_are_exact_and_warmup_is_kept_apart():
    res = wb.methods.NUTS(chains=2, warmup=200, draws=300, metric="diag").run(DIAGONAL, seed=1)
    assert res.warmup_draws.shape == (2, 200, 10) and res.draws.shape == (2, 300, 10)
    # after warmup every gradient is a leapfrog step of a recorded transition
    assert res.cost.grad_evals - res.cost.warmup_grad_evals == res.stats["n_steps"].sum()
    assert 0 < res.cost.warmup_grad_evals < res.cost.grad_evals
    assert set(res.info["step_size"]) and res.info["inv_mass"].shape == (2, 10)


def test_non_finite_starting_points_are_named():
    t = wb.Target.from_numba(uf.log_of_first, dim=2, initial_point=np.array([1.0, 0.0]))
    with pytest.raises(NonFiniteDensityError, match=r"starting point of chain 0 .*\[nan, 1\]"):
        wb.methods.NUTS(init=np.array([np.nan, 1.0])).run(t, seed=0)
    with pytest.raises(NonFiniteDensityError, match=r"is nan at the starting point of chain 1 \[-1, 0\]"):
        wb.methods.RandomWalkMH(chains=2, init=np.array([[1.0, 0.0], [-1.0, 0.0]])).run(t, seed=0)


def test_a_start_the_method_found_itself_is_used_paid_and_reported():
    method = wb.methods.NUTS(chains=2, warmup=100, draws=100, progress=False)
    x0 = np.array([[0.5] * 10, [-0.5] * 10])
    found = Start(x0, np.full((2, 10), 2.0), 30, "started from somewhere", {"somewhere_grad_evals": 30}, 4.0, 1.0)
    chains = start_chains(method, None, DIAGONAL, 0, Budget(grad_evals=1000), found)
    np.testing.assert_array_equal(chains.x0, x0)
    assert chains.inv_mass[0, 0] == 2.0 and chains.start_grad_evals == 30 and chains.peaks is None
    assert chains.clock.compile_seconds == 1.0 and chains.clock.wall_seconds >= 4.0
    # the budget left to the chains is what the start left: (1000 - 30) / 2 each
    assert chains.grad_budget_per_chain == 485


def test_init_none_searches_for_peaks_under_the_budget_and_pays_for_it():
    method = wb.methods.NUTS(chains=2, progress=False)
    chains = start_chains(method, None, DIAGONAL, 0, Budget(grad_evals=20_000))
    assert chains.peaks is not None and chains.kernel is None  # no kernel: a run in phases compiles its own
    assert chains.start_grad_evals == chains.peaks.grad_evals + 2
