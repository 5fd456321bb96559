"""What a reference posterior is: its draws, how they were made, and whether they pass
posteriordb's standard and an independent cross-check (:class:`Reference`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..diagnostics import ChainDiagnostics
from ..truth import Truth

CROSS_CHECK_MCSE = 4.0
"""A reference whose mean or sd disagrees with an independent run's by more than this many
Monte Carlo standard errors (of the difference) is a failed reference."""


@dataclass(frozen=True)
class Reference:
    """Reference draws of a target and how they were made.

    ``draws`` (n, d) pools every chain of the last run (thinned to ``MAX_DRAWS``), mapped to the
    target's coordinates when they were made on its ``reparametrization`` (``form`` names it;
    "" for the target's own form); ``method`` is its method spec, ``seed`` its seed, ``runs``
    how many runs the ladder took, ``grad_evals`` their total cost; ``diagnostics`` are
    ArviZ's (R-hat, bulk and tail ESS, divergences, E-BFMI), on the target's identified
    quantities where it has them; ``passes`` / ``why_not`` the verdict against posteriordb's
    standard and the cross-check; ``cross_check`` what an independent run found (the largest
    disagreement of a mean or sd in Monte Carlo standard errors). ``mean`` and ``sd`` are the
    whole run's, and ``mcse_mean``, ``mcse_sd`` their Monte Carlo errors.
    """

    draws: np.ndarray
    method: dict
    seed: int
    runs: int
    grad_evals: int
    diagnostics: ChainDiagnostics
    passes: bool
    why_not: str = ""
    param_names: tuple = field(default=())
    form: str = ""
    cross_check: dict | None = None
    summary: dict | None = None  # mean, sd, mcse_mean, mcse_sd of the whole run (arrays)
    shipped: str = ""  # the file it was loaded from, when shipped with the package

    @property
    def mean(self) -> np.ndarray:
        if self.summary is not None:
            return np.asarray(self.summary["mean"])
        return self.draws.mean(axis=0)

    @property
    def sd(self) -> np.ndarray:
        if self.summary is not None:
            return np.asarray(self.summary["sd"])
        return self.draws.std(axis=0)

    def remedy(self) -> str:
        """What the reference took, in words: '' for a first run that passed."""
        parts = []
        if self.runs > 1:
            m = self.method
            parts.append(f"the first run failed posteriordb's standard; run {self.runs} "
                         f"({'passed' if self.passes else 'still failed'}) used {m.get('chains', 4)} chains, "
                         f"target_accept {m.get('target_accept', 0.8):g}, warmup {m.get('warmup', 1000):,} and "
                         f"{m.get('draws', 1000):,} draws per chain"
                         + (f", metric {m['metric']!r}" if m.get("metric", "diag") != "diag" else ""))
        if self.form:
            parts.append(f"made on the {self.form} form, mapped back")
        return "; ".join(parts)

    def info(self) -> dict:
        """A flat summary for tables and cache entries (no draws)."""
        d = self.diagnostics
        check = self.cross_check or {}
        return {"method": self.method, "seed": self.seed, "runs": self.runs, "n_draws": int(self.draws.shape[0]),
                "r_hat_max": d.r_hat_max, "ess_bulk_min": d.ess_bulk_min, "ess_tail_min": d.ess_tail_min,
                "divergences": d.divergences, "bfmi_min": d.bfmi_min, "passes": self.passes,
                "why_not": self.why_not, "grad_evals": self.grad_evals, "remedy": self.remedy(), "form": self.form,
                "cross_check_mcse": check.get("max_mcse", float("nan")), "cross_check_worst": check.get("worst", ""),
                "cross_check_method": check.get("method", {}), "shipped": self.shipped}

    def as_truth(self) -> Truth:
        """A :class:`Truth` whose mean and sd are the reference's (``source="reference"``); the
        draws themselves are in ``extras["reference_draws"]`` for the distance metrics. No
        exact sampler: ``Exact`` refuses such a target, as it should."""
        return Truth(mean=self.mean, sd=self.sd, source="reference",
                     extras={"reference_draws": self.draws, "reference_passes": self.passes,
                             "reference_why_not": self.why_not})

    @classmethod
    def from_info(cls, info: dict, draws: np.ndarray, summary: dict | None = None) -> Reference:
        chains = info["method"].get("chains", 4)
        diag = ChainDiagnostics(chains=chains, draws=int(draws.shape[0]) // chains,
                                r_hat_max=info["r_hat_max"], ess_bulk_min=info["ess_bulk_min"],
                                ess_tail_min=info["ess_tail_min"], divergences=info["divergences"],
                                tree_depth_saturated=float("nan"), bfmi_min=info.get("bfmi_min", float("nan")))
        check = None
        if info.get("cross_check_method"):
            check = {"method": info["cross_check_method"], "max_mcse": info.get("cross_check_mcse", float("nan")),
                     "worst": info.get("cross_check_worst", "")}
        return cls(draws=draws, method=info["method"], seed=info["seed"], runs=info["runs"],
                   grad_evals=info["grad_evals"], diagnostics=diag, passes=info["passes"], why_not=info["why_not"],
                   form=info.get("form", ""), cross_check=check, summary=summary, shipped=info.get("shipped", ""))
