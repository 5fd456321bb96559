"""workbench/methods/laplace.py: exact on Gaussians, clear failures, analytic Hessians."""


import numpy as np
import pytest

import workbench as wb
from tests import user_functions as uf
from workbench.approximations import StudentT

GAUSS = wb.targets.gaussian(5, scales="logspace", correlation=0.3)


def test_laplace_is_exact_on_gaussians_and_on_the_conjugate_regression():
    res = wb.methods.Laplace(starts=2).run(GAUSS, seed=0)
    np.testing.assert_allclose(res.approximation.mean, GAUSS.truth.mean, atol=1e-7)
    np.testing.assert_allclose(res.approximation.cov, GAUSS.truth.cov, rtol=1e-6, atol=1e-10)
    assert res.log_z == pytest.approx(GAUSS.truth.log_z, abs=1e-7)
    assert len(res.info["optima"]) == 3 and res.draws.shape == (1, 1000, 5)
    lin = wb.targets.linear_regression("diabetes")
    res = wb.methods.Laplace().run(lin, seed=0)
    # to rounding: L-BFGS-B alone stops about 1e-6 of an sd short (where log p stops resolving its
    # steps), and the Newton step with the Hessian at hand finishes it
    np.testing.assert_allclose(res.approximation.mean, lin.truth.mean, atol=1e-9 * lin.truth.sd.min())
    np.testing.assert_allclose(res.approximation.cov, lin.truth.cov, rtol=1e-5, atol=1e-7 * np.abs(lin.truth.cov).max())
    assert res.log_z == pytest.approx(lin.truth.log_z, abs=1e-6)
    assert wb.metrics.evaluate(res, lin)["log_z_err"] == pytest.approx(0.0, abs=1e-6)


def test_laplace_on_logistic_regression_reports_its_deviation_from_the_reference():
    t = wb.targets.logistic_regression(n_data=30, dim=3, seed=2)  # few data: a skewed posterior
    ref = wb.methods.NUTS(chains=4, warmup=1000, draws=5000, progress=False).run(t, seed=0)
    lap = wb.methods.Laplace().run(t, seed=0)
    mcse = np.asarray(__import__("arviz").mcse(ref.draws))
    gap = np.abs(lap.approximation.mean - ref.draws.mean((0, 1)))
    assert np.max(gap / mcse) > 8  # the mode is not the mean: a real, visible deviation
    row = wb.metrics.evaluate(lap, t, reference=ref.flat_draws())
    assert row["mean_err_max"] > 0.05  # and evaluate reports it
    proposal = StudentT(lap.approximation.mean, 1.5 * lap.approximation.cov, df=5)
    corrected = wb.methods.ImportanceSampling(proposal=proposal, n=40_000).run(t, seed=0)
    assert wb.metrics.evaluate(corrected, t, reference=ref.flat_draws())["mean_err_max"] < row["mean_err_max"] / 2


def test_laplace_error_names_the_eigenvalues_and_keeps_the_mode():
    t = wb.Target.from_numba(uf.ridge, dim=2, name="ridge")
    with pytest.raises(wb.methods.LaplaceError, match="not positive definite.*smallest eigenvalues") as err:
        wb.methods.Laplace().run(t, seed=0)
    assert err.value.mode.shape == (2,) and abs(err.value.eigenvalues[0]) < 1e-6
    ok = wb.methods.Laplace(regularize=1e-2).run(t, seed=0)
    assert np.all(np.isfinite(ok.approximation.cov))


@pytest.mark.parametrize(
    "target",
    [GAUSS, wb.targets.linear_regression(n_data=40, dim=3), wb.targets.logistic_regression(n_data=60, dim=3)],
    ids=["gaussian", "linear", "logistic"],
)
def test_analytic_hessians_match_differences_of_the_gradient(target):
    from workbench.methods.laplace import hessian_by_differences

    x = target.initial_point + 0.3
    np.testing.assert_allclose(target.hessian(x), hessian_by_differences(target, x), rtol=1e-5, atol=1e-6)
    # Laplace uses the analytic one: no 2 d extra gradients, same answer
    plain = target.replace(hessian=None)
    a, b = wb.methods.Laplace().run(target, seed=0), wb.methods.Laplace().run(plain, seed=0)
    np.testing.assert_allclose(a.approximation.cov, b.approximation.cov, rtol=1e-5, atol=1e-10)
    # (the search for other peaks after the fit uses the Hessian too: its cost is apart)
    assert a.cost.grad_evals - a.info["peaks_grad_evals"] == b.cost.grad_evals - b.info["peaks_grad_evals"] - 2 * target.dim


