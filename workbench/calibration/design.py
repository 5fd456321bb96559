"""What a calibration runs: the methods, at one gradient budget per simulated data set, and the
grid of (simulation x method) cells the study runner runs, caches and resumes."""

from __future__ import annotations

from ..methods import Method, method_class
from ..methods import available as method_names
from ..study.cells import Cell
from ..study.panel import FLOW_NUTS, flow_nuts, method_panel

DEFAULT_BUDGET = 10_000
LAPLACE = ("Laplace", {"method": "Laplace", "draws": 4000})
APPROXIMATIONS = ("Laplace", "MeanFieldVI", "NN4Post", "FullRankVI", "DADVI", "BatchAndMatch", "Pathfinder")
"""Methods whose draws come from a fitted approximation: Yao et al.'s VSBC of their point
estimates is shown beside their ranks."""


def _panel(budget: int) -> dict[str, dict]:
    """label -> method spec: the panel ``workbench compare`` runs at ``budget``, and Laplace."""
    panel = {label: spec for label, spec, _ in method_panel(budget)}
    return {**panel, LAPLACE[0]: dict(LAPLACE[1])}


def _labelled(budget: int) -> dict[str, dict]:
    """The panel, and the rows run only when asked for by label: NUTS on a learned transform,
    where the budget fits one."""
    flow = flow_nuts(budget, 0)
    return {**_panel(budget), **({FLOW_NUTS: flow} if flow is not None else {})}


def _spec_of(method: Method) -> dict:
    """A method instance as a spec the workers rebuild: a built-in by name, a class of the
    caller's own by its import path (``package.module:Class``)."""
    cls = type(method)
    name = cls.__name__ if cls.__name__ in method_names() else f"{cls.__module__}:{cls.__qualname__}"
    return {"method": name, **method.settings()}


def method_specs(methods, budget: int) -> list[tuple[str, dict]]:
    """(label, spec) for each method asked for: None means the whole panel; a name is a panel
    label (``"NUTS"``, ``"IS"``) or a method class's name (``"ImportanceSampling"``); a
    :class:`Method` instance runs as it is set. Labels are unique (a second ``NUTS`` instance is
    ``NUTS (2)``)."""
    panel = _panel(budget)
    if methods is None:
        return list(panel.items())
    if isinstance(methods, (str, Method)):
        methods = [methods]
    by_class = {spec["method"]: label for label, spec in panel.items()}
    labelled = _labelled(budget)
    out, seen = [], set()
    for m in methods:
        if isinstance(m, Method):
            label, spec = m.name, _spec_of(m)
        elif isinstance(m, str) and m in labelled:
            label, spec = m, labelled[m]
        elif isinstance(m, str) and m in by_class:
            label, spec = m, panel[by_class[m]]
        elif isinstance(m, str):
            method_class(m)  # ValueError naming the known methods
            label, spec = m, {"method": m}
        else:
            raise ValueError(f"methods must be names (e.g. 'NUTS') or Method instances, got {m!r}")
        if label in seen:
            k = 2
            while f"{label} ({k})" in seen:
                k += 1
            label = f"{label} ({k})"
        seen.add(label)
        out.append((label, spec))
    return out


def grid(target_spec: dict, target_label: str, specs: list[tuple[str, dict]], n_sims: int, seed: int,
         budget: int) -> list[Cell]:
    """One cell per (simulation, method): data set ``i`` simulated from the model with the stream
    (``seed``, ``i``), fitted by each method at ``budget`` gradients (Laplace ignores budgets), its
    ranks the cell's score."""
    cells = []
    for i in range(n_sims):
        simulated = {"factory": "simulated", "of": target_spec, "seed": int(seed), "index": i}
        for label, spec in specs:
            grad_budget = None if spec["method"] in ("Laplace", "Exact") else int(budget)
            cells.append(Cell(simulated, dict(spec), seed=i, grad_budget=grad_budget, keep=0, score=False,
                              extra="calibration_ranks",
                              labels={"target": target_label, "method": label, "simulation": i}))
    return cells
