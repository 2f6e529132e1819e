"""Searching functions on every executor against NumPy: index dtypes, where with scalars,
searchsorted with sorter and scalars, and argument errors."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import arrayx as xp
from tests.conftest import assert_matches_numpy, assert_same

M = np.array([[3.0, 1.0, 4.0, 1.0], [5.0, 9.0, 2.0, 6.0], [5.0, 3.0, 5.0, 9.0]])


@pytest.mark.parametrize("axis, keepdims", [(None, False), (None, True), (0, False), (-1, True), (1, False)])
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_extrema(executor, name, axis, keepdims):
    fn = getattr(xp, name)
    out = fn(xp.asarray(M), axis=axis, keepdims=keepdims)
    assert out.dtype == xp.int64
    expected = getattr(np, name)(M, axis=axis, keepdims=keepdims)
    assert_same(out, np.asarray(expected, dtype=np.int64))


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "float32"])
def test_arg_extrema_dtypes_first_occurrence(executor, dtype):
    a = np.array([0, 2, 2, 1, 0, 2]).astype(dtype)
    assert int(xp.argmax(xp.asarray(a))) == int(np.argmax(a))
    assert int(xp.argmin(xp.asarray(a))) == int(np.argmin(a))


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1), -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_count_nonzero(executor, axis, keepdims):
    a = np.array([[0, 1, 2], [0, 0, 3]], dtype=np.int16)
    out = xp.count_nonzero(xp.asarray(a), axis=axis, keepdims=keepdims)
    assert out.dtype == xp.int64
    assert_same(out, np.asarray(np.count_nonzero(a, axis=axis, keepdims=keepdims), dtype=np.int64))
    assert_matches_numpy(lambda x: xp.count_nonzero(x, axis=axis, keepdims=keepdims), xp.asarray(a))


def test_nonzero(executor):
    a = np.array([[0, 1.5, 0], [2.0, 0, -1.0]])
    out = xp.nonzero(xp.asarray(a))
    assert isinstance(out, tuple) and len(out) == 2
    assert all(o.dtype == xp.int64 for o in out)
    assert_same(out, [i.astype(np.int64) for i in np.nonzero(a)])
    assert_same(xp.nonzero(xp.asarray([True, False, True])), [np.array([0, 2])])
    assert_same(xp.nonzero(xp.zeros((2, 0))), [np.zeros(0, np.int64)] * 2)


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted(executor, side):
    x1 = np.array([1.0, 2.0, 2.0, 3.0, 5.0])
    v = np.array([[0.0, 2.0], [2.5, 9.0]])
    out = xp.searchsorted(xp.asarray(x1), xp.asarray(v), side=side)
    assert out.dtype == xp.int64
    assert_same(out, np.searchsorted(x1, v, side=side).astype(np.int64))
    # Python scalars (2025.12) give 0-d results
    out = xp.searchsorted(xp.asarray(x1), 2, side=side)
    assert out.shape == () and int(out) == np.searchsorted(x1, 2, side=side)
    # mixed dtypes promote
    out = xp.searchsorted(xp.asarray([1, 3, 5], dtype=xp.int8), xp.asarray([2.5, 5.0]), side=side)
    assert_same(out, np.searchsorted(np.array([1.0, 3, 5]), [2.5, 5.0], side=side))
    # float scalar into an integer array
    assert int(xp.searchsorted(xp.asarray([1, 3, 5]), 3.5, side=side)) == 2


def test_searchsorted_sorter(executor):
    x1 = np.array([5.0, 1.0, 3.0, 2.0])
    sorter = np.argsort(x1)
    v = np.array([0.0, 2.0, 4.0, 6.0])
    for side in ("left", "right"):
        out = xp.searchsorted(xp.asarray(x1), xp.asarray(v), side=side, sorter=xp.asarray(sorter))
        assert_same(out, np.searchsorted(x1, v, side=side, sorter=sorter).astype(np.int64))


def test_where(executor):
    c = np.array([[True, False, True]])
    a = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int16)
    b = np.array([10.0, 20.0, 30.0], dtype=np.float32)
    out = xp.where(xp.asarray(c), xp.asarray(a), xp.asarray(b))
    assert out.dtype == xp.float32 and out.shape == (2, 3)
    assert_same(out, np.where(c, a, b).astype(np.float32))
    assert_matches_numpy(xp.where, xp.asarray(c), xp.asarray(a), xp.asarray(b))


@pytest.mark.parametrize("x1, x2, dtype", [
    ("arr", 0, xp.int16),
    (0, "arr", xp.int16),
    ("arr", 1.5, xp.float64),
    (-2.5, "arr", xp.float64),
    ("arr", True, xp.int16),
    ("arr", 1j, xp.complex128),
])
def test_where_scalars(executor, x1, x2, dtype):
    c = np.array([True, False, True])
    a = np.array([1, 2, 3], dtype=np.int16)
    args = [xp.asarray(a) if v == "arr" else v for v in (x1, x2)]
    out = xp.where(xp.asarray(c), *args)
    assert out.dtype == dtype
    expected = np.where(c, *[a if v == "arr" else v for v in (x1, x2)]).astype(dtype)
    assert_same(out, expected)


def test_where_float32_keeps_dtype(executor):
    out = xp.where(xp.asarray([True, False]), xp.asarray([1.0, 2.0], dtype=xp.float32), 0.5)
    assert out.dtype == xp.float32
    assert_same(out, np.array([1.0, 0.5], np.float32))


@settings(max_examples=15, deadline=None)
@given(values=st.lists(st.integers(-5, 5), min_size=1, max_size=12), probes=st.lists(st.integers(-7, 7), max_size=6))
def test_searchsorted_hypothesis(values, probes):
    x1 = np.sort(np.array(values))
    v = np.array(probes, dtype=np.int64)
    for side in ("left", "right"):
        assert_same(xp.searchsorted(xp.asarray(x1), xp.asarray(v), side=side), np.searchsorted(x1, v, side=side))


# -- errors ---------------------------------------------------------------------------------------

def _in_strict(fn):
    with xp.strict():
        return fn()


@pytest.mark.parametrize("call, exc, match", [
    (lambda x: xp.argmax(xp.asarray([1j])), TypeError, "argmax: x must have a real-valued dtype"),
    (lambda x: xp.argmin(xp.zeros((2, 0)), axis=1), ValueError, "argmin: axis 1 .* is empty"),
    (lambda x: xp.argmax(xp.zeros(0)), ValueError, "argmax: x is empty"),
    (lambda x: xp.argmax(x, axis=2), IndexError, "argmax: axis=2 is out of bounds"),
    (lambda x: xp.argmax(x, axis=(0, 1)), TypeError, "argmax: axis must be an int"),
    (lambda x: xp.count_nonzero(x, axis=(0, 0)), ValueError, "count_nonzero: axis .* repeated"),
    (lambda x: xp.nonzero(xp.asarray(1.0)), ValueError, "nonzero: x must have at least one dimension"),
    (lambda x: xp.searchsorted(x, xp.asarray([1.0])), ValueError, r"searchsorted: x1 must be 1-D, got shape \(2, 3\)"),
    (lambda x: xp.searchsorted(xp.asarray([1.0]), 1.0, side="middle"), ValueError, "searchsorted: side must be"),
    (lambda x: xp.searchsorted(xp.asarray([1.0]), [1.0]), TypeError, "searchsorted: x2 must be an arrayx array"),
    (lambda x: xp.searchsorted(xp.asarray([1j]), 1.0), TypeError, "searchsorted: x1 must have a real-valued"),
    (lambda x: xp.searchsorted(xp.asarray([1.0, 2.0]), 1.0, sorter=xp.asarray([0])), ValueError, "searchsorted: sorter"),
    (lambda x: _in_strict(lambda: xp.where(x > 0, 1, 2)), TypeError,  # the default mode takes two scalars
     "where: at least one argument must be an arrayx array"),
    (lambda x: xp.where(x, x, 0.0), TypeError, "where: condition must have a bool dtype"),
    (lambda x: xp.where(x > 0, x, xp.ones(4)), ValueError, "where: shapes"),
    (lambda x: xp.where(x > 0, x, "a"), TypeError, "where: x2 must be an arrayx array or a Python scalar"),
    (lambda x: xp.where([True], x, x), TypeError, "where: condition must be an arrayx array"),
])
def test_errors(call, exc, match):
    x = xp.reshape(xp.arange(6.0), (2, 3))
    with pytest.raises(exc, match=match):
        call(x)


# -- ties in argmax/argmin over all axes (over several Dask chunks) ----------------------------------

@pytest.mark.dask_chunks(2, 1)
@pytest.mark.parametrize("fn", [xp.argmax, xp.argmin])
def test_arg_reductions_over_all_axes_return_the_first_occurrence(executor, fn):
    a = np.random.default_rng(1).integers(0, 3, (2, 3, 4)).astype(np.float64)  # many ties
    out = assert_matches_numpy(fn, xp.asarray(a))
    assert int(out) == int(np.argmax(a) if fn is xp.argmax else np.argmin(a))
    assert assert_matches_numpy(lambda x: fn(x, keepdims=True), xp.asarray(a)).shape == (1, 1, 1)
