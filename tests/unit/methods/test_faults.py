"""Faults of the target's density part-way through a run are never silent and lose nothing:
NaN densities are counted and reported (importance sampling gives them weight zero), an
arithmetic exception is a rejection (tests/statistical/test_density_faults.py), any other
exception raised by the density keeps the draws made before it and says where it stopped,
and Ctrl-C stops importance sampling and keeps what it evaluated."""

from __future__ import annotations

import math
import os
import signal
import threading
import warnings

import numpy as np
import pytest

import workbench as wb
from tests.user_functions import divides_by_zero_beyond, nan_beyond_one_and_half, raises_beyond, slow_standard_normal
from workbench.errors import DensityError
from workbench.rng import chain_rngs


def _target(fn, dim=2, data=()):
    return wb.Target.from_numba(fn, dim=dim, data=data, check_gradient=False)


NAN_TARGET = None


def nan_target():
    global NAN_TARGET
    if NAN_TARGET is None:
        NAN_TARGET = _target(nan_beyond_one_and_half)
    return NAN_TARGET


def raising_target(threshold):
    return _target(raises_beyond, data=(np.array([threshold]),))


# ------------------------------------------------------------------ NaN densities


@pytest.mark.parametrize("method", [
    wb.methods.RandomWalkMH(warmup=200, draws=1000, progress=False),
    wb.methods.IndependenceMH(proposal=wb.approximations.Gaussian(np.zeros(2), 0.6 * np.eye(2)), draws=1000),
    # Hamiltonian samplers name a NaN as NaN too, not only as the divergence it also is
    wb.methods.NUTS(warmup=200, draws=1000, progress=False),
    wb.methods.HMC(warmup=200, draws=1000, progress=False),
], ids=lambda m: m.name)
def test_samplers_count_and_report_nan_densities(method):
    with pytest.warns(RuntimeWarning, match="NaN density"):
        res = method.run(nan_target(), seed=1)
    n_nan = res.info["nan_density_evals"]
    assert n_nan > 30
    (message,) = [m for m in res.messages if m.startswith("NaN density")]
    assert f"NaN (or +inf, an overflow) at {n_nan} of " in message
    assert "nan_density" not in res.stats  # counted, not kept as a per-draw statistic
    assert "NaN density" in wb.diagnostics.health_flags(res.messages).split(", ")
    # the same sampler on the same density without the NaN region says nothing
    clean = method.run(wb.targets.gaussian(2), seed=1)
    assert clean.info["nan_density_evals"] == 0 and not any("NaN" in m for m in clean.messages)


