"""Built-in targets shared by all methods, each with its exact truth where one exists.

``available()`` lists them; each constructor's docstring says what its ``truth`` holds.
"""

from __future__ import annotations

from .banana import banana
from .bnn import bnn
from .dense_mixture import dense_mixture
from .eight_schools import eight_schools
from .funnel import funnel
from .gaussian import gaussian, rotated_gaussian
from .mixture import gaussian_mixture, mixture_target
from .regression import linear_regression, logistic_regression

_CATALOGUE = {
    "gaussian": "Gaussian: isotropic, diagonal ill-conditioned (sds 0.1..10) or equicorrelated; exact truth",
    "rotated_gaussian": "Gaussian with a few large eigen-directions at a random rotation (dense); exact truth",
    "gaussian_mixture": "separated diagonal-Gaussian peaks, unequal weights (the nn4post test problem); exact truth",
    "dense_mixture": "full-covariance Gaussian or Student-t mixtures (GMMVI's GMM20, GMM100, STM20); exact truth",
    "funnel": "Neal's funnel, centred, v ~ N(0, v_sd^2) (v_sd = 3: Neal's); exact sampler, moments, marginals",
    "banana": "Haario's twisted Gaussian (b = 0.03); exact sampler, moments, marginals",
    "linear_regression": "conjugate Bayesian linear regression (diabetes or synthetic); exact posterior and evidence",
    "logistic_regression": "Bayesian logistic regression (breast cancer or synthetic); no closed-form truth",
    "bnn": "Bayesian MLP regression with per-point sigma_i (nn4post sec. 1); no closed-form truth",
    "eight_schools": "eight schools hierarchical model, non-centred (default) or centred; no closed-form truth",
    "posterior": "a bundled standard posterior by name, as a Numba target or its PyMC model (wb.posteriors)",
}


def posterior(name: str, backend: str = "numba", observed_as_data: bool = False):
    """A bundled standard posterior (``wb.posteriors.available()``), ``backend`` "numba" or "pymc"
    (``observed_as_data``: the PyMC form with its observed values as data, for ``wb.calibrate``)."""
    from .posteriors import load

    return load(name, backend, observed_as_data)


# the constructors a target spec's "factory" may name (``targets/specs.py``), one per catalogue entry
FACTORIES = {
    "gaussian": gaussian,
    "rotated_gaussian": rotated_gaussian,
    "gaussian_mixture": gaussian_mixture,
    "dense_mixture": dense_mixture,
    "funnel": funnel,
    "banana": banana,
    "linear_regression": linear_regression,
    "logistic_regression": logistic_regression,
    "bnn": bnn,
    "eight_schools": eight_schools,
    "posterior": posterior,
}
assert FACTORIES.keys() == _CATALOGUE.keys()


def available() -> dict[str, str]:
    """Names of the built-in target constructors, each with a one-line description."""
    return dict(_CATALOGUE)


__all__ = [
    "available",
    "banana",
    "bnn",
    "dense_mixture",
    "eight_schools",
    "funnel",
    "gaussian",
    "gaussian_mixture",
    "linear_regression",
    "logistic_regression",
    "mixture_target",
    "posterior",
    "rotated_gaussian",
]
