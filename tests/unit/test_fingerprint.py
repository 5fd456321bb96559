"""fingerprint.dependency_digest: every value a compiled density can freeze is in the digest."""

import os
import subprocess
import sys
import textwrap
import uuid

import numba
import numpy as np
import pytest

from workbench.fingerprint import dependency_digest


@pytest.fixture
def module(tmp_path, monkeypatch):
    """A user's module written to a file and imported, as a script's densities are."""
    def load(source: str):
        name = f"fingerprint_probe_{uuid.uuid4().hex}"
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
        monkeypatch.syspath_prepend(str(tmp_path))
        __import__(name)
        return sys.modules[name]

    yield load


SCALED = """
    import numba
    SCALE = 1.0

    @numba.njit
    def inner(theta, grad_out):
        grad_out[:] = -theta / SCALE ** 2
        return -0.5 * (theta ** 2).sum() / SCALE ** 2

    @numba.njit
    def logp_grad(theta, grad_out, data):
        return inner(theta, grad_out)
"""


def test_a_global_read_by_a_callee_is_part_of_the_digest(module):
    m = module(SCALED)
    before = dependency_digest(m.logp_grad)
    assert before is not None and dependency_digest(m.logp_grad) == before
    m.SCALE = 10.0
    assert dependency_digest(m.logp_grad) != before
    m.SCALE = 1.0
    assert dependency_digest(m.logp_grad) == before


def test_a_global_read_through_a_module_attribute_is_part_of_the_digest(module):
    cfg = module("SCALE = 2.0\n")
    m = module(f"""
        import numba
        import {cfg.__name__} as cfg

        @numba.njit
        def logp_grad(theta, grad_out, data):
            grad_out[:] = -theta / cfg.SCALE
            return -0.5 * (theta ** 2).sum() / cfg.SCALE
    """)
    before = dependency_digest(m.logp_grad)
    cfg.SCALE = 3.0
    assert dependency_digest(m.logp_grad) != before


def test_a_callee_chosen_at_run_time_is_part_of_the_digest(module):
    """A wrapper whose callee is a global set at run time (a benchmark driver wrapping several
    targets' densities) must not be served the first callee's compile for the second."""
    m = module("""
        import numba

        @numba.njit
        def gaussian(theta, grad_out, data):
            grad_out[:] = -theta
            return -0.5 * (theta ** 2).sum()

        @numba.njit
        def wide(theta, grad_out, data):
            grad_out[:] = -theta / 100.0
            return -0.5 * (theta ** 2).sum() / 100.0

        DENSITY = gaussian

        @numba.njit
        def wrapper(theta, grad_out, data):
            return DENSITY(theta, grad_out, data)
    """)
    before = dependency_digest(m.wrapper)
    m.DENSITY = m.wide
    assert dependency_digest(m.wrapper) != before


def test_arrays_closures_and_defaults_are_part_of_the_digest(module):
    m = module("""
        import numba
        import numpy as np
        WEIGHTS = np.ones(3)

        def make(scale):
            @numba.njit
            def logp_grad(theta, grad_out, data, s=2.0):
                grad_out[:] = -theta * scale * s * WEIGHTS[0]
                return -0.5 * scale * s * WEIGHTS[0] * (theta ** 2).sum()
            return logp_grad
    """)
    one, two = m.make(1.0), m.make(2.0)
    assert dependency_digest(one) != dependency_digest(two)
    before = dependency_digest(one)
    m.WEIGHTS[0] = 5.0
    assert dependency_digest(one) != before


def test_a_global_object_that_cannot_be_fingerprinted_gives_none(module):
    m = module("""
        import numba

        class Settings:
            scale = 1.0

        SETTINGS = Settings()

        @numba.njit
        def logp_grad(theta, grad_out, data):
            grad_out[:] = -theta
            return -0.5 * (theta ** 2).sum() * SETTINGS
    """)
    assert dependency_digest(m.logp_grad) is None


def test_library_functions_and_numpy_are_identified_by_name():
    """NumPy, math and Numba are named, not walked: the library's densities get a digest."""

    @numba.njit
    def logp_grad(theta, grad_out, data):
        for i in range(theta.size):
            grad_out[i] = -np.tanh(theta[i]) * np.pi / np.pi
        return -np.sum(np.log(np.cosh(theta)))

    assert dependency_digest(logp_grad) is not None


def test_the_digest_is_the_same_in_every_process(tmp_path):
    """Cache keys built from it must match across processes (string hashing differs)."""
    (tmp_path / "same_probe.py").write_text(textwrap.dedent(SCALED))
    code = ("from same_probe import logp_grad\nfrom workbench.fingerprint import dependency_digest\n"
            "print(dependency_digest(logp_grad))")
    seen = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        seen.add(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300,
                                check=True).stdout.strip())
    assert len(seen) == 1 and None not in seen
