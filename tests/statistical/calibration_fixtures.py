"""Methods that are wrong on purpose, for the calibration's tests: it must flag them."""

from dataclasses import dataclass

import numpy as np

from workbench.running.clock import RunClock
from workbench.running.method import Method


@dataclass(frozen=True)
class PriorDraws(Method):
    """Ignores the data: its draws are the model's prior (a sampler that dropped the likelihood).
    Every parameter's rank is uniform all the same (the prior is the average posterior); only
    a test quantity that involves the data, the log-likelihood, can tell."""

    draws: int = 400

    def _run(self, target, seed, budget):
        clock = RunClock()
        rng = np.random.default_rng(seed)
        x = np.array([target.generative.simulate(rng)[0] for _ in range(self.draws)])
        clock.stop()
        return self.result(target, seed, x[None], clock)
