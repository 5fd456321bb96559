"""Distributions that methods fit or use as proposals: one interface for all.

Every object here has ``logpdf(x) -> (n,)``, ``sample(n, rng) -> (n, d)``, ``mean``,
``cov`` and ``marginal_pdf(k, x)``, so a fitted Laplace (or, later, VI) approximation can
be handed straight to ``IndependenceMH``, ``ImportanceSampling`` or ``RejectionSampling``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import linalg

from .numerics import norm


def check_proposal(proposal) -> None:
    """ValueError unless ``proposal`` has ``logpdf`` and ``sample`` (or scipy's ``rvs``)."""
    missing = [] if callable(getattr(proposal, "logpdf", None)) else ["logpdf"]
    if not (callable(getattr(proposal, "sample", None)) or callable(getattr(proposal, "rvs", None))):
        missing.append("sample")
    if missing:
        raise ValueError(
            f"the proposal {type(proposal).__name__} lacks {' and '.join(missing)}: give an object "
            "with logpdf(x) -> (n,) and sample(n, rng) -> (n, d) (a Laplace or VI approximation, "
            "a wb.approximations.StudentT, or a scipy.stats distribution such as multivariate_t)"
        )


def _float_array(name: str, value, ndim: int | None = None) -> np.ndarray:
    """``value`` as a float array, or a ValueError naming ``name`` (not NumPy's own words)."""
    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of numbers, got {value!r}") from None
    if ndim == 1:
        if a.ndim > 1 and a.size != max(a.shape):
            raise ValueError(f"{name} must be a vector (1-d), got an array of shape {a.shape}")
        a = a.ravel()
    return a


_BLOCK_FLOATS = 4_000_000
"""Mixture densities are evaluated in blocks of points of about this many floats (32 MB)."""


def _points(x, dim: int) -> np.ndarray:
    """Points to evaluate a density at: (n, dim) (one point (dim,) is n = 1)."""
    x = np.atleast_2d(_float_array("x", x))
    if x.ndim != 2 or x.shape[1] != dim:
        raise ValueError(f"x must have shape (n, {dim}) (or ({dim},) for one point), got {np.shape(x)}")
    return x


def _check_count(n) -> None:
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be an integer >= 0 (how many draws), got {n!r}")


def draw_from(proposal, n: int, rng: np.random.Generator, dim: int) -> np.ndarray:
    """(n, dim) draws from a proposal with ``sample(n, rng)`` or scipy's ``rvs``."""
    if hasattr(proposal, "sample"):
        x = proposal.sample(n, rng)
    else:
        x = proposal.rvs(size=n, random_state=rng)
    x = np.ascontiguousarray(np.asarray(x, dtype=float).reshape(n, -1))
    if x.shape[1] != dim:
        raise ValueError(f"the proposal draws points of dimension {x.shape[1]}, the target has {dim}")
    return x


def _coordinate(k, dim: int) -> int:
    """``k`` as a coordinate index, or a ValueError naming the valid ones."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not -dim <= k < dim:
        raise ValueError(f"coordinate k must be an integer in [0, {dim}) for this {dim}-d distribution, got {k}")
    return int(k)


class Gaussian:
    """A multivariate normal N(mean, cov), e.g. the Laplace approximation.

    ``sample`` uses the Cholesky factor; ``logpdf`` solves with it (no explicit inverse).
    ``Gaussian.from_cholesky(mean, L)`` keeps a fit's own factor (a full-rank VI fit with a
    tiny scale: L L^T rounds to an indefinite matrix, and its factor would not be recovered).
    """

    @classmethod
    def from_cholesky(cls, mean, chol) -> Gaussian:
        """N(mean, L L^T) from a lower-triangular L with a positive diagonal."""
        chol = np.tril(np.atleast_2d(_float_array("chol", chol)))
        mean = _float_array("mean", mean, ndim=1)
        if chol.shape != (mean.size, mean.size) or not np.all(np.isfinite(chol)) or not np.all(np.diag(chol) > 0):
            raise ValueError(f"chol must be a finite ({mean.size}, {mean.size}) lower-triangular matrix with a "
                             "positive diagonal")
        self = cls.__new__(cls)
        self.mean = mean
        self.chol = chol
        self.cov = chol @ chol.T
        self._log_norm = -0.5 * mean.size * math.log(2 * math.pi) - np.sum(np.log(np.diag(chol)))
        return self

    def __init__(self, mean, cov):
        self.mean = _float_array("mean", mean, ndim=1)
        self.cov = np.atleast_2d(_float_array("cov", cov))
        d = self.mean.size
        if self.cov.shape != (d, d):
            raise ValueError(f"cov has shape {self.cov.shape}, expected ({d}, {d}) for a mean of {d} values")
        if not (np.all(np.isfinite(self.mean)) and np.all(np.isfinite(self.cov))):
            raise ValueError("mean and cov of a Gaussian must be finite (they hold NaN or inf)")
        try:
            self.chol = linalg.cholesky(self.cov, lower=True)
        except linalg.LinAlgError:
            raise ValueError(
                f"cov is not positive definite (its smallest eigenvalue is {np.linalg.eigvalsh(self.cov).min():.3g}): "
                "a Gaussian needs a symmetric positive definite covariance"
            ) from None
        self._log_norm = -0.5 * d * math.log(2 * math.pi) - np.sum(np.log(np.diag(self.chol)))

    @property
    def dim(self) -> int:
        return self.mean.size

    @property
    def sd(self) -> np.ndarray:
        return np.sqrt(np.diag(self.cov))

    def logpdf(self, x) -> np.ndarray:
        x = _points(x, self.dim)
        z = linalg.solve_triangular(self.chol, (x - self.mean).T, lower=True)
        return self._log_norm - 0.5 * np.sum(z * z, axis=0)

    def sample(self, n: int, rng=None) -> np.ndarray:
        _check_count(n)
        rng = np.random.default_rng(rng)
        return self.mean + rng.standard_normal((n, self.dim)) @ self.chol.T

    def marginal_pdf(self, k: int, x) -> np.ndarray:
        k = _coordinate(k, self.dim)
        return norm().pdf(x, self.mean[k], math.sqrt(self.cov[k, k]))

    def __repr__(self) -> str:
        return f"Gaussian(dim={self.dim})"


class StudentT(Gaussian):
    """A multivariate Student-t with location ``mean``, scale matrix ``scale`` and ``df``.

    Heavier tails than a Gaussian: the usual safe proposal for importance sampling.
    ``cov`` is scale x df / (df - 2) (infinite for df <= 2).
    """

    def __init__(self, mean, scale, df: float = 5.0):
        super().__init__(mean, scale)
        if isinstance(df, bool) or not isinstance(df, (int, float, np.integer, np.floating)) or not df > 0:
            raise ValueError(f"df must be > 0, got {df}")
        self.df = float(df)
        self.scale = self.cov
        self.cov = self.scale * (df / (df - 2.0)) if df > 2 else np.full_like(self.scale, np.inf)
        d = self.dim
        from scipy.special import gammaln

        self._log_norm = (
            gammaln(0.5 * (df + d)) - gammaln(0.5 * df)
            - 0.5 * d * math.log(df * math.pi) - np.sum(np.log(np.diag(self.chol)))
        )

    def logpdf(self, x) -> np.ndarray:
        x = _points(x, self.dim)
        z = linalg.solve_triangular(self.chol, (x - self.mean).T, lower=True)
        q = np.sum(z * z, axis=0)
        return self._log_norm - 0.5 * (self.df + self.dim) * np.log1p(q / self.df)

    def sample(self, n: int, rng=None) -> np.ndarray:
        _check_count(n)
        rng = np.random.default_rng(rng)
        z = rng.standard_normal((n, self.dim)) @ self.chol.T
        w = rng.chisquare(self.df, size=n) / self.df
        return self.mean + z / np.sqrt(w)[:, None]

    def marginal_pdf(self, k: int, x) -> np.ndarray:
        from scipy.stats import t as student_t

        return student_t.pdf(x, self.df, self.mean[k], math.sqrt(self.scale[k, k]))

    def __repr__(self) -> str:
        return f"StudentT(dim={self.dim}, df={self.df:g})"


def _mixture_weights(weights: np.ndarray) -> np.ndarray:
    """A mixture's weights, checked (finite, non-negative, not all zero) and normalised."""
    if not np.all(np.isfinite(weights)):
        raise ValueError(f"weights of a mixture must be finite, got {weights}")
    if np.any(weights < 0) or not weights.sum() > 0:
        raise ValueError(f"weights of a mixture must be non-negative and not all zero, got {weights}")
    return weights / weights.sum()


