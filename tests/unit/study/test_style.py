"""workbench/study/style.py: one colour per method, whatever a figure holds."""

from workbench.study.style import method_styles


def test_every_method_of_a_figure_gets_its_own_colour_and_the_same_one_everywhere():
    labels = ["NUTS", "MAMS", "MCLMC", "HMC", "FullRankVI", "BatchAndMatch", "DADVI", "box", "modes"]
    styles = method_styles(labels)
    assert len({(s.colour, s.linestyle, s.marker) for s in styles.values()}) == len(labels)
    assert method_styles(["NUTS"])["NUTS"] == styles["NUTS"]  # a method's style does not depend on the figure
