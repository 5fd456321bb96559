"""Static HTML reports: ``reports/quick/<study>/index.html`` and ``reports/full/<study>/index.html``
(figures as PNG files beside it, tables, the finding, settings, seeds, versions and how to
re-run) and ``reports/index.html`` linking every study's pages with their one-line finding
and how many of their cells exist. Opening the files from disk works.
"""

from __future__ import annotations

import datetime as _dt
import html
import json
import platform
import re
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pandas as pd

from ..references import REFERENCE_RUNS
from .cells import BUDGET_TOO_SMALL, target_label
from .runner import page_folder
from .verdict import verdict_html

PACKAGES = ("workbench", "numba", "numpy", "scipy", "arviz", "matplotlib", "pandas")

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 2em auto; padding: 0 1em; color: #222; }
h1 { margin-bottom: 0.2em; } .finding { font-size: 1.15em; background: #eef5ff; padding: 0.8em; border-radius: 6px; }
.scroll { overflow-x: auto; margin: 0.5em 0 1.5em; } table { border-collapse: collapse; font-size: 0.85em; }
.warn { background: #fff4e5; border-left: 4px solid #e69f00; padding: 0.6em 0.8em; }
th, td { border: 1px solid #ccc; padding: 3px 4px; text-align: right; } th { background: #f3f3f3; }
caption { caption-side: bottom; text-align: left; color: #666; padding-top: 0.3em; } tbody th { text-align: left; }
figure { margin: 1em 0 2em; } figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { color: #444; font-size: 0.95em; } code, pre { background: #f6f6f6; padding: 2px 4px; }
.small { color: #666; font-size: 0.85em; } .headline { font-size: 1.3em; font-weight: 600; margin: 0.4em 0; }
@media (max-width: 900px) { body { padding: 0 0.5em; } table { font-size: 0.8em; } }
"""


@dataclass
class Figure:
    """A PNG written into the study's report folder, with its caption."""

    file: str
    caption: str


@dataclass
class Page:
    """What a study's ``report(run, folder)`` returns."""

    finding: str
    figures: list[Figure] = field(default_factory=list)
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    headline: str = ""  # the answer in one sentence, for the index (default: the finding's first clause)


def first_clause(text: str, limit: int = 220) -> str:
    """The finding up to its first sentence or clause end, at most ``limit`` characters."""
    cut = min((i for i in (text.find(". "), text.find("; ")) if i > 0), default=len(text))
    out = text[:cut].rstrip(".")
    if len(out) > limit:
        out = out[:limit].rsplit(" ", 1)[0] + " …"
    return out + "."


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


REFERENCE_COLUMNS = ("target", "passes", "form", "shipped", "runs", "divergences", "r_hat_max", "ess_bulk_min",
                     "ess_tail_min", "bfmi_min", "cross_check_worst", "cross_check_mcse")


TURNED_ROWS, TURNED_COLUMNS = 3, 6
"""A table of at most this many rows and more than this many columns is shown turned."""


def _table_html(frame: pd.DataFrame) -> str:
    """A table in a horizontally scrolling box (wide tables do not run off the page), shaped to
    show what it holds on a narrow screen: a name may break after its underscores
    (``ess_bulk_min``, ``target_accept=0.95``), so that it does not widen its column; a few rows of many fields
    (a reference's diagnostics) are turned, one column per row; a value the same in every row is
    said once, in the caption."""
    same = _same_in_every_row(frame)
    frame = frame.drop(columns=list(same))
    if len(frame) <= TURNED_ROWS and frame.shape[1] > TURNED_COLUMNS:  # one column per row, one row per field
        turned = frame.map(_cell_text).set_index(frame.columns[0]).T
        table = turned.to_html(border=0, escape=True)
    else:
        table = frame.to_html(index=False, float_format=lambda v: f"{v:.4g}", na_rep="–", border=0, escape=True)
    table = re.sub(r"<(th|td)>([^<]*)</(th|td)>",
                   lambda m: f"<{m[1]}>" + m[2].replace("_", "_<wbr>") + f"</{m[3]}>", table)
    if same:  # a caption, under the table
        caption = "; ".join(f"{html.escape(str(k))} {html.escape(_cell_text(v))}" for k, v in same.items())
        table = re.sub(r"<table[^>]*>", lambda m: f"{m[0]}<caption>In every row: {caption}.</caption>", table, count=1)
    return f"<div class='scroll'>{table}</div>"


def _cell_text(value) -> str:
    """A table cell's value as the table shows it (4 significant digits; a missing one as a dash)."""
    if pd.api.types.is_scalar(value) and pd.isna(value):
        return "–"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _same_in_every_row(frame: pd.DataFrame) -> dict:
    """The columns of a table of three or more rows whose value is the same in every row (a
    benchmark's date, machine and command; a quick grid's one seed): said once under the table,
    not repeated down a column that widens it. At least two columns stay in the table."""
    if len(frame) < 3:
        return {}
    same = {c: frame[c].iloc[0] for c in frame.columns if frame[c].astype(str).nunique() == 1}
    if len(frame.columns) - len(same) < 2:
        return {}
    return same


def text_html(text: str) -> str:
    """Escaped text with `code` spans shown as code (findings and notes are written in Markdown's
    backticks)."""
    return re.sub(r"``?([^`]+)``?", r"<code>\1</code>", html.escape(text))


def _setting_text(value) -> str:
    """A setting as a reader wants it: floats to 4 significant digits, long lists shortened."""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(v, (list, tuple)) for v in value):  # a matrix: its shape says enough
            return f"({len(value)} x {len(value[0])} array)"
        items = [_setting_text(v) for v in value]
        return "[" + ", ".join(items if len(items) <= 6 else items[:3] + ["…"] + items[-2:]) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_setting_text(v)}" for k, v in value.items()) + "}"
    return str(value)


def refused_text(run) -> str:
    """", N refused a budget too small for the method" when any did (SMC below its ladder's cost)."""
    n = cell_counts(run.table)["budget_too_small"]
    return f", {n} refused a budget too small for the method" if n else ""


def cell_counts(table: pd.DataFrame) -> dict:
    """How many cells of a study's table ran, failed and were never run."""
    status = table["status"]
    return {"cells": int(len(table)), "ok": int((status == "ok").sum()),
            "failed": int(status.isin(["error", "failed"]).sum()), "missing": int((status == "missing").sum()),
            "budget_too_small": int((status == BUDGET_TOO_SMALL).sum())}


def _budgets_text(budgets: pd.Series) -> str:
    """"10,000, 100,000"; a method without a gradient budget (Laplace, Exact): "none"."""
    values = sorted({int(v) for v in budgets if v is not None and v == v and v})
    return ", ".join(f"{v:,}" for v in values) or "none"


def grid_summary(run) -> pd.DataFrame:
    """Targets x methods of the grid with their seeds and budgets (the settings of the page)."""
    rows = []
    for cell in run.cells:
        rows.append(
            {
                "target": cell.labels.get("target", target_label(cell.target)),
                "method": cell.labels.get("method", cell.method["method"]),
                "settings": ", ".join(f"{k}={_setting_text(v)}" for k, v in cell.method.items()
                                      if k not in ("method", "progress")),
                "seed": cell.seed,
                "grad_budget": cell.grad_budget,
            }
        )
    frame = pd.DataFrame(rows)
    return (
        frame.groupby(["target", "method", "settings"], sort=False)
        .agg(seeds=("seed", lambda s: ", ".join(str(v) for v in sorted(set(s)))),
             budgets=("grad_budget", _budgets_text))
        .reset_index()
    )


def render_study(run, page: Page) -> Path:
    """Write ``<out>/<quick|full>/<study>/index.html`` and ``summary.json``; return the HTML path."""
    study = run.study
    folder = page_folder(run.out, study.name, run.quick)
    folder.mkdir(parents=True, exist_ok=True)
    for fig in page.figures:
        if not (folder / fig.file).exists():
            raise FileNotFoundError(f"study {study.name!r}: figure {fig.file} was not written")
    versions = package_versions()
    mode = "quick" if run.quick else "full"
    rerun = f"python studies/{study.name}.py{' --quick' if run.quick else ''}"
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(study.title)}</title><style>{STYLE}</style></head><body>",
        "<p class='small'><a href='../../index.html'>&larr; all studies</a></p>",
        f"<h1>{html.escape(study.title)} <span class='small'>({mode} grid)</span></h1>",
        *([f"<p class='headline'>{text_html(page.headline)}</p>"] if page.headline else []),
        f"<p class='finding'><b>Finding.</b> {text_html(page.finding)}</p>",
    ]
    counts = cell_counts(run.table)
    if counts["missing"]:
        parts.append(f"<p class='warn'>This page is incomplete: {counts['missing']} of {counts['cells']} cells of the "
                     f"{mode} grid have not run yet; figures and tables show the {counts['ok']} that did.</p>")
    if study.description:
        parts.append(f"<p>{text_html(study.description)}</p>")
    for note in page.notes:
        parts.append(f"<p>{text_html(note)}</p>")
    for fig in page.figures:
        parts.append(
            f"<figure><img src='{html.escape(fig.file)}' alt='{html.escape(fig.caption)}'>"
            f"<figcaption>{text_html(fig.caption)}</figcaption></figure>"
        )
    for title, frame in page.tables:
        parts.append(f"<h2>{html.escape(title)}</h2>{_table_html(frame)}")
    bad = run.table[run.table["status"] != "ok"]
    if len(bad):
        parts.append("<h2>Cells that did not run: failed, refused a budget too small for the method, "
                     "or not computed yet</h2>")
        parts.append(_table_html(bad[["target", "method", "seed", "grad_budget", "status", "error"]]))
    if run.references:
        ref_method = study.reference_method
        parts.append("<h2>Reference posteriors</h2><p>These targets have no closed-form truth; a long "
                     f"{html.escape(ref_method['method'])} run ({ref_method.get('chains', 4)} chains from spread starts) "
                     "stands in for it, checked against posteriordb's standard: R-hat &lt; 1.01, bulk and tail ESS "
                     "&ge; 400 for every parameter (for a BNN, for its outputs: its weights are not identified), no "
                     "divergences, E-BFMI &gt; 0.2, and cross-checked by an independent run (other seeds, a smaller "
                     "step): a mean or sd that disagrees by more than 4 Monte Carlo standard errors fails it. "
                     "The bundled posteriors' references ship with the package (the <i>shipped</i> column), built "
                     "once up posteriordb's ladder of remedies: the target's own form, then its non-centred form "
                     "where it has one (mapped back: the <i>form</i> column), then 10 chains with a longer warmup "
                     "and target_accept raised to 0.95, 0.99, 0.999 while it diverges. "
                     + ("In the quick grid a reference that is not shipped is run once and, when it fails, said to "
                        "fail (the full grid climbs the ladder). " if run.quick else
                        f"In the full grid a failing reference climbs that ladder, up to {REFERENCE_RUNS} runs. ")
                     + "A ladder stops early when R-hat says the chains sit in different modes.</p>")
        for t, info in run.references.items():
            if not info.get("passes", False):
                parts.append(f"<p class='warn'><b>{html.escape(t)} has no trustworthy reference</b>: "
                             f"{html.escape(info.get('why_not', 'not checked'))}. Every score on this target is "
                             "measured against it (the table's truth column says so): read them as indicative only."
                             "</p>")
        ref = pd.DataFrame([{"target": t, **{k: v for k, v in info.items()
                                             if k not in ("method", "why_not", "cross_check_method", "remedy")}}
                            for t, info in run.references.items()])
        # the columns the text above names first, then the diagnostics behind "passes"; a shipped
        # reference by its file (its digest keys the cache, and says nothing to a reader)
        if "shipped" in ref:
            ref["shipped"] = ref["shipped"].fillna("").astype(str).str.split("#").str[0]
        first = [c for c in REFERENCE_COLUMNS if c in ref]
        parts.append(_table_html(ref[first + [c for c in ref if c not in first]]))
    parts.append("<h2>Settings</h2>" + _table_html(grid_summary(run)))
    parts.append(
        "<h2>Provenance</h2><p>"
        f"Mode: <b>{mode}</b>. {len(run.cells)} cells ({run.computed} computed in this run, {run.cached} from the cache, "
        f"{run.failed} failed{refused_text(run)}), executor: {html.escape(run.executor)}, {run.seconds:.0f} s. "
        f"Rendered {_dt.datetime.now().isoformat(timespec='seconds')}.</p>"
        f"<p>Versions: {html.escape(', '.join(f'{k} {v}' for k, v in versions.items()))}.</p>"
        f"<p>Re-run: <code>{rerun}</code> (or <code>workbench study {study.name}{' --quick' if run.quick else ''}</code>); "
        f"add <code>--fresh</code> to ignore the cache, <code>--executor dask</code> or "
        f"<code>--scheduler tcp://host:8786</code> for Dask. Re-render without running: "
        f"<code>workbench report {study.name}</code>. The full table: <a href='table.csv'>table.csv</a>.</p>"
    )
    parts.append("</body></html>")
    path = folder / "index.html"
    path.write_text("\n".join(parts), encoding="utf-8")
    summary = {
        "name": study.name,
        "title": study.title,
        "finding": page.finding,
        "headline": page.headline or first_clause(page.finding),
        "mode": mode,
        **counts,
        "seconds": round(float(run.seconds), 1),  # this run's wall time (cached cells cost nothing)
        "rendered": _dt.datetime.now().isoformat(timespec="seconds"),
    }
    (folder / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    return path


def _verdict_section(out: Path, studies: dict) -> str:
    """The verdict map from the accuracy study's table: the full grid's when it is complete,
    else the quick grid's ("" when neither has run)."""
    pages = studies.get("accuracy", {})
    complete_full = "full" in pages and not pages["full"].get("missing")
    mode = "full" if complete_full else "quick" if "quick" in pages else None
    path = out / mode / "accuracy" / "table.csv" if mode else None
    if path is None or not path.exists():
        return ""
    return verdict_html(pd.read_csv(path), link=f"{mode}/accuracy/index.html")


def render_index(out: str | Path = "reports") -> Path:
    """``<out>/index.html``: every study with a rendered page, its title and finding."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    studies: dict[str, dict] = {}  # name -> {"quick": summary, "full": summary}
    for mode in ("quick", "full"):
        for path in sorted((out / mode).glob("*/summary.json")):
            try:
                summary = json.loads(path.read_text(encoding="utf-8"))
            except json.JSONDecodeError:
                continue
            studies.setdefault(summary["name"], {})[mode] = summary

    def status(s: dict) -> str:
        text = f"{s['cells']} cells: {s['ok']} ran"
        if s.get("failed"):
            text += f", {s['failed']} failed"
        if s.get("budget_too_small"):  # refused before starting: not a failure, but not a result either
            text += f", {s['budget_too_small']} refused a budget too small"
        if s.get("missing"):
            text += f", <b>{s['missing']} not run yet</b>"
        if "seconds" in s:
            text += f"; {s['seconds']:.0f} s"
        return text

    items = []
    for name, pages in studies.items():
        complete_full = "full" in pages and not pages["full"].get("missing")
        first = pages["full"] if complete_full or "quick" not in pages else pages["quick"]  # the finding shown
        links = " · ".join(f"<a href='{mode}/{html.escape(name)}/index.html'>{mode}</a> "
                           f"<span class='small'>({status(pages[mode])})</span>" for mode in ("quick", "full") if mode in pages)
        headline = first.get("headline") or first_clause(first["finding"])
        items.append(f"<li><b>{html.escape(first['title'])}</b>: {links}<br>{text_html(headline)}"
                     f"<details><summary class='small'>the whole finding</summary>{text_html(first['finding'])}"
                     "</details></li>")
    items = "\n".join(items)
    page = (
        "<!doctype html><html><head><meta charset='utf-8'><title>workbench reports</title>"
        f"<style>{STYLE} li {{ margin-bottom: 1em; }}</style></head><body>"
        "<h1>workbench reports</h1><p>Bayesian inference methods side by side on shared targets: "
        "how accurate each is for how much work.</p>"
        f"{_verdict_section(out, studies)}<h2>Studies</h2>"
        f"<ul>{items}</ul><p class='small'>Versions: "
        f"{html.escape(', '.join(f'{k} {v}' for k, v in package_versions().items()))}</p></body></html>"
    )
    path = out / "index.html"
    path.write_text(page, encoding="utf-8")
    return path
