"""Real data sets for the regression targets: scikit-learn's bundled copies, loaded offline.

scikit-learn ships these files inside its package, so nothing is downloaded. Features are
standardised (mean 0, sd 1) and an intercept column is prepended.
"""

from __future__ import annotations

import functools
import hashlib

import numpy as np


def _standardise(a: np.ndarray) -> np.ndarray:
    return (a - a.mean(axis=0)) / a.std(axis=0)


@functools.cache
def diabetes() -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """Diabetes (Efron et al. 2004): X (442, 11) with intercept, y standardised, names."""
    from sklearn.datasets import load_diabetes

    raw = load_diabetes(scaled=False)
    X = np.column_stack([np.ones(raw.data.shape[0]), _standardise(raw.data)])
    y = _standardise(raw.target.astype(float))
    return X, y, ("intercept", *raw.feature_names)


@functools.cache
def breast_cancer() -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """Breast cancer Wisconsin: X (569, 31) with intercept, y in {0, 1} (1 = benign), names."""
    from sklearn.datasets import load_breast_cancer

    raw = load_breast_cancer()
    X = np.column_stack([np.ones(raw.data.shape[0]), _standardise(raw.data)])
    names = ("intercept", *(n.replace(" ", "_") for n in raw.feature_names))
    return X, raw.target.astype(float), names


def digest(*arrays: np.ndarray) -> str:
    """A short content hash of arrays (identifies custom data in study caches)."""
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str((a.shape, a.dtype.str)).encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]