@pytest.mark.parametrize("method", [
    wb.methods.MeanFieldVI(progress=False), wb.methods.FullRankVI(progress=False), wb.methods.DADVI(),
    wb.methods.BatchAndMatch(progress=False), wb.methods.Pathfinder(),
], ids=lambda m: m.name)
def test_vi_says_how_much_of_q_lies_where_the_density_is_nan(method):
    """A Gaussian cannot stop at the edge x0 = 1.5 beyond which the density is NaN: the fit
    ends with part of q beyond it (6-13% here), and says so with the share its check measured,
    which is the share of its returned draws beyond the edge up to Monte Carlo error (a health
    flag, as k-hat is, not a warning)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fits' own rejected steps
        res = method.run(nan_target(), seed=1)
    (message,) = [m for m in res.messages if m.startswith("NaN density")]
    share = float(message.split("(")[1].split("%")[0]) / 100
    beyond = float(np.mean(res.draws.reshape(-1, 2)[:, 0] > 1.5))
    assert 0.02 < beyond < 0.3
    assert abs(share - beyond) < 4 * math.sqrt(beyond * (1 - beyond) / 1000) + 0.01
    assert "NaN density" in wb.diagnostics.health_flags(res.messages).split(", ")
    clean = method.run(wb.targets.gaussian(2), seed=1)
    assert not any(m.startswith("NaN density") for m in clean.messages)


def test_importance_sampling_gives_nan_densities_weight_zero_and_counts_them():
    proposal = wb.approximations.Gaussian(np.zeros(2), np.eye(2))
    with pytest.warns(RuntimeWarning, match="NaN density"):
        res = wb.methods.ImportanceSampling(proposal=proposal, n=4000, progress=False).run(nan_target(), seed=3)
    x, log_w = res.draws[0], res.log_weights[0]
    beyond = x[:, 0] > 1.5  # exactly where the density is NaN
    assert res.info["nan_density_evals"] == beyond.sum() > 100
    assert np.all(log_w[beyond] == -np.inf) and np.all(np.isfinite(log_w[~beyond]))
    assert f"NaN (or +inf, an overflow) at {beyond.sum()} of 4000 draws" in " ".join(res.messages)
    # q is the target where the density is finite: log Z is log P(x0 <= 1.5) up to Monte Carlo error
    from scipy.stats import norm

    assert abs(res.log_z - (norm.logcdf(1.5) + np.log(2 * np.pi))) < 4 * res.log_z_se + 0.01


# ------------------------------------------------------------------ an exception in the density


def test_a_chain_sampler_keeps_its_draws_when_the_density_raises_part_way():
    method = wb.methods.RandomWalkMH(warmup=0, draws=50_000, adapt=False, scale=0.5, progress=False)
    with pytest.warns(RuntimeWarning, match="density raised: ValueError"):
        res = method.run(raising_target(3.5), seed=3)
    (message,) = [m for m in res.messages if m.startswith("density raised")]
    assert "ValueError(\"the model's own check failed\") in chain" in message and "(sampling)" in message
    kept = res.draws.shape[1]
    assert 0 < kept < 50_000 and f"the {kept} draws per chain made before are kept" in message
    assert np.all(res.draws[..., 0] <= 3.5) and np.all(np.isfinite(res.draws))
    # the cost counts the failed chains' evaluations too (one per iteration for a random walk)
    assert res.cost.grad_evals >= sum(res.info["iterations_per_chain"])


def test_nuts_keeps_its_draws_when_the_density_raises_part_way():
    # no warmup (its first step-size search throws the chains far out at once)
    method = wb.methods.NUTS(warmup=0, step_size=0.8, draws=50_000, progress=False, init=np.zeros(2))
    with pytest.warns(RuntimeWarning, match="density raised"):
        res = method.run(raising_target(4.0), seed=0)
    assert 0 < res.draws.shape[1] < 50_000 and np.all(res.draws[..., 0] <= 4.0)
    assert res.cost.grad_evals > res.draws.shape[1] * 4


def test_a_density_that_raises_in_warmup_raises_and_says_so():
    """The error names the method, the chain, the iteration and the point, and chains the
    user's exception."""
    with pytest.raises(DensityError) as info:
        wb.methods.NUTS(warmup=500, draws=100, progress=False).run(raising_target(2.0), seed=0)
    err = info.value
    assert isinstance(err.__cause__, ValueError)
    assert err.method == "NUTS" and err.iteration >= 1 and err.point.shape == (2,)
    assert str(err).startswith("NUTS on target") and f"in chain {err.chain} at iteration {err.iteration}" in str(err)
    assert "no chain had finished its warmup" in str(err) and "at a proposal from [" in str(err)
    with pytest.raises(DensityError, match="before any draw was made") as info:
        wb.methods.NUTS(warmup=0, step_size=5.0, draws=100, progress=False).run(raising_target(1.0), seed=0)
    assert isinstance(info.value.__cause__, ValueError)


