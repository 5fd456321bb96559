"""Efficiency diagnostics of draws: ESS and R-hat (ArviZ's, via ``workbench.diagnostics``), Kish's
ESS of importance weights, and the per-run quantities of the MCMC scaling theory."""

from __future__ import annotations

import math

import numpy as np

from ..diagnostics import chain_diagnostics, kish_ess
from ..result import Result


def ess_and_rhat(result: Result, draws: np.ndarray | None = None) -> tuple[float, float, float]:
    """(min bulk ESS, min tail ESS, max R-hat) over coordinates, as ``arviz.summary`` gives them;
    of ``draws`` (chains, n, k) instead of the result's own when given (quantities of them)."""
    if result.log_weights is not None:
        return kish_ess(result.weights()), math.nan, math.nan
    if draws is not None:
        diag = chain_diagnostics(draws)
        return diag.ess_bulk_min, diag.ess_tail_min, diag.r_hat_max
    diag = result.info.get("diagnostics")  # a sampler computed them already (diagnostics.py)
    if diag is None or diag.get("draws") != result.draws.shape[1]:
        diag = chain_diagnostics(result.draws)._asdict()
    return diag["ess_bulk_min"], diag["ess_tail_min"], diag["r_hat_max"]


def chain_scaling(result, target, reference=None) -> dict:
    """Per-run quantities the scaling theory is about: mean acceptance, the (adapted) step
    size or proposal scale, and the expected squared jump distance per coordinate in units
    of the target's variance (ESJD, the efficiency criterion of Roberts, Gelman and Gilks
    1997). For importance sampling, the ESS fraction and Pareto k-hat instead."""
    out = {"acceptance": math.nan, "step_size": math.nan, "esjd": math.nan, "ess_frac": math.nan, "khat": math.nan}
    info = result.info or {}
    if "ess_fraction" in info:
        out.update(ess_frac=float(info["ess_fraction"]), khat=float(info["pareto_k"]))
        return out
    if "accept_prob" in result.stats:
        out["acceptance"] = float(np.mean(result.stats["accept_prob"]))
    if "scale" in info:  # random-walk Metropolis: the proposal scale (the same for every step)
        out["step_size"] = float(np.median(info["scale"]))
    elif "step_size" in result.stats:
        out["step_size"] = float(np.median(result.stats["step_size"]))
    x = result.draws
    if x.shape[1] > 1:
        var = target.truth.sd**2 if target.truth is not None and target.truth.sd is not None else x.reshape(-1, x.shape[2]).var(0)
        out["esjd"] = float(np.mean(np.mean(np.diff(x, axis=1) ** 2, axis=1) / var))
    return out
