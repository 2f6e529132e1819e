"""jit on the Dask executor: each fusible region is one blockwise task per chunk (_dask_fusion),
values equal to the NumPy executor's, nothing computed before the user asks."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import arrayx as xp
from arrayx.core import executor as base
from tests.conftest import assert_same

EX = base.get("dask")
pytestmark = pytest.mark.skipif(not EX.available(), reason=f"executor 'dask' unavailable: {EX.unavailable_reason}")

if EX.available():
    from arrayx.executors.dask import fusion as F
    from arrayx.executors import dask as xd


@pytest.fixture(autouse=True)
def on_dask():
    saved = (xd.get_scheduler(), xd.get_chunks())
    xd.set_scheduler("sync")
    try:
        with xp.use_executor("dask"):
            yield
    finally:
        xd.set_scheduler(saved[0])
        xd.set_chunks(saved[1])


@pytest.fixture(params=["numba", "numpy"])
def chunk_executor(request, monkeypatch):
    """The executor compiling each chunk's region (numba: fused kernels; numpy: without Numba)."""
    ex = base.get(request.param)
    if not ex.available():
        pytest.skip(f"executor {request.param!r} unavailable: {ex.unavailable_reason}")
    monkeypatch.setattr(F, "_chunk_executor", lambda: ex)
    return request.param


def chain6(x):
    return ((xp.exp(x) * 2.0 + 1.0) * x - 0.5) * x  # 6 ops


def _host(shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).uniform(-2, 2, shape).astype(dtype)


def _on_numpy(fn, *hosts):
    with xp.use_executor("numpy"):
        return np.asarray(fn(*(xp.asarray(h) for h in hosts)))


def test_a_six_op_chain_is_one_task_per_chunk(chunk_executor):
    xd.set_chunks((128, 128))
    h = _host((300, 200))
    x = xp.asarray(h)
    nchunks = x._buf.npartitions
    assert nchunks == 6
    eager = chain6(x)._buf
    jitted = xp.jit(chain6)(x)._buf
    # eager: one layer per op, each a task per chunk; jit: the region is one layer
    assert len(eager.dask) - len(x._buf.dask) == 6 * nchunks
    assert len(jitted.dask) - len(x._buf.dask) == nchunks
    new_layers = set(jitted.dask.layers) - set(x._buf.dask.layers)
    assert len(new_layers) == 1 and next(iter(new_layers)).startswith(F._TOKEN)
    assert jitted.chunks == x._buf.chunks
    assert_same(xp.asarray(jitted.compute()), _on_numpy(chain6, h))
    fn = next(f for f in _functions(jitted.dask.layers[next(iter(new_layers))]) if isinstance(f, F.ChunkRegion))
    assert set(fn._compiled) == {(128, 128), (128, 72), (44, 128), (44, 72)}  # one per chunk shape
    if chunk_executor == "numba":  # the full chunks ran as one fused kernel (the small ones op by op)
        (runner,) = fn._compiled[128, 128].regions
        assert runner.failed is None and runner.kernel is not None


def test_nothing_is_computed_before_the_user_asks(monkeypatch):
    calls = []
    run = F.ChunkRegion.__call__
    monkeypatch.setattr(F.ChunkRegion, "__call__", lambda self, *b: calls.append(1) or run(self, *b))
    xd.set_chunks(50)
    x = xp.asarray(_host((200,)))
    y = xp.jit(chain6)(x)
    z = xp.jit(chain6)(y)  # a jitted function of a jitted result: still lazy
    assert calls == []
    assert_same(z, _on_numpy(lambda a: chain6(chain6(a)), _host((200,))))
    assert len(calls) == 2 * 4  # each region once per chunk


