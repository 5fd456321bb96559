"""A normalizing-flow transform x = T(z) for Hamiltonian samplers: NUTS samples z, where the
posterior looks like N(0, I), and its draws are mapped back (``NUTS(metric="flow")``).

The flow is an outer diagonal affine map and K affine coupling layers (Dinh, Sohl-Dickstein and
Bengio 2017, "Density estimation using Real NVP", eq. 4-6), z = y^0 -> y^1 -> ... -> y^K. A layer
changes a set B of coordinates and reads the others, each B coordinate j through a few of them,
its parents u = y^{l-1}_{P(j)}:

    y^l_j = (y^{l-1}_j + t_j(u)) * exp(s_j(u)) + c_j + v_j(u)   (j in B),   x = m + sigma * y^K,

with polynomial conditioners, not networks: the log-scale linear, s_j = a_j + sum_k W_jk u_k; a
shift before the scale, t_j = sum_k (U_jk u_k + Q_jk u_k^2), and one after it,
v_j = sum_k (V_jk u_k + R_jk u_k^2). They are what the hard posteriors need: a funnel's scale is
exponential in its log-scale parameter (Neal's: x_i = exp(v / 2) z_i), a hierarchy's effects scale
with its spread and shift with its mean (centred eight schools: theta_j = tau eta_j + mu, a shift
after the scale), and a banana's second coordinate shifts with the square of its first
(x_2 = z_2 + b (x_1^2 - 100)); each is one layer exactly. Both shifts are there because where the
scale is tiny (a funnel's neck) an error in a shift after it is divided by it in z, one before it
is not: the fit (``flow_fit.py``) gives each coordinate only the parents and terms its draws need.
Every derivative is short enough to write by hand, so the flow lives on the same Numba kernels
as everything else, without JAX.

Layout of a flow's numbers (``Flow.pack``): a float buffer ``fl`` (m, sigma, then per layer a, c,
W, U, Q, V, R, row-major (b, P)), an int64 buffer ``idx`` (per layer B's coordinates, then the
parents (b, P), -1 where a row has fewer than P) and a table ``lay`` with one row per layer:
(|B|, P, offset of B in ``idx``, of the parents, offsets of a, c, W, U, Q, V, R in ``fl``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np
from numba import types

from ..jit import MATRIX, VEC, jit, target_kernel

L_B, L_P, L_IB, L_IP, L_S0, L_C, L_W, L_U, L_Q, L_V, L_R = range(11)
LAYOUT_COLUMNS = 11
FIELDS = ("s0", "c", "W", "U", "Q", "V", "R")  # a layer's coefficients, in their order in ``fl``


class Coupling(NamedTuple):
    """One coupling layer (module docstring): B's coordinates, each one's parents (coordinates not
    in B; -1 pads a row with fewer), and per row its log-scale's a_j and W_j, the centre c_j, the
    shift before the scale U_j, Q_j and the one after it V_j, R_j (one entry per parent)."""

    b_idx: np.ndarray  # (b,) int
    parents: np.ndarray  # (b, P) int
    s0: np.ndarray  # (b,)
    c: np.ndarray  # (b,)
    W: np.ndarray  # (b, P)
    U: np.ndarray  # (b, P)
    Q: np.ndarray  # (b, P)
    V: np.ndarray  # (b, P)
    R: np.ndarray  # (b, P)

    @classmethod
    def identity(cls, b_idx, parents) -> Coupling:
        parents = np.asarray(parents, np.int64).reshape(len(b_idx), -1)
        b, p = parents.shape
        return cls(np.asarray(b_idx, np.int64), parents, np.zeros(b), np.zeros(b),
                   *(np.zeros((b, p)) for _ in range(5)))

    def params(self) -> np.ndarray:
        """The coefficients as one vector (a, c, W, U, Q, V, R): what ``flow_fit`` optimises."""
        return np.concatenate([np.ravel(getattr(self, f)) for f in FIELDS])

    def with_params(self, values: np.ndarray) -> Coupling:
        b, p = self.parents.shape
        parts = np.split(np.asarray(values, dtype=float), np.cumsum([b, b, b * p, b * p, b * p, b * p]))
        return self._replace(**{f: part if f in ("s0", "c") else part.reshape(b, p)
                                for f, part in zip(FIELDS, parts)})

    def compact(self) -> Coupling:
        """The same layer without the parents none of its coefficients reads."""
        used = (self.W != 0) | (self.U != 0) | (self.Q != 0) | (self.V != 0) | (self.R != 0)
        width = max(1, int(used.sum(axis=1).max())) if used.size else 1
        b = len(self.b_idx)
        parents = np.full((b, width), -1, np.int64)
        arrays = {f: np.zeros((b, width)) for f in ("W", "U", "Q", "V", "R")}
        for j in range(b):
            keep = np.flatnonzero(used[j])
            parents[j, :keep.size] = self.parents[j, keep]
            for f in arrays:
                arrays[f][j, :keep.size] = getattr(self, f)[j, keep]
        return self._replace(parents=parents, **arrays)


class Flow(NamedTuple):
    """x = m + sigma * C_K(...C_1(z)): the outer affine map and the coupling layers, in the
    sampling direction (z to x)."""

    m: np.ndarray
    sigma: np.ndarray
    layers: tuple

    @property
    def dim(self) -> int:
        return self.m.size

    def pack(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(fl, lay, idx): the flow as the kernels read it (module docstring)."""
        d = self.dim
        floats, ints = [self.m, self.sigma], []
        lay = np.zeros((len(self.layers), LAYOUT_COLUMNS), dtype=np.int64)
        f_off, i_off = 2 * d, 0
        for l, c in enumerate(self.layers):
            b, p = c.parents.shape
            lay[l, L_B], lay[l, L_P] = b, p
            lay[l, L_IB], lay[l, L_IP] = i_off, i_off + b
            ints += [c.b_idx, c.parents.ravel()]
            i_off += b + b * p
            for col, name in zip((L_S0, L_C, L_W, L_U, L_Q, L_V, L_R), FIELDS):
                arr = getattr(c, name)
                lay[l, col] = f_off
                floats.append(np.ravel(arr))
                f_off += arr.size
        idx = np.concatenate(ints).astype(np.int64) if ints else np.zeros(0, np.int64)
        return np.concatenate(floats).astype(float), lay, idx

    def forward(self, z: np.ndarray) -> np.ndarray:
        """x = T(z) for (..., d) points (from Python)."""
        return self._map_points(z, flow_forward_many)

    def inverse(self, x: np.ndarray) -> np.ndarray:
        """z = T^-1(x) for (..., d) points (from Python)."""
        return self._map_points(x, flow_inverse_many)

    def _map_points(self, points: np.ndarray, kernel) -> np.ndarray:
        fl, lay, idx = self.pack()
        rows = np.ascontiguousarray(np.asarray(points, dtype=float).reshape(-1, self.dim))
        out = np.empty_like(rows)
        kernel(rows, fl, lay, idx, out)
        return out.reshape(np.shape(points))

    def n_params(self) -> int:
        """Coefficients in use (the outer map's 2 d and every layer's nonzero ones)."""
        return 2 * self.dim + int(sum(np.count_nonzero(c.params()) for c in self.layers))


