"""Set functions on every executor: namedtuple fields, inverse shape, NaN handling, isin."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as xp
from tests.conftest import assert_same

A = np.array([[3, 1, 3], [2, 1, 1]], dtype=np.int16)


def test_unique_all(executor):
    out = xp.unique_all(xp.asarray(A))
    assert out._fields == ("values", "indices", "inverse_indices", "counts")
    assert_same(out.values, np.array([1, 2, 3], np.int16))
    assert_same(out.counts, np.array([3, 1, 2]))
    assert out.indices.dtype == out.inverse_indices.dtype == out.counts.dtype == xp.int64
    assert out.inverse_indices.shape == A.shape
    flat = A.reshape(-1)
    assert_same(xp.asarray(flat)[out.indices], np.asarray(out.values))
    assert_same(xp.take(out.values, xp.reshape(out.inverse_indices, (-1,))), flat)


def test_unique_counts_inverse_values(executor):
    x = xp.asarray(A)
    c = xp.unique_counts(x)
    assert c._fields == ("values", "counts")
    assert_same(c, [np.array([1, 2, 3], np.int16), np.array([3, 1, 2])])
    inv = xp.unique_inverse(x)
    assert inv._fields == ("values", "inverse_indices")
    assert_same(inv.inverse_indices, np.unique(A, return_inverse=True)[1].reshape(A.shape))
    v = xp.unique_values(x)
    assert_same(v, np.array([1, 2, 3], np.int16))


def test_unique_nan_distinct(executor):
    a = np.array([np.nan, 1.0, np.nan, 1.0, -0.0, 0.0])
    vals = np.asarray(xp.unique_values(xp.asarray(a)))
    assert np.isnan(vals).sum() == 2
    assert sorted(vals[~np.isnan(vals)].tolist()) == [0.0, 1.0]
    counts = xp.unique_counts(xp.asarray(a))
    c = np.asarray(counts.counts)
    v = np.asarray(counts.values)
    assert c[np.isnan(v)].tolist() == [1, 1]
    assert c[v == 0].tolist() == [2]


def test_unique_empty(executor):
    out = xp.unique_all(xp.zeros((0,), dtype=xp.int32))
    assert all(np.asarray(a).shape == (0,) for a in out)  # (Dask only knows the size once computed)


@pytest.mark.parametrize("invert", [False, True])
def test_isin(executor, invert):
    x1 = np.array([[1, 2], [3, 4]], dtype=np.int32)
    x2 = np.array([2, 4, 6], dtype=np.int64)
    out = xp.isin(xp.asarray(x1), xp.asarray(x2), invert=invert)
    assert out.dtype == xp.bool
    assert_same(out, np.isin(x1, x2, invert=invert))
    # Python scalars on either side (2025.12)
    s = xp.isin(3, xp.asarray(x1), invert=invert)
    assert s.shape == () and bool(s) is (not invert)
    assert_same(xp.isin(xp.asarray(x1), 4, invert=invert), np.isin(x1, [4], invert=invert))
    # mixed int/float compare by value
    assert_same(xp.isin(xp.asarray([1.0, 2.5]), xp.asarray([1, 2])), np.array([True, False]))


def _strict(fn):
    """``fn()`` in strict mode: the default mode converts NumPy arrays and Python scalars (tests/api/test_scalars_and_ints.py)."""
    with xp.strict():
        return fn()


@pytest.mark.parametrize("call, exc, match", [
    (lambda: xp.unique_values([1, 2]), TypeError, "unique_values: x must be an arrayx array"),
    (lambda: _strict(lambda: xp.unique_all(np.array([1, 2]))), TypeError, "unique_all: x must be an arrayx array"),
    (lambda: _strict(lambda: xp.isin(1, 2)), TypeError, "isin: x1 and x2 must be arrayx arrays"),
    (lambda: xp.isin(xp.asarray([1]), [1]), TypeError, "isin: x2 must be an arrayx array, got list"),
    (lambda: xp.isin(xp.asarray([1], dtype=xp.int8), 1000), OverflowError, "isin: the Python integer 1000"),
])
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
