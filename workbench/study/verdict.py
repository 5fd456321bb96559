"""The verdict map that opens the report's index: for each target and gradient budget of the
accuracy study, the method with the smallest error among the runs whose health was good,
coloured by its family (MCMC, VI, importance and SMC).

The score is the median over seeds of the mean marginal Wasserstein-1 distance to the truth
(``w1_mean``). A run is healthy when it finished (status "ok") and its health column is "ok"
(no diagnostic flagged it, ``workbench/diagnostics.py``): an unhealthy run is not one a user
would have trusted, however close it happened to land. The exact sampler is the floor of
the scores, not a method to choose, and is left out.
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from .style import FAMILIES, FAMILY_FILLS, method_family

SCORE = "w1_mean"


def verdict_table(table: pd.DataFrame, score: str = SCORE) -> pd.DataFrame:
    """One row per (target, grad_budget): the best healthy method, its score, the runner-up and
    how many methods were healthy there. Targets in the table's order, budgets ascending."""
    need = {"target", "method", "grad_budget", "status", score}
    if not need <= set(table.columns):
        raise ValueError(f"the table needs the columns {sorted(need)}; it lacks {sorted(need - set(table.columns))}")
    health = table["health"] if "health" in table else pd.Series("ok", index=table.index)
    runs = table[(table["status"] == "ok") & table["grad_budget"].notna() & (table["method"] != "Exact")
                 & np.isfinite(table[score].astype(float))]
    # a method is healthy at a budget only if every seed's run was: one flagged seed is enough to distrust it
    healthy = (health.loc[runs.index].astype(str) == "ok").groupby([runs["target"], runs["grad_budget"], runs["method"]]).all()
    med = runs.groupby(["target", "grad_budget", "method"])[score].median()
    rows = []
    for target in dict.fromkeys(table["target"]):
        for budget in sorted(runs.loc[runs["target"] == target, "grad_budget"].unique()):
            scores = med.loc[(target, budget)]
            good = scores[healthy.loc[(target, budget)].reindex(scores.index, fill_value=False)].sort_values()
            row = {"target": target, "grad_budget": int(budget), "healthy_methods": len(good), "methods": len(scores),
                   "closest": scores.idxmin(), "closest_score": float(scores.min())}
            if len(good):
                row.update(method=good.index[0], score=float(good.iloc[0]), family=method_family(good.index[0]),
                           runner_up=good.index[1] if len(good) > 1 else "",
                           runner_up_score=float(good.iloc[1]) if len(good) > 1 else np.nan)
            else:
                row.update(method="", score=np.nan, family="", runner_up="", runner_up_score=np.nan)
            rows.append(row)
    return pd.DataFrame(rows)


def verdict_html(table: pd.DataFrame, link: str = "", score: str = SCORE) -> str:
    """The verdict map as an HTML table (targets x budgets) with a colour key; ``link`` is the
    accuracy page the map is read from."""
    verdict = verdict_table(table, score)
    if verdict.empty:
        return ""
    budgets = sorted(verdict["grad_budget"].unique())
    head = "".join(f"<th>{b:,}</th>" for b in budgets)
    body = []
    for target, g in verdict.groupby("target", sort=False):
        g = g.set_index("grad_budget")
        cells = []
        for b in budgets:
            if b not in g.index:
                cells.append("<td class='small'>not run</td>")
                continue
            r = g.loc[b]
            if not r["method"]:
                cells.append(f"<td class='small' title='{r['methods']} methods ran; none was healthy'>no healthy run</td>")
                continue
            title = f"W1 {r['score']:.3g}" + (f"; next {r['runner_up']} {r['runner_up_score']:.3g}" if r["runner_up"] else "")
            # a flagged run that landed much closer is worth knowing: the healthy winner may be poor
            flagged = (f"<br><span class='small'>closer but flagged: {html.escape(r['closest'])} {r['closest_score']:.2g}</span>"
                       if r["closest_score"] < 0.5 * r["score"] else "")
            cells.append(f"<td style='background:{FAMILY_FILLS[r['family']]}; text-align:left' title='{html.escape(title)}'>"
                         f"<b>{html.escape(r['method'])}</b> <span class='small'>{r['score']:.2g}</span>{flagged}</td>")
        body.append(f"<tr><th style='text-align:left'>{html.escape(target)}</th>{''.join(cells)}</tr>")
    key = " ".join(f"<span style='background:{FAMILY_FILLS[f]}; padding:1px 6px'>{html.escape(f)}</span>"
                   for f in FAMILIES)
    source = f" (<a href='{html.escape(link)}'>the accuracy study</a>)" if link else ""
    return (
        "<h2>Verdict map</h2>"
        f"<p>The most accurate method whose runs were healthy, per target and gradient budget{source}: "
        "smallest mean marginal Wasserstein-1 distance to the truth (the number; median over seeds), "
        "among the runs no diagnostic flagged; where a flagged run landed at less than half that distance, "
        f"it is named below. Families: {key}.</p>"
        f"<div class='scroll'><table><tr><th>target \\ gradients</th>{head}</tr>{''.join(body)}</table></div>"
    )


def verdict_headline(table: pd.DataFrame, score: str = SCORE) -> str:
    """One sentence from the map at the largest budget: which methods won how many targets."""
    verdict = verdict_table(table, score)
    if verdict.empty:
        return ""
    top = verdict[verdict["grad_budget"] == verdict["grad_budget"].max()]
    wins = top.loc[top["method"] != "", "method"].value_counts()
    none = int((top["method"] == "").sum())
    text = (f"At {int(top['grad_budget'].iloc[0]):,} gradients the most accurate healthy method is "
            + ", ".join(f"{m} on {n}" for m, n in wins.items()) + f" of {len(top)} targets")
    return text + (f"; on {none} no run was healthy." if none else ".")
