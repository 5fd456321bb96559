"""The tests of a calibration: are the PIT values of each quantity uniform?

- :func:`p_values`: ArviZ's ``uniformity_test`` (``arviz_stats``; its default ``pot_c``, the
  truncated-Cauchy combination of pointwise ECDF tests of Tesso and Vehtari 2025) per method
  and quantity;
- :func:`holm`: which quantities fail at the family-wise level (Holm 1979: step-down Bonferroni
  over one method's quantities);
- :func:`vsbc`: Yao, Vehtari, Simpson and Gelman's (2018, "Yes, but did it work?") check of a
  variational fit's point estimates: the PIT p of a calibrated point estimate is symmetric
  about 1/2, tested by Kolmogorov-Smirnov between p and 1 - p;
- :func:`shape`: what a non-uniform PIT says (too narrow, too wide, biased);
- :func:`power`: the smallest under-dispersion the test flags 90% of the time, by simulation.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd


def _uniformity(pit: np.ndarray) -> np.ndarray:
    """ArviZ's p-values of (..., n) PIT values along the last axis."""
    from arviz_stats.base import array_stats

    return np.asarray(array_stats.uniformity_test(np.asarray(pit, dtype=float), axis=-1, method="pot_c")[0],
                      dtype=float)


def p_values(pit: dict, quantities) -> pd.DataFrame:
    """One row per method, one column per quantity: the p-value of uniformity of the PIT values
    (n_sims, q) of each method (simulations whose fit failed are left out)."""
    rows = {}
    for method, values in pit.items():
        out = np.full(len(quantities), math.nan)
        for k in range(len(quantities)):
            column = values[:, k]
            column = column[np.isfinite(column)]
            if len(column) >= 10:
                out[k] = float(_uniformity(np.clip(column, 1e-12, 1 - 1e-12)))
        rows[method] = out
    return pd.DataFrame.from_dict(rows, orient="index", columns=list(quantities))


def holm(p: pd.Series, level: float) -> list[str]:
    """The quantities (the Series' index) rejected by Holm's step-down procedure at family-wise
    level ``level`` (NaN p-values are not tests)."""
    p = p.dropna().sort_values()
    m = len(p)
    rejected = []
    for k, (name, value) in enumerate(p.items()):
        if value <= level / (m - k):
            rejected.append(name)
        else:
            break
    return rejected


def vsbc(pit: dict, quantities) -> pd.DataFrame:
    """Per method and quantity, the p-value of Yao et al.'s (2018) VSBC test: two-sample
    Kolmogorov-Smirnov of the PIT values p against 1 - p (their distribution is symmetric when
    the fit's point estimate is unbiased)."""
    from scipy.stats import ks_2samp

    rows = {}
    for method, values in pit.items():
        out = np.full(len(quantities), math.nan)
        for k in range(len(quantities)):
            column = values[:, k][np.isfinite(values[:, k])]
            if len(column) >= 10:
                out[k] = float(ks_2samp(column, 1.0 - column).pvalue)
        rows[method] = out
    return pd.DataFrame.from_dict(rows, orient="index", columns=list(quantities))


def shape(pit: np.ndarray) -> str:
    """What a PIT sample's departure from uniform looks like, in words: the fit's intervals too
    narrow (more truths in the tails than 1/2: U-shaped ranks), too wide, or the fit biased (the
    truths mostly above or below its draws), whichever deviates more in standard errors."""
    pit = pit[np.isfinite(pit)]
    n = len(pit)
    if n == 0:
        return "no fits"
    central = np.mean(np.abs(pit - 0.5) < 0.25)  # 1/2 for a calibrated fit
    z_spread = (central - 0.5) / math.sqrt(0.25 / n)
    z_bias = (np.mean(pit) - 0.5) / math.sqrt(1.0 / 12.0 / n)
    if abs(z_spread) >= abs(z_bias):
        return "under-dispersed (intervals too narrow)" if z_spread < 0 else "over-dispersed (intervals too wide)"
    return "biased low (the truth mostly above its draws)" if z_bias > 0 else \
        "biased high (the truth mostly below its draws)"


POWER_SHRINKS = (0.02, 0.04, 0.06, 0.08, 0.10, 0.12, 0.15, 0.20, 0.25, 0.30, 0.40, 0.50)
POWER_REPLICATES = 400


@functools.lru_cache(maxsize=32)
def power(n_sims: int, n_quantities: int, level: float, replicates: int = POWER_REPLICATES,
          seed: int = 0) -> dict:
    """The smallest under-dispersion (a fitted sd too small by that fraction) that the test flags
    in at least 90% of calibrations of ``n_sims`` simulations, measured by simulation: the PIT of
    a posterior N(m, s^2) under a fit N(m, ((1 - x) s)^2) is Phi(z / (1 - x)), z ~ N(0, 1); one
    quantity tested at the Bonferroni level ``level / n_quantities`` (what Holm's procedure
    needs of its first rejection). Returns {shrink: power} and ``"smallest_90"`` (NaN when none
    of ``POWER_SHRINKS`` reaches 90%)."""
    from scipy.special import ndtr

    rng = np.random.default_rng(seed)
    alpha = level / max(1, n_quantities)
    out = {}
    for shrink in POWER_SHRINKS:
        z = rng.standard_normal((replicates, n_sims))
        pit = np.clip(ndtr(z / (1.0 - shrink)), 1e-12, 1 - 1e-12)
        out[shrink] = float(np.mean(_uniformity(pit) <= alpha))
    reached = [s for s in POWER_SHRINKS if out[s] >= 0.9]
    return {"power": out, "smallest_90": reached[0] if reached else math.nan, "n_sims": n_sims,
            "n_quantities": n_quantities, "level": level, "replicates": replicates}
