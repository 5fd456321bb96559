"""workbench/sampling/reparametrized.py: ``metric="auto"`` weighing a target's other form on its
first draws, and the run on the form reported as a run on the target.

The toy form: Neal's funnel (v ~ N(0, 3^2), x_i ~ N(0, e^v)) is, non-centred (z_i = x_i e^(-v/2)),
the Gaussian N(0, diag(9, 1, ..., 1)) exactly."""

import numpy as np

import workbench as wb
from workbench.mcmc.flow import gradients
from workbench.mcmc.flow_fit import fit_flow
from workbench.result import Budget
from workbench.running.phases import Phases
from workbench.sampling.reparametrized import FORM_GAIN, linear_loss, weigh_form
from workbench.target_forms import Reparametrization

DIM = 6


def _to_funnel(z):
    z = np.asarray(z, dtype=float)
    return np.concatenate([z[..., :1], z[..., 1:] * np.exp(z[..., :1] / 2)], axis=-1)


def _from_funnel(x):
    x = np.asarray(x, dtype=float)
    return np.concatenate([x[..., :1], x[..., 1:] * np.exp(-x[..., :1] / 2)], axis=-1)


def _funnel(offer=True, from_target=True):
    form = wb.targets.gaussian(DIM, scales=np.array([3.0] + [1.0] * (DIM - 1)))
    funnel = wb.targets.funnel(dim=DIM)
    if not offer:
        return funnel
    return funnel.replace(reparametrization=Reparametrization(
        "non-centred", lambda: form, to_target=_to_funnel, from_target=_from_funnel if from_target else None))


def _first_draws(target, seed=0):
    method = wb.methods.NUTS(metric="diag", warmup=100, draws=100, progress=False)
    run = method.run(target, seed=seed)
    flat = run.draws.reshape(-1, target.dim)
    _, g = gradients(target, flat)
    return method, run.draws, fit_flow(flat, g, np.random.default_rng(0), max_rounds=0)


def test_the_funnels_noncentred_form_wins_and_its_gradients_are_paid():
    target = _funnel()
    method, draws, fit = _first_draws(target)
    phases = Phases(method, Budget())
    choice = weigh_form(target, fit, draws, phases, np.random.default_rng(1))
    assert choice is not None
    assert choice.form_loss < FORM_GAIN * choice.own_loss
    assert choice.own_loss == linear_loss(fit, DIM)
    np.testing.assert_allclose(choice.draws, _from_funnel(draws))
    assert phases.spent == draws.shape[0] * draws.shape[1]  # one gradient of the form per draw


def test_no_form_without_a_map_from_the_target_or_when_the_target_already_fits():
    target = _funnel(from_target=False)
    method, draws, fit = _first_draws(target)
    assert weigh_form(target, fit, draws, Phases(method, Budget()), np.random.default_rng(1)) is None
    # the form of a Gaussian that is itself a Gaussian does not halve its loss
    gauss = wb.targets.gaussian(DIM).replace(reparametrization=Reparametrization(
        "scaled", lambda: wb.targets.gaussian(DIM, scales=2.0), to_target=lambda z: z / 2, from_target=lambda x: 2 * x))
    method, draws, fit = _first_draws(gauss)
    assert weigh_form(gauss, fit, draws, Phases(method, Budget()), np.random.default_rng(1)) is None


def test_the_run_on_the_form_is_reported_on_the_targets_coordinates():
    target = _funnel()
    res = wb.methods.NUTS(progress=False, warmup=400, draws=500).run(target, seed=4)
    info = res.info["reparametrization"]
    assert info["form"] == "non-centred" and info["form_loss"] < info["own_loss"]
    assert any("other form (non-centred)" in m for m in res.messages)
    assert res.param_names == target.param_names and res.target == target.name
    # the x_i of the funnel, not the form's z_i: their spread grows with v
    v, x = res.draws[..., 0].ravel(), res.draws[..., 1].ravel()
    wide, narrow = np.abs(x[v > 2]).mean(), np.abs(x[v < -2]).mean()
    assert wide > 5 * narrow
    assert res.warmup_draws.shape[1] > 0 and res.cost.warmup_grad_evals < res.cost.grad_evals
