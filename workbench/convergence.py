"""Rank-normalised R-hat and bulk and tail ESS of every coordinate at once: ArviZ's numbers.
(The numbers only; ``diagnostics.py`` turns them, with divergences, tree depth and E-BFMI,
into a run's health and its messages.)

The estimators are those of Vehtari, Gelman, Simpson, Carpenter and Bürkner (2021),
"Rank-normalization, folding, and localization: an improved R-hat for assessing convergence
of MCMC", as ``arviz_stats`` computes them (``_DiagnosticsBase._rhat_rank``, ``_ess_bulk``,
``_ess_tail``): split chains, rank-normalise (eq. 14), fold at the median for the tail, ESS
from FFT autocovariances by Geyer's initial positive and monotone sequences (eq. 10), tail
ESS from the indicators below the two tail quantiles.

ArviZ computes them one coordinate at a time in Python; on a 100-d run of 4 x 1,000 draws
that took 0.29 s, ten times the sampling. Here the same steps run on all coordinates at once:
one sort per rank normalisation, ArviZ's own ``autocov`` on every coordinate in one FFT, and
Geyer's loop compiled. The numbers equal ``arviz.rhat`` and ``arviz.ess`` to rounding (tested);
anything unusual (non-finite draws, fewer than 4 draws, other ESS methods) goes to ArviZ itself.
"""

from __future__ import annotations

import functools
import os
from typing import NamedTuple

import numpy as np

from .jit import jit

BLOM_OFFSET = 3 / 8  # Blom (1958)'s fractional offset for normal scores of ranks (eq. 14)


class RankDiagnostics(NamedTuple):
    """Per-coordinate convergence statistics of (chains, draws, d) draws, each of shape (d,)."""

    r_hat: np.ndarray  # rank-normalised split R-hat, the larger of bulk and folded (NaN for one chain)
    ess_bulk: np.ndarray
    ess_tail: np.ndarray


@jit(nogil=True)
def geyer_tau(acov: np.ndarray, chain_mean_term: float, rho: np.ndarray) -> float:
    """The integrated autocorrelation time from (chains, lags) autocovariances by Geyer's initial
    positive and monotone sequences (Vehtari et al. 2021, eq. 10; Geyer 1992): ArviZ's own loop
    (``arviz_stats``' ``_DiagnosticsBase._ess``, and the same loop its Numba backend compiles
    as ``arviz_stats.numba.diagnostics.geyer``), compiled here because ArviZ's base backend runs
    it in Python, once per lag, and importing its Numba backend costs 2.5 s a process. ``rho``
    is scratch space of one entry per lag (reused across coordinates: nothing is allocated)."""
    n_chain, n_draw = acov.shape
    mean_var = 0.0
    for c in range(n_chain):
        mean_var += acov[c, 0]
    mean_var = mean_var / n_chain * n_draw / (n_draw - 1.0)
    var_plus = mean_var * (n_draw - 1.0) / n_draw + chain_mean_term
    rho[:] = 0.0
    rho[0] = 1.0

    def lag_mean(t):
        total = 0.0
        for c in range(n_chain):
            total += acov[c, t]
        return total / n_chain

    rho_even = 1.0
    rho_odd = 1.0 - (mean_var - lag_mean(1)) / var_plus
    rho[1] = rho_odd
    t = 1
    while t < n_draw - 3 and rho_even + rho_odd > 0.0:  # initial positive sequence
        rho_even = 1.0 - (mean_var - lag_mean(t + 1)) / var_plus
        rho_odd = 1.0 - (mean_var - lag_mean(t + 2)) / var_plus
        if rho_even + rho_odd >= 0:
            rho[t + 1] = rho_even
            rho[t + 2] = rho_odd
        t += 2
    max_t = t - 2
    if rho_even > 0:
        rho[max_t + 1] = rho_even
    t = 1
    while t <= max_t - 2:  # initial monotone sequence
        if rho[t + 1] + rho[t + 2] > rho[t - 1] + rho[t]:
            rho[t + 1] = (rho[t - 1] + rho[t]) / 2.0
            rho[t + 2] = rho[t + 1]
        t += 2
    tau = -1.0
    for k in range(n_draw):
        if np.isnan(rho[k]):  # ArviZ's base: a NaN autocorrelation makes the ESS NaN
            return np.nan
        if k <= max_t:
            tau += 2.0 * rho[k]
        elif k == max_t + 1:
            tau += rho[k]
    return tau


