"""GMMVI's bookkeeping: the mixture with each component's step size, last eta and reward
history (the authors' ``GmmWrapper``), the database of evaluated draws (their ``SampleDB``),
and the rules that add and delete components (their ``VipsComponentAdaptation``). The update
itself is ``workbench/vi/gmm_updates.py``; the loop, ``workbench/methods/gmmvi.py``."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from ..numerics import LOG_2PI
from ..vi import gmm_updates as G

NEVER = -np.finfo(float).max  # the authors' "no reward yet" (tf.float32.min)


@dataclass
class MixtureState:
    """q = sum_k w_k N(mu_k, L_k L_k^T) (``chols`` (K, d, d); for diagonal components their sds
    (K, d)) with, per component, its trust-region step size
    ``eps``, its last eta (-1: none yet), and the last ``history`` rewards (log w_k +
    E_{q_k}[log p - log q]) and weights, which the step-size and deletion rules read."""

    log_weights: np.ndarray
    means: np.ndarray
    chols: np.ndarray
    eps: np.ndarray
    last_eta: np.ndarray
    rewards: np.ndarray
    weights_seen: np.ndarray
    initial_eps: float = 1.0

    @classmethod
    def new(cls, means: np.ndarray, chols: np.ndarray, history: int, initial_eps: float) -> MixtureState:
        k = means.shape[0]
        return cls(np.full(k, -math.log(k)), means.copy(), chols.copy(), np.full(k, initial_eps), np.full(k, -1.0),
                   np.full((k, history), NEVER), np.full((k, history), NEVER), initial_eps)

    @property
    def size(self) -> int:
        return self.means.shape[0]

    @property
    def weights(self) -> np.ndarray:
        return np.exp(self.log_weights)

    def entropies(self) -> np.ndarray:
        """Each component's entropy, d/2 (log 2 pi + 1) + log |L_k|."""
        d = self.means.shape[1]
        return 0.5 * d * (LOG_2PI + 1.0) + log_det_factor(self.chols)

    def store_rewards(self, rewards: np.ndarray) -> None:
        self.rewards = np.concatenate([self.rewards[:, 1:], rewards[:, None]], axis=1)

    def set_log_weights(self, log_weights: np.ndarray) -> None:
        self.log_weights = log_weights
        self.weights_seen = np.concatenate([self.weights_seen[:, 1:], np.exp(log_weights)[:, None]], axis=1)

    def add(self, log_weight: float, mean: np.ndarray, chol: np.ndarray) -> None:
        """A new component (the authors' ``add_component``), its weight as given: the others
        keep theirs, and the weights are renormalised."""
        h = self.rewards.shape[1]
        self.log_weights = np.append(self.log_weights, log_weight)
        self.log_weights -= logsumexp(self.log_weights)
        self.means = np.concatenate([self.means, mean[None]])
        self.chols = np.concatenate([self.chols, chol[None]])
        self.eps = np.append(self.eps, self.initial_eps)
        self.last_eta = np.append(self.last_eta, -1.0)
        self.rewards = np.concatenate([self.rewards, np.full((1, h), NEVER)])
        self.weights_seen = np.concatenate([self.weights_seen, np.full((1, h), math.exp(log_weight))])

    def remove(self, keep: np.ndarray) -> None:
        """Keep only the components where ``keep`` is True; the weights are renormalised."""
        for name in ("means", "chols", "eps", "last_eta", "rewards", "weights_seen"):
            setattr(self, name, getattr(self, name)[keep])
        lw = self.log_weights[keep]
        self.log_weights = lw - logsumexp(lw)


def improvement_step_sizes(eps: np.ndarray, rewards: np.ndarray, low: float, high: float,
                           grow: float = 1.15, shrink: float = 0.85) -> np.ndarray:
    """The authors' "improvement-based" rule: a component whose last reward improved on the
    one before grows its step by ``grow``, else shrinks it by ``shrink``, within [low, high]."""
    improved = rewards[:, -1] > rewards[:, -2]
    return np.where(improved, np.minimum(grow * eps, high), np.maximum(shrink * eps, low))


def log_det_factor(chols: np.ndarray) -> np.ndarray:
    """log |L_k| of each component's factor: Cholesky factors (K, d, d) or diagonal sds (K, d)."""
    if chols.ndim == 2:
        return np.log(chols).sum(axis=1)
    return np.log(np.diagonal(chols, axis1=1, axis2=2)).sum(axis=1)


def inverse_factor(chols: np.ndarray) -> np.ndarray:
    """L_k^-1 of each component: batched inverses, or for diagonal sds (K, d) their reciprocals."""
    return 1.0 / chols if chols.ndim == 2 else np.linalg.inv(chols)


