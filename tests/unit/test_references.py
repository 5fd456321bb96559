"""workbench/references.py: a target's reference posterior is built once, checked against
posteriordb's standard, cached on disk, and used by evaluate when there is no truth."""

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
    # the second call loads it: no sampler may run
    monkeypatch.setattr(R, "build_reference", lambda *a, **k: pytest.fail("rebuilt a cached reference"))
    again = wb.reference(t, method=SMALL, cache_dir=tmp_path)
    np.testing.assert_array_equal(again.draws, ref.draws)
    assert again.info() == ref.info()
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
    assert row == wb.metrics.evaluate(res, t, reference=ref.draws) | {
        k: row[k] for k in ("wall_seconds", "compile_seconds")}


def test_a_failing_reference_is_run_again_and_marked(tmp_path):
    # 40 draws per chain cannot reach 400 ESS: each run doubles them, and the last still fails
    tiny = {"method": "NUTS", "chains": 2, "warmup": 50, "draws": 40, "progress": False}
    t = wb.targets.gaussian(dim=2)
    ref = wb.reference(t.replace(truth=None, spec={"factory": "custom"}), method=tiny, cache_dir=tmp_path)
    assert ref.runs == R.REFERENCE_RUNS and not ref.passes and "ESS" in ref.why_not
    assert ref.method["draws"] == 40 * 2 ** (R.REFERENCE_RUNS - 1)
    res = wb.methods.Exact(draws=200).run(t, seed=0)
    with pytest.warns(UserWarning, match="fails posteriordb's standard"):
        wb.metrics.evaluate(res, t, reference=ref)


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


def test_a_failing_reference_is_remedied_as_stan_advises():
    from workbench.diagnostics import ChainDiagnostics
    from workbench.references import remedied

    def diag(divergences=0, ess=1000.0):
        return ChainDiagnostics(chains=4, draws=1000, r_hat_max=1.0, ess_bulk_min=ess, ess_tail_min=ess,
                                divergences=divergences, tree_depth_saturated=0.0, bfmi_min=1.0)

    spec = {"method": "NUTS", "warmup": 1000, "draws": 2500, "target_accept": 0.9}
    first = remedied(spec, diag(divergences=3))
    assert first["target_accept"] == 0.95 and first["warmup"] == 1500 and first["draws"] == 2500
    second = remedied(first, diag(divergences=1))
    assert second["target_accept"] == 0.99
    assert remedied(spec, diag(ess=200.0)) == {**spec, "warmup": 2000, "draws": 5000}


def test_reference_keys_see_the_code(monkeypatch):
    """A reference computed by other code (a changed default) is not reused."""
    import workbench.cache
    import workbench.references as R

    before = R.reference_key({"factory": "gaussian", "dim": 2}, dict(R.DEFAULT_REFERENCE))
    monkeypatch.setattr(workbench.cache, "code_digest", lambda: "other code")
    assert R.reference_key({"factory": "gaussian", "dim": 2}, dict(R.DEFAULT_REFERENCE)) != before
