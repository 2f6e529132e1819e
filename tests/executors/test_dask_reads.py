"""What reads of lazy Dask arrays compute.

- a random draw is one task per chunk (the NumPy executor's sampler on the chunk's counters),
  bit for bit the NumPy executor's draw whatever the chunks; a slice of a draw, and what a
  summarised ``repr`` shows, draws only the values it needs;
- a read keeps what it computed of the arrays still alive, so a loop that reads a value each step
  computes one step each time, within the memory bound ``set_keep`` sets;
- arrays whose chunk sizes were computed (boolean masks, ``unique_values``) work in elementwise
  operations, boolean indexing and ``repeat`` (Dask mishandles their empty chunks);
- sums and means do not depend on how the data is split into chunks;
- the results of one operation (svd's) are computed together; a client-like sequence computes
  only at its reads; operations on one-chunk arrays are one task each with the NumPy executor's
  values, and reads of such graphs run without Dask's scheduler.

Each check that names an executor compares it with the NumPy executor.
"""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as xp
from arrayx.core import executor as base
from tests.conftest import assert_same, on_numpy

_DASK = base.get("dask")
pytestmark = pytest.mark.skipif(not _DASK.available(), reason="Dask is not installed")


@pytest.fixture
def dask_chunks():
    """Run on the Dask executor (synchronous scheduler); returns ``set_chunks``; restores the settings."""
    import importlib

    from arrayx.executors import dask as xd

    try:
        keep = importlib.import_module("arrayx.executors.dask.keep")
    except ImportError:  # (an arrayx that keeps nothing: the tests that need it fail on their own)
        keep = None
    saved = xd.get_scheduler(), xd.get_chunks(), keep and keep.get_keep()
    xd.set_scheduler("sync")
    try:
        with xp.use_executor("dask"):
            yield xd.set_chunks
    finally:
        xd.set_scheduler(saved[0])
        xd.set_chunks(saved[1])
        if keep is not None:
            keep.set_keep(**saved[2])


class TaskCounter:
    """Counts the tasks Dask runs and the largest result one of them gives."""

    def __enter__(self):
        from dask.callbacks import Callback

        counter = self
        self.tasks, self.largest, self.names = 0, 0, []

        class _Count(Callback):
            def _posttask(self, key, result, dsk, state, worker_id):
                counter.tasks += 1
                counter.largest = max(counter.largest, getattr(result, "nbytes", 0))
                counter.names.append(key[0] if isinstance(key, tuple) else key)

        self._cb = _Count()
        self._cb.__enter__()
        return self

    def __exit__(self, *exc):
        self._cb.__exit__(*exc)


# -- random draws --------------------------------------------------------------------------------

_DRAWS = {
    "normal": lambda k: xp.random.normal(k, (37, 5)),
    "normal-float32": lambda k: xp.random.normal(k, (301,), dtype=xp.float32),
    "normal-complex": lambda k: xp.random.normal(k, (7, 3), dtype=xp.complex128),
    "uniform-bounds": lambda k: xp.random.uniform(k, (3, 4, 5), minval=-2.0, maxval=3.0),
    "uniform-0d-bounds": lambda k: xp.random.uniform(k, (6,), minval=xp.asarray(-1.0), maxval=xp.asarray(2.0)),
    "uniform-array-bounds": lambda k: xp.random.uniform(k, (3, 4), maxval=xp.asarray([1.0, 2.0, 3.0, 4.0])),
    "bits-uint8": lambda k: xp.random.bits(k, (9, 2), dtype=xp.uint8),
    "bits-uint64": lambda k: xp.random.bits(k, (11,)),
    "exponential": lambda k: xp.random.exponential(k, (50,)),
    "gumbel": lambda k: xp.random.gumbel(k, (50,)),
    "gumbel-high": lambda k: xp.random.gumbel(k, (4, 5), mode="high"),
    "bernoulli": lambda k: xp.random.bernoulli(k, 0.3, (40,)),
    "bernoulli-0d-p": lambda k: xp.random.bernoulli(k, xp.asarray(0.3), (40,)),
    "randint": lambda k: xp.random.randint(k, (30,), 0, 10),
    "randint-int8": lambda k: xp.random.randint(k, (6, 5), -5, 100, dtype=xp.int8),
    "randint-array-bounds": lambda k: xp.random.randint(k, (2, 3), xp.asarray([0, 1, 2]), 10),
    "truncated_normal": lambda k: xp.random.truncated_normal(k, -1.0, 2.0, (20,)),
    "permutation": lambda k: xp.random.permutation(k, 20),
    "choice": lambda k: xp.random.choice(k, 10, (5,)),
    "0-d": lambda k: xp.random.normal(k, ()),
    "empty": lambda k: xp.random.normal(k, (0, 3)),
}


