"""The on-disk cache of study cells and reference posteriors: one JSON (row or info, status,
error) and one .npz (arrays: a cell's small arrays for the figures, a reference's draws) per
entry, named by a hash of its inputs (``spec_hash``).

Writes are atomic (a temporary file renamed into place), so a study killed at any moment
leaves only complete entries: it resumes where it stopped and loses nothing computed.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from pathlib import Path

import numpy as np


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

    def has(self, key: str) -> bool:
        return self._json(key).exists()

    def get(self, key: str) -> dict | None:
        try:
            with open(self._json(key), encoding="utf-8") as f:
                return _unjson(json.load(f))
        except (FileNotFoundError, json.JSONDecodeError):
            return None

    def put(self, key: str, entry: dict, arrays: dict | None = None) -> None:
        if arrays:  # arrays first: an entry whose JSON exists is complete
            _atomic_write(self.dir / f"{key}.npz", lambda f: np.savez_compressed(f, **arrays))
        text = json.dumps(_jsonable(entry), sort_keys=True, indent=1).encode()
        _atomic_write(self._json(key), lambda f: f.write(text))

    def arrays(self, key: str) -> dict:
        path = self.dir / f"{key}.npz"
        if not path.exists():
            return {}
        with np.load(path) as z:
            return {k: z[k] for k in z.files}

    def drop(self, key: str) -> None:
        for suffix in (".json", ".npz"):
            (self.dir / f"{key}{suffix}").unlink(missing_ok=True)
