"""The method panel: every method at a gradient budget, as the accuracy study and
``workbench compare`` run them (the same specs, so their cells share a cache)."""

from __future__ import annotations

import numpy as np

CHAINS = 2


def method_panel(budget: int, chains: int = CHAINS) -> list[tuple[str, dict, int | None]]:
    """(label, method spec, grad_budget) for each method at ``budget`` gradient evaluations.

    Samplers get a warmup that fits the budget and more draws than it allows, so the budget
    decides where they stop; the VI methods run at their defaults (the budget decides the
    steps); Laplace and Exact, which ignore budgets, are added by the caller.
    """
    per_chain = budget // chains
    quiet = {"progress": False}
    return [
        ("RWM", {"method": "RandomWalkMH", "chains": chains, "warmup": per_chain // 4, "draws": per_chain, **quiet}, budget),
        ("HMC", {"method": "HMC", "chains": chains, "warmup": int(np.clip(per_chain // 40, 50, 1000)), "draws": per_chain,
                 **quiet}, budget),
        # NUTS at its defaults: its warmup and trees adapt to the budget (methods/hmc.py)
        ("NUTS", {"method": "NUTS", "chains": chains, "draws": per_chain, **quiet}, budget),
        # the microcanonical samplers at their defaults, with room for the draws the budget buys
        # (MCLMC keeps every thin-th step: at most about 10,000 rows a chain)
        ("MAMS", {"method": "MAMS", "chains": chains, "draws": int(np.clip(per_chain // 2, 200, 50_000)), **quiet}, budget),
        ("MCLMC", {"method": "MCLMC", "chains": chains, "thin": max(1, per_chain // 20_000),
                   "draws": max(200, per_chain // (2 * max(1, per_chain // 20_000))), **quiet}, budget),
        ("IS", {"method": "ImportanceSampling", "n": budget}, budget),
        # the VI methods at their defaults: the budget decides the steps; 4,000 draws, as Exact's
        ("MeanFieldVI", {"method": "MeanFieldVI", **quiet}, budget),
        ("NN4Post", {"method": "NN4Post", **quiet}, budget),
        ("FullRankVI", {"method": "FullRankVI", **quiet}, budget),
        # deterministic ADVI: converges on its fixed draws, usually far below the budget
        ("DADVI", {"method": "DADVI"}, budget),
        # full-rank Gaussian VI by score matching in closed form: its steps are what the budget pays for
        ("BatchAndMatch", {"method": "BatchAndMatch", **quiet}, budget),
        # multi-path Pathfinder as Stan runs it (4 paths), with as many pooled draws as a tenth
        # of the budget pays for (their densities are part of its cost); it stops when L-BFGS
        # converges, usually far below the budget
        ("Pathfinder", {"method": "Pathfinder", "paths": 4, "draws": min(1000, budget // 40), **quiet}, budget),
        # tempered SMC, 4 runs, with as many particles as the budget pays for at about 500
        # gradients each (its default moves)
        ("SMC", {"method": "SMC", "runs": 4, "particles": int(np.clip(budget // 2000, 25, 2000)), **quiet}, budget),
    ]


# NUTS on a learned transform (NUTS(metric="flow")): its own row where a flow is fitted, up to this
# dimension (measured to d = 103, the stochastic-volatility posterior; its fits cost O(n d^2)) and
# from the budget whose learned draws fit in it (``flow_metric.min_flow_budget``)
FLOW_NUTS = "NUTS (flow)"
FLOW_MAX_DIM = 200


def flow_nuts(budget: int, dim: int, chains: int = CHAINS, **settings) -> dict | None:
    """NUTS(metric="flow")'s spec at ``budget`` on a ``dim``-d target, as the panel's NUTS row
    runs (``settings`` replace its draws and the like), or None where no flow would be fitted."""
    from ..methods import NUTS
    from ..sampling.flow_metric import min_flow_budget

    if dim > FLOW_MAX_DIM or budget < min_flow_budget(NUTS(metric="flow", chains=chains)):
        return None
    return {"method": "NUTS", "metric": "flow", "chains": chains, "draws": budget // chains, "progress": False,
            **settings}