class GaussianMixture:
    """sum_i w_i prod_alpha N(x_alpha; mu_i_alpha, s_i_alpha): the nn4post approximation (eq. 1).

    ``weights`` (K,), ``means`` (K, d), ``scales`` (K, d). Its marginal over any subset of
    coordinates is the same kind of mixture with the subset's columns (eq. 5-6): the paper's
    transfer argument (sec. 5). ``wb.targets.mixture_target(q)`` turns it into a workbench Target.
    """

    def __init__(self, weights, means, scales):
        self.weights = _float_array("weights", weights, ndim=1)
        self.means = np.atleast_2d(_float_array("means", means))
        self.scales = np.atleast_2d(_float_array("scales", scales))
        k = self.weights.size
        if self.means.shape[0] != k or self.scales.shape != self.means.shape:
            raise ValueError(f"weights {self.weights.shape}, means {self.means.shape}, scales {self.scales.shape} disagree")
        if not (np.all(np.isfinite(self.means)) and np.all(np.isfinite(self.scales))):
            raise ValueError("weights, means and scales of a mixture must be finite (they hold NaN or inf)")
        if np.any(self.scales <= 0):
            raise ValueError(f"scales must be positive, got scales from {self.scales.min():.3g} to {self.scales.max():.3g}")
        self.weights = _mixture_weights(self.weights)

    @property
    def dim(self) -> int:
        return self.means.shape[1]

    @property
    def mean(self) -> np.ndarray:
        return self.weights @ self.means

    @property
    def cov(self) -> np.ndarray:
        m = self.mean
        c = -np.outer(m, m)
        for w, mu, s in zip(self.weights, self.means, self.scales):
            c += w * (np.diag(s**2) + np.outer(mu, mu))
        return c

    @property
    def sd(self) -> np.ndarray:
        return np.sqrt(self.weights @ (self.scales**2 + self.means**2) - self.mean**2)

    def logpdf(self, x) -> np.ndarray:
        from scipy.special import logsumexp

        x = _points(x, self.dim)
        comp = np.empty((x.shape[0], self.weights.size))
        # one component and a block of points at a time: O(block x d) memory, not O(n x K x d)
        # (8 GB for 200 points of a 5-component mixture at d = 10^6)
        block = max(1, _BLOCK_FLOATS // self.dim)
        for k, (mu, s) in enumerate(zip(self.means, self.scales)):
            const = -float(np.sum(np.log(s))) - 0.5 * self.dim * math.log(2 * math.pi)
            for start in range(0, x.shape[0], block):
                z = (x[start : start + block] - mu) / s
                comp[start : start + block, k] = const - 0.5 * np.einsum("ij,ij->i", z, z)
        with np.errstate(divide="ignore"):
            return logsumexp(comp + np.log(self.weights), axis=1)

    def sample(self, n: int, rng=None) -> np.ndarray:
        _check_count(n)
        rng = np.random.default_rng(rng)
        comp = rng.choice(self.weights.size, size=n, p=self.weights)
        return self.means[comp] + self.scales[comp] * rng.standard_normal((n, self.dim))

    def marginal_pdf(self, k: int, x) -> np.ndarray:
        """Density of coordinate k: a 1-D mixture with the same weights (eq. 6)."""
        k = _coordinate(k, self.dim)
        x = np.asarray(x, dtype=float)[..., None]
        return np.sum(self.weights * norm().pdf(x, self.means[:, k], self.scales[:, k]), axis=-1)

    def marginal(self, indices) -> GaussianMixture:
        """The marginal over the coordinates ``indices``: the same weights, those columns (eq. 5)."""
        idx = np.atleast_1d(np.asarray(indices, dtype=int))
        for k in idx:
            _coordinate(k, self.dim)
        return GaussianMixture(self.weights, self.means[:, idx], self.scales[:, idx])

    def __repr__(self) -> str:
        return f"GaussianMixture(K={self.weights.size}, dim={self.dim})"


class FullCovarianceMixture:
    """sum_k w_k N(x; mu_k, L_k L_k^T): the approximation GMMVI fits.

    ``weights`` (K,), ``means`` (K, d), ``chols`` (K, d, d): lower Cholesky factors of the
    component covariances."""

    def __init__(self, weights, means, chols):
        self.weights = _float_array("weights", weights, ndim=1)
        self.means = np.atleast_2d(_float_array("means", means))
        self.chols = _float_array("chols", chols, ndim=3)
        k, d = self.means.shape
        if self.weights.size != k or self.chols.shape != (k, d, d):
            raise ValueError(f"weights {self.weights.shape}, means {self.means.shape}, chols {self.chols.shape} disagree")
        if not (np.all(np.isfinite(self.means)) and np.all(np.isfinite(self.chols))):
            raise ValueError("weights, means and Cholesky factors of a mixture must be finite (they hold NaN or inf)")
        self.weights = _mixture_weights(self.weights)

    @property
    def dim(self) -> int:
        return self.means.shape[1]

    @property
    def covs(self) -> np.ndarray:
        return np.einsum("kab,kcb->kac", self.chols, self.chols)

    @property
    def mean(self) -> np.ndarray:
        return self.weights @ self.means

    @property
    def cov(self) -> np.ndarray:
        m = self.mean
        return np.einsum("k,kab->ab", self.weights, self.covs + np.einsum("ka,kb->kab", self.means, self.means)) \
            - np.outer(m, m)

    @property
    def sd(self) -> np.ndarray:
        var = np.einsum("kab,kab->ka", self.chols, self.chols)  # the diagonals of L L^T
        return np.sqrt(np.maximum(self.weights @ (var + self.means**2) - self.mean**2, 0.0))

    def logpdf(self, x) -> np.ndarray:
        from scipy.linalg import solve_triangular
        from scipy.special import logsumexp

        x = _points(x, self.dim)
        comp = np.empty((x.shape[0], self.weights.size))
        for k in range(self.weights.size):
            z = solve_triangular(self.chols[k], (x - self.means[k]).T, lower=True, check_finite=False)
            comp[:, k] = (-0.5 * np.einsum("ij,ij->j", z, z) - np.log(np.diag(self.chols[k])).sum()
                          - 0.5 * self.dim * math.log(2 * math.pi))
        with np.errstate(divide="ignore"):
            return logsumexp(comp + np.log(self.weights), axis=1)

    def sample(self, n: int, rng=None) -> np.ndarray:
        _check_count(n)
        rng = np.random.default_rng(rng)
        comp = rng.choice(self.weights.size, size=n, p=self.weights)
        return self.means[comp] + np.einsum("nab,nb->na", self.chols[comp], rng.standard_normal((n, self.dim)))

    def marginal_pdf(self, k: int, x) -> np.ndarray:
        """Density of coordinate k: a 1-D mixture of the components' marginals."""
        k = _coordinate(k, self.dim)
        x = np.asarray(x, dtype=float)[..., None]
        sds = np.sqrt(np.einsum("kb,kb->k", self.chols[:, k, :], self.chols[:, k, :]))
        return np.sum(self.weights * norm().pdf(x, self.means[:, k], sds), axis=-1)

    def __repr__(self) -> str:
        return f"FullCovarianceMixture(K={self.weights.size}, dim={self.dim})"


class LowRankGaussian:
    """N(mean, cov) with cov = diag(alpha) + beta gamma beta^T: the L-BFGS inverse Hessian
    of Pathfinder (Zhang, Carpenter, Gelman and Vehtari 2022, eq. II.1), alpha (d,) > 0,
    beta (d, m), gamma (m, m) symmetric, m << d.

    O(d m) memory and O(d m) per draw or density, after one thin QR of
    diag(alpha)^-1/2 beta = Q R (O(d m^2)): then cov = A A^T with
    A = diag(alpha)^1/2 (I + Q (L - I) Q^T) and L the Cholesky factor of I + R gamma R^T
    (the paper's Algorithm 4). ``cov`` forms the dense matrix on request.
    Raises ``numpy.linalg.LinAlgError`` when cov is not positive definite.
    """

    def __init__(self, mean, alpha, beta, gamma):
        self.mean = np.asarray(mean, dtype=float).ravel()
        self.alpha = np.asarray(alpha, dtype=float).ravel()
        self.beta = np.atleast_2d(np.asarray(beta, dtype=float))
        self.gamma = np.atleast_2d(np.asarray(gamma, dtype=float))
        d = self.mean.size
        if self.alpha.shape != (d,) or self.beta.shape[0] != d or self.gamma.shape != (self.beta.shape[1],) * 2:
            raise ValueError(f"mean {self.mean.shape}, alpha {self.alpha.shape}, beta {self.beta.shape} and "
                             f"gamma {self.gamma.shape} disagree")
        if not (np.all(self.alpha > 0) and np.all(np.isfinite(self.alpha))):
            raise np.linalg.LinAlgError("the diagonal alpha must be positive and finite")
        self._sqrt_alpha = np.sqrt(self.alpha)
        self.q, r = np.linalg.qr(self.beta / self._sqrt_alpha[:, None])
        inner = np.eye(r.shape[0]) + r @ self.gamma @ r.T
        self.chol = np.linalg.cholesky(0.5 * (inner + inner.T))  # LinAlgError when not PD
        self.log_det = float(np.sum(np.log(self.alpha)) + 2.0 * np.sum(np.log(np.diag(self.chol))))
        if not math.isfinite(self.log_det):
            raise np.linalg.LinAlgError("the covariance is singular")

    @property
    def dim(self) -> int:
        return self.mean.size

    @property
    def rank(self) -> int:
        return self.q.shape[1]

    @property
    def cov(self) -> np.ndarray:
        cov = self.beta @ self.gamma @ self.beta.T
        cov[np.diag_indices(self.dim)] += self.alpha
        return 0.5 * (cov + cov.T)

    @property
    def sd(self) -> np.ndarray:
        # diag of alpha^1/2 (I + Q (L L^T - I) Q^T) alpha^1/2, without forming the d x d matrix
        inner = self.chol @ self.chol.T - np.eye(self.rank)
        return np.sqrt(self.alpha * (1.0 + np.sum((self.q @ inner) * self.q, axis=1)))

    def logpdf(self, x) -> np.ndarray:
        x = np.atleast_2d(np.asarray(x, dtype=float))
        y = (x - self.mean) / self._sqrt_alpha  # (n, d)
        u = y @ self.q  # (n, m)
        # cov^-1 = alpha^-1/2 (I + Q ((L L^T)^-1 - I) Q^T) alpha^-1/2
        v = linalg.solve_triangular(self.chol, u.T, lower=True)
        quad = np.sum(y * y, axis=1) - np.sum(u * u, axis=1) + np.sum(v * v, axis=0)
        return -0.5 * (self.log_det + quad + self.dim * math.log(2 * math.pi))

    def sample(self, n: int, rng=None) -> np.ndarray:
        return self.sample_with_logpdf(n, rng)[0]

    def sample_with_logpdf(self, n: int, rng=None) -> tuple[np.ndarray, np.ndarray]:
        """n draws and their log densities, the latter from the standard normals directly:
        log q = -(log det cov + |u|^2 + d log 2 pi) / 2 (Algorithm 4; no solve needed)."""
        rng = np.random.default_rng(rng)
        u = rng.standard_normal((n, self.dim))
        log_q = -0.5 * (self.log_det + np.sum(u * u, axis=1) + self.dim * math.log(2 * math.pi))
        return self.transform(u), log_q

    def transform(self, u: np.ndarray) -> np.ndarray:
        """The points mean + A u for standard normal rows u (n, d)."""
        qu = u @ self.q
        return self.mean + self._sqrt_alpha * (u + (qu @ (self.chol - np.eye(self.rank)).T) @ self.q.T)

    def marginal_pdf(self, k: int, x) -> np.ndarray:
        return norm().pdf(x, self.mean[k], self.sd[k])

    def __repr__(self) -> str:
        return f"LowRankGaussian(dim={self.dim}, rank={self.rank})"
