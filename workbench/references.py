"""Reference posteriors: long, checked NUTS runs standing in for the truth of a target
without a closed form (regressions with non-conjugate priors, BNNs, a user's model).

As posteriordb keeps reference draws beside model and data, a reference here is an artifact
of the target, built once and cached on disk::

    ref = wb.reference(target)            # cached, so cheap the 2nd time
    ref.passes, ref.why_not               # posteriordb's standard (diagnostics.REFERENCE_STANDARD)
    ref.draws                             # (n, d) pooled draws
    wb.metrics.evaluate(result, target)   # uses the reference when the target has no truth

A reference must pass posteriordb's standard (R-hat < 1.01, bulk and tail ESS >= 400 for
every parameter, no divergences, E-BFMI > 0.2; Magnusson et al. 2024). One that fails is run
again, up to ``REFERENCE_RUNS`` runs (:func:`remedied`): with a smaller step (target_accept 0.95,
then 0.99) and a longer warmup if it diverged, with twice the warmup and draws if its ESS was short; not when R-hat says its
chains sit in different modes (longer runs do not fix that). A reference that still fails
is kept and says so (``passes``, ``why_not``): pages and rows built on it must say it too.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .cache import CellCache, code_version, spec_hash
from .diagnostics import (
    REFERENCE_STANDARD,
    ChainDiagnostics,
    chain_diagnostics,
    passes_reference_standard,
)
from .target import Target, Truth

# several chains from spread starts (the initial point jittered by +-2, as Stan does) and a smaller
# step than the default: a reference should be right before it is fast
DEFAULT_REFERENCE = {"method": "NUTS", "chains": 4, "warmup": 1000, "draws": 2500, "target_accept": 0.9,
                     "progress": False}
REFERENCE_RUNS = 3
REFERENCE_MULTIMODAL_R_HAT = 1.05
# user-built targets are identified by their data too (a built-in target's spec already is)
_USER_FACTORIES = ("from_numba", "from_logp", "from_pymc", "custom")


@dataclass(frozen=True)
class Reference:
    """Reference draws of a target and how they were made.

    ``draws`` (n, d) pools every chain of the last run; ``method`` is its method spec,
    ``seed`` its seed, ``runs`` how many runs it took, ``grad_evals`` their total cost;
    ``diagnostics`` are ArviZ's (R-hat, bulk and tail ESS, divergences, E-BFMI);
    ``passes`` / ``why_not`` the verdict against posteriordb's standard.
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

    @property
    def mean(self) -> np.ndarray:
        return self.draws.mean(axis=0)

    @property
    def sd(self) -> np.ndarray:
        return self.draws.std(axis=0)

    def remedy(self) -> str:
        """What the reference took, in words: '' for a first run that passed."""
        if self.runs == 1:
            return ""
        m = self.method
        return (f"the first run failed posteriordb's standard; run {self.runs} "
                f"({'passed' if self.passes else 'still failed'}) used target_accept {m.get('target_accept', 0.8):g}, "
                f"warmup {m.get('warmup', 1000):,} and {m.get('draws', 1000):,} draws per chain")

    def info(self) -> dict:
        """A flat summary for tables and cache entries (no draws)."""
        d = self.diagnostics
        return {"method": self.method, "seed": self.seed, "runs": self.runs, "n_draws": int(self.draws.shape[0]),
                "r_hat_max": d.r_hat_max, "ess_bulk_min": d.ess_bulk_min, "ess_tail_min": d.ess_tail_min,
                "divergences": d.divergences, "bfmi_min": d.bfmi_min, "passes": self.passes,
                "why_not": self.why_not, "grad_evals": self.grad_evals, "remedy": self.remedy()}

    def as_truth(self) -> Truth:
        """A :class:`Truth` whose mean and sd come from the draws (``source="reference"``); the
        draws themselves are in ``extras["reference_draws"]`` for the distance metrics. No
        exact sampler: ``Exact`` refuses such a target, as it should."""
        return Truth(mean=self.mean, sd=self.sd, source="reference",
                     extras={"reference_draws": self.draws, "reference_passes": self.passes,
                             "reference_why_not": self.why_not})

    @classmethod
    def from_info(cls, info: dict, draws: np.ndarray) -> "Reference":
        chains = info["method"].get("chains", 4)
        diag = ChainDiagnostics(chains=chains, draws=int(draws.shape[0]) // chains,
                                r_hat_max=info["r_hat_max"], ess_bulk_min=info["ess_bulk_min"],
                                ess_tail_min=info["ess_tail_min"], divergences=info["divergences"],
                                tree_depth_saturated=float("nan"), bfmi_min=info.get("bfmi_min", float("nan")))
        return cls(draws=draws, method=info["method"], seed=info["seed"], runs=info["runs"],
                   grad_evals=info["grad_evals"], diagnostics=diag, passes=info["passes"], why_not=info["why_not"])


TARGET_ACCEPT_LADDER = (0.95, 0.99)
"""The step-size remedy for divergences, in order (Stan's and PyMC's advice): the next
target_accept above the run's."""


