"""The Euclidean metric (mass matrix M) of Hamiltonian Monte Carlo.

Kinetic energy K(p) = 1/2 p^T M^-1 p, momenta p ~ N(0, M). A diagonal metric is stored as
its inverse ``inv_mass`` (the estimated posterior variances), a dense one as the matrix
``inv_mass`` together with the Cholesky factor of M for drawing momenta.
"""

from __future__ import annotations

import math


from ..jit import jit
from ..rng import fill_standard_normal


@jit
def momentum_sd(inv_mass, out):
    """The momentum's sds 1 / sqrt(inv_mass), written into out (once per metric update)."""
    for i in range(out.size):
        out[i] = 1.0 / math.sqrt(inv_mass[i])


@jit(nrt=False)
def sample_momentum(rng, sd, p):
    """p ~ N(0, M), M = diag(sd^2), written into p; returns its kinetic energy 1/2 p^T M^-1 p.

    With p = sd z the kinetic energy is 1/2 |z|^2, computed on the way.
    """
    fill_standard_normal(rng, p)
    return _scale_and_half_square(p, sd)


@jit(fastmath=True, nrt=False)
def _scale_and_half_square(z, sd):
    k = 0.0
    for i in range(z.size):
        k += z[i] * z[i]
        z[i] *= sd[i]
    return 0.5 * k


@jit(fastmath=True)
def kinetic_energy(p, inv_mass):
    """1/2 p^T diag(inv_mass) p."""
    k = 0.0
    for i in range(p.size):
        k += inv_mass[i] * p[i] * p[i]
    return 0.5 * k


@jit
def sample_momentum_dense(rng, mass_chol, p):
    """p ~ N(0, M) with M = L L^T, L = ``mass_chol`` (lower triangular); written into p."""
    d = p.size
    fill_standard_normal(rng, p)
    for i in range(d - 1, -1, -1):  # p = L z, in place from the last row up
        s = 0.0
        for j in range(i + 1):
            s += mass_chol[i, j] * p[j]
        p[i] = s


@jit
def kinetic_energy_dense(p, inv_mass):
    """1/2 p^T M^-1 p for a dense ``inv_mass`` = M^-1."""
    k = 0.0
    for i in range(p.size):
        s = 0.0
        for j in range(p.size):
            s += inv_mass[i, j] * p[j]
        k += p[i] * s
    return 0.5 * k
