"""Bayesian linear and logistic regression, on real (bundled) or synthetic data.

Both have a full ``logp_grad`` and the mini-batch form ``logp_grad_batch(theta, grad_out,
data, rows, scale)`` = scale x log-likelihood of ``rows`` + log prior, with
``scale = N_D / N_m`` (nn4post paper, eq. 18-20).

Linear regression (known noise sd sigma, prior beta ~ N(0, tau^2 I)) is conjugate:
the posterior is N(m, S) with S^-1 = X^T X / sigma^2 + I / tau^2 and m = S X^T y / sigma^2,
and the evidence is exact:
log p(y) = log p(y | m) + log p(m) + p/2 log 2 pi + 1/2 log det S   (Bayes' rule at beta = m).
``logp_grad`` is normalised so that its log Z *is* the log evidence.

Logistic regression (prior N(0, tau^2 I)) has no closed-form posterior: its truth is None
here (reference draws from long NUTS runs stand in, added by the studies).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import linalg

from ..approximations import Gaussian
from ..errors import TargetError
from ..jit import jit
from ..numerics import LOG_2PI, norm, sigmoid_and_log1pexp
from ..target import Target, Truth
from ..target_forms import Generative
from . import datasets

# --------------------------------------------------------------------------------------
# kernels: data = (X (n, p), y (n,), params); params = (1/sigma^2, 1/tau^2) for linear,
# (1/tau^2,) for logistic
# --------------------------------------------------------------------------------------


@jit
def _gaussian_prior(theta, grad_out, inv_prior_var):
    """log N(theta; 0, tau^2 I) into grad_out (overwrites) and its value."""
    p = theta.size
    s = 0.0
    for j in range(p):
        s += theta[j] * theta[j]
        grad_out[j] = -theta[j] * inv_prior_var
    return -0.5 * s * inv_prior_var - 0.5 * p * (LOG_2PI - math.log(inv_prior_var))


@jit(fastmath=True)
def _linear_loglik_row(theta, grad_out, X, y, i, inv_noise_var, scale):
    """Adds scale x d/dtheta log N(y_i; x_i theta, sigma^2) to grad_out; returns scale x the
    value's residual term, -r^2 / (2 sigma^2) (the caller adds the normalising constant once, not
    a logarithm per row: :func:`_linear_log_norm`). The two loops over the coefficients may
    reassociate, so they vectorise."""
    p = theta.size
    eta = 0.0
    for j in range(p):
        eta += X[i, j] * theta[j]
    r = y[i] - eta
    w = scale * r * inv_noise_var
    for j in range(p):
        grad_out[j] += w * X[i, j]
    return -0.5 * scale * r * r * inv_noise_var


@jit
def _linear_log_norm(rows, inv_noise_var, scale):
    """scale x the normalising constants of ``rows`` Gaussian rows, each -log(sigma sqrt(2 pi))."""
    return -0.5 * scale * rows * (LOG_2PI - math.log(inv_noise_var))


@jit
def linear_regression_logp_grad(theta, grad_out, data):
    """log p(y | X, theta) + log p(theta) for Gaussian noise and prior."""
    X, y, params = data
    lp = _gaussian_prior(theta, grad_out, params[1]) + _linear_log_norm(X.shape[0], params[0], 1.0)
    for i in range(X.shape[0]):
        lp += _linear_loglik_row(theta, grad_out, X, y, i, params[0], 1.0)
    return lp


@jit
def linear_regression_logp_grad_batch(theta, grad_out, data, rows, scale):
    """scale x log-likelihood of the rows + log prior (eq. 19-20)."""
    X, y, params = data
    lp = _gaussian_prior(theta, grad_out, params[1]) + _linear_log_norm(rows.size, params[0], scale)
    for i in rows:
        lp += _linear_loglik_row(theta, grad_out, X, y, i, params[0], scale)
    return lp


@jit(fastmath=True)
def _logistic_loglik_row(theta, grad_out, X, y, i, scale):
    """Adds scale x d/dtheta log Bernoulli(y_i; sigmoid(x_i theta)); returns scale x value.

    The sigmoid and the softplus share one exponential (``sigmoid_and_log1pexp``), and the two
    loops over the coefficients may reassociate, so they vectorise."""
    p = theta.size
    eta = 0.0
    for j in range(p):
        eta += X[i, j] * theta[j]
    prob, softplus = sigmoid_and_log1pexp(eta)
    w = scale * (y[i] - prob)
    for j in range(p):
        grad_out[j] += w * X[i, j]
    return scale * (y[i] * eta - softplus)


@jit
def logistic_regression_logp_grad(theta, grad_out, data):
    """Bernoulli-logit log-likelihood + Gaussian log prior."""
    X, y, params = data
    lp = _gaussian_prior(theta, grad_out, params[0])
    for i in range(X.shape[0]):
        lp += _logistic_loglik_row(theta, grad_out, X, y, i, 1.0)
    return lp


@jit
def logistic_regression_logp_grad_batch(theta, grad_out, data, rows, scale):
    """scale x log-likelihood of the rows + log prior (eq. 19)."""
    X, y, params = data
    lp = _gaussian_prior(theta, grad_out, params[0])
    for i in rows:
        lp += _logistic_loglik_row(theta, grad_out, X, y, i, scale)
    return lp


# --------------------------------------------------------------------------------------
# exact conjugate posterior
# --------------------------------------------------------------------------------------


def conjugate_posterior(X, y, noise_sd: float, prior_sd: float):
    """Posterior mean, covariance and log evidence of Bayesian linear regression.

    Returns ``(mean, cov, log_evidence)`` computed through the Cholesky factor of the
    posterior precision (no explicit inverse in the evidence).
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    p = X.shape[1]
    prec = X.T @ X / noise_sd**2 + np.eye(p) / prior_sd**2
    chol = linalg.cho_factor(prec, lower=True)
    mean = linalg.cho_solve(chol, X.T @ y / noise_sd**2)
    cov = linalg.cho_solve(chol, np.eye(p))
    cov = 0.5 * (cov + cov.T)
    log_det_cov = -2.0 * np.sum(np.log(np.diag(chol[0])))
    log_lik = np.sum(norm().logpdf(y, X @ mean, noise_sd))
    log_prior = np.sum(norm().logpdf(mean, 0.0, prior_sd))
    log_evidence = log_lik + log_prior + 0.5 * p * math.log(2 * math.pi) + 0.5 * log_det_cov
    return mean, cov, float(log_evidence)