@jit(nrt=False)
def _conditioners(y, fl, lay, idx, l, j):
    """(s_j, t_j, c_j + v_j) of layer l's j-th B coordinate at the layer's input y: its log-scale,
    the shift before the scale and the shift after it."""
    p = lay[l, L_P]
    row = j * p
    s = fl[lay[l, L_S0] + j]
    pre = 0.0
    post = fl[lay[l, L_C] + j]
    for k in range(p):
        parent = idx[lay[l, L_IP] + row + k]
        if parent < 0:
            break
        u = y[parent]
        s += fl[lay[l, L_W] + row + k] * u
        pre += (fl[lay[l, L_U] + row + k] + fl[lay[l, L_Q] + row + k] * u) * u
        post += (fl[lay[l, L_V] + row + k] + fl[lay[l, L_R] + row + k] * u) * u
    return s, pre, post


@jit(nrt=False)
def flow_forward(z, fl, lay, idx, ys):
    """Fills ys (K + 1, d) with y^0 = z .. y^K; returns log |det dy^K / dz|."""
    d = z.size
    n_layers = lay.shape[0]
    for i in range(d):
        ys[0, i] = z[i]
    log_det = 0.0
    for l in range(n_layers):
        for i in range(d):
            ys[l + 1, i] = ys[l, i]
        for j in range(lay[l, L_B]):
            s, pre, post = _conditioners(ys[l], fl, lay, idx, l, j)
            bj = idx[lay[l, L_IB] + j]
            ys[l + 1, bj] = (ys[l, bj] + pre) * math.exp(s) + post
            log_det += s
    return log_det


