"""workbench/study/figures.py and style.py: one colour per method on every figure, and weighted draws pictured by
what the table scores."""

from __future__ import annotations

import re

import matplotlib.figure
import numpy as np
import pytest

from workbench.study import Cell, Figure, Page, Study, run_and_report
from workbench.study import figures as F
from workbench.study.style import METHOD_STYLES, method_style

QUIET = {"progress": False}
MIXTURE = {"factory": "gaussian_mixture", "dim": 2, "n_components": 3, "seed": 0}
LOGISTIC_LIKE = {"factory": "gaussian", "dim": 3}  # a second target: its rows have no Exact


def _grid(quick):
    def cells(target, with_exact):
        methods = [("NUTS", {"method": "NUTS", "chains": 2, "warmup": 100, "draws": 300, **QUIET}),
                   ("ImportanceSampling", {"method": "ImportanceSampling", "n": 20_000}),
                   ("RandomWalkMH", {"method": "RandomWalkMH", "chains": 2, "warmup": 200, "draws": 500, **QUIET})]
        if with_exact:
            methods.insert(0, ("Exact", {"method": "Exact", "chains": 2, "draws": 300}))
        return [Cell(target, spec, 0, 20_000 if name != "Exact" else None, labels={"target": name_t, "method": name})
                for name_t in [target["factory"]] for name, spec in methods]

    return cells(MIXTURE, True) + cells(LOGISTIC_LIKE, False)


def _report(run, folder):
    figures = [Figure(F.error_vs_cost(run.table, "w1_mean", folder, "w1.png"), "W1 against cost")]
    for target in run.table["target"].unique():
        idx = list(run.table.index[(run.table["target"] == target) & (run.table["status"] == "ok")])
        figures.append(Figure(F.marginal_densities(run, idx, folder, f"{target}_marginals.png"), "marginals"))
        figures.append(Figure(F.forest(run, idx, folder, f"{target}_forest.png"), "forest"))
    figures.append(Figure(F.bars(run.table, "w1_mean", folder, "bars.png"), "bars"))
    return Page(finding="rendered", figures=figures)


STUDY = Study(name="figures_check", title="Figures check", grid=_grid, report=_report)


def _colour_of(handle):
    from matplotlib.colors import to_hex

    if hasattr(handle, "get_color"):  # lines
        c = handle.get_color()
    else:  # patches: a filled bar's face, an unfilled histogram's edge
        c = handle.get_facecolor() if handle.get_facecolor()[3] > 0 else handle.get_edgecolor()
    c = c[0] if isinstance(c, np.ndarray) and c.ndim == 2 else c
    return to_hex(c)


@pytest.fixture(scope="module")
def drawn(tmp_path_factory, monkeypatch_module):
    """Render the page, keeping every figure's legend entries: {file: {legend text: colour}}."""
    legends = {}
    save = matplotlib.figure.Figure.savefig

    def recording_savefig(fig, fname, *args, **kwargs):
        entries = {}
        for legend in list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend()]:
            for handle, text in zip(legend.legend_handles, legend.get_texts()):
                entries[text.get_text()] = _colour_of(handle)
        legends[str(fname).rsplit("/", 1)[-1]] = entries
        return save(fig, fname, *args, **kwargs)

    monkeypatch_module.setattr(matplotlib.figure.Figure, "savefig", recording_savefig)
    out = tmp_path_factory.mktemp("figures_check")
    run, page = run_and_report(STUDY, quick=True, executor="serial", out=out, progress=False)
    return run, page, legends


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def _method_of(text: str, methods) -> str | None:
    return next((m for m in sorted(methods, key=len, reverse=True) if text.startswith(m)), None)


def test_each_method_has_one_colour_on_every_figure(drawn):
    run, page, legends = drawn
    methods = set(run.table["method"])
    seen = {}
    for file, entries in legends.items():
        for text, colour in entries.items():
            method = _method_of(text, methods)
            if method is None:
                continue
            seen.setdefault(method, set()).add((file, colour))
    assert set(seen) >= {"NUTS", "ImportanceSampling", "RandomWalkMH"}, seen
    for method, uses in seen.items():
        colours = {c for _, c in uses}
        assert len({f for f, _ in uses}) >= 3, (method, uses)  # drawn on several figures ...
        assert colours == {METHOD_STYLES[method].colour.lower()}, (method, uses)  # ... always in its own colour
    # the truth and Exact are black
    for entries in legends.values():
        for text, colour in entries.items():
            if text in ("truth", "reference") or text.startswith("Exact"):
                assert colour == "#000000", (text, colour)


