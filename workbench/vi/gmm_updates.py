"""The pieces of GMMVI's update, as small pure functions (Arenz, Dahlinger, Ye, Volpp and
Neumann, "A Unified Perspective on Natural Gradient Variational Inference with Gaussian Mixture
Models", TMLR 2023; code OlegArenz/gmmvi). The loop that uses them is
``workbench/methods/gmmvi.py``.

With the mixture q(x) = sum_o w_o q_o(x), each component q_o = N(mu_o, Sigma_o) moves along the
natural gradient of its share of the ELBO, whose "reward" is the log ratio
r(x) = log p(x) - log q(x) (sec. 3, eq. 6-8):

- ``stein_estimates``: E_{q_o}[grad r] and E_{q_o}[hess r], the latter by Stein's lemma
  E_q[hess r] = E_q[Sigma^-1 (x - mu) grad r^T] (sec. 4.1.1, eq. 14), from draws of a
  background distribution, self-normalised importance weights q_o(x) / background(x);
- ``trust_region_update``: the component update with step 1 / eta,
  Sigma'^-1 = Sigma^-1 - hess / eta and Sigma'^-1 mu' = Sigma^-1 mu + (grad - hess mu) / eta,
  eta found by bisection so that KL(q_o' || q_o) meets the component's step size eps (the
  trust region of sec. 4.2.2, eq. 20; MORE, Abdolmaleki et al. 2015), never above the full
  natural-gradient step (eta >= 1);
- ``weight_update``: the weights' trust-region step log w' = log w + E_{q_o}[r] / (1 + eta),
  normalised, eta found by bisection so that KL(w' || w) meets the weights' step size (sec. 4.3).

Each works on full-covariance components (Cholesky factors, (K, d, d)) or on diagonal ones
(sds, (K, d): the authors' ``use_diagonal_covs``), whose Hessian estimate is its diagonal and
whose steps cost O(d) instead of O(d^3).

All follow the authors' code line by line where the paper leaves a choice (bisection bounds
and tolerances, the 1e-30 floor on weights); the KL of a candidate eta is computed in the
eigenbasis of Sigma^1/2 (-hess) Sigma^1/2 (``_kl_in_eigenbasis``), O(d) per bisection step
after one O(d^3) eigendecomposition, where the authors' code refactors a d x d matrix at each.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..jit import jit
from ..numerics import LOG_2PI, logsumexp  # compiled: the weights' bisection calls it twice a step

WEIGHT_FLOOR = -69.07  # log(1e-30): the authors' lower bound on a weight
ETA_BOUNDS = (-20.0, 80.0)  # log eta's first bracket (a component's first update)
ETA_WINDOW = 3.0  # later brackets: log of the last eta +- 3
BISECTION_STEPS = 1000


def row_logsumexp(a: np.ndarray) -> np.ndarray:
    """log sum_j exp(a[:, j]) per row (NumPy directly: SciPy's array-API wrapper costs more
    than the sum at these sizes); rows of -inf give -inf."""
    m = a.max(axis=1, keepdims=True)
    m[~np.isfinite(m)] = 0.0
    with np.errstate(divide="ignore"):
        return np.log(np.exp(a - m).sum(axis=1)) + m[:, 0]


@jit(fastmath=True)
def diagonal_terms(x, means, inv_sds, log_norms, log_dens, prec_diff, with_prec_diff):
    """``component_terms`` for diagonal components, fused, from the reciprocals of their sds
    (K, d) and log normalisers -d/2 log 2 pi - log |L_k| (K,): log N(x_n; mu_k, diag(sd_k^2))
    into ``log_dens`` (n, K) and, if ``with_prec_diff``, (x_n - mu_k) / sd_k^2 into
    ``prec_diff`` (K, n, d). One pass over the draws per component, where the NumPy form builds four
    (K, n, d) temporaries (at d = 10,000 that was most of an iteration)."""
    n, d = x.shape
    for k in range(means.shape[0]):
        inv, log_norm = inv_sds[k], log_norms[k]
        for i in range(n):
            acc = 0.0
            for j in range(d):
                z = (x[i, j] - means[k, j]) * inv[j]
                acc += z * z
                if with_prec_diff:
                    prec_diff[k, i, j] = z * inv[j]
            log_dens[i, k] = log_norm - 0.5 * acc


def diagonal_log_norms(sds: np.ndarray) -> np.ndarray:
    """-d/2 log 2 pi - log |L_k| of diagonal components with sds (K, d)."""
    return -0.5 * sds.shape[1] * LOG_2PI - np.log(sds).sum(axis=1)


def diagonal_log_densities(x: np.ndarray, means: np.ndarray, inv_sds: np.ndarray, log_norms: np.ndarray,
                           out: np.ndarray | None = None, prec_diff: np.ndarray | None = None) -> np.ndarray:
    """log N(x_n; mu_k, diag(sd_k^2)) as (n, K) by ``diagonal_terms`` (and, when ``prec_diff``
    (K, n, d) is given, Sigma_k^-1 (x_n - mu_k) into it)."""
    def c(a):
        return np.ascontiguousarray(a, dtype=float)
    out = np.empty((x.shape[0], means.shape[0])) if out is None else out
    with_prec = prec_diff is not None
    diagonal_terms(c(x), c(means), c(inv_sds), c(log_norms), out, prec_diff if with_prec else np.empty((0, 0, 0)),
                   with_prec)
    return out


def component_terms(x: np.ndarray, means: np.ndarray, chols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log N(x_n; mu_k, Sigma_k) as (n, K), Sigma_k^-1 (x_n - mu_k) as (K, n, d)) for the
    components with means (K, d) and Cholesky factors L_k of Sigma_k (K, d, d), or, for
    diagonal components, their sds (K, d)."""
    d = x.shape[1]
    if chols.ndim == 2:  # diagonal components: L_k = diag(sd_k)
        log_dens, prec_diff = np.empty((x.shape[0], means.shape[0])), np.empty((means.shape[0], x.shape[0], d))
        diagonal_log_densities(x, means, 1.0 / chols, diagonal_log_norms(chols), log_dens, prec_diff)
        return log_dens, prec_diff
    inv = np.linalg.inv(chols)  # L_k^-1, batched
    log_norms = -np.log(np.diagonal(chols, axis1=1, axis2=2)).sum(axis=1) - 0.5 * d * LOG_2PI
    prec_diff = np.empty((means.shape[0],) + x.shape)
    return full_log_densities(x, means, inv, log_norms, prec_diff), prec_diff


