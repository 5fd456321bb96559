"""workbench/adapters.py: the form through which kernels call a target's density, cached on
disk when the function can be named and fingerprinted, compiled in memory when not, and
never served stale when a global the density reads has changed."""

import numba
import numpy as np
import pytest


def _adapter_values(adapter, target, theta):
    import numpy as np

    grad = np.empty(target.dim)
    return adapter(theta, grad, target.kernel_data), grad


def test_an_importable_function_gets_an_adapter_cached_on_disk_that_equals_the_function():
    import numpy as np

    import workbench as wb
    from workbench.adapters import KERNEL_FORM_DIR, compile_kernel_form

    target = wb.targets.funnel(dim=5)
    adapter = compile_kernel_form(target.logp_grad, target._packed.layout)
    module = adapter.py_func.__module__
    assert module.startswith("kernel_form_")
    assert (KERNEL_FORM_DIR / f"{module}.py").exists()
    assert adapter.targetoptions["_nrt"] is False  # no reference counting where none is needed
    theta = np.linspace(-1.0, 1.0, 5)
    logp, grad = _adapter_values(adapter, target, theta)
    want_grad = np.empty(5)
    want = target.logp_grad(theta, want_grad, target.data)
    assert logp == pytest.approx(want, rel=1e-14) and np.allclose(grad, want_grad, rtol=1e-14)


def test_a_fresh_process_loads_the_adapter_from_numbas_cache_instead_of_compiling():
    import subprocess
    import sys

    import workbench as wb

    _ = wb.targets.banana(dim=2).kernel_logp_grad  # compiled (and saved) here, if not already
    code = ("import workbench as wb\n"
            "a = wb.targets.banana(dim=2).kernel_logp_grad\n"
            "print(sum(a.stats.cache_hits.values()), sum(a.stats.cache_misses.values()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    hits, misses = map(int, out.stdout.split())
    assert (hits, misses) == (1, 0)


def test_an_allocating_function_is_compiled_with_numbas_runtime_and_remembered():
    import numpy as np

    import workbench as wb
    from workbench.adapters import KERNEL_FORM_DIR, compile_kernel_form

    target = wb.targets.bnn(n_data=20, widths=[3])
    adapter = compile_kernel_form(target.logp_grad, target._packed.layout)
    assert adapter.targetoptions.get("_nrt", True)  # with the runtime (np.empty inside)
    assert list(KERNEL_FORM_DIR.glob("*.needs_runtime"))  # so a next process goes straight there
    theta = 0.1 * np.ones(target.dim)
    logp, grad = _adapter_values(adapter, target, theta)
    want_grad = np.empty(target.dim)
    assert logp == pytest.approx(target.logp_grad(theta, want_grad, target.data), rel=1e-12)
    assert np.allclose(grad, want_grad, rtol=1e-12)


def test_a_closure_is_compiled_in_memory():
    import numpy as np

    from workbench.adapters import _cached_adapter, compile_kernel_form, pack_data

    scale = 2.0

    @numba.njit
    def logp_grad(theta, grad_out, data):
        grad_out[:] = -scale * theta * data[0]
        return -0.5 * scale * np.sum(data[0] * theta**2)

    packed = pack_data((np.ones(3),))
    assert _cached_adapter(logp_grad, packed.layout, False, {}) is None
    adapter = compile_kernel_form(logp_grad, packed.layout)
    grad = np.empty(3)
    assert adapter(np.ones(3), grad, packed.packed) == pytest.approx(-3.0)
    assert np.allclose(grad, -2.0)


def test_an_edited_function_gets_a_new_cached_adapter(tmp_path, monkeypatch):
    """The adapter's file name carries the function's file and the code this process loaded:
    a file edited after its import compiles what was loaded, and the reloaded function gets
    a new adapter rather than the one compiled from the old code; the old one's file and Numba's
    cache of it are deleted, so edits (and upgrades) do not pile adapters up."""
    import importlib
    import sys

    import numpy as np

    from workbench.adapters import KERNEL_FORM_DIR, compile_kernel_form, pack_data

    source = ("import numba\n\n\n@numba.njit(cache=True)\ndef logp_grad(theta, grad_out, data):\n"
              "    grad_out[:] = -{k} * theta\n    return -0.5 * {k} * (theta ** 2).sum()\n")
    module_file = tmp_path / "user_density_probe.py"
    module_file.write_text(source.format(k=1.0))
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("user_density_probe")
    module_file.write_text(source.format(k=3.0))  # edited after the import
    packed = pack_data((np.zeros(1),))
    grad = np.empty(2)
    loaded = compile_kernel_form(module.logp_grad, packed.layout)
    assert loaded(np.ones(2), grad, packed.packed) == pytest.approx(-1.0)  # the code in memory
    old_name = loaded.py_func.__module__
    assert (KERNEL_FORM_DIR / f"{old_name}.py").exists()
    assert list((KERNEL_FORM_DIR / "__pycache__").glob(f"{old_name}.*"))  # Numba's cache of it
    module = importlib.reload(module)
    edited = compile_kernel_form(module.logp_grad, packed.layout)
    assert edited.py_func.__module__ != old_name
    assert edited.py_func.__module__.rsplit("_", 1)[0] == old_name.rsplit("_", 1)[0]  # the same adapter
    assert not (KERNEL_FORM_DIR / f"{old_name}.py").exists()
    assert not list((KERNEL_FORM_DIR / "__pycache__").glob(f"{old_name}.*"))
    assert edited(np.ones(2), grad, packed.packed) == pytest.approx(-3.0) and np.allclose(grad, -3.0)
    sys.modules.pop("user_density_probe", None)


def test_a_fastmath_functions_adapter_has_one_file_name_in_every_process(tmp_path):
    """fastmath flags are a set, whose order follows string hashing: the adapter's file (and so
    Numba's cache) must not depend on PYTHONHASHSEED."""
    import os
    import subprocess
    import sys

    (tmp_path / "fastmath_probe.py").write_text(
        "import numba\n\n\n@numba.njit(fastmath={'reassoc', 'contract', 'nsz', 'arcp'})\n"
        "def logp_grad(theta, grad_out, data):\n    grad_out[:] = -theta\n    return -0.5 * (theta ** 2).sum()\n")
    code = ("import numpy as np\nfrom fastmath_probe import logp_grad\n"
            "from workbench.adapters import compile_kernel_form, pack_data\n"
            "print(compile_kernel_form(logp_grad, pack_data((np.zeros(1),)).layout).py_func.__module__)")
    names = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300, check=True)
        names.add(out.stdout.strip())
    assert len(names) == 1 and next(iter(names)).startswith("kernel_form_")


