import os
import tempfile

os.environ.setdefault("MPLBACKEND", "Agg")  # headless: figures render to files only
if os.environ.get("PYTEST_XDIST_WORKER"):
    # one BLAS thread a pytest-xdist worker (set before NumPy loads): the workers already fill
    # the cores, and BLAS threads spinning beside them made NN4Post's 100-d fits 40x slower
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")
# reference posteriors built by tests go to a fresh folder, never to the user's cache
os.environ["WORKBENCH_CACHE"] = tempfile.mkdtemp(prefix="workbench-test-cache-")

import pytest


@pytest.fixture(scope="session")
def quick_study(tmp_path_factory):
    """``quick_study(name) -> (run, page)``: the study's quick mode, run once per test session
    into one shared output folder and cache (so reference posteriors are computed once)."""
    import dataclasses

    from tests.study_fixtures import smallest_budgets
    from workbench.study import load_study, make_executor, run_and_report

    out = tmp_path_factory.mktemp("quick_reports")
    done = {}
    # one pool for every study, as `make report` runs them; under pytest-xdist one process a
    # worker: each worker is then one stream of work, and two workers' pools do not fight for
    # the cores (measured: two pools of two on 2 cores ran the suite slower than one process)
    workers = 1 if os.environ.get("PYTEST_XDIST_WORKER") else None
    with make_executor("local", workers=workers) as pool:

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
    """Under pytest-xdist (``make test``: ``-n auto --dist loadfile``, each file's tests on one
    worker, so module and session fixtures are made once), before its workers start: compile
    (or load) the library's kernels once, split between processes (``jit.kernel_groups``), so
    that the workers load them from Numba's disk cache instead of each compiling every kernel
    (Numba's cache does not coordinate). A cold cache is what CI starts from."""
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
