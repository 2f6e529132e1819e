"""tests/tiers.py: the executor markers it adds and the slow tier it leaves out, checked on a small
generated test folder run by pytest in this process (pytester); and how tests/conftest.py splits a
run: the ``dask_chunks`` mark (Dask once per chunk size) and whole files per xdist worker."""
from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

_CONFTEST = """
from tests import tiers

def pytest_configure(config):
    for name in ("slow", "numpy", "numba", "jax", "dask", "cupy"):
        config.addinivalue_line("markers", name + ": tier")
    tiers.register(config)
"""

_PARAMETRISED = """
import pytest

@pytest.mark.parametrize("executor", ["numpy", "numba", "jax", "dask"])
def test_on(executor):
    pass

def test_plain():
    pass

@pytest.mark.slow
def test_slow():
    pass
"""


@pytest.fixture
def folder(pytester, monkeypatch):
    monkeypatch.syspath_prepend(str(__import__("pathlib").Path(__file__).resolve().parents[1]))
    monkeypatch.delenv("ARRAYX_TEST_PROFILE", raising=False)
    pytester.makeconftest(_CONFTEST)
    pytester.makepyfile(test_mixed=_PARAMETRISED)
    sub = pytester.mkpydir("tests") / "executors"
    sub.mkdir()
    (sub / "test_dask_things.py").write_text("def test_by_file():\n    pass\n")
    return pytester


def _passed(result) -> int:
    return result.parseoutcomes().get("passed", 0)


def test_default_run_leaves_the_slow_tier_out(folder):
    result = folder.runpytest_inprocess("-q", "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed") == 6 and outcomes.get("deselected") == 1, outcomes


def test_slow_marker_runs_only_the_slow_tier(folder):
    assert _passed(folder.runpytest_inprocess("-q", "-p", "no:cacheprovider", "-m", "slow")) == 1


@pytest.mark.parametrize("marker, count", [("dask", 2), ("not dask", 5)])
def test_executor_markers_come_from_the_parameter_and_the_file_name(folder, marker, count):
    # dask: test_on[dask] by its parameter, test_by_file by tests/executors/test_dask_*.py
    result = folder.runpytest_inprocess("-q", "-p", "no:cacheprovider", "-m", marker)
    assert _passed(result) == count, result.outlines[-3:]


def test_deep_profile_runs_every_tier(folder, monkeypatch):
    monkeypatch.setenv("ARRAYX_TEST_PROFILE", "deep")
    result = folder.runpytest_inprocess("-q", "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed") == 7 and "deselected" not in outcomes, outcomes


def test_the_slow_tier_names_only_marked_tests(folder):
    # -m slow with no slow test left is pytest's "no tests" (exit 5), which .ci/run turns into a failure
    (folder.path / "test_mixed.py").write_text(_PARAMETRISED.replace("@pytest.mark.slow\n", ""))
    result = folder.runpytest_inprocess("-q", "-p", "no:cacheprovider", "-m", "slow")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


_CHUNKED = """
import pytest

@pytest.mark.dask_chunks(2, 1)
def test_chunked(executor, request):
    if executor == "dask":
        from arrayx.executors import dask as xd
        assert xd.get_scheduler() == "sync"
        assert request.node.callspec.id == f"dask-chunks{xd.get_chunks()}"
    else:
        assert request.node.callspec.id == executor
"""


def test_dask_chunks_gives_dask_one_run_per_chunk_size_and_the_others_one(folder):
    # tests/conftest.py's executor fixture (which conformance/conftest.py imports alone) and
    # dask_chunks mark; the dask runs keep the dask marker
    folder.makeconftest(_CONFTEST + "\nfrom tests.conftest import pytest_configure as _c, pytest_generate_tests, "
                                    "executor\n\n_tiers_configure = pytest_configure\n\n"
                                    "def pytest_configure(config):\n    _tiers_configure(config)\n    _c(config)\n")
    folder.makepyfile(test_chunked=_CHUNKED)
    every = folder.runpytest_inprocess("-q", "-p", "no:cacheprovider", "test_chunked.py", "--collect-only")
    ids = sorted(line.split("[", 1)[1].rstrip("]") for line in every.outlines if "test_chunked[" in line)
    from tests.conftest import ALL_EXECUTORS

    assert ids == sorted([n for n in ALL_EXECUTORS if n != "dask"] + ["dask-chunks2", "dask-chunks1"]), ids
    result = folder.runpytest_inprocess("-q", "-p", "no:cacheprovider", "-m", "dask", "test_chunked.py")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("skipped", 0) == 2 and "failed" not in outcomes, outcomes
    everything = folder.runpytest_inprocess("-q", "-p", "no:cacheprovider", "test_chunked.py").parseoutcomes()
    assert "failed" not in everything and "error" not in everything, everything


def test_n_workers_without_dist_get_whole_files(monkeypatch):
    # tests/conftest.py: -n N alone schedules whole files per worker; a --dist the user gives is kept
    import types

    xdist_scheduler = pytest.importorskip("xdist.scheduler")

    from tests.conftest import pytest_xdist_make_scheduler

    class Whole:  # stands in for xdist's LoadFileScheduling (which needs real worker nodes)
        def __init__(self, config, log):
            self.config = config

    class Config:  # what the hook reads: xdist's dist ("load" for -n alone and for --dist load), the words given
        def __init__(self, *args, addopts=()):
            self.invocation_params = types.SimpleNamespace(args=args)
            self._addopts = list(addopts)

        def getvalue(self, name):
            return "load"

        def getini(self, name):
            return self._addopts

    monkeypatch.setattr(xdist_scheduler, "LoadFileScheduling", Whole)
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    assert isinstance(pytest_xdist_make_scheduler(Config("-n", "2"), log=None), Whole)
    for config in (Config("-n", "2", "--dist", "load"), Config("-n", "2", "--dist=load"),
                   Config("-n", "2", addopts=["--dist", "load"])):
        assert pytest_xdist_make_scheduler(config, log=None) is None
    monkeypatch.setenv("PYTEST_ADDOPTS", "--dist load")
    assert pytest_xdist_make_scheduler(Config("-n", "2"), log=None) is None


