"""One result type for every method (docs/architecture.md, "Result"), and the cost it reports.

``Result.draws`` is always (chains, draws, dim) of equally weighted draws, except for
importance sampling, which gives draws (1, n, dim) with ``log_weights`` (1, n). VI and
Laplace draw from their fitted ``approximation``. ``to_arviz()`` gives the ArviZ 1.x
``xarray.DataTree``.
"""

from __future__ import annotations

import contextvars
import dataclasses
import json
import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# Our per-draw statistic names -> ArviZ's conventional sample_stats names (those the
# converters for Stan and NumPyro produce; plot_energy and diagnose read diverging/energy).
ARVIZ_STAT_NAMES = {
    "accept_prob": "acceptance_rate",
    "diverging": "diverging",
    "energy": "energy",
    "energy_error": "energy_error",
    "step_size": "step_size",
    "tree_depth": "tree_depth",
    "n_steps": "n_steps",
    "logp": "lp",
}


IN_RUN = contextvars.ContextVar("workbench_in_run", default=False)
"""True while a method's ``run`` builds its result (``methods/base.py``): reading the result's
messages or info there does not trigger its deferred health check."""


@dataclass(frozen=True)
class Budget:
    """How much work a method may do; each method reads the fields that apply to it.

    ``grad_evals`` caps gradient evaluations (the hardware-independent cost unit that
    studies compare methods on); ``draws`` and ``steps`` override the method's own
    ``draws`` (samplers) and ``steps`` (VI).
    """

    grad_evals: int | None = None
    draws: int | None = None
    steps: int | None = None

    def __post_init__(self):
        for name in ("grad_evals", "draws", "steps"):
            v = getattr(self, name)
            if v is None:
                continue
            whole = isinstance(v, (int, np.integer)) or (isinstance(v, (float, np.floating)) and math.isfinite(v) and v == int(v))
            if isinstance(v, (bool, np.bool_)) or not whole or v < 1:
                raise ValueError(f"Budget.{name} (grad_budget for grad_evals) must be a positive integer or None, got {v!r}")
            object.__setattr__(self, name, int(v))

    def draws_or(self, default: int) -> int:
        """The draws a sampler keeps: the budget's, else ``default`` (the method's own)."""
        return self.draws if self.draws is not None else default