def remedied(spec: dict, diag: ChainDiagnostics) -> dict:
    """The next run's settings after a run that failed the standard: divergences raise
    target_accept to the next of 0.95, 0.99 (smaller steps through a funnel's neck) and
    lengthen the warmup by half (more time to adapt the step size to it); short ESS doubles
    warmup and draws."""
    spec = dict(spec)
    if diag.divergences:
        current = spec.get("target_accept", 0.8)
        higher = [a for a in TARGET_ACCEPT_LADDER if a > current + 1e-12]
        spec["target_accept"] = higher[0] if higher else 1.0 - (1.0 - current) / 2
        spec["warmup"] = int(1.5 * spec.get("warmup", 1000))
    if min(diag.ess_bulk_min, diag.ess_tail_min) < REFERENCE_STANDARD["ess_min"]:
        spec["warmup"] = 2 * spec.get("warmup", 1000)
        spec["draws"] = 2 * spec.get("draws", 1000)
    return spec


def build_reference(target: Target, method: dict | None = None, seed: int = 0, max_runs: int = REFERENCE_RUNS) -> Reference:
    """Run the reference (no cache): ``method`` is a method spec (default ``DEFAULT_REFERENCE``),
    re-run with adjusted settings while it fails posteriordb's standard (module docstring), up
    to ``max_runs`` runs (the quick grids take 1: the re-runs of the BNN's reference, which
    fails the standard anyway, cost 188 s of a 4-minute report)."""
    from .methods import build_method

    spec = dict(DEFAULT_REFERENCE if method is None else method)
    grad_evals = 0
    for run in range(1, max_runs + 1):
        result = build_method(spec).run(target, seed=seed + run - 1)
        grad_evals += result.cost.grad_evals
        diag = result.info.get("diagnostics")  # a sampler's; any other method's draws are checked here
        diag = ChainDiagnostics(**diag) if diag is not None else chain_diagnostics(result.draws)
        passes, why_not = passes_reference_standard(diag)
        # chains that disagree after 100 draws each sit in separate modes: running longer will
        # not join them; with fewer draws a high R-hat is as likely noise, so run longer
        separate_modes = diag.r_hat_max > REFERENCE_MULTIMODAL_R_HAT and diag.draws >= 100
        if passes or separate_modes or run == max_runs:
            break
        spec = remedied(spec, diag)
    return Reference(draws=result.flat_draws(), method=spec, seed=seed + run - 1, runs=run, grad_evals=grad_evals,
                     diagnostics=diag, passes=passes, why_not=why_not, param_names=target.param_names)


def data_digest(target: Target) -> str:
    """A hash of the target's data arrays: a user's target is identified by its data too."""
    h = hashlib.sha256()
    for a in target.data:
        a = np.ascontiguousarray(a)
        h.update(str((a.dtype, a.shape)).encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def reference_key(target_spec: dict, method: dict, seed: int = 0, data: str | None = None,
                  max_runs: int = REFERENCE_RUNS) -> str:
    """The cache key of a reference: target spec, method spec, seed, the library's version
    (and, for a user's target, its data digest; the number of runs allowed when not the default)."""
    fields = {"target": target_spec, "method": method, "seed": seed, "version": code_version()}
    if max_runs != REFERENCE_RUNS:
        fields["max_runs"] = max_runs
    if data is not None:
        fields["data"] = data
    return spec_hash(fields)


def target_reference_key(target: Target, method: dict | None = None, seed: int = 0) -> str:
    spec = dict(target.spec)
    data = data_digest(target) if spec.get("factory") in _USER_FACTORIES else None
    return reference_key(spec, dict(DEFAULT_REFERENCE if method is None else method), seed, data)


def default_cache_dir() -> Path:
    """``$WORKBENCH_CACHE`` or ``~/.cache/workbench`` (``$XDG_CACHE_HOME`` respected)."""
    if os.environ.get("WORKBENCH_CACHE"):
        return Path(os.environ["WORKBENCH_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "workbench"


def references_cache(cache_dir: str | os.PathLike | None = None) -> CellCache:
    """The on-disk store of references under ``cache_dir`` (default :func:`default_cache_dir`)."""
    return CellCache(default_cache_dir() if cache_dir is None else Path(cache_dir), "_references")


def save_reference(cache: CellCache, key: str, ref: Reference, target_spec: dict | None = None) -> None:
    cache.put(key, {"status": "ok", "info": ref.info(), "target": target_spec}, {"draws": ref.draws})


def load_reference(cache: CellCache, key: str) -> Reference | None:
    entry = cache.get(key)
    if entry is None or entry.get("status") != "ok":
        return None
    draws = cache.arrays(key).get("draws")
    return None if draws is None else Reference.from_info(entry["info"], draws)


def reference(
    target: Target,
    *,
    method: dict | None = None,
    seed: int = 0,
    cache_dir: str | os.PathLike | None = None,
    refresh: bool = False,
) -> Reference:
    """The target's reference posterior: loaded from the cache, or built and cached.

    Parameters
    ----------
    method : dict, optional
        The method spec, e.g. ``{"method": "NUTS", "chains": 4, "draws": 5000}``
        (default ``DEFAULT_REFERENCE``: NUTS, 4 x 2,500 draws after 1,000 warmup, target_accept 0.9).
    cache_dir : path, optional
        Where references are kept (default ``$WORKBENCH_CACHE`` or ``~/.cache/workbench``).
    refresh : bool
        Build it again even when cached.
    """
    if not isinstance(target, Target):
        raise TypeError(f"reference needs a workbench Target, got {type(target).__name__}")
    cache = references_cache(cache_dir)
    key = target_reference_key(target, method, seed)
    if not refresh:
        ref = load_reference(cache, key)
        if ref is not None and ref.draws.shape[1] == target.dim:
            return ref
    ref = build_reference(target, method, seed)
    save_reference(cache, key, ref, dict(target.spec))
    return ref
