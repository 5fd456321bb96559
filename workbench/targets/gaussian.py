"""Gaussian targets: isotropic, diagonal (ill-conditioned) and dense equicorrelated.

The covariance is ``Sigma = D R D`` with ``D = diag(scales)`` and ``R`` the equicorrelation
matrix ``(1 - rho) I + rho 1 1^T``. Everything the kernels and the truth need is O(d),
so the target works at d = 10,000 without forming a d x d matrix:

- ``R^-1 = (I - c 1 1^T) / (1 - rho)`` with ``c = rho / (1 + (d - 1) rho)`` (Sherman-Morrison);
- ``det R = (1 - rho)^(d-1) (1 + (d - 1) rho)``, positive iff ``-1/(d-1) < rho < 1``;
- ``R^(1/2) z = sqrt(1 - rho) (z - mean(z) 1) + sqrt(1 + (d-1) rho) mean(z) 1`` (exact sampler,
  from the eigen-decomposition: 1 is an eigenvector with eigenvalue 1 + (d-1) rho, its
  orthogonal complement has eigenvalue 1 - rho).

``logp_grad`` is deliberately *unnormalised* (no ``-log Z``) so that log-evidence
estimates are tested against a non-trivial ``log Z = d/2 log 2 pi + sum log s + 1/2 log det R``.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import TargetError
from ..jit import jit
from ..numerics import mvn_logp_grad, norm
from ..target import Target, Truth


@jit
def gaussian_logp_grad(theta, grad_out, data):
    """-1/2 (x - m)^T Sigma^-1 (x - m), Sigma = D R D; data = (mean, inv_scales, (c, 1/(1-rho)))."""
    mean, inv_scales, corr = data
    c = corr[0]
    inv_one_minus_rho = corr[1]
    d = theta.size
    zsum = 0.0
    for i in range(d):
        z = (theta[i] - mean[i]) * inv_scales[i]
        grad_out[i] = z  # holds z until the correction below
        zsum += z
    quad = 0.0
    for i in range(d):
        z = grad_out[i]
        rz = (z - c * zsum) * inv_one_minus_rho  # (R^-1 z)_i
        quad += z * rz
        grad_out[i] = -rz * inv_scales[i]
    return -0.5 * quad


def _resolve_scales(dim: int, scales) -> np.ndarray:
    if isinstance(scales, str):
        if scales != "logspace":
            raise TargetError(f"scales={scales!r}: use a number, an array, or 'logspace'")
        return np.logspace(-1.0, 1.0, dim) if dim > 1 else np.ones(1)
    s = np.asarray(scales, dtype=float)
    if s.ndim == 0:
        s = np.full(dim, float(s))
    if s.shape != (dim,):
        raise TargetError(f"scales has shape {s.shape}, expected a number or shape ({dim},)")
    if not np.all(np.isfinite(s)) or np.any(s <= 0):
        raise TargetError(f"scales must be positive and finite, got min {s.min()}")
    return s


def gaussian(dim: int, scales=1.0, correlation: float = 0.0, mean=None) -> Target:
    """Gaussian N(mean, D R D) with sds ``scales`` and equicorrelation ``correlation``.

    Parameters
    ----------
    dim : int
        Dimension, 1 to 10,000+ (O(d) memory and time per evaluation).
    scales : float, array (dim,) or "logspace"
        Marginal standard deviations; ``"logspace"`` gives sds log-spaced from 0.1 to 10
        (condition number 10^4: the ill-conditioned test case).
    correlation : float
        Equicorrelation rho of every pair, in (-1/(d-1), 1); 0 gives a diagonal Gaussian.
    mean : array (dim,), optional
        Defaults to zeros.

    Truth: mean, covariance, log Z, 1-D marginals (normal), exact sampler.
    """
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
        raise TargetError(f"dim must be an integer >= 1, got {dim!r}")
    dim = int(dim)
    s = _resolve_scales(dim, scales)
    if isinstance(correlation, bool) or not isinstance(correlation, (int, float, np.integer, np.floating)):
        raise TargetError(f"correlation must be a number in (-1/(d-1), 1), got {correlation!r}")
    rho = float(correlation)
    lower = -1.0 / (dim - 1) if dim > 1 else -math.inf
    if dim == 1 and rho != 0.0:
        raise TargetError("correlation needs dim >= 2")
    if not (lower < rho < 1.0):
        raise TargetError(
            f"correlation={rho} is outside (-1/(d-1), 1) = ({lower:.4g}, 1) for d={dim}: "
            "the equicorrelation matrix would not be positive definite"
        )
    try:
        m = np.zeros(dim) if mean is None else np.asarray(mean, dtype=float)
    except (TypeError, ValueError):
        raise TargetError(f"mean must be {dim} numbers, got {mean!r}") from None
    if m.shape != (dim,):
        raise TargetError(f"mean has shape {m.shape}, expected ({dim},)")
    if not np.all(np.isfinite(m)):
        raise TargetError(f"mean must be finite, got NaN or inf at coordinates {np.flatnonzero(~np.isfinite(m))[:6].tolist()}")
    c = rho / (1.0 + (dim - 1) * rho)
    data = (m, 1.0 / s, np.array([c, 1.0 / (1.0 - rho)]))

    log_det_r = (dim - 1) * math.log1p(-rho) + math.log1p((dim - 1) * rho)
    log_z = 0.5 * dim * math.log(2.0 * math.pi) + float(np.sum(np.log(s))) + 0.5 * log_det_r

    def sampler(rng, n):
        z = rng.standard_normal((n, dim))
        if rho != 0.0:
            zbar = z.mean(axis=1, keepdims=True)
            z = math.sqrt(1.0 - rho) * (z - zbar) + math.sqrt(1.0 + (dim - 1) * rho) * zbar
        return m + z * s

    def cov_fn():
        r = (1.0 - rho) * np.eye(dim) + rho
        return r * np.outer(s, s)

    truth = Truth(
        mean=m.copy(),
        sd=s.copy(),
        log_z=log_z,
        sampler=sampler,
        marginal_pdf_fn=lambda k, x: norm().pdf(x, m[k], s[k]),
        marginal_cdf_fn=lambda k, x: norm().cdf(x, m[k], s[k]),
        cov_fn=cov_fn,
    )
    def hessian(theta):
        """-Sigma^-1 = -D^-1 R^-1 D^-1 with R^-1 = (I - c 1 1^T) / (1 - rho) (dense: small d only)."""
        r_inv = (np.eye(dim) - c) / (1.0 - rho)
        return -r_inv / np.outer(s, s)

    kind = "isotropic" if (np.all(s == s[0]) and rho == 0) else ("correlated" if rho else "diagonal")
    name = f"gaussian_{kind}"
    return Target(
        name=name,
        dim=dim,
        logp_grad=gaussian_logp_grad,
        data=data,
        truth=truth,
        initial_point=m.copy(),
        hessian=hessian,
        spec={
            "factory": "gaussian",
            "dim": dim,
            "scales": scales if isinstance(scales, (str, float, int)) else s.tolist(),
            "correlation": rho,
            "mean": None if mean is None else m.tolist(),
        },
        description=f"{kind} Gaussian, sds {s.min():.3g}..{s.max():.3g}, correlation {rho:g}",
    )


@jit
def dense_gaussian_logp_grad(theta, grad_out, data):
    """-1/2 (x - m)^T P (x - m) with the precision matrix P; data = (mean, P). SMC's
    Gaussian reference density, unnormalised."""
    mean, precision = data
    return mvn_logp_grad(theta, grad_out, mean, precision, 0.0)


def rotated_gaussian(dim: int = 50, variances=(100.0, 50.0, 20.0), seed: int = 0) -> Target:
    """N(0, Q diag(v) Q^T): a few large eigen-directions at a random orientation.

    ``variances`` are the leading eigenvalues of the covariance; the remaining ``dim -
    len(variances)`` are 1; Q is a random rotation (QR of a Gaussian matrix from ``seed``).
    The default is the case where a diagonal metric fails and a low-rank one should not:
    three directions of variance 100, 50 and 20 mixed into every coordinate.

    Truth: mean, covariance, log Z, 1-D marginals (normal), exact sampler. O(d^2) per
    evaluation (a dense precision matrix): meant for d up to a few hundred.
    """
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
        raise TargetError(f"dim must be an integer >= 1, got {dim!r}")
    dim = int(dim)
    lead = np.atleast_1d(np.asarray(variances, dtype=float))
    if lead.ndim != 1 or lead.size > dim:
        raise TargetError(f"variances must be a list of at most dim={dim} numbers, got {variances!r}")
    if not np.all(np.isfinite(lead)) or np.any(lead <= 0):
        raise TargetError(f"variances must be positive and finite, got {lead.tolist()}")
    eigenvalues = np.ones(dim)
    eigenvalues[: lead.size] = lead
    q, r = np.linalg.qr(np.random.default_rng(seed).standard_normal((dim, dim)))
    q = q * np.sign(np.diag(r))  # a uniformly random rotation (Mezzadri 2007)
    cov = (q * eigenvalues) @ q.T
    cov = 0.5 * (cov + cov.T)
    precision = (q / eigenvalues) @ q.T
    precision = np.ascontiguousarray(0.5 * (precision + precision.T))
    chol = np.linalg.cholesky(cov)
    sd = np.sqrt(np.diag(cov))
    m = np.zeros(dim)
    truth = Truth(
        mean=m.copy(),
        sd=sd,
        log_z=0.5 * dim * math.log(2.0 * math.pi) + 0.5 * float(np.sum(np.log(eigenvalues))),
        sampler=lambda rng, n: rng.standard_normal((n, dim)) @ chol.T,
        marginal_pdf_fn=lambda k, x: norm().pdf(x, 0.0, sd[k]),
        marginal_cdf_fn=lambda k, x: norm().cdf(x, 0.0, sd[k]),
        cov_fn=lambda: cov.copy(),
    )
    return Target(
        name="gaussian_rotated",
        dim=dim,
        logp_grad=dense_gaussian_logp_grad,
        data=(m, precision),
        truth=truth,
        initial_point=m.copy(),
        hessian=lambda theta: -precision.copy(),
        spec={"factory": "rotated_gaussian", "dim": dim, "variances": lead.tolist(), "seed": int(seed)},
        description=(f"rotated Gaussian, d={dim}, leading variances {', '.join(f'{v:g}' for v in lead)}, "
                     "the rest 1"),
    )
