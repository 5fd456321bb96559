"""Run health: is a sampler's output fit to be trusted? (The thresholds and messages; the
R-hat and ESS numbers themselves are computed in ``convergence.py``.)

The checks and thresholds are the ones Stan, ArviZ and posteriordb use (Vehtari, Gelman,
Simpson, Carpenter and Bürkner 2021, "Rank-normalization, folding, and localization: an
improved R-hat";
Betancourt 2016, "Diagnosing suboptimal cotangent disintegrations in HMC", for E-BFMI):

- rank-normalised split R-hat above 1.01;
- bulk or tail ESS below 100 per chain;
- any divergent transition after warmup;
- the NUTS tree depth saturated on more than 1% of the draws (trajectories cut short);
- E-BFMI below 0.2 in any chain (the momentum resampling cannot move the energy enough).

ArviZ's estimators compute every number (R-hat and ESS by ArviZ's formulas on all coordinates at
once, in ``convergence``); this module only collects them and words the warnings.
``REFERENCE_STANDARD`` is posteriordb's stricter bar for reference posteriors.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .convergence import rank_diagnostics

R_HAT_MAX = 1.01
ESS_PER_CHAIN_MIN = 100
TREE_DEPTH_SATURATION_MAX = 0.01
BFMI_MIN = 0.2
PARETO_K_MAX = 0.7

# posteriordb's standard for reference draws: R-hat < 1.01, bulk and tail ESS >= 400 for every
# parameter, no divergences, E-BFMI > 0.2 (Magnusson et al. 2024, "posteriordb: testing, benchmarking and
# developing Bayesian inference algorithms", arXiv:2407.04967)
REFERENCE_STANDARD = {"r_hat_max": 1.01, "ess_min": 400, "divergences": 0, "bfmi_min": BFMI_MIN}


def kish_ess(weights: np.ndarray) -> float:
    """Kish's effective sample size of normalised weights: 1 / sum w^2."""
    w = np.asarray(weights, dtype=float)
    w = w / w.sum()
    return float(1.0 / np.sum(w * w))


class ChainDiagnostics(NamedTuple):
    """ArviZ's diagnostics of (chains, draws, d) draws and their sampler statistics."""

    chains: int
    draws: int
    r_hat_max: float  # NaN for one chain
    ess_bulk_min: float
    ess_tail_min: float
    divergences: int
    tree_depth_saturated: float  # fraction of draws at the maximal depth (NaN if not NUTS)
    bfmi_min: float  # NaN without energies


def _nan_max(a) -> float:
    a = np.asarray(a, dtype=float)
    return float(np.max(a[~np.isnan(a)])) if np.any(~np.isnan(a)) else math.nan


def _nan_min(a) -> float:
    return -_nan_max(-np.asarray(a, dtype=float))


def chain_diagnostics(draws: np.ndarray, stats: dict | None = None, max_depth: int | None = None) -> ChainDiagnostics:
    """R-hat, bulk and tail ESS (min over coordinates), divergences, tree-depth saturation and
    E-BFMI of (chains, draws, d) ``draws`` with their (chains, draws) ``stats``."""
    import arviz as az

    stats = stats or {}
    chains, n = draws.shape[:2]
    r_hat = ess_bulk = ess_tail = bfmi = math.nan
    if n >= 4 and np.all(np.isfinite(draws)):
        # ArviZ 1.x's summary takes the tail ESS at its interval probability (0.89 by default)
        ranked = rank_diagnostics(draws, prob=az.rcParams["stats.ci_prob"])
        ess_bulk, ess_tail = _nan_min(ranked.ess_bulk), _nan_min(ranked.ess_tail)
        r_hat = _nan_max(ranked.r_hat) if chains > 1 else math.nan
    energy = stats.get("energy")
    if energy is not None and np.shape(energy)[1] >= 4:
        bfmi = _nan_min(az.bfmi(np.asarray(energy, dtype=float)))
    diverging = stats.get("diverging")
    divergences = int(np.sum(diverging)) if diverging is not None else 0
    saturated = math.nan
    depth = stats.get("tree_depth")
    if depth is not None and max_depth is not None and np.size(depth):
        saturated = float(np.mean(np.asarray(depth) >= max_depth))
    return ChainDiagnostics(chains, n, r_hat, ess_bulk, ess_tail, divergences, saturated, bfmi)


