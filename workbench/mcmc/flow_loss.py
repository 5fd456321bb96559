"""The Fisher divergence of a coupling layer (``flow.py``), its gradient in the layer's
coefficients, and the layer applied to draws and their scores, in the normalizing direction.

For draws y (n, d) at a layer's output, with scores h = d log p / dy, the layer's inverse is
z = y off B and, for j in B with parents u = y_P(j),

    z_j = (y_j - c_j - v_j(u)) e^{-s_j(u)} - t_j(u),

and the score at z is h'_j = h_j e^{s_j} for j in B and, for a parent k,
h'_k = h_k + sum over rows j reading k of [h_j d y_j / d u_k + W_jk] (the Jacobian's transpose and
the log-determinant's gradient; ``flow.flow_backward`` does the same for one point). The loss is
the mean over draws of ||h' + z||^2, the Fisher divergence from N(0, I) (Hyvärinen 2005), in
Huber's robust form per draw above ``delta`` (nutpie's: 2 delta ||r|| - delta^2, so that the few
draws deep in a funnel's neck, whose scores are enormous, do not decide the fit alone), plus a
ridge on the coefficients.
"""

from __future__ import annotations

import math

import numpy as np

from ..jit import jit


@jit(inline=True)
def offsets(b, p):
    """Where a layer's coefficient blocks start in its vector (a, c, W, U, Q, V, R)."""
    o_c = b
    o_w = 2 * b
    o_u = o_w + b * p
    o_q = o_u + b * p
    o_v = o_q + b * p
    o_r = o_v + b * p
    return o_c, o_w, o_u, o_q, o_v, o_r


@jit(inline=True)
def conditioners(coef, y_row, parents, j, offs):
    """(s_j, t_j, c_j + v_j) of row j at one draw: its log-scale, the shift before the scale and
    the one after it."""
    o_c, o_w, o_u, o_q, o_v, o_r = offs
    p = parents.shape[1]
    row = j * p
    s = coef[j]
    pre = 0.0
    post = coef[o_c + j]
    for k in range(p):
        parent = parents[j, k]
        if parent < 0:
            break
        u = y_row[parent]
        s += coef[o_w + row + k] * u
        pre += (coef[o_u + row + k] + coef[o_q + row + k] * u) * u
        post += (coef[o_v + row + k] + coef[o_r + row + k] * u) * u
    return s, pre, post


@jit(fastmath=True)
def layer_loss(y, h, b_idx, parents, coef, ridge, delta, grad):
    """The layer's robust Fisher loss on draws ``y`` with scores ``h`` (module docstring) at the
    coefficients ``coef``, with its gradient written into ``grad``."""
    n, d = y.shape
    b, p = parents.shape
    offs = offsets(b, p)
    o_c, o_w, o_u, o_q, o_v, o_r = offs
    for i in range(coef.size):
        grad[i] = 0.0
    r = np.empty(d)
    e = np.empty(b)
    dd = np.empty(b)
    loss = 0.0
    for i in range(n):
        yi, hi = y[i], h[i]
        for c in range(d):
            r[c] = hi[c] + yi[c]
        for j in range(b):
            s, pre, post = conditioners(coef, yi, parents, j, offs)
            bj = b_idx[j]
            e[j] = math.exp(s)
            dd[j] = yi[bj] - post
            hb = hi[bj]
            r[bj] = hb * e[j] + dd[j] / e[j] - pre
            row = j * p
            for k in range(p):
                parent = parents[j, k]
                if parent < 0:
                    break
                u = yi[parent]
                w = coef[o_w + row + k]
                r[parent] += hb * (dd[j] * w + e[j] * (coef[o_u + row + k] + 2.0 * coef[o_q + row + k] * u)
                                   + coef[o_v + row + k] + 2.0 * coef[o_r + row + k] * u) + w
        norm2 = 0.0
        for c in range(d):
            norm2 += r[c] * r[c]
        weight = 1.0  # Huber: d(2 delta |r| - delta^2) / dr = (delta / |r|) 2 r
        if norm2 > delta * delta:
            norm = math.sqrt(norm2)
            loss += 2.0 * delta * norm - delta * delta
            weight = delta / norm
        else:
            loss += norm2
        for c in range(d):
            r[c] *= 2.0 * weight  # now rho = d loss / d r
        for j in range(b):
            bj = b_idx[j]
            hb = hi[bj]
            rho_b = r[bj]
            row = j * p
            s_bar = rho_b * (hb * e[j] - dd[j] / e[j])
            d_bar = rho_b / e[j]
            for k in range(p):
                parent = parents[j, k]
                if parent < 0:
                    break
                u = yi[parent]
                s_bar += r[parent] * hb * e[j] * (coef[o_u + row + k] + 2.0 * coef[o_q + row + k] * u)
                d_bar += r[parent] * hb * coef[o_w + row + k]
            grad[j] += s_bar
            grad[o_c + j] -= d_bar
            for k in range(p):
                parent = parents[j, k]
                if parent < 0:
                    break
                u = yi[parent]
                rho = r[parent]
                grad[o_w + row + k] += s_bar * u + rho * (hb * dd[j] + 1.0)
                grad[o_u + row + k] += -rho_b * u + rho * hb * e[j]
                grad[o_q + row + k] += -rho_b * u * u + 2.0 * rho * hb * e[j] * u
                grad[o_v + row + k] += -d_bar * u + rho * hb
                grad[o_r + row + k] += -d_bar * u * u + 2.0 * rho * hb * u
    loss /= n
    for i in range(coef.size):
        grad[i] = grad[i] / n + 2.0 * ridge * coef[i]
        loss += ridge * coef[i] * coef[i]
    return loss


@jit
def layer_apply(y, h, b_idx, parents, coef, z, h_out):
    """The draws and scores one level down (the layer's input): z (n, d) and h_out (n, d)."""
    n, d = y.shape
    b, p = parents.shape
    offs = offsets(b, p)
    o_c, o_w, o_u, o_q, o_v, o_r = offs
    for i in range(n):
        for c in range(d):
            z[i, c] = y[i, c]
            h_out[i, c] = h[i, c]
        for j in range(b):
            s, pre, post = conditioners(coef, y[i], parents, j, offs)
            e = math.exp(s)
            bj = b_idx[j]
            dj = y[i, bj] - post
            hb = h[i, bj]
            z[i, bj] = dj / e - pre
            h_out[i, bj] = hb * e
            row = j * p
            for k in range(p):
                parent = parents[j, k]
                if parent < 0:
                    break
                u = y[i, parent]
                w = coef[o_w + row + k]
                h_out[i, parent] += hb * (dj * w + e * (coef[o_u + row + k] + 2.0 * coef[o_q + row + k] * u)
                                          + coef[o_v + row + k] + 2.0 * coef[o_r + row + k] * u) + w


def draw_losses(y: np.ndarray, h: np.ndarray, delta: float = math.inf) -> np.ndarray:
    """||h + y||^2 per draw (Huber's form above ``delta``)."""
    norm2 = np.sum((h + y) ** 2, axis=1)
    if not math.isfinite(delta):
        return norm2
    norm = np.sqrt(norm2)
    return np.where(norm <= delta, norm2, 2.0 * delta * norm - delta * delta)


def fisher_loss(y: np.ndarray, h: np.ndarray, delta: float = math.inf) -> float:
    """Mean ||h + y||^2 (Huber's form above ``delta``): the Fisher divergence of draws y with
    scores h from N(0, I)."""
    return float(np.mean(draw_losses(y, h, delta)))
