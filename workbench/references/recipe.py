"""How a reference posterior is made: a NUTS run held to posteriordb's standard, the remedies
that standard's own recipe takes when a run fails it, and an independent run that checks it.

The ladder (:func:`build_reference`), one rung per run, until a run passes (R-hat < 1.01, bulk
and tail ESS >= 400 for every parameter, no divergences, E-BFMI > 0.2; Magnusson et al. 2024):

1. the default run (``DEFAULT_REFERENCE``) on the target's own form;
2. if it fails and the target has a ``reparametrization`` (a non-centred or whitened form of the
   same posterior), the same run on that form, its draws mapped back;
3. if it still fails, the same run with ``metric="flow"`` on the target's own form (a transform
   learned in warmup for the curvature no single step size follows: a funnel's neck, a banana's
   arms) where the dimension allows (``FLOW_MAX_DIM``);
4. posteriordb's recipe for hard posteriors (:func:`remedied`): 10 chains, a longer warmup (up
   to 10,000 iterations), target acceptance raised (0.95, 0.99, then 0.999) while it diverges,
   draws enough for the ESS it lacked, thinned to 10,000.

A run whose chains disagree after 100 draws each (R-hat > 1.05) sits in separate modes: longer
runs will not join them, and the ladder stops. A reference that passes is then checked by an
independent run (:func:`cross_check`): other seeds, a smaller step (the next target acceptance
up); a mean or sd that disagrees by more than ``CROSS_CHECK_MCSE`` Monte Carlo standard errors
fails the reference. Targets with ``identified`` quantities (a BNN's outputs) are checked on
those, not on their unidentified coordinates.
"""

from __future__ import annotations

import math

import numpy as np

from ..diagnostics import REFERENCE_STANDARD, ChainDiagnostics, chain_diagnostics, passes_reference_standard
from ..sampling.flow_metric import AUTO_FLOW_MAX_DIM
from ..target import Target
from .record import CROSS_CHECK_MCSE, Reference

# several chains from spread starts (the initial point jittered by +-2, as Stan does) and a smaller
# step than the default: a reference should be right before it is fast
# posteriordb's recipe runs Stan, whose metric is the diagonal; a reference made apart from NUTS's
# default ("auto") does not share its choices: the flow is the ladder's rung, not the start
DEFAULT_REFERENCE = {"method": "NUTS", "chains": 4, "warmup": 1000, "draws": 2500, "target_accept": 0.9,
                     "metric": "diag", "progress": False}
REFERENCE_RUNS = 5
REFERENCE_MULTIMODAL_R_HAT = 1.05
# posteriordb's recipe (Magnusson et al. 2024, sec. 3.2): 10 chains, warmup up to 10,000, thinned to 10,000
RECIPE_CHAINS = 10
MAX_WARMUP = 10_000
MAX_DRAWS_PER_CHAIN = 20_000
KEPT_DRAWS = 10_000
TARGET_ACCEPT_LADDER = (0.95, 0.99, 0.999)
"""The step-size remedy for divergences, in order (Stan's and posteriordb's advice): the next
target_accept above the run's."""
# the flow's fit grows as d^2: references beyond the dimension where metric="auto" stops fitting
# layers take the recipe alone
FLOW_MAX_DIM = AUTO_FLOW_MAX_DIM
ESS_MARGIN = 1.5  # plan the draws for 1.5 x the ESS the standard asks


def next_target_accept(current: float) -> float:
    higher = [a for a in TARGET_ACCEPT_LADDER if a > current + 1e-12]
    return higher[0] if higher else 1.0 - (1.0 - current) / 2


def remedied(spec: dict, diag: ChainDiagnostics) -> dict:
    """The next run's settings after a run that failed the standard (posteriordb's recipe):
    10 chains; divergences raise target_accept to the next of 0.95, 0.99, 0.999 (smaller steps
    through a funnel's neck) and double the warmup (more time to adapt the step to it), as a
    low E-BFMI or a high R-hat also do; short ESS buys the draws that the run's ESS per draw says
    are needed, at least twice as many. Warmup stays within 10,000 iterations, draws within
    20,000 a chain."""
    spec = dict(spec)
    chains_before = spec.get("chains", 4)
    chains = max(chains_before, RECIPE_CHAINS)
    spec["chains"] = chains
    warmup = spec.get("warmup", 1000)
    draws = spec.get("draws", 1000)
    if diag.divergences:
        spec["target_accept"] = next_target_accept(spec.get("target_accept", 0.8))
    if diag.divergences or diag.bfmi_min < REFERENCE_STANDARD["bfmi_min"] or diag.r_hat_max >= REFERENCE_STANDARD["r_hat_max"]:
        spec["warmup"] = min(MAX_WARMUP, 2 * warmup)
    ess = min(diag.ess_bulk_min, diag.ess_tail_min)
    if not ess >= REFERENCE_STANDARD["ess_min"]:
        per_draw = ess / max(1, diag.chains * diag.draws) if ess > 0 else 0.0
        needed = ESS_MARGIN * REFERENCE_STANDARD["ess_min"] / per_draw / chains if per_draw > 0 else math.inf
        spec["draws"] = int(min(MAX_DRAWS_PER_CHAIN, max(2 * draws * chains_before / chains, needed)))
        spec["warmup"] = min(MAX_WARMUP, max(spec["warmup"], 2 * warmup))
    return spec


def _quantities(target: Target, draws: np.ndarray) -> np.ndarray:
    """What the standard is checked on: the identified quantities where the target has them."""
    return target.identified(draws) if target.identified is not None else draws


