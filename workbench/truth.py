"""What is known exactly about a target (:class:`Truth`): its moments, log Z, an exact
sampler, its marginals, or the reference draws that stand in for them."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import TargetError


@dataclass(frozen=True)
class Truth:
    """What is known exactly about a target (any field may be None when it is not known).

    Attributes
    ----------
    mean, sd : ndarray (d,)
        Exact mean and marginal standard deviations.
    log_z : float
        log of the normalising constant of ``exp(logp)`` as the target's ``logp_grad``
        computes it (0 when ``logp_grad`` is normalised).
    sampler : callable ``(rng, n) -> ndarray (n, d)``
        Exact i.i.d. sampler.
    marginal_pdf_fn, marginal_cdf_fn : callable ``(k, x) -> ndarray``
        Density and distribution function of coordinate ``k``, vectorised over ``x``.
    cov_fn : callable ``() -> ndarray (d, d)``
        Builds the dense covariance on demand (targets stay usable at d = 10,000 without it).
    extras : mapping
        Target-specific facts, e.g. ``component_weights`` and ``assign_component`` for
        mixtures (used by the mode-weight metric).
    source : str
        ``"exact"`` (closed form) or ``"reference"`` (long-run reference draws stand in).
    """

    mean: np.ndarray | None = None
    sd: np.ndarray | None = None
    log_z: float | None = None
    sampler: Callable[[np.random.Generator, int], np.ndarray] | None = None
    marginal_pdf_fn: Callable[[int, np.ndarray], np.ndarray] | None = None
    marginal_cdf_fn: Callable[[int, np.ndarray], np.ndarray] | None = None
    cov_fn: Callable[[], np.ndarray] | None = None
    extras: Mapping[str, Any] = field(default_factory=dict)
    source: str = "exact"

    @functools.cached_property
    def cov(self) -> np.ndarray | None:
        """Dense covariance (d, d), built on first access; None if unknown."""
        if self.cov_fn is not None:
            return self.cov_fn()
        return None

    def sample(self, n: int, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """``n`` exact i.i.d. draws, shape (n, d)."""
        if self.sampler is None:
            raise TargetError("this target has no exact sampler")
        return self.sampler(np.random.default_rng(rng), int(n))

    def marginal_pdf(self, k: int, x) -> np.ndarray:
        """Density of coordinate ``k`` at ``x`` (vectorised)."""
        if self.marginal_pdf_fn is None:
            raise TargetError("this target has no exact marginal densities")
        return self.marginal_pdf_fn(self._coordinate(k), np.asarray(x, dtype=float))

    def marginal_cdf(self, k: int, x) -> np.ndarray:
        """Distribution function of coordinate ``k`` at ``x`` (vectorised)."""
        if self.marginal_cdf_fn is None:
            raise TargetError("this target has no exact marginal distribution functions")
        return self.marginal_cdf_fn(self._coordinate(k), np.asarray(x, dtype=float))

    def _coordinate(self, k) -> int:
        d = None if self.mean is None else np.size(self.mean)
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0 or (d is not None and k >= d):
            raise TargetError(f"coordinate k must be an integer in [0, {d}), got {k!r}")
        return int(k)
