"""workbench/study/style.py: one colour per method, whatever a figure holds."""

from workbench.study.style import method_styles


def test_every_method_of_a_figure_gets_its_own_colour_and_the_same_one_everywhere():
    labels = ["NUTS", "MAMS", "MCLMC", "HMC", "FullRankVI", "BatchAndMatch", "DADVI", "box", "modes"]
    styles = method_styles(labels)
    assert len({(s.colour, s.linestyle, s.marker) for s in styles.values()}) == len(labels)
    assert method_styles(["NUTS"])["NUTS"] == styles["NUTS"]  # a method's style does not depend on the figure


def test_every_library_method_has_its_own_fixed_colour():
    """A method without a fixed style would take a spare colour that can sit close to another
    method's (BatchAndMatch once drew in a blue beside NUTS's)."""
    import workbench as wb
    from workbench.study.style import _SPARE_COLOURS, METHOD_STYLES

    names = [m if isinstance(m, str) else m.__name__ for m in wb.methods.METHODS]
    assert set(names) <= set(METHOD_STYLES), set(names) - set(METHOD_STYLES)
    colours = [s.colour.lower() for s in METHOD_STYLES.values()]
    assert len(set(colours)) == len(colours)
    assert not set(colours) & {c.lower() for c in _SPARE_COLOURS}


def test_every_library_method_has_a_family_and_variants_keep_theirs():
    import workbench as wb
    from workbench.study.style import FAMILIES, base_method, method_family

    names = [m if isinstance(m, str) else m.__name__ for m in wb.methods.METHODS]
    grouped = [n for members in FAMILIES.values() for n in members]
    assert len(grouped) == len(set(grouped))  # one family each
    assert set(names) - {"Exact"} <= set(grouped), set(names) - set(grouped)
    assert method_family("NUTS (low_rank)") == "MCMC" and base_method("NUTS (low_rank)") == "NUTS"
    assert method_family("IS") == "importance and SMC" and method_family("NN4Post (paper)") == "VI"
    assert method_family("Exact") == "other" and method_family("box") == "other" and base_method("box") is None
