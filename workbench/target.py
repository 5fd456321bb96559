"""The target density contract shared by every method (DESIGN.md, "Target").

A :class:`Target` is a frozen dataclass holding a Numba function
``logp_grad(theta, grad_out, data) -> float`` that returns log p(theta) (unnormalised is
fine) and writes its gradient into the preallocated ``grad_out``; ``data`` is a tuple of
NumPy arrays handed to it unchanged. What is known exactly about the target lives in
:class:`Truth`.

User targets are built with :meth:`Target.from_numba` (the user writes the gradient) or
:meth:`Target.from_logp` (central-difference gradient, slow, warned); :func:`check_gradient`
compares any target's gradient with finite differences.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, NamedTuple

import numba
import numpy as np
from numba.core.registry import CPUDispatcher

from . import jit
from .errors import NonFiniteDensityError, SlowGradientWarning, TargetError, format_point

# --------------------------------------------------------------------------------------
# Truth
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Truth:
    """What is known exactly about a target (any field may be None when it is not known).

    Attributes
    ----------
    mean, sd : ndarray (d,)
        Exact mean and marginal standard deviations.
    log_z : float
        log of the normalising constant of ``exp(logp)`` as the target's ``logp_grad``
        computes it (0 when ``logp_grad`` is normalised).
    sampler : callable ``(rng, n) -> ndarray (n, d)``
        Exact i.i.d. sampler.
    marginal_pdf_fn, marginal_cdf_fn : callable ``(k, x) -> ndarray``
        Density and distribution function of coordinate ``k``, vectorised over ``x``.
    cov_fn : callable ``() -> ndarray (d, d)``
        Builds the dense covariance on demand (targets stay usable at d = 10,000 without it).
    extras : mapping
        Target-specific facts, e.g. ``component_weights`` and ``assign_component`` for
        mixtures (used by the mode-weight metric).
    source : str
        ``"exact"`` (closed form) or ``"reference"`` (long-run reference draws stand in).
    """

    mean: np.ndarray | None = None
    sd: np.ndarray | None = None
    log_z: float | None = None
    sampler: Callable[[np.random.Generator, int], np.ndarray] | None = None
    marginal_pdf_fn: Callable[[int, np.ndarray], np.ndarray] | None = None
    marginal_cdf_fn: Callable[[int, np.ndarray], np.ndarray] | None = None
    cov_fn: Callable[[], np.ndarray] | None = None
    extras: Mapping[str, Any] = field(default_factory=dict)
    source: str = "exact"

    @functools.cached_property
    def cov(self) -> np.ndarray | None:
        """Dense covariance (d, d), built on first access; None if unknown."""
        if self.cov_fn is not None:
            return self.cov_fn()
        return None

    def sample(self, n: int, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """``n`` exact i.i.d. draws, shape (n, d)."""
        if self.sampler is None:
            raise TargetError("this target has no exact sampler")
        return self.sampler(np.random.default_rng(rng), int(n))

    def marginal_pdf(self, k: int, x) -> np.ndarray:
        """Density of coordinate ``k`` at ``x`` (vectorised)."""
        if self.marginal_pdf_fn is None:
            raise TargetError("this target has no exact marginal densities")
        return self.marginal_pdf_fn(self._coordinate(k), np.asarray(x, dtype=float))

    def marginal_cdf(self, k: int, x) -> np.ndarray:
        """Distribution function of coordinate ``k`` at ``x`` (vectorised)."""
        if self.marginal_cdf_fn is None:
            raise TargetError("this target has no exact marginal distribution functions")
        return self.marginal_cdf_fn(self._coordinate(k), np.asarray(x, dtype=float))

    def _coordinate(self, k) -> int:
        d = None if self.mean is None else np.size(self.mean)
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0 or (d is not None and k >= d):
            raise TargetError(f"coordinate k must be an integer in [0, {d}), got {k!r}")
        return int(k)


# --------------------------------------------------------------------------------------
# Target
# --------------------------------------------------------------------------------------


def _is_numba_function(fn) -> bool:
    return isinstance(fn, CPUDispatcher)


def _normalise_data(data) -> tuple:
    """The data tuple with every item a C-contiguous array (so its Numba type is stable)."""
    if data is None:
        return ()
    if not isinstance(data, tuple):
        raise TargetError(
            f"data must be a tuple of NumPy arrays, got {type(data).__name__}; "
            "wrap a single array as (X,)"
        )
    out = []
    for i, item in enumerate(data):
        try:
            arr = np.asarray(item)
        except ValueError:  # NumPy: "setting an array element with a sequence ... inhomogeneous"
            raise TargetError(f"data[{i}] is not a rectangular array (rows of different lengths)") from None
        if arr.dtype == object or arr.dtype.kind not in "fiub":
            raise TargetError(
                f"data[{i}] is not a numeric array (dtype {arr.dtype}): data items must hold numbers "
                "(floats become float64, integers and booleans int64)"
            )
        if arr.dtype.kind == "f":
            arr = arr.astype(np.float64, copy=False)
        elif arr.dtype.kind in "iub":
            arr = arr.astype(np.int64, copy=False)
        arr = np.ascontiguousarray(arr)
        arr.setflags(write=False)  # shared by all chains and threads: read-only
        out.append(arr)
    return tuple(out)


def _compile_for(fn, signature, what: str, adapter):
    """Check ``fn``'s arguments and compile it, inlined in the adapter through which kernels
    and Python's calls reach it (``adapter()`` builds it), with a clear error."""
    import inspect

    try:
        params = inspect.signature(fn.py_func).parameters
    except (TypeError, ValueError):  # pragma: no cover - a function without a Python signature
        params = None
    if params is not None and len(params) != len(signature.args):
        names = "(theta, grad_out, data)" if len(signature.args) == 3 else "(theta, grad_out, data, rows, scale)"
        raise TargetError(
            f"{what} takes {len(params)} argument(s) ({', '.join(params)}), it must take {len(signature.args)}: "
            f"def {what}{names}: write the gradient into grad_out and return the log density"
        )
    try:
        adapter()  # the kernels' adapter, which inlines fn: fn is compiled there and only there
    except numba.core.errors.TypingError as exc:
        raise TargetError(
            f"{what} could not be compiled for the signature {signature}: it must take "
            f"(theta: float64[::1], grad_out: float64[::1], data: tuple of arrays) "
            f"[plus (rows: int64[::1], scale: float64) for the batch form], "
            f"return the log density as a float and write the gradient into grad_out "
            f"(not return it). Numba said:\n{exc}"
        ) from exc