def test_queued_files_go_out_longest_first_and_done_files_leave_the_count():
    # tests/scheduling.py: after xdist's first files, the queue is sorted by expected time; a file whose
    # tests are all done is no longer in the worker's count of pending tests
    import collections

    pytest.importorskip("xdist.scheduler")
    from tests import scheduling

    many = {f"tests/api/test_many.py::t[{i}]": False for i in range(400)}  # 400 * 0.06 s = 24 s
    few_long = {"tests/executors/test_faults.py::a": False, "tests/executors/test_faults.py::b": False}  # 24 s
    queue = collections.OrderedDict([("tests/test_one.py", {"tests/test_one.py::t": False}),
                                     ("tests/api/test_many.py", many),
                                     ("tests/test_ten.py", {f"tests/test_ten.py::t[{i}]": False for i in range(10)}),
                                     ("tests/executors/test_faults.py", few_long)])
    assert scheduling.expected_seconds("tests/executors/test_faults.py", 2) == scheduling.SECONDS[
        "tests/executors/test_faults.py"]
    scheduling.longest_first(queue)
    assert list(queue) == ["tests/api/test_many.py", "tests/executors/test_faults.py", "tests/test_ten.py",
                           "tests/test_one.py"]  # a tie keeps the earlier file first

    class Config:  # what xdist's scheduler reads: the two workers
        def getvalue(self, name):
            return {"tx": ["2*popen"]}[name]

    sched = scheduling.file_scheduler(Config(), log=None)
    node = object()
    ids = ["tests/test_ten.py::t[0]", "tests/test_ten.py::t[1]", "tests/test_one.py::t"]
    sched.registered_collections = {node: ids}
    sched.assigned_work = {node: {"tests/test_ten.py": {ids[0]: False, ids[1]: False},
                                  "tests/test_one.py": {ids[2]: False}}}
    sched._reschedule = lambda node: None  # (no real worker to hand more files to)
    sched.mark_test_complete(node, 0)
    assert sched._pending_of(sched.assigned_work[node]) == 2 and "tests/test_ten.py" in sched.assigned_work[node]
    sched.mark_test_complete(node, 1)
    assert list(sched.assigned_work[node]) == ["tests/test_one.py"] and sched.has_pending
    sched.mark_test_complete(node, 2)
    assert sched.assigned_work == {node: {}} and not sched.has_pending


def test_n_workers_share_the_cores_with_their_blas_threads(monkeypatch):
    # tests/conftest.py: -n N on the controller gives each worker's OpenBLAS cores // N threads for the
    # session; a value the user set, a worker, and a run without -n are left alone
    import os
    import types

    from tests import conftest

    def config(workers, worker=False):
        c = types.SimpleNamespace(option=types.SimpleNamespace(numprocesses=workers))
        if worker:
            c.workerinput = {}
        return c

    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    for workers, want in [(2, "4"), (8, "1"), (16, "1"), ("auto", "1")]:
        monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
        c = config(workers)
        conftest._share_the_cores(c)
        assert os.environ.get("OPENBLAS_NUM_THREADS") == want, workers
        conftest.pytest_unconfigure(c)
        assert "OPENBLAS_NUM_THREADS" not in os.environ
    for c in (config(None), config(0), config(1), config(2, worker=True)):
        conftest._share_the_cores(c)
        assert "OPENBLAS_NUM_THREADS" not in os.environ
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")
    conftest._share_the_cores(config(2))
    assert os.environ["OPENBLAS_NUM_THREADS"] == "3"


def test_an_absent_executor_keeps_one_skip_per_file(pytester, monkeypatch):
    """tests/tiers.py's one-skip-per-file rule: of the tests that run on an executor absent here through
    tests/conftest.py's ``executor`` fixture, each file keeps one, which skips and says why; the rest
    are deselected.  A test's own ``executor`` parameter is not concerned."""
    from arrayx.core import executor as base

    if base.get("cupy").available():
        pytest.skip("cupy is available here: no executor is absent")
    monkeypatch.syspath_prepend(str(__import__("pathlib").Path(__file__).resolve().parents[1]))
    monkeypatch.delenv("ARRAYX_TEST_PROFILE", raising=False)
    pytester.makeconftest(_CONFTEST + "\nfrom tests.conftest import executor  # noqa: E402,F401\n")
    pytester.makepyfile(test_two="""
import pytest

def test_a(executor):
    pass

def test_b(executor):
    pass

@pytest.mark.parametrize("executor", ["cupy"])
def test_own(executor):
    pass
""")
    result = pytester.runpytest_inprocess("-q", "-rs", "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    available = sum(base.get(n).available() for n in ("numpy", "numba", "jax", "dask"))
    assert outcomes.get("passed") == 2 * available + 1 and outcomes.get("skipped") == 1, outcomes
    assert outcomes.get("deselected") == 1, outcomes
    assert any("executor 'cupy' unavailable" in line for line in result.outlines), result.outlines[-5:]
