"""Two facts about a posterior beyond its density, which references and scores use: a form of it
that samples better (:class:`Reparametrization`), and the quantities it identifies when its
coordinates are not identified (:class:`Identified`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Reparametrization:
    """Another form of the same posterior that may sample better (a non-centred hierarchy, a
    whitened latent field), and the map from its coordinates to the target's. A reference that
    fails on the target's own form is built on it and mapped back (``wb.reference``), as one
    would by hand.

    ``name`` says what the form is; ``build()`` returns it as a ``Target``; ``to_target(draws)``
    maps (..., d') draws of it to (..., d) draws of the target; ``from_target``, optional, is the
    inverse map. With it, ``NUTS(metric="auto")`` can weigh the form against the target's own
    on its first draws, and sample the one that fits a Gaussian better.
    """

    name: str
    build: Callable[[], Any]
    to_target: Callable[[np.ndarray], np.ndarray]
    from_target: Callable[[np.ndarray], np.ndarray] | None = None


@dataclass(frozen=True)
class Identified:
    """The functions of the parameters that the posterior identifies, where the parameters are
    not: a BNN's likelihood is unchanged by permuting its hidden units or flipping their signs,
    so its chains sit in equivalent modes, R-hat on the weights cannot pass, and an error per
    weight measures the labelling rather than the fit. Its outputs are identified.

    ``names`` (k,) name the quantities; ``fn(draws (n, d)) -> (n, k)`` computes them;
    ``held_out_log_density(draws (n, d)) -> float``, optional, is the log predictive density
    of held-out data under the draws (log of the mean over draws of p(y | theta), averaged
    over the held-out points). Scores (``wb.metrics.evaluate``) and references' checks of
    posteriordb's standard are made on the quantities.
    """

    names: tuple
    fn: Callable[[np.ndarray], np.ndarray]
    held_out_log_density: Callable[[np.ndarray], float] | None = None
    description: str = ""

    def __call__(self, draws: np.ndarray) -> np.ndarray:
        """The quantities of (..., d) draws: (..., k)."""
        x = np.asarray(draws, dtype=float)
        flat = x.reshape(-1, x.shape[-1])
        return np.asarray(self.fn(flat), dtype=float).reshape(*x.shape[:-1], len(self.names))


@dataclass(frozen=True)
class Generative:
    """How the model behind a target generates its data: what simulation-based calibration
    needs (``wb.calibrate``; Talts et al. 2018).

    ``simulate(rng) -> (theta, data)``: parameters drawn from the prior, in the target's own
    coordinates (d,), and a data set drawn from the model at them, as the target's ``data``
    tuple (the same arrays in the same layout, the observed values replaced);
    ``log_likelihood(draws (n, d), data) -> (n,)``: log p(data | theta) at each draw, the test
    quantity that catches what parameter ranks miss (Modrák et al. 2023). ``variables``,
    optional, maps (n, d) draws to the model's own variables on their constrained scale
    (name -> (n, ...)), when they differ from the coordinates (a PyMC model's ``tau`` beside
    ``tau_log__``).
    """

    simulate: Callable[[np.random.Generator], tuple]
    log_likelihood: Callable[[np.ndarray, tuple], np.ndarray]
    variables: Callable[[np.ndarray], dict] | None = None
