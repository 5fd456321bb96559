"""The reference distribution p0 an SMC run starts from, in the form its kernels use.

p0 must be normalised (its integral is the Z_0 = 1 the evidence is measured against), easy
to sample, and have a log density and gradient cheap enough to evaluate beside the
target's at every leapfrog step. A Gaussian N(m, S) is all three; the kernels get its
mean and its precision S^-1, stored as one row (1, d) when S is diagonal (O(d) per
evaluation) and as the full (d, d) matrix otherwise (O(d^2)).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import linalg

from ..approximations import Gaussian, LowRankGaussian, StudentT
from ..numerics import LOG_2PI

DENSE_LIMIT = 2000
"""The largest dimension for a reference with a full covariance ((d, d) precision)."""


class GaussianReference(NamedTuple):
    """N(mean, S) for the kernels: ``precision`` is S^-1, (1, d) if diagonal else (d, d)."""

    mean: np.ndarray
    precision: np.ndarray
    log_norm: float
    chol: np.ndarray  # lower Cholesky factor of S, (d, d), or the sds (1, d) when diagonal
    description: str

    @property
    def dim(self) -> int:
        return self.mean.size

    @property
    def diagonal(self) -> bool:
        return self.precision.shape[0] == 1

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        z = rng.standard_normal((n, self.dim))
        if self.diagonal:
            return np.ascontiguousarray(self.mean + z * self.chol[0])
        return np.ascontiguousarray(self.mean + z @ self.chol.T)

    def logpdf(self, x: np.ndarray) -> np.ndarray:
        r = np.atleast_2d(x) - self.mean
        if self.diagonal:
            q = np.sum(r * r * self.precision[0], axis=1)
        else:
            q = np.einsum("ni,ij,nj->n", r, self.precision, r)
        return self.log_norm - 0.5 * q


def diagonal_gaussian(mean, sd, description: str) -> GaussianReference:
    """N(mean, diag(sd^2))."""
    mean = np.ascontiguousarray(mean, dtype=float)
    sd = np.broadcast_to(np.asarray(sd, dtype=float), mean.shape)
    if not (np.all(np.isfinite(sd)) and np.all(sd > 0) and np.all(np.isfinite(mean))):
        raise ValueError(f"the reference's mean must be finite and its sds positive and finite ({description})")
    log_norm = -0.5 * mean.size * LOG_2PI - float(np.sum(np.log(sd)))
    return GaussianReference(mean, np.ascontiguousarray((1.0 / sd**2)[None, :]), log_norm,
                             np.ascontiguousarray(sd[None, :]), description)


def gaussian(mean, cov, description: str) -> GaussianReference:
    """N(mean, cov); a diagonal cov is stored as its diagonal."""
    mean = np.ascontiguousarray(mean, dtype=float)
    cov = np.asarray(cov, dtype=float)
    d = mean.size
    if cov.shape != (d, d):
        raise ValueError(f"the reference's covariance has shape {cov.shape}, expected ({d}, {d})")
    if not (np.all(np.isfinite(cov)) and np.all(np.isfinite(mean))):
        raise ValueError(f"the reference's mean and covariance must be finite ({description})")
    if np.count_nonzero(cov - np.diag(np.diag(cov))) == 0:
        return diagonal_gaussian(mean, np.sqrt(np.diag(cov)), description)
    if d > DENSE_LIMIT:
        raise ValueError(f"a reference with a full covariance is limited to d <= {DENSE_LIMIT} (got d = {d}); "
                         "give a diagonal one")
    try:
        chol = linalg.cholesky(0.5 * (cov + cov.T), lower=True)
    except linalg.LinAlgError:
        raise ValueError(f"the reference's covariance is not positive definite ({description})") from None
    inv_chol = linalg.solve_triangular(chol, np.eye(d), lower=True)
    precision = np.ascontiguousarray(inv_chol.T @ inv_chol)
    log_norm = -0.5 * d * LOG_2PI - float(np.sum(np.log(np.diag(chol))))
    return GaussianReference(mean, precision, log_norm, np.ascontiguousarray(chol), description)


def check_reference(obj) -> None:
    """ValueError unless ``obj`` is a Gaussian an SMC run can start from."""
    if not (isinstance(obj, GaussianReference)
            or (isinstance(obj, (Gaussian, LowRankGaussian)) and not isinstance(obj, StudentT))):
        raise ValueError(
            "reference must be None, 'prior', 'wide', 'laplace', 'pathfinder' or a Gaussian "
            f"(wb.approximations.Gaussian or LowRankGaussian, e.g. a Laplace fit's approximation), got {obj!r}"
        )


def as_reference(obj, dim: int, description: str) -> GaussianReference:
    """A :class:`GaussianReference` from a Gaussian object (``wb.approximations.Gaussian``,
    ``LowRankGaussian``, a Laplace fit's approximation, a target's prior), with clear errors
    for anything else."""
    check_reference(obj)
    ref = obj if isinstance(obj, GaussianReference) else gaussian(obj.mean, obj.cov, description)
    if ref.dim != dim:
        raise ValueError(f"the reference has dimension {ref.dim} but the target has dimension {dim}")
    return ref
