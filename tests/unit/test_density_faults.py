"""density_faults.py: what a user's density that raises becomes, at each place it can raise."""

import math

import numpy as np
import pytest

import workbench as wb
from tests import user_functions as uf
from workbench import density_faults
from workbench.errors import DensityError, NonFiniteDensityError


@pytest.fixture(scope="module")
def underflowing():
    return wb.Target.from_numba(uf.underflowing_gradient, dim=2, name="underflowing")


def test_outside_a_run_the_density_raises_the_users_own_exception(underflowing):
    assert underflowing.logp(np.zeros(2)) == 0.0
    with pytest.raises(ZeroDivisionError, match="^division by zero$"):
        underflowing.logp_and_grad(np.array([0.0, 6.0]))


def test_inside_a_collection_a_fault_is_minus_infinity_counted_with_its_first_point(underflowing):
    far = np.array([0.0, 6.0])
    g = np.zeros(2)
    with density_faults.collect(underflowing.kernel_data[0].ctypes.data) as faults:
        assert underflowing.kernel_logp_grad(far, g, underflowing.kernel_data) == -math.inf
        assert np.all(np.isnan(g))
        underflowing.kernel_logp_grad(np.array([7.0, 0.0]), g, underflowing.kernel_data)
    assert faults.count == 2 and np.array_equal(faults.first_point, far)
    assert repr(faults.first_exception) == "ZeroDivisionError('division by zero')"
    # another target's collection does not count this one's faults
    other = wb.Target.from_numba(uf.underflowing_gradient, dim=2, name="other")
    with density_faults.collect(other.kernel_data[0].ctypes.data) as faults:
        with pytest.raises(ZeroDivisionError):
            underflowing.logp_and_grad(far)
    assert faults.count == 0


def test_a_fault_at_the_start_is_an_error_naming_the_exception(underflowing):
    with pytest.raises(NonFiniteDensityError, match="ZeroDivisionError"):
        wb.Target.from_numba(uf.underflowing_gradient, dim=2, name="far", initial_point=np.full(2, 6.0))
    with pytest.raises(NonFiniteDensityError, match="ZeroDivisionError"):
        wb.methods.NUTS(metric="diag", init=np.full((4, 2), 6.0)).run(underflowing, seed=0)


def test_another_exception_stops_the_run_with_the_users_own_exception_as_its_cause():
    t = wb.Target.from_numba(uf.raises_a_custom_error_far_out, dim=2, name="custom")
    with pytest.raises(DensityError, match="the user's own check failed") as info:
        wb.methods.NUTS(metric="diag", chains=2, warmup=200, draws=200).run(t, seed=0)
    assert isinstance(info.value.__cause__, ValueError) and "own check" in str(info.value.__cause__)


def test_a_density_that_fails_at_most_points_is_broken_not_bounded(underflowing):
    wide = wb.approximations.Gaussian(np.zeros(2), 100.0 * np.eye(2))  # most draws past |x| = 5
    with pytest.raises(DensityError, match="broken") as info:
        wb.methods.ImportanceSampling(proposal=wide, n=2000).run(underflowing, seed=0)
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_the_mini_batch_form_divides_by_an_underflowed_scale_and_is_rejected_too():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(200)
    y = 0.5 * x + rng.standard_normal(200)
    t = wb.Target.from_numba(uf.regression_logp_grad, dim=2, data=(x, y), name="regression",
                             logp_grad_batch=uf.regression_logp_grad_batch, n_data=200)
    rows = np.arange(10)
    with density_faults.collect(t.kernel_data[0].ctypes.data) as faults:
        g = np.zeros(2)
        lp = t.kernel_logp_grad_batch(np.array([0.0, -400.0]), g, t.kernel_data, rows, 20.0)
    assert lp == -math.inf and faults.count == 1
    assert repr(faults.first_exception) == "ZeroDivisionError('division by zero')"
    with pytest.raises(ZeroDivisionError, match="^division by zero$"):
        t.logp_and_grad_batch(np.array([0.0, -400.0]), rows, 20.0)


def test_a_log_density_of_plus_infinity_is_a_fault_like_nan_for_importance_sampling_and_nuts():
    """+inf is an overflow, not a density: importance sampling gives those draws weight zero
    (it once blamed the proposal and stopped), and NUTS does not settle there (an accepted +inf
    point would hold a chain forever); both say where the density failed."""
    target = wb.Target.from_numba(uf.overflows_to_plus_infinity_far_out, dim=2, name="overflows")
    g = np.zeros(2)
    assert math.isnan(target.kernel_logp_grad(np.array([4.0, 0.0]), g, target.kernel_data))
    with pytest.warns(RuntimeWarning, match="NaN density"):
        res = wb.methods.ImportanceSampling(progress=False).run(target, seed=0, grad_budget=4000)
    assert any(m.startswith("NaN density") and "+inf" in m for m in res.messages), res.messages
    assert np.all(np.abs(res.flat_draws()[:, 0][res.weights() > 0]) <= 3.0)
    with pytest.warns(RuntimeWarning, match="NaN density"):
        nuts = wb.methods.NUTS(progress=False).run(target, seed=0, grad_budget=20_000)
    assert np.abs(nuts.flat_draws()[:, 0]).max() <= 3.0
