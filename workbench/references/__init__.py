"""Reference posteriors: long, checked NUTS runs standing in for the truth of a target without a
closed form (regressions with non-conjugate priors, hierarchical and latent-variable models,
BNNs, a user's model).

As posteriordb keeps reference draws beside model and data, a reference here is an artifact of
the target, built once and kept::

    ref = wb.reference(target)            # shipped with the package, cached, or built
    ref.passes, ref.why_not               # posteriordb's standard and an independent cross-check
    ref.form, ref.cross_check             # which form made it; the largest disagreement in MCSEs
    ref.draws                             # (n, d) pooled draws
    wb.metrics.evaluate(result, target)   # uses the reference when the target has no truth

How one is made (the ladder of remedies, the reparametrised form, the cross-check):
``recipe.py``; the references of the bundled posteriors ship with the package, small
(``shipped.py``); built ones are cached on disk (``store.py``). A reference that still fails is
kept and says so (``passes``, ``why_not``): pages and rows built on it must say it too.
"""

from __future__ import annotations

import os

from ..cache import data_digest
from ..target import Target
from .recipe import (
    DEFAULT_REFERENCE,
    REFERENCE_MULTIMODAL_R_HAT,
    REFERENCE_RUNS,
    TARGET_ACCEPT_LADDER,
    build_reference,
    cross_check,
    remedied,
)
from .record import CROSS_CHECK_MCSE, Reference
from .shipped import shipped_reference
from .store import default_cache_dir, load_reference, reference_key, references_cache, save_reference, target_reference_key


def reference(
    target: Target,
    *,
    method: dict | None = None,
    seed: int = 0,
    cache_dir: str | os.PathLike | None = None,
    refresh: bool = False,
) -> Reference:
    """The target's reference posterior: the one shipped with the package (bundled posteriors,
    at the default method), else loaded from the cache, else built (``recipe.build_reference``)
    and cached.

    Parameters
    ----------
    method : dict, optional
        The method spec of the first run, e.g. ``{"method": "NUTS", "chains": 4, "draws": 5000}``
        (default ``DEFAULT_REFERENCE``: NUTS, 4 x 2,500 draws after 1,000 warmup, target_accept 0.9).
    cache_dir : path, optional
        Where built references are kept (default ``$WORKBENCH_CACHE`` or ``~/.cache/workbench``).
    refresh : bool
        Build it again even when shipped or cached.
    """
    if not isinstance(target, Target):
        raise TypeError(f"reference needs a workbench Target, got {type(target).__name__}")
    if not refresh and method is None and seed == 0:
        ref = shipped_reference(target)
        if ref is not None:
            return ref
    cache = references_cache(cache_dir)
    key = target_reference_key(target, method, seed)
    if not refresh:
        ref = load_reference(cache, key)
        if ref is not None and ref.draws.shape[1] == target.dim:
            return ref
    ref = build_reference(target, method, seed)
    save_reference(cache, key, ref, dict(target.spec))
    return ref


__all__ = [
    "CROSS_CHECK_MCSE",
    "DEFAULT_REFERENCE",
    "REFERENCE_MULTIMODAL_R_HAT",
    "REFERENCE_RUNS",
    "Reference",
    "TARGET_ACCEPT_LADDER",
    "build_reference",
    "cross_check",
    "data_digest",
    "default_cache_dir",
    "load_reference",
    "reference",
    "reference_key",
    "references_cache",
    "remedied",
    "save_reference",
    "shipped_reference",
    "target_reference_key",
]