@dataclass(frozen=True)
class Target:
    """A target density, shared by all methods.

    Parameters
    ----------
    name : str
        Short name used in tables and reports.
    dim : int
        Dimension d of theta.
    logp_grad : Numba function ``(theta, grad_out, data) -> float``
        Log density (unnormalised is fine); writes d/dtheta log p into ``grad_out``.
    data : tuple of arrays
        Handed to ``logp_grad`` unchanged (made C-contiguous and read-only).
    param_names : tuple of str, optional
        Defaults to ``theta[0] .. theta[d-1]``.
    truth : Truth, optional
        What is known exactly.
    logp_grad_batch : Numba function ``(theta, grad_out, data, rows, scale) -> float``, optional
        Mini-batch form for data-driven targets: ``scale`` x log-likelihood of the data
        ``rows`` + log prior, with ``scale = N_D / N_m`` (nn4post paper, eq. 18-20).
    n_data : int, optional
        N_D, the number of data rows the batch form indexes.
    initial_point : ndarray (d,), optional
        Where methods start by default (zeros if not given).
    spec : mapping, optional
        How the target was built (factory name and arguments): identifies it in study caches.
    description : str
        One line for listings and reports.
    hessian : callable ``(theta) -> ndarray (d, d)``, optional
        The analytic Hessian of log p, from Python (used by ``Laplace`` instead of finite
        differences of the gradient).
    prior : Gaussian, optional
        The model's prior where it is Gaussian (``wb.approximations.Gaussian``, with ``mean``,
        ``cov``, ``logpdf`` and ``sample``): a normalised density that covers the posterior,
        which tempering methods (``SMC``) start from.
    constrain_fn : callable ``(draws (..., d)) -> dict``, optional
        Maps draws to the model's own variables on their constrained scale (PyMC models:
        ``from_pymc``); see :meth:`constrain`.
    build_info : dict
        How building went, apart from any run's cost: ``compile_seconds`` (PyMC models),
        ``gradient_check`` (what the check of ``from_numba`` found, or why it was skipped).
    """

    name: str
    dim: int
    logp_grad: Any
    data: tuple = ()
    param_names: tuple | None = None
    truth: Truth | None = None
    logp_grad_batch: Any = None
    n_data: int | None = None
    initial_point: np.ndarray | None = None
    spec: Mapping[str, Any] | None = None
    description: str = ""
    hessian: Callable[[np.ndarray], np.ndarray] | None = None
    prior: Any = None
    constrain_fn: Callable | None = field(default=None, compare=False, repr=False)
    build_info: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        set_ = functools.partial(object.__setattr__, self)
        if not isinstance(self.name, str) or not self.name:
            raise TargetError(f"name must be a non-empty string, got {self.name!r}")
        if isinstance(self.dim, bool) or not isinstance(self.dim, (int, np.integer)):
            raise TargetError(f"dim must be an integer, got {self.dim!r}")
        if self.dim < 1:
            raise TargetError(f"dim must be >= 1, got {self.dim}")
        set_("dim", int(self.dim))
        if not _is_numba_function(self.logp_grad):
            raise TargetError(
                "logp_grad must be a Numba function, got "
                f"{type(self.logp_grad).__name__}. Decorate it with @numba.njit "
                "(ideally @numba.njit(cache=True)) and write it in nopython style: "
                "def logp_grad(theta, grad_out, data): ...; grad_out[:] = ...; return logp"
            )
        if self.logp_grad_batch is not None and not _is_numba_function(self.logp_grad_batch):
            raise TargetError("logp_grad_batch must be a Numba @njit function as well")
        # the arrays are views of two buffers, which kernels get instead (see jit.py)
        packed = jit.pack_data(_normalise_data(self.data))
        set_("data", packed.data)
        set_("_packed", packed)
        if self.param_names is None:
            set_("param_names", tuple(f"theta[{i}]" for i in range(self.dim)))
        else:
            if isinstance(self.param_names, str) or not hasattr(self.param_names, "__iter__"):
                raise TargetError(f"param_names must be a list of {self.dim} names, got {self.param_names!r}")
            names = tuple(str(n) for n in self.param_names)
            if len(names) != self.dim:
                raise TargetError(f"{len(names)} param_names given for dim={self.dim}")
            set_("param_names", names)
        if self.initial_point is None:
            set_("initial_point", np.zeros(self.dim))
        else:
            try:
                x0 = np.ascontiguousarray(self.initial_point, dtype=np.float64)
            except (TypeError, ValueError):
                raise TargetError(f"initial_point must be {self.dim} numbers, got {self.initial_point!r}") from None
            if x0.shape != (self.dim,):
                raise TargetError(
                    f"initial_point has shape {x0.shape}, expected ({self.dim},) for dim={self.dim}"
                )
            set_("initial_point", x0)
        if self.truth is not None:
            if not isinstance(self.truth, Truth):
                raise TargetError(f"truth must be a wb.Truth (or None), got {type(self.truth).__name__}")
            for key in ("mean", "sd"):
                value = getattr(self.truth, key)
                if value is not None and np.shape(value) != (self.dim,):
                    raise TargetError(f"truth.{key} has shape {np.shape(value)}, expected ({self.dim},) for dim={self.dim}")
        if self.logp_grad_batch is not None and (self.n_data is None or self.n_data < 1):
            raise TargetError("a target with logp_grad_batch must give n_data >= 1")
        set_("spec", dict(self.spec) if self.spec is not None else {"factory": "custom"})
        if self.prior is not None:
            mean, cov = getattr(self.prior, "mean", None), getattr(self.prior, "cov", None)
            if not (hasattr(self.prior, "sample") and hasattr(self.prior, "logpdf")
                    and np.shape(mean) == (self.dim,) and np.shape(cov) == (self.dim, self.dim)):
                raise TargetError(
                    f"prior must be a Gaussian of dimension {self.dim} (wb.approximations.Gaussian(mean, cov)), "
                    f"got {self.prior!r}"
                )
        # The explicit signatures through which kernels call the target (see jit.py).
        dtype = self.data_type
        _compile_for(self.logp_grad, jit.logp_grad_signature(dtype), "logp_grad", lambda: self.kernel_logp_grad)
        if self.logp_grad_batch is not None:
            _compile_for(self.logp_grad_batch, jit.logp_grad_batch_signature(dtype), "logp_grad_batch",
                         lambda: self.kernel_logp_grad_batch)
        # Kernels index without bounds checks: a function that reads or writes past its arrays
        # (a dim larger than its data) would corrupt memory there, so whatever ``validate``
        # says, a user's function is called once, bounds-checked, before any kernel runs.
        if not _is_library_function(self.logp_grad):
            _bounds_checked_call(self, self.logp_grad)

    # -- convenience -------------------------------------------------------------------

    @functools.cached_property
    def data_type(self):
        """The Numba type of ``data``: the user's function is compiled for it (kernels get the
        packed ``kernel_data`` instead)."""
        return jit.data_type(self.data)

    @property
    def kernel_data(self) -> tuple:
        """The data as kernels get it: (float64 buffer, int64 buffer), see ``jit.py``."""
        return self._packed.packed

    @functools.cached_property
    def kernel_logp_grad(self):
        """``logp_grad`` as kernels call it: ``(theta, grad_out, kernel_data)``."""
        return jit.kernel_form(self.logp_grad, self._packed.layout)

    @functools.cached_property
    def kernel_logp_grad_batch(self):
        """``logp_grad_batch`` as kernels call it (a stand-in that is never called when the
        target has no mini-batch form)."""
        if self.logp_grad_batch is None:
            return jit.no_batch_form
        return jit.kernel_form(self.logp_grad_batch, self._packed.layout, batch=True)

    @property
    def has_batch(self) -> bool:
        """Whether the target offers the mini-batch form."""
        return self.logp_grad_batch is not None

    def _as_theta(self, theta) -> np.ndarray:
        x = np.ascontiguousarray(theta, dtype=np.float64)
        if x.shape != (self.dim,):
            raise TargetError(
                f"theta has shape {x.shape}, expected ({self.dim},) for target {self.name!r}"
            )
        return x

    def logp_and_grad(self, theta) -> tuple[float, np.ndarray]:
        """log p(theta) and its gradient, from Python (allocates; not for inner loops).

        Through the kernels' own adapter (``kernel_logp_grad``): the user's function is then
        compiled once per target, inlined there, rather than a second time on its own for
        Python's calls (a PyMC model's compiled density is large: compiling it twice cost
        its compile time twice)."""
        x = self._as_theta(theta)
        g = np.empty(self.dim)
        return float(self.kernel_logp_grad(x, g, self.kernel_data)), g

    def logp(self, theta) -> float:
        """log p(theta), from Python."""
        return self.logp_and_grad(theta)[0]

    def logp_and_grad_batch(self, theta, rows, scale: float) -> tuple[float, np.ndarray]:
        """The mini-batch form from Python: scale x loglik(rows) + log prior, and its gradient."""
        if not self.has_batch:
            raise TargetError(f"target {self.name!r} has no mini-batch form (logp_grad_batch)")
        x = self._as_theta(theta)
        r = np.ascontiguousarray(rows, dtype=np.int64)
        if r.size and (r.min() < 0 or r.max() >= self.n_data):
            raise TargetError(f"rows must lie in [0, {self.n_data}), got {r.min()}..{r.max()}")
        g = np.empty(self.dim)
        return float(self.logp_grad_batch(x, g, self.data, r, float(scale))), g

    def check_point(self, theta, what: str = "starting point") -> float:
        """Raise :class:`NonFiniteDensityError` unless log p and its gradient are finite at theta.

        Returns log p(theta). Methods call this on their starting points before entering a
        kernel, so a bad start is named instead of producing garbage.
        """
        x = self._as_theta(theta)
        if not np.all(np.isfinite(x)):
            raise NonFiniteDensityError(
                f"{what} of target {self.name!r} is not finite: {format_point(x)}", x, math.nan
            )
        try:
            lp, g = self.logp_and_grad(x)
        except ArithmeticError as exc:  # Numba's default error model raises on 1/0
            raise NonFiniteDensityError(
                f"log density of target {self.name!r} raised {type(exc).__name__} ({exc}) at "
                f"the {what} {format_point(x)}; (compile with error_model='numpy' to get inf)",
                x,
                math.nan,
            ) from exc
        if not math.isfinite(lp):
            raise NonFiniteDensityError(
                f"log density of target {self.name!r} is {lp} at the {what} "
                f"{format_point(x)}: start where the density is positive and finite",
                x,
                lp,
            )
        bad = np.flatnonzero(~np.isfinite(g))
        if bad.size:
            raise NonFiniteDensityError(
                f"gradient of target {self.name!r} is not finite at the {what} "
                f"{format_point(x)} (coordinates {bad[:6].tolist()})",
                x,
                lp,
            )
        return lp

    def constrain(self, draws) -> dict:
        """The draws (..., d) as the model's own variables: ``{name: array (..., *shape)}``.

        For a PyMC model (``from_pymc``) the free variables back on their constrained scale
        (``tau``, not ``tau_log__``) and the deterministics; for any other target one entry
        per parameter, as it is.
        """
        x = np.asarray(draws, dtype=float)
        if x.ndim < 1 or x.shape[-1] != self.dim:
            raise TargetError(f"draws must have shape (..., {self.dim}) for target {self.name!r}, got {x.shape}")
        if self.constrain_fn is not None:
            return self.constrain_fn(x)
        return {name: x[..., k] for k, name in enumerate(self.param_names)}

    def reference(self, **kwargs):
        """This target's reference posterior: the draws of a long NUTS run checked against
        posteriordb's standard, cached on disk (``wb.reference``; keyword arguments go there)."""
        from .references import reference

        return reference(self, **kwargs)

    def replace(self, **changes) -> "Target":
        """A copy with some fields changed (e.g. ``truth`` or ``initial_point``)."""
        return dataclasses.replace(self, **changes)

    def __repr__(self) -> str:
        truth = "none" if self.truth is None else self.truth.source
        return f"Target(name={self.name!r}, dim={self.dim}, truth={truth})"

    # -- constructors for user targets -------------------------------------------------

    @classmethod
    def from_numba(
        cls,
        logp_grad,
        dim: int,
        data: tuple = (),
        name: str = "user",
        *,
        param_names=None,
        truth: Truth | None = None,
        initial_point=None,
        logp_grad_batch=None,
        n_data: int | None = None,
        description: str = "",
        validate: bool = True,
        check_gradient: bool = True,
    ) -> "Target":
        """A user target from a Numba ``logp_grad(theta, grad_out, data) -> float``.

        With ``validate=True`` (default), the function is called once at the initial point
        through a bounds-checked copy of itself, which turns a wrong ``dim`` (an index out
        of range) into a clear error instead of silent memory reads, and the call must
        return a finite log density and write every entry of ``grad_out``.

        With ``check_gradient=True`` (default), the gradient is compared with central
        differences of the density at the initial point and two points near it
        (:func:`verify_gradient`: 2 d + 1 density calls per point, skipped with a note in
        ``build_info`` above ``GRADIENT_CHECK_MAX_DIM`` or when it would take long); a wrong
        gradient raises a :class:`TargetError` naming the worst coordinate.

        Example
        -------
        >>> @numba.njit(cache=True)
        ... def logp_grad(theta, grad_out, data):
        ...     (prec,) = data
        ...     s = 0.0
        ...     for i in range(theta.size):
        ...         grad_out[i] = -prec[i] * theta[i]
        ...         s += prec[i] * theta[i] ** 2
        ...     return -0.5 * s
        >>> t = Target.from_numba(logp_grad, dim=3, data=(np.ones(3),), name="iso")
        """
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
            raise TargetError(f"dim must be an integer, got {dim!r}")
        target = cls(
            name=name,
            dim=dim,
            logp_grad=logp_grad,
            data=data,
            param_names=param_names,
            truth=truth,
            initial_point=initial_point,
            logp_grad_batch=logp_grad_batch,
            n_data=n_data,
            spec={"factory": "from_numba", "function": _qualname(logp_grad), "dim": int(dim)},
            description=description or f"user target ({_qualname(logp_grad)})",
        )
        if validate:
            _validate_user_function(target)
        if check_gradient:
            verify_gradient(target)
        return target

    @classmethod
    def from_pymc(cls, model, name: str | None = None, *, check_gradient: bool = True, description: str = "") -> "Target":
        """A target from a PyMC model: its joint log density and gradient on PyTensor's
        unconstrained space, compiled by PyTensor's Numba backend (the optional extra,
        ``pip install "workbench[pymc]"``). ``target.constrain(draws)`` and
        ``result.to_arviz(target)`` give the model's own variables. See
        :func:`workbench.pymc_model.from_pymc`.
        """
        from .pymc_model import from_pymc

        return from_pymc(model, name, check_gradient=check_gradient, description=description)

    @classmethod
    def from_logp(
        cls,
        logp,
        dim: int,
        data: tuple = (),
        name: str = "user",
        *,
        rel_step: float = 1e-6,
        validate: bool = True,
        **kwargs,
    ) -> "Target":
        """A user target from a Numba ``logp(theta, data) -> float`` alone.

        The gradient is computed by central differences inside Numba (2 d + 1 density
        evaluations per gradient, and about 1e-8 relative accuracy), so every method pays
        2 d + 1 times more per gradient: a :class:`SlowGradientWarning` says so. Write the
        gradient by hand and use :meth:`from_numba` when speed matters. Cost counters of the
        methods count calls of the gradient function, not the density calls inside it.
        """
        if not _is_numba_function(logp):
            raise TargetError(
                f"logp must be a Numba function, got {type(logp).__name__}. Decorate it with "
                "@numba.njit and give it the form def logp(theta, data): ... return value"
            )
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
            raise TargetError(f"dim must be an integer >= 1 (the length of theta), got {dim!r}")
        if isinstance(rel_step, bool) or not isinstance(rel_step, (int, float, np.integer, np.floating)) \
                or not 0.0 < float(rel_step) < 1.0:
            raise TargetError(f"rel_step must be a number in (0, 1) (the central differences' relative step; "
                              f"the default 1e-6 suits most densities), got {rel_step!r}")
        warnings.warn(
            f"Target {name!r}: gradient by central differences, {2 * int(dim) + 1} density "
            "evaluations per gradient; write logp_grad by hand and use Target.from_numba "
            "for speed",
            SlowGradientWarning,
            stacklevel=2,
        )
        logp_grad = _finite_difference_logp_grad(logp, float(rel_step))
        target = cls(
            name=name,
            dim=dim,
            logp_grad=logp_grad,
            data=data,
            spec={"factory": "from_logp", "function": _qualname(logp), "dim": int(dim)},
            description=kwargs.pop("description", "") or f"user target ({_qualname(logp)}, FD gradient)",
            **kwargs,
        )
        if validate:
            _validate_user_function(target, logp_only=logp)
        else:  # the bounds are checked whatever validate says (the closure above is ours)
            _bounds_checked_call(target, logp, logp_only=True)
        return target


