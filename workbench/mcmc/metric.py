"""The Euclidean metric (mass matrix M) of Hamiltonian Monte Carlo.

Kinetic energy K(p) = 1/2 p^T M^-1 p, momenta p ~ N(0, M). A diagonal metric is stored as
its inverse ``inv_mass`` (the estimated posterior variances), a dense one as the matrix
``inv_mass`` together with the Cholesky factor of M for drawing momenta.
"""

from __future__ import annotations

import math

from numba import njit

from ..numerics import REASSOC


@njit(cache=True)
def sample_momentum(rng, inv_mass, p):
    """p ~ N(0, diag(1 / inv_mass)), written into p."""
    for i in range(p.size):
        p[i] = rng.standard_normal() / math.sqrt(inv_mass[i])


@njit(cache=True, fastmath=REASSOC)
def kinetic_energy(p, inv_mass):
    """1/2 p^T diag(inv_mass) p."""
    k = 0.0
    for i in range(p.size):
        k += inv_mass[i] * p[i] * p[i]
    return 0.5 * k


@njit(cache=True)
def velocity(p, inv_mass, out):
    """dK/dp = M^-1 p (Betancourt's p-sharp), written into out."""
    for i in range(p.size):
        out[i] = inv_mass[i] * p[i]


@njit(cache=True)
def sample_momentum_dense(rng, mass_chol, p):
    """p ~ N(0, M) with M = L L^T, L = ``mass_chol`` (lower triangular); written into p."""
    d = p.size
    for i in range(d):
        p[i] = rng.standard_normal()
    for i in range(d - 1, -1, -1):  # p = L z, in place from the last row up
        s = 0.0
        for j in range(i + 1):
            s += mass_chol[i, j] * p[j]
        p[i] = s


@njit(cache=True)
def kinetic_energy_dense(p, inv_mass):
    """1/2 p^T M^-1 p for a dense ``inv_mass`` = M^-1."""
    k = 0.0
    for i in range(p.size):
        s = 0.0
        for j in range(p.size):
            s += inv_mass[i, j] * p[j]
        k += p[i] * s
    return 0.5 * k
