"""The first fit's choice of preconditioner for ``metric="auto"`` and ``metric="flow"``, and the
warmup each choice gets after the first phase (``sampling/flow_metric.py`` runs the phases).

The fit (``mcmc/flow_fit.py``) scores the diagonal metric, the low-rank one and a flow by the
held-out Fisher divergence of the first phase's draws and gradients (Seyboldt, Carlson and
Carpenter 2026); the rules below turn those losses into a choice, cheapest first: the diagonal
metric where it already fits, the low-rank one where it improves on it, the flow where it is
worth its phases.
"""

from __future__ import annotations

from ..mcmc.flow_fit import MIN_GAIN, FlowFit

# the diagonal metric already fits when its held-out Fisher divergence per coordinate is below this
# (a variance 25% off in every coordinate of a Gaussian gives 0.05) or when the flow does not halve
# it: then the chains, warmed up, go on with it and the flow's longer warmup is not paid (on a 100-d
# Gaussian the flow's 1,000 iterations cost 0.57 of the diagonal metric's ESS per gradient)
EASY_PER_COORDINATE = 0.1
FLOW_GAIN = 0.5
# an easy posterior's last warmup, after the first phase: the step size alone adapts, from the first
# phase's step and raised target (``adapted``), under the fit's scales (estimated from every chain's
# draws: adapting the metric again per chain in a short warmup lost ESS and health)
EASY_WARMUP = 0.1
# ... and MAMS's, which tunes its step and then L again in stages (methods/microcanonical.py): a
# tenth was too short for them (runs failing the standard: nuts_geometry.py --auto --mams)
EASY_WARMUP_STAGED = 0.4
# metric="auto" choosing the low-rank metric: its warmup after the first phase, which has sampled
# with the low-rank metric already (FIRST_METRIC_AUTO). 0.25 against 0.4, paired seeds: ESS per
# gradient +10-20% on the regressions (diabetes 118 -> 139, breast cancer 78 -> 84, corr10 162 ->
# 180), LGCP 0 of 20 seeds failing, the Brownian motion passing in 99 of 200 seeds against 74. (Under
# a diagonal first phase 0.3 had let LGCP's step settle too briefly after the last metric update:
# divergences in 2 of 20 seeds)
LOW_RANK_WARMUP = 0.25
# ... and MAMS's, whose preconditioner is diagonal: it samples the posterior whitened by the first
# phase's draws, tuning its step and then L in stages (EASY_WARMUP_STAGED; mams_auto.csv)
WHITENED_WARMUP_STAGED = 0.4
# the diagonal map's held-out Fisher divergence per coordinate above which no first fit is kept
# (a regression with scales 1e-2..1e2 whose first draws had not mixed: 1.6e6, and its chains kept
# the fit's diagonal and failed, R-hat 1.76; the benchmark rows that keep the diagonal: 0.1-0.2)
NOTHING_FITS = 10.0
# ... and there the chains have not yet found the posterior, so the low-rank metric's warmup is as
# long as a run's whole warmup, not LOW_RANK_WARMUP's share of it: that regression's chains, whose
# first draws' diagonal loss was 1e3-1e6 per coordinate, failed the standard in 5 of 80 seeds with
# 0.25 (R-hat 1.02-1.54, a chain still on its way in when sampling began) and those 5 passed with
# 1.0, as did seeds 1-20 (under a diagonal first phase and 0.4: 3 of 10 failing); the seeds that
# pass either way pay about a fifth of their ESS per gradient for it (nuts_auto.csv: the S&P 500
# volatility, which fails the standard either way)
NOT_FOUND_WARMUP = 1.0
# the best linear map's held-out Fisher divergence per coordinate above which it does not fit (a
# Gaussian's variances off by 2x everywhere give 1): a flow that beats it by any margin goes on
# learning. Centred eight schools' runs that chose the low-rank metric there (2-6; the flow 1.2-4)
# all failed the standard; the rows that choose it for speed (regressions, LGCP) leave it below 1
LINEAR_MISFIT = 1.0


def first_choice(fit: FlowFit, dim: int, consider_low_rank: bool, flow_allowed: bool = True) -> str:
    """``"diag"``, ``"low_rank"`` or ``"flow"``: the preconditioner the first fit's held-out Fisher
    divergence ranks first. The diagonal metric wins when it already fits (``EASY_PER_COORDINATE``);
    the low-rank metric when it improves on the diagonal by ``MIN_GAIN`` (and is considered); the
    flow only when it halves (``FLOW_GAIN``) the best linear map's loss, since its phases and its
    layers cost more than either, unless no linear map fits (``LINEAR_MISFIT``): then a flow that
    beats the best of them goes on learning. When the diagonal metric fits badly and no layer was
    kept (the first draws have not reached far enough for a layer to show on held-out ones: a banana
    whose chains have not yet been down its arms), the flow's phases go on learning; they sample
    with the diagonal metric until a fit beats it. When nothing fits (``NOTHING_FITS``), ``"auto"``
    goes on with the low-rank metric, which learns its own, rather than keep a diagonal fitted to
    draws that have not found the posterior's scales. Without ``flow_allowed`` the choice is between
    the linear maps."""
    if fit.diagonal_loss / dim < EASY_PER_COORDINATE:
        return "diag"
    linear = fit.diagonal_loss
    if consider_low_rank and fit.low_rank_loss < (1.0 - MIN_GAIN) * fit.diagonal_loss:
        linear = fit.low_rank_loss
    if flow_allowed and fit.flow_loss < (1.0 - FLOW_GAIN) * linear:
        return "flow"
    if flow_allowed and fit.flow.layers and fit.flow_loss < linear and linear / dim > LINEAR_MISFIT \
            and not nothing_fits(fit, dim):
        return "flow"  # no linear map fits: the flow's phases go on learning
    if linear < fit.diagonal_loss:
        return "low_rank"
    if consider_low_rank and fit.flow.layers and nothing_fits(fit, dim):
        return "low_rank"  # no fit to keep: the low-rank metric learns its own
    return "flow" if flow_allowed and not fit.flow.layers else "diag"


def nothing_fits(fit: FlowFit, dim: int) -> bool:
    """Whether the first draws fit no preconditioner (``NOTHING_FITS``): the chains have not yet
    found the posterior."""
    return fit.diagonal_loss / dim > NOTHING_FITS


def low_rank_warmup(fit: FlowFit, dim: int, staged: bool = False) -> float:
    """The share of ``warmup`` the low-rank metric warms up for after the first phase: ``LOW_RANK_WARMUP``
    (``staged``, MAMS on the whitened posterior: ``WHITENED_WARMUP_STAGED``), or a whole warmup
    (``NOT_FOUND_WARMUP``) where nothing fit the first draws (:func:`nothing_fits`)."""
    if nothing_fits(fit, dim):
        return NOT_FOUND_WARMUP
    return WHITENED_WARMUP_STAGED if staged else LOW_RANK_WARMUP
