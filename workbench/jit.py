"""How the library compiles: the house ``@jit``, and how a target's density reaches the
compiled kernels of the methods.

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


# ----------------------------------------------------------------------------- the house @njit

# Fast-math flags for sums and dot products: reassociation lets LLVM vectorise them. The
# no-NaN / no-inf flags are deliberately left out: samplers detect divergences and faults
# by testing for NaN and inf.
REASSOC = {"reassoc", "contract"}

# Options for helpers that *call* the target's function and allocate nothing (leapfrog, the
# NUTS tree). Inside a helper, Numba wraps every call of a first-class function in atomic
# reference-count increments and decrements of each array argument (theta, grad_out and every
# data array): measured 70 ns per call against 15 ns for the same call in a kernel's own body,
# where its refcount pruning removes them. Without NRT those operations are not emitted:
# 22 ns. Such helpers must not allocate (NRT is what frees arrays).
NO_NRT = {"_nrt": False}

# Numba's default error model tests every floating division for a zero divisor (to raise
# ZeroDivisionError), and that test keeps a loop with a division from vectorising: measured
# 1/sqrt(x) over 100 values in 415 ns, against 105 ns with NumPy's model, where x / 0 is inf or
# nan. Kernels look for NaN and inf themselves (they never raise), so every compiled function
# of the library uses NumPy's model.
HOUSE_OPTIONS = {"cache": True, "error_model": "numpy"}


def jit(fn=None, *, fastmath: bool = False, nrt: bool = True, inline: bool = False):
    """The one way the library says ``@numba.njit``: ``@jit`` or ``@jit(fastmath=True, ...)``.

    Always ``cache=True`` (compiled code persists across processes) and NumPy's error model
    (above). ``fastmath=True`` allows reassociation and contraction only (``REASSOC``: used
    where measured to vectorise a reduction); ``nrt=False`` for helpers that call the
    target's function and allocate nothing (``NO_NRT``); ``inline=True`` inlines the helper
    into its callers at the Numba IR level (small scalar helpers in hot loops).
    """
    options = dict(HOUSE_OPTIONS)
    if fastmath:
        options["fastmath"] = REASSOC
    if not nrt:
        options.update(NO_NRT)
    if inline:
        options["inline"] = "always"
    if fn is None:
        return lambda f: numba.njit(**options)(f)
    return numba.njit(**options)(fn)


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
        Numba options (``fastmath``, ...) on top of the house ones (``HOUSE_OPTIONS``) and
        ``nogil=True``: kernels run on threads.
    """

    def __init__(self, py_func: Callable, signature_for: Callable, **options):
        self.py_func = py_func
        self.signature_for = signature_for
        self.options = {**HOUSE_OPTIONS, "nogil": True, **options}
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
    """Decorator: ``@target_kernel(lambda t: RETURN_TYPE(t.logp_grad, t.data, ...))``, ``t`` the
    :class:`TargetTypes` of a data layout."""

    def wrap(py_func):
        return TargetKernel(py_func, signature_for, **options)

    return wrap


# ----------------------------------------------------------------------------- the kernels' contract

RNG = types.NumPyRandomGeneratorType("NumPyRandomGeneratorType")
"""A ``np.random.Generator`` handed to a kernel (one per chain: reproducible on any threads)."""
MATRIX = types.float64[:, ::1]
"""A C-contiguous float64 matrix: a chain's draws or statistics rows."""
CHAIN_RETURN = types.Tuple((types.int64, types.int64, types.int64, types.float64))
"""What a whole-chain (or whole-fit) kernel returns: (iterations done, gradient evaluations,
of which in warmup, one float of the method's choosing, e.g. the final step size)."""

# The control array a kernel shares with the Python thread that runs it (int64[::1], one row
# of the (tasks, 2) array ``methods.base.run_in_threads`` polls): the kernel writes its
# progress into C_PROGRESS and stops at its next iteration when C_STOP is set (Ctrl-C).
# Chain kernels get two more columns and keep their gradient counts there (total, and in
# warmup), so a chain whose density raises part-way still reports its cost.
C_STOP, C_PROGRESS, C_EVALS, C_WARMUP_EVALS = 0, 1, 2, 3
N_CHAIN_CONTROLS = 4
