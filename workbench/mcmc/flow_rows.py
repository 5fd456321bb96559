"""Which coefficients each row of a coupling layer needs, and a warm start for them.

Each B coordinate's own residual, h_j e^s + (y_j - c_j - v_j) e^-s - t_j (``flow_loss.py``), is
fitted alone (the parents' residuals left aside) by damped Gauss-Newton (Levenberg-Marquardt):
first with its scale and centre only (a_j, c_j); then, one coefficient at a time, a parent's
share in the log-scale (W), in the shift before the scale (U linear, Q quadratic) or after it
(V, R): the one whose one-step Gauss-Newton gain is largest (matching pursuit), as long as it
lowers Schwarz's BIC, n log(cost / n) + log(n) (coefficients) (Schwarz 1978; with ``PENALTY``
times his penalty), up to ``MAX_TERMS``.

A coefficient the posterior does not need is then exactly zero, not noise fitted to the draws:
where a scale is tiny (a funnel's neck, a hierarchy with a small spread) a shift after it is
divided by it in z, and shifts fitted to noise made fresh draws' z a hundred times too large
(measured on a 10-d funnel and centred eight schools; Akaike's 2 per coefficient still let noise
shifts into 40% of a 100-d funnel's rows). Each draw counts with its weight (Huber's IRLS
weights, min(1, delta / ||r||) at the identity: without them the few draws deep in a funnel's
neck decided the choice). L-BFGS on the layer's whole loss then starts next to the answer: from
the identity, its steps through the exponential's curvature took thousands of iterations.
"""

from __future__ import annotations

import math

import numpy as np

from ..jit import jit
from .flow_loss import offsets

MAX_TERMS = 6  # coefficients a row may take beyond its scale and centre
# times BIC's log(n) per coefficient: the residuals' tails are heavier than BIC's Gaussian ones (a
# funnel's), and at 1 a second layer still took small shifts in 90 of a 100-d funnel's rows, fitted
# to the bulk's draws, that broke the neck (chains stuck at v = -7.6)
PENALTY = 3.0
ITERATIONS = 15  # Gauss-Newton steps per fit of a row


@jit
def _residual(y_row, h_bj, y_bj, parents_j, theta, use, jac):
    """One draw's residual of a row, and (into ``jac``) its derivatives in the row's
    coefficients theta = (a, c, W, U, Q, V, R), W.. one entry per parent; coefficients where
    ``use`` is 0 count as 0 but keep their derivative (to score them as candidates)."""
    p = parents_j.size
    s = theta[0]
    pre = 0.0
    post = theta[1]
    for k in range(p):
        if parents_j[k] < 0:
            break
        u = y_row[parents_j[k]]
        s += theta[2 + k] * use[2 + k] * u
        pre += (theta[2 + p + k] * use[2 + p + k] + theta[2 + 2 * p + k] * use[2 + 2 * p + k] * u) * u
        post += (theta[2 + 3 * p + k] * use[2 + 3 * p + k] + theta[2 + 4 * p + k] * use[2 + 4 * p + k] * u) * u
    e = math.exp(s)
    dj = y_bj - post
    r = h_bj * e + dj / e - pre
    ds = h_bj * e - dj / e
    for c in range(jac.size):
        jac[c] = 0.0
    jac[0] = ds
    jac[1] = -1.0 / e
    for k in range(p):
        if parents_j[k] < 0:
            break
        u = y_row[parents_j[k]]
        jac[2 + k] = ds * u
        jac[2 + p + k] = -u
        jac[2 + 2 * p + k] = -u * u
        jac[2 + 3 * p + k] = -u / e
        jac[2 + 4 * p + k] = -u * u / e
    return r


