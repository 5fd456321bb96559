"""A small Bayesian neural network: the model of the nn4post paper, section 1.

Observations D = {(x_i, y_i, sigma_i)}, y = f(x; theta) an MLP with tanh hidden layers and a
linear output, Gaussian likelihood with each point's own sigma_i, prior theta ~ N(0, tau^2 I):

log p(theta; D) = sum_i [-1/2 ln(2 pi sigma_i^2) - 1/2 ((y_i - f(x_i; theta)) / sigma_i)^2]
                  + log N(theta; 0, tau^2 I)                               (paper, eq. 20)

The gradient is hand-written backpropagation in Numba. theta is laid out layer by layer,
each layer's weights W (n_in x n_out, row-major) then its biases b (n_out).
No closed-form truth: ``truth is None`` (reference draws from long NUTS runs stand in).
"""

from __future__ import annotations

import math

import numpy as np

from ..approximations import Gaussian
from ..errors import TargetError
from ..jit import jit
from ..numerics import LOG_2PI
from ..target import Target
from ..target_forms import Generative, Identified


@jit
def _n_units(sizes):
    total = 0
    for s in sizes:
        total += s
    return total


@jit(inline=True)
def _forward(theta, x_row, sizes, acts):
    """Fills acts (all layers' outputs, input first) for one input row; returns f(x)."""
    n_layers = sizes.size - 1
    for k in range(sizes[0]):
        acts[k] = x_row[k]
    a_in = 0  # offset of this layer's input in acts
    p = 0  # offset of this layer's parameters in theta
    for layer in range(n_layers):
        n_in = sizes[layer]
        n_out = sizes[layer + 1]
        a_out = a_in + n_in
        b_off = p + n_in * n_out
        for j in range(n_out):
            z = theta[b_off + j]
            for k in range(n_in):
                z += acts[a_in + k] * theta[p + k * n_out + j]
            acts[a_out + j] = math.tanh(z) if layer < n_layers - 1 else z
        a_in = a_out
        p = b_off + n_out
    return acts[a_in]


@jit(inline=True)
def _backward(theta, grad_out, sizes, acts, deltas, delta_out):
    """Adds delta_out x d f / d theta to grad_out by backpropagation through the layers."""
    n_layers = sizes.size - 1
    total = acts.size
    deltas[total - 1] = delta_out
    # walk the layers from the output back; offsets computed from the end
    a_out = total - sizes[n_layers]
    p_end = theta.size
    for layer in range(n_layers - 1, -1, -1):
        n_in = sizes[layer]
        n_out = sizes[layer + 1]
        a_in = a_out - n_in
        b_off = p_end - n_out
        p = b_off - n_in * n_out
        for j in range(n_out):
            grad_out[b_off + j] += deltas[a_out + j]
        for k in range(n_in):
            back = 0.0
            a = acts[a_in + k]
            for j in range(n_out):
                grad_out[p + k * n_out + j] += a * deltas[a_out + j]
                back += theta[p + k * n_out + j] * deltas[a_out + j]
            if layer > 0:  # the input of this layer is tanh(z): d tanh = 1 - tanh^2
                deltas[a_in + k] = back * (1.0 - a * a)
        a_out = a_in
        p_end = p


@jit
def _prior(theta, grad_out, inv_prior_var):
    s = 0.0
    for j in range(theta.size):
        s += theta[j] * theta[j]
        grad_out[j] = -theta[j] * inv_prior_var
    return -0.5 * s * inv_prior_var - 0.5 * theta.size * (LOG_2PI - math.log(inv_prior_var))


@jit(inline=True)
def _row(theta, grad_out, X, y, inv_sigma, row_const, sizes, i, scale, acts, deltas):
    """Row i's log-likelihood, times scale, with its gradient added to grad_out."""
    f = _forward(theta, X[i], sizes, acts)
    r = (y[i] - f) * inv_sigma[i]
    _backward(theta, grad_out, sizes, acts, deltas, scale * r * inv_sigma[i])
    return scale * (row_const[i] - 0.5 * r * r)


@jit
def bnn_logp_grad(theta, grad_out, data):
    """Eq. 20 with the whole data set; data as :func:`bnn_data` lays it out."""
    X, y, inv_sigma, row_const, sizes, params = data
    n_units = _n_units(sizes)
    acts = np.empty(n_units)  # one small workspace per call, thread-safe
    deltas = np.empty(n_units)
    lp = _prior(theta, grad_out, params[0])
    for i in range(X.shape[0]):
        lp += _row(theta, grad_out, X, y, inv_sigma, row_const, sizes, i, 1.0, acts, deltas)
    return lp


