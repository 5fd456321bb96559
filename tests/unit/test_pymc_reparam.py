"""Automatic non-centring of PyMC models (``workbench/pymc_reparam.py``) and ``NUTS(metric="auto")``
choosing the non-centred form (``workbench/sampling/reparametrized.py``)."""

import numpy as np
import pymc as pm
import pytest

import workbench as wb
from workbench.diagnostics import chain_diagnostics
from workbench.errors import TargetError
from workbench.pymc_reparam import noncentrable, noncentred, value_map

Y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
V_SD = 3.0


def _centred_schools():
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 5)
        tau = pm.HalfCauchy("tau", 5)
        theta = pm.Normal("theta", mu, tau, shape=8)
        pm.Normal("obs", theta, SIGMA, observed=Y)
    return model


def _funnel(dim: int = 10):
    """Neal's funnel: v ~ N(0, 3^2), x_i ~ N(0, exp(v / 2)^2); v's marginal is exact."""
    with pm.Model() as model:
        v = pm.Normal("v", 0.0, V_SD)
        pm.Normal("x", 0.0, pm.math.exp(v / 2), shape=dim - 1)
    return model


def test_candidates_are_normals_whose_scale_is_a_free_variable():
    assert noncentrable(_centred_schools()) == ["theta"]
    assert noncentrable(_funnel()) == ["x"]
    with pm.Model() as shifted:  # a free location alone does not make a funnel
        mu = pm.Normal("mu", 0, 1)
        pm.Normal("beta", mu, 2.0, shape=3)
    assert noncentrable(shifted) == []


def test_the_noncentred_density_is_the_centred_one_times_the_jacobian():
    """log p_nc(z) = log p_c(x(z)) + sum_j log tau: the same posterior on other coordinates."""
    model = _centred_schools()
    centred = wb.Target.from_pymc(model, noncentre=False)
    form = wb.Target.from_pymc(noncentred(model))  # its gradient checked against differences
    to_centred = value_map(form, model)
    z = np.random.default_rng(0).normal(size=(5, form.dim))
    x = to_centred(z)
    log_tau = form.param_names.index("tau_log__")
    for zi, xi in zip(z, x):
        jacobian = 8 * zi[log_tau]
        assert form.logp(zi) == pytest.approx(centred.logp(xi) + jacobian, rel=1e-10, abs=1e-10)


def test_the_maps_are_inverse_and_follow_each_forms_own_order():
    model = _centred_schools()
    target = wb.Target.from_pymc(model)
    form = target.reparametrization.build()
    assert target.param_names[:2] != form.param_names[:2]  # PyMC orders the rewritten model's values anew
    x = np.random.default_rng(1).normal(size=(2, 3, target.dim))
    z = target.reparametrization.from_target(x)
    assert z.shape == (2, 3, form.dim)
    np.testing.assert_allclose(target.reparametrization.to_target(z), x, atol=1e-12)
    # theta = mu + tau * z in the form's coordinates
    names = list(form.param_names)
    mu, tau = z[..., names.index("mu")], np.exp(z[..., names.index("tau_log__")])
    np.testing.assert_allclose(mu + tau * z[..., names.index("theta_noncentred__[0]")], x[..., 2], atol=1e-12)


def test_vector_scales_dims_and_a_location_that_reads_another_candidate():
    """Varying intercepts (a scalar scale), slopes (one scale a group) and a variable whose location
    indexes the intercepts: every one is offered, and the maps invert each other."""
    rng = np.random.default_rng(0)
    group, x, y = rng.integers(0, 5, 40), rng.normal(size=40), rng.normal(size=40)
    with pm.Model(coords={"g": list("abcde"), "k": ["a", "b"]}) as model:
        sa = pm.HalfNormal("sa", 1)
        a = pm.Normal("a", pm.Normal("mu_a", 0, 1), sa, dims="g")
        b = pm.Normal("b", 0, pm.HalfNormal("sb", 1, shape=5), dims="g")
        c = pm.Normal("c", a[:2], 2 * sa, dims="k")
        pm.Normal("y", a[group] + b[group] * x + c.sum(), 1, observed=y)
    target = wb.Target.from_pymc(model)
    assert target.reparametrization.name == "non-centred: a, b, c"
    points = np.random.default_rng(1).normal(size=(3, target.dim)) * 0.5
    back = target.reparametrization.to_target(target.reparametrization.from_target(points))
    np.testing.assert_allclose(back, points, atol=1e-12)


