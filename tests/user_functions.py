"""Numba functions used by the tests as user targets (in a module so cache=True works)."""

import math

import numba


@numba.njit(cache=True)
def iso_logp_grad(theta, grad_out, data):
    (prec,) = data
    lp = 0.0
    for i in range(theta.size):
        grad_out[i] = -prec[i] * theta[i]
        lp -= 0.5 * prec[i] * theta[i] ** 2
    return lp


@numba.njit(cache=True)
def iso_logp(theta, data):
    (prec,) = data
    lp = 0.0
    for i in range(theta.size):
        lp -= 0.5 * prec[i] * theta[i] ** 2
    return lp


@numba.njit(cache=True)
def reads_five_coordinates(theta, grad_out, data):
    """Written for dim = 5: with dim = 3 it indexes out of range."""
    lp = 0.0
    for i in range(5):
        grad_out[i] = -theta[i]
        lp -= 0.5 * theta[i] ** 2
    return lp


@numba.njit(cache=True)
def writes_one_gradient_entry(theta, grad_out, data):
    """Returns a sum over all coordinates but writes only grad_out[0]."""
    lp = 0.0
    for i in range(theta.size):
        lp -= 0.5 * theta[i] ** 2
    grad_out[0] = -theta[0]
    return lp


@numba.njit(cache=True)
def returns_gradient(theta, grad_out, data):
    """The wrong contract: returns (logp, grad) instead of writing grad_out."""
    return -0.5 * (theta @ theta), -theta


@numba.njit(cache=True)
def log_of_first(theta, grad_out, data):
    """log(theta[0]): -inf at 0, NaN below."""
    grad_out[0] = 1.0 / theta[0]
    for i in range(1, theta.size):
        grad_out[i] = 0.0
    return math.log(theta[0])


def python_logp_grad(theta, grad_out, data):
    """Not compiled: the error must say how to fix it."""
    grad_out[:] = -theta
    return -0.5 * float(theta @ theta)


@numba.njit(cache=True)
def nan_beyond_one_and_half(theta, grad_out, data):
    """A standard normal whose density turns NaN for theta[0] > 1.5 (a fault mid-trajectory)."""
    lp = 0.0
    for i in range(theta.size):
        grad_out[i] = -theta[i]
        lp -= 0.5 * theta[i] ** 2
    if theta[0] > 1.5:
        return math.nan
    return lp


@numba.njit(cache=True)
def ridge(theta, grad_out, data):
    """-1/2 (x0 + x1)^2: flat along x0 - x1, so the Hessian is singular at every mode."""
    s = theta[0] + theta[1]
    grad_out[0] = -s
    grad_out[1] = -s
    return -0.5 * s * s


@numba.njit(cache=True)
def exploding(theta, grad_out, data):
    """A density that turns NaN once |theta[0]| > 3: a fit pushed there must stop cleanly."""
    for i in range(theta.size):
        grad_out[i] = 50.0  # pushes theta[0] up steadily
    if abs(theta[0]) > 3.0:
        return math.nan
    return 50.0 * theta[0]


@numba.njit(cache=True)
def gaussian_in_a_disc(theta, grad_out, data):
    """N((-1, 0), I) restricted to the disc of radius 6 around 0: log p = -inf outside."""
    if theta[0] ** 2 + theta[1] ** 2 > 36.0:
        grad_out[:] = 0.0
        return -math.inf
    grad_out[0] = -(theta[0] + 1.0)
    grad_out[1] = -theta[1]
    return -0.5 * ((theta[0] + 1.0) ** 2 + theta[1] ** 2)


@numba.njit(cache=True)
def nowhere_finite(theta, grad_out, data):
    """A density that is zero everywhere (log p = -inf)."""
    grad_out[:] = 0.0
    return -math.inf


@numba.njit(cache=True)
def nan_everywhere(theta, grad_out, data):
    """A density that is NaN wherever it is evaluated."""
    grad_out[:] = 0.0
    return math.nan


@numba.njit(cache=True)
def iso_wrong_sign(theta, grad_out, data):
    """The density of iso_logp_grad with the gradient's sign flipped (a classic slip)."""
    (prec,) = data
    lp = 0.0
    for i in range(theta.size):
        grad_out[i] = prec[i] * theta[i]
        lp -= 0.5 * prec[i] * theta[i] ** 2
    return lp


@numba.njit(cache=True)
def iso_off_in_last(theta, grad_out, data):
    """The density of iso_logp_grad with the last coordinate's gradient 10% too large."""
    (prec,) = data
    lp = 0.0
    for i in range(theta.size):
        grad_out[i] = -prec[i] * theta[i]
        lp -= 0.5 * prec[i] * theta[i] ** 2
    grad_out[theta.size - 1] *= 1.1
    return lp


@numba.njit(cache=True)
def steep_gaussian(theta, grad_out, data):
    """N(mu, 1e-4 I) far from the origin with a large constant: log p ~ -1e6 at the start, so
    the central differences' round-off is large against the gradient there."""
    (mu,) = data
    lp = -1e6
    for i in range(theta.size):
        r = theta[i] - mu[i]
        grad_out[i] = -r / 1e-4
        lp -= 0.5 * r * r / 1e-4
    return lp


@numba.njit(cache=True)
def divides_by_zero_beyond(theta, grad_out, data):
    """A standard normal whose density raises ZeroDivisionError once theta[0] > data[0][0] (a
    bug that shows part-way through a run)."""
    lp = 0.0
    for i in range(theta.size):
        grad_out[i] = -theta[i]
        lp -= 0.5 * theta[i] ** 2
    if theta[0] > data[0][0]:
        return lp / 0.0
    return lp