def _qualname(fn) -> str:
    py = getattr(fn, "py_func", fn)
    return f"{getattr(py, '__module__', '?')}.{getattr(py, '__qualname__', repr(py))}"


def _finite_difference_logp_grad(logp, rel_step: float):
    """A logp_grad whose gradient is the central difference of ``logp`` (a closure: not cached)."""

    @numba.njit
    def logp_grad(theta, grad_out, data):
        value = logp(theta, data)
        x = theta.copy()  # one allocation per gradient: negligible next to 2 d density calls
        for k in range(theta.size):
            h = rel_step * max(1.0, abs(theta[k]))
            x[k] = theta[k] + h
            up = logp(x, data)
            x[k] = theta[k] - h
            down = logp(x, data)
            x[k] = theta[k]
            grad_out[k] = (up - down) / (2.0 * h)
        return value

    return logp_grad


def _is_library_function(fn) -> bool:
    """The workbench's own densities (built-in targets, PyMC wrappers) are tested; a user's are checked."""
    module = getattr(getattr(fn, "py_func", fn), "__module__", "") or ""
    return module == "workbench" or module.startswith("workbench.")


@functools.cache
def _bounds_checked(py_func):
    """A bounds-checked compile of a user's function (not cached on disk: Numba's cache index
    does not tell it apart from the unchecked one)."""
    return numba.njit(boundscheck=True)(py_func)


