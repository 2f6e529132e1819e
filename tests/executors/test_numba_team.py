"""The threads that run fused kernels (arrayx/executors/numba/team.py) and the kernels' vector width
(arrayx/executors/numba/vectors.py): every chunk runs once, whoever claims it; callers in several
threads at once; a team after fork; workers keep no buffer alive; results do not depend on the
vector width.  Values are compared with the NumPy executor.
"""
from __future__ import annotations

import gc
import hashlib
import json
import multiprocessing
import os
import pathlib
import subprocess
import sys
import threading
import time
import weakref

import numpy as np
import pytest

import arrayx as xp
from arrayx.core import executor as base
from tests.conftest import on_numpy, run_in_threads

pytest.importorskip("numba")
if not base.get("numba").available():
    pytest.skip("numba unavailable", allow_module_level=True)

from arrayx.executors.numba.fusion import run as _numba_fused_run  # noqa: E402 (imports Numba)
from arrayx.executors.numba import team as _numba_team

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def parallel_kernels_on_small_arrays():
    ex = base.get("numba")
    saved = ex.fusion_min_size, ex.fusion_parallel_size
    ex.fusion_min_size, ex.fusion_parallel_size = 0, 0
    try:
        yield
    finally:
        ex.fusion_min_size, ex.fusion_parallel_size = saved


def selu(x):
    return 1.0507009873554805 * xp.where(x > 0, x, 1.6732632423543772 * (xp.exp(x) - 1.0))


def _patterns(x):
    """A flat kernel, a rows kernel (reductions over the last axis) and a columns kernel."""
    return (selu(x) * 2.0 + 1.0, xp.sum(xp.exp(-(x * x)), axis=1), xp.max(x * 3.0, axis=0))


def _runners(jf, *args):
    graph = jf.trace(*args).graph
    (fn,) = [fn for key, fn in graph.derived.items() if isinstance(key, tuple) and key[:2] == ("compiled", "numba")]
    return fn.regions


def _assert_equal_to_numpy(fn, host, got):
    want = on_numpy(fn, xp.asarray(host))
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("chunks_per_thread", [1, 3, 8, 64])
@pytest.mark.parametrize("shape", [(1, 65_537), (7, 9_999), (4099, 3)])
def test_every_chunk_runs_once(monkeypatch, chunks_per_thread, shape):
    # odd sizes and chunk counts: a chunk skipped leaves np.empty garbage, one run twice is harmless
    # only for stores, so the reductions (a chunk counted twice or never) check the rest
    monkeypatch.setattr(_numba_fused_run, "CHUNKS_PER_THREAD", chunks_per_thread)
    host = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    with xp.use_executor("numba"):
        x = xp.asarray(host)
        jf = xp.jit(_patterns)
        jf.clear_cache()  # the cache is _patterns' own: compile afresh under this test's settings
        got = jf(x)
        runners = _runners(jf, x)
    # a region of one work item (a column reduction of one row) runs on the caller alone
    assert any(r.team is not None for r in runners)
    for r in runners:
        items = int(r.cuts[-1])
        assert (r.team is None) == (items < 2 or r.threads < 2)
        if r.team is not None:
            assert len(r.cuts) - 1 == min(items, r.team.size * chunks_per_thread)
    _assert_equal_to_numpy(_patterns, host, got)


def test_a_caller_alone_runs_every_chunk():
    # a team of one (no worker): the caller claims every chunk of the job
    host = np.random.default_rng(2).standard_normal((64, 1000)).astype(np.float64)
    with xp.use_executor("numba"):
        x = xp.asarray(host)
        jf = xp.jit(_patterns)
        jf.clear_cache()  # the cache is _patterns' own: compile afresh under this test's settings
        jf(x)
        runners = _runners(jf, x)
        for r in runners:
            r.team = _numba_team.Team(1)
        got = jf(x)
    _assert_equal_to_numpy(_patterns, host, got)


