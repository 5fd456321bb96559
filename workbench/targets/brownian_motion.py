"""Brownian motion with unknown scales and missing middle observations, with its exact truth.

A random walk x_t ~ N(x_{t-1}, s_i^2), x_0 ~ N(0, s_i^2), seen through y_t ~ N(x_t, s_o^2) at
every step but the middle ten; s_i, s_o ~ LogNormal(0, 2). Coordinates (log s_i, log s_o,
x_0..x_29): d = 32. Inference Gym's ``BrownianMotionUnknownScalesMissingMiddleObservations``
(the MAMS paper's "Brownian motion"), on the Gym's own observations (a walk it drew at
s_i = 0.1 and saw with s_o = 0.15, checked in because its snippet was not seeded), so the
posterior is the one the Gym and the MAMS paper report on. ``data(seed)`` draws a new walk the
same way instead (and ``exact_truth(seed)`` its posterior's truth): seed 0 was this library's
data set before it took the Gym's, a harder posterior (log s_o less well identified).

**The truth is exact.** Given the two log scales u = (log s_i, log s_o) the path is
linear-Gaussian: a Kalman filter gives p(y | u) in closed form and the Rauch-Tung-Striebel
smoother the path's conditional mean and covariance (``targets/kalman.py``). What is left is a
2-d integral over u, done on a uniform grid (the trapezoidal rule, which converges
geometrically for a smooth integrand that vanishes at the box's edges; Trefethen and Weideman
2014) over a box holding all but e^-40 of the posterior's mass. Every moment, marginal and
log Z is a weighted sum over that grid; the exact sampler draws u from the grid (uniform
within its cell) and then the path from its Gaussian (forward filtering, backward sampling).
Refining the grid from ``GRID_POINTS`` to twice as many points a side moves no mean or sd by
more than 1e-6 posterior sds (``tests/unit/targets/test_brownian_motion.py``).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..jit import jit
from ..numerics import LOG_2PI
from ..target import Target, Truth
from ..target_forms import Generative
from .kalman import backward_sample, random_walk_filter, rts_smoother, smoothed_covariance

STEPS = 30
LOG_SD_FLOOR = -345.0  # exp(-2 x log sd) overflows a double just below -354
MISSING = slice(10, 20)
TRUE_SCALES = {"innovation_sd": 0.1, "observation_sd": 0.15}
PRIOR_SD = 2.0  # s ~ LogNormal(0, 2): log s ~ N(0, 2^2)
GRID_POINTS = 241  # a side of the quadrature grid over (log s_i, log s_o)
MASS_CUTOFF = 40.0  # the box holds every point within e^-40 of the density's peak
WEIGHT_FLOOR = 1e-300  # grid points below this weight are dropped from the sums


# Inference Gym's observations at the 20 observed steps (its dataset module
# ``brownian_motion_missing_middle_observations``, OBSERVED_LOC, stored there as float32)
GYM_OBSERVATIONS = np.array([
    0.21592641, 0.118771404, -0.07945447, 0.037677474, -0.27885845, -0.1484156, -0.3250906, -0.22957903,
    -0.44110894, -0.09830782, -0.8786016, -0.83736074, -0.7384849, -0.8939254, -0.7774566, -0.70238715,
    -0.87771565, -0.51853573, -0.6948214, -0.6202789,
], dtype=np.float32).astype(float)


def data(seed: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(observed values, their step indices), the middle ten steps missing: Inference Gym's
    observations, or with ``seed`` a walk drawn as theirs was (s_i = 0.1, seen with s_o = 0.15)."""
    steps = np.delete(np.arange(STEPS), np.arange(STEPS)[MISSING]).astype(np.int64)
    if seed is None:
        return GYM_OBSERVATIONS.copy(), steps
    rng = np.random.default_rng(seed)
    x = np.cumsum(TRUE_SCALES["innovation_sd"] * rng.standard_normal(STEPS))
    y = x[steps] + TRUE_SCALES["observation_sd"] * rng.standard_normal(steps.size)
    return y, steps