@pytest.mark.parametrize("chunks", ["auto", 7, 1], ids=["auto", "chunks7", "chunks1"])
@pytest.mark.parametrize("name", list(_DRAWS))
def test_draws_are_the_numpy_executors_bit_for_bit(dask_chunks, name, chunks):
    dask_chunks(chunks)
    got = _DRAWS[name](xp.random.key(42))
    want = on_numpy(lambda: _DRAWS[name](xp.random.key(42)))
    g, w = np.asarray(got), np.asarray(want)
    assert got.executor == "dask" and g.dtype == w.dtype and g.shape == w.shape
    assert np.array_equal(g, w, equal_nan=True)


def test_a_draw_is_one_task_per_chunk(dask_chunks):
    dask_chunks(100)
    x = xp.random.normal(xp.random.key(0), (1000, 20))
    layers = x._buf.dask.layers
    assert len(layers) <= 2, list(layers)  # the draw and the key it reads (was ~150 operations)
    with TaskCounter() as c:
        total = float(xp.sum(x))
    assert c.tasks <= 4 * x._buf.npartitions + 8  # draw, sum per chunk, the tree (was ~150 per chunk)
    assert total == pytest.approx(float(on_numpy(lambda: xp.sum(xp.random.normal(xp.random.key(0), (1000, 20))))),
                                  rel=1e-12)


def test_slices_of_a_draw_draw_only_their_values(dask_chunks):
    dask_chunks("auto")  # 2**22 values: one chunk of 32 MiB
    x = xp.random.normal(xp.random.key(3), (2**22,))
    with TaskCounter() as c:
        part = np.asarray(x[5:9])
        last = float(x[-1])
    assert c.largest < 2**10  # nothing of the size of the chunk was computed
    want = on_numpy(lambda: xp.random.normal(xp.random.key(3), (2**22,)))
    assert np.array_equal(part, np.asarray(want)[5:9]) and last == float(want[-1])


@pytest.mark.parametrize("shape", [(2**21,), (3, 2**19), (2**10, 2**10)], ids=str)
def test_repr_of_a_lazy_draw_draws_only_what_it_shows(dask_chunks, shape):
    dask_chunks("auto")
    x = xp.random.normal(xp.random.key(5), shape)
    with TaskCounter() as c:
        text = repr(x)
    assert c.largest < 2**12
    want = repr(on_numpy(lambda: xp.random.normal(xp.random.key(5), shape)))
    assert text.replace("dask:cpu", "numpy:cpu") == want


_OF_DRAWS = {
    "exp": lambda x: xp.exp(x),
    "chain": lambda x: xp.sin(xp.exp(x) * 2.0 + 1.0),
    "broadcast": lambda x: xp.where(x > 0, x, 2.0 * x) - x[..., :1] * 0.5,
    "two draws": lambda x: xp.maximum(x, xp.random.uniform(xp.random.key(9), x.shape)),
}


@pytest.mark.parametrize("shape", [(2**21,), (3, 2**19)], ids=str)
@pytest.mark.parametrize("name", list(_OF_DRAWS))
def test_repr_of_elementwise_ops_of_a_lazy_draw_computes_only_what_it_shows(dask_chunks, shape, name):
    # issue #40 point 8: repr of exp(normal(key, (2**24,))) computed the whole draw and exp (8-13 s)
    dask_chunks("auto")
    x = _OF_DRAWS[name](xp.random.normal(xp.random.key(5), shape))
    with TaskCounter() as c:
        text = repr(x)
    assert c.largest < 2**16, (c.largest, c.names)  # edges, not the chunk (16 MiB)
    want = repr(on_numpy(lambda: _OF_DRAWS[name](xp.random.normal(xp.random.key(5), shape))))
    assert text.replace("dask:cpu", "numpy:cpu") == want


