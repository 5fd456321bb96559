"""Posterior predictive means: <f>(x) exactly (conjugate regression) or from reference draws,
against q's, the left side of the nn4post paper's Theorem 1."""

from __future__ import annotations

import numpy as np

from .vi import vi_quality

PREDICT_DRAWS = 2000
PREDICT_POINTS = 50


def _model(target) -> str:
    """Which built-in model a target is ("linear_regression", "bnn", ...), from its spec."""
    return (target.spec or {}).get("factory", target.name)


def prediction_inputs(target) -> np.ndarray:
    """The inputs x at which <f>(x) is compared: the data rows for a regression, an evenly
    spaced grid over the data's range for a one-input BNN."""
    X = target.data[0]
    if _model(target) == "bnn" and X.shape[1] == 1:
        lo, hi = X.min(), X.max()
        return np.linspace(lo, hi, PREDICT_POINTS)[:, None]
    return X


def predictions(target, thetas: np.ndarray, X: np.ndarray) -> np.ndarray:
    """f(x; theta) for every theta (rows) and input x (rows of X): (n_theta, n_x)."""
    thetas = np.atleast_2d(thetas)
    model = _model(target)
    if model == "linear_regression":
        return thetas @ X.T
    if model == "logistic_regression":
        return 1.0 / (1.0 + np.exp(-(thetas @ X.T)))
    if model == "bnn":
        from ..targets.bnn import bnn_predict, layer_sizes

        sizes = layer_sizes(target)
        return np.array([bnn_predict(np.ascontiguousarray(t), X, sizes) for t in thetas])
    raise ValueError(f"no model function f(x; theta) known for target {target.name!r}")


def relative_prediction_error(f_exact: np.ndarray, f_q: np.ndarray) -> float:
    """||<f> - <f>_q|| / ||<f>|| over the inputs: Theorem 1's delta<f>/<f>, as one number
    (a pointwise ratio is unstable where <f>(x) crosses zero)."""
    return float(np.linalg.norm(f_exact - f_q) / np.linalg.norm(f_exact))


def predictive_mean(target, reference=None, X=None) -> np.ndarray:
    """The exact posterior predictive mean <f>(x): in closed form for the (linear) conjugate
    regression, else the mean over the reference draws."""
    X = prediction_inputs(target) if X is None else X
    truth = target.truth
    if _model(target) == "linear_regression" and truth is not None:
        return X @ truth.mean
    if reference is None:
        raise ValueError(f"target {target.name!r} needs reference draws for its predictive mean")
    ref = np.asarray(reference)
    idx = np.linspace(0, ref.shape[0] - 1, min(ref.shape[0], 4 * PREDICT_DRAWS)).astype(int)
    return predictions(target, ref[idx], X).mean(axis=0)


def theorem1_quantities(result, target, reference=None) -> dict:
    """``vi_quality`` (the loss) plus ``rel_error``, the relative error of q's predictive mean
    <f>_q(x) against the exact <f>(x) (Theorem 1's left side). For a linear f, <f>_q = f(mean of q)
    exactly; otherwise it is averaged over ``PREDICT_DRAWS`` draws of q."""
    out = vi_quality(result, target, reference)
    X = prediction_inputs(target)
    f_exact = predictive_mean(target, reference, X)
    q = result.approximation
    if _model(target) == "linear_regression":
        f_q = X @ q.mean
    else:
        f_q = predictions(target, q.sample(PREDICT_DRAWS, np.random.default_rng(779)), X).mean(axis=0)
    out["rel_error"] = relative_prediction_error(f_exact, f_q)
    return out
