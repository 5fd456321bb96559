"""workbench/sampling/chain_sampler.py: what every chain sampler shares: starts, counts, warmup kept apart."""

import numpy as np
import pytest

import workbench as wb
from tests import user_functions as uf
from workbench.errors import NonFiniteDensityError

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
