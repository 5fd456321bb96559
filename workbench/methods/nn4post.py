"""``NN4Post``: the mixture variational inference of the nn4post paper, and ``MeanFieldVI``
(the same with one component: Bayes by Backprop). The loss, its hand-derived gradient and
the optimisation loop are in ``workbench/vi/``; every option the paper discusses is a setting
here, so studies can ablate it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..approximations import GaussianMixture
from ..errors import WorkbenchError
from ..result import Budget, Cost, Result
from ..target import Target
from ..vi import fit as F
from ..vi.elbo import GAUGES
from ._sampling import run_chains
from .base import Method, chain_rngs, check_positive_int

class VIDivergenceError(WorkbenchError, FloatingPointError):
    """The loss or a parameter became NaN or infinite. ``iteration`` says when; ``result``
    holds the fit with the last finite parameters (nothing is lost)."""

    def __init__(self, message, iteration, result):
        super().__init__(message)
        self.iteration = iteration
        self.result = result


def _softplus_inv(s):
    s = np.asarray(s, dtype=float)
    return s + np.log(-np.expm1(-s))


@dataclass(frozen=True)
class NN4Post(Method):
    """Gaussian-mixture VI (nn4post): q = sum_i c_i(a) prod N(mu_i, softplus(zeta_i)).

    Parameters (paper sections in brackets)
    ----------
    n_components : N_c. ``steps`` : optimisation steps. ``samples`` : draws per component per step.
    optimizer : "adam" (default) or "gd" (plain gradient descent, as in the paper);
        ``learning_rate`` and ``lr_final`` (the ratio the rate decays to, exponentially; 1 = none).
    gauge : "fix_c" (c(a - mean a) in the loss, the paper's choice), "mean_grad" (subtract the
        mean of dL/da) or "none" [3.2.1].
    rescale : "constant" (``r``) or "dynamic" (``r_start`` for ``r_warm`` of the steps, then a
        ramp to 1 over ``r_ramp``) [3.2.2].
    frozen_fix : "none", "divide" (gradients of component i / (c_i + epsilon)), "clip" (also
        floor c at epsilon) or "clip_a" (clip dL/da below a_min, ``c_accuracy``) [3.2.3].
    entropy : "exact" (the whole mixture's log q) or "lower_bound" (eq. 17) [3.3.1].
    batch_size : mini-batch size N_m on data-driven targets (None: all data);
        ``batch_factor=False`` drops the N_D / N_m factor on purpose [3.4.1].
    init_range : half-width of the uniform box for the initial means around the target's
        initial point; None gives sqrt(d) (the sec. 7.1.1 scaling). ``init_scale``: initial sds
        (ln 2, i.e. zeta = 0, by default). ``init_from``: a fitted Laplace result (or any
        object with ``mean`` and ``cov``) to centre the components on, jittered by its sds;
        or a ``GaussianMixture`` (or a result holding one, or a dict with its "weights", "means"
        and "scales") with ``n_components`` components, whose weights, means and scales are the
        start (a warm start).
    converge_window, converge_patience, converge_tol : the early-stopping rule (see
        ``workbench/vi/fit.py``); tol = 0 switches it off.
    restarts : independent fits from different random starts, run in parallel, keeping the
        one with the best final ELBO. Fitting is a search problem (sec. 7.1.1): a start may
        miss a peak, and the missed peak lowers the ELBO by about -log(1 - its weight), so the
        ELBO picks the better fit. A gradient budget is split equally; the cost is the sum.
    draws, chains : draws from q returned as ``Result.draws``.
    """

    n_components: int = 5
    steps: int = 5000
    samples: int = 10
    optimizer: str = "adam"
    learning_rate: float = 0.05
    lr_final: float = 1.0
    gauge: str = "fix_c"
    rescale: str = "constant"
    r: float = 1.0
    r_start: float = 0.01
    r_warm: float = 0.3
    r_ramp: float = 0.2
    frozen_fix: str = "none"
    epsilon: float = 1e-8
    c_accuracy: float = 1e-3
    entropy: str = "exact"
    batch_size: int | None = None
    batch_factor: bool = True
    init_range: float | None = None
    init_scale: float = math.log(2.0)
    init_weights: Any = None
    init_from: Any = None
    converge_window: int = 200
    converge_patience: int = 5
    converge_tol: float = 1e-4
    restarts: int = 1
    draws: int = 1000
    chains: int = 1
    progress: bool | None = None

    def __post_init__(self):
        check_positive_int("n_components", self.n_components)
        check_positive_int("steps", self.steps)
        check_positive_int("samples", self.samples)
        check_positive_int("draws", self.draws)
        check_positive_int("chains", self.chains)
        check_positive_int("restarts", self.restarts)
        if not (self.learning_rate > 0 and math.isfinite(self.learning_rate)):
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate!r}")
        if not (0 < self.lr_final <= 1):
            raise ValueError(f"lr_final must lie in (0, 1], got {self.lr_final!r}")
        for name, value, allowed in [
            ("optimizer", self.optimizer, F.OPTIMIZERS),
            ("gauge", self.gauge, GAUGES),
            ("frozen_fix", self.frozen_fix, F.FROZEN_FIXES),
            ("rescale", self.rescale, ("constant", "dynamic")),
            ("entropy", self.entropy, ("exact", "lower_bound")),
        ]:
            if value not in allowed:
                raise ValueError(f"{name} must be one of {sorted(allowed)}, got {value!r}")
        if not self.r > 0:
            raise ValueError(f"r must be > 0, got {self.r!r}")
        if self.batch_size is not None:
            check_positive_int("batch_size", self.batch_size)
        if not self.init_scale > 0:
            raise ValueError(f"init_scale must be > 0, got {self.init_scale!r}")

    def settings(self) -> dict:
        s = super().settings()
        s["init_from"] = (self.init_from if isinstance(self.init_from, dict) or self.init_from is None
                          else type(self.init_from).__name__)
        if s.get("init_weights") is not None:
            s["init_weights"] = np.asarray(s["init_weights"]).tolist()
        return s

    def _initial_parameters(self, target: Target, rng) -> np.ndarray:
        k, d = self.n_components, target.dim
        if self.init_weights is not None:
            w = np.asarray(self.init_weights, dtype=float).ravel()
            if w.shape != (k,) or np.any(w <= 0):
                raise ValueError(f"init_weights must be {k} positive numbers")
            a = np.log(w / w.sum())
            a -= a.mean()
        else:
            a = np.zeros(k)
        approx = None if self.init_from is None else getattr(self.init_from, "approximation", self.init_from)
        if isinstance(approx, dict):  # {"weights", "means", "scales"}: a JSON-able warm start (study specs)
            approx = GaussianMixture(approx["weights"], approx["means"], approx["scales"])
        if isinstance(approx, GaussianMixture) and len(approx.weights) == k:
            # warm start from an earlier fit (or any mixture of the same size, sec. 5)
            if approx.means.shape != (k, d):
                raise ValueError(f"init_from: a mixture of shape {approx.means.shape}, expected {(k, d)}")
            a = np.log(np.maximum(approx.weights, 1e-300))
            a -= a.mean()
            mu = np.array(approx.means, dtype=float)
            zeta = _softplus_inv(approx.scales)
        elif approx is not None:
            centre = np.asarray(approx.mean, dtype=float)
            sd = np.sqrt(np.diag(np.asarray(approx.cov, dtype=float)))
            mu = centre + (sd * rng.standard_normal((k, d)) if k > 1 else 0.0)
            zeta = np.tile(_softplus_inv(sd), (k, 1))
        else:
            half = self.init_range if self.init_range is not None else math.sqrt(d)
            mu = target.initial_point + rng.uniform(-half, half, size=(k, d))
            zeta = np.full((k, d), float(_softplus_inv(self.init_scale)))
        return np.ascontiguousarray(np.concatenate([a, mu.ravel(), zeta.ravel()]))

    def _run(self, target: Target, seed: int, budget: Budget) -> Result:
        if self.batch_size is not None:
            if not target.has_batch:
                raise ValueError(
                    f"batch_size={self.batch_size} needs a target with a mini-batch form "
                    f"(logp_grad_batch); {target.name!r} has none"
                )
            if self.batch_size > target.n_data:
                raise ValueError(f"batch_size={self.batch_size} exceeds the target's {target.n_data} data rows")
        rngs = chain_rngs(seed, self.restarts)
        k, n_fits = self.n_components, self.restarts
        steps = budget.steps if budget.steps is not None else self.steps
        params = [self._initial_parameters(target, rng) for rng in rngs]
        start = time.perf_counter()
        kernel = F.fit_kernel.for_target(target)
        batch_fn = target.logp_grad_batch
        if batch_fn is None:
            from ..jit import logp_grad_batch_signature

            F.no_batch_form.compile(logp_grad_batch_signature(target.data_type))
            batch_fn = F.no_batch_form
        compile_seconds = time.perf_counter() - start

        isettings = np.zeros(F.N_ISETTINGS, dtype=np.int64)
        isettings[F.I_K] = k
        isettings[F.I_STEPS] = steps
        isettings[F.I_SAMPLES] = self.samples
        isettings[F.I_GAUGE] = GAUGES[self.gauge]
        isettings[F.I_EXACT] = int(self.entropy == "exact")
        isettings[F.I_FROZEN] = F.FROZEN_FIXES[self.frozen_fix]
        isettings[F.I_OPTIMIZER] = F.OPTIMIZERS[self.optimizer]
        isettings[F.I_GRAD_BUDGET] = -1 if budget.grad_evals is None else budget.grad_evals // n_fits
        isettings[F.I_BATCH] = self.batch_size or 0
        isettings[F.I_N_DATA] = target.n_data or 0
        isettings[F.I_DYNAMIC_R] = int(self.rescale == "dynamic")
        isettings[F.I_WINDOW] = self.converge_window
        isettings[F.I_PATIENCE] = self.converge_patience
        fsettings = np.zeros(F.N_FSETTINGS)
        fsettings[F.F_LR] = self.learning_rate
        fsettings[F.F_LR_FINAL] = self.lr_final
        fsettings[F.F_R] = self.r
        fsettings[F.F_R_START] = self.r_start
        fsettings[F.F_R_WARM] = self.r_warm
        fsettings[F.F_R_RAMP] = self.r_ramp
        fsettings[F.F_EPS] = self.epsilon
        fsettings[F.F_C_ACCURACY] = self.c_accuracy
        fsettings[F.F_TOL] = self.converge_tol
        if self.batch_size:
            fsettings[F.F_BATCH_SCALE] = target.n_data / self.batch_size if self.batch_factor else 1.0
        fsettings[F.F_BETA1], fsettings[F.F_BETA2], fsettings[F.F_ADAM_EPS] = 0.9, 0.999, 1e-8
        traces = np.zeros((n_fits, steps, len(F.TRACE_NAMES)))
        controls = np.zeros((n_fits, 2), dtype=np.int64)

        def run_one(i):
            return kernel(
                target.logp_grad, batch_fn, target.data, params[i], rngs[i], isettings, fsettings, traces[i], controls[i]
            )

        start = time.perf_counter()
        outputs, interrupted = run_chains(run_one, controls, steps, self.progress, f"{self.name} on {target.name}")
        wall = time.perf_counter() - start
        best = self._best_fit(outputs, traces)
        done, _, status, _ = outputs[best]
        n_grad = sum(int(out[1]) for out in outputs)
        result = self._result(target, seed, params[best], traces[best, :done], n_grad, wall, compile_seconds, status, rngs[best])
        if n_fits > 1:
            result.info["restart_elbos"] = [self._final_elbo(traces[i, : out[0]]) for i, out in enumerate(outputs)]
            result.info["best_restart"] = best
            result.messages.append(f"kept restart {best} of {n_fits} (best final ELBO)")
        if status == F.STATUS_NONFINITE:
            raise VIDivergenceError(
                f"{self.name}: the loss or a parameter became NaN or infinite at iteration {done}; "
                "the last finite parameters are in .result (try a smaller learning_rate)",
                done,
                result,
            )
        return result

    def _final_elbo(self, trace) -> float:
        """Mean ELBO over the last window: the number restarts are ranked by."""
        elbo = trace[-min(len(trace), max(self.converge_window, 1)) :, 0]
        return float(np.mean(elbo)) if len(elbo) else -math.inf

    def _best_fit(self, outputs, traces) -> int:
        """The restart with the best final ELBO; a fit that diverged ranks last."""
        scores = [
            -math.inf if out[2] == F.STATUS_NONFINITE else self._final_elbo(traces[i, : out[0]])
            for i, out in enumerate(outputs)
        ]
        finite = [s if math.isfinite(s) else -math.inf for s in scores]
        return int(np.argmax(finite)) if any(math.isfinite(s) for s in finite) else 0

    def _result(self, target, seed, params, traces, n_grad, wall, compile_seconds, status, rng) -> Result:
        k, d = self.n_components, target.dim
        a = params[:k]
        r_final = traces[-1, 1] if len(traces) else self.r
        z = r_final * (a - (a.mean() if self.gauge == "fix_c" else 0.0))
        c = np.exp(z - np.logaddexp.reduce(z))
        mu = params[k : k + k * d].reshape(k, d).copy()
        sigma = np.logaddexp(0.0, params[k + k * d :].reshape(k, d))
        approx = GaussianMixture(c, mu, sigma)
        draws = np.stack([approx.sample(self.draws, rng) for _ in range(self.chains)])
        elbo = traces[:, 0]
        tail = elbo[-min(len(elbo), max(self.converge_window, 1)) :]
        messages = {
            F.STATUS_CONVERGED: [f"stopped at step {len(traces)}: the ELBO's running mean stopped improving"],
            F.STATUS_BUDGET: [f"gradient budget spent after {len(traces)} steps"],
            F.STATUS_STOPPED: [f"interrupted after {len(traces)} steps"],
        }.get(status, [])
        return Result(
            method=self.name,
            target=target.name,
            draws=draws,
            cost=Cost(grad_evals=int(n_grad), logp_evals=int(n_grad), wall_seconds=wall, compile_seconds=compile_seconds),
            param_names=target.param_names,
            seed=seed,
            settings=self.settings(),
            approximation=approx,
            # -ELBO >= -log Z: the ELBO (mean of the last window) is a lower bound on log Z
            log_z=float(np.mean(tail)) if len(tail) else None,
            log_z_se=float(np.std(tail) / math.sqrt(len(tail))) if len(tail) > 1 else None,
            stats={name: traces[:, j].copy() for j, name in enumerate(F.TRACE_NAMES)},
            messages=messages,
            info={"status": int(status), "steps": len(traces), "params": params.copy()},
        )


@dataclass(frozen=True)
class MeanFieldVI(NN4Post):
    """Mean-field Gaussian VI (Bayes by Backprop): ``NN4Post`` with one component."""

    n_components: int = 1

    def __post_init__(self):
        if self.n_components != 1:
            raise ValueError("MeanFieldVI has exactly one component; use NN4Post for mixtures")
        super().__post_init__()
