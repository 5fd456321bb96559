"""The user's density function as the target contract takes it: its data normalised, its
arguments and types checked (by compiling the kernels' adapter, where it is inlined), one call
through a bounds-checked copy (a wrong ``dim`` would otherwise write out of bounds in a kernel),
and the central-difference gradient of ``Target.from_logp`` (the gradient check is ``gradient_check.py``).
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np
from numba.core.registry import CPUDispatcher

from .errors import TargetError


def _is_numba_function(fn) -> bool:
    return isinstance(fn, CPUDispatcher)


def _normalise_data(data) -> tuple:
    """The data tuple with every item a C-contiguous array (so its Numba type is stable)."""
    if data is None:
        return ()
    if not isinstance(data, tuple):
        raise TargetError(
            f"data must be a tuple of NumPy arrays, got {type(data).__name__}; "
            "wrap a single array as (X,)"
        )
    out = []
    for i, item in enumerate(data):
        try:
            arr = np.asarray(item)
        except ValueError:  # NumPy: "setting an array element with a sequence ... inhomogeneous"
            raise TargetError(f"data[{i}] is not a rectangular array (rows of different lengths)") from None
        if arr.dtype == object or arr.dtype.kind not in "fiub":
            raise TargetError(
                f"data[{i}] is not a numeric array (dtype {arr.dtype}): data items must hold numbers "
                "(floats become float64, integers and booleans int64)"
            )
        if arr.dtype.kind == "f":
            arr = arr.astype(np.float64, copy=False)
        elif arr.dtype.kind in "iub":
            arr = arr.astype(np.int64, copy=False)
        arr = np.ascontiguousarray(arr)
        arr.setflags(write=False)  # shared by all chains and threads: read-only
        out.append(arr)
    return tuple(out)


def _compile_for(fn, signature, what: str, adapter):
    """Check ``fn``'s arguments and compile it, inlined in the adapter through which kernels
    and Python's calls reach it (``adapter()`` builds it), with a clear error."""
    import inspect

    try:
        params = inspect.signature(fn.py_func).parameters
    except (TypeError, ValueError):  # pragma: no cover - a function without a Python signature
        params = None
    if params is not None and len(params) != len(signature.args):
        names = "(theta, grad_out, data)" if len(signature.args) == 3 else "(theta, grad_out, data, rows, scale)"
        raise TargetError(
            f"{what} takes {len(params)} argument(s) ({', '.join(params)}), it must take {len(signature.args)}: "
            f"def {what}{names}: write the gradient into grad_out and return the log density"
        )
    try:
        adapter()  # the kernels' adapter, which inlines fn: fn is compiled there and only there
    except numba.core.errors.TypingError as exc:
        raise TargetError(
            f"{what} could not be compiled for the signature {signature}: it must take "
            f"(theta: float64[::1], grad_out: float64[::1], data: tuple of arrays) "
            f"[plus (rows: int64[::1], scale: float64) for the batch form], "
            f"return the log density as a float and write the gradient into grad_out "
            f"(not return it). Numba said:\n{exc}"
        ) from exc


def _qualname(fn) -> str:
    py = getattr(fn, "py_func", fn)
    return f"{getattr(py, '__module__', '?')}.{getattr(py, '__qualname__', repr(py))}"


def _finite_difference_logp_grad(logp, rel_step: float):
    """A logp_grad whose gradient is the central difference of ``logp`` (a closure: not cached)."""

    @numba.njit
    def logp_grad(theta, grad_out, data):
        value = logp(theta, data)
        x = theta.copy()  # one allocation per gradient: negligible next to 2 d density calls
        for k in range(theta.size):
            h = rel_step * max(1.0, abs(theta[k]))
            x[k] = theta[k] + h
            up = logp(x, data)
            x[k] = theta[k] - h
            down = logp(x, data)
            x[k] = theta[k]
            grad_out[k] = (up - down) / (2.0 * h)
        return value

    return logp_grad


def _is_library_function(fn) -> bool:
    """The workbench's own densities (built-in targets, PyMC wrappers) are tested; a user's are checked."""
    module = getattr(getattr(fn, "py_func", fn), "__module__", "") or ""
    return module == "workbench" or module.startswith("workbench.")


@functools.cache
def _bounds_checked(py_func):
    """A bounds-checked compile of a user's function (not cached on disk: Numba's cache index
    does not tell it apart from the unchecked one)."""
    return numba.njit(boundscheck=True)(py_func)


def _bounds_checked_call(target, fn, logp_only: bool = False):
    """Call ``fn`` once at the initial point through a bounds-checked copy of itself: an index
    out of range is a :class:`TargetError` instead of silent memory reads and writes in a
    kernel. Returns (value, gradient), or None when the call raised something else (left to
    the validation and the runs to report)."""
    checked = _bounds_checked(fn.py_func)
    x = target.initial_point.copy()
    g = np.full(target.dim, np.nan)
    try:
        value = checked(x, target.data) if logp_only else checked(x, g, target.data)
    except IndexError as exc:
        raise TargetError(
            f"{'logp' if logp_only else 'logp_grad'} of target {target.name!r} "
            f"indexes out of range when called with dim={target.dim} and its data "
            f"(theta and grad_out have {target.dim} entries; data shapes "
            f"{[np.shape(a) for a in target.data]}): is dim right? ({exc})"
        ) from exc
    except Exception:
        return None
    return value, g


def _validate_user_function(target, logp_only=None) -> None:
    """Call the user's function once, bounds-checked, at the initial point."""
    fn = logp_only if logp_only is not None else target.logp_grad
    called = _bounds_checked_call(target, fn, logp_only=logp_only is not None)
    if called is None:  # it raised: check_point names the point (or raises it plainly)
        target.check_point(target.initial_point, what="initial point")
        raise TargetError(f"the density of target {target.name!r} raised at its initial point only when bounds-checked")
    value, g = called
    if not isinstance(value, (float, int, np.floating, np.integer)):
        raise TargetError(
            f"logp_grad of target {target.name!r} returned {type(value).__name__}; it must "
            "return the log density as a float and write the gradient into grad_out"
        )
    if logp_only is None:
        unwritten = np.flatnonzero(np.isnan(g))
        if unwritten.size and math.isfinite(float(value)):
            raise TargetError(
                f"logp_grad of target {target.name!r} did not write grad_out at "
                f"{unwritten.size} of {target.dim} coordinates (first: {unwritten[:6].tolist()}): "
                f"the gradient has the wrong shape for dim={target.dim}"
            )
    target.check_point(target.initial_point, what="initial point")
