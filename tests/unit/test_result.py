"""workbench/result.py: shapes, weighted moments, and the ArviZ 1.x DataTree it converts to."""

import json

import arviz as az
import numpy as np
import pytest

from workbench.result import Budget, Cost, Result


def _result(**kw):
    rng = np.random.default_rng(0)
    base = dict(
        method="Test",
        target="t",
        draws=rng.normal(size=(4, 300, 3)),
        cost=Cost(grad_evals=1200, wall_seconds=0.5),
        param_names=("theta[0]", "theta[1]", "theta[2]"),
        seed=3,
        settings={"chains": 4},
    )
    base.update(kw)
    return Result(**base)


def test_to_arviz_gives_a_datatree_on_which_summary_works():
    res = _result()
    tree = res.to_arviz()
    assert type(tree).__name__ == "DataTree"
    assert tree.posterior["theta"].dims == ("chain", "draw", "param")
    df = az.summary(tree, round_to="none")
    assert list(df.index) == ["theta[0]", "theta[1]", "theta[2]"]
    assert {"ess_bulk", "ess_tail", "r_hat"} <= set(df.columns)
    assert (df["r_hat"] < 1.02).all() and (df["ess_bulk"] > 800).all()
    assert tree.attrs["method"] == "Test" and json.loads(tree.attrs["cost"])["grad_evals"] == 1200


def test_sample_stats_use_arviz_names_and_traces_get_their_own_group():
    rng = np.random.default_rng(1)
    stats = {
        "accept_prob": rng.uniform(size=(4, 300)),
        "diverging": np.zeros((4, 300), bool),
        "energy": rng.normal(size=(4, 300)),
        "tree_depth": np.full((4, 300), 3),
        "elbo": np.linspace(-10, -1, 50),
    }
    res = _result(stats=stats, warmup_draws=rng.normal(size=(4, 100, 3)))
    tree = res.to_arviz()
    ss = tree.sample_stats
    assert {"acceptance_rate", "diverging", "energy", "tree_depth"} <= set(ss.data_vars)
    assert ss["diverging"].dtype == bool
    assert tree["optimization"]["elbo"].dims == ("iteration",)
    assert tree.warmup_posterior["theta"].shape == (4, 100, 3)
    assert az.bfmi(tree)["energy"].shape == (4,)  # ArviZ reads our energy


def test_named_parameters_become_coordinates():
    res = _result(param_names=("a", "b", "c"))
    assert list(res.to_arviz().posterior["param"].values) == ["a", "b", "c"]


def test_weighted_draws_moments_and_arviz_group():
    x = np.array([[[0.0], [1.0], [2.0], [3.0]]])  # (1, 4, 1)
    lw = np.log(np.array([[1.0, 1.0, 1.0, 5.0]]))
    res = _result(draws=x, log_weights=lw, param_names=("theta[0]",))
    np.testing.assert_allclose(res.weights(), [0.125, 0.125, 0.125, 0.625])
    assert res.mean()[0] == pytest.approx(0.125 * 3 + 0.625 * 3)
    assert res.to_arviz().sample_stats["log_weight"].shape == (1, 4)


def test_result_validates_shapes():
    with pytest.raises(ValueError, match=r"\(chains, draws, dim\)"):
        _result(draws=np.zeros((10, 3)))
    with pytest.raises(ValueError, match="log_weights shape"):
        _result(log_weights=np.zeros((1, 5)))


def test_budget_validation():
    assert Budget(grad_evals=10).grad_evals == 10
    with pytest.raises(ValueError, match="Budget.grad_evals"):
        Budget(grad_evals=0)
    with pytest.raises(ValueError, match="Budget.draws"):
        Budget(draws=2.5)




def test_a_stat_of_the_wrong_shape_is_left_out_with_a_warning_naming_it():
    rng = np.random.default_rng(2)
    stats = {"accept_prob": rng.uniform(size=(4, 300)), "energy": rng.normal(size=(4, 299)),
             "per_coordinate": rng.normal(size=(4, 300, 3)), "elbo": np.zeros(50), "restarts_elbo": np.zeros(7)}
    with pytest.warns(UserWarning, match=r"stats\['energy'\] has shape \(4, 299\), not \(chains, draws\) = \(4, 300\)"):
        tree = _result(stats=stats).to_arviz()
    ss = tree.sample_stats
    assert "energy" not in ss and ss["acceptance_rate"].shape == (4, 300)
    assert ss["per_coordinate"].shape == (4, 300, 3)  # a vector per draw is kept
    # traces of different lengths each keep their own dim (they made xarray raise)
    assert tree["optimization"]["elbo"].dims == ("iteration",)
    assert tree["optimization"]["restarts_elbo"].shape == (7,)


def test_a_samplers_health_check_waits_until_its_messages_or_info_are_read(monkeypatch):
    """ArviZ's R-hat and ESS of every coordinate cost ten times a small run's sampling: run()
    leaves them until the result's messages or info are first read, then runs them once."""
    import workbench as wb
    from workbench.sampling import chain_sampler as sampling

    calls = []
    real = sampling.chain_diagnostics
    monkeypatch.setattr(sampling, "chain_diagnostics", lambda *a, **k: calls.append(1) or real(*a, **k))
    res = wb.methods.NUTS(chains=2, warmup=100, draws=50, progress=False).run(wb.targets.gaussian(dim=3), seed=0)
    assert calls == [] and res.draws.shape == (2, 50, 3)
    assert "diagnostics" in res.info and calls == [1]
    messages = list(res.messages)
    assert calls == [1] and res.info["diagnostics"]["draws"] == 50
    assert messages == res.messages
    # a short run of a banana says what is wrong with it, as before
    bad = wb.methods.NUTS(chains=2, warmup=50, draws=20, progress=False).run(wb.targets.banana(), seed=0)
    assert any(m.startswith(("R-hat", "low ESS")) for m in bad.messages)


def test_a_budgets_draws_override_the_methods_own():
    from workbench.result import Budget

    assert Budget(draws=7).draws_or(1000) == 7
    assert Budget().draws_or(1000) == 1000
    assert Budget(grad_evals=50).draws_or(3) == 3