def _bounds_checked_call(target: Target, fn, logp_only: bool = False):
    """Call ``fn`` once at the initial point through a bounds-checked copy of itself: an index
    out of range is a :class:`TargetError` instead of silent memory reads and writes in a
    kernel. Returns (value, gradient), or None when the call raised something else (left to
    the validation and the runs to report)."""
    checked = _bounds_checked(fn.py_func)
    x = target.initial_point.copy()
    g = np.full(target.dim, np.nan)
    try:
        value = checked(x, target.data) if logp_only else checked(x, g, target.data)
    except IndexError as exc:
        raise TargetError(
            f"{'logp' if logp_only else 'logp_grad'} of target {target.name!r} "
            f"indexes out of range when called with dim={target.dim} and its data "
            f"(theta and grad_out have {target.dim} entries; data shapes "
            f"{[np.shape(a) for a in target.data]}): is dim right? ({exc})"
        ) from exc
    except Exception:
        return None
    return value, g


def _validate_user_function(target: Target, logp_only=None) -> None:
    """Call the user's function once, bounds-checked, at the initial point."""
    fn = logp_only if logp_only is not None else target.logp_grad
    called = _bounds_checked_call(target, fn, logp_only=logp_only is not None)
    if called is None:  # it raised: check_point names the point (or raises it plainly)
        target.check_point(target.initial_point, what="initial point")
        raise TargetError(f"the density of target {target.name!r} raised at its initial point only when bounds-checked")
    value, g = called
    if not isinstance(value, (float, int, np.floating, np.integer)):
        raise TargetError(
            f"logp_grad of target {target.name!r} returned {type(value).__name__}; it must "
            "return the log density as a float and write the gradient into grad_out"
        )
    if logp_only is None:
        unwritten = np.flatnonzero(np.isnan(g))
        if unwritten.size and math.isfinite(float(value)):
            raise TargetError(
                f"logp_grad of target {target.name!r} did not write grad_out at "
                f"{unwritten.size} of {target.dim} coordinates (first: {unwritten[:6].tolist()}): "
                f"the gradient has the wrong shape for dim={target.dim}"
            )
    target.check_point(target.initial_point, what="initial point")