@pytest.mark.parametrize("shape", [(2001,), (40, 60), (3, 2000, 4), (8,), (1001, 2)], ids=str)
def test_repr_of_lazy_arrays_is_the_numpy_executors(dask_chunks, shape):
    dask_chunks(64)
    n = int(np.prod(shape))

    def fn():
        return xp.reshape(xp.sin(xp.arange(n, dtype=xp.float64)) * 3.0, shape)

    assert repr(fn()).replace("dask:cpu", "numpy:cpu") == repr(on_numpy(fn))


# -- reads keep what they computed ------------------------------------------------------------------

def _step(x):
    return xp.cos(x) * 0.5 + 0.25


def test_a_loop_reading_a_value_each_step_computes_one_step_each_time(dask_chunks):
    dask_chunks(250)
    x = xp.asarray(np.linspace(0.0, 1.0, 1000))
    sizes = []
    for _ in range(30):
        x = _step(x)
        assert not bool(xp.max(x) > 10.0)
        sizes.append(len(x._buf.dask.layers))
        with TaskCounter() as c:
            float(xp.sum(x))  # x itself was computed by the read above: only its sum runs now
        assert c.tasks <= 2 * x._buf.npartitions + 4
    assert max(sizes) <= 3, sizes  # the graph does not grow with the history
    y = np.linspace(0.0, 1.0, 1000)
    with xp.use_executor("numpy"):
        ref = xp.asarray(y)
        for _ in range(30):
            ref = _step(ref)
    assert_same(x, np.asarray(ref))
    assert np.array_equal(np.asarray(x), np.asarray(ref))


def _masked_update_loop(steps):
    """SciPy's ``_cdf_cvm_inf``: add to the entries still in play, read the mask's ``any``."""
    tot = xp.zeros(6, dtype=xp.float64)
    x = xp.asarray(np.linspace(1.0, 6.0, 6))
    cond = xp.ones(6, dtype=xp.bool)
    sizes = []
    k = 0
    while bool(xp.any(cond)) and k < steps:
        z = xp.exp(-x[cond] * (k + 1) / 4)
        sel = tot[cond]  # a size that depends on the values: reading it computes the sizes
        sel += z
        tot[cond] = sel
        cond = xp.where(cond, x * k < 30.0, cond)
        sizes.append(len(tot._buf.dask.layers) if hasattr(tot._buf, "dask") else 0)
        k += 1
    return tot, sizes


def test_a_loop_masking_an_array_it_updates_keeps_its_graph_small(dask_chunks):
    """Computing the chunk sizes of ``tot[cond]`` keeps ``tot`` like a read does (issue 31: the
    history was computed again at each step to learn a size, then carried into the next ``tot``)."""
    dask_chunks(2)
    tot, sizes = _masked_update_loop(40)
    assert len(sizes) == 31
    assert sizes[-10:] == [sizes[-1]] * 10 and max(sizes) < 20, sizes  # does not grow with the steps (was 2, 3, ..., 198)
    with xp.use_executor("numpy"):
        ref, _ = _masked_update_loop(40)
    assert_same(tot, np.asarray(ref))


def test_reading_a_value_twice_computes_it_once(dask_chunks, monkeypatch):
    from arrayx.executors.dask import keep as _dask_keep, random as _dask_random

    dask_chunks(100)
    x = xp.random.normal(xp.random.key(1), (1000,))
    s = xp.sum(xp.exp(x))
    first = float(s)
    drawn = []
    run = _dask_random._run
    monkeypatch.setattr(_dask_random, "_run", lambda *a: drawn.append(1) or run(*a))
    with TaskCounter() as c:
        again = float(s)
    assert again == first and c.tasks <= 2  # the kept value is read
    y = float(xp.sum(xp.exp(x) * 0.0 + 1.0))  # x was computed whole by the first read: kept
    assert y == 1000.0 and not drawn  # x's chunks are read, not drawn again
    assert x._buf.name in _dask_keep._KEPT and s._buf.name in _dask_keep._KEPT


