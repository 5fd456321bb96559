"""Stochastic volatility of the S&P 500: Inference Gym's ``StochasticVolatilitySP500Small``, the
model and the data of a real posterior (not simulated), centred as the Gym writes it.

The data: the daily changes of the index's closing price (in points, not log returns) over the
last 100 trading days of Inference Gym's data set, minus their mean; the 101 closing prices are the
Gym's (``internal/datasets/sp500_closing_prices.py``, from Yahoo Finance). The model:

    persistence phi = 2 b - 1,  b ~ Beta(20, 1.5)
    mean_log_volatility mu ~ Cauchy(0, 5)
    white_noise_shock_scale sigma ~ HalfCauchy(0, 2)
    x_0 ~ N(mu, sigma / sqrt(1 - phi^2)),  x_t ~ N(mu + phi (x_{t-1} - mu), sigma)
    returns_t ~ N(0, exp(x_t / 2))

On PyMC's unconstrained coordinates (those of the bundled PyMC form): (logit b, mu, log sigma,
x_0..x_99), d = 103. (The Gym maps sigma by a softplus; the posterior is the same, its Gaussian
approximations differ slightly.) The Gym's ground truth, from 50,000 Stan draws, has posterior
means phi 0.925, mu 7.92, sigma 0.500 (sds 0.048, 1.05, 0.139): the reference built here agrees
(``tests/unit/targets/test_sp500.py``). The volatility of spring 2020 moves x from 6.5 to 10.5:
a harder posterior than the simulated ``stochastic_volatility``'s.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import betaln

from ..jit import jit
from ..numerics import LOG_2PI
from ..target import Target

# the S&P 500's last 101 closing prices in Inference Gym's data set, oldest first
CLOSING_PRICES = (
    3225.52002, 3248.919922, 3297.590088, 3334.689941, 3345.780029, 3327.709961, 3352.090088, 3357.75,
    3379.449951, 3373.939941, 3380.159912, 3370.290039, 3386.149902, 3373.22998, 3337.75, 3225.889893,
    3128.209961, 3116.389893, 2978.76001, 2954.219971, 3090.22998, 3003.370117, 3130.120117, 3023.939941,
    2972.370117, 2746.560059, 2882.22998, 2741.379883, 2480.639893, 2711.02002, 2386.129883, 2529.189941,
    2398.100098, 2409.389893, 2304.919922, 2237.399902, 2447.330078, 2475.560059, 2630.070068, 2541.469971,
    2626.649902, 2584.590088, 2470.5, 2526.899902, 2488.649902, 2663.679932, 2659.409912, 2749.97998,
    2789.820068, 2761.629883, 2846.060059, 2783.360107, 2799.550049, 2874.560059, 2823.159912, 2736.560059,
    2799.310059, 2797.800049, 2836.73999, 2878.47998, 2863.389893, 2939.51001, 2912.429932, 2830.709961,
    2842.73999, 2868.439941, 2848.419922, 2881.189941, 2929.800049, 2930.189941, 2870.120117, 2820.0,
    2852.5, 2863.699951, 2953.909912, 2922.939941, 2971.610107, 2948.51001, 2955.449951, 2991.77002,
    3036.129883, 3029.72998, 3044.310059, 3055.72998, 3080.820068, 3122.870117, 3112.350098, 3193.929932,
    3232.389893, 3207.179932, 3190.139893, 3002.100098, 3041.310059, 3066.590088, 3124.73999, 3113.48999,
    3115.340088, 3097.73999, 3117.860107, 3131.290039, 3050.330078,
)
BETA_PRIOR = (20.0, 1.5)  # b = (phi + 1) / 2 ~ Beta(20, 1.5)
MU_SCALE = 5.0  # mu ~ Cauchy(0, 5)
SIGMA_SCALE = 2.0  # sigma ~ HalfCauchy(0, 2)
# the Gym's ground truth (Stan, 50,000 draws): posterior means and sds of phi, mu, sigma
GYM_MEANS = {"persistence": 0.9249792145839999, "mean_log_volatility": 7.91516637742,
             "white_noise_shock_scale": 0.500450060468}
GYM_SDS = {"persistence": 0.04760110487933296, "mean_log_volatility": 1.0478904838684748,
           "white_noise_shock_scale": 0.13947841751592666}


def centred_returns() -> np.ndarray:
    """The 100 daily changes of the closing price, minus their mean (the Gym's ``sp500_returns``)."""
    returns = np.diff(np.asarray(CLOSING_PRICES))
    return returns - returns.mean()


@jit
def sp500_logp_grad(theta, grad_out, data):
    """theta = (logit b, mu, log sigma, x_0..x_{n-1}); data = (returns, [a, b, log B(a, b)]): the
    module docstring's model with every constant, so the density is normalised."""
    y, prior = data
    n = y.size
    u, mu, v = theta[0], theta[1], theta[2]
    alpha, beta, log_beta_fn = prior[0], prior[1], prior[2]
    # b = sigmoid(u) ~ Beta(alpha, beta), with the Jacobian b (1 - b): alpha log b + beta log(1 - b)
    log_b = -(max(-u, 0.0) + math.log1p(math.exp(-abs(u))))
    log_1mb = -(max(u, 0.0) + math.log1p(math.exp(-abs(u))))
    b = math.exp(log_b)
    phi = 2.0 * b - 1.0
    lp = alpha * log_b + beta * log_1mb - log_beta_fn
    g_u = alpha * (1.0 - b) - beta * b
    # mu ~ Cauchy(0, 5)
    lp += -math.log(MU_SCALE * math.pi) - math.log1p((mu / MU_SCALE) ** 2)
    g_mu = -2.0 * mu / (MU_SCALE * MU_SCALE + mu * mu)
    # sigma = exp(v) ~ HalfCauchy(0, 2), with the Jacobian sigma
    sigma = math.exp(v)
    lp += math.log(2.0 / (math.pi * SIGMA_SCALE)) - math.log1p((sigma / SIGMA_SCALE) ** 2) + v
    g_v = 1.0 - 2.0 * sigma * sigma / (SIGMA_SCALE * SIGMA_SCALE + sigma * sigma)
    inv_var = 1.0 / (sigma * sigma)
    one_m_phi2 = 1.0 - phi * phi
    g_phi = 0.0
    # x_0 ~ N(mu, sigma^2 / (1 - phi^2))
    d0 = theta[3] - mu
    lp += -0.5 * d0 * d0 * one_m_phi2 * inv_var - v + 0.5 * math.log(one_m_phi2) - 0.5 * LOG_2PI
    grad_out[3] = -d0 * one_m_phi2 * inv_var
    g_mu += d0 * one_m_phi2 * inv_var
    g_phi += d0 * d0 * phi * inv_var - phi / one_m_phi2
    g_v += d0 * d0 * one_m_phi2 * inv_var - 1.0
    for t in range(1, n):
        grad_out[3 + t] = 0.0
    # x_t ~ N(mu + phi (x_{t-1} - mu), sigma^2)
    for t in range(1, n):
        prev = theta[2 + t] - mu
        e = theta[3 + t] - mu - phi * prev
        lp += -0.5 * e * e * inv_var - v - 0.5 * LOG_2PI
        grad_out[3 + t] -= e * inv_var
        grad_out[2 + t] += phi * e * inv_var
        g_mu += e * (1.0 - phi) * inv_var
        g_phi += e * prev * inv_var
        g_v += e * e * inv_var - 1.0
    # returns_t ~ N(0, exp(x_t / 2))
    for t in range(n):
        x = theta[3 + t]
        w = y[t] * y[t] * math.exp(-x)
        lp += -0.5 * w - 0.5 * x - 0.5 * LOG_2PI
        grad_out[3 + t] += 0.5 * w - 0.5
    grad_out[0] = g_u + g_phi * 2.0 * b * (1.0 - b)
    grad_out[1] = g_mu
    grad_out[2] = g_v
    return lp


def constrained(draws: np.ndarray) -> dict:
    """Draws (..., 103) as the Gym's variables: persistence, mean_log_volatility,
    white_noise_shock_scale (..., ) and log_volatility (..., 100)."""
    x = np.asarray(draws, dtype=float)
    b = 1.0 / (1.0 + np.exp(-x[..., 0]))
    return {"persistence": 2.0 * b - 1.0, "mean_log_volatility": x[..., 1],
            "white_noise_shock_scale": np.exp(x[..., 2]), "log_volatility": x[..., 3:]}


def stochastic_volatility_sp500() -> Target:
    """The target (see the module docstring). It starts where PyMC's form does, at the priors'
    centres (b at its mean 20 / 21.5, mu 0, sigma 2, every x 0), as a user's model would: far from
    the posterior, whose x lie between 6.5 and 10.5."""
    y = centred_returns()
    alpha, beta = BETA_PRIOR
    init = np.concatenate([[math.log(alpha / beta), 0.0, math.log(SIGMA_SCALE)], np.zeros(y.size)])
    return Target(
        name="stochastic_volatility_sp500",
        dim=y.size + 3,
        logp_grad=sp500_logp_grad,
        data=(y, np.array([alpha, beta, float(betaln(alpha, beta))])),
        param_names=("persistence_beta_logodds__", "mean_log_volatility", "white_noise_shock_scale_log__",
                     *(f"log_volatility[{t}]" for t in range(y.size))),
        initial_point=init,
        constrain_fn=constrained,
        spec={"factory": "posterior", "name": "stochastic_volatility_sp500", "backend": "numba"},
        description="stochastic volatility of 100 days of S&P 500 returns (Inference Gym), centred (d = 103); "
                    "no closed-form truth",
    )