# --------------------------------------------------------------------------------------
# Gradient check
# --------------------------------------------------------------------------------------


class GradientCheck(NamedTuple):
    """Result of :func:`check_gradient`.

    ``max_rel_error`` is the worst, over points, of
    ``max_k |g_k - fd_k| / max(1, max_k |fd_k|)``: a relative error where the gradient is
    large and an absolute one where it is near zero (at a mode).
    """

    max_rel_error: float
    errors: np.ndarray  # per point
    points: np.ndarray  # (n_points, d)
    worst_point: np.ndarray
    worst_coordinate: int

    def __repr__(self) -> str:
        return (
            f"GradientCheck(max_rel_error={self.max_rel_error:.3g} over {len(self.errors)} "
            f"points; worst at coordinate {self.worst_coordinate} of {format_point(self.worst_point)})"
        )


# central-difference stencils: (offsets in steps h, weights), the derivative = sum w f(x + o h) / h
_STENCILS = {
    3: ((1.0, -1.0), (0.5, -0.5)),  # error O(h^2), 2 density calls per coordinate
    5: ((2.0, 1.0, -1.0, -2.0), (-1.0 / 12.0, 8.0 / 12.0, -8.0 / 12.0, 1.0 / 12.0)),  # O(h^4), 4 calls
}