def _check_common(prior_sd, n_data, dim):
    if not (prior_sd > 0 and math.isfinite(prior_sd)):
        raise TargetError(f"prior_sd must be positive and finite, got {prior_sd}")
    if n_data is not None and n_data < 1:
        raise TargetError(f"n_data must be >= 1, got {n_data}")
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1):
        raise TargetError(f"dim must be an integer >= 1, got {dim!r}")


def _paired_features(rng, n: int, p: int, correlation: float) -> np.ndarray:
    """N(0, 1) features whose columns 2k and 2k + 1 have correlation ``correlation``: their
    coefficients' posterior correlation is then about -``correlation``."""
    z = rng.standard_normal((n, p))
    c = math.sqrt(max(0.0, 1.0 - correlation**2))
    for k in range(0, p - 1, 2):
        z[:, k + 1] = correlation * z[:, k] + c * z[:, k + 1]
    return z


def linear_generative(X: np.ndarray, params: np.ndarray, prior_sd: float, noise_sd: float) -> Generative:
    """The model on its own X: beta ~ N(0, prior_sd^2 I), y ~ N(X beta, noise_sd^2)."""

    def simulate(rng):
        beta = prior_sd * rng.standard_normal(X.shape[1])
        return beta, (X, X @ beta + noise_sd * rng.standard_normal(X.shape[0]), params)

    def log_likelihood(draws, data):
        X_, y, _ = data
        r = y[None, :] - np.asarray(draws) @ X_.T
        return -0.5 * np.sum(r * r, axis=1) / noise_sd**2 - X_.shape[0] * (0.5 * LOG_2PI + math.log(noise_sd))

    return Generative(simulate, log_likelihood)


def logistic_generative(X: np.ndarray, params: np.ndarray, prior_sd: float) -> Generative:
    """The model on its own X: beta ~ N(0, prior_sd^2 I), y ~ Bernoulli(sigmoid(X beta))."""

    def simulate(rng):
        beta = prior_sd * rng.standard_normal(X.shape[1])
        return beta, (X, (rng.random(X.shape[0]) < 1.0 / (1.0 + np.exp(-(X @ beta)))).astype(float), params)

    def log_likelihood(draws, data):
        X_, y, _ = data
        eta = np.asarray(draws) @ X_.T
        return np.sum(y * eta - np.logaddexp(0.0, eta), axis=1)

    return Generative(simulate, log_likelihood)


