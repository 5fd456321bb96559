"""workbench/running/faults.py: a density that raised inside a kernel is named with the method,
chain, iteration and point; faults treated as rejections are counted in the result's messages,
and a density that fails at most points is an error."""

import numpy as np
import pytest

import workbench as wb
from workbench import density_faults
from workbench.errors import DensityError
from workbench.running.clock import RunClock
from workbench.running.faults import density_raised, with_faults_reported


def _result(target, grad_evals):
    method = wb.methods.Laplace()
    return method.result(target, 0, np.zeros((1, 1, target.dim)), RunClock(), grad_evals=grad_evals)


def test_a_density_that_raised_is_named_with_the_run_chain_iteration_and_point():
    t = wb.targets.gaussian(2)
    error = density_raised("NUTS", t, ZeroDivisionError("division by zero"), 3, 17, np.array([1.0, -2.0]))
    assert isinstance(error, DensityError)
    text = str(error)
    assert "NUTS on target 'gaussian_isotropic'" in text and "chain 3 at iteration 17" in text
    assert "ZeroDivisionError('division by zero')" in text and "1" in text and "-2" in text


def test_faults_are_reported_as_rejections_until_they_are_most_evaluations():
    t = wb.targets.gaussian(2)
    faults = density_faults.Faults(data_address=0, count=5, first_point=np.array([9.0, 9.0]),
                                   first_exception=ZeroDivisionError("division by zero"))
    with pytest.warns(RuntimeWarning, match="density faults: the target's density raised at 5 of 1,000"):
        res = with_faults_reported(_result(t, 1000), faults, "NUTS", t)
    assert res.info["density_faults"] == 5 and res.messages[-1].startswith("density faults")
    nested = density_faults.Faults(data_address=0, nested=True, count=5)
    assert with_faults_reported(_result(t, 1000), nested, "NUTS", t).messages == []  # the outer run reports
    most = density_faults.Faults(data_address=0, count=600, first_point=np.zeros(2),
                                 first_exception=ZeroDivisionError("division by zero"))
    with pytest.raises(DensityError, match="raised at 600 of 1,000 evaluations"):
        with_faults_reported(_result(t, 1000), most, "NUTS", t)