def log_normal_many(x: np.ndarray, means: np.ndarray, inv_chols: np.ndarray, log_norms: np.ndarray) -> np.ndarray:
    """log N(x_n; mu_j, Sigma_j) as (n, J), from each Sigma_j's inverse Cholesky factor (or, for
    diagonal components, the reciprocals of their sds) and log normaliser -d/2 log 2 pi - log |L_j|."""
    if inv_chols.ndim == 2:
        return G.diagonal_log_densities(x, means, inv_chols, log_norms)
    return G.full_log_densities(x, means, inv_chols, log_norms)


@dataclass
class SampleDatabase:
    """Evaluated draws, kept for reuse (the authors' ``SampleDB``). Every draw remembers the
    component that drew it (its mean and covariance at the time), so the density of a set of
    draws' sampling distribution (the "background": the mixture of those components, weighted
    by their draw counts) is exact. The recent draws are kept in whole iterations, and for each
    kept draw and each kept iteration the log of sum_j n_j N(x; mu_j, Sigma_j) over that
    iteration's components j (n_j the draws each made): a matrix that grows by the new draws'
    row and the new iteration's column and loses the oldest iteration's. An iteration then
    costs O((new draws x kept components + kept draws x new components) d^2) plus a
    log-sum-exp over kept draws x kept iterations, where recomputing the background would cost
    kept draws x kept components x d^2 (about 200 K x 200 K x d^2 once q has converged and
    each component draws one new point an iteration).
    ``archive_size`` caps the draws (x and log p only) kept for the component-adding heuristic:
    when full, every second one is dropped (the authors' ``remove_every_nth_sample(2)``). The
    archive is one buffer filled in place: appending to it by concatenation copied the whole
    archive every iteration (8 GB at d = 10,000 once full)."""

    dim: int
    archive_size: int
    diagonal: bool = False  # the components are diagonal (their factors are sds)

    def __post_init__(self):
        d = self.dim
        self.x, self.logp, self.grad = np.empty((0, d)), np.empty(0), np.empty((0, d))
        self.row_iteration = np.empty(0, dtype=np.int64)  # which add() each draw came in
        self.col_iteration = np.empty(0, dtype=np.int64)  # ... and each component
        self.col_log_counts = np.empty(0)  # log of the draws each component made
        self.col_means, self.col_log_norms = np.empty((0, d)), np.empty(0)
        self.col_inv_chols = np.empty((0, d)) if self.diagonal else np.empty((0, d, d))
        self.block_log_mass = np.empty((0, 0))  # (kept draws, kept iterations)
        self.total = 0
        self._archive_x, self._archive_logp = np.empty((0, d)), np.empty(0)
        self._archived = 0  # the archive's rows in use
        self.iterations = 0

    @property
    def archive_x(self) -> np.ndarray:
        return self._archive_x[:self._archived]

    @property
    def archive_logp(self) -> np.ndarray:
        return self._archive_logp[:self._archived]

    def _archive(self, x: np.ndarray, logp: np.ndarray) -> None:
        n, end = self._archived, self._archived + len(logp)
        if end > self.archive_size:  # full: keep every second draw, the new ones included
            x, logp = np.concatenate([self.archive_x, x])[::2], np.concatenate([self.archive_logp, logp])[::2]
            n, end = 0, len(logp)
        if end > len(self._archive_logp):  # grow the buffer (doubling, at most to archive_size)
            size = max(end, min(self.archive_size, 2 * len(self._archive_logp) + 1024))
            grown_x, grown_logp = np.empty((size, self.dim)), np.empty(size)
            grown_x[:n], grown_logp[:n] = self._archive_x[:n], self._archive_logp[:n]
            self._archive_x, self._archive_logp = grown_x, grown_logp
        self._archive_x[n:end], self._archive_logp[n:end] = x, logp
        self._archived = end

    def add(self, x: np.ndarray, logp: np.ndarray, grad: np.ndarray, counts: np.ndarray,
            means: np.ndarray, chols: np.ndarray) -> None:
        """Store an iteration's draws: ``counts[k]`` of them drawn by component k (in order)."""
        used = counts > 0
        inv = inverse_factor(chols[used])
        log_norms = -0.5 * self.dim * LOG_2PI - log_det_factor(chols[used])
        log_counts = np.log(counts[used].astype(float))
        new_col = G.row_logsumexp(log_normal_many(self.x, means[used], inv, log_norms) + log_counts)
        self.col_means = np.concatenate([self.col_means, means[used]])
        self.col_inv_chols = np.concatenate([self.col_inv_chols, inv])
        self.col_log_norms = np.concatenate([self.col_log_norms, log_norms])
        self.col_log_counts = np.concatenate([self.col_log_counts, log_counts])
        self.col_iteration = np.concatenate([self.col_iteration, np.full(int(used.sum()), self.iterations)])
        every = log_normal_many(x, self.col_means, self.col_inv_chols, self.col_log_norms) + self.col_log_counts
        starts = np.flatnonzero(np.r_[True, np.diff(self.col_iteration) != 0])  # each iteration's first column
        m = every.max(axis=1, keepdims=True)
        with np.errstate(divide="ignore"):
            new_rows = np.log(np.add.reduceat(np.exp(every - m), starts, axis=1)) + m
        self.block_log_mass = np.concatenate([np.concatenate([self.block_log_mass, new_col[:, None]], axis=1),
                                              new_rows])
        self.total += int(counts.sum())
        self.x, self.logp = np.concatenate([self.x, x]), np.concatenate([self.logp, logp])
        self.grad = np.concatenate([self.grad, grad])
        self.row_iteration = np.concatenate([self.row_iteration, np.full(len(logp), self.iterations)])
        self.iterations += 1
        self._archive(x, logp)

    def keep_newest(self, n: int) -> None:
        """Forget the oldest iterations' draws (and components) the newest ``n`` draws do not need."""
        if not len(self.logp):
            return
        kept = np.unique(self.col_iteration)
        sizes = np.bincount(self.row_iteration - kept[0], minlength=kept[-1] - kept[0] + 1)[kept - kept[0]][::-1]
        need = int(np.searchsorted(np.cumsum(sizes), n)) + 1 if n > 0 else 0
        first = kept[::-1][need - 1] if 0 < need <= len(kept) else (kept[0] if need > 0 else self.iterations)
        rows, cols = self.row_iteration >= first, self.col_iteration >= first
        blocks = kept >= first
        for name in ("x", "logp", "grad", "row_iteration"):
            setattr(self, name, getattr(self, name)[rows])
        for name in ("col_means", "col_inv_chols", "col_log_norms", "col_log_counts", "col_iteration"):
            setattr(self, name, getattr(self, name)[cols])
        self.block_log_mass = self.block_log_mass[rows][:, blocks]
        self.total = int(np.exp(self.col_log_counts).sum().round())

    def sample(self):
        """(x, log p, grad log p, log background density) of every kept draw."""
        if not len(self.logp):
            return self.x, self.logp, self.grad, np.empty(0)
        return self.x, self.logp, self.grad, G.row_logsumexp(self.block_log_mass) - math.log(self.total)


