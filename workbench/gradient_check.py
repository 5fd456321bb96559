"""The gradient of a target's density checked against finite differences:
:func:`check_gradient` for a user at any time, :func:`verify_gradient` once when a user's
target is built (``Target.from_numba``, ``from_logp``, ``from_pymc``). Both call the target's
own compiled adapter (``target.kernel_logp_grad``), so they check what the methods run.
"""

from __future__ import annotations

import math
import time
import warnings
from typing import NamedTuple

import numpy as np

from . import density_faults
from .errors import TargetError, format_point


def _is_target(obj) -> bool:
    # a duck check: this module sits below target.py (Target builds on it)
    return all(hasattr(obj, a) for a in ("kernel_logp_grad", "kernel_data", "dim", "initial_point", "check_point"))


class GradientCheck(NamedTuple):
    """Result of :func:`check_gradient`.

    ``max_rel_error`` is the worst, over points, of
    ``max_k |g_k - fd_k| / max(1, max_k |fd_k|)``: a relative error where the gradient is
    large and an absolute one where it is near zero (at a mode).
    """

    max_rel_error: float
    errors: np.ndarray  # per point
    points: np.ndarray  # (n_points, d)
    worst_point: np.ndarray
    worst_coordinate: int

    def __repr__(self) -> str:
        return (
            f"GradientCheck(max_rel_error={self.max_rel_error:.3g} over {len(self.errors)} "
            f"points; worst at coordinate {self.worst_coordinate} of {format_point(self.worst_point)})"
        )


# central-difference stencils: (offsets in steps h, weights), the derivative = sum w f(x + o h) / h
_STENCILS = {
    3: ((1.0, -1.0), (0.5, -0.5)),  # error O(h^2), 2 density calls per coordinate
    5: ((2.0, 1.0, -1.0, -2.0), (-1.0 / 12.0, 8.0 / 12.0, -8.0 / 12.0, 1.0 / 12.0)),  # O(h^4), 4 calls
}


def finite_difference_gradient(target, theta, rel_step: float = 1e-3, stencil: int = 5) -> np.ndarray:
    """Gradient of log p by central differences, from Python: the 5-point stencil (error
    O(h^4)) or the 3-point one (O(h^2), half the density calls), step h = rel_step max(1, |theta_k|).
    A coordinate where a neighbouring density is not finite comes out non-finite."""
    offsets, weights = _STENCILS[stencil]
    x = target._as_theta(theta).copy()
    fd = np.empty(target.dim)
    g = np.empty(target.dim)
    for k in range(target.dim):
        h = rel_step * max(1.0, abs(x[k]))
        orig = x[k]
        total = 0.0
        for offset, weight in zip(offsets, weights):
            x[k] = orig + offset * h
            total += weight * target.kernel_logp_grad(x, g, target.kernel_data)
        x[k] = orig
        fd[k] = total / h
    return fd


def check_gradient(
    target,
    points=None,
    n_points: int = 3,
    seed: int = 0,
    rel_step: float = 1e-3,
) -> GradientCheck:
    """Compare ``target.logp_grad``'s gradient with central finite differences.

    Parameters
    ----------
    points : array (n, d) or (d,), optional
        Where to check. By default ``n_points`` exact draws when the target has an exact
        sampler (typical points), else the initial point plus standard normal noise.
    rel_step : float
        Finite-difference step relative to max(1, |theta_k|).
    """
    if not _is_target(target):
        raise TargetError(f"check_gradient needs a workbench Target, got {type(target).__name__}")
    if not (isinstance(rel_step, (int, float, np.floating)) and 0.0 < rel_step < 1.0):
        raise TargetError(f"rel_step must be a number in (0, 1), got {rel_step!r}")
    if points is None and (isinstance(n_points, bool) or not isinstance(n_points, (int, np.integer)) or n_points < 1):
        raise TargetError(f"n_points must be an integer >= 1 (how many points to check at), got {n_points!r}")
    rng = np.random.default_rng(seed)
    if points is None:
        if target.truth is not None and target.truth.sampler is not None:
            points = target.truth.sample(n_points, rng)
        else:
            points = target.initial_point + rng.standard_normal((n_points, target.dim))
    try:
        pts = np.atleast_2d(np.asarray(points, dtype=float))
    except (TypeError, ValueError):
        raise TargetError(f"points must be an array (n, {target.dim}) of numbers, got {points!r}") from None
    if pts.ndim != 2 or pts.shape[1] != target.dim:
        raise TargetError(f"points must have shape (n, {target.dim}) or ({target.dim},), got {np.shape(points)}")
    errors = np.empty(len(pts))
    worst = (-1.0, 0, 0)
    for i, p in enumerate(pts):
        target.check_point(p, what="gradient-check point")
        _, g = target.logp_and_grad(p)
        fd = finite_difference_gradient(target, p, rel_step)
        diff = np.abs(g - fd)
        errors[i] = diff.max() / max(1.0, np.abs(fd).max())
        if errors[i] > worst[0]:
            worst = (errors[i], i, int(diff.argmax()))
    return GradientCheck(float(errors.max()), errors, pts, pts[worst[1]], worst[2])


