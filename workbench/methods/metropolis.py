"""Metropolis-Hastings samplers: ``RandomWalkMH`` and ``IndependenceMH``.

The kernels are in ``workbench/mcmc/metropolis.py``; these classes validate settings,
seed one generator per chain, run the chains on threads and return a Result.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..approximations import check_proposal, draw_from
from ..mcmc import metropolis as K
from ..mcmc.adaptation import stan_windows
from ..result import Budget, Result
from ..running.method import Examples, Method
from ..running.validation import check_positive_int
from ..sampling.chain_sampler import ChainSampler, set_up_chains, start_chains
from ..target import Target


@dataclass(frozen=True)
class RandomWalkMH(ChainSampler):
    """Random-walk Metropolis with a Gaussian proposal, adapted during warmup.

    ``scale`` (default 2.38 / sqrt(d)) times per-coordinate sds (default 1) is the
    proposal sd. With ``adapt=True`` the warmup tunes the scale toward acceptance
    ``target_accept`` (0.234) and learns the sds from the warmup draws.
    """

    family = "MCMC"
    colour, marker = "#E69F00", "^"
    examples = Examples(quick={"chains": 2, "warmup": 500, "draws": 2000}, budget=2000, long={"warmup": 10, "draws": 10**7})

    scale: float | None = None
    target_accept: float = 0.234
    adapt: bool = True

    def __post_init__(self):
        super().__post_init__()
        if self.scale is not None and not (self.scale > 0 and math.isfinite(self.scale)):
            raise ValueError(f"scale must be > 0, got {self.scale!r}")
        if not (0.0 < self.target_accept < 1.0):
            raise ValueError(f"target_accept must lie in (0, 1), got {self.target_accept!r}")

    def _run(self, target: Target, seed: int, budget: Budget) -> Result:
        chains = start_chains(self, K.random_walk_chain, target, seed, budget)
        d, n_warmup = target.dim, chains.n_warmup
        # a longer terminal buffer than Stan's 50: dual averaging needs a few hundred
        # random-walk steps to settle the scale (50 left it 40% too large at d = 10)
        window_start, windows = (
            stan_windows(n_warmup, term_buffer=max(50, n_warmup // 5)) if self.adapt else (0, np.zeros(0, np.int64))
        )
        settings = K.random_walk_settings(
            n_warmup=n_warmup, n_draws=chains.n_draws, grad_budget=chains.grad_budget_per_chain,
            window_start=window_start, adapt=self.adapt, scale=self.scale or 2.38 / math.sqrt(d),
            target_accept=self.target_accept,
        )
        sds = np.ones((self.chains, d))
        run = chains.sample(
            lambda c, draws, stats, control: chains.kernel(
                target.kernel_logp_grad, target.kernel_data, chains.x0[c].copy(), chains.rngs[c], settings,
                sds[c], windows, draws, stats, control,
            ),
            len(K.STAT_NAMES),
        )
        return chains.result(run, K.STAT_NAMES, info={"scale": [float(s) for s in run.last], "proposal_sd": sds})


@dataclass(frozen=True)
class IndependenceMH(Method):
    """Independence Metropolis-Hastings with any proposal q (``logpdf`` and ``sample``).

    Every proposal is a fresh draw from q, accepted with the Hastings ratio
    min(1, w(y) / w(x)), w = p / q. Works well when q is close to p and heavier-tailed
    (a Laplace or VI approximation, a Student-t). ``warmup`` draws are burn-in, kept apart.
    """

    family = "MCMC"
    colour, marker = "#999933", "v"
    examples = Examples(quick={"chains": 2, "warmup": 500, "draws": 2000}, budget=2000, long={"warmup": 10, "draws": 10**6})

    proposal: Any = None
    chains: int = 4
    warmup: int = 0
    draws: int = 1000
    progress: bool | None = None
    threads: int | None = None

    def memory_needs(self, target: Target, budget: Budget) -> dict:
        """Every proposal is drawn up front, and every iteration's draw is kept, then copied."""
        n_total = self.warmup + budget.draws_or(self.draws) + 1
        return {"proposals": 8 * self.chains * n_total * (target.dim + 1),
                "chain draws": 8 * 2 * self.chains * n_total * target.dim}

    def __post_init__(self):
        if self.proposal is None:
            raise ValueError("IndependenceMH needs a proposal with logpdf and sample")
        check_proposal(self.proposal)
        check_positive_int("chains", self.chains)
        check_positive_int("warmup", self.warmup, minimum=0)
        check_positive_int("draws", self.draws)
        if self.threads is not None:
            check_positive_int("threads", self.threads)

    def _run(self, target: Target, seed: int, budget: Budget) -> Result:
        chains = set_up_chains(self, K.independence_chain, target, seed, budget)
        n_total, d = chains.n_total, target.dim
        # every proposal is drawn up front; the chain starts at one more draw from q
        proposals, logq, x0, logq0 = [], [], np.empty((self.chains, d)), np.empty(self.chains)
        for c, rng in enumerate(chains.rngs):
            y = draw_from(self.proposal, n_total + 1, rng, d)
            lq = np.ascontiguousarray(np.asarray(self.proposal.logpdf(y), dtype=float).reshape(-1))
            if not np.all(np.isfinite(lq)):
                raise ValueError("the proposal's logpdf is not finite at some of its own draws")
            start, lq_start = y[0], lq[0]
            for _ in range(100):  # a start where the density is finite: redrawn from q if need be
                chains.start_grad_evals += 1
                if math.isfinite(target.logp(start)):
                    break
                start = draw_from(self.proposal, 1, rng, d)[0]
                lq_start = float(np.asarray(self.proposal.logpdf(start[None])).reshape(-1)[0])
            chains.start_grad_evals += 1
            target.check_point(start, what=f"starting point (a proposal draw, tried 100 times) of chain {c}")
            x0[c], logq0[c] = start, lq_start
            proposals.append(y[1:])
            logq.append(lq[1:])
        run = chains.sample(
            lambda c, draws, stats, control: chains.kernel(
                target.kernel_logp_grad, target.kernel_data, x0[c].copy(), float(logq0[c]), chains.rngs[c],
                proposals[c], logq[c], chains.grad_budget_per_chain, draws, stats, control,
            ),
            len(K.STAT_NAMES),
        )
        keep = [0, 1, 3, 4]  # no step size for an independence sampler
        return chains.result(run, [K.STAT_NAMES[k] for k in keep], stat_columns=keep)
