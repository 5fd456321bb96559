"""Isokinetic (microcanonical) dynamics: the velocity lives on the unit sphere.

Robnik, De Luca, Silverstein and Seljak (2023), "Microcanonical Hamiltonian Monte Carlo",
JMLR 24, and Robnik, Cohn-Gordon and Seljak (2025), "Metropolis adjusted microcanonical
Hamiltonian Monte Carlo", arXiv 2503.01707. The dynamics dx/dt = u, du/dt = (I - u u^T)
grad log p / (d - 1) keep |u| = 1 and have the target as the marginal of their stationary
distribution. The velocity update over a time eps has a closed form (MCHMC paper, eq. 10;
MAMS paper, eq. 6): with e = grad / |grad|, delta = eps |grad| / (d - 1), zeta = e^-delta,

    u' = [(1 - zeta)(1 + zeta + (u . e)(1 - zeta)) e + 2 zeta u] / norm,

and the kinetic energy changes by (d - 1) [delta - log 2 + log(1 + u . e + (1 - u . e) zeta^2)]
(MAMS paper, eq. 7), which enters the energy error the Metropolis test of MAMS and the step
size tuning of MCLMC both use. The position moves as x' = x + eps u.

Every function works in preconditioned coordinates y = x / sigma (``sigma`` a diagonal
preconditioner): the density's gradient in y is sigma * grad_x. Integrators (BlackJAX's
``isokinetic_leapfrog`` and ``isokinetic_mclachlan``): velocity Verlet, one gradient per
step, and the minimal-norm second-order scheme of Omelyan, Mryglod and Folk (2003) with
lambda = 0.1932, two gradients per step and about 10x smaller energy error for the same
step. Allocate nothing: ``work`` holds the scratch vectors.
"""

from __future__ import annotations

import math

from ..jit import jit

LEAPFROG, MINIMAL_NORM = 0, 1
INTEGRATORS = {"leapfrog": LEAPFROG, "minimal_norm": MINIMAL_NORM}
GRADS_PER_STEP = {LEAPFROG: 1, MINIMAL_NORM: 2}
MINIMAL_NORM_LAMBDA = 0.1931833275037836  # Omelyan et al. (2003), eq. 20
# rows of the scratch array
X_NEW, G_X = 0, 1
N_WORK = 2


@jit(nrt=False)
def velocity_update(u, gy, eps):
    """The isokinetic velocity update over time ``eps`` with the gradient ``gy`` (in y), in
    place; returns the kinetic energy change (MAMS paper, eq. 6-7). A zero gradient leaves u."""
    d = u.size
    g_norm2 = 0.0
    for i in range(d):
        g_norm2 += gy[i] * gy[i]
    g_norm = math.sqrt(g_norm2)
    if not (g_norm > 0.0) or d < 2:
        return 0.0
    ue = 0.0
    for i in range(d):
        ue += u[i] * gy[i]
    ue /= g_norm
    delta = eps * g_norm / (d - 1)
    zeta = math.exp(-delta)
    a = (1.0 - zeta) * (1.0 + zeta + ue * (1.0 - zeta)) / g_norm
    b = 2.0 * zeta
    norm2 = 0.0
    for i in range(d):
        u[i] = a * gy[i] + b * u[i]
        norm2 += u[i] * u[i]
    inv = 1.0 / math.sqrt(norm2)
    for i in range(d):
        u[i] *= inv
    return (d - 1) * (delta - math.log(2.0) + math.log(1.0 + ue + (1.0 - ue) * zeta * zeta))


@jit(nrt=False)
def _position_and_gradient(logp_grad, data, x, u, sigma, gy, eps, work):
    """x += eps sigma u, then the density and its gradient there (gy = sigma grad_x)."""
    g_x = work[G_X]
    for i in range(x.size):
        x[i] += eps * sigma[i] * u[i]
    lp = logp_grad(x, g_x, data)
    for i in range(x.size):
        gy[i] = sigma[i] * g_x[i]
    return lp


@jit(nrt=False)
def isokinetic_step(logp_grad, data, integrator, x, u, gy, sigma, eps, work):
    """One step of the chosen integrator from (x, u, gy), in place. Returns (log p at the new
    x, kinetic energy change, gradients used). A non-finite log p ends the step early."""
    kinetic = 0.0
    if integrator == LEAPFROG:
        kinetic += velocity_update(u, gy, 0.5 * eps)
        lp = _position_and_gradient(logp_grad, data, x, u, sigma, gy, eps, work)
        if not math.isfinite(lp):
            return lp, kinetic, 1
        kinetic += velocity_update(u, gy, 0.5 * eps)
        return lp, kinetic, 1
    lam = MINIMAL_NORM_LAMBDA
    kinetic += velocity_update(u, gy, lam * eps)
    lp = _position_and_gradient(logp_grad, data, x, u, sigma, gy, 0.5 * eps, work)
    if not math.isfinite(lp):
        return lp, kinetic, 1
    kinetic += velocity_update(u, gy, (1.0 - 2.0 * lam) * eps)
    lp = _position_and_gradient(logp_grad, data, x, u, sigma, gy, 0.5 * eps, work)
    if not math.isfinite(lp):
        return lp, kinetic, 2
    kinetic += velocity_update(u, gy, lam * eps)
    return lp, kinetic, 2


@jit(nrt=False)
def random_unit_vector(rng, u):
    """u uniform on the unit sphere (a normalised standard normal)."""
    norm2 = 0.0
    for i in range(u.size):
        u[i] = rng.standard_normal()
        norm2 += u[i] * u[i]
    inv = 1.0 / math.sqrt(norm2)
    for i in range(u.size):
        u[i] *= inv


@jit(nrt=False)
def partial_refresh(rng, u, eps, big_l):
    """MCLMC's partial velocity refresh (MCHMC paper, sec. 3.2; BlackJAX's
    ``partially_refresh_momentum``): u <- c u + sqrt(1 - c^2) z / sqrt(d), normalised, with
    c = exp(-eps / L): the velocity decoheres over a time L."""
    d = u.size
    c1 = math.exp(-eps / big_l)
    c2 = math.sqrt(1.0 - c1 * c1) / math.sqrt(d)
    norm2 = 0.0
    for i in range(d):
        u[i] = c1 * u[i] + c2 * rng.standard_normal()
        norm2 += u[i] * u[i]
    inv = 1.0 / math.sqrt(norm2)
    for i in range(d):
        u[i] *= inv
