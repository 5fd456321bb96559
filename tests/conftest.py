import os
import tempfile

os.environ.setdefault("MPLBACKEND", "Agg")  # headless: figures render to files only
# reference posteriors built by tests go to a fresh folder, never to the user's cache
os.environ["WORKBENCH_CACHE"] = tempfile.mkdtemp(prefix="workbench-test-cache-")

import pytest


def pytest_configure(config):
    """Under pytest-xdist, compile (or load) the library's kernels once, in the controller, split
    over a pool as a study does, before the workers start: from a cold cache (CI) each worker
    and each study pool would otherwise compile every kernel at the same time, several minutes
    each on two cores."""
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        from workbench.study import make_executor
        from workbench.study.runner import compile_kernels_on

        with make_executor("local") as pool:
            compile_kernels_on(pool)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own, which reads the group marker
def pytest_collection_modifyitems(config, items):
    """The tests that render the quick reports share one session's run of every study (minutes):
    under pytest-xdist (``make test`` runs on every core) they form one group on one worker, and
    they go first, so the other worker runs the rest of the suite meanwhile."""
    shared = [item for item in items if "quick_study" in getattr(item, "fixturenames", ())]
    for item in shared:
        item.add_marker(pytest.mark.xdist_group("quick_reports"))
    shared_ids = {id(item) for item in shared}
    items[:] = shared + [item for item in items if id(item) not in shared_ids]


@pytest.fixture(scope="session")
def quick_study(tmp_path_factory):
    """``quick_study(name) -> (run, page)``: the study's quick mode, run once per test session
    into one shared output folder and cache (so reference posteriors are computed once)."""
    from workbench.study import load_study, make_executor, run_and_report

    out = tmp_path_factory.mktemp("quick_reports")
    done = {}
    with make_executor("local") as pool:  # one pool for every study, as `make report` runs them

        def run(name):
            if name not in done:
                done[name] = run_and_report(load_study(name), quick=True, out=out, progress=False, executor=pool)
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
