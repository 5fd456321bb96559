"""workbench/methods/nn4post.py: NN4Post's results, traces, budgets and settings."""

import pytest

import workbench as wb


def test_restarts_split_a_gradient_budget_and_sum_the_cost():
    t = wb.targets.gaussian(2)
    method = wb.methods.NN4Post(n_components=2, restarts=3, steps=10_000, init="box", converge_tol=0)
    res = method.run(t, seed=0, grad_budget=6000)
    # 300 kept for the search for peaks, 570 for the k-hat check, then 3 x 1,710: each restart stops at
    # the last whole step of its share, 85 steps of 2 components x 10 samples (1,700)
    assert res.cost.grad_evals == 570 + 3 * 1700 + res.info["peaks_grad_evals"] and res.info["peaks_grad_evals"] <= 300
    assert res.stats["elbo"].shape == (85,)
    assert len(res.info["restart_elbos"]) == 3


def test_traces_and_results():
    res = wb.methods.NN4Post(n_components=2, steps=300, converge_tol=0).run(wb.targets.gaussian(2), seed=0)
    for name in ("elbo", "r", "min_c", "learning_rate", "grad_norm_a", "grad_norm_mu", "grad_norm_zeta"):
        assert res.stats[name].shape == (300,)
    assert res.draws.shape == (1, 4000, 2) and "optimization" in res.to_arviz().children
    assert res.log_z <= wb.targets.gaussian(2).truth.log_z + 0.05  # the ELBO bounds log Z from below


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: wb.methods.NN4Post(n_components=0), "n_components must be an integer >= 1"),
        (lambda: wb.methods.NN4Post(learning_rate=0.0), "learning_rate must be > 0"),
        (lambda: wb.methods.NN4Post(samples=0), "samples must be an integer >= 1"),
        (lambda: wb.methods.NN4Post(gauge="other"), "gauge must be one of"),
        (lambda: wb.methods.MeanFieldVI(n_components=2), "exactly one component"),
        (lambda: wb.methods.NN4Post(restarts=0), "restarts must be an integer >= 1"),
        (lambda: wb.methods.NN4Post(batch_size=10).run(wb.targets.gaussian(2), seed=0), "mini-batch form"),
    ],
)
def test_bad_settings_are_named(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_a_mode_search_on_course_to_take_long_says_so_with_its_estimate(monkeypatch):
    from workbench.running import threads as base

    monkeypatch.setattr(base, "PACE_SECONDS", 0.0)  # estimate at the first start...
    monkeypatch.setattr(base, "LONG_RUN_SECONDS", 0.0)  # ...and call any run long
    t = wb.targets.gaussian_mixture(2, weights=[0.3, 0.7], means=[-3.0, 3.0])
    with pytest.warns(wb.LongRunWarning, match=r"NN4Post's mode search on .*gradients.*init='box'"):
        wb.methods.NN4Post(n_components=2, steps=200, draws=100, progress=False).run(t, seed=0)
