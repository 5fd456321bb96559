"""The 5-state Markov chain of the survey's sec. 5.1.2 and its stationary distribution.

States A..E with the transition table T (rows: from, columns: to). A and E are transient
(A leaves at once, E stays with probability 0.9); {B, C, D} is closed and aperiodic (cycles
B->D->C->B of length 3 and C->D->C of length 2), so the chain has the unique stationary
distribution pi = pi T = [0, 1/5, 2/5, 2/5, 0], and long-run visit frequencies from any
start converge to it.
"""

from __future__ import annotations

import numpy as np

from ..jit import jit

STATES = ("A", "B", "C", "D", "E")
TRANSITION = np.array(
    [
        [0.0, 1.0, 0.0, 0.0, 0.0],
        [0.0, 0.0, 0.0, 1.0, 0.0],
        [0.0, 0.5, 0.0, 0.5, 0.0],
        [0.0, 0.0, 1.0, 0.0, 0.0],
        [0.0, 0.0, 0.1, 0.0, 0.9],
    ]
)


def stationary_distribution(transition: np.ndarray = TRANSITION) -> np.ndarray:
    """pi with pi T = pi and sum(pi) = 1, by least squares on the stacked linear system.

    Unique when the chain has a single closed class (as here): a rank-deficient system (several
    closed classes) or an inconsistent one (not a transition matrix) raises ValueError.
    """
    k = transition.shape[0]
    system = np.vstack([transition.T - np.eye(k), np.ones((1, k))])
    rhs = np.concatenate([np.zeros(k), [1.0]])
    if np.linalg.matrix_rank(system) < k:
        raise ValueError("the stationary distribution is not unique: the chain has more than one closed class")
    pi, *_ = np.linalg.lstsq(system, rhs, rcond=None)
    if np.max(np.abs(system @ pi - rhs)) > 1e-10:
        raise ValueError("no stationary distribution solves pi T = pi exactly")
    return pi


@jit
def _simulate(cumulative, start, n, rng, out):
    state = start
    for t in range(n):
        u = rng.random()
        nxt = 0
        while nxt < cumulative.shape[1] - 1 and u >= cumulative[state, nxt]:
            nxt += 1
        state = nxt
        out[t] = state


def simulate(n: int, start: int = 0, seed: int = 0, transition: np.ndarray = TRANSITION) -> np.ndarray:
    """A path of n states (ints) of the chain from ``start``."""
    out = np.empty(n, dtype=np.int64)
    _simulate(np.cumsum(transition, axis=1), start, n, np.random.default_rng(seed), out)
    return out


def visit_frequencies(path: np.ndarray, n_states: int = 5, burn_in: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """Long-run frequency of each state and its Monte Carlo standard error (ArviZ's ESS)."""
    import arviz as az

    path = path[burn_in:]
    freq = np.bincount(path, minlength=n_states) / path.size
    se = np.zeros(n_states)
    for k in range(n_states):
        indicator = (path == k).astype(float)
        if 0 < freq[k] < 1:
            se[k] = indicator.std() / np.sqrt(float(az.ess(indicator[None, :, None])[0]))
    return freq, se
