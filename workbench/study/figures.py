"""Figures shared by the studies' report pages, each written as a PNG into the page folder.

- ``error_vs_cost``: an error metric against gradient evaluations, log-log, per target;
- ``marginal_densities``: each method's marginals of the first coordinates, truth overlaid;
- ``rank_and_energy``: ArviZ rank and energy plots of a sampler's chains;
- ``forest``: ArviZ forest plot comparing methods' intervals on the first coordinates;
- ``bars``: one metric per method and target (log scale), e.g. ESS per 1,000 gradients.
"""

from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")  # headless: reports are files

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from .cells import build_target
from .style import FAMILIES, TRUTH_COLOUR, method_colours, method_family, method_styles


def _save(fig, folder: Path, file: str) -> str:
    fig.savefig(Path(folder) / file, dpi=90, bbox_inches="tight")
    plt.close(fig)
    return file


def error_vs_cost(table: pd.DataFrame, metric: str, folder, file: str, ylabel: str | None = None,
                  threshold: float | None = None) -> str:
    """Median over seeds of ``metric`` against gradient evaluations spent, one panel per target
    (with a dotted line at ``threshold``, when given)."""
    ok = table[(table["status"] == "ok") & np.isfinite(table[metric].astype(float))]
    targets = list(dict.fromkeys(table["target"]))
    styles = method_styles(table["method"])
    cols = min(3, len(targets))
    rows = -(-len(targets) // cols)
    single = len(targets) == 1  # one panel: wider, its legend beside it in one column
    fig, axes = plt.subplots(rows, cols, figsize=(6.5, 4.0) if single else (4.2 * cols, 3.3 * rows), squeeze=False)
    for ax, target in zip(axes.flat, targets):
        sub = ok[ok["target"] == target]
        floor = sub[sub["method"] == "Exact"][metric]
        if len(floor) and floor.median() > 0:  # i.i.d. exact draws: the Monte Carlo error of an ideal sampler
            ax.axhline(floor.median(), color=TRUTH_COLOUR, ls="--", lw=1, label="Exact (i.i.d. draws)")
        for method, g in sub[sub["method"] != "Exact"].groupby("method", sort=False):
            m = g.groupby("grad_budget", dropna=False).agg(x=("grad_evals", "median"), y=(metric, "median"))
            m = m[(m["x"] > 0) & (m["y"] > 0)].sort_values("x")
            if len(m):
                st = styles[method]  # own marker and slight transparency: lines that coincide stay visible
                ax.plot(m["x"], m["y"], marker=st.marker, ls=st.linestyle, color=st.colour, label=method, ms=5,
                        alpha=0.85, mfc="none" if st.linestyle == "--" else st.colour)
        if threshold is not None:
            ax.axhline(threshold, color="black", ls=":", lw=1)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(target, fontsize=9)
        ax.set_xlabel("gradient evaluations")
        ax.set_ylabel(ylabel or metric)
        ax.grid(alpha=0.3, which="both")
    for ax in list(axes.flat)[len(targets) :]:
        ax.axis("off")
    # methods only: unlabelled lines (a threshold) carry matplotlib's "_child" names
    handles = {h.get_label(): h for ax in axes.flat for h in ax.get_lines() if not h.get_label().startswith("_")}
    if single:
        fig.tight_layout()
        legend_by_family(fig, handles, one_column=True, loc="center left", bbox_to_anchor=(0.99, 0.5))
        return _save(fig, folder, file)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    # above the panels whatever its number of rows (the saved figure grows to hold it)
    legend_by_family(fig, handles, loc="lower center", bbox_to_anchor=(0.5, 0.96))
    return _save(fig, folder, file)


def legend_by_family(fig, handles: dict, fontsize: float = 8, one_column: bool = False, **kwargs):
    """A figure legend with one column per method family (MCMC, VI, importance and SMC, then
    the rest), each headed by its name: a panel of 19 methods reads by family first. With
    ``one_column`` the families follow each other down one column (a legend beside a panel)."""
    groups: dict[str, list[str]] = {}
    for label in handles:
        groups.setdefault(method_family(label), []).append(label)
    order = [f for f in (*FAMILIES, "other") if f in groups]
    rows = max(len(groups[f]) for f in order) + 1
    blank = Line2D([], [], linestyle="none")
    entries, headers = [], []
    for family in order:  # matplotlib fills a legend column by column: pad each family to full height
        headers.append(len(entries))
        entries.append((blank, family if family != "other" else ""))
        entries += [(handles[label], label) for label in groups[family]]
        if not one_column:
            entries += [(blank, "")] * (rows - 1 - len(groups[family]))
    legend = fig.legend([h for h, _ in entries], [t for _, t in entries], ncol=1 if one_column else len(order),
                        fontsize=fontsize, handlelength=2.2, columnspacing=1.5, **kwargs)
    for k in headers:
        legend.get_texts()[k].set_fontweight("bold")
    return legend


def plotted_label(label: str, arrays: dict) -> str:
    """A method's legend entry; for weighted draws it says they are an importance resample of
    all of them and prints the weights' ESS, the number the table reports."""
    if "weighted_ess" in arrays:
        label += f" (resampled from {int(arrays['weighted_n'][0]):,}, ESS {float(arrays['weighted_ess'][0]):,.0f})"
    return label


def marginal_densities(run, indices: list[int], folder, file: str, coords=(0, 1), reference=None) -> str:
    """Histograms of each chosen cell's draws for ``coords``, with the exact marginal (solid
    black) or the reference posterior's histogram (dashed black) overlaid. Weighted draws are
    shown by an importance resample of all of them (see ``cells.py``), labelled with their ESS."""
    cells = [run.cells[i] for i in indices]
    target = build_target(cells[0].target)
    labels = [run.table.loc[i, "method"] for i in indices]
    colours = method_colours(labels)
    coords = [c for c in coords if c < target.dim]
    # the legend goes beside the panels: inside, it hid the histograms that lay under it
    fig, axes = plt.subplots(1, len(coords), figsize=(4.5 * len(coords) + 2.6, 3.2), squeeze=False)
    for ax, k in zip(axes[0], coords):
        samples = []
        for i, label in zip(indices, labels):
            arrays = run.arrays(i)
            if "draws" not in arrays or arrays["draws"].size == 0:
                continue
            x = arrays["draws"][..., k].ravel()
            samples.append((label, x, plotted_label(label, arrays)))
        pooled = np.concatenate([x for _, x, _ in samples]) if samples else np.zeros(1)
        lo, hi = np.quantile(pooled, [0.005, 0.995])
        if reference is not None:
            lo, hi = min(lo, np.quantile(reference[:, k], 0.005)), max(hi, np.quantile(reference[:, k], 0.995))
        bins = np.linspace(lo, hi, 50)
        heights = []
        for label, x, legend in samples:
            counts, _, _ = ax.hist(x, bins=bins, density=True, histtype="step", color=colours[label], label=legend,
                                   lw=1.3)
            heights.append(float(np.max(counts)) if np.size(counts) else 0.0)
        grid = np.linspace(lo, hi, 400)
        top = None  # the panel's height: set by the answer, so a method's spikes cannot flatten the rest
        if target.truth is not None and target.truth.marginal_pdf_fn is not None:
            pdf = target.truth.marginal_pdf(k, grid)
            ax.plot(grid, pdf, "-", color=TRUTH_COLOUR, lw=1.5, label="truth")
            top = float(np.max(pdf))
        elif reference is not None:
            counts, _, _ = ax.hist(reference[:, k], bins=bins, density=True, histtype="step", color=TRUTH_COLOUR,
                                   ls="--", lw=1.5, label="reference")
            top = float(np.max(counts))
        elif heights:
            top = float(np.median(heights))
        if top is not None and top > 0 and heights and max(heights) > 1.6 * top:
            ax.set_ylim(0, 1.6 * top)
        ax.set_xlabel(target.param_names[k])
        ax.set_yticks([])
    handles, names = axes[0][0].get_legend_handles_labels()
    axes[0][-1].legend(handles, names, fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False)
    fig.suptitle(run.table.loc[indices[0], "target"], fontsize=10)
    fig.tight_layout()
    return _save(fig, folder, file)


def _datatree(arrays: dict, names: list[str]):
    import arviz as az

    groups = {"posterior": {"theta": arrays["draws"]}}
    stats = {}
    if "energy" in arrays:
        stats["energy"] = arrays["energy"]
    if "diverging" in arrays:
        stats["diverging"] = arrays["diverging"].astype(bool)
    if stats:
        groups["sample_stats"] = stats
    return az.from_dict(groups, dims={"theta": ["param"]}, coords={"param": names})


def rank_and_energy(run, index: int, folder, stem: str, coords=None) -> list[str]:
    """ArviZ rank plot (and energy plot for HMC/NUTS) of cell ``index``'s kept coordinates, or
    of ``coords`` among them."""
    import arviz_plots as azp

    arrays = dict(run.arrays(index))
    target = build_target(run.cells[index].target)
    kept = arrays["draws"].shape[2]
    coords = [k for k in (range(kept) if coords is None else coords) if k < kept]
    arrays["draws"] = arrays["draws"][:, :, coords]
    names = [target.param_names[k] for k in coords]
    tree = _datatree(arrays, names)
    files = []
    from arviz_base.labels import NoVarLabeller

    # titles name the parameter only ("theta" over each was clutter), three panels a row so long
    # names do not run into the panel beside them
    rows = -(-len(coords) // 3)
    pc = azp.plot_rank(tree, labeller=NoVarLabeller(), col_wrap=3,
                       figure_kwargs={"figsize": (10, 1.9 * rows + 0.4), "layout": "constrained"})
    pc.savefig(Path(folder) / f"{stem}_rank.png", dpi=80, bbox_inches="tight")
    plt.close(pc.viz["figure"].item())
    files.append(f"{stem}_rank.png")
    if "energy" in arrays:
        pc = azp.plot_energy(tree)
        pc.savefig(Path(folder) / f"{stem}_energy.png", dpi=80, bbox_inches="tight")
        plt.close(pc.viz["figure"].item())
        files.append(f"{stem}_energy.png")
    return files


def forest(run, indices: list[int], folder, file: str, coords=None, reference=None) -> str:
    """Forest plot: each method's 89% interval and median of each of ``coords`` (all kept
    coordinates by default), one row per parameter, in each method's colour. Every row is on
    one scale, posterior sds from the answer's mean (the truth's, else ``reference``'s, else
    the pooled draws'), so a method's error reads off the x-axis whatever the parameter's units.
    Draws are pooled over chains; weighted draws are the importance resample ``cells.py`` keeps."""
    target = build_target(run.cells[indices[0]].target)
    samples = {}
    for i in indices:
        arrays = run.arrays(i)
        if "draws" in arrays and arrays["draws"].size:
            samples[run.table.loc[i, "method"]] = arrays["draws"].reshape(-1, arrays["draws"].shape[2])
    kept = next(iter(samples.values())).shape[1]
    coords = [k for k in (range(kept) if coords is None else coords) if k < kept]
    truth = target.truth if target.truth is not None and target.truth.mean is not None else None
    if truth is not None:
        centre, scale, answer = truth.mean[coords], truth.sd[coords], "truth"
    elif reference is not None:
        centre, scale, answer = reference[:, coords].mean(0), reference[:, coords].std(0), "reference"
    else:
        pooled = np.concatenate([x[:, coords] for x in samples.values()])
        centre, scale, answer = pooled.mean(0), pooled.std(0), None
    scale = np.where(scale > 0, scale, 1.0)
    colours = method_colours(samples)
    n_rows, n_methods = len(coords), len(samples)
    fig, ax = plt.subplots(figsize=(7.5, max(2.5, 0.8 + n_rows * (0.25 + 0.07 * n_methods))))
    step = 0.8 / max(1, n_methods)
    for j, (label, x) in enumerate(samples.items()):
        z = (x[:, coords] - centre) / scale
        lo, mid, hi = np.quantile(z, [0.055, 0.5, 0.945], axis=0)
        y = np.arange(n_rows) - 0.4 + (j + 0.5) * step
        ax.hlines(y, lo, hi, color=colours[label], lw=1.6, label=label)
        ax.plot(mid, y, "o", color=colours[label], ms=2.5)
    if reference is not None and truth is None:
        z = (reference[:, coords] - centre) / scale
        lo, hi = np.quantile(z, [0.055, 0.945], axis=0)
        for r in range(n_rows):
            ax.fill_betweenx([r - 0.45, r + 0.45], lo[r], hi[r], color=TRUTH_COLOUR, alpha=0.08, lw=0)
    if answer is not None:
        ax.axvline(0.0, color=TRUTH_COLOUR, lw=1.0, ls="--" if answer == "reference" else "-", label=answer)
    for r in range(1, n_rows):
        ax.axhline(r - 0.5, color="0.85", lw=0.6)
    ax.set_yticks(range(n_rows))
    ax.set_yticklabels([target.param_names[k] for k in coords], fontsize=8)
    ax.set_ylim(n_rows - 0.5, -0.5)
    ax.set_xlabel(f"posterior sds from the {answer or 'pooled'} mean" + (" (its 89% interval shaded)"
                                                                          if answer == "reference" else ""))
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False)
    ax.set_title(run.table.loc[indices[0], "target"], fontsize=10)
    fig.tight_layout()
    return _save(fig, folder, file)


_HATCHES = ("////", "....", "xxxx", "\\\\\\\\")


def bars(table: pd.DataFrame, metric: str, folder, file: str, ylabel: str | None = None, log: bool = True) -> str:
    """Median over seeds of ``metric`` per method (bars) and target (groups)."""
    ok = table[(table["status"] == "ok")]
    pivot = ok.pivot_table(index="target", columns="method", values=metric, aggfunc="median", sort=False)
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(pivot) + 2), 3.5))
    width = 0.8 / max(1, pivot.shape[1])
    styles = method_styles(pivot.columns)
    # a variant ("NUTS (low_rank)") has its method's colour: a hatch of its own tells the bars apart
    variants = sorted(m for m in pivot.columns if styles[m].linestyle == "--")
    for j, method in enumerate(pivot.columns):
        hatch = _HATCHES[variants.index(method) % len(_HATCHES)] if method in variants else None
        ax.bar(np.arange(len(pivot)) + j * width, pivot[method].values, width, label=method,
               color=styles[method].colour, hatch=hatch, edgecolor="white" if hatch else None, linewidth=0)
    ax.set_xticks(np.arange(len(pivot)) + 0.4 - width / 2)
    ax.set_xticklabels(pivot.index, rotation=15, ha="right", fontsize=8)
    if log:
        ax.set_yscale("log")
    ax.set_ylabel(ylabel or metric)
    ax.legend(fontsize=7, ncol=min(5, pivot.shape[1]))
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return _save(fig, folder, file)


def metric_vs_dimension(table: pd.DataFrame, metric: str, folder, file: str, ylabel: str | None = None,
                        theory: dict | None = None) -> str:
    """Median over seeds of ``metric`` against the ``dim`` column, log-log, one line per method,
    with its fitted slope (and the theoretical one, if given) in the legend."""
    from .analysis import loglog_slope

    ok = table[(table["status"] == "ok") & table["dim"].notna()]
    styles = method_styles(ok["method"])
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for method, g in ok.groupby("method", sort=False):
        m = g.groupby("dim")[metric].median()
        m = m[m > 0]
        if len(m) < 2:
            continue
        fit = loglog_slope(m.index.values, m.values)
        label = f"{method}: slope {fit.slope:.2f}"
        if theory and method in theory:
            label += f" (theory {theory[method]})"
        st = styles[method]
        ax.plot(m.index, m.values, marker=st.marker, ls=st.linestyle, color=st.colour, label=label)
        ax.plot(m.index, np.exp(fit.intercept) * m.index.values ** fit.slope, ":", color=st.colour, lw=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("dimension d")
    ax.set_ylabel(ylabel or metric)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return _save(fig, folder, file)
