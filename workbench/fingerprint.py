"""What a compiled function's machine code depends on, as one digest.

Numba freezes a jitted function's globals when it compiles it: a global number or array
becomes a constant, a global jitted function is compiled into the caller with *its* globals
frozen in turn. Its on-disk cache checks only the function's own file, so a density whose
code is unchanged while a global it reads has changed (a scale read from the command line, a
wrapper whose callee is chosen at run time) would be served from the old compile: a silent
wrong answer. :func:`dependency_digest` hashes everything the compiled code can freeze:

- the function's code (bytecode, names, constants, nested functions) and its source file;
- every global it reads, resolved through attribute chains (``cfg.SCALE``, ``np.pi``): numbers,
  strings, tuples and arrays by value, jitted and plain functions recursively (their code,
  their globals, their closure cells and default values), library modules and functions by
  name;
- its closure cells and default argument values.

A value it cannot vouch for (an arbitrary object, a class of the user's) makes the digest
``None``: the caller then must not cache (``jit.kernel_form`` compiles in memory instead).
"""

from __future__ import annotations

import builtins
import dis
import hashlib
import types as pytypes
from pathlib import Path

import numpy as np

# packages whose functions, classes and modules are identified by name: their code changes only
# with their version, which every cache key of the library already includes (Numba's, NumPy's)
STABLE_PACKAGES = frozenset({"numpy", "math", "cmath", "numba", "llvmlite", "scipy", "operator", "builtins"})

# instructions that read an attribute of what the previous one loaded (Python 3.12)
_ATTRIBUTE_OPS = frozenset({"LOAD_ATTR", "LOAD_METHOD"})


class _Unknown(Exception):
    """A dependency whose value cannot be fingerprinted."""


def dependency_digest(fn) -> str | None:
    """A hex digest of ``fn``'s code and of every value its compiled code depends on (see the
    module docstring), or None when some dependency cannot be fingerprinted."""
    h = hashlib.sha256()
    try:
        _feed_function(fn, h, set())
    except _Unknown:
        return None
    return h.hexdigest()[:16]


def _top_package(module_name: str | None) -> str:
    return (module_name or "").split(".")[0]


def _is_stable(value) -> bool:
    module = value.__name__ if isinstance(value, pytypes.ModuleType) else getattr(value, "__module__", None)
    return _top_package(module) in STABLE_PACKAGES


def _feed_function(fn, h, seen: set) -> None:
    py = getattr(fn, "py_func", fn)  # a Numba dispatcher: its Python function
    code = getattr(py, "__code__", None)
    if code is None:
        raise _Unknown(fn)
    name = f"{getattr(py, '__module__', '')}.{getattr(py, '__qualname__', '')}"
    h.update(f"function {name}".encode())
    if id(py) in seen:  # recursion (a function calling itself or a mutual pair)
        return
    seen.add(id(py))
    options = getattr(fn, "targetoptions", None)
    if options:
        # a set's repr follows string hashing, which differs between processes: sorted
        h.update(repr(sorted((k, repr(sorted(v)) if isinstance(v, (set, frozenset)) else repr(v))
                             for k, v in options.items() if k != "cache")).encode())
    source = getattr(code, "co_filename", "")
    if source and Path(source).is_file():
        # the file too: an @overload or a helper registered there changes what the name compiles to
        h.update(Path(source).read_bytes())
    namespace = getattr(py, "__globals__", {})
    for code_object in _code_objects(code):
        h.update(_code_bytes(code_object))
        for chain in _global_reads(code_object):
            h.update(("global " + ".".join(chain)).encode())
            _feed_value(_resolve(chain, namespace), h, seen)
    for cell in getattr(py, "__closure__", None) or ():
        try:
            contents = cell.cell_contents
        except ValueError:  # an empty cell: nothing is frozen from it
            continue
        _feed_value(contents, h, seen)
    for default in (getattr(py, "__defaults__", None) or ()):
        _feed_value(default, h, seen)
    for key, default in sorted((getattr(py, "__kwdefaults__", None) or {}).items()):
        h.update(key.encode())
        _feed_value(default, h, seen)


def _code_objects(code):
    """``code`` and the code of the functions defined inside it."""
    yield code
    for const in code.co_consts:
        if isinstance(const, pytypes.CodeType):
            yield from _code_objects(const)


def _code_bytes(code) -> bytes:
    """What a code object computes (bytecode, names, constants), the same in every process."""
    consts = [c for c in code.co_consts if not isinstance(c, pytypes.CodeType)]
    return b"\0".join([code.co_code, repr(code.co_names).encode(), repr(consts).encode()])


def _global_reads(code) -> list[tuple[str, ...]]:
    """Each global the code reads, with the attributes read off it right after (``np.pi`` ->
    ("np", "pi")), in order."""
    chains, current = [], None
    for ins in dis.get_instructions(code):
        if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
            if current:
                chains.append(tuple(current))
            current = [ins.argval]
        elif ins.opname in _ATTRIBUTE_OPS and current is not None:
            current.append(ins.argval)
        else:
            if current:
                chains.append(tuple(current))
            current = None
    if current:
        chains.append(tuple(current))
    return chains


_MISSING = object()


def _resolve(chain: tuple, namespace: dict):
    """The value a chain of names reads: the global, then each attribute while it is a module or
    a class (an attribute of anything else is read from a value already fingerprinted)."""
    value = namespace.get(chain[0], _MISSING)
    if value is _MISSING:
        value = getattr(builtins, chain[0], _MISSING)
    if value is _MISSING:
        return ("undefined", chain[0])  # Numba fails to compile it: nothing to freeze
    for attribute in chain[1:]:
        if not isinstance(value, (pytypes.ModuleType, type)):
            break
        nxt = getattr(value, attribute, _MISSING)
        if nxt is _MISSING:
            break
        value = nxt
    return value


def _feed_value(value, h, seen: set) -> None:
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        h.update(f"{type(value).__name__}:{value!r}".encode())
    elif isinstance(value, np.generic):
        h.update(f"{value.dtype}:{value!r}".encode())
    elif isinstance(value, np.ndarray):
        h.update(f"array {value.dtype} {value.shape}".encode())
        h.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, tuple):
        h.update(f"tuple {len(value)}".encode())
        for item in value:
            _feed_value(item, h, seen)
    elif isinstance(value, pytypes.ModuleType):
        h.update(f"module {value.__name__}".encode())
    elif hasattr(value, "py_func") or isinstance(value, pytypes.FunctionType):
        if _is_stable(value) and not hasattr(value, "py_func"):
            h.update(f"stable {value.__module__}.{value.__qualname__}".encode())
        else:
            _feed_function(value, h, seen)
    elif _is_stable(value) and (callable(value) or isinstance(value, type)):
        # a NumPy ufunc, a math builtin, a Numba type or intrinsic: identified by its name
        h.update(f"stable {type(value).__name__} {getattr(value, '__module__', '')} "
                 f"{getattr(value, '__qualname__', getattr(value, '__name__', repr(value)))}".encode())
    elif _top_package(type(value).__module__) == "numba":  # a Numba type instance (float64, ...)
        h.update(f"numba {value!r}".encode())
    else:
        raise _Unknown(value)