def test_what_reads_keep_is_bounded_and_evicted_arrays_recompute(dask_chunks):
    from arrayx.executors.dask import keep as _dask_keep

    dask_chunks(1000)
    _dask_keep.set_keep(max_bytes=3 * 8000 + 64, max_array_bytes=8000)  # three arrays of 1000 float64 (and their sums)
    arrays = [xp.asarray(np.arange(1000.0)) * float(i) + 1.0 for i in range(6)]
    for a in arrays:
        float(xp.sum(a))
        assert _dask_keep.kept_bytes() <= 3 * 8000 + 64
    kept = [a._buf.name in _dask_keep._KEPT for a in arrays]
    assert kept == [False, False, False, True, True, True]
    for i, a in enumerate(arrays):  # evicted or kept, every value is right
        assert np.array_equal(np.asarray(a), np.arange(1000.0) * float(i) + 1.0)
    big = xp.asarray(np.arange(2000.0)) + 1.0  # over max_array_bytes: never kept
    float(xp.sum(big))
    assert big._buf.name not in _dask_keep._KEPT
    del arrays, a
    import gc

    gc.collect()
    assert _dask_keep.kept_bytes() <= 2 * 8000  # what dies frees its bytes
    _dask_keep.set_keep(max_bytes=0)
    assert _dask_keep.kept_bytes() == 0
    with pytest.raises(ValueError, match="set_keep: max_bytes"):
        _dask_keep.set_keep(max_bytes=-1)


def test_a_read_computes_no_more_than_it_needs(dask_chunks):
    dask_chunks(2**16)
    x = xp.arange(2**22, dtype=xp.int64) * 3  # 64 chunks, alive
    with TaskCounter() as c:
        assert int(x[5]) == 15
    assert c.tasks < 8 and len(x._buf.dask.layers) > 1  # one chunk computed; x is not kept half-computed
    from arrayx.executors.dask import keep as _dask_keep

    assert x._buf.name not in _dask_keep._KEPT


# -- computed chunk sizes with empty chunks -----------------------------------------------------------

_SETDIFF = [((), ()), ((1,), ()), ((1, 1), (1,)), ((), (1, 1))]


@pytest.mark.parametrize("assume_unique", [False, True])
@pytest.mark.parametrize("shapes", _SETDIFF, ids=str)
def test_masking_a_unique_values_result(executor, shapes, assume_unique):
    xpx = pytest.importorskip("array_api_extra")

    def fn():
        return xpx.setdiff1d(xp.zeros(shapes[0]), xp.zeros(shapes[1]), assume_unique=assume_unique)

    assert_same(fn(), on_numpy(fn))


def test_elementwise_and_mask_after_computed_sizes_with_an_empty_chunk(executor):
    def fn():
        u = xp.unique_values(xp.asarray([0.0]))  # on Dask: the values and the NaNs, chunks (1, 0)
        assert u.shape == (1,)  # computes the sizes
        m = xp.ones(1, dtype=xp.bool) & (u != 1.0)
        return u[m], u + 1.0, m

    assert_same(fn(), on_numpy(fn))


@pytest.mark.parametrize("chunks", [1, 2, 3])
@pytest.mark.parametrize("n", [1, 5, 7])
def test_repeat_of_an_array_masked_by_a_concat_mask(dask_chunks, chunks, n):
    dask_chunks(chunks)

    def fn():  # SciPy's rankdata: values at the starts of runs of ties, repeated by the runs' lengths
        y = xp.asarray(np.sort(np.random.default_rng(n).integers(0, 3, n)).astype(np.float64))
        starts = xp.concat([xp.ones((1,), dtype=xp.bool), y[:-1] != y[1:]])
        index = xp.arange(n)[starts]
        counts = xp.diff(index, append=xp.asarray([n]))
        ranks = xp.arange(1, n + 1, dtype=xp.float64)[starts] + xp.astype(counts - 1, xp.float64) / 2
        return xp.repeat(ranks, counts)

    assert_same(fn(), on_numpy(fn))


