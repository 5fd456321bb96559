"""workbench/user_density.py: what the contract does to a user's function (arguments checked, bounds-checked calls,
compiled once)."""

import numpy as np
import pytest

import workbench as wb
from tests import user_functions as uf
from workbench.errors import TargetError


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