def linear_regression(
    dataset: str = "synthetic",
    *,
    n_data: int = 100,
    dim: int = 5,
    noise_sd: float | None = None,
    prior_sd: float = 1.0,
    seed: int = 0,
    correlation: float = 0.0,
    X=None,
    y=None,
) -> Target:
    """Bayesian linear regression y ~ N(X beta, sigma^2), beta ~ N(0, prior_sd^2 I), sigma known.

    Parameters
    ----------
    dataset : "synthetic" | "diabetes" | "custom"
        ``"diabetes"``: scikit-learn's bundled diabetes data (442 x 10, loaded offline),
        features and response standardised, plus an intercept column (d = 11); its noise
        sd defaults to the least-squares residual sd (a plug-in, then treated as known).
        ``"synthetic"``: ``n_data`` rows, X ~ N(0, 1), beta ~ N(0, 1), noise ``noise_sd``
        (default 1); with ``correlation``, the features come in pairs with that correlation
        (their coefficients' posterior correlation is about its negative). ``"custom"``: give
        ``X`` and ``y`` (and ``noise_sd``).

    Truth (exact): the conjugate posterior mean, covariance, normal marginals, exact
    sampler, and log Z = log evidence.
    """
    _check_common(prior_sd, n_data, dim)
    names = None
    if dataset == "diabetes":
        X, y, names = datasets.diabetes()
    elif dataset == "synthetic":
        if isinstance(correlation, bool) or not isinstance(correlation, (int, float)) or not -1 < correlation < 1:
            raise TargetError(f"correlation must be a number in (-1, 1), got {correlation!r}")
        rng = np.random.default_rng(seed)
        X = _paired_features(rng, int(n_data), int(dim), float(correlation))
        beta = rng.standard_normal(int(dim))
        y = X @ beta + (1.0 if noise_sd is None else noise_sd) * rng.standard_normal(int(n_data))
        noise_sd = 1.0 if noise_sd is None else noise_sd
    elif dataset == "custom":
        if X is None or y is None or noise_sd is None:
            raise TargetError("dataset='custom' needs X, y and noise_sd")
    else:
        raise TargetError(f"unknown dataset {dataset!r}: use 'synthetic', 'diabetes' or 'custom'")
    X = np.ascontiguousarray(X, dtype=float)
    y = np.ascontiguousarray(y, dtype=float).ravel()
    if X.ndim != 2 or X.shape[0] != y.size:
        raise TargetError(f"X must be (n, p) with n = len(y); got X {X.shape}, y {y.shape}")
    if noise_sd is None:
        resid = y - X @ np.linalg.lstsq(X, y, rcond=None)[0]
        noise_sd = float(np.sqrt(resid @ resid / max(1, X.shape[0] - X.shape[1])))
    if not (noise_sd > 0 and math.isfinite(noise_sd)):
        raise TargetError(f"noise_sd must be positive and finite, got {noise_sd}")
    mean, cov, log_evidence = conjugate_posterior(X, y, noise_sd, prior_sd)
    sd = np.sqrt(np.diag(cov))
    chol = np.linalg.cholesky(cov)
    p = X.shape[1]

    truth = Truth(
        mean=mean,
        sd=sd,
        log_z=log_evidence,
        sampler=lambda rng, n: mean + rng.standard_normal((n, p)) @ chol.T,
        marginal_pdf_fn=lambda k, x: norm().pdf(x, mean[k], sd[k]),
        marginal_cdf_fn=lambda k, x: norm().cdf(x, mean[k], sd[k]),
        cov_fn=lambda: cov.copy(),
        extras={"noise_sd": noise_sd, "prior_sd": prior_sd},
    )
    params = np.array([1.0 / noise_sd**2, 1.0 / prior_sd**2])
    neg_precision = -(X.T @ X / noise_sd**2 + np.eye(p) / prior_sd**2)  # constant in theta
    return Target(
        name=f"linear_regression_{dataset}",
        dim=p,
        logp_grad=linear_regression_logp_grad,
        logp_grad_batch=linear_regression_logp_grad_batch,
        data=(X, y, params),
        n_data=X.shape[0],
        param_names=names,
        truth=truth,
        hessian=lambda theta: neg_precision.copy(),
        prior=Gaussian(np.zeros(p), prior_sd**2 * np.eye(p)),
        generative=linear_generative(X, params, prior_sd, noise_sd),
        spec={
            "factory": "linear_regression",
            "dataset": dataset,
            "n_data": X.shape[0],
            "dim": p,
            "noise_sd": noise_sd,
            "prior_sd": prior_sd,
            "seed": seed,
            **({"correlation": correlation} if correlation else {}),
            # custom data is identified by its content in study caches
            "data_digest": datasets.digest(X, y) if dataset == "custom" else None,
        },
        description=f"conjugate linear regression ({dataset}, N_D={X.shape[0]}, d={p})",
    )