@jit
def bnn_logp_grad_batch(theta, grad_out, data, rows, scale):
    """Eq. 19-20 on a mini-batch: scale x log-likelihood of rows + log prior."""
    X, y, inv_sigma, row_const, sizes, params = data
    n_units = _n_units(sizes)
    acts = np.empty(n_units)
    deltas = np.empty(n_units)
    lp = _prior(theta, grad_out, params[0])
    for i in rows:
        lp += _row(theta, grad_out, X, y, inv_sigma, row_const, sizes, i, scale, acts, deltas)
    return lp


def bnn_data(X, y, sigma, sizes, prior_sd) -> tuple:
    """The data tuple of the BNN's density: (X, y, 1/sigma, -1/2 log(2 pi sigma^2) per row,
    layer sizes, [1/tau^2]); the per-row constants are computed once, not at every call."""
    sigma = np.asarray(sigma, dtype=float)
    return (X, y, 1.0 / sigma, -0.5 * LOG_2PI - np.log(sigma), sizes, np.array([1.0 / prior_sd**2]))


def layer_sizes(target) -> np.ndarray:
    """The layer sizes (input first) of a ``bnn`` target's network."""
    return target.data[4]


@jit
def bnn_predict(theta, X, sizes):
    """f(x_i; theta) for every row of X (the network's output, for predictive checks)."""
    acts = np.empty(_n_units(sizes))
    out = np.empty(X.shape[0])
    for i in range(X.shape[0]):
        out[i] = _forward(theta, X[i], sizes, acts)
    return out


@jit
def bnn_predict_draws(thetas, X, sizes):
    """f(x_i; theta_s) for every draw s (rows of ``thetas``) and row i of X: (draws, rows)."""
    acts = np.empty(_n_units(sizes))
    out = np.empty((thetas.shape[0], X.shape[0]))
    for s in range(thetas.shape[0]):
        for i in range(X.shape[0]):
            out[s, i] = _forward(thetas[s], X[i], sizes, acts)
    return out


PREDICTION_GRID = 50  # inputs at which the network's outputs are scored (one-input data)
HELD_OUT = 200  # held-out points of the log predictive density (the built-in sin data)


def prediction_grid(X: np.ndarray) -> np.ndarray:
    """The inputs at which a BNN is scored: an even grid over the data's range for one input,
    the data's own rows otherwise."""
    if X.shape[1] == 1:
        return np.linspace(X.min(), X.max(), PREDICTION_GRID)[:, None]
    return np.ascontiguousarray(X)


PREDICTIVE_DRAWS = 10_000


def identified_outputs(X, sizes, held_out=None) -> Identified:
    """What a BNN's posterior identifies (``Identified``): its outputs f(x) on
    :func:`prediction_grid`, and the log predictive density of ``held_out`` = (x, y, sigma)."""
    grid = prediction_grid(X)

    def outputs(draws):
        return bnn_predict_draws(np.ascontiguousarray(draws, dtype=float), grid, sizes)

    held_out_log_density = None
    if held_out is not None:
        xh, yh, sh = held_out

        def held_out_log_density(draws):
            from scipy.special import logsumexp

            # at most PREDICTIVE_DRAWS draws, evenly spaced: the estimate's Monte Carlo error is then
            # far below the differences it scores, and a long chain costs seconds less
            draws = draws[np.linspace(0, len(draws) - 1, min(len(draws), PREDICTIVE_DRAWS)).astype(int)]
            f = bnn_predict_draws(np.ascontiguousarray(draws, dtype=float), xh, sizes)
            lp = -0.5 * ((yh - f) / sh) ** 2 - np.log(sh) - 0.5 * LOG_2PI
            return float(np.mean(logsumexp(lp, axis=0) - math.log(len(f))))

    names = tuple(f"f({', '.join(f'{v:.3g}' for v in row)})" for row in grid)
    return Identified(names, outputs, held_out_log_density,
                      "the network's outputs on a grid of inputs (its weights are not identified: permuting hidden "
                      "units or flipping their signs leaves the likelihood unchanged)")


def bnn_generative(data: tuple, prior_sd: float) -> Generative:
    """theta ~ N(0, prior_sd^2 I), y_i ~ N(f(x_i; theta), sigma_i^2) on the target's own inputs."""
    X, _, inv_sigma, row_const, sizes, params = data

    def simulate(rng):
        theta = prior_sd * rng.standard_normal(n_parameters(sizes))
        y = bnn_predict(theta, X, sizes) + rng.standard_normal(X.shape[0]) / inv_sigma
        return theta, (X, y, inv_sigma, row_const, sizes, params)

    def log_likelihood(draws, data_):
        X_, y, inv_s, const, sizes_, _ = data_
        f = bnn_predict_draws(np.ascontiguousarray(draws, dtype=float), X_, sizes_)
        return np.sum(const - 0.5 * ((y - f) * inv_s) ** 2, axis=1)

    return Generative(simulate, log_likelihood)


