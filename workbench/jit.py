"""How the library compiles: the house ``@jit``, and how a target's density reaches the
compiled kernels of the methods.

The user-facing contract (docs/architecture.md, "Target") is a Numba function
``logp_grad(theta, grad_out, data) -> float`` with ``data`` a tuple of arrays. A kernel
that receives such a function as an argument is, by default, *specialised* on the function
object, and Numba's ``cache=True`` then never persists it across processes: every test
session and every study worker would recompile every (kernel, target) pair, 2-5 s each.

What we do instead (measured on this project's machines; docs/architecture.md, "Compiled code"):
the kernels take the target's function as a first-class function of one fixed signature,
``float64(float64[::1], float64[::1], PACKED)``, where ``PACKED`` is the target's data
packed into two read-only buffers, (float64[::1], int64[::1]). Every target reaches the
kernels through a small *adapter* compiled for it (``kernel_form``): it cuts the buffers
back into the user's arrays (views, no copy) and calls the user's ``logp_grad``, which
is inlined. So each kernel is compiled once, whatever the targets' data layouts, and its
compiled code is cached on disk; only the adapter (a fraction of a second to 2 s) is compiled
per target, and it too is cached on disk when the user's function is importable by name.

``target_kernel`` below builds one explicit-signature dispatcher of the kernel's Python
function; explicit signatures also switch off Numba's lazy compilation, so a call can never
silently fall back to a specialised (uncached) compile.

A trap when editing: Numba invalidates a cached kernel only when *its own* file changes.
After editing a helper in another file (say ``mcmc/integrators.py``), kernels that use it
(``mcmc/chains.py``) still load the old code: run ``make clean-cache`` (it deletes the
``__pycache__`` folders with the caches). Installed packages and CI start clean.
"""

from __future__ import annotations

import math
import threading
import typing
from collections.abc import Callable
from typing import NamedTuple

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


def kernel_settings(cls, **values):
    """An instance of the NamedTuple ``cls`` (a kernel's settings) with each field cast to the
    type its annotation names (``int`` -> int64, ``float`` -> float64), so every instance has
    the one Numba type the kernel is compiled for (:func:`settings_type`). Fields not given
    take the class's defaults."""
    unknown = set(values) - set(cls._fields)
    if unknown:
        raise TypeError(f"unknown {cls.__name__} fields {sorted(unknown)}; fields: {list(cls._fields)}")
    values = {**cls._field_defaults, **values}
    missing = [f for f in cls._fields if f not in values]
    if missing:
        raise TypeError(f"{cls.__name__} needs {missing}")
    hints = typing.get_type_hints(cls)
    return cls(**{f: (float if hints[f] is float else int)(values[f]) for f in cls._fields})


def settings_type(cls) -> types.Type:
    """The Numba type of ``kernel_settings(cls, ...)``: what a kernel's signature names."""
    return numba.typeof(kernel_settings(cls, **{f: 0 for f in cls._fields}))


class TargetTypes(NamedTuple):
    """The Numba types a kernel signature is built from (one set for every target)."""

    data: types.Type
    logp_grad: types.FunctionType
    logp_grad_batch: types.FunctionType


