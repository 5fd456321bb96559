"""Standard posteriors bundled with the project, each written twice: as a Numba target and as
a PyMC model of the same density on the same unconstrained coordinates.

    wb.posteriors.available()                              # name -> one line
    t = wb.posteriors.load("eight_schools_noncentered")     # the Numba target
    t = wb.posteriors.load("eight_schools_noncentered", backend="pymc")   # via Target.from_pymc
    m = wb.posteriors.pymc_model("diabetes_linear_sigma")  # the pm.Model itself

They are usable by name in ``workbench compare NAME`` and in studies (target spec
``{"factory": "posterior", "name": NAME, "backend": "numba" | "pymc"}``). The two backends
agree to rounding (a test): the PyMC form is how a user's own model arrives, the Numba form
how fast it can be.

The data are small and ship with the project (eight schools) or with scikit-learn (diabetes,
breast cancer). posteriordb (Magnusson et al. 2024) publishes reference draws for eight
schools; they are not bundled (no network here), so studies and ``compare`` build their own
reference, held to posteriordb's standard, where a posterior has no exact truth.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import TargetError
from ..jit import jit
from ..numerics import LOG_2PI
from ..target import Target
from ..target_forms import Generative
from . import brownian_motion, datasets, latent, noncentered, sp500
from .eight_schools import MU_SD, SIGMA, TAU_SCALE, Y, eight_schools
from .regression import linear_regression, logistic_regression

BACKENDS = ("numba", "pymc")


# ----------------------------------------------------------------------------- Numba forms
# (eight schools and the known-noise regressions are the built-in targets; the regression
# with unknown noise is written here)


@jit
def linear_sigma_logp_grad(theta, grad_out, data):
    """theta = (beta_1..p, log sigma): y ~ N(X beta, sigma^2), beta ~ N(0, 1), sigma ~ HalfNormal(1).

    log p includes the Jacobian log sigma of sigma = exp(log sigma).
    """
    X, y = data
    n, p = X.shape
    log_sigma = theta[p]
    inv_var = math.exp(-2.0 * log_sigma)
    lp = 0.0
    for j in range(p):
        grad_out[j] = -theta[j]
        lp += -0.5 * theta[j] * theta[j] - 0.5 * LOG_2PI
    sum_r2 = 0.0
    for i in range(n):
        eta = 0.0
        for j in range(p):
            eta += X[i, j] * theta[j]
        r = y[i] - eta
        sum_r2 += r * r
        for j in range(p):
            grad_out[j] += r * inv_var * X[i, j]
    sigma = math.exp(log_sigma)
    # likelihood, HalfNormal(1) prior on sigma, Jacobian
    lp += -0.5 * sum_r2 * inv_var - n * (0.5 * LOG_2PI + log_sigma)
    lp += math.log(2.0) - 0.5 * LOG_2PI - 0.5 * sigma * sigma + log_sigma
    grad_out[p] = sum_r2 * inv_var - n - sigma * sigma + 1.0
    return lp


def _linear_sigma_generative(X: np.ndarray) -> Generative:
    """beta ~ N(0, I), sigma ~ HalfNormal(1), y ~ N(X beta, sigma^2) on the diabetes features."""

    def simulate(rng):
        beta = rng.standard_normal(X.shape[1])
        sigma = abs(rng.standard_normal())
        return np.append(beta, math.log(sigma)), (X, X @ beta + sigma * rng.standard_normal(X.shape[0]))

    def log_likelihood(draws, data):
        X_, y = data
        x = np.asarray(draws, dtype=float)
        log_sigma = x[:, -1]
        r = y[None, :] - x[:, :-1] @ X_.T
        return (-0.5 * np.sum(r * r, axis=1) * np.exp(-2.0 * log_sigma)
                - X_.shape[0] * (0.5 * LOG_2PI + log_sigma))

    return Generative(simulate, log_likelihood)


def diabetes_linear_sigma() -> Target:
    X, y, names = datasets.diabetes()
    p = X.shape[1]
    return Target(
        name="diabetes_linear_sigma",
        dim=p + 1,
        logp_grad=linear_sigma_logp_grad,
        data=(X, y),
        param_names=(*(f"beta[{n}]" for n in names), "log_sigma"),
        generative=_linear_sigma_generative(X),
        spec={"factory": "posterior", "name": "diabetes_linear_sigma", "backend": "numba"},
        description="linear regression on the diabetes data with unknown noise sd (d = 12); no closed-form truth",
    )


# ----------------------------------------------------------------------------- PyMC forms


def _eight_schools_model(centered: bool):
    import pymc as pm

    with pm.Model(coords={"school": [f"school_{j}" for j in range(Y.size)]}) as model:
        y = pm.Data("y", Y.copy())
        mu = pm.Normal("mu", 0.0, MU_SD)
        tau = pm.HalfCauchy("tau", TAU_SCALE)
        if centered:
            theta = pm.Normal("theta", mu, tau, dims="school")
        else:
            eta = pm.Normal("eta", 0.0, 1.0, dims="school")
            theta = pm.Deterministic("theta", mu + tau * eta, dims="school")
        pm.Normal("obs", theta, SIGMA, observed=y)
    return model


def _linear_model(sigma_known: bool):
    import pymc as pm

    X, y, names = datasets.diabetes()
    with pm.Model(coords={"feature": list(names)}) as model:
        Xd = pm.Data("X", X)
        yd = pm.Data("y", y)
        if sigma_known:
            target = linear_regression("diabetes")
            beta = pm.Normal("beta", 0.0, target.truth.extras["prior_sd"], dims="feature")
            sigma = target.truth.extras["noise_sd"]
        else:
            beta = pm.Normal("beta", 0.0, 1.0, dims="feature")
            sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("obs", Xd @ beta, sigma, observed=yd)
    return model


def _logistic_model():
    import pymc as pm

    X, y, names = datasets.breast_cancer()
    with pm.Model(coords={"feature": list(names)}) as model:
        Xd = pm.Data("X", X)
        yd = pm.Data("y", y)
        beta = pm.Normal("beta", 0.0, 1.0, dims="feature")
        pm.Bernoulli("obs", logit_p=Xd @ beta, observed=yd)
    return model


def _stochastic_volatility_model():
    import pymc as pm
    import pytensor.tensor as pt

    y = latent.sv_data()
    with pm.Model(coords={"day": np.arange(y.size)}) as model:
        returns = pm.Data("returns", y)
        mu = pm.Normal("mu", 0.0, 2.0)
        phi = pm.Uniform("phi", -1.0, 1.0)
        sigma = pm.HalfNormal("sigma", 1.0)
        h = pm.AR("h", rho=[phi], sigma=sigma, init_dist=pm.Normal.dist(0.0, sigma / pt.sqrt(1.0 - phi**2)),
                  steps=y.size - 1, dims="day")
        pm.Normal("obs", 0.0, pt.exp(0.5 * (mu + h)), observed=returns)
    return model


def _sp500_model():
    import pymc as pm
    import pytensor.tensor as pt

    y = sp500.centred_returns()
    with pm.Model(coords={"day": np.arange(y.size)}) as model:
        returns = pm.Data("returns", y)
        b = pm.Beta("persistence_beta", *sp500.BETA_PRIOR)
        phi = pm.Deterministic("persistence", 2.0 * b - 1.0)
        mu = pm.Cauchy("mean_log_volatility", 0.0, sp500.MU_SCALE)
        sigma = pm.HalfCauchy("white_noise_shock_scale", sp500.SIGMA_SCALE)
        # x_t = mu (1 - phi) + phi x_{t-1} + sigma e_t: an AR(1) with a constant, started stationary
        x = pm.AR("log_volatility", rho=pt.stack([mu * (1.0 - phi), phi]), sigma=sigma, constant=True,
                  init_dist=pm.Normal.dist(mu, sigma / pt.sqrt(1.0 - phi**2)), steps=y.size - 1, dims="day")
        pm.Normal("obs", 0.0, pt.exp(0.5 * x), observed=returns)
    return model


def _brownian_motion_model():
    import pymc as pm

    y, steps = brownian_motion.data()
    with pm.Model() as model:
        obs = pm.Data("y", y)
        sigma_innov = pm.LogNormal("sigma_innov", 0.0, 2.0)
        sigma_obs = pm.LogNormal("sigma_obs", 0.0, 2.0)
        x = pm.GaussianRandomWalk("x", sigma=sigma_innov, init_dist=pm.Normal.dist(0.0, sigma_innov),
                                  steps=brownian_motion.STEPS - 1)
        pm.Normal("obs", x[steps], sigma_obs, observed=obs)
    return model


def _lgcp_model():
    import pymc as pm
    import pytensor.tensor as pt

    x, counts, m = latent.lgcp_data()
    distance = np.abs(x[:, None] - x[None, :])
    with pm.Model() as model:
        y = pm.Data("counts", counts)
        ls = pm.Gamma("ls", *latent.LGCP_LS_PRIOR)
        amp = pm.HalfNormal("amp", 1.0)
        cov = amp**2 * pt.exp(-distance / ls) + latent.LGCP_JITTER * np.eye(x.size)
        f = pm.MvNormal("f", mu=np.full(x.size, m), cov=cov)
        pm.Poisson("obs", pt.exp(f), observed=y)
    return model


@dataclass(frozen=True)
class Posterior:
    """One bundled posterior: a line for listings, and its two forms."""

    description: str
    numba: Callable[[], Target]
    pymc: Callable[[], object]


POSTERIORS = {
    "eight_schools_noncentered": Posterior(
        "eight schools, non-centred (Rubin 1981; posteriordb eight_schools_noncentered), d = 10",
        lambda: eight_schools(centered=False), lambda: _eight_schools_model(centered=False)),
    "eight_schools_centered": Posterior(
        "eight schools, centred: the funnel that makes NUTS diverge, d = 10",
        lambda: eight_schools(centered=True), lambda: _eight_schools_model(centered=True)),
    "diabetes_linear": Posterior(
        "linear regression on the diabetes data, noise sd known (conjugate: exact truth), d = 11",
        lambda: linear_regression("diabetes"), lambda: _linear_model(sigma_known=True)),
    "diabetes_linear_sigma": Posterior(
        "linear regression on the diabetes data with unknown noise sd ~ HalfNormal(1), d = 12",
        diabetes_linear_sigma, lambda: _linear_model(sigma_known=False)),
    "breast_cancer_logistic": Posterior(
        "logistic regression on the breast-cancer data, beta ~ N(0, 1), d = 31",
        lambda: logistic_regression("breast_cancer"), _logistic_model),
    "stochastic_volatility": Posterior(
        "stochastic volatility: 100 AR(1) latent log-volatilities, simulated returns, d = 103",
        lambda: latent.stochastic_volatility().replace(reparametrization=noncentered.sv_reparametrization()),
        _stochastic_volatility_model),
    "stochastic_volatility_sp500": Posterior(
        "stochastic volatility of 100 days of S&P 500 returns, centred (Inference Gym's "
        "StochasticVolatilitySP500Small), d = 103", sp500.stochastic_volatility_sp500, _sp500_model),
    "brownian_motion": Posterior(
        "Brownian motion with unknown scales, the middle 10 of 30 steps unobserved (Inference Gym), d = 32; "
        "exact truth",
        brownian_motion.brownian_motion, _brownian_motion_model),
    "lgcp": Posterior(
        "log-Gaussian Cox process: centred MvNormal latent field on a 100-point grid, simulated counts, d = 102",
        lambda: latent.lgcp().replace(reparametrization=noncentered.lgcp_reparametrization()), _lgcp_model),
}


def available() -> dict[str, str]:
    """Name -> one line, for every bundled posterior."""
    return {name: p.description for name, p in POSTERIORS.items()}


def _get(name: str) -> Posterior:
    if name not in POSTERIORS:
        raise TargetError(f"unknown posterior {name!r}; bundled posteriors: {', '.join(POSTERIORS)}")
    return POSTERIORS[name]


def pymc_model(name: str):
    """The PyMC model of a bundled posterior (needs the ``pymc`` extra)."""
    from ..pymc_model import _import_pymc

    _import_pymc()
    return _get(name).pymc()


def load(name: str, backend: str = "numba", observed_as_data: bool = False) -> Target:
    """A bundled posterior as a target: ``backend="numba"`` (hand-written density and gradient)
    or ``"pymc"`` (its PyMC model through ``Target.from_pymc``; same coordinates and density,
    and the Numba form's exact truth where there is one)."""
    if backend not in BACKENDS:
        raise TargetError(f"backend must be one of {BACKENDS}, got {backend!r}")
    posterior = _get(name)
    spec = {"factory": "posterior", "name": name, "backend": backend,
            **({"observed_as_data": True} if observed_as_data and backend == "pymc" else {})}
    numba_target = posterior.numba()
    if backend == "numba":
        return numba_target.replace(spec=spec, name=name)
    pymc_target = Target.from_pymc(posterior.pymc(), name=f"{name}_pymc",
                                   description=f"{posterior.description} (PyMC)", observed_as_data=observed_as_data)
    if pymc_target.dim != numba_target.dim:  # pragma: no cover - a bundling mistake
        raise TargetError(f"posterior {name!r}: PyMC form has d = {pymc_target.dim}, Numba form {numba_target.dim}")
    return pymc_target.replace(spec=spec, truth=numba_target.truth, prior=numba_target.prior,
                               build_info=pymc_target.build_info, reparametrization=numba_target.reparametrization)
