"""workbench/references/store.py and wb.reference: a target's reference posterior is built
once, cached on disk (its draws and its whole run's summary), keyed by target, method, seed,
code and (for a user's target) data, and used by evaluate when there is no truth."""

import numba
import numpy as np
import pytest

import workbench as wb
from workbench import references as R

SMALL = {"method": "NUTS", "chains": 4, "warmup": 300, "draws": 500, "progress": False}


def test_a_reference_is_cached_and_says_how_it_was_made(tmp_path, monkeypatch):
    t = wb.targets.logistic_regression(n_data=30, dim=2)
    ref = wb.reference(t, method=SMALL, cache_dir=tmp_path)
    assert ref.draws.shape == (2000, 2) and ref.runs == 1 and ref.method == SMALL
    assert ref.passes and ref.why_not == "" and ref.diagnostics.divergences == 0
    assert ref.diagnostics.r_hat_max < 1.01 and ref.grad_evals > 0
    assert ref.cross_check["max_mcse"] < R.CROSS_CHECK_MCSE and ref.cross_check["method"]["target_accept"] == 0.95
    # the second call loads it: no sampler may run
    monkeypatch.setattr(R, "build_reference", lambda *a, **k: pytest.fail("rebuilt a cached reference"))
    again = wb.reference(t, method=SMALL, cache_dir=tmp_path)
    np.testing.assert_array_equal(again.draws, ref.draws)
    assert again.info() == ref.info()
    np.testing.assert_array_equal(again.mean, ref.mean)
    np.testing.assert_array_equal(again.summary["mcse_sd"], ref.summary["mcse_sd"])
    assert again.diagnostics._replace(tree_depth_saturated=0) == ref.diagnostics._replace(tree_depth_saturated=0)


def test_a_reference_becomes_a_truth_that_exact_refuses_and_evaluate_uses(tmp_path):
    t = wb.targets.logistic_regression(n_data=30, dim=2)
    ref = wb.reference(t, method=SMALL, cache_dir=tmp_path)
    with_truth = t.replace(truth=ref.as_truth())
    assert with_truth.truth.source == "reference"
    with pytest.raises(wb.TargetError, match="exact sampler"):
        wb.methods.Exact().run(with_truth, seed=0)
    res = wb.methods.NUTS(chains=2, warmup=300, draws=300, progress=False).run(t, seed=3)
    row = wb.metrics.evaluate(res, with_truth)
    assert np.isfinite(row["mean_err_max"]) and np.isfinite(row["w1_mean"])


@numba.njit
def _shifted_gaussian(theta, grad_out, data):
    lp = 0.0
    for i in range(theta.size):
        z = theta[i] - data[0][i]
        grad_out[i] = -z
        lp -= 0.5 * z * z
    return lp


def test_a_users_target_is_keyed_by_its_data():
    a = wb.Target.from_numba(_shifted_gaussian, dim=2, data=(np.zeros(2),))
    b = wb.Target.from_numba(_shifted_gaussian, dim=2, data=(np.ones(2),))
    assert R.target_reference_key(a) != R.target_reference_key(b)
    assert R.target_reference_key(a) == R.target_reference_key(
        wb.Target.from_numba(_shifted_gaussian, dim=2, data=(np.zeros(2),)))
    # a built-in target is keyed by its spec, the same key the study runner uses
    t = wb.targets.logistic_regression(n_data=30, dim=2)
    assert R.target_reference_key(t) == R.reference_key(dict(t.spec), R.DEFAULT_REFERENCE, 0)


def test_reference_keys_see_the_code(monkeypatch):
    """A reference computed by other code (a changed default) is not reused."""
    import workbench.cache

    before = R.reference_key({"factory": "gaussian", "dim": 2}, dict(R.DEFAULT_REFERENCE))
    monkeypatch.setattr(workbench.cache, "code_digest", lambda: "other code")
    assert R.reference_key({"factory": "gaussian", "dim": 2}, dict(R.DEFAULT_REFERENCE)) != before