def n_parameters(sizes) -> int:
    """Number of weights and biases of an MLP with these layer sizes (input first)."""
    return int(sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:])))


def _param_names(sizes) -> tuple[str, ...]:
    names = []
    for layer, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        names += [f"W{layer}[{k},{j}]" for k in range(n_in) for j in range(n_out)]
        names += [f"b{layer}[{j}]" for j in range(n_out)]
    return tuple(names)


def sin_data(n_data: int = 40, noise_sd: float = 0.1, seed: int = 0):
    """1-D regression data: x ~ U(-3, 3), sigma_i = noise_sd x U(0.5, 1.5), y = sin(x) + sigma_i eps."""
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(-3.0, 3.0, n_data))
    sigma = noise_sd * rng.uniform(0.5, 1.5, n_data)
    y = np.sin(x) + sigma * rng.standard_normal(n_data)
    return x[:, None], y, sigma


def bnn(
    n_data: int = 40,
    widths=(10,),
    *,
    noise_sd: float = 0.1,
    prior_sd: float = 1.0,
    seed: int = 0,
    x=None,
    y=None,
    sigma=None,
) -> Target:
    """A Bayesian MLP regression target (tanh hidden layers of ``widths``, linear output).

    By default the data are ``sin_data(n_data, noise_sd, seed)``; give ``x`` (n, p) or (n,),
    ``y`` (n,) and ``sigma`` (n,) (or a scalar) to use your own. The default network
    (1 -> 10 -> 1) has d = 31 parameters. The initial point is small random weights
    (N(0, 0.1^2), seeded): all-zero weights are a saddle of the posterior.
    """
    if isinstance(widths, (int, np.integer)):
        widths = (widths,)
    if isinstance(widths, str) or not all(isinstance(w, (int, np.integer)) and not isinstance(w, bool) for w in widths):
        raise TargetError(f"widths must be a list of positive integers (units per hidden layer), got {widths!r}")
    widths = tuple(int(w) for w in widths)
    if any(w < 1 for w in widths):
        raise TargetError(f"widths must be positive integers, got {widths}")
    if not (prior_sd > 0 and math.isfinite(prior_sd)):
        raise TargetError(f"prior_sd must be positive and finite, got {prior_sd}")
    if not (noise_sd > 0 and math.isfinite(noise_sd)):
        raise TargetError(f"noise_sd must be positive and finite, got {noise_sd}")
    if x is None:
        if n_data < 1:
            raise TargetError(f"n_data must be >= 1, got {n_data}")
        X, y, sigma = sin_data(int(n_data), noise_sd, seed)
        held_out = sin_data(HELD_OUT, noise_sd, seed + 1)
        source = "sin"
    else:
        if y is None or sigma is None:
            raise TargetError("give x, y and sigma together")
        X = np.asarray(x, dtype=float)
        X = X[:, None] if X.ndim == 1 else X
        y = np.asarray(y, dtype=float).ravel()
        sigma = np.broadcast_to(np.asarray(sigma, dtype=float), y.shape).copy()
        if X.shape[0] != y.size:
            raise TargetError(f"x has {X.shape[0]} rows but y has {y.size} values")
        if not np.all((sigma > 0) & np.isfinite(sigma)):
            raise TargetError("sigma must be positive and finite")
        for name, values in (("x", X), ("y", y)):
            if not np.all(np.isfinite(values)):
                raise TargetError(f"{name} must be finite: it has {int(np.sum(~np.isfinite(values)))} NaN or inf values")
        held_out = None
        source = "custom"
    sizes = np.array([X.shape[1], *widths, 1], dtype=np.int64)
    dim = n_parameters(sizes)
    init = np.random.default_rng(seed).normal(0.0, 0.1, dim)
    data = bnn_data(X, y, sigma, sizes, prior_sd)
    return Target(
        name="bnn",
        dim=dim,
        logp_grad=bnn_logp_grad,
        logp_grad_batch=bnn_logp_grad_batch,
        data=data,
        generative=bnn_generative(data, prior_sd),
        n_data=X.shape[0],
        param_names=_param_names(sizes),
        truth=None,
        initial_point=init,
        prior=Gaussian(np.zeros(dim), prior_sd**2 * np.eye(dim)),
        identified=identified_outputs(X, sizes, held_out),
        spec={
            "factory": "bnn",
            "n_data": int(X.shape[0]),
            "widths": list(widths),
            "noise_sd": noise_sd,
            "prior_sd": prior_sd,
            "seed": seed,
            "data": source,
        },
        description=f"Bayesian MLP {'-'.join(map(str, sizes))} (tanh), N_D={X.shape[0]}, d={dim}",
    )