# -- reductions whose reduced axes fit in a chunk do not depend on the chunks ------------------------

@pytest.mark.parametrize("name", ["sum", "mean", "var", "std", "prod"])
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2)], ids=str)
def test_small_reductions_are_the_numpy_executors_bit_for_bit_whatever_the_chunks(dask_chunks, name, axis):
    """SciPy's bootstrap compares a statistic of resamples made in one batch and in ten exactly
    (issue 31): the reduced axes are put in one chunk when that chunk fits Dask's chunk size."""
    host = np.random.default_rng(5).random((6, 7, 33)) + 0.5
    fn = getattr(xp, name)
    with xp.use_executor("numpy"):
        want = np.asarray(fn(xp.asarray(host), axis=axis))
    for chunks in (1, 4, 5, "auto"):
        dask_chunks(chunks)
        got = np.asarray(fn(xp.asarray(host), axis=axis))
        assert got.dtype == want.dtype and np.array_equal(got, want), (chunks, np.max(np.abs(got - want)))


def test_bounds_of_a_host_made_index_are_read_without_a_compute(dask_chunks):
    """A gather checks its indices' bounds; for indices made from host data (SciPy's resamples,
    ``asarray(rng.integers(...))``) the bounds come from that data, not from a Dask compute."""
    dask_chunks(4)
    x = xp.asarray(np.arange(10.0)) * 2.0
    idx = np.array([[3, -1, 0], [9, 2, 2]])
    i = xp.asarray(idx)
    with TaskCounter() as c:
        g = x[i]
    assert c.tasks == 0
    assert_same(g, np.arange(10.0)[idx] * 2.0)
    i[0, 0] = 10  # a write makes a new buffer: its bounds are computed again, and refused
    with pytest.raises(IndexError):
        x[i]
    with pytest.raises(IndexError):
        x[xp.asarray(np.array([0, -11]))]


# -- what a client's sequence of operations computes ------------------------------------------------


def test_the_results_of_one_operation_are_computed_together(dask_chunks, monkeypatch):
    """A read of one of ``svd``'s results computes the others alive too: the factorisation runs once
    (LDA reads the rank from S, then uses Vt: it ran twice, half of the call's time)."""
    from arrayx.executors.numpy import linalg as numpy_linalg

    calls = []
    svd = np.linalg.svd  # every path ends there (array-api-compat's, the executors' own) ...
    monkeypatch.setattr(np.linalg, "svd", lambda *a, **k: calls.append(1) or svd(*a, **k))
    monkeypatch.setattr(numpy_linalg, "_scipy_svd", False)  # ... once SciPy's tall-thin path is off
    a = np.random.default_rng(0).normal(size=(40, 6))
    u, s, vt = xp.linalg.svd(xp.asarray(a), full_matrices=False)
    rank = int(xp.sum(xp.astype(s > 1e-8, xp.int32)))
    scaled = vt[:rank, :] / s[:rank, None]
    got = np.asarray(scaled), np.asarray(u)
    assert len(calls) == 1
    with xp.use_executor("numpy"):
        nu, ns, nvt = xp.linalg.svd(xp.asarray(a), full_matrices=False)
        want = np.asarray(nvt[:rank, :] / ns[:rank, None]), np.asarray(nu)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def _standardise(x):
    """What StandardScaler does: moments, a check read on the host, the scaled array."""
    mean = xp.mean(x, axis=0)
    std = xp.std(x, axis=0)
    if bool(xp.any(std == 0.0)):  # the one read inside the call
        std = xp.where(std == 0.0, 1.0, std)
    return (x - mean) / std


