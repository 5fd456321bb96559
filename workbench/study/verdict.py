"""The verdict map that opens the report's index: for each target and gradient budget of the
accuracy study, the method with the smallest error among the runs whose health was good,
coloured by its family (MCMC, VI, importance and SMC), when it is accurate and ahead of the
next by more than the noise.

The score is the median over seeds of the mean marginal Wasserstein-1 distance to the truth
(``w1_mean``). A run is healthy when it finished (status "ok") and its health column is "ok"
(no diagnostic flagged it, ``workbench/diagnostics.py``): an unhealthy run is not one a user
would have trusted, however close it happened to land. The exact sampler is the floor of
the scores, not a method to choose, and is left out.

A method is named only when

- its error is at most ``ACCURATE_W1`` posterior sds: else the cell reads "no accurate healthy
  run", with the best healthy error;
- it is ahead of the next healthy method by more than the noise: the larger of the noise floor
  (what exact i.i.d. draws of 4,000 score, or the reference against itself where there is no
  truth: the table's ``noise_floor``) and the spread of the two methods' scores over seeds
  (their sds combined). Else the cell reads "level: A, B, C", every method within the noise.
"""

from __future__ import annotations

import html
import math

import numpy as np
import pandas as pd

from .style import FAMILIES, FAMILY_FILLS, method_family

SCORE = "w1_mean"
ACCURATE_W1 = 0.1
"""The largest mean marginal W1 (posterior sds) of a method the map names: 0.1 sd of error in a
marginal is what a reader would still call right."""


def noise_floors(table: pd.DataFrame, score: str = SCORE) -> pd.Series:
    """target -> the noise floor of the score: the table's ``noise_floor`` column (the study's),
    else the median score of the exact sampler's runs, else 0."""
    floors = {}
    for target, g in table.groupby("target", sort=False):
        floor = math.nan
        if "noise_floor" in g:
            values = g["noise_floor"].astype(float).dropna()
            floor = float(values.iloc[0]) if len(values) else math.nan
        if not math.isfinite(floor):
            exact = g[(g["method"] == "Exact") & (g["status"] == "ok")][score].astype(float)
            floor = float(exact.median()) if len(exact) else 0.0
        floors[target] = floor
    return pd.Series(floors, dtype=float)


def verdict_table(table: pd.DataFrame, score: str = SCORE) -> pd.DataFrame:
    """One row per (target, grad_budget): the best healthy method, its score, the runner-up,
    the methods level with it within the noise, how many methods were healthy there, and
    whether the best is accurate. Targets in the table's order, budgets ascending."""
    need = {"target", "method", "grad_budget", "status", score}
    if not need <= set(table.columns):
        raise ValueError(f"the table needs the columns {sorted(need)}; it lacks {sorted(need - set(table.columns))}")
    health = table["health"] if "health" in table else pd.Series("ok", index=table.index)
    runs = table[(table["status"] == "ok") & table["grad_budget"].notna() & (table["method"] != "Exact")
                 & np.isfinite(table[score].astype(float))]
    # a method is healthy at a budget only if every seed's run was: one flagged seed is enough to distrust it
    healthy = (health.loc[runs.index].astype(str) == "ok").groupby([runs["target"], runs["grad_budget"], runs["method"]]).all()
    grouped = runs.groupby(["target", "grad_budget", "method"])[score]
    med, spread = grouped.median(), grouped.std().fillna(0.0)
    floors = noise_floors(table, score)
    rows = []
    for target in dict.fromkeys(table["target"]):
        floor = float(floors.get(target, 0.0))
        for budget in sorted(runs.loc[runs["target"] == target, "grad_budget"].unique()):
            scores = med.loc[(target, budget)]
            good = scores[healthy.loc[(target, budget)].reindex(scores.index, fill_value=False)].sort_values()
            row = {"target": target, "grad_budget": int(budget), "healthy_methods": len(good), "methods": len(scores),
                   "closest": scores.idxmin(), "closest_score": float(scores.min()), "noise_floor": floor}
            if len(good):
                best = good.index[0]
                sd = spread.loc[(target, budget)]

                def noise(other, best=best, sd=sd, floor=floor):
                    return max(floor, math.hypot(float(sd.get(best, 0.0)), float(sd.get(other, 0.0))))

                level = [m for m in good.index[1:] if good[m] - good.iloc[0] <= noise(m)]
                row.update(method=best, score=float(good.iloc[0]), family=method_family(best),
                           runner_up=good.index[1] if len(good) > 1 else "",
                           runner_up_score=float(good.iloc[1]) if len(good) > 1 else np.nan,
                           level=", ".join(level), accurate=bool(good.iloc[0] <= ACCURATE_W1))
            else:
                row.update(method="", score=np.nan, family="", runner_up="", runner_up_score=np.nan, level="",
                           accurate=False)
            rows.append(row)
    return pd.DataFrame(rows)


