"""The target density contract shared by every method (docs/architecture.md, "Target").

A :class:`Target` is a frozen dataclass holding a Numba function
``logp_grad(theta, grad_out, data) -> float`` that returns log p(theta) (unnormalised is
fine) and writes its gradient into the preallocated ``grad_out``; ``data`` is a tuple of
NumPy arrays handed to it unchanged. What is known exactly about the target lives in
:class:`Truth`.

User targets are built with :meth:`Target.from_numba` (the user writes the gradient) or
:meth:`Target.from_logp` (central-difference gradient, slow, warned); ``gradient_check.check_gradient``
compares any target's gradient with finite differences.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import uuid
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import adapters, density_faults, jit
from .errors import NonFiniteDensityError, SlowGradientWarning, TargetError, format_point
from .fingerprint import dependency_digest
from .gradient_check import verify_gradient
from .target_forms import Generative, Identified, Reparametrization
from .truth import Truth
from .user_density import (
    _bounds_checked_call,
    _compile_for,
    _finite_difference_logp_grad,
    _is_library_function,
    _is_numba_function,
    _normalise_data,
    _qualname,
    _validate_user_function,
)


def code_identity(*functions) -> str:
    """What identifies user functions' compiled code in a target's spec (and so in every cache
    keyed by it): the digest of their code and of every global, callee and closure value they
    read (``fingerprint.py``); a function that cannot be fingerprinted gets a name of its own in
    this process, so nothing computed from it is ever served again from a cache."""
    digests = [dependency_digest(f) for f in functions if f is not None]
    if any(d is None for d in digests):
        return f"unfingerprinted-{uuid.uuid4().hex[:16]}"
    return "+".join(digests)


# --------------------------------------------------------------------------------------
# Target
# --------------------------------------------------------------------------------------


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
    reparametrization : Reparametrization, optional
        A form of the same posterior that samples better, with the map back: its reference
        posterior may be built there (``wb.reference``).
    identified : Identified, optional
        The functions of theta the posterior identifies, where theta itself is not (a BNN's
        outputs, not its weights): scores and references' checks use them.
    generative : Generative, optional
        How the model generates its data (a prior draw, a data set from it, the
        log-likelihood): what ``wb.calibrate`` needs.
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
    reparametrization: Reparametrization | None = field(default=None, compare=False, repr=False)
    identified: Identified | None = field(default=None, compare=False, repr=False)
    generative: Generative | None = field(default=None, compare=False, repr=False)

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
        packed = adapters.pack_data(_normalise_data(self.data))
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
        return adapters.kernel_form(self.logp_grad, self._packed.layout)

    @functools.cached_property
    def kernel_logp_grad_batch(self):
        """``logp_grad_batch`` as kernels call it (a stand-in that is never called when the
        target has no mini-batch form)."""
        if self.logp_grad_batch is None:
            return jit.no_batch_form
        return adapters.kernel_form(self.logp_grad_batch, self._packed.layout, batch=True)

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
        try:
            return float(self.kernel_logp_grad(x, g, self.kernel_data)), g
        except Exception as exc:  # the user's density raised: its own exception, not the adapter's
            raise density_faults.original(exc) from None

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
            with density_faults.raising():  # a fault at a start is an error, not a rejection
                lp, g = self.logp_and_grad(x)
        except Exception as exc:  # the user's density raised (1/0 under Numba's default error model)
            advice = ("compile with error_model='numpy' to get inf" if isinstance(exc, ArithmeticError)
                      else "a start must be a point where the density can be evaluated")
            raise NonFiniteDensityError(
                f"log density of target {self.name!r} raised {type(exc).__name__} ({exc}) at "
                f"the {what} {format_point(x)} ({advice})",
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

    def replace(self, **changes) -> Target:
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
    ) -> Target:
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
            spec={"factory": "from_numba", "function": _qualname(logp_grad), "dim": int(dim),
                  "code": code_identity(logp_grad, logp_grad_batch)},
            description=description or f"user target ({_qualname(logp_grad)})",
        )
        if validate:
            _validate_user_function(target)
        if check_gradient:
            verify_gradient(target)
        return target

    @classmethod
    def from_pymc(cls, model, name: str | None = None, *, check_gradient: bool = True, description: str = "",
                  observed_as_data: bool = False, noncentre=None) -> Target:
        """A target from a PyMC model: its joint log density and gradient on PyTensor's
        unconstrained space, compiled by PyTensor's Numba backend (the optional extra,
        ``pip install "workbench[pymc]"``). ``target.constrain(draws)`` and
        ``result.to_arviz(target)`` give the model's own variables. ``observed_as_data``: the
        observed values are part of ``data`` and the target can simulate new ones
        (``generative``, for ``wb.calibrate``). ``noncentre``: whether the model's hierarchies
        (``Normal`` variables whose scale is another free variable) are sampled non-centred
        (``True``, or a list of names), offered as the target's ``reparametrization`` for
        ``NUTS(metric="auto")`` to choose (``None``, the default), or neither (``False``).
        See :func:`workbench.pymc_model.from_pymc`.
        """
        from .pymc_model import from_pymc

        return from_pymc(model, name, check_gradient=check_gradient, description=description, target_class=cls,
                         observed_as_data=observed_as_data, noncentre=noncentre)

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
    ) -> Target:
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
            spec={"factory": "from_logp", "function": _qualname(logp), "dim": int(dim), "code": code_identity(logp)},
            description=kwargs.pop("description", "") or f"user target ({_qualname(logp)}, FD gradient)",
            **kwargs,
        )
        if validate:
            _validate_user_function(target, logp_only=logp)
        else:  # the bounds are checked whatever validate says (the closure above is ours)
            _bounds_checked_call(target, logp, logp_only=True)
        return target