def test_importance_sampling_keeps_the_draws_evaluated_before_the_density_raised():
    proposal = wb.approximations.Gaussian(np.zeros(2), np.eye(2))
    method = wb.methods.ImportanceSampling(proposal=proposal, n=400, progress=False, threads=1)
    with pytest.warns(RuntimeWarning, match="density raised"):
        res = method.run(raising_target(2.5), seed=1)
    # one block (threads=1): exactly the draws before the first one beyond 2.5 (264 of 400: kept)
    x_all = proposal.sample(400, chain_rngs(1, 1)[0])
    first = int(np.argmax(x_all[:, 0] > 2.5))
    assert res.draws.shape[1] == res.cost.grad_evals == first >= 0.1 * 400
    np.testing.assert_array_equal(res.draws[0], x_all[:first])
    assert f"stopped after {first} of 400 draws" in " ".join(res.messages)


def test_importance_sampling_whose_density_raises_within_its_first_draws_raises_as_nuts_does():
    """2 of 1,000 draws are not an estimate: DensityError, like a sampler's density raising in warmup."""
    proposal = wb.approximations.Gaussian(np.zeros(2), np.eye(2))
    method = wb.methods.ImportanceSampling(proposal=proposal, n=1000, progress=False, threads=1)
    with pytest.raises(DensityError, match="ImportanceSampling on target") as info:
        method.run(raising_target(1.0), seed=3)  # the third draw has x0 > 1
    assert isinstance(info.value.__cause__, ValueError) and info.value.iteration == 3
    assert any("stopped after 2 of 1000 draws" in note for note in info.value.__notes__)


def test_a_division_by_zero_part_way_is_a_rejection_not_the_end_of_the_run():
    """The same run as above with a density that divides by zero beyond 3.5: every draw is made."""
    method = wb.methods.RandomWalkMH(warmup=0, draws=50_000, adapt=False, scale=0.5, progress=False)
    with pytest.warns(RuntimeWarning, match="density faults"):
        res = method.run(_target(divides_by_zero_beyond, data=(np.array([3.5]),)), seed=3)
    assert res.draws.shape[1] == 50_000 and np.all(res.draws[..., 0] <= 3.5)
    assert res.info["density_faults"] > 0


# ------------------------------------------------------------------ Ctrl-C


def test_ctrl_c_stops_importance_sampling_and_keeps_what_it_evaluated(ctrl_c_raises):
    t = _target(slow_standard_normal, data=(np.array([2.0e4]),))
    proposal = wb.approximations.Gaussian(np.zeros(2), np.eye(2))
    wb.methods.ImportanceSampling(proposal=proposal, n=10, progress=False).run(t, seed=0)  # compiled first
    method = wb.methods.ImportanceSampling(proposal=proposal, n=400_000, progress=False)
    timer = threading.Timer(1.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.warns(RuntimeWarning, match="interrupted by Ctrl-C"):
            res = method.run(t, seed=0)
    finally:
        timer.cancel()
    n = res.draws.shape[1]
    assert 0 < n < 400_000 and res.cost.grad_evals == n
    assert np.all(np.isfinite(res.log_weights)) and np.isfinite(res.log_z)
    assert f"stopped after {n} of 400000 draws" in " ".join(res.messages)


@pytest.mark.parametrize("method", [
    wb.methods.NN4Post(init="box", steps=2000, progress=False),
    wb.methods.FullRankVI(init="point", steps=2000, progress=False),
    wb.methods.DADVI(),
    wb.methods.RandomWalkMH(warmup=100, draws=2000, progress=False),
    wb.methods.Pathfinder(progress=False),
    wb.methods.SMC(particles=200, progress=False),
], ids=lambda m: m.name)
def test_a_density_that_raises_is_named_with_the_method_chain_iteration_and_point(method):
    with pytest.raises(DensityError) as info:
        method.run(raising_target(1.5), seed=0)
    err = info.value
    assert isinstance(err.__cause__, ValueError)  # the user's exception, chained
    assert err.method == method.name and err.iteration >= 1 and err.point.shape == (2,)
    assert str(err).startswith(f"{method.name} on target") and "the model's own check failed" in str(err)
