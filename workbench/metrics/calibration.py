"""Simulation-based calibration of one fit: the rank of the simulated truth among the fit's draws,
for every quantity (Talts, Betancourt, Simpson, Vehtari and Gelman 2018, "Validating Bayesian
inference algorithms with simulation-based calibration"; Modrák, Moon, Kim, Bürkner, Huurre,
Faltejsková, Gelman and Vehtari 2023, "Simulation-based calibration checking for Bayesian
computation: the choice of test quantities shapes sensitivity").

For a parameter drawn from the prior and data simulated from it, the rank of the true value among
draws from the exact posterior is uniform; ``wb.calibrate`` collects these ranks over many
simulations and tests them. Here, one fit:

- **quantities** (:func:`quantity_names`, :func:`quantities`): the target's coordinates (the
  unconstrained parameters), the model's own variables where they differ (a PyMC model's
  ``tau`` beside ``tau_log__``, its deterministics), or the quantities it identifies (a BNN's
  outputs), then the test quantity ``log_lik``, the log-likelihood of the simulated data at
  each draw: a fit that ignores the data keeps the parameters' ranks uniform (the prior is the
  average posterior) but not the log-likelihood's (Modrák et al. 2023, sec. 4);
- **draws thinned to near independence** (:func:`sbc_draws`): autocorrelated draws make ranks
  too concentrated (Talts et al. 2018, sec. 4.3); the R package ``SBC`` thins MCMC by 10, here
  the thinning is the run's own: its draws divided by ArviZ's bulk ESS (the smallest over the
  coordinates), so about ESS draws remain. Independent draws (VI, Laplace, SMC) are not thinned;
  importance-weighted draws are ranked with their weights;
- **ranks with ties broken at random**, and their PIT, (rank + U) / (draws + 1) (uniform on (0, 1)
  for a calibrated fit whatever the number of draws each fit kept).
"""

from __future__ import annotations

import math

import numpy as np

LOG_LIK = "log_lik"


def _flatten_variables(variables: dict) -> tuple[list[str], list[np.ndarray]]:
    """name -> (n, *shape) arrays as one column per element: ``beta[3]``, ``L[1,0]``."""
    names, columns = [], []
    for name, values in variables.items():
        v = np.asarray(values, dtype=float)
        shape = v.shape[1:]
        if shape == ():
            names.append(name)
            columns.append(v)
            continue
        for idx in np.ndindex(*shape):
            names.append(f"{name}[{','.join(map(str, idx))}]")
            columns.append(v[(slice(None), *idx)])
    return names, columns


def _columns(target, draws: np.ndarray) -> tuple[list[str], list[np.ndarray]]:
    x = np.atleast_2d(np.asarray(draws, dtype=float))
    gen = target.generative
    if target.identified is not None:
        names, columns = list(target.identified.names), list(target.identified(x).T)
    else:
        names, columns = list(target.param_names), list(x.T)
        if gen.variables is not None:  # the model's own variables where they are not coordinates
            more, values = _flatten_variables(gen.variables(x))
            for name, column in zip(more, values):
                if name not in names:
                    names.append(name)
                    columns.append(column)
    names.append(LOG_LIK)
    columns.append(np.asarray(gen.log_likelihood(x, target.data), dtype=float))
    return names, columns


def quantity_names(target) -> tuple[str, ...]:
    """The names of the quantities ranked for ``target`` (its ``generative`` form is needed)."""
    if target.generative is None:
        raise ValueError(f"target {target.name!r} has no generative form: it cannot simulate data")
    return tuple(_columns(target, np.atleast_2d(target.initial_point))[0])


def quantities(target, draws: np.ndarray) -> np.ndarray:
    """The quantities of (n, d) draws under the target's data: (n, q)."""
    return np.column_stack(_columns(target, draws)[1])


