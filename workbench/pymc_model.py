"""PyMC models as workbench targets (the optional ``pymc`` extra: ``pip install "workbench[pymc]"``).

PyMC writes a model's joint log density as a PyTensor graph on the *unconstrained* space:
every bounded variable has a value variable on the real line (``tau`` appears as
``tau_log__``) and the log density includes the transform's Jacobian, so every method here
samples or fits it as it is. PyTensor's Numba backend compiles the density and its gradient
to a Numba function, which :func:`from_pymc` wraps into the project's
``logp_grad(theta, grad_out, data)`` contract (the same route nutpie takes to sample PyMC
models at compiled speed). The model's data containers (``pm.Data``) are the target's
``data`` tuple, handed to the compiled function unchanged.

Draws map back to the model's own variables with ``target.constrain(draws)`` or
``result.to_arviz(target)``: a dict of the free variables on their constrained scale (and the
deterministics), shaped as the model declares them.
"""

from __future__ import annotations

import contextlib
import functools
import re
import time
import warnings
import weakref

import numpy as np

from .errors import TargetError
from .pymc_reparam import noncentrable, noncentred, value_map

INSTALL_HINT = 'PyMC models need the optional extra: pip install "workbench[pymc]" (PyMC >= 6)'


def _import_pymc():
    try:
        import pymc
        import pytensor
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc
    return pymc, pytensor


def parameter_names(value_vars, shapes: dict, labels: dict | None = None) -> tuple:
    """One name per coordinate of the joined vector, in the order PyMC joins the value
    variables (each flattened in C order): ``mu``, ``tau_log__``, ``eta[0]``, ``L[1,0]``, or
    ``beta[age]`` where the model gives the variable's dims coordinates (``labels``: value
    variable name -> one list of labels per axis)."""
    labels = labels or {}
    names = []
    for v in value_vars:
        shape = tuple(shapes[v.name])
        axes = labels.get(v.name)
        if shape == ():
            names.append(v.name)
        elif axes is not None and tuple(len(a) for a in axes) == shape:
            names.extend(f"{v.name}[{','.join(str(axes[a][i]) for a, i in enumerate(idx))}]"
                         for idx in np.ndindex(*shape))
        else:
            names.extend(f"{v.name}[{','.join(map(str, idx))}]" for idx in np.ndindex(*shape))
    return tuple(names)


def _coordinate_labels(model) -> dict:
    """Value variable name -> the coordinate labels of its RV's dims, where all are given."""
    out = {}
    for v in model.value_vars:
        rv = model.values_to_rvs[v]
        dims = model.named_vars_to_dims.get(rv.name)
        if dims and all(model.coords.get(d) is not None for d in dims):
            out[v.name] = [list(model.coords[d]) for d in dims]
    return out


def _check_model(model, pm):
    if not isinstance(model, pm.Model):
        raise TargetError(
            f"from_pymc needs a pymc.Model, got {type(model).__name__}; build it with "
            "`with pm.Model() as model: ...` and pass `model`"
        )
    discrete = [rv.name for rv in model.free_RVs if rv.type.dtype.startswith(("int", "uint", "bool"))]
    if discrete:
        raise TargetError(
            f"the model has discrete free variables {discrete}: the gradient-based methods need "
            "continuous parameters. Marginalise them out (e.g. pm.NormalMixture instead of a "
            "Categorical assignment), or observe them"
        )
    if not model.value_vars:
        raise TargetError("the model has no free variables (everything is observed): nothing to infer")


def _check_finite_start(model, point: dict, tries: int = 20) -> None:
    """TargetError naming the model's terms (variables, potentials) whose log density is not
    finite at its initial point and at ``tries`` points jittered around it by uniform(-2, 2)
    (PyMC's own ``jitter+adapt_diag`` start), before anything is compiled for sampling: a
    ``pm.Potential`` that is always -inf, an observation outside its distribution's support."""
    terms = model.point_logps(point, round_vals=12)
    bad = {k: v for k, v in terms.items() if not np.isfinite(v)}
    if not bad:
        return
    rng = np.random.default_rng(0)
    for _ in range(tries):
        jittered = {k: np.asarray(v) + rng.uniform(-2.0, 2.0, np.shape(v)) for k, v in point.items()}
        values = model.point_logps(jittered, round_vals=12)
        if all(np.isfinite(v) for v in values.values()):
            return
        bad.update({k: v for k, v in values.items() if not np.isfinite(v) and k in bad})
    named = ", ".join(f"{k!r} ({v})" for k, v in bad.items())
    raise TargetError(
        f"the model's log density is not finite at its initial point nor at {tries} points jittered "
        f"around it: the terms {named} are not finite there. Check that the observed values lie in "
        "their distributions' support, that potentials can be finite, and the initvals"
    )