_READONLY_F = types.Array(types.float64, 1, "C", readonly=True)
_READONLY_I = types.Array(types.int64, 1, "C", readonly=True)
PACKED = types.Tuple((_READONLY_F, _READONLY_I))
"""What kernels get as ``data``: the target's arrays packed in a float64 and an int64 buffer."""
KERNEL_TYPES = TargetTypes(
    data=PACKED,
    logp_grad=types.FunctionType(logp_grad_signature(PACKED)),
    logp_grad_batch=types.FunctionType(logp_grad_batch_signature(PACKED)),
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


def jit(fn=None, *, fastmath: bool = False, nrt: bool = True, inline: bool = False, nogil: bool = False):
    """The one way the library says ``@numba.njit``: ``@jit`` or ``@jit(fastmath=True, ...)``.

    Always ``cache=True`` (compiled code persists across processes) and NumPy's error model
    (above). ``fastmath=True`` allows reassociation and contraction only (``REASSOC``: used
    where measured to vectorise a reduction); ``nrt=False`` for helpers that call the
    target's function and allocate nothing (``NO_NRT``); ``inline=True`` inlines the helper
    into its callers at the Numba IR level (small scalar helpers in hot loops); ``nogil=True``
    releases the GIL (helpers called from several threads at once).
    """
    options = dict(HOUSE_OPTIONS)
    if nogil:
        options["nogil"] = True
    if fastmath:
        options["fastmath"] = REASSOC
    if not nrt:
        options.update(NO_NRT)
    if inline:
        options["inline"] = "always"
    if fn is None:
        return lambda f: numba.njit(**options)(f)
    return numba.njit(**options)(fn)


KERNELS: dict = {}
"""Every :class:`TargetKernel`, by ``module.name``: each registers itself when its module
defines it. This module imports none of them; whoever compiles them all up front (a study's
runner) imports the kernel modules first."""


def compile_kernels(names=None) -> dict:
    """Compile (or load from the disk cache) the named kernels, all registered ones by default; returns the
    seconds each took. A study's workers first split this between them, so that two workers
    do not compile the same kernel at the same moment (Numba's cache does not coordinate)."""
    import time

    out = {}
    for name in sorted(KERNELS) if names is None else names:
        if name not in KERNELS:  # not one of the library's (a user's kernel in the caller's process)
            continue
        start = time.perf_counter()
        KERNELS[name].compiled()
        out[name] = time.perf_counter() - start
    return out


# cold compile seconds, measured here one kernel at a time, to split the kernels evenly between
# workers (the rest take about a second or less)
_COMPILE_SECONDS = {"_hamiltonian_chain": 28.0, "_hamiltonian_chain_diag": 13.0, "_fit": 7.3,
                    "_microcanonical_chain": 2.5, "_fit_full_rank": 2.3, "_mutate": 2.0, "_fit_full_rank_natural": 1.8}


def kernel_groups(n: int) -> list[list[str]]:
    """The registered kernels in ``n`` groups of about equal compile time (largest first, greedily)."""

    groups: list[list[str]] = [[] for _ in range(max(1, n))]
    load = [0.0] * len(groups)
    library = [k for k in KERNELS if k.startswith("workbench.")]
    for name in sorted(library, key=lambda k: -_COMPILE_SECONDS.get(k.rsplit(".", 1)[1], 0.5)):
        i = load.index(min(load))
        groups[i].append(name)
        load[i] += _COMPILE_SECONDS.get(name.rsplit(".", 1)[1], 0.5)
    return [g for g in groups if g]


class TargetKernel:
    """A kernel compiled once (for the packed data every target is passed as), with an
    on-disk cache.

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

    def __init__(self, py_func: Callable, signature_for: Callable, name: str | None = None, **options):
        self.py_func = py_func
        self.signature_for = signature_for
        self.options = {**HOUSE_OPTIONS, "nogil": True, **options}
        self._dispatcher = None
        self._lock = threading.Lock()
        self.__name__ = name or py_func.__name__
        self.__doc__ = py_func.__doc__
        self.__wrapped__ = py_func
        KERNELS[f"{py_func.__module__}.{self.__name__}"] = self

    def compiled(self):
        """The compiled dispatcher (compiled, or loaded from the disk cache, on first use)."""
        with self._lock:
            if self._dispatcher is None:
                sig = self.signature_for(KERNEL_TYPES)
                self._dispatcher = numba.njit(sig, **self.options)(self.py_func)
            return self._dispatcher

    def for_target(self, target):
        """The compiled dispatcher, with ``target``'s adapters built (both are compile time)."""
        target.kernel_logp_grad  # noqa: B018 - compiles the target's adapter now
        return self.compiled()


def target_kernel(signature_for: Callable, name: str | None = None, **options) -> Callable[[Callable], TargetKernel]:
    """Decorator: ``@target_kernel(lambda t: RETURN_TYPE(t.logp_grad, t.data, ...))``, ``t`` the
    :class:`TargetTypes` of a data layout; ``name`` registers a second kernel of the same
    function (another signature) under its own name."""

    def wrap(py_func):
        return TargetKernel(py_func, signature_for, name=name, **options)

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
# of the (tasks, 2) array ``running.threads.run_in_threads`` polls): the kernel writes its
# progress into C_PROGRESS and stops at its next iteration when C_STOP is set (Ctrl-C).
# Chain kernels get two more columns and keep their gradient counts there (total, and in
# warmup), so a chain whose density raises part-way still reports its cost.
C_STOP, C_PROGRESS, C_EVALS, C_WARMUP_EVALS = 0, 1, 2, 3
N_CHAIN_CONTROLS = 4


def _no_batch_form(theta, grad_out, packed, rows, scale):
    """Stands in for ``logp_grad_batch`` on targets without one (never called: batch = 0)."""
    for i in range(theta.size):
        grad_out[i] = 0.0
    return math.nan


no_batch_form = numba.njit(logp_grad_batch_signature(PACKED), nogil=True, **HOUSE_OPTIONS)(_no_batch_form)
