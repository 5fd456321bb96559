"""The Kalman filter and Rauch-Tung-Striebel smoother of a scalar Gaussian random walk seen
through Gaussian noise, some steps unobserved, vectorised over many (innovation variance,
observation variance) pairs at once: what makes the Brownian-motion posterior exact
(``targets/brownian_motion.py``).

The model, for t = 0..T-1 (Kalman 1960; Rauch, Tung and Striebel 1965; Särkkä, "Bayesian
Filtering and Smoothing", 2013, eq. 4.20-4.21 and 8.2-8.3)::

    x_0 ~ N(0, q),  x_t = x_{t-1} + w_t,  w_t ~ N(0, q),
    y_t = x_t + v_t,  v_t ~ N(0, r)            (only where ``observed[t]``)

Every function takes ``q`` and ``r`` as arrays of one shape (a grid of scales, say) and works
on all of them at once: the loop is over the T steps, never over the grid.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np


class Filtered(NamedTuple):
    """The filter's output, each (T, *grid) except ``log_lik`` (*grid)."""

    log_lik: np.ndarray  # log p(y | q, r), the observed steps' marginal likelihood
    mean: np.ndarray  # E[x_t | y_0..t]
    var: np.ndarray  # Var[x_t | y_0..t]
    pred_mean: np.ndarray  # E[x_t | y_0..t-1]
    pred_var: np.ndarray  # Var[x_t | y_0..t-1]


def random_walk_filter(y: np.ndarray, observed: np.ndarray, q, r) -> Filtered:
    """Kalman filter of the random walk (module docstring) for every (q, r) pair.

    ``y`` (T,) holds the observations (values at unobserved steps are ignored), ``observed``
    (T,) says which steps are seen; ``q``, ``r``: innovation and observation variances,
    broadcast to one shape."""
    q, r = np.broadcast_arrays(np.asarray(q, dtype=float), np.asarray(r, dtype=float))
    steps = len(y)
    shape = (steps, *q.shape)
    mean, var, pred_mean, pred_var = (np.empty(shape) for _ in range(4))
    log_lik = np.zeros(q.shape)
    m, p = np.zeros(q.shape), q.copy()  # the prediction of x_0: its prior
    for t in range(steps):
        pred_mean[t], pred_var[t] = m, p
        if observed[t]:
            s = p + r  # Var[y_t | y_0..t-1]
            e = y[t] - m
            log_lik += -0.5 * (math.log(2.0 * math.pi) + np.log(s) + e * e / s)
            gain = p / s
            m = m + gain * e
            p = p * r / s  # (1 - gain) p, written so it stays positive
        mean[t], var[t] = m, p
        p = p + q  # predict the next step
    return Filtered(log_lik, mean, var, pred_mean, pred_var)


def rts_smoother(f: Filtered) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(E[x_t | y], Var[x_t | y], G_t) for every t from the filter's output, where
    G_t = Var[x_t | y_0..t] / Var[x_{t+1} | y_0..t] is the smoother gain (G_{T-1} = 0):
    Cov(x_t, x_{t+1} | y) = G_t Var[x_{t+1} | y]."""
    mean, var = f.mean.copy(), f.var.copy()
    gain = np.zeros_like(var)
    for t in range(len(mean) - 2, -1, -1):
        g = f.var[t] / f.pred_var[t + 1]
        mean[t] = f.mean[t] + g * (mean[t + 1] - f.pred_mean[t + 1])
        var[t] = f.var[t] + g * g * (var[t + 1] - f.pred_var[t + 1])
        gain[t] = g
    return mean, var, gain


def smoothed_covariance(var: np.ndarray, gain: np.ndarray) -> np.ndarray:
    """Cov(x_s, x_t | y), (T, T, *grid), from the smoother's variances and gains: for s < t
    it is G_s G_{s+1} .. G_{t-1} Var[x_t | y] (the smoothed path is a Gauss-Markov chain)."""
    steps = len(var)
    cov = np.empty((steps, steps, *var.shape[1:]))
    for t in range(steps):
        cov[t, t] = var[t]
        c = var[t]
        for s in range(t - 1, -1, -1):
            c = gain[s] * c
            cov[s, t] = cov[t, s] = c
    return cov


def backward_sample(f: Filtered, rng: np.random.Generator) -> np.ndarray:
    """One path per (q, r) pair from p(x | y, q, r), (T, *grid): forward filtering, backward
    sampling (Carter and Kohn 1994; Frühwirth-Schnatter 1994): x_{T-1} from its filtered
    distribution, then x_t | x_{t+1}, y_0..t ~ N(m_t + G_t (x_{t+1} - m^-_{t+1}), P_t (1 - G_t))."""
    steps = len(f.mean)
    x = np.empty_like(f.mean)
    x[-1] = f.mean[-1] + np.sqrt(f.var[-1]) * rng.standard_normal(f.mean.shape[1:])
    for t in range(steps - 2, -1, -1):
        g = f.var[t] / f.pred_var[t + 1]
        m = f.mean[t] + g * (x[t + 1] - f.pred_mean[t + 1])
        v = f.var[t] * (1.0 - g)
        x[t] = m + np.sqrt(np.maximum(v, 0.0)) * rng.standard_normal(m.shape)
    return x