@jit
def bm_logp_grad(theta, grad_out, data):
    """theta = (log s_i, log s_o, x_0..x_{T-1}); see the module docstring."""
    y, steps = data
    u_i, u_o = theta[0], theta[1]
    if u_i < LOG_SD_FLOOR or u_o < LOG_SD_FLOOR:
        # 1 / s^2 overflows, and a zero increment or residual would give 0 x inf = NaN: sds
        # under 1e-150 are treated as outside the support
        for k in range(theta.size):
            grad_out[k] = 0.0
        return -math.inf
    inv_vi = math.exp(-2.0 * u_i)
    inv_vo = math.exp(-2.0 * u_o)
    n = theta.size - 2
    # LogNormal(0, 2) priors with the Jacobian of the log transform: N(u; 0, 2^2)
    lp = -0.125 * (u_i * u_i + u_o * u_o) - 2.0 * (math.log(2.0) + 0.5 * LOG_2PI)
    g_i = -0.25 * u_i
    g_o = -0.25 * u_o
    previous = 0.0
    for t in range(n):
        e = theta[2 + t] - previous
        lp += -0.5 * e * e * inv_vi - u_i - 0.5 * LOG_2PI
        g_i += e * e * inv_vi - 1.0
        grad_out[2 + t] = -e * inv_vi
        if t > 0:
            grad_out[1 + t] += e * inv_vi
        previous = theta[2 + t]
    for k in range(y.size):
        t = steps[k]
        r = y[k] - theta[2 + t]
        lp += -0.5 * r * r * inv_vo - u_o - 0.5 * LOG_2PI
        g_o += r * r * inv_vo - 1.0
        grad_out[2 + t] += r * inv_vo
    grad_out[0] = g_i
    grad_out[1] = g_o
    return lp


# ----------------------------------------------------------------------------- the exact truth


