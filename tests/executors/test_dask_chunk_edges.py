"""Inputs at the edges of Dask's chunking agree with NumPy: contractions and matmul over several
chunks, size-0 inputs and index arrays, strided linalg input, bool diff, arg-reductions over all
axes, summarised reprs, out-of-range slices and None in setitem keys; checked on every executor
against the NumPy executor.

Dask arrays are split into chunks of 2 (and 1) elements per axis here, so the multi-chunk paths
(a contracted axis over several chunks, reductions over block trees) are the ones exercised; the
other executors ignore the setting.
"""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as xp
from arrayx.core import executor as base
from tests.conftest import assert_matches_numpy, assert_same

_DASK = base.get("dask")


@pytest.fixture(params=[2, 1], ids=["chunks2", "chunks1"], autouse=True)
def small_chunks(request):
    """Dask computes on the synchronous scheduler with tiny chunks; restored afterwards."""
    if not _DASK.available():
        yield
        return
    from arrayx.executors import dask as xd

    saved = xd.get_scheduler(), xd.get_chunks()
    xd.set_scheduler("sync")
    xd.set_chunks(request.param)
    try:
        yield
    finally:
        xd.set_scheduler(saved[0])
        xd.set_chunks(saved[1])


# -- integer contractions keep the promoted dtype and wrap ------------------------------------

@pytest.mark.parametrize("fn,shapes,want", [
    (xp.matmul, ((1, 4), (4,)), [-112]),
    (xp.linalg.matmul, ((2, 4), (4, 3)), [[-112] * 3] * 2),
    (xp.vecdot, ((4,), (4,)), -112),
    (xp.linalg.vecdot, ((3, 4), (4,)), [-112] * 3),
    (lambda a, b: xp.tensordot(a, b, axes=1), ((1, 4), (4,)), [-112]),
])
def test_integer_contractions_wrap_in_their_dtype(executor, fn, shapes, want):
    a = xp.full(shapes[0], 100, dtype=xp.int8)  # 4 * 100 = 400 wraps to -112 in int8
    b = xp.ones(shapes[1], dtype=xp.int8)
    out = assert_matches_numpy(fn, a, b)
    assert out.dtype == xp.int8 and np.asarray(out).tolist() == want


@pytest.mark.parametrize("dtype", [np.dtype("uint8"), np.dtype("int16"), np.dtype("uint32")], ids=str)
def test_integer_matmul_over_several_chunks_and_empty_axes(executor, dtype):
    a = xp.asarray(np.arange(30).reshape(5, 6).astype(dtype) * 50)
    b = xp.asarray((np.arange(24).reshape(6, 4) % 7).astype(dtype))
    out = assert_matches_numpy(xp.matmul, a, b)
    assert out.dtype == np.dtype(dtype)
    assert_same(out, (np.arange(30).reshape(5, 6).astype(dtype) * 50) @ (np.arange(24).reshape(6, 4) % 7).astype(dtype))
    e = assert_matches_numpy(xp.matmul, xp.zeros((2, 0), dtype=dtype), xp.zeros((0, 3), dtype=dtype))
    assert e.dtype == np.dtype(dtype) and np.asarray(e).tolist() == [[0, 0, 0]] * 2
    assert assert_matches_numpy(xp.vecdot, xp.zeros((3, 0), dtype=dtype), xp.zeros(0, dtype=dtype)).shape == (3,)


# -- size-0 arrays ---------------------------------------------------------------------------

