"""A VI fit whose draws meet a NaN or -inf density rejects that step and halves its rate;
it goes on to the end instead of aborting (vi/fit.py, vi/full_rank.py)."""

import numpy as np
import pytest

import workbench as wb
from tests.user_functions import walled_gaussian_logp_grad


@pytest.fixture(scope="module")
def walled():
    return wb.Target.from_numba(walled_gaussian_logp_grad, dim=2, name="walled", check_gradient=False)


@pytest.mark.parametrize("method", [
    wb.methods.MeanFieldVI(steps=400, draws=200),
    wb.methods.NN4Post(n_components=2, steps=400, draws=200),
    wb.methods.FullRankVI(steps=400, draws=200, init="point"),
], ids=["MeanFieldVI", "NN4Post", "FullRankVI"])
def test_a_minus_infinite_density_is_a_rejected_step_not_an_abort(walled, method):
    res = method.run(walled, seed=4)
    assert res.info["rejected_steps"] > 0  # the draws did cross the wall (P(x0 > 1.5) = 0.07)
    assert any("rejected" in m for m in res.messages)
    assert res.info["steps"] >= 200  # the fit went on
    assert np.all(np.isfinite(res.approximation.mean))
