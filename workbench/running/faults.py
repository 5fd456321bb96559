"""What a run says when the target's density raised: a ``DensityError`` naming the method,
chain, iteration and point; or, for faults treated as rejections (``density_faults.py``), how
many there were."""

from __future__ import annotations

import warnings

import numpy as np

from .. import density_faults
from ..density_faults import original
from ..errors import DensityError, format_point
from ..result import Result
from ..target import Target


def density_raised(method: str, target: Target, exc: BaseException, chain: int, iteration: int,
                   point: np.ndarray, where: str = "chain") -> DensityError:
    """The error for a user's density that raised inside a compiled kernel (the kernels raise
    nothing themselves): it names the method, the chain (or restart), the iteration and the
    point, and is raised ``from`` the user's exception."""
    exc = original(exc)
    return DensityError(
        f"{method} on target {target.name!r}: the target's density raised {exc!r} in {where} {chain} at iteration "
        f"{iteration}, near {format_point(point)}; the run is lost (fix the density, or make it return -inf "
        "where it cannot be evaluated)",
        method, chain, iteration, point,
    )


# share of the run's density evaluations that may fault (each treated as log p = -inf) before the
# run is an error: a density that fails at most points is broken, not bounded
MAX_FAULT_SHARE = 0.5


def with_faults_reported(result: Result, faults: density_faults.Faults, method: str, target: Target) -> Result:
    """``result``, its messages saying how often the density raised (each a rejection, see
    ``density_faults.py``) with the first point and exception; a DensityError when most
    evaluations did."""
    if not faults.count or faults.nested:  # a phase of a run (auto's): the run reports them all
        return result
    calls = max(result.cost.grad_evals, result.cost.logp_evals, 1)
    share = faults.count / calls
    exc, point = faults.first_exception, faults.first_point
    if share > MAX_FAULT_SHARE:
        raise DensityError(
            f"{method} on target {target.name!r}: the target's density raised at {faults.count:,} of {calls:,} "
            f"evaluations, first {exc!r} at {format_point(point)}: a density that fails at most points is broken "
            "(fix it, or return -inf where it cannot be evaluated)", method, 0, 0, point) from exc
    message = (f"density faults: the target's density raised at {faults.count:,} of {calls:,} evaluations "
               f"({share:.2%}), first {exc!r} at {format_point(point)}; each was treated as log p = -inf there "
               "(a rejected proposal), as Stan and nutpie do")
    result.info["density_faults"] = faults.count
    result.messages.append(message)
    warnings.warn(f"{method} on {target.name}: {message}", RuntimeWarning, stacklevel=3)
    return result
