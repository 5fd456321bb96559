"""Fitting the flow of ``flow.py`` to a chain's draws and gradients, by the Fisher divergence.

For draws x_i of the posterior and their gradients g_i = grad log p(x_i), the transformed
density q(z) = p(T(z)) |det dT/dz| is standard normal exactly when its score is -z; the Fisher
divergence E_p ||grad_z log q(z) + z||^2 measures how far it is, using the draws and gradients
the chain has already computed and no new density evaluation (the loss of nutpie's flow
adaptation, Seyboldt et al.; Hyvärinen 2005 for score matching).

The layers are fitted one at a time, in the normalizing direction (Tabak and Vanden-Eijnden
2010's iterative Gaussianization, with the Fisher divergence as the criterion): the outer affine
map first (nutpie's diagonal, sigma_j = sqrt(sd(x_j) / sd(g_j))), then rounds of coupling layers
on the draws and scores the previous ones produced (:func:`partitions`): the others given the
"globals" (the coordinates that drive many: a hierarchy's mean and scale, a funnel's
log-scale), then odd positions given even ones and the globals, and the reverse (a latent
series or field in index order), then each coordinate rescaled alone. A row's candidate parents
are its strongest drivers by :func:`driver_scores`; which it keeps, and with which terms, is
``flow_rows.py``'s choice; L-BFGS (SciPy) then fits the chosen coefficients on the layer's
whole robust loss (``flow_loss.py``). A layer is kept only if it lowers the loss on held-out
draws (a fifth of them) by 1% in the mean and on most of them (:func:`significant_gain`), and
fitting stops at a round that keeps none. The robust loss's ``delta`` is the 90th percentile of the
residual norms under the diagonal map.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..jit import jit
from .adaptation import fisher_metric
from .flow import Coupling, Flow
from .flow_loss import draw_losses, layer_apply, layer_loss
from .flow_rows import select_rows

RIDGE = 1e-3  # squared-norm penalty on a layer's coefficients (keeps s from growing without bound)
MAX_ROUNDS = 3  # rounds of layers (``partitions``); fitting stops at a round that keeps none
HOLDOUT = 0.2
MIN_GAIN = 0.05  # a layer must cut the held-out loss by 5% (and on most draws) to be kept
POLISH_ITERATIONS = 100  # L-BFGS steps on a layer's whole loss, from the rows' warm start
DRIVER_SHARE = 0.2  # a global's score is at least this share of the strongest driver's
MAX_GLOBALS = 8
NOISE_FACTOR = 5.0  # a global's score is at least this many times what noise alone scores
CANDIDATES = 6  # parents a row may choose from: its strongest drivers among the layer's readers
USED_SHARE = 0.2  # a global is a real driver when at least this share of its layer's rows read it


class FlowFit(NamedTuple):
    """What :func:`fit_flow` found: the flow, the held-out (robust) Fisher loss of the diagonal map
    alone and of the flow, each layer's, the draws it learnt from and the robust loss's delta."""

    flow: Flow
    diagonal_loss: float
    flow_loss: float
    layer_losses: list
    draws: int
    delta: float
    low_rank_loss: float = math.inf

    @property
    def better_than_diagonal(self) -> bool:
        return self.flow_loss < (1.0 - MIN_GAIN) * self.diagonal_loss


def diagonal_map(x: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(m, sigma): the mean and nutpie's diagonal scale sqrt(sd(x) / sd(g)) (Seyboldt et al.)."""
    sd_x, sd_g = x.std(axis=0), g.std(axis=0)
    sigma = np.sqrt(np.where(sd_g > 0, sd_x / np.maximum(sd_g, 1e-300), 1.0))
    sigma = np.where(np.isfinite(sigma) & (sigma > 0), sigma, 1.0)
    return x.mean(axis=0), np.clip(sigma, 1e-8, 1e8)


@jit(fastmath=True)
def driver_scores(y, h):
    """(d, d) gains: [k, j] is how much coordinate j's residual r_j = h_j + y_j would shrink, in one
    Gauss-Newton step from the identity, if j were scaled (d r_j / d W_jk = y_k (h_j - y_j)),
    shifted (-y_k) or quadratically shifted (-(y_k^2 - 1)) by coordinate k: the largest of the
    three. A coordinate's row sum says how much it drives the others."""
    n, d = y.shape
    out = np.zeros((d, d))
    for k in range(d):
        for j in range(d):
            if j == k:
                continue
            g_w = c_w = g_u = c_u = g_q = c_q = 0.0
            for i in range(n):
                r = h[i, j] + y[i, j]
                bw = y[i, k] * (h[i, j] - y[i, j])
                bu = -y[i, k]
                bq = 1.0 - y[i, k] * y[i, k]
                g_w += r * bw
                c_w += bw * bw
                g_u += r * bu
                c_u += bu * bu
                g_q += r * bq
                c_q += bq * bq
            best = 0.0
            for g, c in ((g_w, c_w), (g_u, c_u), (g_q, c_q)):
                if c > 0.0:
                    best = max(best, 2.0 * g * g / (c * n))
            out[k, j] = best
    return out


