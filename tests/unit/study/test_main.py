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
