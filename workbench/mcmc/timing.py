"""Timing the target alone, for overhead ratios: wall time / (gradient evaluations x one gradient)."""

from __future__ import annotations

import time

import numpy as np
from numba import types

from ..jit import VEC, jit, target_kernel
from ..rng import fill_standard_normal


def _repeat_logp_grad(logp_grad, data, theta, n):
    """Calls logp_grad n times at theta (jitted, so no Python in the loop); returns a checksum."""
    g = np.empty(theta.size)
    total = 0.0
    for _ in range(n):
        total += logp_grad(theta, g, data)
    return total


repeat_logp_grad = target_kernel(
    lambda t: types.float64(t.logp_grad, t.data, VEC, types.int64)
)(_repeat_logp_grad)


def seconds_per_gradient(target, theta=None, min_seconds: float = 0.2) -> float:
    """Time of one ``logp_grad`` call measured in a jitted loop (best of 3 repetitions)."""
    kernel = repeat_logp_grad.for_target(target)
    x = np.ascontiguousarray(target.initial_point if theta is None else theta, dtype=float)
    n = 16
    while True:  # grow n until one repetition takes min_seconds
        start = time.perf_counter()
        kernel(target.kernel_logp_grad, target.kernel_data, x, n)
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds or n > 1 << 30:
            break
        n *= 4
    best = elapsed
    for _ in range(2):
        start = time.perf_counter()
        kernel(target.kernel_logp_grad, target.kernel_data, x, n)
        best = min(best, time.perf_counter() - start)
    return best / n


@jit
def free_logp_grad(theta, grad_out, data):
    """logp = 0 with a zero gradient: a method run on it times the method's own work alone."""
    for i in range(theta.size):
        grad_out[i] = 0.0
    return 0.0


@jit
def _fill_normals(rng, out, reps):
    for _ in range(reps):
        fill_standard_normal(rng, out)
    return out[0]


def seconds_per_normal() -> float:
    """Time of one standard normal drawn inside a kernel (``workbench.rng``), best of 3."""
    rng, out = np.random.default_rng(0), np.empty(1000)
    _fill_normals(rng, out, 1)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        _fill_normals(rng, out, 2000)
        best = min(best, time.perf_counter() - start)
    return best / (2000 * out.size)