def test_callers_in_several_threads_at_once():
    rng = np.random.default_rng(3)
    hosts = [rng.standard_normal((200, 517)).astype(np.float32) for _ in range(4)]
    results, errors = {}, []
    with xp.use_executor("numba"):
        jf = xp.jit(_patterns)
        jf.clear_cache()  # the cache is _patterns' own: compile afresh under this test's settings
        jf(xp.asarray(hosts[0]))  # compiled before the threads start

    def call(i):
        try:
            with xp.use_executor("numba"):
                x = xp.asarray(hosts[i])
                for _ in range(25):
                    results[i] = [np.asarray(r).copy() for r in jf(x)]
        except BaseException as e:  # reported below
            errors.append(e)

    run_in_threads(call, 4)
    assert not errors, errors
    for i, host in enumerate(hosts):
        _assert_equal_to_numpy(_patterns, host, results[i])


def test_workers_keep_no_buffer_alive():
    host = np.random.default_rng(4).standard_normal(200_000)
    with xp.use_executor("numba"):
        jf = xp.jit(lambda x: selu(x) + 1.0)
        x = xp.asarray(host.copy())
        out = jf(x)
        assert _runners(jf, x)[0].team is not None
        buffers = [weakref.ref(np.asarray(x)), weakref.ref(np.asarray(out))]
        del x, out
    deadline = time.monotonic() + 5
    while any(r() is not None for r in buffers) and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.01)
    assert all(r() is None for r in buffers)


def test_wait_until():
    counter = np.zeros(1, np.int64)
    address = counter.ctypes.data
    assert not _numba_team.wait_until(address, 1, 1000)  # not reached: False after the rounds
    counter[0] = 5
    assert _numba_team.wait_until(address, 5, 0)
    counter[0] = 0

    def later():
        time.sleep(0.02)
        counter[0] = 1

    t = threading.Thread(target=later)
    t.start()
    start = time.monotonic()
    while not _numba_team.wait_until(address, 1, 10_000):  # sees the other thread's store
        assert time.monotonic() - start < 10
    t.join()


def _fork_child(q):
    host = np.linspace(-3, 3, 300_000)
    with xp.use_executor("numba"):
        got = np.asarray(xp.jit(lambda x: selu(x) * 2.0)(xp.asarray(host)))
    q.put(hashlib.sha256(got.tobytes()).hexdigest())


@pytest.mark.skipif(sys.platform != "linux", reason="fork start method")
def test_a_forked_child_runs_parallel_kernels():
    host = np.linspace(-3, 3, 300_000)
    with xp.use_executor("numba"):
        jf = xp.jit(lambda x: selu(x) * 2.0)
        want = np.asarray(jf(xp.asarray(host)))  # the parent's team exists before the fork
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_fork_child, args=(q,))
    p.start()
    digest = q.get(timeout=300)
    p.join(timeout=60)
    assert p.exitcode == 0
    assert digest == hashlib.sha256(want.tobytes()).hexdigest()


# -- vector width -----------------------------------------------------------------------------------

_WIDTH_CHILD = r"""
import hashlib, json, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import arrayx as xp
from arrayx.core import executor as base
import arrayx.executors.numba.vectors as _numba_vectors
ex = base.get("numba")
ex.fusion_min_size = ex.fusion_parallel_size = 0
rng = np.random.default_rng(5)
out, sources = {}, set()
with xp.use_executor("numba"):
    for dtype in (np.float32, np.float64):
        x = xp.asarray(rng.standard_normal((300, 257)).astype(dtype))
        fns = {
            "selu": lambda x: 1.0507 * xp.where(x > 0, x, 1.6733 * (xp.exp(x) - 1.0)),
            "chain6": lambda x: xp.exp(-(x * x)) * xp.tanh(x) + 0.5,
            "sums": lambda x: (xp.sum(x * 2.0), xp.sum(x, axis=1), xp.sum(x, axis=0)),
            "moments": lambda x: (xp.var(x), xp.std(x, axis=1), xp.mean(xp.expm1(x), axis=0)),
            "softmax": lambda x: xp.exp(x - xp.max(x, axis=1, keepdims=True)) / xp.sum(xp.exp(x), axis=1, keepdims=True),
        }
        for name, fn in fns.items():
            jf = xp.jit(fn)
            res = jf(x)
            res = res if isinstance(res, tuple) else (res,)
            out[f"{name}/{np.dtype(dtype).name}"] = hashlib.sha256(b"".join(np.asarray(r).tobytes() for r in res)).hexdigest()
    draw = np.asarray(xp.jit(lambda k: xp.random.normal(k, (100_000,)))(xp.random.key(1)))
    out["normal"] = hashlib.sha256(draw.tobytes()).hexdigest()
import arrayx.executors.numba.fusion.run as _numba_fused_run
kernels = list(_numba_fused_run._loaded)
print(json.dumps({"width": _numba_vectors.vector_width(), "digests": out, "kernels": len(kernels)}))
"""


