"""Mixtures of full-covariance Gaussians or Student-t's: the multimodal benchmarks of the
Gaussian-mixture VI literature.

``dense_mixture(20)`` is GMMVI's GMM20 (Arenz et al., TMLR 2023, sec. 5.1, after Arenz,
Zhong and Neumann 2020): ten equally weighted Gaussians, means uniform in [-50, 50]^d,
covariances A^T A + I with A's entries N(0, (0.1 d)^2); ``dense_mixture(100)`` is GMM100.
``dense_mixture(20, family="student_t")`` is their STM20 (after Lin, Khan and Schmidt 2020):
ten Student-t's with 2 degrees of freedom, means uniform in [-20, 20]^d and scale matrices
(B^T B + I)^-1 with B's entries N(0, (0.1 d)^2). The draws are seeded by ``seed`` (the
originals use unseeded draws, so the numbers differ, not the construction).

``target.prior`` is the broad Gaussian GMMVI's experiments start from (N(0, 1000 I) for the
Gaussian mixtures, N(0, 300 I) for the Student-t's): SMC's reference and GMMVI's start.

p(x) = sum_k w_k f_k(x) is normalised (log Z = 0). For Student-t components with df <= 2 the
variance is infinite: ``truth.sd`` then holds the sd the scale matrices alone give (the
Gaussian counterpart's), which the accuracy metrics use as their unit; it is not a variance.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special, stats

from ..approximations import Gaussian
from ..errors import TargetError
from ..jit import jit
from ..numerics import LOG_2PI
from ..target import Target, Truth

FAMILIES = ("gaussian", "student_t")


@jit
def dense_mixture_logp_grad(theta, grad_out, data):
    """log sum_k w_k f_k(theta); data = (log_w (K,), means (K,d), inv_chols (K,d,d): L_k^-1 of
    each component's covariance or scale matrix, log_norm (K,), df (1,): 0 for Gaussians).

    A streaming log-sum-exp over the components (rescaled when a larger term appears),
    accumulating the responsibility-weighted gradient -c_k L_k^-T z_k, z_k = L_k^-1 (x - mu_k),
    c_k = 1 for a Gaussian and (df + d) / (df + |z_k|^2) for a Student-t.
    """
    log_w, means, inv_chols, log_norm, df_arr = data
    n_comp, d = means.shape
    df = df_arr[0]
    z = np.empty(d)
    m = -math.inf
    total = 0.0
    for a in range(d):
        grad_out[a] = 0.0
    for k in range(n_comp):
        q = 0.0
        for a in range(d):
            s = 0.0
            for b in range(a + 1):
                s += inv_chols[k, a, b] * (theta[b] - means[k, b])
            z[a] = s
            q += s * s
        if df > 0.0:
            lc = log_w[k] + log_norm[k] - 0.5 * (df + d) * math.log1p(q / df)
            c = (df + d) / (df + q)
        else:
            lc = log_w[k] + log_norm[k] - 0.5 * q
            c = 1.0
        if lc > m:
            rescale = math.exp(m - lc)  # 0 on the first component
            total = total * rescale + 1.0
            for a in range(d):
                grad_out[a] *= rescale
            e = 1.0
            m = lc
        else:
            e = math.exp(lc - m)
            total += e
        if e > 0.0:
            for b in range(d):  # grad_b -= e c sum_a L^-1[a, b] z_a
                s = 0.0
                for a in range(b, d):
                    s += inv_chols[k, a, b] * z[a]
                grad_out[b] -= e * c * s
    for a in range(d):
        grad_out[a] /= total
    return m + math.log(total)


def _wishart_like(rng, d: int, sd: float) -> np.ndarray:
    """A^T A + I with A's entries N(0, sd^2): the covariances of GMMVI's benchmarks."""
    a = sd * rng.standard_normal((d, d))
    return a.T @ a + np.eye(d)


def dense_mixture(dim: int, n_components: int = 10, family: str = "gaussian", df: float = 2.0,
                  seed: int = 0) -> Target:
    """A mixture of ``n_components`` full-covariance Gaussians (GMMVI's GMM20 / GMM100) or
    Student-t's (their STM20), equally weighted; see the module docstring for the construction.

    Truth: mean (df > 1), sd (see the module docstring for df <= 2), covariance, 1-D marginals,
    log Z = 0, an exact sampler, ``extras["component_weights"]``, ``["component_means"]`` and
    ``["assign_component"]`` (the most responsible component of each draw, for mode weights).
    """
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
        raise TargetError(f"dim must be an integer >= 1, got {dim!r}")
    if isinstance(n_components, bool) or not isinstance(n_components, (int, np.integer)) or n_components < 1:
        raise TargetError(f"n_components must be an integer >= 1, got {n_components!r}")
    if family not in FAMILIES:
        raise TargetError(f"family must be one of {list(FAMILIES)}, got {family!r}")
    if family == "student_t" and not (isinstance(df, (int, float)) and math.isfinite(df) and df > 1):
        raise TargetError(f"df must be a finite number > 1 (the mean must exist), got {df!r}")
    d, K = int(dim), int(n_components)
    rng = np.random.default_rng(seed)
    w = np.full(K, 1.0 / K)
    if family == "gaussian":
        mu = rng.uniform(-50.0, 50.0, size=(K, d))
        scale_mats = np.stack([_wishart_like(rng, d, 0.1 * d) for _ in range(K)])
        nu = 0.0
    else:
        mu = rng.uniform(-20.0, 20.0, size=(K, d))
        scale_mats = np.stack([np.linalg.inv(_wishart_like(rng, d, 0.1 * d)) for _ in range(K)])
        nu = float(df)
    chols = np.linalg.cholesky(scale_mats)
    inv_chols = np.ascontiguousarray(np.stack([np.linalg.inv(c) for c in chols]))
    log_det = np.array([np.log(np.diag(c)).sum() for c in chols])
    if nu > 0:
        log_norm = (special.gammaln(0.5 * (nu + d)) - special.gammaln(0.5 * nu)
                    - 0.5 * d * math.log(nu * math.pi) - log_det)
    else:
        log_norm = -0.5 * d * LOG_2PI - log_det
    data = (np.log(w), np.ascontiguousarray(mu), inv_chols, log_norm, np.array([nu]))
    var_factor = nu / (nu - 2.0) if nu > 2 else 1.0  # see the module docstring for df <= 2
    mean = w @ mu
    comp_var = np.stack([np.diag(s) for s in scale_mats])  # (K, d)
    sd = np.sqrt(np.maximum(w @ (var_factor * comp_var + mu**2) - mean**2, 0.0))

    def sampler(rng_, n):
        comp = rng_.choice(K, size=n, p=w)
        x = np.einsum("nab,nb->na", chols[comp], rng_.standard_normal((n, d)))
        if nu > 0:
            x /= np.sqrt(rng_.chisquare(nu, size=n) / nu)[:, None]
        return mu[comp] + x

    def cov_fn():
        c = -np.outer(mean, mean)
        for k in range(K):
            c += w[k] * (var_factor * scale_mats[k] + np.outer(mu[k], mu[k]))
        return c

    def component_log_densities(x):
        z = np.einsum("kab,nkb->nka", inv_chols, x[:, None, :] - mu[None])
        q = (z**2).sum(-1)
        if nu > 0:
            return np.log(w) + log_norm - 0.5 * (nu + d) * np.log1p(q / nu)
        return np.log(w) + log_norm - 0.5 * q

    def assign_component(x):
        """Index of the most responsible component for each row of x (n, d)."""
        return component_log_densities(np.atleast_2d(x)).argmax(axis=1)

    def marginal_pdf(k, x):
        x = np.asarray(x, dtype=float)[..., None]
        s = np.sqrt(comp_var[:, k])
        dens = stats.t.pdf(x, nu, mu[:, k], s) if nu > 0 else stats.norm.pdf(x, mu[:, k], s)
        return dens @ w

    def marginal_cdf(k, x):
        x = np.asarray(x, dtype=float)[..., None]
        s = np.sqrt(comp_var[:, k])
        cdf = stats.t.cdf(x, nu, mu[:, k], s) if nu > 0 else stats.norm.cdf(x, mu[:, k], s)
        return cdf @ w

    truth = Truth(mean=mean, sd=sd, log_z=0.0, sampler=sampler, marginal_pdf_fn=marginal_pdf,
                  marginal_cdf_fn=marginal_cdf, cov_fn=cov_fn,
                  extras={"component_weights": w.copy(), "component_means": mu.copy(),
                          "assign_component": assign_component})
    name = "gmm" if family == "gaussian" else "student_t_mixture"
    return Target(
        name=f"{name}{d}",
        dim=d,
        logp_grad=dense_mixture_logp_grad,
        data=data,
        truth=truth,
        spec={"factory": "dense_mixture", "dim": d, "n_components": K, "family": family, "df": float(df),
              "seed": int(seed)},
        description=(f"{K} equally weighted full-covariance {'Gaussians' if nu == 0 else f'Student-t (df {nu:g})'} "
                     f"in {d} dimensions (GMMVI's {'GMM' if nu == 0 else 'STM'}{d} construction, seed {seed})"),
        initial_point=np.zeros(d),
        prior=Gaussian(np.zeros(d), (1000.0 if nu == 0 else 300.0) * np.eye(d)),
    )