# every health warning starts with its flag: the table's health column reads the flags back
# from result.messages (VI, importance sampling and SMC word their own k-hat, convergence and
# tempering warnings)
FLAGS = ("R-hat", "low ESS", "divergences", "tree depth", "E-BFMI", "Pareto k-hat", "not converged",
         "ladder incomplete", "NaN density", "density raised", "far from the answer", "funnel",
         "weights move the mean", "paths disagree", "interrupted", "peaks unvisited", "few particles",
         "runs disagree", "moves stuck", "search cut short")


def health_messages(diag: ChainDiagnostics) -> list[str]:
    """One warning per failed check (an empty list: healthy), each starting with its flag."""
    out = []
    if diag.draws == 0:
        return out
    if diag.r_hat_max > R_HAT_MAX:
        out.append(f"R-hat {diag.r_hat_max:.3f} > {R_HAT_MAX}: the chains disagree (not mixed)")
    floor = ESS_PER_CHAIN_MIN * diag.chains
    low = [f"{kind} ESS is {v:.0f}" for kind, v in (("bulk", diag.ess_bulk_min), ("tail", diag.ess_tail_min)) if v < floor]
    if low:
        out.append(f"low ESS: the smallest {' and the smallest '.join(low)}, below the {floor} needed "
                   f"({ESS_PER_CHAIN_MIN} per chain x {diag.chains} chains): too few effective draws to trust "
                   "the estimates; run longer")
    if diag.divergences:
        out.append(f"divergences: {diag.divergences} divergent transitions after warmup, the draws may be biased "
                   "(a higher target_accept takes smaller steps everywhere; NUTS(walnuts=True) halves the step only "
                   "where the posterior curves)")
    if diag.tree_depth_saturated > TREE_DEPTH_SATURATION_MAX:
        out.append(f"tree depth saturated on {100 * diag.tree_depth_saturated:.1f}% of draws: "
                   "trajectories were cut short (raise max_depth)")
    if diag.bfmi_min < BFMI_MIN:
        out.append(f"E-BFMI {diag.bfmi_min:.2f} < {BFMI_MIN}: the energy explores poorly (heavy tails or a funnel; "
                   "for a hierarchical model's scale, a non-centred parameterisation removes the funnel)")
    return out


def health_flags(messages: list[str]) -> str:
    """The health column of a table: the flags of the warnings in ``messages``, or "ok"."""
    flags = [flag for flag in FLAGS if any(m.startswith(flag) for m in messages)]
    return ", ".join(flags) or "ok"


def passes_reference_standard(diag: ChainDiagnostics) -> tuple[bool, str]:
    """(passes, why not) against posteriordb's standard for reference draws."""
    s = REFERENCE_STANDARD
    why = []
    if not diag.r_hat_max < s["r_hat_max"]:
        why.append(f"R-hat {diag.r_hat_max:.3f} (needs < {s['r_hat_max']})")
    if not min(diag.ess_bulk_min, diag.ess_tail_min) >= s["ess_min"]:
        why.append(f"min bulk/tail ESS {min(diag.ess_bulk_min, diag.ess_tail_min):.0f} (needs >= {s['ess_min']})")
    if diag.divergences > s["divergences"]:
        why.append(f"{diag.divergences} divergences (needs none)")
    if diag.bfmi_min < s["bfmi_min"]:  # NaN (no energies: not a Hamiltonian sampler) is not checked
        why.append(f"E-BFMI {diag.bfmi_min:.2f} (needs > {s['bfmi_min']})")
    return not why, "; ".join(why)
