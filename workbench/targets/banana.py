"""The twisted Gaussian ("banana") of Haario, Saksman and Tamminen (1999).

Start from x ~ N(0, diag(100, 1, ..., 1)) and bend the second coordinate:
y_1 = x_1, y_2 = x_2 + b (x_1^2 - 100), y_k = x_k (k >= 3). The map has Jacobian 1, so
p(y) = N(phi_b(y); 0, diag(100, 1, ..)) with phi_b(y) = (y_1, y_2 - b (y_1^2 - 100), y_3, ..).
Haario et al. use b = 0.03 (moderately) and b = 0.1 (strongly twisted). Normalised: log Z = 0.

Truth (exact): sampler; mean 0; sd(y_1) = 10, sd(y_2) = sqrt(1 + 2 10^4 b^2), sd(y_k) = 1;
no correlations (Cov(y_1, y_2) = b E[y_1^3] = 0); marginals: y_1 normal, y_2 by quadrature
over y_1, the rest standard normal. With dim = 1 only y_1 ~ N(0, 100) remains.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import TargetError
from ..jit import jit
from ..numerics import LOG_2PI, norm
from ..target import Target, Truth

X1_SD = 10.0


@jit
def banana_logp_grad(theta, grad_out, data):
    """log N(phi_b(theta); 0, diag(100, 1, ..)); data = (array([b]),)."""
    b = data[0][0]
    y1 = theta[0]
    lp = -0.5 * y1 * y1 / (X1_SD * X1_SD) - 0.5 * LOG_2PI - math.log(X1_SD)
    grad_out[0] = -y1 / (X1_SD * X1_SD)
    if theta.size > 1:
        u = theta[1] - b * (y1 * y1 - X1_SD * X1_SD)
        lp += -0.5 * u * u - 0.5 * LOG_2PI
        grad_out[0] += 2.0 * b * y1 * u
        grad_out[1] = -u
    for k in range(2, theta.size):
        lp += -0.5 * theta[k] * theta[k] - 0.5 * LOG_2PI
        grad_out[k] = -theta[k]
    return lp


def _normal_pdf(u: float) -> float:
    return math.exp(-0.5 * u * u) / math.sqrt(2.0 * math.pi)


def _normal_cdf(u: float) -> float:
    return 0.5 * math.erfc(-u / math.sqrt(2.0))


def banana(dim: int = 2, twist: float = 0.03) -> Target:
    """Haario's twisted Gaussian in ``dim`` dimensions with twist ``b = twist``."""
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
        raise TargetError(f"dim must be an integer >= 1, got {dim!r}")
    if isinstance(twist, bool) or not isinstance(twist, (int, float, np.integer, np.floating)) or not math.isfinite(twist):
        raise TargetError(f"twist must be a finite number (b in x2 + b x1^2 - 100 b; 0.03 by default), got {twist!r}")
    b = float(twist)
    dim = int(dim)
    sd = np.ones(dim)
    sd[0] = X1_SD
    if dim > 1:
        sd[1] = math.sqrt(1.0 + 2.0 * X1_SD**4 * b * b)

    def sampler(rng, n):
        x = rng.standard_normal((n, dim))
        x[:, 0] *= X1_SD
        if dim > 1:
            x[:, 1] += b * (x[:, 0] ** 2 - X1_SD**2)
        return x

    def _y2(fn, y2):
        def integrand(y1):  # scalar math: scipy.stats on scalars costs ~100x more per call
            return fn(y2 - b * (y1 * y1 - X1_SD**2)) * _normal_pdf(y1 / X1_SD) / X1_SD

        # the integrand peaks (width ~ 1/(2 b |y1|)) where y1^2 = 100 + y2 / b: tell quad
        r2 = X1_SD**2 + y2 / b if b != 0.0 else -1.0
        pts = [-math.sqrt(r2), math.sqrt(r2)] if 0.0 < r2 < (9 * X1_SD) ** 2 else None
        from scipy import integrate

        return integrate.quad(
            integrand, -9 * X1_SD, 9 * X1_SD, points=pts, limit=400, epsabs=1e-13
        )[0]

    def pdf(k, x):
        if k == 0:
            return norm().pdf(x, 0.0, X1_SD)
        if k == 1:
            return np.vectorize(lambda v: _y2(_normal_pdf, v), otypes=[float])(x)
        return norm().pdf(x)

    def cdf(k, x):
        if k == 0:
            return norm().cdf(x, 0.0, X1_SD)
        if k == 1:
            return np.vectorize(lambda v: _y2(_normal_cdf, v), otypes=[float])(x)
        return norm().cdf(x)

    truth = Truth(
        mean=np.zeros(dim),
        sd=sd,
        log_z=0.0,
        sampler=sampler,
        marginal_pdf_fn=pdf,
        marginal_cdf_fn=cdf,
        cov_fn=lambda: np.diag(sd**2),
    )
    return Target(
        name="banana",
        dim=dim,
        logp_grad=banana_logp_grad,
        data=(np.array([b]),),
        truth=truth,
        spec={"factory": "banana", "dim": dim, "twist": b},
        description=f"Haario's twisted Gaussian, b = {b:g}",
    )
