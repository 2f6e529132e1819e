"""Shared fixtures: every test that takes ``executor`` runs once per registered executor.

An executor whose library is missing or whose hardware is absent is skipped
with the reason it gives; results are compared against the NumPy executor.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest

import arrayx
from arrayx.core import executor as _base
from arrayx.transforms import staging as _staging
from conformance import compare as _compare

_staging.CHECK_GRAPHS = True  # every graph the tests stage is type-checked (transforms/graph.typecheck)

ALL_EXECUTORS = _base.registered()


def pytest_configure(config) -> None:
    from tests import tiers

    tiers.register(config)  # the slow tier and the executor markers (tests/tiers.py)
    config.addinivalue_line("markers", "dask_chunks(*sizes): the test's dask run once per chunk size (sync "
                                       "scheduler); the other executors once")
    _share_jax_programs(config)
    _share_the_cores(config)
    _compile_arrayx_once(config)


def _compile_arrayx_once(config) -> None:
    """Where Python writes no bytecode (``PYTHONDONTWRITEBYTECODE``, as some containers set), every
    xdist worker and every Python process a test starts (dozens: faults, caches, children with fresh
    state, Dask workers) compiled arrayx's and conformance's sources again at import: ~0.55 s of CPU
    each (``import arrayx`` with the jax executor, 1.82 s against 1.28 s with bytecode, 2 cores).  The
    controller compiles them once per session into their ``__pycache__`` folders (what Python itself
    does on a first import where bytecode is written; ignored by git), which those processes then read
    (the variable stops writing, not reading).  The test files' own bytecode stays pytest's."""
    import compileall
    import pathlib
    import sys

    if hasattr(config, "workerinput") or not sys.dont_write_bytecode:
        return
    root = pathlib.Path(__file__).resolve().parents[1]
    for package in ("arrayx", "conformance"):
        compileall.compile_dir(root / package, quiet=1, workers=0)


#: the thread count OpenBLAS (NumPy's and SciPy's BLAS here) reads when it loads
_BLAS_THREADS = "OPENBLAS_NUM_THREADS"


def _share_the_cores(config) -> None:
    """``-n N``: each xdist worker's OpenBLAS gets the cores divided by N (at least one thread), for
    the session (``pytest_unconfigure`` restores the variable): the workers and the processes tests
    start inherit it.  With every core running a worker, each worker's own BLAS threads waited for
    one another (the README's ``-n 2`` on 2 cores: tests/executors/test_numpy_svd.py 13 s against
    1.1 s with one thread; the linalg files about a quarter less CPU).  Only the controller sets it;
    an ``OPENBLAS_NUM_THREADS`` the user set is left alone."""
    import os

    workers = getattr(config.option, "numprocesses", None)
    if hasattr(config, "workerinput") or not workers or os.environ.get(_BLAS_THREADS):
        return
    cores = os.cpu_count() or 1
    per_worker = max(1, cores // (cores if isinstance(workers, str) else int(workers)))  # "auto": one per core
    if per_worker < cores:
        config._arrayx_blas_threads = True
        os.environ[_BLAS_THREADS] = str(per_worker)


#: environment variables JAX reads its persistent compilation cache settings from when it is imported
_JAX_CACHE_ENV = ("JAX_COMPILATION_CACHE_DIR", "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS")


def _share_jax_programs(config) -> None:
    """One JAX disk cache of compiled programs for the whole pytest session, in a temporary folder
    made here and removed at the end (``pytest_unconfigure``; never the user's cache folder): the
    xdist workers (and the Python subprocesses tests start) inherit it through JAX's environment
    variables, so an eager op's XLA program compiled by one worker is loaded by the other (the
    README's ``-n 2`` run: both compile many of the same small programs).  Only the controller (or a
    run without xdist) makes it; a ``JAX_COMPILATION_CACHE_DIR`` the user set is left alone."""
    import os
    import tempfile

    if hasattr(config, "workerinput") or os.environ.get(_JAX_CACHE_ENV[0]):
        return
    _remove_folders_of_ended_sessions(tempfile.gettempdir())
    folder = tempfile.mkdtemp(prefix=f"{_JAX_CACHE_PREFIX}{os.getpid()}-")
    config._arrayx_jax_cache = (folder, {name: os.environ.get(name) for name in _JAX_CACHE_ENV})
    os.environ[_JAX_CACHE_ENV[0]] = folder
    os.environ[_JAX_CACHE_ENV[1]] = "0"  # every program: an eager op's is small and quick, and there are thousands


_JAX_CACHE_PREFIX = "arrayx-tests-jax-"


def _remove_folders_of_ended_sessions(tmp: str) -> None:
    """The session folders (``<prefix><pid>-*``) of pytest processes that no longer run: a session
    killed before ``pytest_unconfigure`` leaves its folder behind."""
    import os
    import pathlib
    import shutil

    for folder in pathlib.Path(tmp).glob(f"{_JAX_CACHE_PREFIX}*-*"):
        pid = folder.name[len(_JAX_CACHE_PREFIX):].split("-", 1)[0]
        if not pid.isdigit() or folder.is_symlink() or not folder.is_dir() or folder.stat().st_uid != os.getuid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except OSError:  # a process of another user has that id: still running
            pass


def pytest_unconfigure(config) -> None:
    import os
    import shutil

    if hasattr(config, "_arrayx_blas_threads"):
        os.environ.pop(_BLAS_THREADS, None)  # unset before: _share_the_cores sets it only then
    made = getattr(config, "_arrayx_jax_cache", None)
    if made is None:
        return
    folder, saved = made
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    shutil.rmtree(folder, ignore_errors=True)


def _dist_chosen(config) -> bool:
    """``--dist`` given on the command line, in PYTEST_ADDOPTS or in the ini file's addopts."""
    import os
    import shlex

    words = [*config.invocation_params.args, *shlex.split(os.environ.get("PYTEST_ADDOPTS", "")),
             *config.getini("addopts")]
    return any(str(w).startswith("--dist") for w in words)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``-n N`` without ``--dist``: whole files per worker (xdist's ``loadfile``, files with the most
    tests first), so each module's JAX programs, Numba kernels and reference computations are
    made by one worker rather than by every worker that gets some of its tests (the README's
    ``-n 2`` run: about 15% less time); after the first files, the longest files first
    (``tests/scheduling.py``).  A ``--dist`` the user gives is kept."""
    if config.getvalue("dist") != "load" or _dist_chosen(config):
        return None
    from tests import scheduling

    return scheduling.file_scheduler(config, log)


def pytest_collection_finish(session) -> None:
    """Everything collection made and still holds (the items, their parameters, the test modules,
    tens of thousands of objects for the whole suite) is kept out of the garbage collector's full
    passes from here on (``gc.freeze``): they live until the session ends, and each full pass,
    automatic or a test's ``gc.collect()``, scanned them all again (about 0.3 s a pass)."""
    import gc

    gc.collect()  # what collection left behind goes first: only what is still used is frozen
    gc.freeze()


