"""workbench/study/main.py: running a study and rendering its page, as scripts and the CLI do."""

import pytest

from tests.study_fixtures import TINY
from workbench.study.main import main_for, run_and_report


def test_re_rendering_without_a_cache_says_what_to_run(tmp_path):
    with pytest.raises(ValueError, match=r"nothing cached for study 'tiny'.*workbench study tiny"):
        run_and_report(TINY, out=tmp_path, run_missing=False, progress=False)


def test_a_study_script_runs_and_writes_its_page(tmp_path, capsys):
    assert main_for(TINY)(["--quick", "--executor", "serial", "--out", str(tmp_path), "--no-progress"]) == 0
    assert "tiny:" in capsys.readouterr().out and (tmp_path / "quick" / "tiny" / "index.html").exists()


def test_bad_flags_are_refused_with_their_names(capsys):
    with pytest.raises(SystemExit):
        main_for(TINY)(["--workers", "0"])
    assert "--workers must be >= 1" in capsys.readouterr().err


def test_several_studies_share_one_pool_and_each_page_is_drawn_while_the_next_study_runs(tmp_path, capsys,
                                                                                         monkeypatch):
    import argparse
    import dataclasses
    import threading

    import workbench.study.main as main_module
    from workbench.study.options import add_arguments

    second = dataclasses.replace(TINY, name="tiny_again", title="The tiny study again")
    drawn_on = []
    real = main_module.render_run

    def render_run(study, run, options):
        drawn_on.append(threading.current_thread().name)
        return real(study, run, options)

    monkeypatch.setattr(main_module, "render_run", render_run)
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--quick", "--executor", "serial", "--out", str(tmp_path), "--no-progress"])
    assert main_module.report_studies([TINY, second], args) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "cells (" in line]
    assert [line.split(":")[0] for line in lines] == ["tiny", "tiny_again"]  # in the studies' order
    assert all(name.startswith("draw-pages") for name in drawn_on) and len(drawn_on) == 2
    for name in ("tiny", "tiny_again"):
        assert (tmp_path / "quick" / name / "index.html").exists()
        assert f"{name}/index.html" in (tmp_path / "index.html").read_text()