def test_noncentre_option():
    model = _centred_schools()
    offered = wb.Target.from_pymc(model)
    assert offered.reparametrization.name == "non-centred: theta"
    assert offered.param_names[2] == "theta[0]"
    as_written = wb.Target.from_pymc(model, noncentre=False)
    assert as_written.reparametrization is None
    # one graph, but NUTS(metric="auto") samples them differently: their specs (a cache key) differ
    assert offered.spec["graph"] == as_written.spec["graph"] and offered.spec != as_written.spec
    rewritten = wb.Target.from_pymc(model, noncentre=True)
    assert "theta_noncentred__[0]" in rewritten.param_names and rewritten.reparametrization is None
    assert set(rewritten.constrain(rewritten.initial_point)) >= {"mu", "tau", "theta"}
    with pytest.raises(TargetError, match="'tau' is not a free Normal.*candidates are \\['theta'\\]"):
        wb.Target.from_pymc(model, noncentre=["tau"])
    with pytest.raises(TargetError, match="noncentre must be"):
        wb.Target.from_pymc(model, noncentre="theta")


def test_a_form_that_cannot_be_built_is_not_offered_and_the_model_still_is(monkeypatch):
    import workbench.pymc_model as pymc_model

    def fails(*args, **kwargs):
        raise ValueError("a graph the rewrite does not know")

    monkeypatch.setattr(pymc_model, "noncentred", fails)
    target = wb.Target.from_pymc(_centred_schools())
    assert target.reparametrization is None
    assert target.build_info["noncentring"] == "not offered: ValueError: a graph the rewrite does not know"
    assert "offers_noncentred" not in target.spec  # its cache key claims no form it lacks
    assert np.isfinite(target.logp(target.initial_point))


def test_auto_samples_the_funnel_noncentred_and_matches_its_exact_marginal():
    """v ~ N(0, 3^2) exactly: its mean and sd within four Monte Carlo standard errors."""
    target = wb.Target.from_pymc(_funnel())
    res = wb.methods.NUTS(progress=False).run(target, seed=2)
    assert res.info["reparametrization"]["form"] == "non-centred: x"
    assert res.info["reparametrization"]["form_loss"] < res.info["reparametrization"]["own_loss"]
    assert res.draws.shape == (4, 1000, target.dim)
    assert int(res.stats["diverging"].sum()) == 0
    v = res.draws[..., 0]
    ess = chain_diagnostics(res.draws[..., :1]).ess_bulk_min
    assert ess > 400
    assert abs(v.mean()) < 4 * V_SD / np.sqrt(ess)
    assert abs(v.std() - V_SD) < 4 * V_SD / np.sqrt(2 * ess)
    # every gradient counted: the first phase's on the funnel as written, then the form's run
    assert res.cost.grad_evals > res.info["reparametrization"]["first_phase_grad_evals"] > 0


def test_auto_keeps_the_target_where_no_form_is_offered_and_other_metrics_never_switch():
    model = _funnel()
    plain = wb.methods.NUTS(progress=False, warmup=200, draws=200)
    assert "reparametrization" not in plain.run(wb.Target.from_pymc(model, noncentre=False), seed=0).info
    diag = wb.methods.NUTS(progress=False, metric="diag", warmup=200, draws=200)
    assert "reparametrization" not in diag.run(wb.Target.from_pymc(model), seed=0).info


def test_a_budget_holds_across_both_forms():
    target = wb.Target.from_pymc(_funnel())
    res = wb.methods.NUTS(progress=False).run(target, seed=0, budget=wb.Budget(grad_evals=60_000))
    assert "reparametrization" in res.info
    assert res.cost.grad_evals <= 60_000
    assert res.draws.shape[0] == 4 and res.draws.shape[2] == target.dim