@numba.njit(cache=True)
def raises_beyond(theta, grad_out, data):
    """A standard normal whose density raises a ValueError of its own once theta[0] > data[0][0]
    (a bug that shows part-way through a run: not an arithmetic fault, so the run stops)."""
    lp = 0.0
    for i in range(theta.size):
        grad_out[i] = -theta[i]
        lp -= 0.5 * theta[i] ** 2
    if theta[0] > data[0][0]:
        raise ValueError("the model's own check failed")
    return lp


@numba.njit(cache=True)
def slow_standard_normal(theta, grad_out, data):
    """A standard normal that takes long to evaluate (data[0][0] rounds of busy work): for
    interrupting a run part-way."""
    busy = 0.0
    for k in range(int(data[0][0])):
        busy += math.sin(k * theta[0]) * 1e-300
    lp = busy
    for i in range(theta.size):
        grad_out[i] = -theta[i]
        lp -= 0.5 * theta[i] ** 2
    return lp



@numba.njit(cache=True)
def walled_gaussian_logp_grad(theta, grad_out, data):
    """N(0, I) with log p = -inf (and a NaN gradient, as PyMC's failed checks give) where
    theta[0] > 1.5: a support boundary a fit's draws cross now and then."""
    lp = 0.0
    for i in range(theta.size):
        grad_out[i] = -theta[i]
        lp -= 0.5 * theta[i] ** 2
    if theta[0] > 1.5:
        for i in range(theta.size):
            grad_out[i] = math.nan
        return -math.inf
    return lp


@numba.njit(cache=True)
def random_walk_chain(theta, grad_out, data):
    """log p = -x_0^2 / 2 - sum_i (x_i - x_{i-1})^2 / 2: a Gaussian whose Hessian rows carry as much
    off-diagonal as diagonal weight (a random-walk prior, as in a Brownian motion's latents)."""
    lp = -0.5 * theta[0] ** 2
    grad_out[0] = -theta[0]
    for i in range(1, theta.size):
        grad_out[i] = 0.0
    for i in range(1, theta.size):
        step = theta[i] - theta[i - 1]
        lp -= 0.5 * step * step
        grad_out[i] -= step
        grad_out[i - 1] += step
    return lp


@numba.njit
def underflowing_gradient(theta, grad_out, data):
    """A standard normal whose gradient is written f'/f with f = exp(-30 theta_i^2): f underflows
    to 0.0 beyond |theta_i| = 4.98 (-30 x 4.98^2 < -745), where the division raises
    ZeroDivisionError under Numba's default error model. The density has mass 6e-7 there."""
    lp = 0.0
    for i in range(theta.size):
        f = math.exp(-30.0 * theta[i] ** 2)
        lp -= 0.5 * theta[i] ** 2
        grad_out[i] = (-60.0 * theta[i] * f) / f / 60.0
    return lp


@numba.njit
def raises_a_custom_error_far_out(theta, grad_out, data):
    """A standard normal that raises a ValueError of its own (not a math-domain one) past 2.5."""
    lp = 0.0
    for i in range(theta.size):
        if abs(theta[i]) > 2.5:
            raise ValueError("the user's own check failed")
        grad_out[i] = -theta[i]
        lp -= 0.5 * theta[i] ** 2
    return lp


@numba.njit
def regression_logp_grad(theta, grad_out, data):
    """y ~ N(x b, exp(log_s)), b ~ N(0, 1), log_s ~ N(0, 1); theta = (b, log_s). The residuals are
    divided by s * s, which underflows to zero below log_s = -372."""
    x, y = data
    s = math.exp(theta[1])
    lp = -0.5 * theta[0] ** 2 - 0.5 * theta[1] ** 2
    grad_out[0] = -theta[0]
    grad_out[1] = -theta[1]
    for k in range(y.size):
        r = y[k] - x[k] * theta[0]
        lp += -0.5 * r * r / (s * s) - theta[1]
        grad_out[0] += r * x[k] / (s * s)
        grad_out[1] += r * r / (s * s) - 1.0
    return lp


@numba.njit
def regression_logp_grad_batch(theta, grad_out, data, rows, scale):
    """The mini-batch form of ``regression_logp_grad``: scale x the rows' log-likelihood + prior."""
    x, y = data
    s = math.exp(theta[1])
    lp = -0.5 * theta[0] ** 2 - 0.5 * theta[1] ** 2
    g0 = 0.0
    g1 = 0.0
    ll = 0.0
    for j in range(rows.size):
        k = rows[j]
        r = y[k] - x[k] * theta[0]
        ll += -0.5 * r * r / (s * s) - theta[1]
        g0 += r * x[k] / (s * s)
        g1 += r * r / (s * s) - 1.0
    grad_out[0] = -theta[0] + scale * g0
    grad_out[1] = -theta[1] + scale * g1
    return lp + scale * ll


@numba.njit
def overflows_to_plus_infinity_far_out(theta, grad_out, data):
    """A standard normal whose log density is +inf past |theta_0| = 3, as a density whose terms
    overflow far out returns (PyMC's LKJ Cholesky covariance at a wide proposal's draws)."""
    lp = 0.0
    for i in range(theta.size):
        grad_out[i] = -theta[i]
        lp -= 0.5 * theta[i] ** 2
    if abs(theta[0]) > 3.0:
        return math.inf
    return lp