@pytest.hookimpl(tryfirst=True)  # a parametrize mark, added before pytest reads the marks
def pytest_generate_tests(metafunc) -> None:
    """``@pytest.mark.dask_chunks(2, 1)``: the ``executor`` parameter's dask entry becomes one entry
    per chunk size (ids ``dask-chunks2``, ``dask-chunks1``; the value ``("dask", size)``), so
    multi-chunk Dask paths are exercised without running the other executors once per chunk size
    as well."""
    mark = metafunc.definition.get_closest_marker("dask_chunks")
    if mark is None or "executor" not in metafunc.fixturenames:
        return
    values, ids = [], []
    for name in ALL_EXECUTORS:
        for size in (mark.args if name == "dask" else (None,)):
            values.append(name if size is None else (name, size))
            ids.append(name if size is None else f"{name}-chunks{size}")
    metafunc.definition.add_marker(pytest.mark.parametrize("executor", values, ids=ids, indirect=True))


@pytest.fixture(params=ALL_EXECUTORS)
def executor(request) -> str:
    """Name of an executor available here; the test body runs inside ``use_executor(name)``.  With
    the ``dask_chunks`` mark, dask's entries are ``("dask", size)``: the sync scheduler and chunks
    of ``size`` for the test, restored afterwards."""
    name, chunks = request.param if isinstance(request.param, tuple) else (request.param, None)
    ex = _base.get(name)
    if not ex.available():
        pytest.skip(f"executor {name!r} unavailable: {ex.unavailable_reason}")
    if chunks is None:
        with arrayx.use_executor(name):
            yield name
        return
    from arrayx.executors import dask as xd

    saved = xd.get_scheduler(), xd.get_chunks()
    xd.set_scheduler("sync")
    xd.set_chunks(chunks)
    try:
        with arrayx.use_executor(name):
            yield name
    finally:
        xd.set_scheduler(saved[0])
        xd.set_chunks(saved[1])


def to_numpy(x) -> np.ndarray:
    """Host copy of an arrayx array (or a tuple/list of them)."""
    if isinstance(x, (tuple, list)):
        return [to_numpy(v) for v in x]
    return np.asarray(x)


def tolerance(dtype) -> dict:
    """``rtol``/``atol`` keywords of the one tolerance rule (``conformance.compare``, class "composite")
    for a result dtype (exact for integers and bools)."""
    rtol, atol = _compare.bounds(dtype, "composite")
    return {"rtol": rtol, "atol": atol}


def assert_same(actual, expected) -> None:
    """``actual`` (arrayx) equals ``expected`` (arrayx or NumPy): dtype, shape and values, by the one
    comparator (``conformance.compare.assert_same``)."""
    _compare.assert_same(actual, expected)


def on_numpy(fn, *args, **kwargs):
    """Run ``fn`` with every arrayx argument moved to the NumPy executor (the reference)."""
    def move(v):
        if isinstance(v, arrayx.Array):
            return arrayx.asarray(v, device="numpy")
        if isinstance(v, (list, tuple)):
            return type(v)(move(u) for u in v)
        return v

    with arrayx.use_executor("numpy"):
        return fn(*[move(a) for a in args], **{k: move(v) for k, v in kwargs.items()})


def assert_matches_numpy(fn, *args, **kwargs):
    """``fn(*args)`` on the arrays' executor equals the same call on the NumPy executor."""
    got = fn(*args, **kwargs)
    want = on_numpy(fn, *args, **kwargs)
    assert_same(got, want)
    return got


def run_in_threads(target, n: int) -> None:
    """``target(i)`` for i in range(n), each in its own thread, all started before any is joined."""
    threads = [threading.Thread(target=target, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _jax_in_64_bits():
    try:
        import jax
    except ImportError:
        yield
        return
    with jax.enable_x64(True):
        yield


@pytest.fixture
def jax_peer_in_64_bits():
    """JAX, the peer a test compares with, computes in 64 bits: jax.enable_x64 for this thread and
    this test only (arrayx never sets the process-wide jax_enable_x64, and neither do its tests)."""
    yield from _jax_in_64_bits()


@pytest.fixture(scope="module")
def jax_peer_in_64_bits_module():
    """:func:`jax_peer_in_64_bits` for a whole module."""
    yield from _jax_in_64_bits()
