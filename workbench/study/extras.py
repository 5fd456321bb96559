"""Extra per-cell quantities for the scientific studies (``Cell(extra="workbench.study.extras:NAME")``)."""

from __future__ import annotations

import numpy as np


def mean_field_sd(cov: np.ndarray) -> np.ndarray:
    """The sds of the KL(q||p)-optimal mean-field Gaussian for a Gaussian p: 1 / sqrt((Sigma^-1)_jj)."""
    return 1.0 / np.sqrt(np.diag(np.linalg.inv(cov)))


def posterior_sd_ratios(result, target) -> dict:
    """q's sds over the exact posterior sds and over the mean-field optimum's (medians over
    coordinates); needs a Gaussian truth with a covariance (e.g. the conjugate regression)."""
    q = result.approximation
    sd_q = np.asarray(q.sd if q is not None else result.flat_draws().std(axis=0), dtype=float)
    truth = target.truth
    return {
        "sd_ratio_exact": float(np.median(sd_q / truth.sd)),
        "sd_ratio_mean_field": float(np.median(sd_q / mean_field_sd(truth.cov))),
    }