def logistic_regression(
    dataset: str = "synthetic",
    *,
    n_data: int = 200,
    dim: int = 5,
    prior_sd: float = 1.0,
    seed: int = 0,
    X=None,
    y=None,
) -> Target:
    """Bayesian logistic regression, y ~ Bernoulli(sigmoid(X beta)), beta ~ N(0, prior_sd^2 I).

    Parameters
    ----------
    dataset : "synthetic" | "breast_cancer" | "custom"
        ``"breast_cancer"``: scikit-learn's bundled Wisconsin data (569 x 30, offline),
        features standardised, plus an intercept (d = 31). ``"synthetic"``: an intercept
        and ``dim - 1`` N(0, 1) features, beta ~ N(0, 1). ``"custom"``: give X and y (0/1).

    Truth: none in closed form (``truth is None``); the studies add reference draws from
    long NUTS runs.
    """
    _check_common(prior_sd, n_data, dim)
    names = None
    if dataset == "breast_cancer":
        X, y, names = datasets.breast_cancer()
    elif dataset == "synthetic":
        rng = np.random.default_rng(seed)
        X = np.column_stack([np.ones(int(n_data)), rng.standard_normal((int(n_data), int(dim) - 1))])
        beta = rng.standard_normal(int(dim))
        y = (rng.random(int(n_data)) < 1.0 / (1.0 + np.exp(-X @ beta))).astype(float)
    elif dataset == "custom":
        if X is None or y is None:
            raise TargetError("dataset='custom' needs X and y")
    else:
        raise TargetError(
            f"unknown dataset {dataset!r}: use 'synthetic', 'breast_cancer' or 'custom'"
        )
    X = np.ascontiguousarray(X, dtype=float)
    y = np.ascontiguousarray(y, dtype=float).ravel()
    if X.ndim != 2 or X.shape[0] != y.size:
        raise TargetError(f"X must be (n, p) with n = len(y); got X {X.shape}, y {y.shape}")
    if not np.all(np.isfinite(X)):
        raise TargetError(f"X must be finite: it has {int(np.sum(~np.isfinite(X)))} NaN or inf values")
    if not np.all((y == 0) | (y == 1)):
        raise TargetError("logistic regression needs y in {0, 1}")
    p = X.shape[1]

    def hessian(theta):
        """-(X^T W X + I / tau^2), W = diag(s (1 - s)), s = sigmoid(X theta)."""
        s_ = 1.0 / (1.0 + np.exp(-(X @ np.asarray(theta, dtype=float))))
        return -((X * (s_ * (1.0 - s_))[:, None]).T @ X + np.eye(p) / prior_sd**2)

    params = np.array([1.0 / prior_sd**2])
    return Target(
        name=f"logistic_regression_{dataset}",
        dim=p,
        logp_grad=logistic_regression_logp_grad,
        logp_grad_batch=logistic_regression_logp_grad_batch,
        data=(X, y, params),
        generative=logistic_generative(X, params, prior_sd),
        n_data=X.shape[0],
        param_names=names,
        truth=None,
        hessian=hessian,
        prior=Gaussian(np.zeros(p), prior_sd**2 * np.eye(p)),
        spec={
            "factory": "logistic_regression",
            "dataset": dataset,
            "n_data": X.shape[0],
            "dim": p,
            "prior_sd": prior_sd,
            "seed": seed,
            "data_digest": datasets.digest(X, y) if dataset == "custom" else None,
        },
        description=f"logistic regression ({dataset}, N_D={X.shape[0]}, d={p}); no closed-form truth",
    )
