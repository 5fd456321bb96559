"""The Target contract: user targets, gradient checks, and the errors bad input gets."""

import numpy as np
import pytest

import workbench as wb
from tests import user_functions as uf
from workbench.errors import NonFiniteDensityError, SlowGradientWarning, TargetError

PREC = (np.array([1.0, 4.0, 9.0]),)


def test_from_numba_evaluates_and_defaults():
    t = wb.Target.from_numba(uf.iso_logp_grad, dim=3, data=PREC, name="iso")
    lp, g = t.logp_and_grad(np.array([1.0, 1.0, 1.0]))
    assert lp == pytest.approx(-0.5 * 14.0)
    np.testing.assert_allclose(g, [-1.0, -4.0, -9.0])
    assert t.param_names == ("theta[0]", "theta[1]", "theta[2]")
    assert t.dim == 3 and t.truth is None and not t.has_batch
    assert t.data[0].flags.c_contiguous and not t.data[0].flags.writeable


@pytest.mark.parametrize("fn, coordinate", [(uf.iso_wrong_sign, None), (uf.iso_off_in_last, 2)])
def test_from_numba_refuses_a_wrong_gradient_and_names_the_coordinate(fn, coordinate):
    with pytest.raises(TargetError, match="gradient of target 'mine' is wrong: at coordinate") as info:
        wb.Target.from_numba(fn, dim=3, data=PREC, name="mine")
    if coordinate is not None:
        assert f"at coordinate {coordinate} (theta[{coordinate}])" in str(info.value)
    assert "check_gradient=False" in str(info.value)
    # the opt-out builds it anyway
    t = wb.Target.from_numba(fn, dim=3, data=PREC, check_gradient=False)
    assert "gradient_check" not in t.build_info


def test_from_numba_records_its_gradient_check():
    t = wb.Target.from_numba(uf.iso_logp_grad, dim=3, data=PREC)
    check = t.build_info["gradient_check"]
    assert check["checked"] and check["points"] == 3 and check["density_calls"] == 3 * 7
    assert check["max_rel_error"] < 1e-6


def test_from_logp_finite_difference_gradient_warns_and_is_accurate():
    with pytest.warns(SlowGradientWarning, match="central differences"):
        t = wb.Target.from_logp(uf.iso_logp, dim=3, data=PREC, name="fd")
    assert wb.check_gradient(t).max_rel_error < 1e-6


def test_not_a_numba_function_says_how_to_fix_it():
    with pytest.raises(TargetError, match=r"numba\.njit"):
        wb.Target.from_numba(uf.python_logp_grad, dim=3)
    with pytest.raises(TargetError, match=r"numba\.njit"):
        wb.Target.from_logp(lambda th, d: 0.0, dim=3)


@pytest.mark.parametrize("start, value", [(0.0, "raised ZeroDivisionError"), (-1.0, "is nan")])
def test_non_finite_density_at_the_starting_point_names_the_point(start, value):
    x0 = np.array([start, 2.5])
    with pytest.raises(NonFiniteDensityError, match=rf"{value}.* at the initial point \[{start:g}, 2\.5\]") as err:
        wb.Target.from_numba(uf.log_of_first, dim=2, initial_point=x0)
    np.testing.assert_array_equal(err.value.point, x0)  # the point is kept in the error


def test_check_point_names_non_finite_gradients_and_points():
    t = wb.Target.from_numba(uf.log_of_first, dim=2, initial_point=np.array([1.0, 0.0]))
    assert t.check_point(np.array([1.0, 0.0])) == pytest.approx(0.0)
    with pytest.raises(NonFiniteDensityError, match="not finite"):
        t.check_point(np.array([np.nan, 0.0]))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"dim": 0}, "dim must be >= 1"),
        ({"dim": 2.5}, "dim must be an integer"),
        ({"dim": 3, "data": [1.0]}, "data must be a tuple"),
        ({"dim": 3, "param_names": ["a"]}, "1 param_names given for dim=3"),
        ({"dim": 3, "initial_point": np.zeros(4)}, r"initial_point has shape \(4,\)"),
    ],
)
def test_invalid_target_settings(kwargs, message):
    kwargs.setdefault("data", PREC)
    with pytest.raises(TargetError, match=message):
        wb.Target.from_numba(uf.iso_logp_grad, **kwargs)


def test_theta_of_the_wrong_shape_is_refused():
    t = wb.Target.from_numba(uf.iso_logp_grad, dim=3, data=PREC)
    with pytest.raises(TargetError, match=r"theta has shape \(2,\), expected \(3,\)"):
        t.logp(np.zeros(2))


def test_batch_form_needs_n_data_and_checks_rows():
    t = wb.targets.linear_regression(n_data=20, dim=2)
    with pytest.raises(TargetError, match="rows must lie in"):
        t.logp_and_grad_batch(np.zeros(2), np.array([0, 25]), 1.0)
    plain = wb.Target.from_numba(uf.iso_logp_grad, dim=3, data=PREC)
    with pytest.raises(TargetError, match="no mini-batch form"):
        plain.logp_and_grad_batch(np.zeros(3), np.array([0]), 1.0)


