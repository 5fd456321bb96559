"""The ``workbench`` command (also ``python -m workbench``).

    workbench list                                  targets, methods and studies
    workbench study NAME [NAME ...] [--quick] [--executor local|serial|threads|dask] [--scheduler tcp://...] [--out reports/]
    workbench report NAME [--quick] [--out reports/]   re-render a page from the cache, running nothing
    workbench report --all                          re-render every study that has a cache, and the index
    workbench compare TARGET [--quick] [--methods NUTS,...] [--budgets 10000,100000] [--seeds N] [--calibrate N]
        every method on one posterior (a built-in target, a bundled posterior, path/to/file.py:NAME)
    workbench calibrate MODEL [--quick] [--methods NUTS,...] [--budgets 10000] [--seeds N] [--executor ...]
        simulation-based calibration of every method on a model (path/to/file.py:NAME, a PyMC model or a
        built-in model with a generative form): no reference posterior needed
"""

from __future__ import annotations

import argparse
import sys


def _parser() -> argparse.ArgumentParser:
    from .study.options import add_arguments

    parser = argparse.ArgumentParser(prog="workbench", description="Bayesian inference methods side by side.")
    sub = parser.add_subparsers(dest="command", metavar="{list,study,report,compare,calibrate}")
    sub.required = True
    sub.add_parser("list", help="targets, methods and studies")
    p = sub.add_parser("study", help="run (or resume) studies and write their reports (one pool for all)")
    p.add_argument("name", nargs="+")
    add_arguments(p)
    p = sub.add_parser("report", help="re-render a study's report from its cache (runs nothing)")
    p.add_argument("name", nargs="?")
    p.add_argument("--all", action="store_true", help="every study")
    p.add_argument("--quick", action="store_true", help="the quick grid's cells")
    p.add_argument("--out", default="reports")
    p = sub.add_parser("compare", help="every method on one posterior at equal gradient budgets: a report page and a verdict")
    p.add_argument("target", help="a built-in target, a bundled posterior (workbench list), or path/to/file.py:NAME")
    p.add_argument("--backend", choices=("numba", "pymc"), default="numba", help="a bundled posterior's form")
    p.add_argument("--budgets", type=_budgets, default=None, metavar="N,N,...",
                   help="gradient budgets per run (default 10000,100000,1000000; --quick: 10000,100000)")
    p.add_argument("--seeds", type=int, default=None, help="repetitions per cell (default 2; --quick: 1)")
    p.add_argument("--methods", type=_methods, default=None, metavar="NAME,NAME,...",
                   help="the methods to run (default: every applicable one), e.g. NUTS,MeanFieldVI,Laplace")
    p.add_argument("--calibrate", type=int, default=0, metavar="N",
                   help="also calibrate the methods on N data sets simulated from the model (no reference needed)")
    add_arguments(p)
    p = sub.add_parser("calibrate", help="simulation-based calibration of every method on a model (no reference)")
    p.add_argument("target", help="path/to/file.py:NAME (a PyMC model), a bundled posterior, or a built-in model")
    p.add_argument("--backend", choices=("numba", "pymc"), default="numba", help="a bundled posterior's form")
    p.add_argument("--methods", type=_methods, default=None, metavar="NAME,NAME,...",
                   help="the methods to calibrate (default: every applicable one)")
    p.add_argument("--budgets", type=_budgets, default=None, metavar="N[,N,...]",
                   help="gradient evaluations per fit (default 10000; several: one calibration each)")
    p.add_argument("--seeds", "--sims", dest="sims", type=int, default=None, metavar="N",
                   help="simulated data sets (default 200; --quick: 100)")
    p.add_argument("--seed", type=int, default=0, help="the simulations' random stream (default 0)")
    p.add_argument("--level", type=float, default=0.01, help="family-wise level of the flags (default 0.01)")
    add_arguments(p)
    return parser


def _methods(text: str) -> list[str]:
    names = [v.strip() for v in text.split(",") if v.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"methods are names separated by commas, e.g. NUTS,MeanFieldVI; got {text!r}")
    return names