@jit(nogil=True)
def geyer_taus(acov: np.ndarray, chain_mean_terms: np.ndarray) -> np.ndarray:
    """:func:`geyer_tau` of each coordinate's (chains, lags) autocovariances in (d, chains, lags)."""
    out = np.empty(acov.shape[0])
    rho = np.empty(acov.shape[2])
    for i in range(acov.shape[0]):
        out[i] = geyer_tau(acov[i], chain_mean_terms[i], rho)
    return out


@jit(nogil=True)
def scatter_normal_scores(s: np.ndarray, order: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Normal scores of rows given sorted (``s``) with their sort ``order``: a group of equal
    values over sorted positions start..end gets the average rank (start + end) / 2 + 1, whose
    score is ``score[start + end]``, written back at the values' own positions."""
    rows, n = s.shape
    z = np.empty((rows, n))
    for r in range(rows):
        start = 0
        for k in range(1, n + 1):
            if k == n or s[r, k] != s[r, start]:
                value = score[start + k - 1]
                for j in range(start, k):
                    z[r, order[r, j]] = value
                start = k
    return z


@jit(nogil=True)
def fold_sorted(s: np.ndarray, order: np.ndarray, median: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """|x - median| of rows given sorted, sorted again without a sort: below the median the
    distances fall as the values rise, above it they rise, so one merge of the two runs
    outward from the median orders them. Returns the sorted distances and their positions."""
    rows, n = s.shape
    folded = np.empty((rows, n))
    folded_order = np.empty((rows, n), dtype=np.int64)
    for r in range(rows):
        m = median[r]
        above = 0
        while above < n and s[r, above] < m:
            above += 1
        below = above - 1
        for k in range(n):
            if above >= n or (below >= 0 and m - s[r, below] <= s[r, above] - m):
                folded[r, k] = abs(s[r, below] - m)
                folded_order[r, k] = order[r, below]
                below -= 1
            else:
                folded[r, k] = abs(s[r, above] - m)
                folded_order[r, k] = order[r, above]
                above += 1
    return folded, folded_order


@functools.cache
def _array_stats():
    """ArviZ's array diagnostics with its ESS of one coordinate computed by
    :func:`effective_size` (the lag loop compiled: on long, strongly autocorrelated chains
    10-50x faster than ArviZ's base backend), and SciPy's FFT: for the ESS methods that
    :func:`ess` hands to ArviZ, and ArviZ's ``autocov`` for :func:`effective_size`."""
    import scipy.fft
    from arviz_stats.base.array import BaseArray

    class CompiledGeyer(BaseArray):
        # SciPy's FFT (pocketfft, as numpy's): ArviZ's ``autocov`` calls these; 1.4x numpy's here
        def rfft(self, ary, n, axis=-1):
            return scipy.fft.rfft(ary, n=n, axis=axis)

        def irfft(self, ary, n, axis=-1):
            return scipy.fft.irfft(ary, n=n, axis=axis)

        def _ess(self, ary, relative=False):  # ArviZ's _DiagnosticsBase._ess, as effective_size
            ary = np.asarray(ary, dtype=float)
            ess = float(effective_size(ary[None])[0])
            return ess / ary.size if relative else ess

    return CompiledGeyer()


# -- the steps, on (d, chains, n) arrays --------------------------------------------------------


def split_chains(x: np.ndarray) -> np.ndarray:
    """(d, chains, n) -> (d, 2 chains, n // 2): each chain's first and last halves (the middle
    draw of an odd chain dropped, as ArviZ does)."""
    half = x.shape[-1] // 2
    return np.concatenate((x[..., :half], x[..., x.shape[-1] - half:]), axis=-2)


def normal_score_table(n: int) -> np.ndarray:
    """Blom's normal scores (eq. 14) of the 2n - 1 possible average ranks 1, 1.5, ..., n of n
    values, indexed by start + end of a tie group: the normal quantile once per rank, not
    once per draw (ties are common: a rejected Metropolis move repeats a draw)."""
    from scipy.special import ndtri  # scipy.stats.norm.ppf's own function, without its checks

    rank = np.arange(2 * n - 1) / 2 + 1
    return ndtri((rank - BLOM_OFFSET) / (n - 2 * BLOM_OFFSET + 1))


def z_scale(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rank-normalise each coordinate's chains and draws together (eq. 14): average ranks of
    ties, Blom's back-transform and the normal quantile. Returns the normal scores, shaped as
    ``x``, each coordinate's values sorted, (d, chains x n), and their sort order."""
    flat = x.reshape(x.shape[0], -1)
    order = np.argsort(flat, axis=1)
    s = np.take_along_axis(flat, order, axis=1)
    z = scatter_normal_scores(s, order, normal_score_table(flat.shape[1]))
    return z.reshape(x.shape), s, order


def gelman_rubin(x: np.ndarray) -> np.ndarray:
    """R-hat of each coordinate of (d, chains, n) ``x`` from between- and within-chain variances
    (eq. 3-4; ArviZ's ``_rhat``). NaN for a constant coordinate, as ArviZ."""
    n = x.shape[-1]
    between = n * np.var(x.mean(axis=-1), axis=-1, ddof=1)
    within = np.mean(np.var(x, axis=-1, ddof=1), axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt((between / within + n - 1) / n)


def effective_size(x: np.ndarray) -> np.ndarray:
    """ESS of each coordinate of (d, chains, n) ``x``: ArviZ's autocovariances of every
    coordinate in one FFT, then Geyer's sequences (ArviZ's ``_ess``)."""
    x = np.asarray(x, dtype=float)
    d, n_chain, n_draw = x.shape
    acov = np.ascontiguousarray(_array_stats().autocov(x, axis=-1))
    chain_mean_term = np.var(x.mean(axis=-1), axis=-1, ddof=1) if n_chain > 1 else np.zeros(d)
    constant = (x.max(axis=(1, 2)) - x.min(axis=(1, 2))) < np.finfo(float).resolution
    size = n_chain * n_draw
    tau = np.maximum(geyer_taus(acov, chain_mean_term), 1 / np.log10(size))
    return np.where(constant, size, size / tau)


def sorted_quantile(s: np.ndarray, q: float) -> np.ndarray:
    """numpy's default ("linear") ``q`` quantile of each row of sorted ``s``, without sorting
    again (numpy's own interpolation, ``numpy.lib._function_base_impl._lerp``)."""
    n = s.shape[1]
    virtual = q * (n - 1)
    below = int(np.floor(virtual))
    above = min(below + 1, n - 1)
    t = virtual - below
    a, b = s[:, below], s[:, above]
    diff = b - a
    return np.where(t >= 0.5, b - diff * (1 - t), a + diff * t)


def _as_coordinates(draws: np.ndarray) -> np.ndarray | None:
    """(chains, draws, d) as (d, chains, draws), or None where ArviZ itself must decide
    (non-finite values, fewer than 4 draws)."""
    x = np.moveaxis(np.asarray(draws, dtype=float), 2, 0)
    return x if x.shape[-1] >= 4 and np.all(np.isfinite(x)) else None


PARALLEL_MIN_VALUES = 100_000  # below this many draws x coordinates, threads cost more than they save


@functools.cache
def _pool():
    from concurrent.futures import ThreadPoolExecutor

    return ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="rank-diagnostics")


def rank_diagnostics(draws: np.ndarray, prob: float) -> RankDiagnostics:
    """R-hat, bulk ESS and tail ESS (at the ``1 - prob`` and ``prob`` quantiles) of every
    coordinate of (chains, draws, d) ``draws``. Large arrays are cut into blocks of coordinates
    computed on threads (sorting, FFTs and the compiled loops release the GIL): on 2 cores that
    halves a 100-d run's diagnostics."""
    x = _as_coordinates(draws)
    if x is None:
        import arviz as az

        d = np.asarray(draws, dtype=float)
        r_hat = np.asarray(az.rhat(d), dtype=float) if d.shape[0] > 1 else np.full(d.shape[2], np.nan)
        return RankDiagnostics(r_hat, ess(d, "bulk"), ess(d, "tail", prob))
    workers = min(os.cpu_count() or 1, x.shape[0])
    if workers < 2 or x.size < PARALLEL_MIN_VALUES:
        return _rank_diagnostics(x, prob)
    blocks = np.array_split(np.arange(x.shape[0]), workers)
    parts = list(_pool().map(lambda block: _rank_diagnostics(x[block], prob), blocks))
    return RankDiagnostics(*(np.concatenate(values) for values in zip(*parts)))


def _rank_diagnostics(x: np.ndarray, prob: float) -> RankDiagnostics:
    """:func:`rank_diagnostics` of finite (d, chains, n) ``x`` in one pass: the bulk's normal
    scores serve both R-hat and bulk ESS, and their sort gives the median and the tail quantiles."""
    d = x.shape[0]
    split = split_chains(x)
    z_bulk, s, order = z_scale(split)
    if x.shape[-1] % 2 == 0:  # the split draws are all the draws: their sort gives the quantiles
        lo, hi = (sorted_quantile(s, q) for q in sorted((prob, 1 - prob)))
    else:
        lo, hi = np.quantile(x.reshape(d, -1), sorted((prob, 1 - prob)), axis=1)
    below = [(split <= q[:, None, None]).astype(float) for q in (lo, hi)]
    ess_all = effective_size(np.concatenate([z_bulk, *below]))
    ess_bulk, ess_tail = ess_all[:d], np.minimum(ess_all[d:2 * d], ess_all[2 * d:])
    if x.shape[1] < 2:
        return RankDiagnostics(np.full(d, np.nan), ess_bulk, ess_tail)
    n = s.shape[1]  # even (2 x chains x half): numpy's median is the mean of the middle two
    median = (s[:, n // 2 - 1] + s[:, n // 2]) / 2
    folded, folded_order = fold_sorted(s, order, median)
    z_folded = scatter_normal_scores(folded, folded_order, normal_score_table(n)).reshape(split.shape)
    bulk, folded = gelman_rubin(z_bulk), gelman_rubin(z_folded)
    r_hat = np.where(folded > bulk, folded, bulk)  # Python's max(bulk, folded), as ArviZ
    return RankDiagnostics(r_hat, ess_bulk, ess_tail)


def ess(draws: np.ndarray, method: str = "bulk", prob: float | None = None) -> np.ndarray:
    """ArviZ's ESS (``arviz.ess``'s numbers) of every coordinate of (chains, draws, d) ``draws``:
    the bulk ESS of finite draws all coordinates at once, any other case (tail ESS included: it
    comes with R-hat from :func:`rank_diagnostics`) by ArviZ with the compiled lag loop."""
    x = _as_coordinates(draws)
    if x is not None and method == "bulk":
        return effective_size(z_scale(split_chains(x))[0])
    per_coordinate = np.moveaxis(np.asarray(draws, dtype=float), 2, 0)
    kwargs = {} if prob is None else {"prob": prob}
    return _array_stats().ess(per_coordinate, chain_axis=-2, draw_axis=-1, method=method, **kwargs)