@jit
def _fit(y, h, weights, bj, parents_j, use, theta, iterations):
    """Damped Gauss-Newton on the row's coefficients where ``use`` is 1 (normal equations over
    those only); returns the final weighted cost."""
    n = y.shape[0]
    active = np.flatnonzero(use)
    q = active.size
    jac = np.empty(theta.size)
    damping = 1e-3
    cost = 0.0
    for i in range(n):
        r = _residual(y[i], h[i, bj], y[i, bj], parents_j, theta, use, jac)
        cost += weights[i] * r * r
    trial = theta.copy()
    for _ in range(iterations):
        jtj = np.zeros((q, q))
        jtr = np.zeros(q)
        for i in range(n):
            r = _residual(y[i], h[i, bj], y[i, bj], parents_j, theta, use, jac)
            w = weights[i]
            for c1 in range(q):
                j1 = jac[active[c1]]
                jtr[c1] += w * j1 * r
                for c2 in range(c1 + 1):
                    jtj[c1, c2] += w * j1 * jac[active[c2]]
        for c1 in range(q):
            for c2 in range(c1):
                jtj[c2, c1] = jtj[c1, c2]
            jtj[c1, c1] += damping * jtj[c1, c1] + 1e-12
        step = np.linalg.solve(jtj, jtr)
        trial[:] = theta
        for c in range(q):
            trial[active[c]] -= step[c]
        new_cost = 0.0
        for i in range(n):
            r = _residual(y[i], h[i, bj], y[i, bj], parents_j, trial, use, jac)
            new_cost += weights[i] * r * r
        if new_cost < cost and math.isfinite(new_cost):
            improved = cost - new_cost
            theta[:] = trial
            cost = new_cost
            damping = max(damping / 3.0, 1e-9)
            if improved < 1e-10 * cost:
                break
        else:
            damping *= 10.0
            if damping > 1e8:
                break
    return cost


@jit
def _bic(cost, n, terms):
    """Schwarz's criterion with ``PENALTY`` times his log(n) per coefficient."""
    return n * math.log(max(cost, 1e-300) / n) + PENALTY * math.log(n) * terms


@jit
def select_rows(y, h, weights, b_idx, parents, coef, use_out):
    """Every row's coefficients chosen and warm-started (module docstring): writes them into
    ``coef`` (the layer's vector) and 1 where chosen into ``use_out``."""
    n = y.shape[0]
    b, p = parents.shape
    o_c, o_w, o_u, o_q, o_v, o_r = offsets(b, p)
    m = 2 + 5 * p
    jac = np.empty(m)
    for j in range(b):
        bj = b_idx[j]
        parents_j = parents[j]
        use = np.zeros(m)
        use[0] = 1.0
        use[1] = 1.0
        theta = np.zeros(m)
        cost = _fit(y, h, weights, bj, parents_j, use, theta, ITERATIONS)
        bic = _bic(cost, n, 2.0)
        for _ in range(MAX_TERMS):
            # each candidate's gain in one Gauss-Newton step from the current fit, (J_c' r)^2 / J_c' J_c
            g_c = np.zeros(m)
            h_c = np.zeros(m)
            for i in range(n):
                r = _residual(y[i], h[i, bj], y[i, bj], parents_j, theta, use, jac)
                w = weights[i]
                for c in range(2, m):
                    g_c[c] += w * jac[c] * r
                    h_c[c] += w * jac[c] * jac[c]
            best_gain, best_c = 0.0, -1
            for c in range(2, 2 + 4 * p):  # W, U, Q, V: a quadratic shift after the scale (R) is never taken
                if use[c] == 0.0 and h_c[c] > 0.0:
                    gain = g_c[c] * g_c[c] / h_c[c]
                    if gain > best_gain:
                        best_gain, best_c = gain, c
            if best_c < 0 or _bic(max(cost - best_gain, 1e-300), n, np.sum(use) + 1.0) >= bic:
                break
            use[best_c] = 1.0
            trial = theta.copy()
            trial_cost = _fit(y, h, weights, bj, parents_j, use, trial, ITERATIONS)
            trial_bic = _bic(trial_cost, n, np.sum(use))
            if not trial_bic < bic:
                use[best_c] = 0.0
                break
            theta[:] = trial
            cost, bic = trial_cost, trial_bic
        coef[j] = theta[0]
        coef[o_c + j] = theta[1]
        use_out[j] = 1.0
        use_out[o_c + j] = 1.0
        row = j * p
        for k in range(p):
            for block, o in ((0, o_w), (1, o_u), (2, o_q), (3, o_v), (4, o_r)):
                at = 2 + block * p + k
                coef[o + row + k] = theta[at] * use[at]
                use_out[o + row + k] = use[at]