def _width_run(width: str, tmp_path) -> dict:
    env = dict(os.environ, ARRAYX_NUMBA_VECTOR_WIDTH=width, ARRAYX_NUMBA_CACHE_DIR=str(tmp_path / width))
    run = subprocess.run([sys.executable, "-c", _WIDTH_CHILD, str(REPO)], env=env, capture_output=True, text=True,
                         timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # two fresh processes, each compiling a dozen fused kernels into an empty cache (~20 s)
def test_results_do_not_depend_on_the_vector_width(tmp_path):
    narrow, wide = _width_run("256", tmp_path), _width_run("512", tmp_path)
    assert (narrow["width"], wide["width"]) == (256, 512)
    assert narrow["digests"] == wide["digests"]
    # the width is part of each kernel's source: the two runs' caches hold different files
    def sources(width):
        return {p.read_text() for p in (tmp_path / width).rglob("fused_*.py")}
    narrow_src, wide_src = sources("256"), sources("512")
    assert narrow_src and wide_src and not narrow_src & wide_src
    assert all("vec.prefer_512()" in s for s in wide_src) and not any("prefer_512" in s for s in narrow_src)


def test_a_bad_vector_width_is_a_clear_error():
    env = dict(os.environ, ARRAYX_NUMBA_VECTOR_WIDTH="384")
    code = "import arrayx.executors.numba.vectors as v; v.vector_width()"
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    assert "ARRAYX_NUMBA_VECTOR_WIDTH='384': not one of the accepted values. Accepted: 256 or 512" in run.stderr



@pytest.mark.parametrize("where", ["compile", "team"])
def test_an_interrupted_first_call_leaves_the_region_parallel(monkeypatch, where):
    """A KeyboardInterrupt during a region's first call (while its kernel compiles, or its team
    starts) does not leave the region running on the caller alone for the rest of the process:
    the next call sets it up again, team included."""
    if _numba_fused_run._threads() < 2:
        pytest.skip("one thread: no team")
    host = np.linspace(-3, 3, 100_003)
    fn = lambda x: selu(x) * 2.0 - 0.25  # noqa: E731 (a kernel of its own: no other test makes it)
    with xp.use_executor("numba"):
        jf, a = xp.jit(fn), xp.asarray(host)
        interrupted = []
        if where == "compile":
            real = _numba_fused_run._kernel

            def interrupted_kernel(source):
                k = real(source)
                if not interrupted:
                    interrupted.append(True)

                    def compile_then_interrupt(*args):
                        k(*args)
                        if len(interrupted) == 1:  # once
                            interrupted.append(True)
                            raise KeyboardInterrupt
                    return compile_then_interrupt
                return k
            monkeypatch.setattr(_numba_fused_run, "_kernel", interrupted_kernel)
        else:
            real = _numba_team.team

            def interrupted_team(size):
                if not interrupted:
                    interrupted.append(True)
                    raise KeyboardInterrupt
                return real(size)
            monkeypatch.setattr(_numba_team, "team", interrupted_team)
        with pytest.raises(KeyboardInterrupt):
            jf(a)
        assert interrupted
        (runner,) = _runners(jf, a)
        assert runner._team_size > 1
        got = jf(a)
        assert runner.team is not None and runner.kernel is not None
        _assert_equal_to_numpy(lambda x: (fn(x),), host, [got])
        runs = []
        real_run = runner.team.run
        monkeypatch.setattr(runner.team, "run", lambda *args, **kw: runs.append(1) or real_run(*args, **kw))
        jf(a)
        assert runs  # the team ran it
