"""How a target's density reaches the compiled kernels of the methods.

The user-facing contract (DESIGN.md) is a Numba function
``logp_grad(theta, grad_out, data) -> float`` with ``data`` a tuple of arrays. A kernel
that receives such a function as an argument is, by default, *specialised* on the function
object, and Numba's ``cache=True`` then never persists it across processes: every test
session and every study worker would recompile every (kernel, target) pair, 2-5 s each.

What we do instead (measured on this project's machines, see notes/python-and-numba.md):
a target's ``logp_grad`` is compiled for the explicit signature
``float64(float64[::1], float64[::1], typeof(data))`` and the kernels take it as a
first-class function of that type. A kernel is then compiled once per *data layout*
(the Numba type of the data tuple), not once per target, and its compiled code is cached
on disk. Measured with a MALA kernel at d = 100: first process 1.8 s to compile the kernel,
every later process 0.3 s from start to finish, against 2.3-2.8 s in every process for the
specialised kernel; the indirect call cost nothing measurable (62-75 ms vs 65-79 ms per
100k steps).

``target_kernel`` below builds, per data layout, an explicit-signature dispatcher of the
kernel's Python function; explicit signatures also switch off Numba's lazy compilation,
so a call can never silently fall back to a specialised (uncached) compile.

A trap when editing: Numba invalidates a cached kernel only when *its own* file changes.
After editing a helper in another file (say ``mcmc/integrators.py``), kernels that use it
(``mcmc/chains.py``) still load the old code: run ``make clean-cache`` (it deletes the
``__pycache__`` folders with the caches). Installed packages and CI start clean.
"""

from __future__ import annotations

import threading
from typing import Callable, NamedTuple

import numba
from numba import types

VEC = types.float64[::1]
"""A C-contiguous float64 vector: theta and grad_out."""
INDEX = types.int64[::1]
"""A C-contiguous int64 vector: the row indices of a mini-batch."""


def data_type(data: tuple) -> types.Type:
    """The Numba type of a target's data tuple (the key of its kernel specialisations)."""
    return numba.typeof(data)


def logp_grad_signature(dtype: types.Type) -> types.Signature:
    """``float64(theta, grad_out, data)``: the signature every target's logp_grad gets."""
    return types.float64(VEC, VEC, dtype)


def logp_grad_batch_signature(dtype: types.Type) -> types.Signature:
    """``float64(theta, grad_out, data, rows, scale)``: the mini-batch form (paper eq. 18-20)."""
    return types.float64(VEC, VEC, dtype, INDEX, types.float64)


class TargetTypes(NamedTuple):
    """The Numba types a kernel signature is built from, for one data layout."""

    data: types.Type
    logp_grad: types.FunctionType
    logp_grad_batch: types.FunctionType


def target_types(dtype: types.Type) -> TargetTypes:
    return TargetTypes(
        data=dtype,
        logp_grad=types.FunctionType(logp_grad_signature(dtype)),
        logp_grad_batch=types.FunctionType(logp_grad_batch_signature(dtype)),
    )


class TargetKernel:
    """A kernel compiled once per data layout, with an on-disk cache.

    Parameters
    ----------
    py_func
        The kernel's plain Python function; it takes the target's function(s) and data
        among its arguments.
    signature_for
        Maps the :class:`TargetTypes` of a data layout to the kernel's full signature.
    options
        Numba options (``nogil``, ``fastmath``, ...); ``cache=True`` is always set.
    """

    def __init__(self, py_func: Callable, signature_for: Callable, **options):
        self.py_func = py_func
        self.signature_for = signature_for
        self.options = {"cache": True, **options}
        self._dispatchers: dict = {}
        self._lock = threading.Lock()
        self.__name__ = py_func.__name__
        self.__doc__ = py_func.__doc__
        self.__wrapped__ = py_func

    def for_data(self, dtype: types.Type):
        """The compiled dispatcher for one data layout (compiled or loaded on first use)."""
        with self._lock:
            disp = self._dispatchers.get(dtype)
            if disp is None:
                sig = self.signature_for(target_types(dtype))
                disp = numba.njit(sig, **self.options)(self.py_func)
                self._dispatchers[dtype] = disp
            return disp

    def for_target(self, target):
        """The compiled dispatcher for ``target``'s data layout."""
        return self.for_data(target.data_type)


def target_kernel(signature_for: Callable, **options) -> Callable[[Callable], TargetKernel]:
    """Decorator: ``@target_kernel(lambda t: (t.logp_grad, t.data, ...), nogil=True)``."""

    def wrap(py_func):
        return TargetKernel(py_func, signature_for, **options)

    return wrap


# Options for helpers that *call* the target's function and allocate nothing (leapfrog, the
# NUTS tree). Inside a helper, Numba wraps every call of a first-class function in atomic
# reference-count increments and decrements of each array argument (theta, grad_out and every
# data array): measured 70 ns per call against 15 ns for the same call in a kernel's own body,
# where its refcount pruning removes them. Without NRT those operations are not emitted:
# 22 ns. Such helpers must not allocate (NRT is what frees arrays).
NO_NRT = {"_nrt": False}
