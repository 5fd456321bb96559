"""Gaussian mixture targets with diagonal components: the nn4post paper's own test problem.

p(x) = sum_k w_k prod_alpha N(x_alpha; mu_k_alpha, s_k_alpha), normalised (log Z = 0).
Separated peaks, unequal weights and per-dimension scales make it the case where a
single Gaussian (mean-field VI, Laplace) lands on one peak and a mixture q can be exact.

The original nn4post benchmark (the paper's sec. 7.1.1 test problem) is ``gaussian_mixture(dim, weights=[0.05, 0.25,
0.70], means=[-3, 0, 3], scales=np.log(2))``: a scalar mean per component means that value
times the all-ones vector.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import TargetError
from ..jit import jit
from ..numerics import LOG_2PI, norm
from ..target import Target, Truth


@jit
def mixture_logp_grad(theta, grad_out, data):
    """log sum_k w_k N(theta; mu_k, diag s_k^2); data = (log_w, means (K,d), inv_scales (K,d), log_norm (K,)).

    One streaming pass over the components (log-sum-exp with rescaling when a larger term
    appears), accumulating the responsibility-weighted gradient: no allocation.
    """
    log_w, means, inv_scales, log_norm = data
    n_comp, d = means.shape
    m = -math.inf  # running max of the weighted component log densities
    total = 0.0  # sum_k exp(lc_k - m)
    for a in range(d):
        grad_out[a] = 0.0
    for k in range(n_comp):
        q = 0.0
        for a in range(d):
            z = (theta[a] - means[k, a]) * inv_scales[k, a]
            q += z * z
        lc = log_w[k] + log_norm[k] - 0.5 * q
        if lc > m:
            rescale = math.exp(m - lc)  # 0 on the first component
            total = total * rescale + 1.0
            for a in range(d):
                grad_out[a] = grad_out[a] * rescale - (theta[a] - means[k, a]) * inv_scales[k, a] ** 2
            m = lc
        else:
            e = math.exp(lc - m)
            if e > 0.0:
                total += e
                for a in range(d):
                    grad_out[a] -= e * (theta[a] - means[k, a]) * inv_scales[k, a] ** 2
    for a in range(d):
        grad_out[a] /= total
    return m + math.log(total)


def mixture_1d_pdf(x, weights, means, sds):
    """Density of a 1-D Gaussian mixture at x (vectorised); the marginal of eq. 6."""
    x = np.asarray(x, dtype=float)[..., None]
    return np.sum(weights * norm().pdf(x, means, sds), axis=-1)


def mixture_1d_cdf(x, weights, means, sds):
    """Distribution function of a 1-D Gaussian mixture at x (vectorised)."""
    x = np.asarray(x, dtype=float)[..., None]
    return np.sum(weights * norm().cdf(x, means, sds), axis=-1)


def _default_means(rng, dim: int, n_components: int, separation: float, scales) -> np.ndarray:
    """Component centres at least ``separation`` x (largest sd) apart, drawn at random."""
    min_dist = separation * float(np.max(scales))
    # a box whose side grows with K and shrinks with sqrt(d) keeps the peaks separated but
    # not absurdly far apart in any dimension
    half_width = separation * float(np.max(scales)) * max(1.0, n_components / math.sqrt(dim))
    for _ in range(10_000):
        centres = rng.uniform(-half_width, half_width, size=(n_components, dim))
        diffs = centres[:, None, :] - centres[None, :, :]
        dist = np.sqrt((diffs**2).sum(-1))
        np.fill_diagonal(dist, np.inf)
        if dist.min() >= min_dist:
            return centres
        half_width *= 1.05
    raise TargetError("could not place separated mixture components")  # pragma: no cover


def gaussian_mixture(
    dim: int,
    n_components: int = 3,
    weights=None,
    means=None,
    scales=None,
    separation: float = 6.0,
    seed: int = 0,
) -> Target:
    """A mixture of diagonal Gaussians with separated peaks and unequal weights.

    Parameters
    ----------
    dim : int
        Dimension, 1 to 10,000+ (cost O(K d) per evaluation).
    n_components : int
        Number of peaks K (ignored when ``weights`` is given).
    weights : array (K,), optional
        Mixture weights (normalised here). Default: proportional to 1, 2, ..., K in a
        seed-dependent order: unequal weights, none tiny.
    means : array (K, d), (K,) or None
        Component centres; a (K,) array means ``means[k] * ones(d)`` (the nn4post layout).
        Default: random centres at least ``separation`` largest sds apart.
    scales : float, array (K,), (K, d) or None
        Per-component, per-dimension sds. Default: random in [0.5, 1.5] per component and
        dimension (per-dimension scales, as in the paper's test problem).
    separation : float
        Minimum distance between default centres, in units of the largest sd.
    seed : int
        Seeds the default weights order, centres and scales.

    Truth: mean, covariance, 1-D marginals (1-D mixtures, eq. 6), log Z = 0, component
    weights, an exact sampler, and ``extras["assign_component"]`` (most responsible
    component of each draw, for mode-weight metrics).
    """
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
        raise TargetError(f"dim must be an integer >= 1, got {dim!r}")
    dim = int(dim)
    if isinstance(separation, bool) or not isinstance(separation, (int, float, np.integer, np.floating)) \
            or not (math.isfinite(separation) and separation > 0):
        raise TargetError(f"separation must be a finite number > 0 (in the components' largest sds), got {separation!r}")
    rng = np.random.default_rng(seed)
    if weights is not None:
        w = np.asarray(weights, dtype=float).ravel()
        if np.any(w <= 0) or not np.all(np.isfinite(w)):
            raise TargetError(f"weights must be positive and finite, got {w}")
        w = w / w.sum()
        n_components = w.size
    else:
        if isinstance(n_components, bool) or not isinstance(n_components, (int, np.integer)) or n_components < 1:
            raise TargetError(f"n_components must be an integer >= 1, got {n_components!r}")
        w = rng.permutation(np.arange(1, n_components + 1, dtype=float))
        w /= w.sum()
    K = int(n_components)

    if scales is None:
        s = rng.uniform(0.5, 1.5, size=(K, dim))
    else:
        s = np.asarray(scales, dtype=float)
        if s.ndim == 0:
            s = np.full((K, dim), float(s))
        elif s.shape == (K,):
            s = np.repeat(s[:, None], dim, axis=1)
        if s.shape != (K, dim):
            raise TargetError(f"scales has shape {s.shape}, expected a number, ({K},) or ({K}, {dim})")
        if np.any(s <= 0) or not np.all(np.isfinite(s)):
            raise TargetError("scales must be positive and finite")
    if means is None:
        mu = _default_means(rng, dim, K, separation, s)
    else:
        mu = np.asarray(means, dtype=float)
        if mu.shape == (K,):
            mu = np.repeat(mu[:, None], dim, axis=1)
        if mu.shape != (K, dim):
            raise TargetError(f"means has shape {mu.shape}, expected ({K},) or ({K}, {dim})")
        if not np.all(np.isfinite(mu)):
            raise TargetError("means must be finite (they hold NaN or inf)")
    s = np.ascontiguousarray(s)
    mu = np.ascontiguousarray(mu)
    log_norm = -0.5 * dim * LOG_2PI - np.log(s).sum(axis=1)
    data = (np.log(w), mu, 1.0 / s, log_norm)

    mean = w @ mu
    second = w @ (s**2 + mu**2)
    sd = np.sqrt(np.maximum(second - mean**2, 0.0))

    def sampler(rng_, n):
        comp = rng_.choice(K, size=n, p=w)
        return mu[comp] + s[comp] * rng_.standard_normal((n, dim))

    def cov_fn():
        c = -np.outer(mean, mean)
        for k in range(K):
            c += w[k] * (np.diag(s[k] ** 2) + np.outer(mu[k], mu[k]))
        return c

    def assign_component(x):
        """Index of the most responsible component for each row of x (n, d)."""
        x = np.atleast_2d(x)
        logr = np.log(w) + log_norm - 0.5 * (((x[:, None, :] - mu) / s) ** 2).sum(-1)
        return logr.argmax(axis=1)

    truth = Truth(
        mean=mean,
        sd=sd,
        log_z=0.0,
        sampler=sampler,
        marginal_pdf_fn=lambda k, x: mixture_1d_pdf(x, w, mu[:, k], s[:, k]),
        marginal_cdf_fn=lambda k, x: mixture_1d_cdf(x, w, mu[:, k], s[:, k]),
        cov_fn=cov_fn,
        extras={
            "component_weights": w.copy(),
            "component_means": mu.copy(),
            "component_scales": s.copy(),
            "assign_component": assign_component,
        },
    )
    return Target(
        name="gaussian_mixture",
        dim=dim,
        logp_grad=mixture_logp_grad,
        data=data,
        truth=truth,
        spec={
            "factory": "gaussian_mixture",
            "dim": dim,
            "n_components": K,
            "weights": None if weights is None else w.tolist(),
            "means": None if means is None else np.asarray(means).tolist(),
            "scales": None if scales is None else np.asarray(scales).tolist(),
            "separation": separation,
            "seed": seed,
        },
        description=f"{K}-peak Gaussian mixture, weights {np.round(np.sort(w)[::-1], 2).tolist()}",
    )


def mixture_target(approximation, name: str = "mixture_approximation") -> Target:
    """A fitted Gaussian-mixture approximation (``result.approximation`` of NN4Post, or a
    marginal of one) as a Target with its exact truth: the nn4post paper's transfer argument
    (sec. 5), a posterior reused as a prior or as a target elsewhere."""
    for attr in ("weights", "means", "scales"):
        if not hasattr(approximation, attr):
            raise TargetError(f"approximation must be a Gaussian mixture with weights, means and scales; "
                              f"{type(approximation).__name__} has no {attr!r}")
    t = gaussian_mixture(approximation.means.shape[1], weights=np.maximum(approximation.weights, 1e-300),
                         means=approximation.means, scales=approximation.scales)
    return t.replace(name=name)