@pytest.mark.parametrize("fn,shape,want_shape", [
    (lambda x: xp.min(x, axis=0), (3, 0, 0), (0, 0)),
    (lambda x: xp.min(x, axis=()), (3, 0, 0), (3, 0, 0)),
    (lambda x: xp.max(x, axis=(0, 2)), (3, 0, 2), (0,)),
    (lambda x: xp.max(x, axis=2), (0, 1, 1), (0, 1)),
    (lambda x: xp.max(x, axis=(), keepdims=True), (0, 2), (0, 2)),
    (lambda x: xp.sum(x, axis=1), (3, 0), (3,)),
    (lambda x: xp.prod(x, axis=(0, 1), keepdims=True), (0, 3), (1, 1)),
    (lambda x: xp.nonzero(x), (4, 0, 0), None),
    (lambda x: xp.roll(x, 1), (3, 0), (3, 0)),
    (lambda x: xp.roll(x, 2, axis=1), (0, 3), (0, 3)),
    (xp.unique_values, (1, 4, 0), (0,)),
    (lambda x: xp.unique_counts(x), (2, 0), None),
    (xp.linalg.vector_norm, (3, 4, 0), ()),
    (lambda x: xp.linalg.vector_norm(x, axis=1), (3, 0), (3,)),
    (lambda x: xp.linalg.matrix_norm(x, ord=2), (2, 3, 0), (2,)),
    (lambda x: xp.linalg.matrix_norm(x, ord=2), (0, 3, 3), (0,)),
    (lambda x: xp.cumulative_sum(x, axis=0, include_initial=True), (0, 2), (1, 2)),
    (lambda x: xp.sort(x, axis=0), (0, 3), (0, 3)),
    (lambda x: xp.repeat(x, 2, axis=0), (0, 3), (0, 3)),
    (lambda x: xp.repeat(x, xp.asarray([1, 0, 2]), axis=0), (3, 0), (3, 0)),
])
def test_size_zero_inputs(executor, fn, shape, want_shape):
    x = xp.zeros(shape, dtype=xp.int8 if "unique" in repr(fn) else xp.float64)
    out = assert_matches_numpy(fn, x)
    if want_shape is not None:
        assert out.shape == want_shape


def test_size_zero_searchsorted(executor):
    s = xp.asarray([1.0, 2.0, 3.0])
    assert assert_matches_numpy(xp.searchsorted, s, xp.zeros((2, 0))).shape == (2, 0)
    assert assert_matches_numpy(xp.searchsorted, s, xp.zeros((0, 3))).shape == (0, 3)
    out = assert_matches_numpy(xp.searchsorted, xp.zeros(0), xp.asarray([[1.0, 2.0]]))
    assert np.asarray(out).tolist() == [[0, 0]]


def test_size_zero_index_arrays_and_setitem(executor):
    a = xp.reshape(xp.arange(9.0), (3, 3))
    out = assert_matches_numpy(lambda a, i, j: a[i, j], a, xp.zeros((1, 0), dtype=xp.uint8), xp.zeros(0, dtype=xp.uint8))
    assert out.shape == (1, 0)
    assert assert_matches_numpy(lambda a, i: a[i], a, xp.zeros(0, dtype=xp.int64)).shape == (0, 3)

    def set_none_0(a):
        a = xp.asarray(a, copy=True)
        a[None, 0] = 1
        return a

    assert assert_matches_numpy(set_none_0, xp.zeros((2, 0))).shape == (2, 0)
    with pytest.raises(IndexError):
        set_none_0(xp.zeros((0, 3)))

    def set_empty_region(a, v):  # a size-0 value written into a size-0 region
        a = xp.asarray(a, copy=True)
        a[0:0, :] = v
        return a

    host = np.asarray([[[-1], [127]]], dtype=np.int8)
    for x in (xp.asarray(host), xp.asarray(np.repeat(host, 2, axis=0))[::2]):  # contiguous and strided
        out = assert_matches_numpy(set_empty_region, x, xp.asarray([2], dtype=xp.int8))
        assert_same(out, host)
    with pytest.raises(ValueError):  # a value that does not broadcast to the empty region still fails
        set_empty_region(xp.asarray(host), xp.asarray([1, 2, 3], dtype=xp.int8))

    def add_at(a, i):
        return a.at[i].add(1.0)

    assert assert_matches_numpy(add_at, xp.zeros((0, 3)), xp.zeros(0, dtype=xp.int64)).shape == (0, 3)


