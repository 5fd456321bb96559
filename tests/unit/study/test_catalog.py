"""workbench/study/catalog.py: the studies found in studies/, by name."""

import pytest

from workbench.study import available_studies, load_study


def test_every_study_file_is_listed_with_its_title_and_loads():
    studies = available_studies()
    assert {"accuracy", "performance", "frontier"} <= set(studies)
    assert load_study("frontier").name == "frontier"


def test_an_unknown_study_lists_the_known_ones():
    with pytest.raises(ValueError, match="frontier"):
        load_study("no_such_study")
