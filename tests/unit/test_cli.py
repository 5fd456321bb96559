"""workbench/cli.py: listing, errors, running a study and re-rendering it without running."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.study_fixtures import STUDY_FILE
from workbench import cli

REPO = Path(__file__).resolve().parents[2]


def _tiny_study_folder(tmp_path):
    """A studies/ folder holding tiny.py, the environment that points the CLI at it, and an out folder."""
    studies = tmp_path / "studies"
    studies.mkdir()
    (studies / "tiny.py").write_text(STUDY_FILE.format(tests_parent=str(REPO)))
    return studies, {**os.environ, "WORKBENCH_STUDIES": str(studies)}, tmp_path / "reports"


def _cli(args, capsys):
    code = cli.main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_list_and_errors(tmp_path, capsys):
    code, out, _ = _cli(["list"], capsys)
    assert code == 0
    for needle in ("gaussian_mixture", "NUTS", "NN4Post", "accuracy", "performance"):
        assert needle in out
    code, _, err = _cli(["study", "nosuch"], capsys)
    assert code == 2 and "unknown study 'nosuch'" in err and "accuracy" in err
    for bad, message in [(["--workers", "0"], "--workers must be >= 1"), (["--scheduler", "localhost"], "tcp://host:8786"),
                         (["--executor", "spark"], "invalid choice")]:
        with pytest.raises(SystemExit) as exc:
            cli.main(["study", "accuracy", *bad])
        assert exc.value.code == 2 and message in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["report"])
    assert "report needs a study NAME or --all" in capsys.readouterr().err
    code, _, err = _cli(["report", "accuracy", "--out", str(tmp_path)], capsys)
    assert code == 2 and "nothing cached for study 'accuracy'" in err


def test_cli_runs_a_study_and_re_renders_it_without_running(tmp_path):
    studies, env, out = _tiny_study_folder(tmp_path)
    run = subprocess.run([sys.executable, "-m", "workbench", "study", "tiny", "--quick", "--executor", "serial",
                          "--out", str(out)], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "6 computed, 0 cached, 0 failed" in run.stdout, run.stderr
    again = subprocess.run([sys.executable, "-m", "workbench", "report", "tiny", "--quick", "--out", str(out)],
                           env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "re-rendered" in again.stdout and "not computed" not in again.stdout
    full = subprocess.run([sys.executable, "-m", "workbench", "report", "tiny", "--out", str(out)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert "3 cells not computed yet" in full.stdout  # the full grid has a third seed
    # the study file runs as a plain script too, and a bad argument exits 2 without a traceback
    script = subprocess.run([sys.executable, str(studies / "tiny.py"), "--quick", "--workers", "0"],
                            env=env, capture_output=True, text=True, timeout=300)
    assert script.returncode == 2 and "Traceback" not in script.stderr and "--workers must be >= 1" in script.stderr
    bad = subprocess.run([sys.executable, "-m", "workbench", "study", "nosuch"], env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "unknown study" in bad.stderr