_OBJECT_MODE = re.compile(r"Numba will use object mode to run (\S+?)'s perform")


def _refuse_object_mode(caught) -> None:
    """TargetError naming the Ops that PyTensor's Numba backend cannot compile: it would run
    them in Python object mode, holding the GIL in every density call (the chains would run
    one at a time, at Python's speed)."""
    ops = sorted({m.group(1) for w in caught if (m := _OBJECT_MODE.search(str(w.message)))})
    for w in caught:  # the others are the user's to see
        if not _OBJECT_MODE.search(str(w.message)):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if ops:
        raise TargetError(
            f"PyTensor's Numba backend has no implementation of the Op(s) {', '.join(ops)} in this "
            "model: it would run them in Python object mode in every density call. Give the Op a "
            "Numba implementation (pytensor.link.numba.dispatch.numba_funcify.register) or write "
            "that part of the model with PyTensor's own operations"
        )


def graph_digest(variable) -> str:
    """A hash of a PyTensor graph's printed form: two models with one name but different
    densities get different cache keys (their data enters through ``data``)."""
    import hashlib

    from pytensor.printing import debugprint

    return hashlib.sha256(debugprint(variable, file="str").encode()).hexdigest()[:16]


def _shared_digest(variable) -> str:
    """A hash of the values of the shared variables (``pm.Data``) a graph reads."""
    import hashlib

    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.traversal import graph_inputs

    h = hashlib.sha256()
    for v in graph_inputs([variable]):
        if isinstance(v, SharedVariable):
            value = np.asarray(v.get_value(borrow=True))
            h.update(f"{v.name}{value.dtype}{value.shape}".encode())
            h.update(np.ascontiguousarray(value).tobytes())
    return h.hexdigest()[:16]


# model -> {(graph digest, data digest): Target}; weak, so a model's targets go with it
_COMPILED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _shared_inputs(fn) -> list:
    """The shared variables (``pm.Data``) a compiled PyTensor function reads, in argument order."""
    return list(fn.maker.fgraph.inputs[1:])


def _wrap(jitted, n_data: int):
    """``logp_grad(theta, grad_out, data)`` calling the compiled PyTensor function.

    The compiled function returns ``(logp as a 0-d array, gradient)``; its data inputs come
    from ``data`` one by one, so the wrapper is written for the number of data arrays.
    """
    import numba

    args = "".join(f", data[{i}]" for i in range(n_data))
    source = (
        "def logp_grad(theta, grad_out, data):\n"
        f"    out = jitted(theta{args})\n"
        "    g = out[1]\n"
        "    for i in range(grad_out.shape[0]):\n"
        "        grad_out[i] = g[i]\n"
        "    return out[0][()]\n"
    )
    namespace = {"jitted": jitted, "__name__": __name__}  # ours: no bounds-checked copy needed
    exec(compile(source, "<workbench.pymc_model>", "exec"), namespace)  # noqa: S102 - our own source
    wrapped = numba.njit(error_model="numpy")(namespace["logp_grad"])
    wrapped.allocates = True  # the kernels' adapter compiles it with Numba's runtime (jit.compile_kernel_form)
    return wrapped


class Constrainer:
    """Maps unconstrained draws (..., d) to the model's variables on their own scale.

    Calls a compiled PyTensor function once per draw (a few microseconds each): for reports
    and ArviZ, not for inner loops.
    """

    def __init__(self, fn, names: list, shapes: list, data: tuple, dim: int, dims=None, coords=None):
        self._fn = fn
        self.names = names
        self.shapes = shapes
        self.dims = dict(dims or {})  # variable -> the model's dim names (for ArviZ)
        self.coords = dict(coords or {})
        self._data = data
        self._dim = dim

    def __call__(self, draws) -> dict:
        x = np.asarray(draws, dtype=float)
        if x.shape[-1] != self._dim:
            raise TargetError(f"draws have {x.shape[-1]} columns, the model has {self._dim} parameters")
        lead = x.shape[:-1]
        flat = x.reshape(-1, self._dim)
        out = {n: np.empty((len(flat),) + s) for n, s in zip(self.names, self.shapes)}
        for i, row in enumerate(flat):
            values = self._fn(np.ascontiguousarray(row), *self._data)
            for name, value in zip(self.names, values):
                out[name][i] = value
        return {n: a.reshape(lead + a.shape[1:]) for n, a in out.items()}