def full_log_densities(x: np.ndarray, means: np.ndarray, inv_chols: np.ndarray, log_norms: np.ndarray,
                       prec_diff: np.ndarray | None = None) -> np.ndarray:
    """log N(x_n; mu_k, Sigma_k) as (n, K) from each L_k^-1 (K, d, d) and log normaliser (K,) (and,
    when ``prec_diff`` (K, n, d) is given, Sigma_k^-1 (x_n - mu_k) into it). A loop of 2-d BLAS
    products: the batched (K, n, d) form with its broadcast temporaries was 2.2x slower at d = 20
    (1.2x at d = 100), measured."""
    out = np.empty((x.shape[0], means.shape[0]))
    for k in range(means.shape[0]):
        z = (x - means[k]) @ inv_chols[k].T  # L^-1 (x - mu)
        out[:, k] = log_norms[k] - 0.5 * np.einsum("ij,ij->i", z, z)
        if prec_diff is not None:
            np.matmul(z, inv_chols[k], out=prec_diff[k])  # L^-T L^-1 (x - mu)
    return out


BLOCK_FLOATS = 1 << 24  # the (K, block, d) arrays of ``component_log_densities``: 128 MB


def component_log_densities(x: np.ndarray, means: np.ndarray, chols: np.ndarray) -> np.ndarray:
    """log N(x_n; mu_k, Sigma_k) as (n, K), as ``component_terms``'s first term, computed in
    blocks of draws so that memory stays at ``BLOCK_FLOATS`` however many draws are scored
    (the adding rule scores up to the whole database: 10^5 draws x K x d would be 8 K GB at
    d = 10,000)."""
    n, d = x.shape
    out = np.empty((n, means.shape[0]))
    if chols.ndim == 2:  # diagonal: no (K, n, d) array at all
        return diagonal_log_densities(x, means, 1.0 / chols, diagonal_log_norms(chols), out)
    block = max(1, BLOCK_FLOATS // max(1, means.shape[0] * d))
    for start in range(0, n, block):
        out[start:start + block] = component_terms(x[start:start + block], means, chols)[0]
    return out


def mixture_log_density(x: np.ndarray, log_weights: np.ndarray, means: np.ndarray, chols: np.ndarray):
    """(log q(x) (n,), grad log q(x) (n, d), log N(x; mu_k, Sigma_k) (n, K), Sigma_k^-1 (x - mu_k)
    (K, n, d)) of the mixture q = sum_k w_k N(mu_k, Sigma_k)."""
    return mixture_from_terms(*component_terms(x, means, chols), log_weights)


def mixture_from_terms(log_dens: np.ndarray, prec_diff: np.ndarray, log_weights: np.ndarray):
    """``mixture_log_density`` from the components' terms already computed (``component_terms``)."""
    joint = log_dens + log_weights
    log_q = row_logsumexp(joint)
    resp = np.exp(joint - log_q[:, None])  # (n, K): each component's responsibility
    grad = -np.einsum("nk,knd->nd", resp, prec_diff)  # no (K, n, d) temporary
    return log_q, grad, log_dens, prec_diff


def self_normalised(log_weights: np.ndarray) -> np.ndarray:
    w = np.exp(log_weights - log_weights.max())
    return w / w.sum()


def stein_estimates(log_component: np.ndarray, log_background: np.ndarray, prec_diff: np.ndarray,
                    grad_ratio: np.ndarray, diagonal: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(E_q[grad r] (d,), E_q[hess r] (d, d)) for one component q by Stein's lemma (sec. 4.1.1,
    eq. 14): draws x_n of the background with log q(x_n) ``log_component``, their
    Sigma^-1 (x_n - mu) ``prec_diff`` (n, d) and grad r(x_n) ``grad_ratio`` (n, d),
    self-normalised importance weights q(x_n) / background(x_n). The Hessian is symmetrised;
    ``diagonal``: only its diagonal (d,), all a diagonal component's update uses."""
    w = self_normalised(log_component - log_background)
    weighted = w[:, None] * grad_ratio
    grad = weighted.sum(axis=0)
    if diagonal:
        return grad, np.einsum("nd,nd->d", prec_diff, weighted)
    hess = prec_diff.T @ weighted
    return grad, 0.5 * (hess + hess.T)


class ComponentStep(NamedTuple):
    mean: np.ndarray
    chol: np.ndarray
    kl: float
    eta: float  # -1 when the step failed (no eta met the trust region): the component is kept
    success: bool


def _kl_in_eigenbasis(eta: float, lam: np.ndarray, u: np.ndarray) -> float:
    """KL(q' || q) of the step with 1 / eta, in the eigenbasis of M = L^T (-hess) L (L the
    Cholesky factor of Sigma, lam its eigenvalues, u = V^T L^T grad):

        Sigma' = L V diag(1 / (1 + lam / eta)) V^T L^T,  L^-1 (mu' - mu) = V diag(1 / (eta + lam)) u,
        KL = 1/2 sum_i [1 / (1 + lam_i / eta) - 1 + log(1 + lam_i / eta) + u_i^2 / (eta + lam_i)^2].

    Infinite when the new precision is not positive definite (1 + lam_i / eta <= 0)."""
    a = 1.0 + lam / eta
    if np.any(a <= 0.0):
        return math.inf
    return float(0.5 * np.sum(1.0 / a - 1.0 + np.log(a) + (u / (eta + lam)) ** 2))


def _bisect_log_eta(kl_of_eta, bound: float, lower: float, upper: float, tolerance: float = 0.1):
    """The authors' bracketing search over log eta (their ``bracketing_search``): the smallest
    eta (largest step) whose KL stays within ``bound``, to 10 %. Returns (lower, upper) in eta."""
    satisfied = False
    log_eta = 0.5 * (lower + upper)
    for _ in range(BISECTION_STEPS):
        if min(math.exp(upper) - math.exp(log_eta), math.exp(log_eta) - math.exp(lower)) < tolerance:
            break
        kl = kl_of_eta(math.exp(log_eta))
        if abs(bound - kl) < tolerance * bound:
            lower = upper = log_eta
            break
        if bound > kl:
            upper, satisfied = log_eta, True
        else:
            lower = log_eta
        log_eta = 0.5 * (lower + upper)
    if satisfied:
        lower = upper
    return math.exp(lower), math.exp(upper)


def trust_region_update(mean: np.ndarray, chol: np.ndarray, grad: np.ndarray, hess: np.ndarray, eps: float,
                        last_eta: float, temperature: float = 1.0) -> ComponentStep:
    """One component's natural-gradient step inside the trust region KL(q' || q) <= eps (module
    docstring; sec. 4.2.2, eq. 20), from E_q[grad r] ``grad`` and E_q[hess r] ``hess``. The
    bracket is the first one or log(last_eta) +- 3, as the authors' code; eta >= ``temperature``
    (the full step). A step that no eta brings inside the region, or whose covariance is not
    positive definite, fails and keeps the component. A diagonal component passes its sds
    (d,) as ``chol`` and the Hessian's diagonal (d,) as ``hess``: its eigenbasis is the axes,
    lam = sd^2 (-hess), and the step costs O(d)."""
    if chol.ndim == 1:
        lam, vecs, u = chol * chol * (-hess), None, chol * grad
    else:
        m = chol.T @ (-hess) @ chol
        lam, vecs = np.linalg.eigh(0.5 * (m + m.T))
        u = vecs.T @ (chol.T @ grad)
    if not (np.all(np.isfinite(lam)) and np.all(np.isfinite(u))):
        return ComponentStep(mean, chol, -1.0, -1.0, False)
    if last_eta < 0:
        lower, upper = ETA_BOUNDS
    else:
        lower, upper = max(0.0, math.log(last_eta) - ETA_WINDOW), math.log(last_eta) + ETA_WINDOW
    new_lower, new_upper = _bisect_log_eta(lambda e: _kl_in_eigenbasis(e, lam, u), eps, lower, upper)
    if new_lower != new_upper:
        return ComponentStep(mean, chol, -1.0, -1.0, False)
    eta = max(new_lower, temperature)
    kl = _kl_in_eigenbasis(eta, lam, u)
    if not math.isfinite(kl):
        return ComponentStep(mean, chol, -1.0, -1.0, False)
    shrink = 1.0 / (1.0 + lam / eta)
    if chol.ndim == 1:
        new_sd, new_mean = chol * np.sqrt(shrink), mean + chol * (u / (eta + lam))
        if not (np.all(np.isfinite(new_sd)) and np.all(new_sd > 0) and np.all(np.isfinite(new_mean))):
            return ComponentStep(mean, chol, -1.0, -1.0, False)
        return ComponentStep(new_mean, new_sd, kl, eta, True)
    lv = chol @ vecs
    new_cov = (lv * shrink) @ lv.T
    new_mean = mean + lv @ (u / (eta + lam))
    try:
        new_chol = np.linalg.cholesky(0.5 * (new_cov + new_cov.T))
    except np.linalg.LinAlgError:
        return ComponentStep(mean, chol, -1.0, -1.0, False)
    if not (np.all(np.isfinite(new_chol)) and np.all(np.isfinite(new_mean))):
        return ComponentStep(mean, chol, -1.0, -1.0, False)
    return ComponentStep(new_mean, new_chol, kl, eta, True)


def _weights_for_eta(eta: float, log_weights: np.ndarray, expected_log_ratios: np.ndarray,
                     temperature: float) -> tuple[float, np.ndarray]:
    """(KL(w' || w), log w') of the weights' step with 1 / eta (the authors' ``kl``)."""
    unnormalised = (eta + 1.0) / (temperature + eta) * log_weights + expected_log_ratios / (temperature + eta)
    new = unnormalised - logsumexp(unnormalised)
    new = np.maximum(new, WEIGHT_FLOOR)
    new -= logsumexp(new)
    return float(np.sum(np.exp(new) * (new - log_weights))), new


def weight_update(log_weights: np.ndarray, expected_log_ratios: np.ndarray, eps: float,
                  temperature: float = 1.0) -> np.ndarray:
    """The weights' trust-region step (module docstring; sec. 4.3): log w' with KL(w' || w)
    within ``eps``, from each component's E_{q_o}[log p - log q]; the weights unchanged when
    no eta in the authors' bracket exp(+-45) meets it, or with a single component."""
    if log_weights.size == 1:
        return log_weights.copy()
    lower, upper = -45.0, 45.0
    log_eta = 0.5 * (lower + upper)
    satisfied = False
    kl, new = -1.0, log_weights
    converged = False
    for _ in range(50):
        eta = math.exp(log_eta)
        if abs(math.exp(upper) - math.exp(lower)) < 0.1:
            break
        kl, new = _weights_for_eta(eta, log_weights, expected_log_ratios, temperature)
        if abs(eps - kl) < 0.1 * eps:
            converged = True
            break
        if eps > kl:
            upper, satisfied = log_eta, True
        else:
            lower = log_eta
        log_eta = 0.5 * (lower + upper)
    if converged:
        return new
    if satisfied:
        return _weights_for_eta(math.exp(upper), log_weights, expected_log_ratios, temperature)[1]
    return log_weights.copy()
