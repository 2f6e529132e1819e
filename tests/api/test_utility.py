"""all/any/diff on every executor against NumPy, and argument errors."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as xp
from tests.conftest import assert_matches_numpy, assert_same

B = np.array([[True, False, True], [True, True, True]])


@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("name", ["all", "any"])
def test_all_any(executor, name, axis, keepdims):
    fn = getattr(xp, name)
    for a in (B, B.astype(np.float32) - 1.0, np.zeros((2, 3), np.int8)):
        out = fn(xp.asarray(a), axis=axis, keepdims=keepdims)
        assert out.dtype == xp.bool
        assert_same(out, np.asarray(getattr(np, name)(a, axis=axis, keepdims=keepdims)))


def test_all_any_empty(executor):
    assert bool(xp.all(xp.zeros((0,)))) is True
    assert bool(xp.any(xp.zeros((0,)))) is False
    assert_same(xp.all(xp.zeros((2, 0)), axis=1), np.array([True, True]))
    assert bool(xp.any(xp.asarray(np.nan))) is True
    assert bool(xp.all(xp.asarray([1j, 0j]))) is False


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_diff(executor, axis, n):
    a = np.array([[1, 4, 9, 16], [2, 3, 5, 7], [0, -1, 5, 2]], dtype=np.int32)
    out = xp.diff(xp.asarray(a), axis=axis, n=n)
    assert_same(out, np.diff(a, axis=axis, n=n))
    assert_matches_numpy(lambda x: xp.diff(x, axis=axis, n=n), xp.asarray(a))


def test_diff_prepend_append(executor):
    a = np.array([[1.0, 4.0, 9.0], [2.0, 3.0, 5.0]])
    pre = np.array([[0.0], [1.0]])
    app = np.array([[10.0, 20.0], [6.0, 8.0]])
    out = xp.diff(xp.asarray(a), axis=1, prepend=xp.asarray(pre), append=xp.asarray(app))
    assert_same(out, np.diff(a, axis=1, prepend=pre, append=app))
    out = xp.diff(xp.asarray(a), axis=0, prepend=xp.asarray(a[:1]))
    assert_same(out, np.diff(a, axis=0, prepend=a[:1]))
    # mixed dtypes promote
    out = xp.diff(xp.asarray([1, 2, 4], dtype=xp.int8), append=xp.asarray([7], dtype=xp.int16))
    assert_same(out, np.array([1, 2, 3], np.int16))


def test_diff_more_than_length(executor):
    assert_same(xp.diff(xp.asarray([1.0, 2.0]), n=3), np.zeros(0))


@pytest.mark.parametrize("call, exc, match", [
    (lambda x: xp.all(x, axis=3), IndexError, "all: axis=3 is out of bounds"),
    (lambda x: xp.any(x, axis=(0, 0)), ValueError, "any: axis .* repeated"),
    (lambda x: xp.any([True]), TypeError, "any: x must be an arrayx array"),
    (lambda x: xp.diff(xp.asarray(1.0)), ValueError, "diff: x must have at least one dimension"),
    (lambda x: xp.diff(x, n=-1), ValueError, "diff: n must be non-negative"),
    (lambda x: xp.diff(x, n=1.0), TypeError, "diff: n must be an int"),
    (lambda x: xp.diff(x, axis=2), IndexError, "diff: axis=2 is out of bounds"),
    (lambda x: xp.diff(x, prepend=xp.ones((3, 1))), ValueError, r"diff: prepend has shape \(3, 1\)"),
    (lambda x: xp.diff(x, append=xp.ones(3)), ValueError, "diff: append has shape"),
    (lambda x: xp.diff(x, append=[1.0]), TypeError, "diff: append must be an arrayx array"),
])
def test_errors(call, exc, match):
    x = xp.reshape(xp.arange(6.0), (2, 3))
    with pytest.raises(exc, match=match):
        call(x)


# -- diff of bool is not_equal --------------------------------------------------------------------

@pytest.mark.dask_chunks(2, 1)
def test_diff_of_bool_is_not_equal(executor):
    out = assert_matches_numpy(xp.diff, xp.asarray([True, False]))
    assert out.dtype == xp.bool and np.asarray(out).tolist() == [True]
    b = np.array([[True, True, False], [False, True, True]])
    assert_same(xp.diff(xp.asarray(b), axis=1, n=2), np.diff(b, axis=1, n=2))
    assert_same(xp.diff(xp.asarray(b), axis=0), np.diff(b, axis=0))