ADD_THRESHOLDS = (5000.0, 1000.0, 500.0, 200.0, 100.0, 50.0)


def new_component_location(state: MixtureState, db: SampleDatabase, call: int, rng, prior_entropy: float,
                           max_draws: int) -> tuple[np.ndarray, np.ndarray]:
    """(mean, Cholesky factor) of a new component (the authors' ``add_at_best_location``): at
    the stored draw that best trades log p against log q, log p - max(log q, max log q - c), c
    cycling through ``ADD_THRESHOLDS``; its covariance isotropic with the entropy a random
    blend of the components' average entropy and the initial component's."""
    n = len(db.archive_logp)
    pick = rng.choice(n, size=min(n, max_draws), replace=False)
    x, logp = db.archive_x[pick], db.archive_logp[pick]
    log_q = logsumexp(G.component_log_densities(x, state.means, state.chols) + state.log_weights, axis=1)
    threshold = ADD_THRESHOLDS[call % len(ADD_THRESHOLDS)]
    score = np.where(np.isfinite(logp), logp - np.maximum(log_q.max() - threshold, log_q), -np.inf)
    mean = x[int(np.argmax(score))]
    a = rng.uniform()
    entropy = a * float(state.weights @ state.entropies()) + (1.0 - a) * prior_entropy
    d = state.means.shape[1]
    scale = math.exp((entropy - 0.5 * d * (LOG_2PI + 1.0)) / d)  # the sd of an isotropic N with that entropy
    return mean.copy(), scale * (np.ones(d) if state.chols.ndim == 2 else np.eye(d))


def stagnating_components(state: MixtureState, del_iters: int, min_weight: float) -> np.ndarray:
    """Components to delete (the authors' ``delete_bad_components``): old enough to have
    ``del_iters`` rewards, whose Gaussian-smoothed reward improved by at most 40 % over the
    last ``del_iters`` iterations, and whose weight (actual, or that the rewards alone would
    give) stayed below ``min_weight``."""
    delay = del_iters // 3
    offsets = np.arange(-delay, delay)
    kernel = np.exp(-0.5 * (offsets / (del_iters / 8.0)) ** 2)
    kernel /= kernel.sum()
    size = kernel.size
    hist = state.rewards
    if hist.shape[1] < size + del_iters:
        return np.zeros(state.size, dtype=bool)
    current = np.mean(hist[:, -size:] * kernel, axis=1)
    old = np.mean(hist[:, -size - del_iters:-del_iters] * kernel, axis=1)
    top = current.max()
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        improvement = ((current - top) - (old - top)) / np.abs(old - top)
    window = slice(-size - del_iters, None)
    max_weights = np.max(state.weights_seen[:, -size - del_iters:-1], axis=1)
    greedy = np.exp(hist[:, window] - logsumexp(hist[:, window], axis=0, keepdims=True)).max(axis=1)
    old_enough = hist[:, -del_iters] != NEVER
    return (improvement <= 0.4) & (np.maximum(max_weights, greedy) < min_weight) & old_enough
