"""How the library compiles: the house ``@jit``, and how a target's density reaches the
compiled kernels of the methods.

The user-facing contract (DESIGN.md) is a Numba function
``logp_grad(theta, grad_out, data) -> float`` with ``data`` a tuple of arrays. A kernel
that receives such a function as an argument is, by default, *specialised* on the function
object, and Numba's ``cache=True`` then never persists it across processes: every test
session and every study worker would recompile every (kernel, target) pair, 2-5 s each.

What we do instead (measured on this project's machines, see notes/python-and-numba.md):
the kernels take the target's function as a first-class function of one fixed signature,
``float64(float64[::1], float64[::1], PACKED)``, where ``PACKED`` is the target's data
packed into two read-only buffers, (float64[::1], int64[::1]). Every target reaches the
kernels through a small *adapter* compiled for it (``kernel_form``): it cuts the buffers
back into the user's arrays (views, no copy) and calls the user's ``logp_grad``, which
is inlined. So each kernel is compiled once, whatever the targets' data layouts, and its
compiled code is cached on disk; only the adapter (a fraction of a second to 2 s) is compiled
per target, and it too is cached on disk when the user's function is importable by name.
Measured: a cold ``make report`` spent 206 of its 437 cell-seconds compiling when kernels were
compiled per data layout (each of 7 layouts x 8 kernels, often in both workers at once).

``target_kernel`` below builds one explicit-signature dispatcher of the kernel's Python
function; explicit signatures also switch off Numba's lazy compilation, so a call can never
silently fall back to a specialised (uncached) compile.

A trap when editing: Numba invalidates a cached kernel only when *its own* file changes.
After editing a helper in another file (say ``mcmc/integrators.py``), kernels that use it
(``mcmc/chains.py``) still load the old code: run ``make clean-cache`` (it deletes the
``__pycache__`` folders with the caches). Installed packages and CI start clean.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import sys
import threading
import typing
from pathlib import Path
from typing import Callable, NamedTuple

import numba
import numpy as np
from numba import types

from .fingerprint import dependency_digest

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


class PackedData(NamedTuple):
    """A target's data for the kernels: the buffers, and the views of them the user's
    function gets (``data``, in the order given)."""

    packed: tuple  # (float64 buffer, int64 buffer), read-only
    data: tuple  # the user's arrays as read-only views of the buffers
    layout: tuple  # per item: ("f" or "i", offset, shape)


def pack_data(data: tuple) -> PackedData:
    """Pack normalised data (float64 and int64 C-contiguous arrays) into two buffers."""
    layout, floats, ints, n_f, n_i = [], [], [], 0, 0
    for arr in data:
        if arr.dtype == np.float64:
            layout.append(("f", n_f, arr.shape))
            floats.append(arr.ravel())
            n_f += arr.size
        else:
            layout.append(("i", n_i, arr.shape))
            ints.append(arr.ravel())
            n_i += arr.size
    fbuf = np.concatenate(floats) if floats else np.zeros(0)
    ibuf = np.concatenate(ints).astype(np.int64, copy=False) if ints else np.zeros(0, dtype=np.int64)
    fbuf.setflags(write=False)
    ibuf.setflags(write=False)
    views = []
    for kind, offset, shape in layout:
        buf = fbuf if kind == "f" else ibuf
        size = int(np.prod(shape, dtype=np.int64))
        views.append(buf[offset: offset + size].reshape(shape))
    return PackedData((fbuf, ibuf), tuple(views), tuple(layout))


WHOLE = (-1,)
"""The shape in a layout entry that is its whole buffer (:func:`_whole_buffers`)."""


def _whole_buffers(layout: tuple) -> tuple:
    """``layout`` with each 1-D entry that is alone of its kind (so its array is the whole float
    or int buffer) marked ``WHOLE``: the adapter takes the buffer as it is, and one adapter serves
    every size (a flow's coefficients change size with each refit; recompiling cost 0.4-0.7 s)."""
    kinds = [kind for kind, _, _ in layout]
    return tuple((kind, offset, WHOLE) if len(shape) == 1 and kinds.count(kind) == 1 else (kind, offset, shape)
                 for kind, offset, shape in layout)


def _unpack_expression(layout: tuple) -> str:
    items = []
    for kind, offset, shape in layout:
        if shape == WHOLE:
            items.append(kind)
            continue
        size = int(np.prod(shape, dtype=np.int64))
        view = f"{kind}[{offset}:{offset + size}]"
        items.append(view if len(shape) == 1 else f"{view}.reshape({tuple(int(n) for n in shape)!r})")
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


_ADAPTERS: dict = {}  # (fn, layout, batch, digest) -> its compiled adapter: a copy of a target (replace) shares it


def kernel_form(fn, layout: tuple, batch: bool = False):
    """:func:`compile_kernel_form`, once per (function, data layout): targets that share both
    (a target and its ``replace``d copies) share the adapter."""
    layout = _whole_buffers(layout)
    key = (fn, layout, batch, dependency_digest(fn))  # a global changed since: a new adapter
    if key not in _ADAPTERS:
        _ADAPTERS[key] = compile_kernel_form(fn, layout, batch)
    return _ADAPTERS[key]


def compile_kernel_form(fn, layout: tuple, batch: bool = False):
    """The adapter through which kernels call ``fn`` (a target's ``logp_grad``, or with
    ``batch`` its ``logp_grad_batch``): compiled for the packed signature, it rebuilds the
    data tuple as views of the buffers and runs ``fn``'s own code, inlined at Numba's IR
    level and compiled with ``fn``'s options (its error model, fastmath), without Numba's
    runtime unless ``fn`` allocates. Calling ``fn``'s
    separately compiled code instead cost 20-25 ns more per call (the funnel's gradient in a
    tight loop: 29 against 7.5 ns); inlined, 9.7 ns. Inside NUTS the packed path still costs
    12-15% per gradient on the cheapest targets (a 100-d Gaussian: 419-435 against 372-395 ns
    with kernels compiled per data layout), nothing on costly ones (logistic regression).

    When ``fn`` is importable by name (the built-in targets; a user's module-level function),
    the adapter is written to a small file and compiled with ``cache=True``, so it compiles
    once per (function, layout) rather than once per process (see ``_cached_adapter``)."""
    options = {k: v for k, v in fn.targetoptions.items() if k in ("error_model", "fastmath", "boundscheck")}
    cached = _cached_adapter(fn, layout, batch, options)
    if cached is not None:
        return cached
    inlined = numba.njit(inline="always", **options)(fn.py_func)
    namespace: dict = {}
    exec(compile(_adapter_source(layout, batch), f"<kernel_form of {getattr(fn, '__name__', 'logp_grad')}>", "exec"),
         {"fn": inlined}, namespace)
    signature = logp_grad_batch_signature(PACKED) if batch else logp_grad_signature(PACKED)
    if getattr(fn, "allocates", False):
        # known to need the runtime (a compiled PyTensor graph returns new arrays): no attempt
        # without it, whose failed typing Numba keeps for the same overloads and the retry meets
        return numba.njit(signature, nogil=True, **options)(namespace["adapter"])
    try:
        # no reference counting: with it, every view's count is raised and lowered on every
        # call, atomically, on a buffer all chains share (measured: NUTS on a 100-d Gaussian
        # 20% slower per gradient than before the packing; without it, as before)
        return numba.njit(signature, nogil=True, _nrt=False, **options)(namespace["adapter"])
    except numba.core.errors.NumbaError:  # the function allocates: it needs the runtime
        return numba.njit(signature, nogil=True, **options)(namespace["adapter"])


def _adapter_source(layout: tuple, batch: bool) -> str:
    extra = ", rows, scale" if batch else ""
    return (
        f"def adapter(theta, grad_out, packed{extra}):\n"
        f"    f, i = packed\n"
        f"    return fn(theta, grad_out, {_unpack_expression(layout)}{extra})\n"
    )


KERNEL_FORM_DIR = Path(__file__).parent / "__pycache__" / "kernel_forms"
"""Where adapters of importable functions are written, to be cached by Numba beside them
(``make clean-cache`` removes the folder with the other caches)."""


def _cached_adapter(fn, layout: tuple, batch: bool, options: dict):
    """The adapter as a generated module compiled with ``cache=True``, or None when ``fn`` is
    not importable by name (a closure, a compiled PyMC graph) or the folder is not writable.

    Numba caches only functions defined in a file, and it checks only that file's time stamp:
    so the file's name carries a hash of its source and of everything ``fn``'s compiled code
    depends on (:func:`~workbench.fingerprint.dependency_digest`: its code, the globals, callees
    and closure values it reads, recursively), and a changed function or global gets a new
    file, which replaces the old one. A function with a dependency that cannot be fingerprinted
    is compiled in memory.
    Measured: the BNN's adapter compiles in 2.2 s and loads in 0.01 s; a quick ``make report``
    compiled 29 adapters in its main process alone."""
    py = getattr(fn, "py_func", None)
    module = getattr(py, "__module__", None)
    qualname = getattr(py, "__qualname__", "")
    if py is None or not module or "<" in qualname or "." in qualname or getattr(fn, "allocates", False):
        return None
    mod = sys.modules.get(module)
    source_file = getattr(mod, "__file__", None)
    if getattr(mod, qualname, None) is not fn or not source_file or not os.path.exists(source_file):
        return None
    signature = "logp_grad_batch_signature(PACKED)" if batch else "logp_grad_signature(PACKED)"
    # a set's repr follows string hashing, which differs between processes: spelled out sorted
    opts = ", ".join(f"{k}={f'set({sorted(v)!r})' if isinstance(v, (set, frozenset)) else repr(v)}"
                     for k, v in sorted(options.items()))
    body = _adapter_source(layout, batch)

    def source(runtime: bool) -> str:
        return (
            "# generated by workbench.jit.compile_kernel_form: the adapter of one target function\n"
            "import numba\n"
            "from workbench.jit import PACKED, logp_grad_batch_signature, logp_grad_signature\n"
            f"from {module} import {qualname} as _fn\n\n"
            f"fn = numba.njit(inline='always', {opts})(_fn.py_func)\n\n\n"
            f"@numba.njit({signature}, nogil=True, cache=True{'' if runtime else ', _nrt=False'}, {opts})\n"
            + body
        )

    # the function as this process loaded it, and every global, callee and closure value its
    # compiled code freezes (fingerprint.py): a changed global is a new version, not a stale one
    fn_digest = dependency_digest(fn)
    if fn_digest is None:  # a dependency that cannot be fingerprinted: compile in memory
        return None
    try:
        KERNEL_FORM_DIR.mkdir(parents=True, exist_ok=True)
        for runtime in (False, True):  # without Numba's runtime unless fn allocates (as above)
            text = source(runtime)
            # which adapter (function, layout, options), then which version of the function
            identity = hashlib.sha256(text.encode()).hexdigest()[:12]
            version = hashlib.sha256((fn_digest + numba.__version__).encode()).hexdigest()[:8]
            name = f"kernel_form_{identity}_{version}"
            path = KERNEL_FORM_DIR / f"{name}.py"
            needs_runtime = path.with_suffix(".needs_runtime")
            if not runtime and needs_runtime.exists():
                continue
            if not path.exists():
                _remove_other_versions(identity, name)
                tmp = path.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_text(text)
                os.replace(tmp, path)  # atomic: workers may write the same file at once
            try:
                return _import_file(name, path).adapter
            except numba.core.errors.NumbaError:
                if runtime:
                    raise
                needs_runtime.touch()
    except OSError:  # a read-only install: compile in memory
        return None
    return None


def _remove_other_versions(identity: str, keep: str) -> None:
    """Delete the adapters (and Numba's cache of them) of earlier versions of the same function,
    layout and options: every edit of a target's function, and every upgrade, writes a new one,
    and the old ones would pile up. A process still running an old version has it loaded."""
    for folder in (KERNEL_FORM_DIR, KERNEL_FORM_DIR / "__pycache__"):
        for old in folder.glob(f"kernel_form_{identity}_*"):
            if old.name.split(".")[0] != keep:
                old.unlink(missing_ok=True)  # another process may have removed it first


def _import_file(name: str, path: Path):
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    # registered first: Numba names a function's module by looking it up, and a cached
    # function's environment is rebuilt by importing that name
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


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
# of the (tasks, 2) array ``methods.base.run_in_threads`` polls): the kernel writes its
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
