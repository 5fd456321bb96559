"""What the MCMC samplers share on the Python side: starting points, running chains on
threads with a progress bar and Ctrl-C, and turning kernel outputs into a Result."""

from __future__ import annotations

import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import numpy as np

from ..diagnostics import chain_diagnostics, health_messages
from ..errors import NonFiniteDensityError, format_point
from ..result import Cost, Result
from ..target import Target
from .base import Method, check_positive_int


@dataclass(frozen=True)
class ChainSampler(Method):
    """Settings every MCMC sampler shares (same names across methods, DESIGN.md).

    ``init``: None (the target's initial point jittered by uniform(-init_jitter,
    init_jitter) per chain), one point (d,), or (chains, d). ``progress``: None shows a
    bar on a terminal only. ``threads``: default one per chain up to the number of cores.
    """

    chains: int = 4
    warmup: int = 1000
    draws: int = 1000
    init: Any = None
    init_jitter: float = 2.0
    progress: bool | None = None
    threads: int | None = None

    def __post_init__(self):
        check_positive_int("chains", self.chains)
        check_positive_int("warmup", self.warmup, minimum=0)
        check_positive_int("draws", self.draws)
        if not self.init_jitter >= 0:
            raise ValueError(f"init_jitter must be >= 0, got {self.init_jitter!r}")
        if self.threads is not None:
            check_positive_int("threads", self.threads)

    def settings(self) -> dict:
        s = super().settings()
        if s.get("init") is not None:
            s["init"] = np.asarray(s["init"]).tolist()
        return s


def initial_points(target: Target, rngs, init=None, jitter: float = 2.0) -> np.ndarray:
    """One starting point per chain, each checked to have a finite density and gradient.

    ``init`` may be None (the target's initial point plus uniform(-jitter, jitter) noise,
    as Stan does, redrawn up to 100 times where the density is not finite), one point
    (d,) for all chains, or (chains, d).
    """
    chains = len(rngs)
    if init is not None:
        x = np.array(init, dtype=float)
        if x.shape == (target.dim,):
            x = np.tile(x, (chains, 1))
        if x.shape != (chains, target.dim):
            raise ValueError(f"init must have shape ({target.dim},) or ({chains}, {target.dim}), got {x.shape}")
        for c in range(chains):
            target.check_point(x[c], what=f"starting point of chain {c}")
        return x
    out = np.empty((chains, target.dim))
    for c, rng in enumerate(rngs):
        last_error = None
        for _ in range(100):
            x = target.initial_point + (rng.uniform(-jitter, jitter, target.dim) if jitter > 0 else 0.0)
            try:
                target.check_point(x, what=f"starting point of chain {c}")
            except NonFiniteDensityError as exc:
                last_error = exc
                continue
            out[c] = x
            break
        else:
            raise NonFiniteDensityError(
                f"no finite starting point found for chain {c} in 100 tries around "
                f"{format_point(target.initial_point)}; give init=... explicitly. Last: {last_error}",
                last_error.point,
                last_error.logp,
            )
    return out


def _progress_enabled(progress) -> bool:
    if progress is not None:
        return bool(progress)
    return sys.stderr.isatty() and not os.environ.get("CI")


def run_chains(
    run_one: Callable[[int], tuple],
    controls: np.ndarray,
    total_per_chain: int,
    progress=None,
    description: str = "sampling",
    threads: int | None = None,
) -> tuple[list, bool]:
    """Run ``run_one(chain)`` for every chain on a thread pool.

    ``controls`` is the (chains, 2) int64 array the kernels poll: column 0 is set to stop
    them, column 1 is their progress. Returns (outputs in chain order, interrupted).
    Ctrl-C stops every chain at its next iteration and keeps what was drawn.
    """
    chains = controls.shape[0]
    workers = threads or min(chains, os.cpu_count() or 1)
    bar = None
    if _progress_enabled(progress):
        from tqdm.auto import tqdm

        bar = tqdm(total=chains * total_per_chain, desc=description, unit="it", leave=False)
    interrupted = False
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(run_one, c) for c in range(chains)]
        try:
            while wait(futures, timeout=0.1).not_done:  # returns as soon as all are done
                if bar is not None:
                    bar.n = int(controls[:, 1].sum())
                    bar.refresh()
        except KeyboardInterrupt:
            interrupted = True
            controls[:, 0] = 1
        outputs = [f.result() for f in futures]
    if bar is not None:
        bar.n = int(controls[:, 1].sum())
        bar.close()
    return outputs, interrupted


