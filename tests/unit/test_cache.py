"""workbench/cache.py: content digests and the version every cache key carries."""

import numpy as np

import workbench as wb
from workbench.cache import code_version, object_digest, package_version, spec_hash


def test_object_digest_sees_content_not_type_alone():
    g = wb.approximations.Gaussian
    assert object_digest(g(np.zeros(2), np.eye(2))) == object_digest(g(np.zeros(2), np.eye(2)))
    assert object_digest(g(np.zeros(2), np.eye(2))) != object_digest(g(np.ones(2), np.eye(2)))
    assert object_digest({"a": np.arange(3)}) != object_digest({"a": np.arange(3.0)})  # dtype counts
    assert object_digest(np.sum) != object_digest(np.mean)  # functions by qualified name


def test_spec_hash_ignores_key_order_and_code_version_carries_the_code_digest():
    assert spec_hash({"a": 1, "b": [1, 2]}) == spec_hash({"b": [1, 2], "a": 1})
    assert spec_hash({"a": 1}) != spec_hash({"a": 2})
    assert code_version().startswith(package_version() + "+") and len(code_version().split("+")[-1]) == 12


def test_the_code_digest_ignores_what_is_generated_under_pycache():
    """Adapters compiled for targets are written under workbench/__pycache__ (adapters.py): a new one
    must not change every cache key."""
    from workbench import adapters, cache

    cache.code_digest.cache_clear()
    before = cache.code_digest()
    probe = adapters.KERNEL_FORM_DIR / "kernel_form_probe_for_the_digest_test.py"
    probe.parent.mkdir(parents=True, exist_ok=True)
    try:
        probe.write_text("# not source\n")
        cache.code_digest.cache_clear()
        assert cache.code_digest() == before
    finally:
        probe.unlink()
        cache.code_digest.cache_clear()