def compiled_to_numba(inputs, outputs):
    """PyMC's compile of ``outputs`` to a Numba function of ``inputs`` (call it inside the model's
    context), without fastmath. PyTensor's default fastmath lets LLVM reassociate the sums it fuses,
    and how it fuses them depends on what its disk cache held when the function was compiled: the
    same model and seed drew other chains in a process with an empty cache than in later ones (a
    sum over 200 observations changed in its last bits, and NUTS's run with it). Without fastmath
    the draws are the same whatever the cache holds. Its cost, one gradient (us, fastmath on / off):
    eight schools 0.33 / 0.34, diabetes 2.07 / 2.27, breast cancer 18.7 / 18.6, stochastic
    volatility 1.47 / 1.80, LGCP 152 / 147."""
    from pymc.pytensorf import compile as pm_compile
    from pytensor import config

    with config.change_flags(numba__fastmath=False):
        return pm_compile(inputs, outputs, mode="NUMBA", on_unused_input="ignore")


def from_pymc(model, name: str | None = None, *, check_gradient: bool = True, description: str = "",
              target_class=None, observed_as_data: bool = False, noncentre=None):
    """A :class:`~workbench.Target` from a PyMC model (see the module docstring).

    Parameters
    ----------
    model : pymc.Model
        Continuous free variables only (a clear error otherwise).
    name : str, optional
        Defaults to the model's name, or ``"pymc_model"``.
    check_gradient : bool
        Compare the compiled gradient with central differences once (as ``from_numba``).
    target_class : type
        :class:`~workbench.Target` (what ``Target.from_pymc`` passes): this adapter sits below
        the target contract and builds the density, ``Target`` wraps it.

    The target's ``param_names`` are the value variables' (``tau_log__``, ``eta[0]``, ...),
    its ``initial_point`` PyMC's ``model.initial_point()``; ``build_info`` records the
    compile time (``compile_seconds``), apart from any run's cost. A model is compiled once:
    asking again for the same graph with the same data returns the target already built.

    With ``observed_as_data``, the observed values are inputs of the compiled density too (in
    the target's ``data``, beside the ``pm.Data`` containers), so a simulated data set is a new
    ``data`` tuple and never a new compile, and the target carries its ``generative`` form:
    PyMC's own forward sampler, compiled once, and the observed variables' log-likelihood
    (what ``wb.calibrate`` needs; :func:`pymc_generative`).

    ``noncentre`` says how the model's hierarchies are sampled (``workbench/pymc_reparam.py``):
    by default (``None``) the target is the model as written, and where it has ``Normal``
    variables whose scale is another free variable, their non-centred form is the target's
    ``reparametrization``, for ``NUTS(metric="auto")`` and references to choose; ``True``
    samples every such variable non-centred (a list of names, those), ``False`` neither
    samples nor offers it.
    """
    pm, pytensor = _import_pymc()
    import pytensor.tensor as pt
    from pymc.pytensorf import join_nonshared_inputs

    if target_class is None:
        raise TypeError("from_pymc builds its Target through Target.from_pymc(model); call that")
    _check_model(model, pm)
    offered = _noncentring(model, noncentre)
    if noncentre is not None and noncentre is not False:
        model = noncentred(model, offered)  # the target is the rewritten form, offering no other
        offered = []
    start = time.perf_counter()
    observed = observed_inputs(model) if observed_as_data else {}
    point = model.initial_point()
    _check_finite_start(model, point)
    value_vars = model.value_vars
    with observed_values(model, observed):
        logp = model.logp()
    grad = pt.concatenate([pt.flatten(g) for g in pt.grad(logp, value_vars)])
    [logp_x, grad_x], joined = join_nonshared_inputs(point, [logp, grad], value_vars)
    # compiled once per model: the same graph with the same data gives back the same target
    key = (graph_digest(logp_x), _shared_digest(logp_x), observed_as_data, tuple(offered))
    built = _COMPILED.setdefault(model, {})
    if key in built:
        target = built[key]
        target_name = name or target.name
        if target_name == target.name and not description:
            return target
        return target.replace(name=target_name, description=description or target.description,
                              spec={**target.spec, "model": target_name})
    # PyMC's own compile path, inside the model: its rewrites include the one that turns every
    # parameter check (``sigma > 0``, ``posdef covariance``) into a switch to -inf, as PyMC's
    # samplers see it. ``pytensor.function`` keeps the checks as assertions, which raise out of
    # the compiled function at a proposal far out in the unconstrained space.
    with model, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn = compiled_to_numba([joined], [logp_x, grad_x])
    _refuse_object_mode(caught)
    shared = _shared_inputs(fn)
    data = tuple(np.asarray(v.get_value(borrow=False)) for v in shared)
    for v, value in zip(shared, data):
        if value.dtype != np.dtype(v.type.dtype) or value.dtype.kind not in "fi" or value.dtype.itemsize != 8:
            raise TargetError(
                f"data container {v.name!r} has dtype {value.dtype}; from_pymc supports float64 "
                "and int64 data (pm.Data(name, np.asarray(x, dtype=float)))"
            )
    logp_grad = _wrap(fn.vm.jit_fn, len(data))

    # the constrained variables (free RVs back-transformed, deterministics), for reports
    keep = {rv.name for rv in model.unobserved_RVs}
    outputs = [v for v in model.unobserved_value_vars if v.name in keep]
    constrained, joined_c = join_nonshared_inputs(point, outputs, value_vars)
    with model:
        cfn = compiled_to_numba([joined_c], constrained)
    cshared = _shared_inputs(cfn)
    cdata = tuple(np.asarray(v.get_value(borrow=False)) for v in cshared)
    jit_c = cfn.vm.jit_fn
    x0 = np.concatenate([np.ravel(point[v.name]) for v in value_vars]).astype(float)
    shapes = [np.shape(value) for value in jit_c(x0, *cdata)]
    names = [v.name for v in outputs]
    dim = int(x0.size)
    target_name = name or (model.name or "pymc_model")
    info = {"backend": "PyTensor Numba"}
    target = target_class(
        name=target_name,
        dim=dim,
        logp_grad=logp_grad,
        data=data,
        param_names=parameter_names(value_vars, {k: np.shape(v) for k, v in point.items()},
                                    _coordinate_labels(model)),
        initial_point=x0,
        spec={"factory": "from_pymc", "model": target_name, "dim": dim,
              "variables": [v.name for v in value_vars], "graph": key[0],
              # NUTS(metric="auto") may sample the offered form: a run's cache key must see it
              **({"offers_noncentred": list(offered)} if offered and not observed_as_data else {})},
        description=description or f"PyMC model {target_name!r} ({', '.join(v.name for v in model.free_RVs)})",
        constrain_fn=Constrainer(
            jit_c, names, shapes, cdata, dim,
            dims={n: list(model.named_vars_to_dims[n]) for n in names if n in model.named_vars_to_dims},
            coords={k: list(v) for k, v in model.coords.items() if v is not None},
        ),
        build_info=info,
    )
    if observed_as_data:
        target = target.replace(generative=pymc_generative(model, target, observed, shared))
    if offered and not observed_as_data:
        try:
            target = target.replace(reparametrization=_noncentred_form(model, target, offered, target_class))
        except Exception as exc:  # noqa: BLE001 - an offer the model's graph defeats is no reason to refuse the model
            info["noncentring"] = f"not offered: {type(exc).__name__}: {exc}"
            target = target.replace(spec={k: v for k, v in target.spec.items() if k != "offers_noncentred"})
    info["compile_seconds"] = time.perf_counter() - start  # building the Target compiled the wrapper
    if check_gradient:
        from .gradient_check import verify_gradient

        verify_gradient(target)
    built[key] = target
    return target


