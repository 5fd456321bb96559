"""The stopping rule, the learning-rate schedule and the rule for rejected steps every VI fit
shares (NN4Post, MeanFieldVI, FullRankVI), as small compiled functions called once per step
from the fit kernels.

The rate decays exponentially from ``lr`` to ``lr x lr_final`` over the planned steps.
The ELBO is averaged over windows of ``window`` steps; when the best window mean has not
improved by more than tol x (1 + |best|) for ``patience`` windows the fit has reached its
plateau. A plateau reached while the rate is still above its final value is the noise floor
of that rate, not the optimum: the rate is then annealed geometrically to its final value
over ``patience`` windows, and the fit stops after them (at once when the rate is already
final). A fit that also watches its parameters (``record_drift``: the natural-gradient
full-rank fit watches its mean) counts a window in which they moved as not stale, and does
not stop while they move; the rate then stays at its final value.

The rule's running numbers are a :data:`PLATEAU_SIZE`-vector (``new_plateau``), so a fit run
in segments is the same fit as one run at once.
"""

from __future__ import annotations

import math

import numpy as np

from ..jit import jit

P_BEST, P_WINDOW_SUM, P_STALE, P_T_ANNEAL, P_LR_ANNEAL, P_MOVING = range(6)
PLATEAU_SIZE = 6


def new_plateau() -> np.ndarray:
    """The rule's state before the first step: no best window yet, no annealing."""
    state = np.zeros(PLATEAU_SIZE)
    state[P_BEST] = -math.inf
    state[P_T_ANNEAL] = -1.0
    return state


@jit
def learning_rate(t, steps, lr, lr_final, anneal_steps, plateau):
    """The rate at (0-based) step t: the exponential decay, or the anneal after a plateau."""
    t_anneal = plateau[P_T_ANNEAL]
    if t_anneal >= 0:
        lr_anneal = plateau[P_LR_ANNEAL]
        return lr_anneal * (lr * lr_final / lr_anneal) ** min(1.0, (t - t_anneal) / anneal_steps)
    return lr * lr_final ** (t / steps)


@jit
def annealed_out(t, anneal_steps, plateau):
    """True once the anneal that followed a plateau has run its course and the parameters have
    stopped moving (stop before step t)."""
    t_anneal = plateau[P_T_ANNEAL]
    return t_anneal >= 0 and t - t_anneal >= anneal_steps and plateau[P_MOVING] == 0.0


@jit
def record_drift(moving, plateau):
    """Whether the last window's average parameters moved from the window's before (by the
    fit's own measure): a window in which they did is not stale, and the fit does not stop
    while they do (the ELBO is flat along a weakly identified direction long before the
    parameters stop travelling along it)."""
    plateau[P_MOVING] = 1.0 if moving else 0.0


@jit
def record_elbo(elbo, done, window, patience, tol, lr, lr_end, plateau):
    """Add step ``done``'s ELBO to the running window; True when the fit should stop now
    (a plateau at the final rate). A plateau above the final rate starts the anneal."""
    if not (tol > 0.0 and window > 0):
        return False
    plateau[P_WINDOW_SUM] += elbo
    if done % window != 0:
        return False
    mean = plateau[P_WINDOW_SUM] / window
    plateau[P_WINDOW_SUM] = 0.0
    best = plateau[P_BEST]
    if mean > best + tol * (1.0 + abs(best if math.isfinite(best) else mean)):
        plateau[P_BEST] = mean
        plateau[P_STALE] = 0.0
    elif plateau[P_MOVING] != 0.0:
        plateau[P_STALE] = 0.0
    elif plateau[P_T_ANNEAL] < 0:
        plateau[P_STALE] += 1.0
        if plateau[P_STALE] >= patience:
            if lr <= lr_end * (1.0 + 1e-12):
                return True
            plateau[P_T_ANNEAL] = done
            plateau[P_LR_ANNEAL] = lr
    return False


# -- rejected steps ---------------------------------------------------------------------------
# A step whose draws meet a NaN or -inf density (or whose update overflows) is rejected and the
# rate halved (as Stan's ADVI adapts its step size down when the ELBO is not finite); after it
# the rate comes back by 2^(1/10) per accepted step (ten steps undo a halving), so a density
# with a hard boundary inside q's mass does not freeze the fit. Only this many rejections in a
# row end the fit (status NONFINITE): the rate is then 2^-20 of its own.
MAX_CONSECUTIVE_REJECTIONS = 20
RATE_RECOVERY = 2.0 ** 0.1
R_REJECTED, R_CONSECUTIVE, R_PENALTY = range(3)


@jit
def new_rejections():
    """The rule's running numbers: rejected steps, of which in a row, the rate's factor."""
    return np.array([0.0, 0.0, 1.0])


@jit
def reject_step(rejections) -> bool:
    """Count a rejected step and halve the rate; True when too many came in a row."""
    rejections[R_REJECTED] += 1.0
    rejections[R_CONSECUTIVE] += 1.0
    rejections[R_PENALTY] *= 0.5
    return rejections[R_CONSECUTIVE] > MAX_CONSECUTIVE_REJECTIONS


@jit
def accept_step(rejections) -> None:
    """An accepted step: the run of rejections ends and the rate comes back a little."""
    rejections[R_CONSECUTIVE] = 0.0
    rejections[R_PENALTY] = min(1.0, rejections[R_PENALTY] * RATE_RECOVERY)