def _observations(y: np.ndarray, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(T,) values and the mask of observed steps, as the filter takes them."""
    full, seen = np.zeros(STEPS), np.zeros(STEPS, dtype=bool)
    full[steps], seen[steps] = y, True
    return full, seen


def log_scale_density(y: np.ndarray, steps: np.ndarray, u_i, u_o) -> np.ndarray:
    """log p(y | u) + log p(u), unnormalised in u, at broadcast arrays of (log s_i, log s_o):
    the Kalman filter's marginal likelihood and the N(0, 2^2) priors. Integrating it over u
    gives log Z of ``bm_logp_grad``, which is normalised in (u, x)."""
    full, seen = _observations(y, steps)
    u_i, u_o = np.broadcast_arrays(np.asarray(u_i, float), np.asarray(u_o, float))
    f = random_walk_filter(full, seen, np.exp(2.0 * u_i), np.exp(2.0 * u_o))
    prior = -0.5 * (u_i**2 + u_o**2) / PRIOR_SD**2 - 2.0 * (math.log(PRIOR_SD) + 0.5 * LOG_2PI)
    return f.log_lik + prior


class ScaleGrid:
    """The posterior of the two log scales on a uniform grid, and the path's conditional
    moments at every point of it that carries weight.

    ``u_i``, ``u_o`` the axes; ``weights`` (points,) of the kept points ``points`` (points, 2),
    summing to 1; ``log_z``; ``path_mean``, ``path_var`` (points, T): E and Var of x | y, u."""

    def __init__(self, y: np.ndarray, steps: np.ndarray, n: int = GRID_POINTS, margin: float = 0.0):
        self.y, self.steps = y, steps
        # a coarse look over +-7 prior sds finds the box that holds the mass
        coarse = np.linspace(-7 * PRIOR_SD, 7 * PRIOR_SD, 281)
        lp = log_scale_density(y, steps, coarse[:, None], coarse[None, :])
        keep = lp > lp.max() - MASS_CUTOFF
        step = coarse[1] - coarse[0]
        rows, cols = np.flatnonzero(keep.any(axis=1)), np.flatnonzero(keep.any(axis=0))
        pad = 2 * step + margin
        self.u_i = np.linspace(coarse[rows[0]] - pad, coarse[rows[-1]] + pad, n)
        self.u_o = np.linspace(coarse[cols[0]] - pad, coarse[cols[-1]] + pad, n)
        self.h_i, self.h_o = self.u_i[1] - self.u_i[0], self.u_o[1] - self.u_o[0]
        lp = log_scale_density(y, steps, self.u_i[:, None], self.u_o[None, :])
        top = lp.max()
        self.log_z = float(top + math.log(np.exp(lp - top).sum() * self.h_i * self.h_o))
        w = np.exp(lp - top)
        w /= w.sum()
        kept = w > WEIGHT_FLOOR
        ii, oo = np.nonzero(kept)
        self.points = np.column_stack([self.u_i[ii], self.u_o[oo]])
        self.weights = w[kept] / w[kept].sum()
        full, seen = _observations(y, steps)
        f = random_walk_filter(full, seen, np.exp(2.0 * self.points[:, 0]), np.exp(2.0 * self.points[:, 1]))
        mean, var, gain = rts_smoother(f)
        self.path_mean, self.path_var, self._gain = mean.T, var.T, gain.T

    def moments(self) -> tuple[np.ndarray, np.ndarray]:
        """(mean, sd) of (log s_i, log s_o, x_0..x_{T-1})."""
        w = self.weights
        u_mean = w @ self.points
        u_var = w @ (self.points - u_mean) ** 2
        x_mean = w @ self.path_mean
        x_var = w @ (self.path_var + self.path_mean**2) - x_mean**2
        return np.concatenate([u_mean, x_mean]), np.sqrt(np.concatenate([u_var, x_var]))

    def covariance(self, chunk: int = 4096) -> np.ndarray:
        """The (d, d) posterior covariance: Cov(x | y, u) from the smoother's chain, averaged,
        plus the covariance of the conditional means."""
        mean, _ = self.moments()
        d = STEPS + 2
        second = np.zeros((d, d))
        for lo in range(0, len(self.weights), chunk):
            sl = slice(lo, lo + chunk)
            w = self.weights[sl]
            z = np.column_stack([self.points[sl], self.path_mean[sl]])
            second += (z * w[:, None]).T @ z
            cov_x = smoothed_covariance(self.path_var[sl].T, self._gain[sl].T)  # (T, T, points)
            second[2:, 2:] += cov_x @ w
        return second - np.outer(mean, mean)

    def marginal_pdf(self, k: int, x: np.ndarray, chunk: int = 2048) -> np.ndarray:
        """The posterior density of coordinate ``k`` at ``x``: for a log scale, the filter's
        likelihood integrated over the other scale; for a step of the path, the mixture of
        its conditional Gaussians over the grid."""
        x = np.atleast_1d(np.asarray(x, dtype=float))
        flat = x.ravel()
        if k < 2:
            other = self.u_o if k == 0 else self.u_i
            h = self.h_o if k == 0 else self.h_i
            a, b = (flat[:, None], other[None, :]) if k == 0 else (other[None, :], flat[:, None])
            lp = log_scale_density(self.y, self.steps, a, b)
            return (np.exp(lp - self.log_z).sum(axis=1) * h).reshape(x.shape)
        m, v = self.path_mean[:, k - 2], self.path_var[:, k - 2]
        out = np.empty(flat.shape)
        for lo in range(0, flat.size, chunk):
            z = flat[lo:lo + chunk, None]
            out[lo:lo + chunk] = (np.exp(-0.5 * (z - m) ** 2 / v) / np.sqrt(2 * math.pi * v)) @ self.weights
        return out.reshape(x.shape)

    def marginal_cdf(self, k: int, x: np.ndarray) -> np.ndarray:
        """The posterior distribution function of coordinate ``k`` at ``x``."""
        from scipy.special import ndtr

        x = np.atleast_1d(np.asarray(x, dtype=float))
        if k < 2:
            axis = self.u_i if k == 0 else self.u_o
            h = self.h_i if k == 0 else self.h_o
            mass = np.bincount(np.searchsorted(axis, self.points[:, k]), self.weights, minlength=axis.size)
            # cell j covers [axis_j - h/2, axis_j + h/2]: linear within the cell
            edges = np.concatenate([[axis[0] - h / 2], axis + h / 2])
            cum = np.concatenate([[0.0], np.cumsum(mass)])
            return np.interp(x, edges, cum, left=0.0, right=1.0)
        m, s = self.path_mean[:, k - 2], np.sqrt(self.path_var[:, k - 2])
        return (ndtr((x.ravel()[:, None] - m) / s) @ self.weights).reshape(x.shape)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` draws: u from the grid (uniform within its cell), then x | y, u exactly."""
        idx = rng.choice(len(self.weights), size=n, p=self.weights)
        u = self.points[idx] + (rng.random((n, 2)) - 0.5) * np.array([self.h_i, self.h_o])
        full, seen = _observations(self.y, self.steps)
        f = random_walk_filter(full, seen, np.exp(2.0 * u[:, 0]), np.exp(2.0 * u[:, 1]))
        return np.column_stack([u, backward_sample(f, rng).T])


@functools.cache
def scale_grid(seed: int | None = None, n: int = GRID_POINTS) -> ScaleGrid:
    """The quadrature of the bundled data set (built once per process: about 0.1 s)."""
    y, steps = data(seed)
    return ScaleGrid(y, steps, n)


def exact_truth(seed: int | None = None) -> Truth:
    """The posterior's exact :class:`Truth` (module docstring)."""
    grid = scale_grid(seed)
    mean, sd = grid.moments()
    return Truth(mean=mean, sd=sd, log_z=grid.log_z, sampler=grid.sample, marginal_pdf_fn=grid.marginal_pdf,
                 marginal_cdf_fn=grid.marginal_cdf, cov_fn=grid.covariance,
                 extras={"method": f"Kalman filter and RTS smoother, trapezoidal rule over the log scales on "
                                   f"{GRID_POINTS} x {GRID_POINTS} points"})


def generative(steps: np.ndarray) -> Generative:
    """s_i, s_o ~ LogNormal(0, 2), the walk, and y_t ~ N(x_t, s_o^2) at the observed steps."""

    def simulate(rng):
        u = PRIOR_SD * rng.standard_normal(2)
        x = np.cumsum(math.exp(u[0]) * rng.standard_normal(STEPS))
        return np.concatenate([u, x]), (x[steps] + math.exp(u[1]) * rng.standard_normal(steps.size), steps)

    def log_likelihood(draws, data):
        y, steps_ = data
        z = np.asarray(draws, dtype=float)
        u_o = z[:, 1:2]
        r = y[None, :] - z[:, 2 + steps_]
        return np.sum(-0.5 * r * r * np.exp(-2.0 * u_o) - u_o - 0.5 * LOG_2PI, axis=1)

    return Generative(simulate, log_likelihood)


def brownian_motion() -> Target:
    """Inference Gym's posterior, on its observations (module docstring)."""
    y, steps = data()
    return Target(
        name="brownian_motion",
        dim=STEPS + 2,
        logp_grad=bm_logp_grad,
        data=(y, steps),
        param_names=("sigma_innov_log__", "sigma_obs_log__", *(f"x[{t}]" for t in range(STEPS))),
        initial_point=np.zeros(STEPS + 2),
        truth=exact_truth(),
        generative=generative(steps),
        spec={"factory": "posterior", "name": "brownian_motion", "backend": "numba"},
        description="Brownian motion with unknown scales, the middle 10 of 30 steps unobserved (d = 32); exact truth "
                    "(Kalman filter and smoother, quadrature over the two scales)",
    )
