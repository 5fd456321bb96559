"""NaN, inf and non-positive parameters are refused when a target or approximation is built,
not at first use (where they would give silent wrong answers)."""

import numpy as np
import pytest

import workbench as wb
from workbench.errors import TargetError

NAN = float("nan")


@pytest.mark.parametrize("build, message", [
    (lambda: wb.targets.gaussian(3, mean=[NAN, 0.0, 0.0]), "mean must be finite"),
    (lambda: wb.targets.gaussian(2, mean=[np.inf, 0.0]), "mean must be finite"),
    (lambda: wb.targets.gaussian_mixture(2, n_components=2, means=np.array([[NAN, 0.0], [1.0, 1.0]])),
     "means must be finite"),
    (lambda: wb.targets.bnn(n_data=10, widths=[3], noise_sd=0.0), "noise_sd must be positive and finite, got 0.0"),
    (lambda: wb.targets.bnn(n_data=10, widths=[3], noise_sd=-1.0), "noise_sd must be positive and finite"),
    (lambda: wb.targets.bnn(n_data=10, widths=[3], noise_sd=NAN), "noise_sd must be positive and finite, got nan"),
    (lambda: wb.targets.bnn(x=np.array([0.0, NAN]), y=np.zeros(2), sigma=1.0), "x must be finite"),
    (lambda: wb.targets.bnn(x=np.zeros(2), y=np.array([0.0, 1.0]), sigma=NAN), "sigma must be positive and finite"),
    (lambda: wb.targets.logistic_regression("custom", X=np.array([[NAN], [1.0]]), y=np.array([1.0, 0.0])),
     "X must be finite: it has 1 NaN"),
])
def test_targets_refuse_non_finite_parameters(build, message):
    with pytest.raises(TargetError, match=message):
        build()


def test_approximations_refuse_non_finite_parameters():
    with pytest.raises(ValueError, match="must be finite"):
        wb.approximations.Gaussian(np.array([NAN, 0.0]), np.eye(2))
    with pytest.raises(ValueError, match="must be finite"):
        wb.approximations.Gaussian(np.zeros(2), np.array([[1.0, 0.0], [0.0, np.inf]]))
    with pytest.raises(ValueError, match="must be finite"):
        wb.approximations.GaussianMixture([0.5, 0.5], [[0.0, NAN], [1.0, 1.0]], np.ones((2, 2)))


@pytest.mark.parametrize("rel_step", [NAN, 0.0, -1e-3, 2.0, "small"])
def test_check_gradient_refuses_a_bad_step(rel_step):
    with pytest.raises(TargetError, match="rel_step must be a number in \\(0, 1\\)"):
        wb.check_gradient(wb.targets.gaussian(2), rel_step=rel_step)


@pytest.mark.parametrize("build", [
    lambda fn, data: wb.Target(name="direct", dim=100_000, logp_grad=fn, data=data),
    lambda fn, data: wb.Target.from_numba(fn, dim=100_000, data=data, validate=False, check_gradient=False),
    lambda fn, data: wb.Target.from_numba(fn, dim=100_000, data=data),
])
def test_a_dim_larger_than_the_data_is_refused_before_any_kernel_runs(build):
    """Kernels do not check bounds: with dim far beyond its data the function would read and
    write outside its arrays (it crashed the process)."""
    from tests.user_functions import iso_logp_grad

    with pytest.raises(TargetError, match=r"indexes out of range when called with dim=100000 .*data shapes \[\(3,\)\]"):
        build(iso_logp_grad, (np.ones(3),))
    assert wb.Target.from_numba(iso_logp_grad, dim=3, data=(np.ones(3),)).dim == 3


def test_the_library_targets_are_not_bounds_checked_again():
    from tests.user_functions import iso_logp_grad
    from workbench.user_density import _is_library_function

    assert _is_library_function(wb.targets.gaussian(3).logp_grad)
    assert not _is_library_function(iso_logp_grad)


def test_from_logp_checks_bounds_whatever_validate_says():
    from tests.user_functions import iso_logp
    from workbench.errors import SlowGradientWarning

    for validate in (True, False):
        with pytest.warns(SlowGradientWarning), pytest.raises(TargetError, match="logp of target .* indexes out of range"):
            wb.Target.from_logp(iso_logp, dim=100_000, data=(np.ones(3),), validate=validate)
