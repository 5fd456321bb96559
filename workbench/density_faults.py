"""A density that raises at a proposal: one rule for every method.

A user's Numba density compiled with Numba's default error model raises ``ZeroDivisionError``
where a float division meets zero (a scale that underflowed far out in the tails), and its own
code may raise a math-domain ``ValueError``. Stan rejects such a proposal and says why; nutpie
counts it as a divergence. Here too: the adapter through which kernels call a user's density
(``jit.compile_kernel_form``) catches the exception and calls :func:`record` (through Numba's
object mode, only on that rare path), which

- replays the call in Python, with the user's own compiled function, to learn which exception
  it was (nopython code can catch an exception but not look at it);
- for an arithmetic fault (``ZeroDivisionError``, ``OverflowError``, ``FloatingPointError``, a
  math-domain ``ValueError``) while a run collects faults (:func:`collect`, entered by every
  ``Method.run``): counts it, keeps the first point and exception, and has the adapter return
  log p = -inf with a NaN gradient. Every method already treats -inf as the edge of the support:
  a divergence for NUTS and HMC, a rejection for Metropolis and MAMS, weight zero for
  importance sampling and SMC, a rejected step for VI;
- otherwise (another exception, or no run collecting, as in a call from Python): keeps the
  exception and has the adapter raise one of the same class, which :func:`original` turns
  back into the user's own exception (with its message) at the Python boundary.

Faults are matched to a run by the address of the target's data buffer (every target owns
one; a flow's or whitening's transformed target calls the user's target with its buffer).
"""

from __future__ import annotations

import ctypes
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from .errors import DensityFault

# what the adapter raises when a fault is not a rejection: the code record returns -> its class
RAISE_CLASSES = {1: ZeroDivisionError, 2: OverflowError, 3: FloatingPointError, 4: ValueError,
                 5: IndexError, 6: DensityFault}
REJECT = 0


def is_arithmetic(exc: BaseException | None) -> bool:
    """Whether an exception is a density fault that means "no density here": arithmetic, or a
    math-domain ``ValueError`` (``math.log(-1)`` in Python; Numba returns NaN there)."""
    if isinstance(exc, ArithmeticError):
        return True
    return isinstance(exc, ValueError) and "domain" in str(exc)


@dataclass
class Faults:
    """The faults of one run: how many, and the first one's point and exception."""

    data_address: int
    nested: bool = False  # inside another run's collection of the same density: that run reports
    count: int = 0
    first_point: np.ndarray | None = None
    first_exception: BaseException | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


_ACTIVE: list[Faults] = []  # the runs collecting now (a run inside a run: both)
_ACTIVE_LOCK = threading.Lock()
_SOURCES: dict = {}  # adapter key -> (the user's function, rebuild(f, i) -> its data tuple)
_LOCAL = threading.local()  # per thread: suspended (bool), last (the last exception raised)
_LAST_RAISED: list = [None]  # the last exception the adapter raised for, from any thread


def register_source(key: str, fn, rebuild) -> None:
    """Tell :func:`record` how to replay the adapter ``key``: the user's function, and how to
    rebuild its data tuple from the two packed buffers."""
    _SOURCES[key] = (fn, rebuild)


@contextmanager
def collect(data_address: int):
    """Count the faults of the density whose data buffer is at ``data_address`` while the block
    runs (a method's run); yields the :class:`Faults`."""
    with _ACTIVE_LOCK:
        faults = Faults(int(data_address), nested=any(f.data_address == int(data_address) for f in _ACTIVE))
        _ACTIVE.append(faults)
    try:
        yield faults
    finally:
        with _ACTIVE_LOCK:
            _ACTIVE.remove(faults)


@contextmanager
def raising():
    """Within the block, in this thread, a density that raises raises (a method's starting point:
    a fault there is an error, not a rejection)."""
    before = getattr(_LOCAL, "suspended", False)
    _LOCAL.suspended = True
    try:
        yield
    finally:
        _LOCAL.suspended = before


def _view(address: int, size: int, ctype, dtype) -> np.ndarray:
    if size == 0:
        return np.zeros(0, dtype=dtype)
    return np.ctypeslib.as_array(ctypes.cast(address, ctypes.POINTER(ctype)), (size,))


def record(key: str, theta_address: int, dim: int, f_address: int, f_size: int, i_address: int, i_size: int,
           rows_address: int = 0, rows_size: int = -1, scale: float = 0.0) -> int:
    """Called by an adapter whose density raised (with the GIL, from Numba's object mode): what
    the adapter does next, ``REJECT`` or a code of :data:`RAISE_CLASSES`. ``rows_size`` -1: the
    full density; else the mini-batch form's rows and scale. Never raises itself."""
    try:
        point = _view(theta_address, dim, ctypes.c_double, np.float64).copy()
        batch = None if rows_size < 0 else (_view(rows_address, rows_size, ctypes.c_int64, np.int64).copy(), scale)
        exc = _replay(key, point, f_address, f_size, i_address, i_size, batch)
        if is_arithmetic(exc) and not getattr(_LOCAL, "suspended", False):
            with _ACTIVE_LOCK:
                runs = [f for f in _ACTIVE if f.data_address == f_address]
            for faults in runs:
                with faults.lock:
                    faults.count += 1
                    if faults.first_point is None:
                        faults.first_point, faults.first_exception = point, exc
            if runs:
                return REJECT
        _LAST_RAISED[0] = exc
        for code, cls in RAISE_CLASSES.items():
            if type(exc) is cls:
                return code
        return 6
    except BaseException as unexpected:  # noqa: BLE001 - nothing may escape into compiled code
        _LAST_RAISED[0] = unexpected
        return 6


def _replay(key, point, f_address, f_size, i_address, i_size, batch) -> BaseException | None:
    """The exception the user's function raises at ``point`` (None if it does not raise again)."""
    source = _SOURCES.get(key)
    if source is None:
        return None
    fn, rebuild = source
    data = rebuild(_view(f_address, f_size, ctypes.c_double, np.float64),
                   _view(i_address, i_size, ctypes.c_int64, np.int64))
    try:
        if batch is None:
            fn(point.copy(), np.empty(point.size), data)
        else:
            fn(point.copy(), np.empty(point.size), data, *batch)
    except Exception as exc:  # noqa: BLE001 - this is what we came to see
        return exc
    return None


def original(exc: BaseException) -> BaseException:
    """The user's own exception behind one an adapter raised (same class, the fixed message
    ``FAULT_MESSAGE``), or ``exc`` itself."""
    last = _LAST_RAISED[0]
    if last is not None and FAULT_MESSAGE in str(exc):
        return last
    return exc


FAULT_MESSAGE = "the target's density raised here (workbench.density_faults.original gives its own exception)"
"""The message of what an adapter raises: the user's exception, class and message, is replayed."""