def test_size_zero_linalg_keeps_a_solvable_operand(executor):
    a = xp.asarray([[2.0, 0.0], [1.0, 3.0]])
    assert assert_matches_numpy(xp.linalg.solve, a, xp.zeros((2, 0))).shape == (2, 0)
    assert assert_matches_numpy(xp.linalg.inv, xp.zeros((2, 0, 0))).shape == (2, 0, 0)
    assert assert_matches_numpy(xp.linalg.cross, xp.zeros((0, 3)), xp.zeros((0, 3))).shape == (0, 3)


# -- linalg on strided input -----------------------------------------------------------------

@pytest.mark.parametrize("name", ["inv", "eigh", "eigvalsh", "slogdet", "cholesky", "det", "svdvals"])
def test_linalg_on_strided_input(executor, name):
    base_ = np.array([[4.0, 1.0, 0.0, 0.5], [1.0, 3.0, 0.2, 0.0], [0.0, 0.2, 2.0, 0.1], [0.5, 0.0, 0.1, 5.0]])
    x = xp.asarray(np.repeat(base_, 2, axis=0))[::2]  # rows chunked unlike columns on Dask
    fn = getattr(xp.linalg, name)
    got = fn(x)
    want = on_numpy_np(name, base_)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want):
        np.testing.assert_allclose(np.abs(np.asarray(g)) if name == "eigh" else np.asarray(g), w, rtol=1e-10, atol=1e-12)


def on_numpy_np(name, a):
    with xp.use_executor("numpy"):
        out = getattr(xp.linalg, name)(xp.asarray(a))
    out = out if isinstance(out, tuple) else (out,)
    return [np.abs(np.asarray(o)) if name == "eigh" else np.asarray(o) for o in out]


# -- diff on bool, ties in argmax/argmin -------------------------------------------------------

def test_diff_of_bool_is_not_equal(executor):
    out = assert_matches_numpy(xp.diff, xp.asarray([True, False]))
    assert out.dtype == xp.bool and np.asarray(out).tolist() == [True]
    b = np.array([[True, True, False], [False, True, True]])
    assert_same(xp.diff(xp.asarray(b), axis=1, n=2), np.diff(b, axis=1, n=2))
    assert_same(xp.diff(xp.asarray(b), axis=0), np.diff(b, axis=0))


@pytest.mark.parametrize("fn", [xp.argmax, xp.argmin])
def test_arg_reductions_over_all_axes_return_the_first_occurrence(executor, fn):
    a = np.random.default_rng(1).integers(0, 3, (2, 3, 4)).astype(np.float64)  # many ties
    out = assert_matches_numpy(fn, xp.asarray(a))
    assert int(out) == int(np.argmax(a) if fn is xp.argmax else np.argmin(a))
    assert assert_matches_numpy(lambda x: fn(x, keepdims=True), xp.asarray(a)).shape == (1, 1, 1)


# -- repr of arrays NumPy summarises: only the edges move, the text is NumPy's ----------------

@pytest.mark.parametrize("a", [
    np.arange(2000.0).reshape(40, 50) / 7, np.arange(1001), np.linspace(0, 1, 3000).reshape(3, 1000),
    np.arange(5000) % 3 == 0, np.arange(2 * 7 * 200).reshape(2, 7, 200).astype(np.int8),
], ids=["2d-float", "1d-int", "short-axis", "bool", "3d-int8"])
def test_repr_of_summarised_arrays_is_numpys(executor, a):
    text = repr(xp.asarray(a))
    assert text == "Array(" + np.array2string(a, separator=", ", prefix="Array(") + (
        f", dtype={a.dtype}, device={xp.asarray(a).device.executor}:{xp.asarray(a).device.label})")


# -- slices with bounds past the start of an axis (Dask clamped them wrongly) -------------------

_X = np.arange(2 * 3 * 3, dtype=np.int16).reshape(2, 3, 3)


