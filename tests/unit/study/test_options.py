"""workbench/study/options.py: how a study runs, one object for the runner, the CLI and compare."""

import argparse

import pytest

from workbench.study.options import RunOptions, add_arguments


def test_fields_as_keywords_or_an_object_give_the_same_options():
    base = RunOptions(quick=True, out="x")
    assert RunOptions.of(base, fresh=True) == RunOptions(quick=True, out="x", fresh=True)
    assert RunOptions.of(None, quick=True, out="x") == base
    assert RunOptions.of(base) == base


@pytest.mark.parametrize("values, message", [
    ({"executor": "gpu"}, "executor must be one of"),
    ({"workers": 0}, "workers must be an integer >= 1, got 0"),
    ({"workers": 2.5}, "workers must be an integer >= 1"),
    ({"scheduler": "localhost:8786"}, "scheduler must be an address like tcp://host:8786"),
])
def test_bad_options_are_named(values, message):
    with pytest.raises(ValueError, match=message):
        RunOptions(**values)


def test_an_unknown_option_lists_the_known_ones():
    with pytest.raises(TypeError, match=r"unknown run options \['quik'\]; the options are \['quick'"):
        RunOptions.of(None, quik=True)


def test_the_command_line_flags_give_the_options():
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--quick", "--workers", "3", "--no-progress", "--out", "r"])
    assert RunOptions.from_args(args) == RunOptions(quick=True, workers=3, progress=False, out="r")
    assert RunOptions.from_args(parser.parse_args([])) == RunOptions()