def test_a_weighted_methods_plotted_ess_is_the_tables(drawn):
    run, page, legends = drawn
    checked = 0
    for file, entries in legends.items():
        for text in entries:
            m = re.match(r"ImportanceSampling \(resampled from ([\d,]+), ESS ([\d,]+)\)", text)
            if not m:
                continue
            target = file.removesuffix("_marginals.png")
            row = run.table[(run.table["target"] == target) & (run.table["method"] == "ImportanceSampling")].iloc[0]
            assert int(m.group(1).replace(",", "")) == row["n_draws"] == 20_000
            assert int(m.group(2).replace(",", "")) == round(row["ess_bulk_min"])
            checked += 1
    assert checked == 2
    # the picture is a systematic resample of all 20,000 weighted draws, not of a thinned subset:
    # its mean is the weighted mean the table scores, up to the resample's own error (sd / 1,000)
    from workbench.study.cells import build_method, build_target

    i = run.table.index[(run.table["target"] == "gaussian_mixture") & (run.table["method"] == "ImportanceSampling")][0]
    cell = run.cells[i]
    t = build_target(cell.target)
    res = build_method(cell.method).run(t, seed=cell.seed, grad_budget=cell.grad_budget)
    weighted_mean = np.average(res.flat_draws(), axis=0, weights=res.weights())
    shown = run.arrays(i)["draws"].reshape(-1, 2)
    assert np.all(np.abs(shown.mean(0) - weighted_mean) / t.truth.sd < 0.02)


def test_method_styles_do_not_depend_on_the_table():
    assert method_style("NUTS") == METHOD_STYLES["NUTS"]
    assert method_style("RWM").colour == METHOD_STYLES["RandomWalkMH"].colour
    variant = method_style("NUTS (target_accept=0.95)")
    assert variant.colour == METHOD_STYLES["NUTS"].colour and variant.linestyle == "--"
    assert method_style("some ablation row") == method_style("some ablation row")




def test_variants_of_a_method_get_its_colour_and_bars_a_hatch_each(tmp_path, monkeypatch):
    """"NUTS (low_rank)" and "NUTS (dense)" are NUTS's colour: side by side, only a hatch of
    their own (none for NUTS) tells the three bars apart."""
    import pandas as pd

    kept = {}
    monkeypatch.setattr(F, "_save", lambda fig, folder, file: kept.setdefault("fig", fig) and file)
    table = pd.DataFrame({"target": ["a"] * 3 + ["b"] * 3, "status": "ok", "ess": [1.0, 2.0, 3.0] * 2,
                          "method": ["NUTS", "NUTS (low_rank)", "NUTS (dense)"] * 2})
    F.bars(table, "ess", tmp_path, "bars.png")
    ax = kept["fig"].axes[0]
    hatches = {c.get_label(): c.patches[0].get_hatch() for c in ax.containers}
    colours = {c.get_label(): _colour_of(c.patches[0]) for c in ax.containers}
    assert hatches["NUTS"] is None and None not in (hatches["NUTS (low_rank)"], hatches["NUTS (dense)"])
    assert hatches["NUTS (low_rank)"] != hatches["NUTS (dense)"]
    assert set(colours.values()) == {METHOD_STYLES["NUTS"].colour.lower()}


def test_the_legend_has_a_column_per_family_headed_by_its_name():
    import matplotlib.pyplot as plt

    from workbench.study.figures import legend_by_family

    fig, ax = plt.subplots()
    labels = ["NUTS", "SMC", "MeanFieldVI", "NUTS (low_rank)", "Exact (i.i.d. draws)", "NN4Post", "IS"]
    handles = {label: ax.plot([0, 1], [0, 1], label=label)[0] for label in labels}
    legend = legend_by_family(fig, handles)
    texts = [t.get_text() for t in legend.get_texts()]
    # column by column, each padded to the tallest family (3 rows: a header and two methods)
    assert texts == ["MCMC", "NUTS", "NUTS (low_rank)", "VI", "MeanFieldVI", "NN4Post",
                     "importance and SMC", "SMC", "IS", "", "Exact (i.i.d. draws)", ""]
    assert legend.get_texts()[0].get_fontweight() == "bold" and legend._ncols == 4
    beside = legend_by_family(fig, handles, one_column=True)  # one panel: the families down one column
    assert [t.get_text() for t in beside.get_texts()] == [
        "MCMC", "NUTS", "NUTS (low_rank)", "VI", "MeanFieldVI", "NN4Post", "importance and SMC", "SMC", "IS",
        "", "Exact (i.i.d. draws)"] and beside._ncols == 1
    plt.close(fig)
