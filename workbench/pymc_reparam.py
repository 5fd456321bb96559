"""Automatic non-centring of a PyMC model's hierarchies (the optional ``pymc`` extra).

A free ``Normal(mu, sigma)`` whose scale ``sigma`` depends on another free variable (a group's
effects under a learned spread, the neck of Neal's funnel) is sampled on the centred form,
``x`` itself, as the model is written. Where the data say little about each ``x``, the posterior
of (``sigma``, ``x``) is a funnel that a step size cannot fit both ends of. The non-centred form
samples ``z = (x - mu) / sigma`` instead, ``x = mu + sigma z`` a deterministic function of it,
and the funnel is gone (Papaspiliopoulos, Roberts & Skold 2007; NumPyro's ``LocScaleReparam``;
Gorinova, Moore & Hoffman 2020, "Automatic reparameterisation of probabilistic programs", sec. 3,
which rewrites every such variable the same way).

Here the rewrite is a value transform (:class:`LocScale`): PyMC samples a variable through its
transform's ``backward`` and adds its log-Jacobian (``log sigma`` per coordinate), so the
rewritten model is the same posterior on other coordinates, with the same variables, names and
deterministics. :func:`noncentred` returns it; :func:`value_map` maps draws between the two
forms' unconstrained coordinates (through the variables both share, on their own scale). Which
form samples better is not known before sampling: ``NUTS(metric="auto")`` decides from its first
draws (``sampling/flow_metric.py``), and ``from_pymc`` offers the rewritten form as the target's
``reparametrization``.
"""

from __future__ import annotations

import functools

import numpy as np

from .errors import TargetError


@functools.cache
def _loc_scale_class():
    """The transform's class, built on first use (PyMC is optional)."""
    import pytensor.tensor as pt
    from pymc.logprob.transforms import Transform

    class LocScale(Transform):
        """``x = mu + sigma z`` for a ``Normal(mu, sigma)``: the value is ``z``, the Jacobian's
        log determinant ``log sigma`` per coordinate (``mu`` and ``sigma`` are the variable's
        last two inputs, as PyMC's ``NormalRV`` lists them)."""

        name = "noncentred"
        ndim_supp = 0

        def forward(self, value, *inputs):
            mu, sigma = inputs[-2:]
            return (value - mu) / sigma

        def backward(self, value, *inputs):
            mu, sigma = inputs[-2:]
            return mu + sigma * value

        def log_jac_det(self, value, *inputs):
            sigma = inputs[-1]
            return pt.log(sigma) + pt.zeros_like(value)

    return LocScale


def loc_scale_transform():
    """A ``LocScale`` transform: ``x = mu + sigma z`` for a ``Normal(mu, sigma)``."""
    return _loc_scale_class()()


def _rewritable(model, rv) -> bool:
    """A free ``Normal`` with no value transform of its own (its value is then free to take one)."""
    from pytensor.tensor.random.basic import NormalRV

    return isinstance(rv.owner.op, NormalRV) and model.rvs_to_transforms.get(rv) is None


def noncentrable(model) -> list[str]:
    """The free variables :func:`noncentred` would rewrite: ``Normal`` variables with no value
    transform of their own whose scale depends on another free variable."""
    from pytensor.graph.traversal import ancestors

    free = set(model.free_RVs)
    return [rv.name for rv in model.free_RVs
            if _rewritable(model, rv) and any(a in free for a in ancestors([rv.owner.inputs[-1]]))]


def noncentred(model, names=None):
    """The model with ``names`` (default: every :func:`noncentrable` variable) sampled on their
    non-centred coordinates; the same posterior, variables and deterministics. A name that is
    not a free ``Normal`` without a transform is a ``TargetError``."""
    from pymc.model.transform.conditioning import change_value_transforms

    if names is None:
        names = noncentrable(model)
    by_name = {rv.name: rv for rv in model.free_RVs}
    for name in names:
        rv = by_name.get(name)
        if rv is None or not _rewritable(model, rv):
            raise TargetError(
                f"noncentre: {name!r} is not a free Normal variable without a transform of its own; the model's "
                f"candidates are {noncentrable(model)}"
            )
    return change_value_transforms(model, {name: loc_scale_transform() for name in names})


def _unconstrain_graph(model):
    """(inputs, output, names): a graph from the free variables' values on their own scale (in
    ``model.free_RVs`` order, named ``names``) to the model's joined unconstrained vector (each
    transform's ``forward``, which may read other variables: a non-centred ``z = (x - mu) / sigma``).
    The graph holds the model's variables, not the model."""
    import pytensor.tensor as pt
    from pytensor.graph.replace import clone_replace

    free = list(model.free_RVs)
    values = [rv.type(name=rv.name) for rv in free]
    by_rv = dict(zip(free, values))
    out = {}
    for rv, value in zip(free, values):
        transform = model.rvs_to_transforms.get(rv)
        if transform is None:
            out[rv] = value
        else:
            inputs = clone_replace(list(rv.owner.inputs), replace=by_rv)
            out[rv] = transform.forward(value, *inputs)
    joined = pt.concatenate([pt.flatten(out[model.values_to_rvs[v]]) for v in model.value_vars])
    return values, joined, [rv.name for rv in free]


def value_map(source, destination):
    """``f(draws (..., d_source)) -> (..., d_destination)``: draws of the ``source`` target (from
    ``from_pymc``; or a function returning it, called on first use) mapped to the unconstrained
    coordinates of ``destination``, a PyMC model with the same free variables (a rewritten form of
    the source's), through those variables on their own scale. Compiled on first use; a call per
    draw (some microseconds each): for a run's draws, not for a sampler's inner loop."""
    import pytensor

    inputs, output, names = _unconstrain_graph(destination)
    compiled = []

    def mapped(draws):
        if not compiled:
            target = source if hasattr(source, "constrain") else source()
            fn = pytensor.function(inputs, output, on_unused_input="ignore")
            start = target.constrain(target.initial_point)
            missing = [n for n in names if n not in start]
            if missing:
                raise TargetError(f"value_map: {target.name!r} has no variables {missing} of the destination model")
            compiled.append((target, fn, fn(*(start[n] for n in names)).size))
        target, fn, dim = compiled[0]
        x = np.asarray(draws, dtype=float)
        lead = x.shape[:-1]
        variables = target.constrain(x.reshape(-1, x.shape[-1]))
        rows = [fn(*(variables[n][i] for n in names)) for i in range(int(np.prod(lead, dtype=int)))]
        return np.asarray(rows, dtype=float).reshape(*lead, dim)

    return mapped