def test_a_target_whose_data_is_one_float_and_one_int_array_shares_its_adapter_across_sizes():
    """Each 1-D array alone of its kind is its whole buffer: one adapter serves every size (a
    flow's refits change the sizes of its coefficients), and it reads the same values."""
    from workbench.adapters import kernel_form, pack_data

    @numba.njit
    def logp_grad(theta, grad_out, data):
        w, k = data
        grad_out[:] = -theta
        return -0.5 * np.sum(theta ** 2) + w.sum() + k.size

    small = pack_data((np.array([1.0, 2.0]), np.array([3], dtype=np.int64)))
    large = pack_data((np.arange(5.0), np.arange(4, dtype=np.int64)))
    adapter = kernel_form(logp_grad, small.layout)
    assert kernel_form(logp_grad, large.layout) is adapter
    g = np.empty(2)
    assert adapter(np.zeros(2), g, small.packed) == 3.0 + 1
    assert adapter(np.zeros(2), g, large.packed) == 10.0 + 4
    # two float arrays are not whole buffers: each size is its own layout
    assert kernel_form(logp_grad, pack_data((np.ones(2), np.ones(3))).layout) is not adapter


STALE_GLOBAL_SCRIPT = '''
import sys
import numba
import numpy as np
import workbench as wb

scale = float(sys.argv[1])


@numba.njit
def inner(theta, g):
    s = 0.0
    for i in range(theta.size):
        s += -0.5 * (theta[i] / scale) ** 2
        g[i] = -theta[i] / scale ** 2
    return s


@numba.njit
def lg(theta, g, data):
    return inner(theta, g)


if __name__ == "__main__":
    t = wb.Target.from_numba(lg, dim=2, name="scaled")
    r = wb.methods.NUTS(chains=2, warmup=300, draws=1000, metric="diag").run(t, seed=1)
    print(" ".join(str(v) for v in r.draws.reshape(-1, 2).std(axis=0)))
'''


def test_a_script_whose_density_reads_a_global_gets_each_values_posterior_in_fresh_processes(tmp_path):
    """A script reads a scale from its command line; its density's callee reads it as a global.
    Numba freezes globals at compile time: the adapter cached on disk for scale 1 must not be
    served for scale 10 (it was: sd 1.0 for both)."""
    import subprocess
    import sys

    script = tmp_path / "scaled_script.py"
    script.write_text(STALE_GLOBAL_SCRIPT)
    for scale in (1.0, 10.0, 10.0, 1.0):  # the last two: each served from its own cached adapter
        out = subprocess.run([sys.executable, str(script), str(scale)], capture_output=True, text=True, timeout=600,
                             cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        sd = np.array(out.stdout.split(), dtype=float)
        # 2 chains x 1,000 draws: the sd's relative error is about 3% at an ESS of 500
        assert np.allclose(sd, scale, rtol=0.15), (scale, sd)