def _noncentring(model, noncentre) -> list:
    """The variables to sample (or offer) non-centred, by ``from_pymc``'s ``noncentre``."""
    if noncentre is None or noncentre is True:
        return noncentrable(model)
    if noncentre is False:
        return []
    if isinstance(noncentre, str) or not all(isinstance(n, str) for n in noncentre):
        raise TargetError(f"noncentre must be None, True, False or a list of variable names; got {noncentre!r}")
    return list(noncentre)


def _noncentred_form(model, target, names: list, target_class):
    """The non-centred form of ``names`` as a ``Reparametrization`` of ``target``: compiled when
    first built, its maps when first called (a model whose form is never used pays nothing)."""
    from .target_forms import Reparametrization

    form_model = noncentred(model, names)

    @functools.cache
    def build():
        return from_pymc(form_model, f"{target.name} (non-centred)", check_gradient=False,
                         target_class=target_class, noncentre=False)

    return Reparametrization(f"non-centred: {', '.join(names)}", build, to_target=value_map(build, model),
                             from_target=value_map(target, form_model))


# ----------------------------------------------------------------------------- simulation


def observed_inputs(model) -> dict:
    """Observed RV -> the shared variable that stands for its values in the compiled density: the
    model's own ``pm.Data`` where it observes one, else a new shared variable holding the
    constant (of its dtype and static shape), so that the observed values are an input."""
    import pytensor
    from pytensor.compile.sharedvalue import SharedVariable

    out = {}
    for rv in model.observed_RVs:
        value = model.rvs_to_values[rv]
        if isinstance(value, SharedVariable):
            out[rv] = value
        else:
            data = np.asarray(value.data, dtype=value.dtype)
            data = data.astype(np.int64) if data.dtype.kind in "iub" else data.astype(np.float64)
            out[rv] = pytensor.shared(data, name=f"{rv.name}_observed", shape=data.shape)
    return out


