"""Write ``docs/benchmarks.md`` from the CSVs under ``docs/benchmarks/``.

The numbers live in the CSVs, each row with the date it was measured, the machine and the
command that measured it (``benchmarks/record.py``); this page says what each table means and
shows the rows as they are. Run it after a benchmark wrote its CSV:

    python scripts/benchmarks_page.py           # rewrite docs/benchmarks.md
    python scripts/benchmarks_page.py --check   # exit 1 if the page is not what the CSVs give
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
CSV_DIR = ROOT / "docs" / "benchmarks"
PAGE = ROOT / "docs" / "benchmarks.md"
PROVENANCE = ("measured", "machine", "command")

INTRO = """\
# Benchmarks: the numbers behind the defaults, and the commands that reproduce them

What this page is for: the speed and accuracy measurements that chose the defaults, each table
with what it means and the command that re-measures it. This page is generated from the CSVs
under `docs/benchmarks/` by `python scripts/benchmarks_page.py`; edit the CSVs (by re-running
their command) and regenerate, never the page.

{commands}

Ratios are measured in one run on one machine (ours / theirs, auto / diag), so the machine's
load cancels; absolute seconds are the machine's and vary by tens of percent between runs on a
shared machine. A seed's draws depend on the machine's BLAS kernels too: OpenBLAS chooses them
by CPU, each sums in an order of its own, and an adaptive sampler turns that into other draws.
Pass rates over many seeds agree between kernels within their seed noise, but a row of 20 seeds
can differ by several runs. The machine column names the kernels; a row that does not was
measured before they were recorded (on OpenBLAS's SkylakeX kernels).
"""

# Every benchmark: (command, what it measures, where the numbers go).
COMMANDS = [
    ("python benchmarks/mcmc_speed.py",
     "ESS per second, ESS per 1,000 gradients and the overhead ratio (wall / (gradients x one gradient's time)) of "
     "HMC and NUTS; `--nutpie` against nutpie in its own venv; `--banana` NUTS's settings on the banana; "
     "`--whole-call` the whole call against nutpie's",
     "printed; `nuts_vs_nutpie.csv`, `banana_nuts.csv`, `whole_call_vs_nutpie.csv`"),
    ("python benchmarks/nuts_geometry.py --flow [--nutpie]",
     "`NUTS(metric=\"flow\")` on curved and hierarchical posteriors beside diag-NUTS and nutpie's flow", "`flow_nuts.csv`"),
    ("python benchmarks/nuts_geometry.py --auto",
     "`metric=\"auto\"` against `\"diag\"`: the measure that decides NUTS's default", "`nuts_auto.csv`"),
    ("python benchmarks/noncentring.py",
     "`NUTS()` on centred hierarchies written in PyMC: the model as written, its non-centred form offered to "
     "`metric=\"auto\"`, and the form written by hand", "`noncentring.csv`"),
    ("python benchmarks/nuts_geometry.py --auto --mams",
     "`MAMS(metric=\"auto\")` against `\"diag\"`: the measure that decides MAMS's default", "`mams_auto.csv`"),
    ("python benchmarks/mams_step.py --record",
     "MAMS (its step by dual averaging toward acceptance 0.9, no cap at L) against NUTS's default by the gradients "
     "to b2_max < 0.01; `--metric diag --nuts-metric diag` both on the diagonal metric", "`mams_vs_nuts.csv`"),
    ("python benchmarks/vi_speed.py",
     "the VI methods' speed; the nn4post paper's 3-peak benchmark at N_d = 100, 1,000 and 10,000; batch-and-match "
     "against FullRankVI", "printed"),
    ("python benchmarks/pathfinder_benchmark.py",
     "Pathfinder and FullRankVI against NUTS; how often Pathfinder's signals fire on runs far off and close", "printed"),
    ("python benchmarks/pymc_overhead.py",
     "PyMC models' compiled gradients raw, wrapped, and against the same density written by hand", "printed"),
    ("python benchmarks/dadvi_regressions.py",
     "DADVI on regressions, an AR(2) and a GARCH(1, 1) series against references", "printed"),
    ("python scripts/time_fresh_clone.py [--record]",
     "`make report` and `make test` on a fresh clone, venv and compiled kernels included", "printed; `fresh_clone.csv`"),
]

# One entry per CSV, in page order: its title and what a reader should take from it.
SECTIONS = {
    "fresh_clone": (
        "A fresh clone: the two commands",
        "Wall time of `make report` and `make test` on a fresh clone (building the venv and "
        "compiling every Numba kernel included), the latest row per command. The README quotes "
        "these rounded.",
    ),
    "nuts_auto": (
        "NUTS's default metric: `\"auto\"` against `\"diag\"`",
        "Min bulk ESS per 1,000 gradients (warmup and the fits' gradients included) of each, their "
        "ratio, which metric `\"auto\"` chose over the seeds, and how many runs of each pass "
        "posteriordb's standard (R-hat < 1.01, bulk and tail ESS >= 400, no divergences). A default "
        "must pass at least as often as what it replaces: the rows where `diag_passing` exceeds "
        "`auto_passing` are where it does not yet.",
    ),
    "noncentring": (
        "Centred hierarchies in PyMC: the non-centred form `\"auto\"` may choose",
        "`NUTS()` on centred eight schools, Neal's 100-d funnel, a hierarchy whose data pin each group down "
        "(where the centred form is the better one) and an unbalanced one (4 groups of 100 observations, 4 of "
        "one; `by_hand` there is the large groups centred and the small ones non-centred), written in PyMC: "
        "`as_written` samples the "
        "model as written (`from_pymc(..., noncentre=False)`), `offered` lets `metric=\"auto\"` choose the "
        "non-centred form by its first draws (the default; `sampled` says what it chose), `by_hand` is the "
        "non-centred model written by hand. ESS is measured on the centred model's coordinates for all three, "
        "every gradient counted (`offered` pays a first phase on the model as written before it chooses).",
    ),
    "mams_auto": (
        "MAMS's metric: `\"auto\"` against `\"diag\"`",
        "The same measures as NUTS's table above, for MAMS (whose `\"auto\"` whitens the posterior by the "
        "first draws' covariance where NUTS's would take the low-rank metric: `dense` in `chosen`). `\"auto\"` is "
        "MAMS's default while no row has `auto_passing` below `diag_passing` or a ratio below 0.95.",
    ),
    "nuts_vs_nutpie": (
        "NUTS against nutpie, same density",
        "ESS per 1,000 gradients, warmup included, of our NUTS at `metric` and nutpie at "
        "`nutpie_metric`, nutpie run in its own venv on the same Numba density; `ratio` is ours / "
        "nutpie's (median over seeds, with a 90% bootstrap interval over seeds). The `auto` rows "
        "against nutpie's `low_rank` set our default beside nutpie's best adaptation.",
    ),
    "whole_call_vs_nutpie": (
        "The whole call on gauss100, as a user times it",
        "`NUTS().run()` and `nutpie.sample` at their defaults, kernels compiled beforehand; our "
        "health check (R-hat, ESS of every coordinate) is computed when first read, so it is shown "
        "apart.",
    ),
    "flow_nuts": (
        "`NUTS(metric=\"flow\")` on curved and hierarchical posteriors",
        "ESS per 1,000 gradients (warmup and the fits included), divergences, runs passing the "
        "standard and E-BFMI, for the flow, the diagonal metric and nutpie's flow where it was run.",
    ),
    "mams_vs_nuts": (
        "MAMS against NUTS, by b^2",
        "Gradients (tuning included) after which the worst coordinate's b^2 stays below 0.01, median "
        "over seeds, a seed that did not cross within the budget counted as infinitely many (blank "
        "when most did not); `ratio` is MAMS / NUTS, `*_crossed` how many seeds crossed, "
        "`mams_accept` MAMS's realised acceptance (its step is tuned toward 0.9). `mams` and `nuts` name the "
        "samplers: the defaults against each other, and both on the diagonal metric (the step criterion "
        "alone, the preconditioner held the same).",
    ),
    "banana_nuts": (
        "NUTS's settings on the banana",
        "ESS per draw over long runs, and how many short runs (4 x 1,000 draws) pass R-hat <= 1.01 "
        "and ESS >= 400, for each setting: the evidence behind raising the target acceptance on "
        "warmup divergences.",
    ),
}


def markdown_table(frame: pd.DataFrame) -> str:
    """A GitHub-markdown table of ``frame``, cells as written in the CSV."""
    head = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "---|" * len(frame.columns)
    rows = ["| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *rows])


def provenance(frame: pd.DataFrame) -> str:
    """One sentence: when, where and how the rows were measured."""
    parts = []
    for command, rows in frame.groupby("command", sort=False):
        dates = sorted(set(rows["measured"]) - {""})
        when = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}" if dates else "undated"
        machines = ", ".join(sorted(set(rows["machine"])))
        parts.append(f"`{command}`, {when}, on {machines}")
    return "Measured by " + "; ".join(parts) + "."


def section(name: str, frame: pd.DataFrame) -> str:
    title, meaning = SECTIONS.get(name, (name.replace("_", " "), ""))
    missing = [c for c in PROVENANCE if c not in frame.columns]
    if missing:
        raise ValueError(f"docs/benchmarks/{name}.csv lacks the columns {missing}: every row says when, "
                         "where and how it was measured (benchmarks/record.py)")
    if name == "fresh_clone":  # the latest row of each timed command
        frame = frame.sort_values("measured", kind="stable").groupby("what", sort=False).tail(1)
    shown = frame[[c for c in frame.columns if c not in PROVENANCE]]
    body = [f"## {title}", "", meaning, "", provenance(frame), "", markdown_table(shown)]
    return "\n".join(line for line in body if line is not None)


def render() -> str:
    frames = {p.stem: pd.read_csv(p, dtype=str, keep_default_na=False) for p in sorted(CSV_DIR.glob("*.csv"))}
    order = [n for n in SECTIONS if n in frames] + sorted(n for n in frames if n not in SECTIONS)
    commands = markdown_table(pd.DataFrame([(f"`{c}`", what, where) for c, what, where in COMMANDS],
                                           columns=["command", "what it measures", "where the numbers go"]))
    return INTRO.format(commands=commands) + "\n" + "\n\n".join(section(n, frames[n]) for n in order) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/benchmarks.md is not what the CSVs give")
    args = parser.parse_args(argv)
    page = render()
    if args.check:
        if PAGE.read_text() != page:
            print("docs/benchmarks.md is out of date: run python scripts/benchmarks_page.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(page)
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