def verdict_words(row) -> str:
    """A cell of the map in words: the winner, "level: ...", or "no accurate healthy run"."""
    if not row["method"]:
        return "no healthy run"
    if not row["accurate"]:
        return f"no accurate healthy run (best {row['method']} {row['score']:.2g} > {ACCURATE_W1})"
    if row["level"]:
        return f"level: {row['method']}, {row['level']}"
    return row["method"]


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
            title = (f"W1 {r['score']:.3g}; noise floor {r['noise_floor']:.2g}"
                     + (f"; next {r['runner_up']} {r['runner_up_score']:.3g}" if r["runner_up"] else ""))
            if not r["accurate"]:
                cells.append(f"<td class='small' title='{html.escape(title)}'>no accurate healthy run<br>(best: "
                             f"{html.escape(r['method'])} {r['score']:.2g})</td>")
                continue
            # a flagged run that landed much closer is worth knowing: the healthy winner may be poor
            flagged = (f"<br><span class='small'>closer but flagged: {html.escape(r['closest'])} {r['closest_score']:.2g}</span>"
                       if r["closest_score"] < 0.5 * r["score"] and r["closest_score"] > r["noise_floor"] else "")
            if r["level"]:
                names = ", ".join(html.escape(m) for m in [r["method"], *r["level"].split(", ")])
                cells.append(f"<td class='small' style='text-align:left' title='{html.escape(title)}'>level: {names} "
                             f"<span class='small'>{r['score']:.2g}</span>{flagged}</td>")
                continue
            cells.append(f"<td style='background:{FAMILY_FILLS[r['family']]}; text-align:left' title='{html.escape(title)}'>"
                         f"<b>{html.escape(r['method'])}</b> <span class='small'>{r['score']:.2g}</span>{flagged}</td>")
        floor = float(g["noise_floor"].iloc[0])
        body.append(f"<tr><th style='text-align:left'>{html.escape(target)}</th>{''.join(cells)}"
                    f"<td class='small'>{floor:.2g}</td></tr>")
    key = " ".join(f"<span style='background:{FAMILY_FILLS[f]}; padding:1px 6px'>{html.escape(f)}</span>"
                   for f in FAMILIES)
    source = f" (<a href='{html.escape(link)}'>the accuracy study</a>)" if link else ""
    return (
        "<h2>Verdict map</h2>"
        f"<p>The most accurate method whose runs were healthy, per target and gradient budget{source}: "
        "smallest mean marginal Wasserstein-1 distance to the truth (the number; median over seeds), "
        "among the runs no diagnostic flagged; where a flagged run landed at less than half that distance, "
        f"it is named below. A method is named only when its error is at most {ACCURATE_W1} posterior sds (else "
        "\"no accurate healthy run\") and it leads the next by more than the noise: the larger of the noise floor "
        "(the last column: what 4,000 exact i.i.d. draws score, or the reference against itself) and the spread "
        f"over seeds (else \"level\"). Families: {key}.</p>"
        f"<div class='scroll'><table><tr><th>target \\ gradients</th>{head}<th>noise floor</th></tr>"
        f"{''.join(body)}</table></div>"
    )