def finite_difference_gradient(target: Target, theta, rel_step: float = 1e-3, stencil: int = 5) -> np.ndarray:
    """Gradient of log p by central differences, from Python: the 5-point stencil (error
    O(h^4)) or the 3-point one (O(h^2), half the density calls), step h = rel_step max(1, |theta_k|).
    A coordinate where a neighbouring density is not finite comes out non-finite."""
    offsets, weights = _STENCILS[stencil]
    x = target._as_theta(theta).copy()
    fd = np.empty(target.dim)
    g = np.empty(target.dim)
    for k in range(target.dim):
        h = rel_step * max(1.0, abs(x[k]))
        orig = x[k]
        total = 0.0
        for offset, weight in zip(offsets, weights):
            x[k] = orig + offset * h
            total += weight * target.kernel_logp_grad(x, g, target.kernel_data)
        x[k] = orig
        fd[k] = total / h
    return fd


def check_gradient(
    target: Target,
    points=None,
    n_points: int = 3,
    seed: int = 0,
    rel_step: float = 1e-3,
) -> GradientCheck:
    """Compare ``target.logp_grad``'s gradient with central finite differences.

    Parameters
    ----------
    points : array (n, d) or (d,), optional
        Where to check. By default ``n_points`` exact draws when the target has an exact
        sampler (typical points), else the initial point plus standard normal noise.
    rel_step : float
        Finite-difference step relative to max(1, |theta_k|).
    """
    if not isinstance(target, Target):
        raise TargetError(f"check_gradient needs a workbench Target, got {type(target).__name__}")
    if not (isinstance(rel_step, (int, float, np.floating)) and 0.0 < rel_step < 1.0):
        raise TargetError(f"rel_step must be a number in (0, 1), got {rel_step!r}")
    if points is None and (isinstance(n_points, bool) or not isinstance(n_points, (int, np.integer)) or n_points < 1):
        raise TargetError(f"n_points must be an integer >= 1 (how many points to check at), got {n_points!r}")
    rng = np.random.default_rng(seed)
    if points is None:
        if target.truth is not None and target.truth.sampler is not None:
            points = target.truth.sample(n_points, rng)
        else:
            points = target.initial_point + rng.standard_normal((n_points, target.dim))
    try:
        pts = np.atleast_2d(np.asarray(points, dtype=float))
    except (TypeError, ValueError):
        raise TargetError(f"points must be an array (n, {target.dim}) of numbers, got {points!r}") from None
    if pts.ndim != 2 or pts.shape[1] != target.dim:
        raise TargetError(f"points must have shape (n, {target.dim}) or ({target.dim},), got {np.shape(points)}")
    errors = np.empty(len(pts))
    worst = (-1.0, 0, 0)
    for i, p in enumerate(pts):
        target.check_point(p, what="gradient-check point")
        _, g = target.logp_and_grad(p)
        fd = finite_difference_gradient(target, p, rel_step)
        diff = np.abs(g - fd)
        errors[i] = diff.max() / max(1.0, np.abs(fd).max())
        if errors[i] > worst[0]:
            worst = (errors[i], i, int(diff.argmax()))
    return GradientCheck(float(errors.max()), errors, pts, pts[worst[1]], worst[2])


