"""workbench/targets/specs.py: targets described by plain data, and a user's path/to/file.py:NAME."""

import re
import textwrap
from pathlib import Path

import pytest

import workbench as wb
from workbench.errors import TargetError
from workbench.targets.specs import build_target, load_source, register_target, resolve

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples" / "user_target.py"


def test_a_spec_builds_its_target_once_per_process():
    spec = {"factory": "gaussian", "dim": 3, "scales": "logspace"}
    t = build_target(spec)
    assert t.dim == 3 and t.spec.items() >= spec.items() and build_target(dict(reversed(spec.items()))) is t
    with pytest.raises(ValueError, match="unknown target 'nope'; built-in targets"):
        build_target({"factory": "nope"})


def test_a_registered_target_is_built_in_this_process_only():
    mine = wb.targets.gaussian(2).replace(name="mine")
    spec = register_target(mine, {"factory": "registered", "name": "mine-for-test-specs"})
    assert build_target(spec) is mine
    with pytest.raises(ValueError, match="serial executor"):
        build_target({"factory": "registered", "name": "never-registered"})


def test_a_source_spec_loads_the_users_file():
    t = build_target({"factory": "source", "source": f"{EXAMPLE}:logp_grad"})
    assert t.dim == load_source(f"{EXAMPLE}:logp_grad").dim


@pytest.mark.parametrize("source, message", [
    ("nosuch.py:f", "no file 'nosuch.py'"),
    ("{file}:missing", "defines no 'missing'; it defines: data, dim, logp_grad"),
    ("{nodim}:logp_grad", "no `dim`: add `dim = D`"),
    ("{wrong_signature}:logp", "logp_grad takes 1 argument(s) (theta), it must take 3"),
    ("{wrong_gradient}:logp_grad", "is wrong: at coordinate 0"),
    ("{not_a_function}:logp_grad", "it must be a Numba logp_grad"),
    ("{needs_args}:make", "needs arguments"),
    ("nosuch", "unknown target 'nosuch': give a built-in target"),
])
def test_bad_targets_get_messages_that_say_what_to_write(tmp_path, source, message):
    files = {
        "file": EXAMPLE.read_text(),
        "nodim": "import numba\n@numba.njit\ndef logp_grad(theta, grad_out, data):\n    grad_out[0] = -theta[0]\n"
                 "    return -0.5 * theta[0] ** 2\n",
        "wrong_signature": "import numba\ndim = 1\n@numba.njit\ndef logp(theta):\n    return -0.5 * theta[0] ** 2\n",
        "wrong_gradient": "import numba\ndim = 1\n@numba.njit\ndef logp_grad(theta, grad_out, data):\n"
                          "    grad_out[0] = theta[0]\n    return -0.5 * theta[0] ** 2\n",
        "not_a_function": "logp_grad = 3\n",
        "needs_args": "def make(n):\n    return n\n",
    }
    for name, text in files.items():
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(text))
    source = source.format(**{name: tmp_path / f"{name}.py" for name in files})
    with pytest.raises(TargetError, match=re.escape(message)):
        load_source(source) if ".py" in source else resolve(source)