@contextlib.contextmanager
def observed_values(model, observed: dict):
    """Within, the model's log density reads its observed values from ``observed`` (RV -> shared
    variable): PyMC builds ``model.logp()`` from ``model.rvs_to_values``, restored on leaving."""
    saved = {rv: model.rvs_to_values[rv] for rv in observed}
    try:
        for rv, shared in observed.items():
            if shared.type.dtype != saved[rv].type.dtype:
                import pytensor.tensor as pt

                shared = pt.cast(shared, saved[rv].type.dtype)
            model.rvs_to_values[rv] = shared
        yield
    finally:
        model.rvs_to_values.update(saved)


def pymc_generative(model, target, observed: dict, shared: list):
    """The model's ``Generative`` form (``target_forms.Generative``), its observed values read from
    ``observed`` (:func:`observed_inputs`): PyMC's forward sampler,
    compiled once, draws the free variables and the observed ones; their values on the
    unconstrained space are the simulation's parameters (each transform's ``forward``); the
    observed variables' log density at the draws is the log-likelihood."""
    from pymc.pytensorf import join_nonshared_inputs, reseed_rngs
    from pymc.sampling.forward import compile_forward_sampling_function

    from .target_forms import Generative

    free = list(model.free_RVs)
    transforms = {rv: model.rvs_to_transforms.get(rv) for rv in free}
    transformed = {rv: t.forward(rv, *rv.owner.inputs) for rv, t in transforms.items() if t is not None}
    observed_rvs = list(observed)
    outputs = free + list(transformed.values()) + list(model.deterministics) + observed_rvs
    sampler, _ = compile_forward_sampling_function(outputs, vars_in_trace=[], basic_rvs=model.basic_RVs,
                                                   model=model, random_seed=0, allow_input_downcast=True,
                                                   accept_inplace=True)
    rngs = [v for v in sampler.maker.fgraph.inputs if "Generator" in str(v.type)]
    slot = {rv: shared.index(v) for rv, v in observed.items()}  # where each observed array sits in data
    n_free, n_trans, n_det = len(free), len(transformed), len(model.deterministics)

    def simulate(rng):
        reseed_rngs(rngs, int(rng.integers(2**31)))
        values = sampler()
        by_rv = dict(zip(free, values[:n_free]))
        by_rv.update(zip(transformed, values[n_free:n_free + n_trans]))
        theta = np.concatenate([np.ravel(by_rv[model.values_to_rvs[v]]) for v in model.value_vars]).astype(float)
        data = list(target.data)
        for rv, value in zip(observed_rvs, values[n_free + n_trans + n_det:]):
            data[slot[rv]] = np.asarray(value, dtype=data[slot[rv]].dtype).reshape(data[slot[rv]].shape)
        return theta, tuple(data)

    point = model.initial_point()
    with observed_values(model, observed):
        loglik = model.logp(vars=observed_rvs)
    [loglik_x], joined = join_nonshared_inputs(point, [loglik], model.value_vars)
    with model:
        fn = compiled_to_numba([joined], loglik_x)
    order = [shared.index(v) for v in _shared_inputs(fn)]
    jitted = fn.vm.jit_fn

    def log_likelihood(draws, data):
        args = [data[k] for k in order]
        x = np.ascontiguousarray(draws, dtype=float)
        return np.array([float(np.asarray(jitted(row, *args)[0])) for row in x])

    return Generative(simulate, log_likelihood, variables=target.constrain)
