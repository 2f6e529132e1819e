"""sort/argsort on every executor: ascending/descending, stability, NaNs, axes, errors."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import arrayx as xp
from tests.conftest import assert_matches_numpy, assert_same

M = np.array([[3, 1, 4, 1, 5], [9, 2, 6, 5, 3], [5, 8, 9, 7, 9]], dtype=np.int32)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort(executor, axis, descending):
    out = xp.sort(xp.asarray(M), axis=axis, descending=descending)
    expected = np.sort(M, axis=axis)
    if descending:
        expected = np.flip(expected, axis=axis)
    assert_same(out, expected)
    assert_matches_numpy(lambda x: xp.sort(x, axis=axis, descending=descending), xp.asarray(M))


@pytest.mark.parametrize("descending", [False, True])
def test_argsort_is_stable(executor, descending):
    a = np.array([2, 1, 2, 1, 3, 2, 1], dtype=np.int8)
    out = xp.argsort(xp.asarray(a), descending=descending)
    assert out.dtype == xp.int64
    order = sorted(range(len(a)), key=lambda i: -int(a[i]) if descending else int(a[i]))  # Python's sort is stable
    assert_same(out, np.array(order, dtype=np.int64))


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int64", "float32", "float64"])
def test_sort_dtypes(executor, dtype):
    a = np.array([[3, 0, 2], [1, 1, 0]]).astype(dtype)
    assert_same(xp.sort(xp.asarray(a), axis=0), np.sort(a, axis=0))
    assert_same(xp.argsort(xp.asarray(a)), np.argsort(a, kind="stable").astype(np.int64))


def test_sort_nan_last(executor):
    a = np.array([2.0, np.nan, -1.0, np.inf, 0.0])
    assert_same(xp.sort(xp.asarray(a)), np.sort(a))
    assert_same(xp.argsort(xp.asarray(a)), np.argsort(a, kind="stable"))


def test_zero_size(executor):
    assert xp.sort(xp.zeros((0, 3)), axis=0).shape == (0, 3)
    assert xp.argsort(xp.zeros((2, 0))).shape == (2, 0)


@settings(max_examples=15, deadline=None)
@given(values=st.lists(st.integers(-3, 3), min_size=1, max_size=10), descending=st.booleans())
def test_argsort_sorts_hypothesis(values, descending):
    a = np.array(values, dtype=np.int16)
    idx = np.asarray(xp.argsort(xp.asarray(a), descending=descending))
    taken = a[idx]
    assert np.all(taken[:-1] >= taken[1:]) if descending else np.all(taken[:-1] <= taken[1:])
    # stable: equal values keep their original order
    for v in set(values):
        positions = idx[taken == v]
        assert np.all(np.diff(positions) > 0)


@pytest.mark.parametrize("call, exc, match", [
    (lambda: xp.sort(xp.asarray([1j, 2j])), TypeError, "sort: x must have a real-valued dtype, got complex128"),
    (lambda: xp.argsort(xp.asarray(1.0)), ValueError, "argsort: x must have at least one dimension"),
    (lambda: xp.sort(xp.ones((2, 2)), axis=2), IndexError, "sort: axis=2 is out of bounds"),
    (lambda: xp.sort([3, 1]), TypeError, "sort: x must be an arrayx array"),
])
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