@jit(nrt=False)
def flow_backward(h, fl, lay, idx, ys):
    """The score in z: on entry ``h`` is d log p / d y^K (sigma * the gradient in x); on exit it
    is d/dz of log p(T(z)) + log |det dT/dz|, pulled back through the layers (their Jacobians'
    transposes and the log-determinants' gradients). For a B output o = (z_j + t) e^s + c + v:
    d o / d z_j = e^s, and for a parent u_k, d o / d u_k = (z_j + t) e^s W_k + e^s (U_k + 2 Q_k u_k)
    + V_k + 2 R_k u_k (and d log det / d u_k = W_k). B's coordinates are no one's parents within a
    layer, so the B entries of h can be updated in place after the parents'."""
    for l in range(lay.shape[0] - 1, -1, -1):
        p = lay[l, L_P]
        for j in range(lay[l, L_B]):
            bj = idx[lay[l, L_IB] + j]
            s, pre, post = _conditioners(ys[l], fl, lay, idx, l, j)
            e = math.exp(s)
            hb = h[bj]
            scaled = (ys[l, bj] + pre) * e
            row = j * p
            for k in range(p):
                parent = idx[lay[l, L_IP] + row + k]
                if parent < 0:
                    break
                u = ys[l, parent]
                w = fl[lay[l, L_W] + row + k]
                dout = (scaled * w + e * (fl[lay[l, L_U] + row + k] + 2.0 * fl[lay[l, L_Q] + row + k] * u)
                        + fl[lay[l, L_V] + row + k] + 2.0 * fl[lay[l, L_R] + row + k] * u)
                h[parent] += hb * dout + w
            h[bj] = hb * e


@jit(nrt=False)
def flow_inverse_point(x, fl, lay, idx, z):
    """z = T^-1(x): undo the outer affine map, then the layers from the last (the parents are a
    layer's input and output alike, so s and the shifts are known)."""
    d = x.size
    for i in range(d):
        z[i] = (x[i] - fl[i]) / fl[d + i]
    for l in range(lay.shape[0] - 1, -1, -1):
        for j in range(lay[l, L_B]):
            s, pre, post = _conditioners(z, fl, lay, idx, l, j)
            bj = idx[lay[l, L_IB] + j]
            z[bj] = (z[bj] - post) * math.exp(-s) - pre


@jit
def flow_forward_many(z, fl, lay, idx, out):
    """x = T(z) for each row of z."""
    n_layers = lay.shape[0]
    d = z.shape[1]
    ys = np.empty((n_layers + 1, d))
    for r in range(z.shape[0]):
        flow_forward(z[r], fl, lay, idx, ys)
        for i in range(d):
            out[r, i] = fl[i] + fl[d + i] * ys[n_layers, i]


@jit
def flow_inverse_many(x, fl, lay, idx, out):
    """z = T^-1(x) for each row of x."""
    for r in range(x.shape[0]):
        flow_inverse_point(x[r], fl, lay, idx, out[r])