def verdict_headline(table: pd.DataFrame, score: str = SCORE) -> str:
    """One sentence from the map at the largest budget: which methods won how many targets, on how
    many the leaders were level, and on how many no healthy run was accurate."""
    verdict = verdict_table(table, score)
    if verdict.empty:
        return ""
    top = verdict[verdict["grad_budget"] == verdict["grad_budget"].max()]
    named = top[(top["method"] != "") & top["accurate"] & (top["level"] == "")]
    wins = named["method"].value_counts()
    level = int(((top["method"] != "") & top["accurate"] & (top["level"] != "")).sum())
    inaccurate = int(((top["method"] != "") & ~top["accurate"]).sum())
    none = int((top["method"] == "").sum())
    text = f"At {int(top['grad_budget'].iloc[0]):,} gradients, of {len(top)} targets, "
    parts = []
    if len(wins):
        parts.append("the most accurate healthy method, ahead of the next by more than the noise, is "
                     + ", ".join(f"{m} on {n}" for m, n in wins.items()))
    if level:
        parts.append(f"on {level} the best healthy methods are level within the noise")
    if inaccurate:
        parts.append(f"on {inaccurate} no healthy run is within {ACCURATE_W1} sds")
    if none:
        parts.append(f"on {none} no run was healthy")
    return text + "; ".join(parts) + "."


# ----------------------------------------------------------------------------- health against error

LARGE_ERROR = 0.5
"""A run whose worst error of a mean exceeds this many posterior sds is badly wrong: its health
must say so (a flag), or a reader trusts it."""
SMALL_ERROR = 0.1
"""A run within this many posterior sds in every mean is right: a flag on it is a false alarm."""
TRUTH_FLAGS = ("far from the answer",)
"""Flags a study adds from the truth it scores against (``metrics/accuracy.py``): a user without
the truth has not got them, so the audit counts a run flagged by them alone as not flagged."""


def health_audit(table: pd.DataFrame) -> dict:
    """How the health column matches the errors it is meant to warn of, over a study's scored
    runs (the exact sampler left out): large errors (worst mean error > ``LARGE_ERROR`` sds) and
    how many were flagged, small ones (<= ``SMALL_ERROR``) and how many were flagged anyway
    (false alarms), with the flags that fired on each."""
    need = {"method", "status", "mean_err_max", "health"}
    if not need <= set(table.columns):
        return {}
    runs = table[(table["status"] == "ok") & (table["method"] != "Exact")]
    err = runs["mean_err_max"].astype(float)
    runs, err = runs[np.isfinite(err)], err[np.isfinite(err)]

    def own(value) -> list[str]:
        return [f for f in str(value).split(", ") if f not in ("ok", "", "nan") and f not in TRUTH_FLAGS]

    flagged = runs["health"].map(lambda v: bool(own(v)))

    def flags(rows):
        return pd.Series([f for v in rows["health"] for f in own(v)], dtype=object).value_counts().to_dict()

    large, small = err > LARGE_ERROR, err <= SMALL_ERROR
    silent = runs[large & ~flagged]
    return {"large": int(large.sum()), "large_flagged": int((large & flagged).sum()),
            "small": int(small.sum()), "small_flagged": int((small & flagged).sum()),
            "large_flags": flags(runs[large & flagged]), "small_flags": flags(runs[small & flagged]),
            "silent": [f"{r.get('target', '?')} / {r['method']} / {_budget_text(r.get('grad_budget'))}"
                       for _, r in silent.iterrows()]}


def _budget_text(budget) -> str:
    """A cell's gradient budget as the pages print it (10,000), or "no budget"."""
    try:
        return f"{int(budget):,} gradients"
    except (TypeError, ValueError):
        return "no budget"


def health_audit_text(table: pd.DataFrame) -> str:
    """One paragraph from :func:`health_audit`: large errors flagged, n of n, and false alarms."""
    audit = health_audit(table)
    if not audit or not (audit["large"] or audit["small"]):
        return ""
    text = (f"Health against error (the methods' own diagnostics, not the truth): large errors flagged: "
            f"{audit['large_flagged']} of {audit['large']} (runs whose worst mean is more than {LARGE_ERROR} "
            "posterior sds off")
    if audit["large_flags"]:
        text += "; by " + ", ".join(f"{k} {v}" for k, v in audit["large_flags"].items())
    text += ")"
    if audit["silent"]:
        text += ", not flagged: " + "; ".join(audit["silent"])
    text += (f". Flags on accurate runs (every mean within {SMALL_ERROR} sds): {audit['small_flagged']} of "
             f"{audit['small']}")
    if audit["small_flags"]:
        text += " (" + ", ".join(f"{k} {v}" for k, v in audit["small_flags"].items()) + ")"
    return text + ": a flag says a run may be wrong, not that it is."
