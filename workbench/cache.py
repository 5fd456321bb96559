"""The on-disk cache of study cells and reference posteriors: one JSON (row or info, status,
error) and one .npz (arrays: a cell's small arrays for the figures, a reference's draws) per
entry, named by a hash of its inputs (``spec_hash``).

Writes are atomic (a temporary file renamed into place), so a study killed at any moment
leaves only complete entries: it resumes where it stopped and loses nothing computed.
An entry damaged afterwards (a JSON replaced by garbage or ``{}``, a truncated or deleted
``.npz``) is treated as missing: :meth:`CellCache.get` warns with a :class:`CacheWarning`
naming the file, deletes the entry and returns None, so the caller recomputes it.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import math
import os
import tempfile
import warnings
import zipfile
from pathlib import Path

import numpy as np

from .errors import CacheWarning


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """A hash of the library's own source (every ``.py`` file under ``workbench/``): part of
    every cache key, so a cell or reference computed by other code, even under the same
    version number, is computed again rather than reused (a changed default, a fixed bug).
    Files under ``__pycache__`` are not source: the adapters ``jit.py`` writes there are not."""
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.relative_to(root).parts):
        h.update(path.relative_to(root).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


def package_version() -> str:
    """The installed package's version (``0+unknown`` when running from a bare source tree)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("workbench")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0+unknown"


def code_version() -> str:
    """The version part of every cache key (study cells, references): the package version and
    the digest of its code."""
    return f"{package_version()}+{code_digest()}"


def data_digest(target) -> str:
    """A hash of a target's data arrays: a user's target is identified by its data too."""
    h = hashlib.sha256()
    for a in target.data:
        a = np.ascontiguousarray(a)
        h.update(str((a.dtype, a.shape)).encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def object_digest(obj) -> str:
    """A hash of an object's content (its arrays' bytes, its numbers and strings, the
    qualified names of its functions, its attributes' in turn): two objects of one type with
    different contents get different digests, so a cache key never tells them apart by type
    name alone."""
    h = hashlib.sha256()

    def feed(value, depth=0):
        if depth > 6:
            h.update(b"...")
        elif isinstance(value, np.ndarray):
            h.update(str((value.dtype, value.shape)).encode())
            h.update(np.ascontiguousarray(value).tobytes())
        elif value is None or isinstance(value, (bool, int, float, complex, str, bytes, np.generic)):
            h.update(repr(value).encode())
        elif isinstance(value, (list, tuple)):
            h.update(f"{type(value).__name__}[{len(value)}]".encode())
            for v in value:
                feed(v, depth + 1)
        elif isinstance(value, dict):
            for k in sorted(value, key=repr):
                h.update(repr(k).encode())
                feed(value[k], depth + 1)
        elif inspect.isroutine(value) or isinstance(value, type) or hasattr(value, "py_func"):
            fn = getattr(value, "py_func", value)  # a Numba dispatcher: its Python function
            h.update(f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', repr(fn))}".encode())
        else:
            h.update(f"{type(value).__module__}.{type(value).__qualname__}".encode())
            fields = getattr(value, "__dict__", None)
            if fields is None and hasattr(value, "__slots__"):
                fields = {k: getattr(value, k) for k in value.__slots__ if hasattr(value, k)}
            if fields is None:
                h.update(repr(value).encode())
            else:
                feed({k: v for k, v in fields.items() if not k.startswith("__")}, depth + 1)

    feed(obj)
    return h.hexdigest()[:12]


def spec_hash(fields: dict) -> str:
    """A stable 16-hex-digit hash of a JSON-able dict (key order does not matter)."""
    text = json.dumps(fields, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        v = float(value)
        return v if math.isfinite(v) else repr(v)  # JSON has no NaN; "nan" / "inf" round-trip
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    return value


def _unjson(value):
    if isinstance(value, dict):
        return {k: _unjson(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unjson(v) for v in value]
    if value in ("nan", "inf", "-inf"):
        return float(value)
    return value


def _atomic_write(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class CellCache:
    """Entries of one study under ``root/<study>/``."""

    def __init__(self, root: str | os.PathLike, study: str):
        self.dir = Path(root) / study
        self.dir.mkdir(parents=True, exist_ok=True)

    def _json(self, key: str) -> Path:
        return self.dir / f"{key}.json"

    def _npz(self, key: str) -> Path:
        return self.dir / f"{key}.npz"

    def has(self, key: str) -> bool:
        return self.get(key) is not None

    def get(self, key: str) -> dict | None:
        """The entry stored under ``key``, or None when there is none or it is damaged (then
        it is deleted, with a :class:`CacheWarning` that names the file and what is wrong)."""
        path = self._json(key)
        try:
            with open(path, "rb") as f:
                entry = _unjson(json.loads(f.read().decode("utf-8")))
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            return self._damaged(key, path, f"it is not readable JSON ({type(exc).__name__})")
        if not isinstance(entry, dict) or not isinstance(entry.get("status"), str):
            return self._damaged(key, path, "it has no status (not an entry this cache wrote)")
        problem = self._arrays_problem(key, entry.get("arrays"))
        if problem:
            return self._damaged(key, self._npz(key), problem)
        return entry

    def _arrays_problem(self, key: str, names) -> str:
        """What is wrong with the entry's .npz ('' if nothing). ``names``: the arrays the JSON
        says were written (None for entries written before it said so)."""
        path = self._npz(key)
        if not path.exists():
            return f"it has lost its arrays {sorted(names)} (the .npz is missing)" if names else ""
        try:
            with zipfile.ZipFile(path) as z:
                bad = z.testzip()  # reads every member and checks its CRC
                stored = {n[:-4] for n in z.namelist() if n.endswith(".npy")}
        except (OSError, zipfile.BadZipFile, EOFError, ValueError) as exc:
            return f"it is not a readable .npz ({type(exc).__name__}: {exc})"
        if bad is not None:
            return f"it has a corrupt member, {bad}"
        lacking = sorted(set(names or ()) - stored)
        return f"it lacks the arrays {lacking}" if lacking else ""

    def _damaged(self, key: str, path: Path, problem: str) -> None:
        warnings.warn(f"cache entry {path} is unusable: {problem}; it is dropped and will be recomputed",
                      CacheWarning, stacklevel=3)
        self.drop(key)
        return None

    def put(self, key: str, entry: dict, arrays: dict | None = None) -> None:
        if arrays:  # arrays first: an entry whose JSON exists is complete
            _atomic_write(self._npz(key), lambda f: np.savez_compressed(f, **arrays))
        else:  # a stale .npz of an earlier entry must not pass as this one's
            self._npz(key).unlink(missing_ok=True)
        entry = {**entry, "arrays": sorted(arrays) if arrays else []}
        text = json.dumps(_jsonable(entry), sort_keys=True, indent=1).encode()
        _atomic_write(self._json(key), lambda f: f.write(text))

    def arrays(self, key: str) -> dict:
        """The entry's arrays ({} when it has none). A file damaged since :meth:`get` checked
        it gives {} and a :class:`CacheWarning` (the figures then lack that cell)."""
        path = self._npz(key)
        if not path.exists():
            return {}
        try:
            with np.load(path) as z:
                return {k: z[k] for k in z.files}
        except (OSError, zipfile.BadZipFile, EOFError, ValueError) as exc:
            warnings.warn(f"cache entry {path} is unreadable ({type(exc).__name__}: {exc}); its arrays are left out",
                          CacheWarning, stacklevel=2)
            return {}

    def drop(self, key: str) -> None:
        for suffix in (".json", ".npz"):
            (self.dir / f"{key}{suffix}").unlink(missing_ok=True)
