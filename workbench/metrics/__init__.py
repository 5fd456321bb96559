"""Metrics: pure functions of (result, target).

- ``evaluate(result, target)``: the row every study table has (``accuracy.py``: mean, sd,
  Wasserstein and sliced-Wasserstein errors, log-evidence error, mode weights, ESS, R-hat,
  cost ratios). Without a closed-form truth the target's reference posterior stands in
  (``wb.reference``).
- Study metrics, found by name (``registry.py`` lists them): ``marginal_accuracy``, ``marginal_transfer``
  (``marginals.py``), ``chain_scaling`` (``mcmc.py``), ``vi_quality``, ``vi_ablation``,
  ``posterior_sd_ratios`` (``vi.py``), ``theorem1_quantities`` (``predictive.py``),
  ``calibration_ranks`` (``calibration.py``: the rank of a simulated truth among a fit's draws).
- Building blocks: ``distances.py`` (Wasserstein, sliced Wasserstein, total variation),
  ``mcmc.py`` (ESS and R-hat from ArviZ, Kish's ESS of weights).
"""

from .accuracy import METRIC_KEYS, evaluate, reference_draws
from .distances import sliced_wasserstein, total_variation, wasserstein_per_marginal
from .mcmc import ess_and_rhat, kish_ess
from .registry import available, register, study_metric

__all__ = [
    "METRIC_KEYS",
    "available",
    "ess_and_rhat",
    "evaluate",
    "kish_ess",
    "reference_draws",
    "register",
    "sliced_wasserstein",
    "study_metric",
    "total_variation",
    "wasserstein_per_marginal",
]
