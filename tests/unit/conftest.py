"""Fixtures of the unit tests: a target that counts its own calls (every method's cost is checked on it)."""

import numba
import numpy as np
import pytest
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

import workbench as wb
from workbench.target import Truth


@intrinsic
def _atomic_increment(typingctx, address):
    """*address += 1, atomically (address: an int64 holding a pointer to an int64)."""
    sig = types.int64(types.int64)

    def codegen(context, builder, signature, args):
        ptr = builder.inttoptr(args[0], ir.IntType(64).as_pointer())
        return builder.atomic_rmw("add", ptr, ir.Constant(ir.IntType(64), 1), "monotonic")

    return sig, codegen


@pytest.fixture(scope="session")
def counted():
    """(target, counter): a 3-d Gaussian with sds 1, 1.4, 1.7 that adds 1 to counter[0] per call."""
    counter = np.zeros(1, dtype=np.int64)
    address = counter.ctypes.data

    @numba.njit
    def logp_grad(theta, grad_out, data):
        _atomic_increment(address)
        lp = 0.0
        for i in range(theta.size):
            grad_out[i] = -theta[i] / (1.0 + i)
            lp -= 0.5 * theta[i] ** 2 / (1.0 + i)
        return lp

    sd = np.sqrt(np.arange(1.0, 4.0))
    truth = Truth(mean=np.zeros(3), sd=sd, sampler=lambda rng, n: rng.standard_normal((n, 3)) * sd)
    target = wb.Target.from_numba(logp_grad, dim=3, name="counted", check_gradient=False, truth=truth)
    return target, counter