def test_broadcasting_operands_keep_their_blocks(chunk_executor):
    a, b, c = _host((150, 90)), _host((90,), seed=1), _host((150, 1), seed=2)

    def f(x, y, z):
        return xp.where(x > y, x * y + z, xp.tanh(z) - x) * 0.5

    args = []
    for h, chunks in [(a, (70, 40)), (b, (40,)), (c, (70, 1))]:
        xd.set_chunks(chunks)
        args.append(xp.asarray(h))
    out = xp.jit(f)(*args)
    # the region reads y and z as their own blocks: no task broadcasts them to the full size
    inputs = {k for v in args for k in v._buf.dask.layers}
    tasks = {k: len(v) for k, v in out._buf.dask.layers.items() if k not in inputs}
    fused = [k for k in tasks if k.startswith(F._TOKEN)]
    assert len(fused) == 1 and tasks[fused[0]] == out._buf.npartitions == 9
    assert sum(tasks.values()) == 9 + 3 + 3  # + y's 3 blocks reshaped to (1, 90), tanh of z's 3 blocks
    assert_same(out, _on_numpy(f, a, b, c))


def test_mixed_dtypes_and_float32_kept(chunk_executor):
    xd.set_chunks(3000)
    i = (np.arange(10000) - 5000).astype(np.int16)
    f32 = _host((10000,), np.float32)

    def f(n, x):
        return (n * 3 + 7) // 2, (x * n + 1.5) * x - n, xp.astype(n, xp.float32) * x > 0

    got = xp.jit(f)(xp.asarray(i), xp.asarray(f32))
    want = [_on_numpy(lambda a, b, k=k: f(a, b)[k], i, f32) for k in range(3)]
    assert [np.asarray(g).dtype for g in got] == [np.int16, np.float32, np.bool_]
    for g, w in zip(got, want):
        assert_same(g, w)


def test_integer_overflow_wraps(chunk_executor):
    xd.set_chunks(5000)
    n = np.arange(12000, dtype=np.int8)
    f = lambda x: (x * 100 + 120) * 3  # noqa: E731
    assert_same(xp.jit(f)(xp.asarray(n)), _on_numpy(f, n))


@pytest.mark.parametrize("reduce", ["sum", "mean", "var", "max", "softmax"])
def test_reductions_ending_a_region(chunk_executor, reduce):
    xd.set_chunks((64, 48))
    h = _host((200, 120))
    funcs = {
        "sum": lambda x: xp.sum((x * 2.0 + 1.0) * x, axis=1),
        "mean": lambda x: xp.mean(xp.exp(x) - x * x),
        "var": lambda x: xp.var(x * 3.0 - 1.0, axis=0),
        "max": lambda x: xp.max(xp.abs(x - 0.25) * x, axis=0),
        "softmax": lambda x: xp.exp(x - xp.max(x, axis=1, keepdims=True)) /
        xp.sum(xp.exp(x - xp.max(x, axis=1, keepdims=True)), axis=1, keepdims=True),
    }
    fn = funcs[reduce]
    assert_same(xp.jit(fn)(xp.asarray(h)), _on_numpy(fn, h))


def test_size_zero_and_size_one(chunk_executor):
    for shape in [(0,), (0, 5), (1,), (1, 1)]:
        h = _host(shape)
        assert_same(xp.jit(chain6)(xp.asarray(h)), _on_numpy(chain6, h))


def test_nan_and_inf_propagate(chunk_executor):
    xd.set_chunks(3)
    h = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -3.0, 1e308, -1e-320])
    f = lambda x: xp.clip(x * 2.0 - 1.0, -1e300, None) + xp.exp(x)  # noqa: E731
    got = np.asarray(xp.jit(f)(xp.asarray(h)))
    want = _on_numpy(f, h)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert_same(got, want)


def test_the_chunk_function_pickles_for_a_cluster():
    cloudpickle = pytest.importorskip("cloudpickle")  # what distributed sends tasks with
    xd.set_chunks(50)
    x = xp.asarray(_host((120,)))
    out = xp.jit(chain6)(x)._buf
    layer = next(v for k, v in out.dask.layers.items() if k.startswith(F._TOKEN))
    fn = next(f for f in _functions(layer) if isinstance(f, F.ChunkRegion))
    block = _host((50,))
    fn(block)  # compiled for this chunk shape in this process; not sent along
    again = pickle.loads(cloudpickle.dumps(fn))
    assert again._compiled == {}
    np.testing.assert_array_equal(again(block), fn(block))


def _functions(layer):
    """The callables a Dask layer's tasks call (Dask's task spec or tuples)."""
    found = []
    for task in dict(layer).values():
        f = getattr(task, "func", None)
        found.append(f if f is not None else (task[0] if isinstance(task, tuple) else None))
    return found