@dataclass
class Cost:
    """What a run cost: evaluation counts (exact) and seconds (noisy).

    ``wall_seconds`` excludes compilation, reported apart in ``compile_seconds``.
    ``warmup_grad_evals`` is the part of ``grad_evals`` spent in warmup / adaptation.
    """

    grad_evals: int = 0
    logp_evals: int = 0
    wall_seconds: float = 0.0
    compile_seconds: float = 0.0
    warmup_grad_evals: int = 0

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class Result:
    """The output of ``method.run(target, ...)``.

    Attributes
    ----------
    method, target : str
        Names of the method and target.
    draws : ndarray (chains, draws, dim)
        Equally weighted draws (or, with ``log_weights``, the weighted proposal draws).
    cost : Cost
    param_names : tuple of str
    seed : int
        The seed the run used (drawn at random and recorded when none was given).
    settings : dict
        The method's settings, for tables and reproduction.
    log_weights : ndarray (chains, draws), optional
        Unnormalised log importance weights of ``draws``.
    approximation : object, optional
        VI / Laplace: the fitted distribution (``logpdf``, ``sample``, ``mean``, ``cov``,
        ``marginal_pdf``).
    log_z, log_z_se : float, optional
        The method's log-evidence estimate and its standard error.
    stats : dict of arrays
        Per-draw sampler statistics, shape (chains, draws) (``accept_prob``, ``diverging``,
        ``step_size``, ``tree_depth``, ``energy``, ``n_steps``, ...), or per-iteration
        traces, shape (iterations,) (VI's ``elbo``, ``learning_rate``, ``r``, ...).
    warmup_draws : ndarray (chains, warmup, dim), optional
        Kept apart from ``draws``.
    messages : list of str
        What the user should know (budget exhausted after n draws, divergences, ...).
    info : dict
        Method-specific extras (adapted step sizes and inverse metric, per-chain counts).
    interrupted : bool
        The run was stopped by Ctrl-C and holds what it had made by then (a message says
        what that is).

    A sampler's run-health check (ArviZ's R-hat and ESS of every coordinate, 0.3 s for 4 x 1,000
    draws of 100 coordinates, ten times the sampling itself) is made the first time ``messages``
    or ``info`` is read, not inside ``run()``: a run costs what its kernel costs, and a caller
    that reads neither (a calibration's hundreds of fits) never pays for it
    (:meth:`defer_health`).
    """

    method: str
    target: str
    draws: np.ndarray
    cost: Cost
    param_names: tuple
    seed: int | None = None
    settings: dict = field(default_factory=dict)
    log_weights: np.ndarray | None = None
    approximation: Any = None
    log_z: float | None = None
    log_z_se: float | None = None
    stats: dict = field(default_factory=dict)
    warmup_draws: np.ndarray | None = None
    messages: list = field(default_factory=list)
    info: dict = field(default_factory=dict)
    interrupted: bool = False

    def __post_init__(self):
        self.__dict__.setdefault("_health", None)
        self.draws = np.asarray(self.draws, dtype=float)
        if self.draws.ndim != 3:
            raise ValueError(f"draws must be (chains, draws, dim), got shape {self.draws.shape}")
        self.param_names = tuple(self.param_names)
        if len(self.param_names) != self.draws.shape[2]:
            raise ValueError(f"param_names has {len(self.param_names)} names for draws of dimension "
                             f"{self.draws.shape[2]}: give one name per coordinate")
        if self.log_weights is not None:
            lw = np.asarray(self.log_weights, dtype=float)
            if lw.shape != self.draws.shape[:2]:
                raise ValueError(f"log_weights shape {lw.shape} != draws' (chains, draws) {self.draws.shape[:2]}")
            self.log_weights = lw

    # -- run health, checked when first read ---------------------------------------------

    def defer_health(self, check) -> None:
        """Leave ``check() -> (info: dict, messages: list)`` to run the first time ``messages``
        or ``info`` is read outside a method's ``run`` (inside it, the method itself adds to
        them); what it returns is added to them."""
        self.__dict__["_health"] = check

    def _check_health(self) -> None:
        check = self.__dict__.get("_health")
        if check is not None and not IN_RUN.get():
            self.__dict__["_health"] = None
            info, messages = check()
            self.__dict__["info"].update(info)
            self.__dict__["messages"].extend(messages)

    # -- shapes and weighted moments ----------------------------------------------------

    @property
    def n_chains(self) -> int:
        return self.draws.shape[0]

    @property
    def n_draws(self) -> int:
        """Draws per chain."""
        return self.draws.shape[1]

    @property
    def dim(self) -> int:
        return self.draws.shape[2]

    def flat_draws(self) -> np.ndarray:
        """All draws pooled over chains, (chains * draws, dim)."""
        return self.draws.reshape(-1, self.dim)

    def weights(self) -> np.ndarray | None:
        """Self-normalised weights of the pooled draws, or None for equally weighted draws."""
        if self.log_weights is None:
            return None
        lw = self.log_weights.ravel()
        finite = np.isfinite(lw)
        if not finite.any():
            raise ValueError("all log weights are -inf or NaN: the proposal missed the target")
        w = np.exp(lw - lw[finite].max())
        w[~finite] = 0.0
        return w / w.sum()

    def mean(self) -> np.ndarray:
        return np.average(self.flat_draws(), axis=0, weights=self.weights())

    def sd(self) -> np.ndarray:
        x = self.flat_draws()
        w = self.weights()
        m = np.average(x, axis=0, weights=w)
        return np.sqrt(np.average((x - m) ** 2, axis=0, weights=w))

    # -- ArviZ --------------------------------------------------------------------------

    def _coords(self) -> list:
        default = all(n == f"theta[{i}]" for i, n in enumerate(self.param_names))
        return list(range(self.dim)) if default else list(self.param_names)

    def to_arviz(self, target=None):
        """The ArviZ 1.x ``xarray.DataTree`` of this result.

        With the ``target`` it ran on, when that target knows its model's own variables (a
        PyMC model, ``target.constrain``), the posterior holds those instead: free variables
        on their constrained scale and the deterministics, named, shaped and with the dims
        and coords the model declares; the draws themselves move to ``unconstrained_posterior``
        (variable ``theta_unconstrained``, dim ``param``).

        Groups: ``posterior`` (variable ``theta`` with dim ``param``); ``sample_stats``
        with ArviZ's conventional names (``acceptance_rate``, ``diverging``, ``energy``,
        ``step_size``, ``tree_depth``, ``n_steps``, ``lp``) plus our own, and
        ``log_weight`` for importance sampling; ``warmup_posterior`` when warmup draws
        were kept; ``optimization`` with per-iteration traces (VI's ELBO, ...) along an
        ``iteration`` dim. Root attrs: method, target, seed, settings (JSON), cost.
        """
        import arviz as az
        import xarray as xr

        shape = self.draws.shape[:2]
        groups: dict[str, dict] = {"posterior": {"theta": self.draws}}
        dims, coords = {"theta": ["param"]}, {"param": self._coords()}
        if target is not None and getattr(target, "constrain_fn", None) is not None:
            if target.dim != self.dim:
                raise ValueError(f"target {target.name!r} has dim {target.dim}, the draws {self.dim}")
            groups["unconstrained_posterior"] = {"theta_unconstrained": self.draws}
            groups["posterior"] = target.constrain(self.draws)
            dims = {"theta_unconstrained": ["param"]}
            dims.update(getattr(target.constrain_fn, "dims", {}))
            coords.update(getattr(target.constrain_fn, "coords", {}))
        sample_stats, traces = {}, {}
        for name, arr in self.stats.items():
            a = np.asarray(arr)
            if a.ndim >= 2 and a.shape[:2] == shape:
                sample_stats[ARVIZ_STAT_NAMES.get(name, name)] = a
            elif a.ndim == 1:
                traces[name] = a
            else:
                warnings.warn(
                    f"to_arviz: stats[{name!r}] has shape {a.shape}, not (chains, draws) = {shape} (or a 1-d trace): "
                    "left out of the DataTree", UserWarning, stacklevel=2,
                )
        if self.log_weights is not None:
            sample_stats["log_weight"] = self.log_weights
        if sample_stats:
            groups["sample_stats"] = sample_stats
        if self.warmup_draws is not None and self.warmup_draws.shape[1] > 0:
            groups["warmup_posterior"] = (target.constrain(self.warmup_draws) if "theta_unconstrained" in dims
                                          else {"theta": self.warmup_draws})
        attrs = {
            "method": self.method,
            "target": self.target,
            "seed": -1 if self.seed is None else int(self.seed),
            "settings": json.dumps(self.settings, default=str),
            "cost": json.dumps(self.cost.as_dict()),
        }
        if self.log_z is not None and math.isfinite(self.log_z):
            attrs["log_z"] = float(self.log_z)
        tree = az.from_dict(
            groups,
            dims=dims,
            coords=coords,
            attrs={"/": attrs},
            save_warmup=True,
        )
        if traces:
            # traces of another length than the first (a fit's restarts, say) get a dim of their own
            n_first = len(next(iter(traces.values())))
            ds = xr.Dataset({k: ("iteration" if len(v) == n_first else f"{k}_iteration", v) for k, v in traces.items()})
            tree["optimization"] = xr.DataTree(ds)
        return tree

    def summary(self, **kwargs):
        """``arviz.summary`` of the posterior (numbers unrounded)."""
        import arviz as az

        kwargs.setdefault("round_to", "none")
        return az.summary(self.to_arviz(), **kwargs)

    def __repr__(self) -> str:
        return (
            f"Result(method={self.method!r}, target={self.target!r}, draws={self.draws.shape}, "
            f"grad_evals={self.cost.grad_evals}, wall={self.cost.wall_seconds:.3g}s)"
        )


def _checked(name: str) -> property:
    """``Result.messages`` and ``Result.info``: plain attributes, but reading either first runs
    the deferred health check (:meth:`Result.defer_health`)."""

    def get(self):
        self._check_health()
        return self.__dict__[name]

    def set(self, value):
        self.__dict__[name] = value

    return property(get, set, doc=f"The result's {name} (reading it runs a deferred health check first).")


Result.messages = _checked("messages")
Result.info = _checked("info")
