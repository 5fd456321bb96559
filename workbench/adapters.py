"""How a target's density reaches the compiled kernels: its data packed into two buffers, and
the small *adapter* compiled for each target function that unpacks them and calls it.

Kernels take the target's function as a first-class function of one fixed signature,
``float64(float64[::1], float64[::1], PACKED)`` (``jit.py`` says why: one compile of each
kernel serves every target and is cached on disk). A target's arrays are packed into a float64
and an int64 buffer (:func:`pack_data`); its adapter (:func:`kernel_form`) cuts them back into
the user's arrays (views, no copy) and runs the user's ``logp_grad``, inlined.

A user's density that raises at a proposal (a float division by an underflowed scale) is
caught in its adapter and handed to ``density_faults.record``: an arithmetic fault during a run
is a rejection (log p = -inf), anything else raises the user's exception at the boundary.
The library's own densities (NumPy's error model: they return inf or NaN, never raise) are
compiled without that branch.
"""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import os
import sys
import warnings
from pathlib import Path
from typing import NamedTuple

import numba
import numpy as np

from . import density_faults
from .errors import DensityFault
from .fingerprint import dependency_digest
from .jit import PACKED, logp_grad_batch_signature, logp_grad_signature


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
    # an empty buffer still owns an allocation: a run's density faults are matched by its address
    fbuf = np.concatenate(floats) if floats else np.zeros(1)[:0]
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
    runtime unless ``fn`` allocates. Calling ``fn``'s separately compiled code instead costs
    about 20 ns more per call; inlined, the packing costs nothing measurable on costly
    densities and a little on the cheapest (``docs/benchmarks.md``).

    A user's function (anything but the library's own NumPy-error-model densities) is called
    inside ``try``, and not inlined: Numba's ``try`` catches what a call raises, but not a raise
    inlined inside a loop. Measured in a tight loop (d = 2, 10, 100): the call inside ``try``
    costs 4-6 ns more than the inlined code (a call without ``try``, 15-25 ns). An exception it
    raises goes to ``density_faults.record`` (module docstring).

    When ``fn`` is importable by name (the built-in targets; a user's module-level function),
    the adapter is written to a small file and compiled with ``cache=True``, so it compiles
    once per (function, layout) rather than once per process (see ``_cached_adapter``)."""
    options = {k: v for k, v in fn.targetoptions.items() if k in ("error_model", "fastmath", "boundscheck")}
    catches = _catches_faults(fn)
    cached = _cached_adapter(fn, layout, batch, options, catches)
    if cached is not None:
        return cached
    key = f"in-memory-{next(_IN_MEMORY)}"
    if catches:
        density_faults.register_source(key, fn, _rebuild(layout))
    source = _adapter_source(layout, batch, catches, key)
    signature = logp_grad_batch_signature(PACKED) if batch else logp_grad_signature(PACKED)

    def compiled(runtime: bool):
        # a fresh copy of fn each time: Numba keeps a failed typing for the same function, and a
        # retry with the runtime would meet it
        inlined = numba.njit(**({} if catches else {"inline": "always"}), **options)(fn.py_func)
        namespace: dict = {}
        exec(compile(source, f"<kernel_form of {getattr(fn, '__name__', 'logp_grad')}>", "exec"),
             {"__name__": "kernel_form_in_memory", "fn": inlined, "np": np, "numba": numba,
              "_record_fault": density_faults.record, "DensityFault": DensityFault}, namespace)
        return numba.njit(signature, nogil=True, **({} if runtime else {"_nrt": False}), **options)(namespace["adapter"])

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_OBJECT_MODE_WARNING)
        if getattr(fn, "allocates", False):  # known to need the runtime (a compiled PyTensor graph)
            return compiled(runtime=True)
        try:
            # no reference counting: with it, every view's count is raised and lowered on every
            # call, atomically, on a buffer all chains share (NUTS on a 100-d Gaussian was 20%
            # slower per gradient with it)
            return compiled(runtime=False)
        except numba.core.errors.NumbaError:  # the function allocates: it needs the runtime
            return compiled(runtime=True)


_IN_MEMORY = itertools.count()
# the fault branch enters Numba's object mode (only when the density raised): Numba warns that such
# a block holds the GIL, which is what it should do there (silenced here and, for the compile at a
# density's first fault, by the package's own filter: workbench/__init__.py)
_OBJECT_MODE_WARNING = ".*object mode won't allow parallel execution.*"


def _catches_faults(fn) -> bool:
    """Whether ``fn``'s adapter catches its exceptions: every function but the library's own
    densities compiled with NumPy's error model (they cannot raise; the branch is skipped)."""
    module = getattr(getattr(fn, "py_func", fn), "__module__", "") or ""
    library = module == "workbench" or module.startswith("workbench.")
    return not (library and fn.targetoptions.get("error_model") == "numpy")


def _rebuild(layout: tuple):
    """``(float buffer, int buffer) -> the user's data tuple`` for ``layout`` (Python-side views)."""

    def rebuild(f, i):
        items = []
        for kind, offset, shape in layout:
            buf = f if kind == "f" else i
            if shape == WHOLE:
                items.append(buf)
            else:
                size = int(np.prod(shape, dtype=np.int64))
                items.append(buf[offset: offset + size].reshape(shape))
        return tuple(items)

    return rebuild


def _adapter_source(layout: tuple, batch: bool, catches: bool = False, key: str = "") -> str:
    extra = ", rows, scale" if batch else ""
    call = f"fn(theta, grad_out, {_unpack_expression(layout)}{extra})"
    if not catches:
        return f"def adapter(theta, grad_out, packed{extra}):\n    f, i = packed\n    return {call}\n"
    rows = "rows.ctypes.data, rows.size, scale" if batch else "0, -1, 0.0"
    raises = "".join(f"    if code == {code}:\n        raise {cls.__name__}({density_faults.FAULT_MESSAGE!r})\n"
                     for code, cls in density_faults.RAISE_CLASSES.items() if cls.__module__ == "builtins")
    return (
        f"def adapter(theta, grad_out, packed{extra}):\n"
        f"    f, i = packed\n"
        f"    try:\n"
        f"        value = {call}\n"
        f"        # +inf is an overflow far out, not a density: a fault like NaN (weight zero, a rejection)\n"
        f"        return np.nan if value == np.inf else value\n"
        f"    except Exception:\n"
        f"        pass\n"
        f"    # the density raised: density_faults.record says whether it is a rejection\n"
        f"    point, dim, fa, fn_, ia, in_ = theta.ctypes.data, theta.size, f.ctypes.data, f.size, i.ctypes.data, i.size\n"
        f"    with numba.objmode(code='int64'):\n"
        f"        code = _record_fault({key!r}, point, dim, fa, fn_, ia, in_, {rows})\n"
        + raises +
        f"    if code != 0:\n"
        f"        raise DensityFault({density_faults.FAULT_MESSAGE!r})\n"
        f"    for k in range(grad_out.size):\n"
        f"        grad_out[k] = np.nan\n"
        f"    return -np.inf\n"
    )


KERNEL_FORM_DIR = Path(__file__).parent / "__pycache__" / "kernel_forms"
"""Where adapters of importable functions are written, to be cached by Numba beside them
(``make clean-cache`` removes the folder with the other caches)."""


def _cached_adapter(fn, layout: tuple, batch: bool, options: dict, catches: bool = False):
    """The adapter as a generated module compiled with ``cache=True``, or None when ``fn`` is
    not importable by name (a closure, a compiled PyMC graph) or the folder is not writable.

    Numba caches only functions defined in a file, and it checks only that file's time stamp:
    so the file's name carries a hash of its source and of everything ``fn``'s compiled code
    depends on (:func:`~workbench.fingerprint.dependency_digest`: its code, the globals, callees
    and closure values it reads, recursively), and a changed function or global gets a new
    file, which replaces the old one. A function with a dependency that cannot be fingerprinted
    is compiled in memory (an adapter compiles in seconds and loads from disk in milliseconds)."""
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
    # the fault branch's name for this adapter: the same in every process (the file is cached)
    key = "cached-" + hashlib.sha256(repr((module, qualname, layout, batch)).encode()).hexdigest()[:16]
    body = _adapter_source(layout, batch, catches, key)

    def source(runtime: bool) -> str:
        return (
            "# generated by workbench.adapters.compile_kernel_form: the adapter of one target function\n"
            "import numba\n"
            "import numpy as np\n"
            "from workbench.density_faults import record as _record_fault\n"
            "from workbench.errors import DensityFault\n"
            "from workbench.jit import PACKED, logp_grad_batch_signature, logp_grad_signature\n"
            f"from {module} import {qualname} as _fn\n\n"
            f"fn = numba.njit({'' if catches else 'inline=' + repr('always') + ', '}{opts})(_fn.py_func)\n\n\n"
            f"@numba.njit({signature}, nogil=True, cache=True{'' if runtime else ', _nrt=False'}, {opts})\n"
            + body
        )

    # the function as this process loaded it, and every global, callee and closure value its
    # compiled code freezes (fingerprint.py): a changed global is a new version, not a stale one
    fn_digest = dependency_digest(fn)
    if fn_digest is None:  # a dependency that cannot be fingerprinted: compile in memory
        return None
    if catches:
        density_faults.register_source(key, fn, _rebuild(layout))
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
                with warnings.catch_warnings():
                    warnings.filterwarnings("ignore", message=_OBJECT_MODE_WARNING)
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
