import os
import tempfile

os.environ.setdefault("MPLBACKEND", "Agg")  # headless: figures render to files only
# reference posteriors built by tests go to a fresh folder, never to the user's cache
os.environ["WORKBENCH_CACHE"] = tempfile.mkdtemp(prefix="workbench-test-cache-")

import pytest


@pytest.fixture(scope="session")
def quick_study(tmp_path_factory):
    """``quick_study(name) -> (run, page)``: the study's quick mode, run once per test session
    into one shared output folder and cache (so reference posteriors are computed once)."""
    from workbench.study import load_study, make_executor, run_and_report

    import dataclasses

    from tests.study_fixtures import smallest_budgets

    out = tmp_path_factory.mktemp("quick_reports")
    done = {}
    with make_executor("local") as pool:  # one pool for every study, as `make report` runs them

        def run(name, smoke=False):
            """``smoke``: only the quick grid's smallest budget (enough to draw every figure and
            table of the page); a study whose findings a test checks runs its whole quick grid."""
            if name not in done:
                study = load_study(name)
                if smoke:
                    study = dataclasses.replace(study, grid=lambda quick, grid=study.grid: smallest_budgets(grid(quick)))
                done[name] = run_and_report(study, quick=True, out=out, progress=False, executor=pool)
            return done[name]

        yield run


@pytest.fixture
def ctrl_c_raises():
    """Ctrl-C (SIGINT) raises KeyboardInterrupt during the test, whatever disposition the
    process inherited: a shell starts background jobs (and some CI runners start their
    commands) with SIGINT ignored, and a test that sends SIGINT would then wait in vain."""
    import signal

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    """Under pytest-xdist, before its workers start: compile (or load) the library's kernels
    once, split between processes (``jit.kernel_groups``), so that the workers load them from
    Numba's disk cache instead of each compiling every kernel (Numba's cache does not
    coordinate: two workers compile the same kernel at the same moment). A cold cache is what
    CI starts from."""
    config = session.config
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return  # an xdist worker, or no xdist
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from workbench.jit import kernel_groups
    from workbench.study.runner import compile_library_kernels

    groups = kernel_groups(os.cpu_count() or 1)
    with ProcessPoolExecutor(len(groups), mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(compile_library_kernels, groups))


def pytest_collection_modifyitems(config, items):
    """``make test`` runs the suite on every core (pytest-xdist, ``--dist loadgroup``): each file's
    tests go to one worker, so a module's fixtures are made once, and every test of one study's
    quick grid (the session fixture ``quick_study``) goes to one worker, so each quick study runs
    once: the render test of study ``name`` (parametrized by it) and its finding's test
    (``test_<name>_quick_study...``). Without xdist the marks do nothing."""
    from workbench.study import available_studies

    studies = sorted(available_studies(), key=len, reverse=True)  # "nn4post_ablation" before a shorter prefix
    for item in items:
        group = item.nodeid.split("::")[0]
        if "quick_study" in getattr(item, "fixturenames", ()):
            callspec = getattr(item, "callspec", None)
            name = callspec.params.get("name") if callspec is not None else None
            name = name or next((s for s in studies if item.name.startswith(f"test_{s}_quick_study")), None)
            if name is None:
                raise pytest.UsageError(f"{item.nodeid} uses quick_study but names no study: call it "
                                        "test_<study>_quick_study... so its study runs on one worker")
            group = f"quick_study:{name}"
        item.add_marker(pytest.mark.xdist_group(group))