class ChainRun(NamedTuple):
    """Outputs of all chains of one run, stacked: (chains, iterations, ...) arrays."""

    draws: np.ndarray
    stats: np.ndarray
    done: np.ndarray  # iterations completed per chain (warmup included)
    evals: np.ndarray  # gradient (logp_grad) evaluations per chain
    warmup_evals: np.ndarray
    last: list  # each kernel's fourth return value (final step size, scale, ...)
    interrupted: bool
    wall: float


def sample_chains(method, target: Target, n_total: int, n_stats: int, call: Callable) -> ChainRun:
    """Allocate the outputs and run ``call(chain, draws, stats, control)`` for every chain.

    ``call`` runs one chain's kernel into its (n_total, d) draws and (n_total, n_stats)
    stats rows and returns the kernel's (done, evals, warmup evals, last) tuple.
    """
    draws = np.zeros((method.chains, n_total, target.dim))
    stats = np.zeros((method.chains, n_total, n_stats))
    controls = np.zeros((method.chains, 2), dtype=np.int64)
    start = time.perf_counter()
    outputs, interrupted = run_chains(
        lambda c: call(c, draws[c], stats[c], controls[c]),
        controls,
        n_total,
        method.progress,
        f"{method.name} on {target.name}",
        method.threads,
    )
    wall = time.perf_counter() - start
    return ChainRun(
        draws,
        stats,
        np.array([o[0] for o in outputs]),
        np.array([o[1] for o in outputs]),
        np.array([o[2] for o in outputs]),
        [o[3] for o in outputs],
        interrupted,
        wall,
    )


def assemble(
    method,
    target: Target,
    seed: int,
    run: ChainRun,
    stat_names,
    n_warmup: int,
    compile_seconds: float,
    settings: dict,
    budget: int | None,
    stat_columns=None,
    info: dict | None = None,
) -> Result:
    """Cut a run's (chains, iterations, ...) outputs into warmup and equal-length draws."""
    draws, done, interrupted = run.draws, run.done, run.interrupted
    stats = run.stats if stat_columns is None else run.stats[..., stat_columns]
    kept = int(max(0, done.min() - n_warmup))
    messages = []
    if interrupted:
        messages.append(f"interrupted: kept {kept} draws per chain made before Ctrl-C")
    if budget is not None and not interrupted and (done < draws.shape[1]).any():
        messages.append(
            f"gradient budget {budget} spent: {kept} draws per chain "
            f"(chains reached {done.min()}..{done.max()} of {draws.shape[1]} iterations incl. warmup)"
        )
    if (done.max() - done.min()) > 0 and kept > 0:
        messages.append(f"chains cut to the shortest one's {kept} draws")
    stat_dict = {
        name: (stats[:, n_warmup : n_warmup + kept, k] != 0) if name == "diverging" else stats[:, n_warmup : n_warmup + kept, k]
        for k, name in enumerate(stat_names)
    }
    for name in ("tree_depth", "n_steps"):
        if name in stat_dict:
            stat_dict[name] = stat_dict[name].astype(np.int64)
    kept_draws = draws[:, n_warmup : n_warmup + kept]
    diagnostics = chain_diagnostics(kept_draws, stat_dict, getattr(method, "max_depth", None))
    messages += health_messages(diagnostics)
    return Result(
        method=method.name,
        target=target.name,
        draws=kept_draws.copy(),
        cost=Cost(
            grad_evals=int(run.evals.sum()),
            logp_evals=int(run.evals.sum()),
            wall_seconds=run.wall,
            compile_seconds=compile_seconds,
            warmup_grad_evals=int(run.warmup_evals.sum()),
        ),
        param_names=target.param_names,
        seed=seed,
        settings=settings,
        stats=stat_dict,
        warmup_draws=draws[:, : min(n_warmup, int(done.min()))].copy(),
        messages=messages,
        info={"iterations_per_chain": done.tolist(), "grad_evals_per_chain": run.evals.tolist(),
              "diagnostics": diagnostics._asdict(), **(info or {})},
    )
