"""Indexing on every executor: ``x[key]``, ``x[key] = v``, ``x.at[key].op(v)``, ``take`` and
``take_along_axis``, against NumPy, plus argument errors; slices with bounds out of range, None
in setitem keys and gathers with one n-D index array, with Dask over several chunks."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import arrayx as xp
from arrayx.api._index_updates import at_update
from tests.conftest import assert_matches_numpy, assert_same

A = np.arange(24, dtype=np.float64).reshape(2, 3, 4)

BASIC_KEYS = [
    0, -1, (1, 2), (1, -1, 3), slice(None), slice(1, None), slice(None, None, -1),
    (slice(None), 1), (Ellipsis, 0), (0, Ellipsis), (None, 0), (slice(None), None, slice(1, 3)),
    (Ellipsis, None), (0, slice(None, None, 2), slice(3, 0, -1)), (), Ellipsis, (1, 2, 3),
    (slice(5, 10),), (slice(-10, 1),), True, (False,),
]


@pytest.mark.parametrize("key", BASIC_KEYS, ids=repr)
def test_getitem_basic(executor, key):
    out = xp.asarray(A)[key]
    assert_same(out, A[key])


def test_getitem_arrays(executor):
    x = xp.asarray(A)
    i = np.array([1, 0, 1])
    assert_same(x[xp.asarray(i)], A[i])
    assert_same(x[:, xp.asarray([2, 0])], A[:, [2, 0]])
    assert_same(x[xp.asarray([0, 1]), :, xp.asarray([3, -1])], A[[0, 1], :, [3, -1]])
    assert_same(x[..., xp.asarray(np.array([[0, 1], [2, 3]]))], A[..., np.array([[0, 1], [2, 3]])])
    mask = A > 10
    assert_same(x[xp.asarray(mask)], A[mask])
    row = np.array([True, False])
    assert_same(x[xp.asarray(row), 1:], A[row, 1:])
    assert_same(x[0, xp.asarray(A[0, :, 0] > 3)], A[0, A[0, :, 0] > 3])
    assert_same(x[xp.asarray(1)], A[1])  # 0-d integer array as an index
    assert_matches_numpy(lambda y, k: y[k], x, xp.asarray(mask))


def test_getitem_0d(executor):
    s = xp.asarray(5.0)
    assert_same(s[()], np.array(5.0))
    assert_same(s[...], np.array(5.0))
    assert_same(s[None], np.array([5.0]))
    assert_same(s[xp.asarray(True)], np.array([5.0]))
    assert_same(s[xp.asarray(False)], np.zeros(0))


@pytest.mark.parametrize("key", [0, (1, 2), (slice(None), 1), (Ellipsis, slice(1, 3)), (0, 1, 2)], ids=repr)
def test_setitem(executor, key):
    x = xp.asarray(A)
    x[key] = -1.0
    want = A.copy()
    want[key] = -1.0
    assert_same(x, want)
    x = xp.asarray(A)
    value = np.full(np.shape(A[key]), 7.5)
    x[key] = xp.asarray(value)
    want[key] = value
    assert_same(x, want)


def test_setitem_masks_and_arrays(executor):
    x = xp.asarray(A)
    x[xp.asarray(A > 20)] = 0.0
    want = A.copy()
    want[A > 20] = 0.0
    assert_same(x, want)
    x[xp.asarray([0, 1]), 0, 0] = xp.asarray([100.0, 200.0])
    want[[0, 1], 0, 0] = [100.0, 200.0]
    assert_same(x, want)
    # a lower-precision value is promoted into x's dtype
    y = xp.zeros(3)
    y[1] = xp.asarray(2, dtype=xp.int8)
    y[2] = 3
    assert_same(y, np.array([0.0, 2.0, 3.0]))


def test_setitem_does_not_touch_other_arrays(executor):
    x = xp.asarray([1, 2, 3])
    y = x + 0
    y[0] = 10
    assert_same(x, np.array([1, 2, 3]))
    assert_same(y, np.array([10, 2, 3]))


@pytest.mark.parametrize("op, ufunc", [
    ("set", None), ("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply),
    ("divide", np.divide), ("power", np.power), ("min", np.minimum), ("max", np.maximum),
])
def test_at(executor, op, ufunc):
    a = np.array([1.0, 2.0, 3.0, 4.0])
    idx = np.array([0, 2, 0])
    x = xp.asarray(a)
    out = getattr(x.at[xp.asarray(idx)], op)(2.0)
    want = a.copy()
    if ufunc is None:
        want[idx] = 2.0
    else:
        ufunc.at(want, idx, 2.0)  # repeated indices accumulate
    assert_same(out, want)
    assert_same(x, a)  # functional: x is unchanged
    out = getattr(x.at[1:3], op)(xp.asarray([5.0, 6.0]))
    want = a.copy()
    want[1:3] = [5.0, 6.0] if ufunc is None else ufunc(a[1:3], [5.0, 6.0])
    assert_same(out, want)


def test_at_get(executor):
    x = xp.asarray(A)
    assert_same(x.at[0, 1].get(), A[0, 1])


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_take(executor, axis):
    idx = np.array([1, 0, -1, 1])
    out = xp.take(xp.asarray(A), xp.asarray(idx), axis=axis)
    assert_same(out, np.take(A, idx, axis=axis))


def test_take_1d_and_dtypes(executor):
    v = np.array([10, 20, 30], dtype=np.int16)
    assert_same(xp.take(xp.asarray(v), xp.asarray([2, 2, 0], dtype=xp.uint8)), v[[2, 2, 0]])
    assert_same(xp.take(xp.asarray(v), xp.asarray([], dtype=xp.int64)), v[:0])
    assert_matches_numpy(lambda a, i: xp.take(a, i, axis=1), xp.asarray(A), xp.asarray([0, 2]))


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_take_along_axis(executor, axis):
    idx = np.argsort(-A, axis=axis)
    out = xp.take_along_axis(xp.asarray(A), xp.asarray(idx), axis=axis)
    assert_same(out, np.take_along_axis(A, idx, axis=axis))


def test_take_along_axis_broadcasts(executor):
    idx = np.array([[[0], [3], [-1]]])  # (1, 3, 1) against A's (2, 3, 4) along axis 2
    out = xp.take_along_axis(xp.asarray(A), xp.asarray(idx), axis=2)
    assert_same(out, np.take_along_axis(A, idx, axis=2))
    idx2 = np.zeros((1, 2, 4), dtype=np.int64)  # size 2 along axis 1, broadcast along axis 0
    out = xp.take_along_axis(xp.asarray(A), xp.asarray(idx2), axis=1)
    assert_same(out, np.take_along_axis(A, idx2, axis=1))


@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_getitem_slices_hypothesis(data):
    shape = data.draw(st.lists(st.integers(0, 4), min_size=1, max_size=3).map(tuple))
    a = np.arange(int(np.prod(shape))).reshape(shape)
    key = tuple(
        data.draw(st.slices(n) | (st.integers(-n, n - 1) if n else st.slices(n))) for n in shape
    )
    assert_same(xp.asarray(a)[key], a[key])


@pytest.mark.parametrize("call, exc, match", [
    (lambda x: x[0, 0, 0, 0], IndexError, "too many indices"),
    (lambda x: x[2], IndexError, "index 2 is out of bounds for axis 0 with size 2"),
    (lambda x: x[..., ...], IndexError, "single ellipsis"),
    (lambda x: x[0.5], IndexError, "invalid index 0.5"),
    (lambda x: x[::0], ValueError, "slice step cannot be zero"),
    (lambda x: x[xp.asarray([0.5])], IndexError, "index arrays must be integer or boolean"),
    (lambda x: xp.take(x, xp.asarray([0])), ValueError, r"take: axis is required for a 3-D array"),
    (lambda x: xp.take(x, xp.asarray([[0]]), axis=0), ValueError, r"take: indices must be 1-D"),
    (lambda x: xp.take(x, xp.asarray([0.0]), axis=0), TypeError, "take: indices must have an integer dtype"),
    (lambda x: xp.take(x, [0], axis=0), TypeError, "take: indices must be an arrayx array"),
    (lambda x: xp.take(x, xp.asarray([0]), axis=3), IndexError, "take: axis=3 is out of bounds"),
    (lambda x: xp.take(xp.asarray(1.0), xp.asarray([0])), ValueError, "take: x must have at least one dimension"),
    (lambda x: xp.take_along_axis(x, xp.asarray([0])), ValueError, "take_along_axis: x and indices must have the same number of dimensions"),
    (lambda x: xp.take_along_axis(x, xp.zeros((3, 3, 1), dtype=xp.int64)), ValueError, "take_along_axis: shapes"),
    (lambda x: xp.take_along_axis(x, xp.zeros((2, 3, 1))), TypeError, "take_along_axis: indices must have an integer dtype"),
])
def test_errors(call, exc, match):
    x = xp.asarray(A)
    with pytest.raises(exc, match=match):
        call(x)


def test_setitem_errors():
    x = xp.zeros(3, dtype=xp.int32)
    with xp.strict():  # the default mode stores these as NumPy does (tests/api/test_numpy_habits.py)
        with pytest.raises(TypeError, match="__setitem__: cannot store float64 values into an int32 array"):
            x[0] = xp.asarray(1.5)
        with pytest.raises(TypeError, match="__setitem__: cannot store the Python float 1.5 into an int32 array"):
            x[0] = 1.5
    with pytest.raises(ValueError, match="unknown update 'append'"):
        at_update(xp.asarray([1.0]), 0, 1.0, "append")


def test_setitem_on_read_only_views_updates_functionally(executor):
    x = xp.reshape(xp.arange(9.0), (3, 3))
    d = xp.linalg.diagonal(x)  # NumPy returns a read-only view here
    d[0] = 7.0
    assert_same(d, np.array([7.0, 4.0, 8.0]))
    assert float(x[0, 0]) == 0.0
    b = xp.broadcast_to(xp.asarray([1.0, 2.0]), (2, 2))
    b[0, 0] = 5.0
    assert_same(b, np.array([[5.0, 2.0], [1.0, 2.0]]))


def test_zero_d_false_mask_with_an_empty_update_leaves_the_array(executor: str) -> None:
    # array-api-extra's apply_where does x.at[mask].set(f(x[mask])) on 0-d arrays (scipy.stats.pearsonr)
    for flag, want in ((False, 2.0), (True, 7.0)):
        x = xp.asarray(2.0)
        mask = xp.asarray(flag)
        x[mask] = x[mask] + 5.0
        assert_same(x, np.asarray(want))


# -- slices with bounds past the start of an axis (Dask clamped them wrongly) -------------------

_X = np.arange(2 * 3 * 3, dtype=np.int16).reshape(2, 3, 3)


@pytest.mark.dask_chunks(2, 1)
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

@pytest.mark.dask_chunks(2, 1)
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

@pytest.mark.dask_chunks(2, 1)
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