# --------------------------------------------------------------------------------------
# The gradient check made when a user's target is built
# --------------------------------------------------------------------------------------

GRADIENT_CHECK_MAX_DIM = 5000
"""Above this dimension ``verify_gradient`` skips (with a note): 3 x (2 d + 1) density calls."""
GRADIENT_CHECK_MAX_SECONDS = 5.0
"""...or when those calls would take longer than this."""
GRADIENT_CHECK_RTOL = 1e-3
"""A coordinate is wrong when |g - fd| > RTOL max(1, |g|, |fd|) + the differences' round-off."""
FD_STEP = float(np.cbrt(np.finfo(float).eps))
"""The 3-point stencil's relative step, eps^(1/3): it balances truncation and round-off."""


def verify_gradient(target: Target, n_points: int = 3, seed: int = 0) -> dict:
    """Check ``target.logp_grad``'s gradient against central differences once, when built.

    At the initial point and ``n_points - 1`` points near it (the initial point plus
    N(0, 0.5^2 max(1, |x|)^2) noise, shrunk where the density is not finite there; a sign
    error is invisible at a mode, where the gradient is zero). Raises :class:`TargetError`
    naming the worst coordinate when a coordinate disagrees beyond rounding; records what
    was checked in ``target.build_info["gradient_check"]`` and returns it. Skipped, with a
    note there and a warning, above ``GRADIENT_CHECK_MAX_DIM`` or when the check would take
    longer than ``GRADIENT_CHECK_MAX_SECONDS``.
    """
    d = target.dim
    x0 = target.initial_point
    g0 = np.empty(d)
    one_call = math.inf
    for _ in range(3):  # the first call from Python can be slow (lazy initialisation): take the best
        start = time.perf_counter()
        target.kernel_logp_grad(x0, g0, target.kernel_data)
        one_call = min(one_call, time.perf_counter() - start)
    expected = n_points * (2 * d + 1) * one_call
    if d > GRADIENT_CHECK_MAX_DIM or expected > GRADIENT_CHECK_MAX_SECONDS:
        why = (f"d = {d} > {GRADIENT_CHECK_MAX_DIM}" if d > GRADIENT_CHECK_MAX_DIM
               else f"it would take about {expected:.0f} s")
        note = {"checked": False, "note": f"gradient check skipped: {why}; run wb.check_gradient(target) to check it"}
        target.build_info["gradient_check"] = note
        warnings.warn(f"Target {target.name!r}: {note['note']}", UserWarning, stacklevel=3)
        return note
    rng = np.random.default_rng(seed)
    points = [x0]
    for _ in range(n_points - 1):
        noise = 0.5 * rng.standard_normal(d) * np.maximum(1.0, np.abs(x0))
        for shrink in (1.0, 0.1, 0.01):
            x = x0 + shrink * noise
            if math.isfinite(target.kernel_logp_grad(x, g0, target.kernel_data)):
                points.append(x)
                break
    worst = (0.0, -1, None, 0.0, 0.0)  # (excess over tolerance, coordinate, point, g, fd)
    max_rel = 0.0
    n_checked = 0
    for x in points:
        g = np.empty(d)
        lp = target.kernel_logp_grad(x, g, target.kernel_data)
        if not (math.isfinite(lp) and np.all(np.isfinite(g))):
            continue
        fd = finite_difference_gradient(target, x, FD_STEP, stencil=3)
        h = FD_STEP * np.maximum(1.0, np.abs(x))
        ok = np.isfinite(fd)
        n_checked += 1
        diff = np.abs(g - fd)
        scale = np.maximum(1.0, np.maximum(np.abs(g), np.abs(fd)))
        roundoff = 100.0 * np.finfo(float).eps * max(1.0, abs(lp)) / h
        excess = np.where(ok, diff / (GRADIENT_CHECK_RTOL * scale + roundoff), 0.0)
        max_rel = max(max_rel, float(np.max(np.where(ok, diff / scale, 0.0))))
        k = int(np.argmax(excess))
        if excess[k] > worst[0]:
            worst = (float(excess[k]), k, x, float(g[k]), float(fd[k]))
    info = {"checked": True, "points": n_checked, "max_rel_error": max_rel,
            "density_calls": n_checked * (2 * d + 1)}
    target.build_info["gradient_check"] = info
    if worst[0] > 1.0:
        _, k, x, gk, fdk = worst
        raise TargetError(
            f"the gradient of target {target.name!r} is wrong: at coordinate {k} "
            f"({target.param_names[k]}) logp_grad wrote {gk:.6g} but the density's slope (central "
            f"differences) is {fdk:.6g}, at the point {format_point(x)}. Check d log p / d "
            f"{target.param_names[k]} (a sign, a factor, a missing term of the prior); "
            "check_gradient=False skips this check"
        )
    return info