def global_coordinates(scores: np.ndarray, y: np.ndarray, h: np.ndarray) -> np.ndarray:
    """The coordinates that drive many others: :func:`driver_scores`' row sums within
    ``DRIVER_SHARE`` of the largest and ``NOISE_FACTOR`` times what noise scores, at most
    ``MAX_GLOBALS``."""
    n, d = y.shape
    strength = scores.sum(axis=1)
    # a coordinate that drives nothing: each pair's gain is about the residual's mean square
    # times chi^2_1 / n, so a row of d - 1 pairs about (d - 1) mean(r^2) / n
    noise = NOISE_FACTOR * (d - 1) * float(np.mean((h + y) ** 2)) / n
    strong = strength >= max(DRIVER_SHARE * strength.max(), noise)
    order = np.argsort(-strength, kind="stable")
    count = int(np.clip(np.sum(strong), 0, min(MAX_GLOBALS, max(1, d // 2))))
    return np.sort(order[:count]).astype(np.int64)


def _parents(scores: np.ndarray, readers: np.ndarray, b_idx: np.ndarray) -> np.ndarray:
    """(b, P): each B row's ``CANDIDATES`` strongest drivers among ``readers`` (-1 padded)."""
    width = max(1, min(CANDIDATES, len(readers)))
    out = np.full((len(b_idx), width), -1, np.int64)
    if len(readers):
        gains = scores[np.ix_(readers, b_idx)].T  # (b, readers)
        top = np.argsort(-gains, axis=1, kind="stable")[:, :width]
        out[:, :top.shape[1]] = readers[top]
    return out


def partitions(scores: np.ndarray, y: np.ndarray, h: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """A round's layers as (B, parents): the others given the globals (a hierarchy, a funnel);
    odd positions of the rest given even ones and the globals, then the reverse (a latent series
    or field in index order: each point given its neighbours, Dinh et al.'s checkerboard); and
    every coordinate rescaled and centred alone (the couplings change the drivers' own scale)."""
    d = y.shape[1]
    glob = global_coordinates(scores, y, h)
    rest = np.setdiff1d(np.arange(d), glob)
    out = []
    if glob.size and rest.size:
        out.append((rest, _parents(scores, glob, rest)))
    if rest.size >= 4:
        even, odd = rest[0::2], rest[1::2]
        out.append((odd, _parents(scores, np.concatenate([glob, even]), odd)))
        out.append((even, _parents(scores, np.concatenate([glob, odd]), even)))
    everything = np.arange(d, dtype=np.int64)
    out.append((everything, np.full((d, 1), -1, np.int64)))
    return out


def _unused_globals(scores: np.ndarray, layer: Coupling, b_idx: np.ndarray, d: int) -> list:
    """After the globals' layer: the globals that few of its rows read as a parent (fewer than
    ``USED_SHARE``: they looked like drivers because they move with one, a funnel's x_i with its
    v) are not in that layer's B, so they get a layer of their own, given the globals that were
    read."""
    glob = np.setdiff1d(np.arange(d), b_idx)
    reads = layer.parents[layer.parents >= 0]
    counts = np.array([np.sum(reads == k) for k in glob])
    used = glob[counts >= USED_SHARE * len(b_idx)]
    unused = np.setdiff1d(glob, used)
    if not unused.size or not used.size:
        return []
    return [(unused, _parents(scores, used, unused))]


def significant_gain(before: np.ndarray, after: np.ndarray) -> bool:
    """Whether per-draw held-out losses ``after`` beat ``before``: in the mean by ``MIN_GAIN``,
    and on most draws (the median difference positive). A layer that fits noise helps some
    held-out draws and hurts as many; a layer that fixes a funnel helps nearly all, though a
    few draws in its neck can move by more than the rest together (so the mean's standard error
    is no test: it rejected a cut from 174 to 25)."""
    if not np.all(np.isfinite(after)):
        return False
    gain = before - after
    return bool(gain.mean() > MIN_GAIN * before.mean() and np.median(gain) > 0.0)


def fit_layer(y, h, b_idx, parents, ridge: float, delta: float) -> Coupling:
    """One coupling layer: each row's coefficients chosen and warm-started (``flow_rows.py``),
    then the chosen ones fitted by L-BFGS on the layer's whole robust loss."""
    from scipy.optimize import minimize

    y, h = np.ascontiguousarray(y), np.ascontiguousarray(h)
    layer = Coupling.identity(b_idx, parents)
    start = layer.params()
    use = np.zeros(start.size)
    weights = np.minimum(1.0, delta / np.maximum(np.sqrt(np.sum((h + y) ** 2, axis=1)), 1e-300))
    select_rows(y, h, weights, layer.b_idx, layer.parents, start, use)
    if not np.all(np.isfinite(start)):
        start = layer.params()
    grad = np.empty(start.size)

    def objective(coef):
        value = layer_loss(y, h, layer.b_idx, layer.parents, coef * use, ridge, delta, grad)
        if not math.isfinite(value):
            return 1e300, np.zeros_like(coef)
        return value, grad * use

    fit = minimize(objective, start, jac=True, method="L-BFGS-B", options={"maxiter": POLISH_ITERATIONS})
    return layer.with_params(fit.x * use).compact()


def low_rank_loss(y_train, h_train, y_held, h_held, delta: float, gamma: float = 1e-5, cutoff: float = 2.0) -> float:
    """The held-out Fisher loss of the diagonal-plus-low-rank metric (Seyboldt et al.'s, as
    ``NUTS(metric="low_rank")`` estimates it, ``adaptation.fisher_metric``) fitted to the training
    draws: the linear map y = s * A z, A = I + U (sqrt(lambda) - 1) U^T, scores A (s h)."""
    d = y_train.shape[1]
    rank_cap = max(1, min(d, 2 * len(y_train)))
    s, vecs, roots = np.ones(d), np.zeros((rank_cap, d)), np.zeros(rank_cap)
    k = fisher_metric(np.ascontiguousarray(y_train), np.ascontiguousarray(h_train), gamma, cutoff, rank_cap, s, vecs, roots)
    if k < 0:
        return math.inf
    u, r = vecs[:k], roots[:k]
    y, h = y_held / s, h_held * s
    z = y + ((y @ u.T) * (1.0 / r - 1.0)) @ u  # A^-1 y
    hz = h + ((h @ u.T) * (r - 1.0)) @ u  # A h (A is symmetric)
    return float(np.mean(draw_losses(z, hz, delta)))


def _split(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    order = rng.permutation(n)
    cut = max(1, int(round(HOLDOUT * n)))
    return order[cut:], order[:cut]


def fit_flow(x: np.ndarray, g: np.ndarray, rng: np.random.Generator, max_rounds: int = MAX_ROUNDS,
             ridge: float = RIDGE, easy_per_coordinate: float = 0.0) -> FlowFit:
    """A flow fitted to draws ``x`` (n, d) and their gradients ``g`` (module docstring). No layer
    is fitted when the diagonal map's held-out loss per coordinate is already below
    ``easy_per_coordinate`` (the layers' fit is most of a warmup's wall time on an easy posterior)."""
    x = np.asarray(x, dtype=float)
    g = np.asarray(g, dtype=float)
    keep = np.all(np.isfinite(x), axis=1) & np.all(np.isfinite(g), axis=1)
    x, g = x[keep], g[keep]
    m, sigma = diagonal_map(x, g)
    y, h = (x - m) / sigma, g * sigma
    train, held = _split(len(y), rng)
    delta = float(np.quantile(np.sqrt(np.sum((h + y) ** 2, axis=1)), 0.9))
    current = draw_losses(y[held], h[held], delta)
    base = float(current.mean())
    layers, losses = [], []
    if base / y.shape[1] < easy_per_coordinate:
        max_rounds = 0
    if y.shape[1] >= 2 and len(train) >= 10:
        for _ in range(max_rounds):
            kept = False
            scores = driver_scores(np.ascontiguousarray(y[train]), np.ascontiguousarray(h[train]))
            planned = partitions(scores, y[train], h[train])
            first = True
            while planned:
                b_idx, parents = planned.pop(0)
                layer = fit_layer(y[train], h[train], b_idx, parents, ridge, delta)
                if first and b_idx.size < y.shape[1]:  # the globals' layer: its unused globals go next
                    planned[:0] = _unused_globals(scores, layer, b_idx, y.shape[1])
                first = False
                coef = layer.params()
                z, hz = np.empty_like(y), np.empty_like(h)
                layer_apply(y, h, layer.b_idx, layer.parents, coef, z, hz)
                after = draw_losses(z[held], hz[held], delta)
                if significant_gain(current, after):
                    current, y, h, kept = after, z, hz, True
                    layers.append(layer)
                    losses.append(float(after.mean()))
            if not kept:
                break
    # fitted in the normalizing direction: the last layer fitted is the first in z -> x
    flow = Flow(m, sigma, tuple(reversed(layers)))
    y0, h0 = (x - m) / sigma, g * sigma
    linear = low_rank_loss(y0[train], h0[train], y0[held], h0[held], delta) if len(train) >= 2 else math.inf
    return FlowFit(flow, base, float(current.mean()), losses, int(len(x)), delta, linear)