def sbc_draws(result) -> tuple[np.ndarray, np.ndarray | None, int]:
    """(draws (n, d), weights or None, thinning): the fit's draws thinned by its own draws per
    effective draw (the module docstring)."""
    if result.log_weights is not None:
        return result.flat_draws(), result.weights(), 1
    chains, n, _ = result.draws.shape
    if chains * n < 2:
        return result.flat_draws(), None, 1
    diagnostics = result.info.get("diagnostics")
    if diagnostics is None:  # draws of a fitted approximation or SMC's particles: independent
        return result.flat_draws(), None, 1
    ess = diagnostics.get("ess_bulk_min", math.nan)
    thin = 1 if not (ess > 0) else max(1, int(chains * n // max(ess, 1.0)))
    thin = min(thin, max(1, n // 2))  # keep at least two draws a chain
    return result.draws[:, ::thin].reshape(-1, result.dim), None, thin


def ranks_of_truth(values: np.ndarray, truth: np.ndarray, weights: np.ndarray | None,
                   rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(ranks (q,), PIT (q,)) of the true ``truth`` (q,) among ``values`` (n, q), ties broken at
    random; with ``weights``, the PIT is the weighted distribution function at the truth (ties
    split at random) and the rank is its PIT times (n + 1), rounded down."""
    values = np.asarray(values, dtype=float)
    n = values.shape[0]
    below = values < truth[None, :]
    equal = values == truth[None, :]
    if weights is None:
        ranks = below.sum(axis=0) + rng.integers(0, equal.sum(axis=0) + 1)
        pit = (ranks + rng.random(ranks.size)) / (n + 1)
        return ranks.astype(np.int64), pit
    w = np.asarray(weights, dtype=float) / np.sum(weights)
    pit = w @ below + rng.random(truth.size) * (w @ equal)
    pit = np.clip(pit, 0.5 / (n + 1), 1.0 - 0.5 / (n + 1))  # the test needs values inside (0, 1)
    return np.floor(pit * (n + 1)).astype(np.int64), pit


def calibration_ranks(result, target, reference=None) -> dict:
    """The study metric of a calibration cell: the ranks and PIT of the simulated truth
    (``target.truth.extras["simulated"]``) among the fit's thinned draws, as arrays, and the
    draws ranked and the thinning as columns."""
    truth = target.truth
    if truth is None or "simulated" not in truth.extras:
        raise ValueError(f"target {target.name!r} is not a simulated data set (a calibration cell's target)")
    draws, weights, thin = sbc_draws(result)
    finite = np.all(np.isfinite(draws), axis=1)
    draws = draws[finite]
    weights = None if weights is None else weights[finite]
    true_values = quantities(target, truth.extras["simulated"][None])[0]
    if len(draws) == 0:
        nan = np.full(true_values.size, np.nan)
        return {"n_ranked": 0, "thin": thin, "_arrays": {"ranks": nan, "pit": nan}}
    values = quantities(target, draws)
    rng = np.random.default_rng([int(result.seed or 0), 0x5BC])
    ranks, pit = ranks_of_truth(values, true_values, weights, rng)
    return {"n_ranked": int(len(draws)), "thin": thin, "_arrays": {"ranks": ranks.astype(float), "pit": pit}}


# -- the family of quantities tested ---------------------------------------------------------

FAMILY_PRIOR_DRAWS = 200
"""Prior draws the family of tested quantities is chosen on (:func:`tested_quantities`)."""


def tested_quantities(target, seed: int = 0, n: int = FAMILY_PRIOR_DRAWS) -> tuple[tuple[str, ...], dict]:
    """(the quantities tested, why each other one is not): of :func:`quantity_names`, those
    that carry information of their own over ``n`` draws from the prior. Left out:

    - a constant (no variance over the prior draws: a correlation matrix's diagonal, always 1,
      whose rank is tie-breaking noise);
    - a duplicate of one kept (the mirror entry [j, i] of a symmetric matrix);
    - a monotone transform of one kept (rank correlation 1: ``tau`` beside ``tau_log__``,
      ``sigma`` beside its square): its ranks are the same ranks.

    Each extra quantity costs the family-wise correction power (Holm over q quantities): an
    18-d LKJ regression tested 37 quantities, 13 of them of these three kinds."""
    names = quantity_names(target)
    rng = np.random.default_rng([seed, 0xFA417])
    thetas = np.array([target.generative.simulate(rng)[0] for _ in range(n)])
    values = quantities(target, thetas)  # under the target's own data: log_lik stays a test of it
    kept, why = [], {}
    order = np.argsort(np.argsort(values, axis=0), axis=0).astype(float)  # ranks: monotone transforms agree
    # the model's own variables (a PyMC model's sigma, its correlations) are kept before the
    # unconstrained coordinates they transform (sigma_log__): their names are the ones a reader knows
    coordinates = set(target.param_names) if target.identified is None else set()
    preference = [k for k, nm in enumerate(names) if nm not in coordinates] + \
                 [k for k, nm in enumerate(names) if nm in coordinates]
    for k in preference:
        name = names[k]
        column = values[:, k]
        if name == LOG_LIK:
            kept.append(k)
            continue
        if not np.all(np.isfinite(column)) or np.ptp(column) <= 1e-12 * max(1.0, float(np.max(np.abs(column)))):
            why[name] = "constant over the prior" if np.all(np.isfinite(column)) else "not finite over the prior"
            continue
        twin = next((j for j in kept if names[j] != LOG_LIK and np.array_equal(column, values[:, j])), None)
        if twin is not None:
            why[name] = f"equal to {names[twin]}"
            continue
        twin = next((j for j in kept if names[j] != LOG_LIK
                     and abs(np.corrcoef(order[:, k], order[:, j])[0, 1]) > 1.0 - 1e-9), None)
        if twin is not None:
            why[name] = f"a monotone transform of {names[twin]}"
            continue
        kept.append(k)
    return tuple(names[k] for k in sorted(kept)), why