def test_a_client_sequence_computes_only_at_its_reads(dask_chunks):
    from arrayx.executors import dask as xd

    data = np.random.default_rng(1).normal(size=(500, 8))
    x = xp.asarray(data)
    before = xd.reads()
    out = _standardise(x)
    assert xd.reads()["values"] - before["values"] == 1 and xd.reads()["sizes"] == before["sizes"]
    got = np.asarray(out)
    assert xd.reads()["values"] - before["values"] == 2
    with xp.use_executor("numpy"):
        want = np.asarray(_standardise(xp.asarray(data)))
    np.testing.assert_allclose(got, want, rtol=1e-13)


# -- arrays of one chunk: one task per operation, reads without Dask's scheduler -----------------------


def _client_steps(x):
    """A client's mix: elementwise, reductions, a matrix product, slicing, a factorisation."""
    centred = x - xp.mean(x, axis=0)
    cov = centred.T @ centred / (x.shape[0] - 1)
    vals = xp.linalg.eigvalsh(cov)
    top = xp.argsort(-vals)[:2]
    return xp.sqrt(xp.abs(vals[top])), xp.max(xp.abs(centred), axis=1)[::7], xp.cumulative_sum(x[:, 0])


def test_operations_on_one_chunk_arrays_are_one_task_each_and_the_numpy_executors_values(dask_chunks):
    data = np.random.default_rng(2).normal(size=(60, 5))
    x = xp.asarray(data)
    vals, maxima, csum = _client_steps(x)
    for out in (vals, maxima, csum):
        graph = out._buf.dask
        assert all(len(layer) == 1 for layer in graph.layers.values())  # one task per layer
        assert any("onechunk" in name for name in graph.layers)
    with xp.use_executor("numpy"):
        want = _client_steps(xp.asarray(data))
    for got, w in zip((vals, maxima, csum), want):
        assert np.array_equal(np.asarray(got), np.asarray(w))  # the NumPy executor's values, bit for bit


def test_operations_on_several_chunks_stay_dasks_and_agree(dask_chunks):
    dask_chunks(16)
    data = np.random.default_rng(3).normal(size=(60, 5))
    vals, maxima, csum = _client_steps(xp.asarray(data))
    assert not any("onechunk" in name for name in maxima._buf.dask.layers)
    with xp.use_executor("numpy"):
        want = _client_steps(xp.asarray(data))
    for got, w in zip((vals, maxima, csum), want):
        np.testing.assert_allclose(np.asarray(got), np.asarray(w), rtol=1e-12)


def test_reads_of_one_chunk_graphs_skip_dasks_compute_and_give_a_private_copy(dask_chunks, monkeypatch):
    import dask

    calls = []
    compute = dask.compute
    monkeypatch.setattr(dask, "compute", lambda *a, **k: calls.append(1) or compute(*a, **k))
    data = np.arange(12.0).reshape(3, 4)
    x = xp.asarray(data) * 2.0
    host = np.asarray(x)
    host[0, 0] = -1.0  # the caller's copy: the kept value is unchanged
    assert float(xp.sum(x)) == float(np.sum(data * 2.0)) and np.asarray(x)[0, 0] == 0.0
    m = x[x > 5.0]  # a size that depends on the values, computed the same way
    assert m.shape == (9,) and np.array_equal(np.asarray(m), (data * 2.0)[data * 2.0 > 5.0])
    assert calls == []
    dask_chunks(2)  # several chunks: Dask's scheduler runs them
    assert float(xp.sum(xp.asarray(data) + 1.0)) == float(np.sum(data + 1.0)) and calls


def test_one_task_operations_take_numpy_scalar_blocks():
    """A 0-d block can be a NumPy scalar (Dask's reductions give them); the one-task path hands the
    NumPy executor 0-d arrays (the official suite's test_setitem: "'numpy.bool' object does not
    support item assignment" in slice_update)."""
    pytest.importorskip("dask")
    from arrayx.core.primitives import primitives
    from arrayx.core.tracers import ShapeDtypeStruct
    from arrayx.executors.dask import onechunk

    impl = base.get("numpy").resolve(primitives["slice_update"])
    out = ShapeDtypeStruct((), np.dtype(bool))
    got = onechunk._run(impl, (None, (np.asarray(True),)), {"key": ()}, out, "slice_update", np.False_)
    assert got.shape == () and got.dtype == bool and bool(got) is True
