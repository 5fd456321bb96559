"""The optimiser steps of the VI fit: Adam (Kingma & Ba 2015) and plain gradient descent.

Each updates a slice [start, stop) of the flat parameter vector in place, keeps the old
values in ``previous`` (so a step that produces NaN or inf can be undone), and multiplies the
step by ``factor`` (the rescaling r of the weights under Adam, see ``fit.py``). One pass per
slice, with the per-step constants (learning rate over the bias corrections) hoisted out.
``scale`` multiplies each parameter's step (a per-parameter learning rate: the posterior
scale of a mean, so that Adam's steps of about lr are lr posterior sds in every coordinate).
"""

from __future__ import annotations

import math

from ..jit import jit


@jit(fastmath=True)
def adam_step(params, previous, grads, m1, m2, scale, start, stop, t, lr, beta1, beta2, eps, factor):
    """Adam's update at (0-based) iteration t for params[start:stop], steps times scale[p]."""
    lr_1 = factor * lr / (1.0 - beta1 ** (t + 1))  # lr over the first moment's bias correction
    inv_bias2 = 1.0 / (1.0 - beta2 ** (t + 1))
    for p in range(start, stop):
        g = grads[p]
        m1[p] = beta1 * m1[p] + (1.0 - beta1) * g
        m2[p] = beta2 * m2[p] + (1.0 - beta2) * g * g
        previous[p] = params[p]
        params[p] -= lr_1 * scale[p] * m1[p] / (math.sqrt(m2[p] * inv_bias2) + eps)


@jit(fastmath=True)
def gradient_descent_step(params, previous, grads, scale, start, stop, lr):
    """params[start:stop] -= lr scale grads[start:stop] (the paper's optimiser)."""
    for p in range(start, stop):
        previous[p] = params[p]
        params[p] -= lr * scale[p] * grads[p]


@jit(fastmath=True)
def all_finite(x):
    """True if no entry of x is NaN or infinite (x * 0 is NaN exactly for those)."""
    s = 0.0
    for v in x:
        s += v * 0.0
    return s == 0.0
