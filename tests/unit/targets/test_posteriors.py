"""workbench/targets/posteriors.py: the bundled posteriors, the same density in their Numba and PyMC forms."""

import numpy as np
import pytest

import workbench as wb
from workbench.errors import TargetError


@pytest.mark.parametrize("name", list(wb.posteriors.available()))
def test_bundled_posteriors_agree_across_backends(name):
    numba_form = wb.posteriors.load(name)
    pymc_form = wb.posteriors.load(name, backend="pymc")
    assert numba_form.dim == pymc_form.dim
    assert numba_form.spec == {"factory": "posterior", "name": name, "backend": "numba"}
    assert (pymc_form.truth is None) == (numba_form.truth is None)
    rng = np.random.default_rng(2)
    offsets = []
    for _ in range(4):
        theta = numba_form.initial_point + 0.5 * rng.standard_normal(numba_form.dim)
        lp_a, g_a = numba_form.logp_and_grad(theta)
        lp_b, g_b = pymc_form.logp_and_grad(theta)
        offsets.append(lp_a - lp_b)
        np.testing.assert_allclose(g_a, g_b, rtol=1e-9, atol=1e-9)
    # the same density up to a constant (both are normalised, so the constant is ~0; PyMC's Beta
    # and Cauchy log densities carry constants 4e-6 and 3e-8 off scipy's betaln and log(5 pi))
    assert np.ptp(offsets) < 1e-8 and abs(offsets[0]) < 1e-5


def test_bundled_posteriors_by_name_and_bad_names():
    assert "eight_schools_centered" in wb.posteriors.available()
    t = wb.targets.posterior("eight_schools_centered")
    assert t.name == "eight_schools_centered" and t.dim == 10
    # a study cell names it by spec, in either form
    from workbench.study import build_target

    built = build_target({"factory": "posterior", "name": "diabetes_linear", "backend": "pymc"})
    assert built.name == "diabetes_linear_pymc" and built.truth is not None and built.constrain_fn is not None
    with pytest.raises(TargetError, match="unknown posterior 'nope'; bundled posteriors: eight_schools"):
        wb.posteriors.load("nope")
    with pytest.raises(TargetError, match="backend must be one of"):
        wb.posteriors.load("eight_schools_centered", backend="stan")
