"""A user's posterior as `workbench compare` reads it: a Numba logp_grad, `dim` and `data`.

    workbench compare examples/user_target.py:logp_grad --quick

A Poisson regression of counts on one covariate, log rate = a + b x, priors N(0, 1): the file
sets `dim` (the number of parameters) and `data` (the tuple handed to the function).
"""

import math

import numba
import numpy as np

_rng = np.random.default_rng(1)
_x = np.linspace(-1.0, 1.0, 40)
_counts = _rng.poisson(np.exp(0.5 + 1.2 * _x)).astype(float)

dim = 2
data = (_x, _counts)


@numba.njit(cache=True)
def logp_grad(theta, grad_out, data):
    x, counts = data
    a, b = theta[0], theta[1]
    lp = -0.5 * (a * a + b * b)
    grad_out[0] = -a
    grad_out[1] = -b
    for i in range(x.size):
        eta = a + b * x[i]
        rate = math.exp(eta)
        lp += counts[i] * eta - rate
        grad_out[0] += counts[i] - rate
        grad_out[1] += (counts[i] - rate) * x[i]
    return lp
