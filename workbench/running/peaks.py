"""Peaks a run may have missed: where a sampler's chains start (apart, where the posterior has
several), and whether a fitted approximation covers every peak a search finds.

Chains started near one point all find the same peak, and R-hat, which compares the chains, then
sees nothing wrong with a run that has missed the others (the 3-peak mixture: every gradient
sampler 1.37 sds off with its health "ok"). Before its chains start, a sampler runs a short mode
search (``modes.find_modes``: L-BFGS from the target's initial point, then from starts at growing
distances), on at most ``MODE_SEARCH_SHARE`` of its gradient budget. Where it finds two peaks or
more, chain c starts at peak c (mod the number found), so chains in different peaks raise R-hat
unless they mix (Gelman & Rubin 1992 ask for over-dispersed starts for this reason). Where it
finds one, or none (a funnel), the chains start as before, around the initial point. After the
run, a peak the search found and no chain's draws came near is named (:func:`unvisited_message`).

A fitted approximation (a Gaussian VI fit, Laplace, Pathfinder) sitting on one of separated peaks
is no better placed to see the others: its k-hat is computed from its own draws, which never
reach them (the 3-peak mixture: every Gaussian method 1.4 sds off, k-hat below 0.7). After the
fit the same search is made (:func:`approximation_peaks`, within ``MODE_SEARCH_SHARE`` of the
budget), and a peak none of q's draws is nearest to is named as for a sampler.
"""

from __future__ import annotations

import numpy as np

from .. import modes as M
from ..errors import NonFiniteDensityError
from ..result import Budget
from ..target import Target
from .threads import one_blas_thread

MODE_SEARCH_SHARE = 0.05
"""The share of a run's gradient budget the mode search may spend."""
MODE_SEARCH_UNBUDGETED = 2000
"""Its gradients in a run without a budget (at least a first ascent's, ``modes.min_grad_evals``)."""
MODE_SEARCH_STARTS = 32
"""Its starts after the first ascent, at most (the gradient limit ends it sooner in high dimension):
8 missed the second peak of a 2-peak mixture in 1 of 5 seeds, 16 in none of 10; on a 3-peak mixture 16
found the third in 3 of 10 seeds, 32 in 7 (2-d: 230 gradients; in high dimension the limit binds first).
The search stops sooner once its last ``MODE_SEARCH_QUIET`` starts found no new peak (a one-peak
posterior's search then costs half as much: 1,079 gradients on the breast-cancer regression, not
1,758; the 3-peak mixture's third peak is found in 5 of 10 seeds)."""
MODE_SEARCH_QUIET = 16
MIN_MODE_WEIGHT = 0.01
"""A peak whose Laplace evidence is below this share of the total is not asked to be visited."""


def search_limit(target: Target, budget: Budget) -> int | None:
    """The gradients the search may spend, or None when the budget cannot pay for a first ascent."""
    floor = M.min_grad_evals(target.dim)
    if budget.grad_evals is None:
        return max(floor, MODE_SEARCH_UNBUDGETED)
    limit = int(MODE_SEARCH_SHARE * budget.grad_evals)
    return limit if limit >= floor else None


def peaks_for_starts(target: Target, seed: int, budget: Budget, chains: int) -> M.ModeSearch | None:
    """The mode search before a run of ``chains`` chains (None when none is made: one chain, or a
    budget too small)."""
    limit = search_limit(target, budget)
    if chains < 2 or limit is None:
        return None
    try:
        with one_blas_thread():  # L-BFGS-B's small BLAS calls: 3-8x slower on BLAS's threads
            return M.find_modes(target, M.search_rng(seed), starts=max(MODE_SEARCH_STARTS, 2 * chains),
                                max_grad_evals=limit, quiet=MODE_SEARCH_QUIET)
    except NonFiniteDensityError:  # no start reached a finite density: the usual starts say why
        return None


def starts_at_peaks(target: Target, search: M.ModeSearch, rngs) -> np.ndarray:
    """Chain c at peak c mod K, moved by a tenth of that peak's sds (so no two chains start at one
    point); a start whose density is not finite falls back to the peak itself."""
    out = np.empty((len(rngs), target.dim))
    for c, rng in enumerate(rngs):
        mode = search.modes[c % len(search.modes)]
        x = mode.x + 0.1 * mode.sd * rng.standard_normal(target.dim)
        try:
            target.check_point(x, what=f"starting point of chain {c}")
        except NonFiniteDensityError:
            x = mode.x.copy()
        out[c] = x
    return out


def several_peaks(search: M.ModeSearch | None) -> bool:
    return search is not None and not search.fallback and len(search.modes) >= 2


def unvisited_message(search: M.ModeSearch | None, draws: np.ndarray) -> list[str]:
    """A health message (flag "peaks unvisited") when the search found peaks (of non-negligible
    Laplace weight) that none of the run's draws is nearest to (by the distance in each peak's
    own sds): the draws cover part of the posterior, whatever R-hat says."""
    if not several_peaks(search) or draws.size == 0:
        return []
    x = draws.reshape(-1, draws.shape[-1])
    centres = np.array([m.x for m in search.modes])
    scales = np.array([m.sd for m in search.modes])
    distance = (((x[:, None, :] - centres[None]) / scales[None]) ** 2).sum(axis=2)
    nearest = np.bincount(np.argmin(distance, axis=1), minlength=len(centres))
    weights = search.weights
    missed = [k for k in range(len(centres)) if nearest[k] == 0 and weights[k] >= MIN_MODE_WEIGHT]
    if not missed:
        return []
    return [f"peaks unvisited: the mode search found {len(centres)} peaks and no draw came near "
            f"{len(missed)} of them (Laplace weights {', '.join(f'{weights[k]:.2f}' for k in missed)}): the draws "
            "cover part of the posterior; run more chains (one per peak at least) or a method that moves between "
            "peaks (SMC, a mixture VI)"]


def peak_reserve(target: Target, budget: Budget) -> int:
    """The gradients a fit keeps back from its budget for :func:`approximation_peaks` (0: none)."""
    return search_limit(target, budget) or 0


def approximation_peaks(target: Target, draws: np.ndarray, seed: int, limit: int | None) -> tuple[list[str], int]:
    """(messages, gradients spent): the mode search after a fit, and the peaks q's ``draws`` miss.
    ``limit``: the gradients it may spend (None or below a first ascent's: no search)."""
    if limit is None or limit < M.min_grad_evals(target.dim):
        return [f"search cut short: the budget left no room for a mode search (one ascent needs "
                f"{M.min_grad_evals(target.dim):,} gradients), so peaks the fit missed would go unseen; "
                "give more budget"], 0
    try:
        # a stream of its own: a fit's own mode search (NN4Post's) has already looked with search_rng's
        rng = np.random.default_rng(np.random.SeedSequence([seed, 0x9EA5]))
        with one_blas_thread():
            search = M.find_modes(target, rng, starts=MODE_SEARCH_STARTS, max_grad_evals=limit,
                                  quiet=MODE_SEARCH_QUIET)
    except NonFiniteDensityError:
        return [], 0
    return unvisited_message(search, draws), search.grad_evals