# --------------------------------------------------------------------------------------
# The gradient check made when a user's target is built
# --------------------------------------------------------------------------------------

GRADIENT_CHECK_MAX_DIM = 5000
"""Above this dimension ``verify_gradient`` skips (with a note): 3 x (2 d + 1) density calls."""
GRADIENT_CHECK_MAX_SECONDS = 5.0
"""...or when those calls would take longer than this."""
GRADIENT_CHECK_RTOL = 1e-3
"""A coordinate is wrong when |g - fd| > RTOL max(1, |g|, |fd|) + the differences' round-off."""
FD_STEP = float(np.cbrt(np.finfo(float).eps))
"""The 3-point stencil's relative step, eps^(1/3): it balances truncation and round-off."""


def verify_gradient(target, n_points: int = 3, seed: int = 0) -> dict:
    """Check ``target.logp_grad``'s gradient against central differences once, when built.

    At the initial point and ``n_points - 1`` points near it (the initial point plus
    N(0, 0.5^2 max(1, |x|)^2) noise, shrunk where the density is not finite there; a sign
    error is invisible at a mode, where the gradient is zero). Raises :class:`TargetError`
    naming the worst coordinate when a coordinate disagrees beyond rounding; records what
    was checked in ``target.build_info["gradient_check"]`` and returns it. Skipped, with a
    note there and a warning, above ``GRADIENT_CHECK_MAX_DIM`` or when the check would take
    longer than ``GRADIENT_CHECK_MAX_SECONDS``.
    """
    d = target.dim
    x0 = target.initial_point
    g0 = np.empty(d)
    one_call = math.inf
    for _ in range(3):  # the first call from Python can be slow (lazy initialisation): take the best
        start = time.perf_counter()
        target.kernel_logp_grad(x0, g0, target.kernel_data)
        one_call = min(one_call, time.perf_counter() - start)
    expected = n_points * (2 * d + 1) * one_call
    if d > GRADIENT_CHECK_MAX_DIM or expected > GRADIENT_CHECK_MAX_SECONDS:
        why = (f"d = {d} > {GRADIENT_CHECK_MAX_DIM}" if d > GRADIENT_CHECK_MAX_DIM
               else f"it would take about {expected:.0f} s")
        note = {"checked": False, "note": f"gradient check skipped: {why}; run wb.check_gradient(target) to check it"}
        target.build_info["gradient_check"] = note
        warnings.warn(f"Target {target.name!r}: {note['note']}", UserWarning, stacklevel=3)
        return note
    # a density that raises near the start is no density there (density_faults.py): the probes
    # shrink toward the start, the differences skip it; at the start itself it raised before this
    with density_faults.collect(target.kernel_data[0].ctypes.data):
        return _compare_at_points(target, x0, n_points, seed)


def _compare_at_points(target, x0: np.ndarray, n_points: int, seed: int) -> dict:
    d = target.dim
    g0 = np.empty(d)
    rng = np.random.default_rng(seed)
    points = [x0]
    for _ in range(n_points - 1):
        noise = 0.5 * rng.standard_normal(d) * np.maximum(1.0, np.abs(x0))
        for shrink in (1.0, 0.1, 0.01):
            x = x0 + shrink * noise
            if math.isfinite(target.kernel_logp_grad(x, g0, target.kernel_data)):
                points.append(x)
                break
    worst = (0.0, -1, None, 0.0, 0.0)  # (excess over tolerance, coordinate, point, g, fd)
    max_rel = 0.0
    n_checked = 0
    for x in points:
        g = np.empty(d)
        lp = target.kernel_logp_grad(x, g, target.kernel_data)
        if not (math.isfinite(lp) and np.all(np.isfinite(g))):
            continue
        fd = finite_difference_gradient(target, x, FD_STEP, stencil=3)
        h = FD_STEP * np.maximum(1.0, np.abs(x))
        ok = np.isfinite(fd)
        n_checked += 1
        diff = np.abs(g - fd)
        scale = np.maximum(1.0, np.maximum(np.abs(g), np.abs(fd)))
        roundoff = 100.0 * np.finfo(float).eps * max(1.0, abs(lp)) / h
        excess = np.where(ok, diff / (GRADIENT_CHECK_RTOL * scale + roundoff), 0.0)
        max_rel = max(max_rel, float(np.max(np.where(ok, diff / scale, 0.0))))
        k = int(np.argmax(excess))
        if excess[k] > worst[0]:
            worst = (float(excess[k]), k, x, float(g[k]), float(fd[k]))
    info = {"checked": True, "points": n_checked, "max_rel_error": max_rel,
            "density_calls": n_checked * (2 * d + 1)}
    target.build_info["gradient_check"] = info
    if worst[0] > 1.0:
        _, k, x, gk, fdk = worst
        raise TargetError(
            f"the gradient of target {target.name!r} is wrong: at coordinate {k} "
            f"({target.param_names[k]}) logp_grad wrote {gk:.6g} but the density's slope (central "
            f"differences) is {fdk:.6g}, at the point {format_point(x)}. Check d log p / d "
            f"{target.param_names[k]} (a sign, a factor, a missing term of the prior); "
            "check_gradient=False skips this check"
        )
    return info