def _run(target: Target, form: Target, spec: dict, seed: int, reparametrized: bool):
    """One run on ``form``; returns (draws in the target's coordinates (chains, n, d), the
    diagnostics of the target's quantities, the result)."""
    from ..methods import build_method

    result = build_method(spec).run(form, seed=seed)
    draws = target.reparametrization.to_target(result.draws) if reparametrized else result.draws
    diag = chain_diagnostics(_quantities(target, draws), result.stats, getattr(build_method(spec), "max_depth", None))
    return draws, diag, result


def mcse(draws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ArviZ's Monte Carlo standard errors of the mean and sd, per coordinate of (chains, n, k)."""
    import arviz as az

    return np.asarray(az.mcse(draws, method="mean"), float), np.asarray(az.mcse(draws, method="sd"), float)


def summarise(draws: np.ndarray) -> dict:
    """Mean, sd and their MCSEs of (chains, n, k) draws, the whole run."""
    flat = draws.reshape(-1, draws.shape[-1])
    err_mean, err_sd = mcse(draws)
    return {"mean": flat.mean(axis=0), "sd": flat.std(axis=0), "mcse_mean": err_mean, "mcse_sd": err_sd}


def disagreement(a: dict, b: dict, names) -> tuple[float, str]:
    """The largest difference of a mean or sd between two summaries, in Monte Carlo standard
    errors of the difference, and which it was."""
    z_mean = np.abs(a["mean"] - b["mean"]) / np.hypot(a["mcse_mean"], b["mcse_mean"])
    z_sd = np.abs(a["sd"] - b["sd"]) / np.hypot(a["mcse_sd"], b["mcse_sd"])
    k_mean, k_sd = int(np.nanargmax(z_mean)), int(np.nanargmax(z_sd))
    if z_mean[k_mean] >= z_sd[k_sd]:
        return float(z_mean[k_mean]), f"mean of {names[k_mean]}"
    return float(z_sd[k_sd]), f"sd of {names[k_sd]}"


def cross_check(target: Target, spec: dict, seed: int, reparametrized: bool, summary: dict) -> dict:
    """An independent run (other seeds, the next target acceptance up, on the same form) and
    its largest disagreement with the reference's ``summary`` in MCSEs."""
    spec = {**spec, "target_accept": next_target_accept(spec.get("target_accept", 0.8))}
    form = target.reparametrization.build() if reparametrized else target
    draws, diag, result = _run(target, form, spec, seed + 1000, reparametrized)
    names = target.identified.names if target.identified is not None else target.param_names
    z, worst = disagreement(summary, summarise(_quantities(target, draws)), names)
    return {"method": spec, "seed": seed + 1000, "max_mcse": z, "worst": worst, "grad_evals": result.cost.grad_evals,
            "passes": z <= CROSS_CHECK_MCSE}


def _thin(draws: np.ndarray, keep: int) -> np.ndarray:
    flat = draws.reshape(-1, draws.shape[-1])
    if len(flat) <= keep:
        return np.ascontiguousarray(flat)
    chains, n = draws.shape[:2]
    per_chain = max(1, keep // chains)
    idx = np.linspace(0, n - 1, per_chain).astype(int)
    return np.ascontiguousarray(draws[:, idx].reshape(-1, draws.shape[-1]))


def build_reference(target: Target, method: dict | None = None, seed: int = 0, max_runs: int = REFERENCE_RUNS,
                    check: bool = True) -> Reference:
    """Run the reference (no cache) up the ladder of the module docstring, at most ``max_runs``
    runs (the quick grids take 1), then cross-check it when it passes (``check``)."""
    spec = dict(DEFAULT_REFERENCE if method is None else method)
    grad_evals = 0
    reparametrized = False
    form = target
    for run in range(1, max_runs + 1):
        draws, diag, result = _run(target, form, spec, seed + run - 1, reparametrized)
        grad_evals += result.cost.grad_evals
        passes, why_not = passes_reference_standard(diag)
        # chains that disagree after 100 draws each sit in separate modes: running longer will
        # not join them; with fewer draws a high R-hat is as likely noise, so run longer
        separate_modes = diag.r_hat_max > REFERENCE_MULTIMODAL_R_HAT and diag.draws >= 100 and diag.divergences == 0
        if passes or separate_modes or run == max_runs:
            break
        if target.reparametrization is not None and not reparametrized and spec.get("metric") != "flow":
            reparametrized, form = True, target.reparametrization.build()  # the same run, on the better form
        elif spec.get("method") == "NUTS" and spec.get("metric", "diag") != "flow" and target.dim <= FLOW_MAX_DIM:
            # on the target's own form: the flow learns the reparametrization and more (the
            # stochastic-volatility model's centred form passes with it; its innovations form,
            # where the posterior bends as phi -> 1, keeps diverging)
            spec, reparametrized, form = {**spec, "metric": "flow"}, False, target
        else:
            spec = remedied(spec, diag)
    summary = summarise(_quantities(target, draws))
    checked = None
    if passes and check:
        checked = cross_check(target, spec, seed + run - 1, reparametrized, summary)
        grad_evals += checked["grad_evals"]
        if not checked["passes"]:
            passes = False
            why_not = (f"an independent run (other seeds, target_accept {checked['method']['target_accept']:g}) "
                       f"disagrees: the {checked['worst']} differs by {checked['max_mcse']:.1f} MCSE "
                       f"(> {CROSS_CHECK_MCSE:g})")
    if target.identified is not None:  # the reference's mean and sd are of the coordinates, as its draws
        summary = summarise(draws)
    return Reference(draws=_thin(draws, KEPT_DRAWS), method=spec, seed=seed + run - 1, runs=run, grad_evals=grad_evals,
                     diagnostics=diag, passes=passes, why_not=why_not, param_names=target.param_names,
                     form=target.reparametrization.name if reparametrized else "", cross_check=checked,
                     summary=summary)