@pytest.mark.parametrize("key", [
    (None, slice(-4, None, -2), Ellipsis),  # the suite's reproducer: numpy (1, 0, 3, 3), dask gave (1, 1, 3, 3)
    (slice(-4, None, -2),), (slice(-3, None, -1),), (slice(-5, -1, -1),), (slice(-3, 1, -1),),
    (slice(None, -3, -1),), (slice(5, -4, -1),), (slice(1, None, -1), slice(-9, None, -2)),
    (Ellipsis, slice(-7, None, -3)), (slice(-9, 9, 2), slice(9, -9, -1)),
], ids=repr)
def test_slices_with_bounds_out_of_range(executor, key):
    x = xp.asarray(_X)
    got = assert_matches_numpy(lambda a: a[key], x)
    assert got.shape == _X[key].shape
    assert_same(got, _X[key])
    assert_same(xp.jit(lambda a: a[key])(x), _X[key])

    def set_region(a):
        a = xp.asarray(a, copy=True)
        a[key] = -1
        return a

    want = _X.copy()
    want[key] = -1
    assert_same(assert_matches_numpy(set_region, x), want)


# -- a None in a setitem key (`x[None, :, ...] = 100`) ---------------------------------------------

@pytest.mark.parametrize("key,value", [
    ((None, 1), 7),
    ((None, 1), np.array([[1, 2, 3]])),
    ((None, slice(None), Ellipsis), 100),
    ((None, 0, None, slice(None, None, -1)), np.array([5, 6, 7])),
    ((Ellipsis, None), np.arange(9).reshape(3, 3, 1)),
    ((1, None, slice(1, None)), np.array([[8, 9]])),
], ids=lambda v: repr(v) if isinstance(v, tuple) else None)
def test_none_in_a_setitem_key(executor, key, value):
    host = np.arange(9, dtype=np.int32).reshape(3, 3)

    def set_key(a, v):
        a = xp.asarray(a, copy=True)
        a[key] = v
        return a

    v = xp.asarray(value, dtype=xp.int32) if isinstance(value, np.ndarray) else value
    want = host.copy()
    want[key] = value
    assert_same(assert_matches_numpy(set_key, xp.asarray(host), v), want)


# -- gathering with one n-D index array (issue 31: SciPy's bootstrap, `sample[..., i]` with i of
# shape (9999, 100), made a chunk per row on Dask: 30,000 tasks that every later read ran again) --

@pytest.mark.parametrize("shape,key", [
    ((7,), lambda i: (i,)),
    ((7,), lambda i: (Ellipsis, i)),
    ((3, 7), lambda i: (Ellipsis, i)),
    ((3, 7), lambda i: (slice(None), i)),
    ((7, 3), lambda i: (i, slice(1, None))),
    ((3, 7), lambda i: (slice(None, None, -1), None, i)),
    ((2, 7, 3), lambda i: (slice(None), i, None, slice(None, 2))),
], ids=["1d", "ellipsis", "2d-last", "2d-slice", "2d-first", "reversed-none", "3d-middle"])
@pytest.mark.parametrize("lazy_index", [False, True], ids=["host-index", "computed-index"])
def test_gather_with_one_nd_index_array(executor, shape, key, lazy_index):
    host = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) / 3
    axis_len = 7
    idx = np.random.default_rng(0).integers(-axis_len, axis_len, (40, 5))
    i = xp.asarray(idx)
    if lazy_index:
        i = i + xp.asarray(0)  # an index that is the result of an operation (lazy on Dask)
    got = assert_matches_numpy(lambda a, j: a[key(j)], xp.asarray(host), i)
    assert_same(got, host[key(idx)])


def test_a_gather_with_an_nd_index_is_a_few_chunks(small_chunks):
    """The result of a 2-D index into a 1-D array is chunked like the index, not a chunk per row."""
    if not _DASK.available():
        pytest.skip("dask unavailable")
    from arrayx.executors import dask as xd

    xd.set_chunks("auto")
    with xp.use_executor("dask"):
        sample = xp.arange(100, dtype=xp.float64)
        i = xp.asarray(np.random.default_rng(1).integers(0, 100, (9999, 100)))
        out = sample[..., i]
        assert out._buf.npartitions <= 4
        want = np.arange(100.0)[np.asarray(i)]
        assert_same(xp.mean(out, axis=-1), np.mean(want, axis=-1))
