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


def test_check_gradient_reports_worst_relative_error():
    t = wb.Target.from_numba(uf.iso_logp_grad, dim=3, data=PREC)
    chk = wb.check_gradient(t, points=np.ones((2, 3)))
    assert chk.max_rel_error < 1e-9 and chk.errors.shape == (2,)


def test_check_gradient_catches_a_wrong_gradient():
    # same density as iso, but the "precision" handed to the gradient is off by 10% in
    # one coordinate: check_gradient must see it
    t = wb.Target.from_numba(uf.iso_logp_grad, dim=3, data=PREC)
    wrong = t.replace(data=(np.array([1.0, 4.0, 9.0]),))
    assert wb.check_gradient(wrong).max_rel_error < 1e-9

    from workbench.gradient_check import finite_difference_gradient

    x = np.array([0.5, -1.0, 2.0])
    fd = finite_difference_gradient(t, x)
    np.testing.assert_allclose(fd, [-0.5, 4.0, -18.0], rtol=1e-9)
    # a deliberately wrong analytic gradient
    g_bad = t.logp_and_grad(x)[1] * np.array([1.0, 1.0, 1.1])
    assert np.max(np.abs(g_bad - fd)) / max(1.0, np.abs(fd).max()) > 0.05


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


def test_gradient_check_allows_for_round_off_of_a_large_density():
    # log p ~ -1e6 and curvature 1e4: a right gradient must pass, a 1% wrong one must not
    mu = np.array([50.0, -20.0])
    t = wb.Target.from_numba(uf.steep_gaussian, dim=2, data=(mu,), initial_point=mu + 0.01)
    assert t.build_info["gradient_check"]["checked"]
    with pytest.raises(TargetError, match="coordinate 1"):
        wb.Target.from_numba(uf.iso_off_in_last, dim=2, data=(np.array([1e4, 1e4]),),
                             initial_point=np.array([50.0, -20.0]), name="mine")


def test_gradient_check_is_skipped_with_a_note_above_its_size_limit(monkeypatch):
    import workbench.gradient_check as target_module

    monkeypatch.setattr(target_module, "GRADIENT_CHECK_MAX_DIM", 2)
    with pytest.warns(UserWarning, match="gradient check skipped: d = 3 > 2"):
        t = wb.Target.from_numba(uf.iso_wrong_sign, dim=3, data=PREC)
    assert not t.build_info["gradient_check"]["checked"]


def test_gradient_check_works_where_the_density_ends_near_the_start():
    # log p = -inf outside a disc: points that fall outside are pulled in, not fatal
    t = wb.Target.from_numba(uf.gaussian_in_a_disc, dim=2, initial_point=np.array([5.9, 0.0]))
    assert t.build_info["gradient_check"]["points"] >= 1


def test_from_logp_finite_difference_gradient_warns_and_is_accurate():
    with pytest.warns(SlowGradientWarning, match="central differences"):
        t = wb.Target.from_logp(uf.iso_logp, dim=3, data=PREC, name="fd")
    assert wb.check_gradient(t).max_rel_error < 1e-6


def test_not_a_numba_function_says_how_to_fix_it():
    with pytest.raises(TargetError, match=r"numba\.njit"):
        wb.Target.from_numba(uf.python_logp_grad, dim=3)
    with pytest.raises(TargetError, match=r"numba\.njit"):
        wb.Target.from_logp(lambda th, d: 0.0, dim=3)


def test_wrong_dimension_is_caught_by_the_bounds_checked_call():
    with pytest.raises(TargetError, match="out of range.*dim=3"):
        wb.Target.from_numba(uf.reads_five_coordinates, dim=3)
    # with the right dimension the same function is fine
    assert wb.Target.from_numba(uf.reads_five_coordinates, dim=5).dim == 5


def test_gradient_of_the_wrong_shape_is_named():
    with pytest.raises(TargetError, match="did not write grad_out at 3 of 4"):
        wb.Target.from_numba(uf.writes_one_gradient_entry, dim=4)


def test_returning_the_gradient_instead_of_writing_it_is_named():
    with pytest.raises(TargetError, match="write the gradient into grad_out"):
        wb.Target.from_numba(uf.returns_gradient, dim=2)


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


def test_the_users_function_is_compiled_once_inlined_in_the_kernels_adapter():
    """Building, checking, evaluating from Python and sampling all go through one compiled
    adapter in which the user's function is inlined: its own dispatcher is never compiled
    (a PyMC model's density compiled twice cost its compile time twice)."""
    import numba

    @numba.njit
    def quadratic(theta, grad_out, data):
        (scale,) = data
        lp = 0.0
        for i in range(theta.size):
            grad_out[i] = -theta[i] / scale[0]
            lp -= 0.5 * theta[i] ** 2 / scale[0]
        return lp

    t = wb.Target.from_numba(quadratic, dim=3, data=(np.array([2.0]),))
    t.logp_and_grad(np.ones(3))
    wb.check_gradient(t)
    copy = t.replace(name="copy")
    assert copy.kernel_logp_grad is t.kernel_logp_grad  # a copy shares the compiled adapter
    wb.methods.NUTS(chains=1, warmup=20, draws=20, progress=False).run(copy, seed=0)
    assert quadratic.signatures == []
