"""Running a study: a grid of cells through an executor, with a cache that makes it resumable.

    run = run_study(study, quick=True)            # local process pool
    run = run_study(study, executor="dask")        # a Dask LocalCluster
    run = run_study(study, scheduler="tcp://host:8786")
    run.table                                      # one row per cell (pandas)

Targets without a closed-form truth (logistic regression, BNN) get their reference posterior
first (``workbench/references.py``: a long NUTS run, ``Study.reference_method``, checked against
posteriordb's standard), built in a worker, cached beside the cells and used as the truth of
every cell on that target. Tables say so in their ``truth`` column.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..cache import CellCache, code_version, spec_hash
from ..jit import compile_kernels, kernel_groups
from ..mcmc import timing  # noqa: F401  (its kernel is compiled up front with the methods')
from ..metrics.distances import noise_floor_w1
from ..references import DEFAULT_REFERENCE, REFERENCE_RUNS, reference_key, references_cache, save_reference, shipped_reference
from .cells import Cell, build_target, run_cell, run_reference, target_label
from .executors import SerialExecutor, WorkerLost, make_executor
from .options import RunOptions

QUICK_REFERENCE_RUNS = 1
TABLE_EVERY_SECONDS = 2.0
"""How often the table on disk is rewritten while cells finish (and once at the end): rewriting
it after every cell cost the calibration study 5.5 of its 18 s (600 cells, O(n^2))."""



@dataclass(frozen=True)
class Study:
    """A named grid of cells and how to report it.

    grid(quick) -> list[Cell]. report(run) -> ``Page`` (figures, tables, a finding), see
    ``report.py``. ``reference_method`` is the long run standing in for a missing truth.
    """

    name: str
    title: str
    grid: Callable[[bool], list[Cell]]
    report: Callable | None = None
    description: str = ""
    reference_method: dict = field(default_factory=lambda: dict(DEFAULT_REFERENCE))
    reference_runs: int | None = None  # runs a failing reference may take; None: 1 quick, 3 full


@dataclass
class StudyRun:
    """What ``run_study`` returns: the table (grid order) and what happened."""

    study: Study
    quick: bool
    cells: list[Cell]
    keys: list[str]
    table: pd.DataFrame
    cache: CellCache
    references: dict  # target label -> reference info (and draws under "draws")
    computed: int
    cached: int
    failed: int
    executor: str
    seconds: float
    out: Path
    reference_keys: dict = field(default_factory=dict)  # target spec JSON -> reference cache key
    reference_cache: CellCache | None = None

    def arrays(self, index: int) -> dict:
        """The small arrays (thinned draws of the first coordinates, ...) of cell ``index``."""
        return self.cache.arrays(self.keys[index])

    def cache_reference(self, target_spec: dict) -> np.ndarray | None:
        """The reference posterior draws (n, d) of a target without a truth, or None."""
        key = self.reference_keys.get(json.dumps(target_spec, sort_keys=True))
        if key is None or self.reference_cache is None:
            return None
        return self.reference_cache.arrays(key).get("draws")


def page_folder(out: str | Path, name: str, quick: bool) -> Path:
    """Where a study's page, figures and table.csv go: ``<out>/quick/<name>`` or
    ``<out>/full/<name>``. The two grids never share a page (nor a table)."""
    return Path(out) / ("quick" if quick else "full") / name


def _progress_bar(total: int, description: str, progress):
    from tqdm.auto import tqdm

    disable = (not sys.stderr.isatty()) if progress is None else not progress
    return tqdm(total=total, desc=description, unit="cell", disable=disable, leave=False)


def _row(cell: Cell, key: str, entry: dict | None, truth: str) -> dict:
    row = {
        "target": cell.labels.get("target", target_label(cell.target)),
        "method": cell.labels.get("method", cell.method["method"]),
        **{k: v for k, v in cell.labels.items() if k not in ("target", "method")},
        "seed": cell.seed,
        "grad_budget": cell.grad_budget if cell.grad_budget is not None else np.nan,
        "truth": truth,
        "status": "missing" if entry is None else entry["status"],
        "error": "" if entry is None else entry.get("error", ""),
    }
    if entry is not None:
        row.update(entry.get("row", {}))
    row["key"] = key
    return row


def compile_library_kernels(names=None) -> dict:
    """Compile (or load) the named library kernels in this process (a pool worker): this
    module's imports bring in every module that defines one (the methods, through ``cells``,
    and the gradient timer), so their kernels are registered in ``jit.KERNELS``."""
    return compile_kernels(names)


def compile_kernels_on(ex) -> None:
    """Compile (or load) the library's kernels on a pool's workers, split between them: left
    to the cells, two workers would compile the same kernel at the same moment."""
    n_workers = getattr(ex, "workers", 1)
    if n_workers > 1 and not isinstance(ex, SerialExecutor) and not getattr(ex, "kernels_ready", False):
        for _ in ex.run([(k, compile_library_kernels, (group,)) for k, group in enumerate(kernel_groups(n_workers))]):
            pass
        ex.kernels_ready = True  # once per pool, however many studies share it


def run_study(
    study: Study,
    options: RunOptions | None = None,
    *,
    on_cell_done: Callable[[int, dict], None] | None = None,
    run_missing: bool = True,
    **option_values,
) -> StudyRun:
    """Run (or resume) ``study`` as ``options`` say (:class:`RunOptions`, or its fields as
    keywords: ``quick``, ``executor``, ``workers``, ``scheduler``, ``fresh``, ``out``,
    ``cache_dir``, ``progress``); return its table. Writes ``out/<quick|full>/<name>/table.csv``
    as it fills.

    Cached cells are not re-run unless ``fresh``; a damaged cache entry is recomputed (with a
    warning naming it). A cell that raises or returns NaN is recorded with its error and the
    others go on; a cell whose worker process dies twice is recorded as failed (not cached).
    ``on_cell_done(i, entry)`` is called after each computed cell (the tests use it to
    interrupt a study). ``run_missing=False`` only reads the cache (re-rendering a report):
    missing cells show as "missing". A running executor given as ``executor`` (entered by the
    caller, its kernels compiled with :func:`compile_kernels_on`) is shared by several
    studies: the pool then starts once for all of them.
    """
    options = RunOptions.of(options, **option_values)
    quick, fresh, progress = options.quick, options.fresh, options.progress
    executor, workers, scheduler = options.executor or "local", options.workers, options.scheduler
    out, cache_dir = options.out, options.cache_dir
    start = time.perf_counter()
    out = Path(out)
    cache_root = Path(cache_dir) if cache_dir is not None else out / ".cache"
    cache = CellCache(cache_root, study.name)
    ref_cache = references_cache(cache_root)
    version = code_version()
    cells = list(study.grid(quick))
    # a failing reference is run again, longer, in the full grids; the quick ones say it fails
    reference_runs = study.reference_runs or (QUICK_REFERENCE_RUNS if quick else REFERENCE_RUNS)
    if not cells:
        raise ValueError(f"study {study.name!r} has an empty grid")
    table_path = page_folder(out, study.name, quick) / "table.csv"
    table_path.parent.mkdir(parents=True, exist_ok=True)

    # which targets need a reference posterior (no closed-form truth)? The bundled ones are
    # shipped with the package (references/shipped.py): copied into the cache, never run
    ref_keys: dict[str, str] = {}
    shipped_keys: set[str] = set()
    for cell in cells:
        spec_json = json.dumps(cell.target, sort_keys=True)
        if spec_json in ref_keys:
            continue
        try:
            target = build_target(cell.target)
        except Exception:  # a bad spec: its cells record the error when they run
            continue
        if target.truth is not None:
            continue
        shipped = shipped_reference(target) if study.reference_method == DEFAULT_REFERENCE else None
        if shipped is not None:
            key = spec_hash({"shipped": shipped.shipped, "target": cell.target})
            if ref_cache.get(key) is None:
                save_reference(ref_cache, key, shipped, cell.target)
            ref_keys[spec_json] = key
            shipped_keys.add(key)
        else:
            ref_keys[spec_json] = reference_key(cell.target, study.reference_method, 0, max_runs=reference_runs)
    keys = []
    for cell in cells:
        fields = cell.key_fields(version)
        ref = ref_keys.get(json.dumps(cell.target, sort_keys=True))
        if ref:
            fields["reference"] = ref
        keys.append(spec_hash(fields))

    computed = 0
    entries: list[dict | None] = [None if fresh else cache.get(k) for k in keys]
    cached = sum(e is not None for e in entries)
    todo = [i for i, e in enumerate(entries) if e is None]
    ref_todo = {s: k for s, k in ref_keys.items() if k not in shipped_keys and (fresh or ref_cache.get(k) is None)}

    ref_failed: dict[str, bool] = {}  # reference key -> it failed its checks (read once from the cache)

    def truth_of(cell):
        key = ref_keys.get(json.dumps(cell.target, sort_keys=True))
        if key is None:
            return "simulated" if cell.target.get("factory") == "simulated" else "exact"
        if key not in ref_failed:
            entry = ref_cache.get(key)
            if entry is None:  # not computed yet: ask again at the next write
                return "reference (long NUTS)"
            ref_failed[key] = not entry["info"].get("passes", False)
        kind = "reference (shipped NUTS)" if key in shipped_keys else "reference (long NUTS)"
        return f"{kind} FAILS its checks" if ref_failed[key] else kind

    def write_table():
        rows = [_row(c, k, e, truth_of(c)) for c, k, e in zip(cells, keys, entries)]
        frame = pd.DataFrame(rows)
        frame.to_csv(table_path, index=False)
        return frame

    last_write = time.perf_counter()
    own = isinstance(executor, str)  # else a running executor shared by several studies
    ex = make_executor(executor, workers, scheduler) if own else executor
    references: dict = {}
    if run_missing and (todo or ref_todo):
        with ex if own else contextlib.nullcontext(ex):
            compile_kernels_on(ex)
            bar = _progress_bar(len(todo) + len(ref_todo), f"{study.name}", progress)

            def cell_done(i, outcome):
                nonlocal computed, last_write
                if isinstance(outcome, WorkerLost):  # recorded, not cached: the next run tries again
                    entry = {"status": "failed", "error": str(outcome), "row": {}}
                    warnings.warn(f"{study.name}: cell {i} failed: {outcome}", RuntimeWarning, stacklevel=3)
                else:
                    entry = {k: v for k, v in outcome.items() if k != "arrays"}
                    cache.put(keys[i], entry, outcome["arrays"])
                    computed += 1
                entries[i] = entry
                if time.perf_counter() - last_write > TABLE_EVERY_SECONDS:
                    write_table()
                    last_write = time.perf_counter()
                bar.update()
                if on_cell_done is not None:
                    on_cell_done(i, entry)

            # references first, and beside them every cell that needs none (a long reference,
            # the BNN's, then keeps one worker while the others run cells); then the cells
            # that score against a reference
            target_of = {i: json.dumps(cells[i].target, sort_keys=True) for i in todo}
            waiting = [i for i in todo if target_of[i] in ref_keys]
            jobs = [(("reference", sj), run_reference, (json.loads(sj), study.reference_method, 0, reference_runs))
                    for sj in ref_todo]
            jobs += [(("cell", i), run_cell, (cells[i], None)) for i in todo if target_of[i] not in ref_keys]
            for (kind, tag), outcome in ex.run(jobs):
                if kind == "cell":
                    cell_done(tag, outcome)
                    continue
                bar.update()
                if isinstance(outcome, WorkerLost):  # its cells say the reference failed
                    warnings.warn(f"{study.name}: the reference posterior of {tag}: {outcome}", RuntimeWarning,
                                  stacklevel=2)
                elif outcome["status"] == "ok":
                    ref_cache.put(ref_todo[tag], {"status": "ok", "info": outcome["info"], "target": json.loads(tag)},
                                  {"draws": outcome["draws"]})
            ref_draws = {sj: ref_cache.arrays(k).get("draws") for sj, k in ref_keys.items()}
            jobs = []
            for i in waiting:
                if ref_draws.get(target_of[i]) is None:
                    entries[i] = {"status": "error", "error": "the reference posterior run failed", "row": {}}
                    continue
                jobs.append((i, run_cell, (cells[i], ref_draws[target_of[i]])))
            for i, outcome in ex.run(jobs):
                cell_done(i, outcome)
            bar.close()
    floors = {}
    for s, k in ref_keys.items():
        entry = ref_cache.get(k)
        if entry is not None:
            references[target_label(json.loads(s))] = entry["info"]
            draws = ref_cache.arrays(k).get("draws")
            if draws is not None:  # what 4,000 draws of the reference itself score (metrics/distances.py)
                floors[s] = noise_floor_w1(draws)
    table = write_table()
    if "target" in table and len(table):
        # the noise floor of the score at 4,000 draws: exact i.i.d. draws where a truth exists,
        # else the reference against itself (study/verdict.py reads it)
        exact = table[(table["method"] == "Exact") & (table["status"] == "ok")].groupby("target")["w1_mean"].median() \
            if "w1_mean" in table else pd.Series(dtype=float)
        spec_of = {c.labels.get("target", target_label(c.target)): json.dumps(c.target, sort_keys=True) for c in cells}
        table["noise_floor"] = table["target"].map(lambda t: exact.get(t, floors.get(spec_of.get(t), np.nan)))
        table.to_csv(table_path, index=False)
    failed = int(table["status"].isin(["error", "failed"]).sum())  # "missing" is not a failure
    return StudyRun(
        study=study,
        quick=quick,
        cells=cells,
        keys=keys,
        table=table,
        cache=cache,
        references=references,
        computed=computed,
        cached=cached,
        failed=failed,
        executor=ex.description,
        seconds=time.perf_counter() - start,
        out=out,
        reference_keys=ref_keys,
        reference_cache=ref_cache,
    )
