"""The ``workbench`` command (also ``python -m workbench``).

    workbench list                                  targets, methods and studies
    workbench study NAME [--quick] [--executor local|serial|dask] [--scheduler tcp://...] [--out reports/]
    workbench report NAME [--quick] [--out reports/]   re-render a page from the cache, running nothing
    workbench report --all                          re-render every study that has a cache, and the index
"""

from __future__ import annotations

import argparse
import sys

from . import targets
from .methods import available as methods_available


def _parser() -> argparse.ArgumentParser:
    from .study.main import add_run_arguments

    parser = argparse.ArgumentParser(prog="workbench", description="Bayesian inference methods side by side.")
    sub = parser.add_subparsers(dest="command", metavar="{list,study,report}")
    sub.required = True
    sub.add_parser("list", help="targets, methods and studies")
    p = sub.add_parser("study", help="run (or resume) a study and write its report")
    p.add_argument("name")
    add_run_arguments(p)
    p = sub.add_parser("report", help="re-render a study's report from its cache (runs nothing)")
    p.add_argument("name", nargs="?")
    p.add_argument("--all", action="store_true", help="every study")
    p.add_argument("--quick", action="store_true", help="the quick grid's cells")
    p.add_argument("--out", default="reports")
    return parser


def _list() -> int:
    from .study import available_studies

    print("Targets (wb.targets):")
    for name, text in targets.available().items():
        print(f"  {name:<22}{text}")
    print("\nMethods (wb.methods):")
    print("  " + ", ".join(methods_available()))
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
    from .study.main import check_run_arguments, report_study, run_and_report

    try:
        if args.command == "study":
            check_run_arguments(parser, args)
            return report_study(load_study(args.name), args)
        if args.all == (args.name is not None):
            parser.error("report needs a study NAME or --all")
        names = list(available_studies()) if args.all else [args.name]
        for name in names:
            run, path = run_and_report(load_study(name), quick=args.quick, out=args.out, run_missing=False)
            missing = int((run.table["status"] == "missing").sum())
            note = f" ({missing} cells not computed yet: run `workbench study {name}`)" if missing else ""
            print(f"{name}: re-rendered {path}{note}")
        return 0
    except (ValueError, RuntimeError, OSError) as exc:
        print(f"workbench: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