def _budgets(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v.replace("_", "")) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"budgets are integers separated by commas, e.g. 10000,100000; got {text!r}") from None
    if not values or min(values) < 100:
        raise argparse.ArgumentTypeError(f"budgets must be integers >= 100, got {text!r}")
    return values


def _list() -> int:
    from . import targets
    from .methods import available as methods_available
    from .study import available_studies

    print("Targets (wb.targets):")
    for name, text in targets.available().items():
        print(f"  {name:<22}{text}")
    print("\nMethods (wb.methods):")
    print("  " + ", ".join(methods_available()))
    from .targets import posteriors

    print("\nBundled posteriors (workbench compare NAME; wb.posteriors.load(NAME)):")
    bundled = posteriors.available()
    width = max(map(len, bundled)) + 2
    for name, text in bundled.items():
        print(f"  {name:<{width}}{text}")
    print("\nStudies (workbench study NAME, or python studies/NAME.py):")
    for name, text in available_studies().items():
        print(f"  {name:<22}{text}")
    return 0


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "list":
        return _list()
    from .study import available_studies, load_study
    from .study.main import report_studies, report_study, run_and_report
    from .study.options import check_arguments

    try:
        if args.command == "compare":
            return _compare(parser, args)
        if args.command == "calibrate":
            return _calibrate(parser, args)
        if args.command == "study":
            check_arguments(parser, args)
            studies = [load_study(name) for name in args.name]  # every name checked before any runs
            return report_study(studies[0], args) if len(studies) == 1 else report_studies(studies, args)
        if args.all == (args.name is not None):
            parser.error("report needs a study NAME or --all")
        names = list(available_studies()) if args.all else [args.name]
        for name in names:
            run, path = run_and_report(load_study(name), quick=args.quick, out=args.out, run_missing=False)
            missing = int((run.table["status"] == "missing").sum())
            note = f" ({missing} cells not computed yet: run `workbench study {name}`)" if missing else ""
            print(f"{name}: re-rendered {path}{note}")
        return 0
    except ImportError as exc:  # an optional extra (PyMC) is missing: the message says how to install it
        print(f"workbench: error: {exc}", file=sys.stderr)
        return 2
    except (ValueError, RuntimeError, OSError) as exc:
        print(f"workbench: error: {exc}", file=sys.stderr)
        return 2


def _compare(parser, args) -> int:
    from .comparison import compare
    from .study.options import RunOptions, check_arguments

    check_arguments(parser, args)
    if args.seeds is not None and args.seeds < 1:
        parser.error(f"--seeds must be >= 1, got {args.seeds}")
    if args.calibrate and args.calibrate < 10:
        parser.error(f"--calibrate needs at least 10 simulations, got {args.calibrate}")
    result = compare(args.target, backend=args.backend, budgets=args.budgets, seeds=args.seeds,
                     methods=args.methods, calibrate=args.calibrate or None, options=RunOptions.from_args(args))
    run = result.run
    print(f"{result.target.name}: {len(run.cells)} runs ({run.computed} computed, {run.cached} cached, "
          f"{run.failed} failed) in {run.seconds:.0f} s -> {result.page}")
    print(result.recommendation)
    return 0


def _calibrate(parser, args) -> int:
    from .calibration import calibrate
    from .study.options import RunOptions, check_arguments

    check_arguments(parser, args)
    if args.sims is not None and args.sims < 10:
        parser.error(f"--seeds (simulated data sets) must be >= 10, got {args.sims}")
    if not 0.0 < args.level < 1.0:
        parser.error(f"--level must lie in (0, 1), got {args.level}")
    for budget in args.budgets or (None,):
        result = calibrate(args.target, methods=args.methods, n_sims=args.sims, grad_budget=budget, seed=args.seed,
                           options=RunOptions.from_args(args), level=float(args.level), backend=args.backend)
        run = result.run
        print(f"{result.target.name}: {len(run.cells)} fits ({run.computed} computed, {run.cached} cached, "
              f"{run.failed} failed) in {run.seconds:.0f} s -> {result.page}")
        print(result.finding)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