def pack_with_target(flow, f_own: np.ndarray, i_own: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The data of :func:`flow_density`: one float buffer (``fl``, then the target's floats) and
    one int buffer (the sizes of ``fl``, ``lay`` and ``idx``, then ``lay`` row-major, ``idx`` and
    the target's ints). Two buffers whatever the flow's size, so refits of any size share one
    compiled adapter (``jit.kernel_form``)."""
    fl, lay, idx = flow.pack()
    header = np.array([fl.size, lay.shape[0], idx.size], dtype=np.int64)
    return (np.concatenate([fl, f_own]),
            np.concatenate([header, lay.ravel(), idx, i_own]).astype(np.int64))


@jit(inline=True)
def _unpack_with_target(fbuf, ibuf):
    n_fl, n_layers, n_idx = ibuf[0], ibuf[1], ibuf[2]
    start = 3 + n_layers * LAYOUT_COLUMNS
    lay = ibuf[3:start].reshape((n_layers, LAYOUT_COLUMNS))
    return fbuf[:n_fl], lay, ibuf[start:start + n_idx], fbuf[n_fl:], ibuf[start + n_idx:]


def flow_density(inner):
    """``logp_grad(z, grad_out, data)`` of the transformed density log p(T(z)) + log |det dT/dz|
    for a target whose kernel adapter is ``inner`` (its ``kernel_logp_grad``): ``data`` is
    :func:`pack_with_target`'s two buffers. Compiled per target (it closes over the target's
    adapter), not cached on disk; one call costs one gradient of the target (and is counted as
    one even where the flow itself overflows and the call returns -inf)."""

    def logp_grad(z, grad_out, data):
        fl, lay, idx, f_own, i_own = _unpack_with_target(data[0], data[1])
        d = z.size
        n_layers = lay.shape[0]
        ys = np.empty((n_layers + 1, d))  # the layers' inputs, for the backward pass
        log_det = flow_forward(z, fl, lay, idx, ys)
        x = ys[n_layers]  # the backward pass reads only the layers' inputs: x takes the last row
        finite = math.isfinite(log_det)
        for i in range(d):
            x[i] = fl[i] + fl[d + i] * x[i]
            log_det += math.log(fl[d + i])
            finite = finite and math.isfinite(x[i])
        if not finite:
            # far out in z a coupling's scale overflows: the flow maps nowhere there, an edge of
            # the latent space (-inf, a rejected proposal), not a fault of the target's density
            grad_out[:] = 0.0
            return -np.inf
        lp = inner(x, grad_out, (f_own, i_own))
        for i in range(d):
            grad_out[i] *= fl[d + i]
        flow_backward(grad_out, fl, lay, idx, ys)
        return lp + log_det

    compiled = numba.njit(error_model="numpy")(logp_grad)
    compiled.allocates = True  # the kernels' adapter compiles it with Numba's runtime (jit.py)
    return compiled


def _gradients_at(logp_grad, data, points, logps, grads):
    """log p and its gradient at every row of ``points`` (into ``logps`` and ``grads``)."""
    for r in range(points.shape[0]):
        logps[r] = logp_grad(points[r], grads[r], data)
    return points.shape[0]


gradients_at = target_kernel(lambda t: types.int64(t.logp_grad, t.data, MATRIX, VEC, MATRIX))(_gradients_at)


def gradients(target, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log p, grad log p) of a ``Target`` at each row of ``points``, compiled (one gradient each)."""
    points = np.ascontiguousarray(points, dtype=float)
    logps, grads = np.empty(len(points)), np.empty_like(points)
    gradients_at.for_target(target)(target.kernel_logp_grad, target.kernel_data, points, logps, grads)
    return logps, grads


def finite_rows(x: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows of draws ``x`` and their gradients ``g`` where both are finite (a fit learns from no others)."""
    keep = np.all(np.isfinite(x), axis=1) & np.all(np.isfinite(g), axis=1)
    return x[keep], g[keep]
