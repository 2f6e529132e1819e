"""Statistical functions on every executor: values against NumPy, the standard's
accumulation dtypes, correction, include_initial, NaN special cases and errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import arrayx as xp
from tests.conftest import assert_matches_numpy, assert_same

F = np.array([[0.5, -1.25, 3.0, 2.0], [4.0, 0.25, -2.0, 1.5], [1.0, 1.0, -0.5, 0.75]])
AXES = [None, 0, -1, (1, 0)]


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "std", "var"])
def test_reductions(executor, name, axis, keepdims):
    fn = getattr(xp, name)
    out = fn(xp.asarray(F), axis=axis, keepdims=keepdims)
    np_axis = tuple(sorted(a % 2 for a in axis)) if isinstance(axis, tuple) else axis
    expected = getattr(np, name)(F, axis=np_axis, keepdims=keepdims)
    assert_same(out, np.asarray(expected))
    assert_matches_numpy(lambda x: fn(x, axis=axis, keepdims=keepdims), xp.asarray(F))


@pytest.mark.parametrize("dtype, expected", [
    ("bool", "int64"), ("int8", "int64"), ("int32", "int64"), ("int64", "int64"),
    ("uint8", "uint64"), ("uint32", "uint64"), ("uint64", "uint64"),
    ("float32", "float32"), ("float64", "float64"), ("complex64", "complex64"),
])
@pytest.mark.parametrize("name", ["sum", "prod", "cumulative_sum", "cumulative_prod"])
def test_accumulation_dtype(executor, name, dtype, expected):
    a = np.array([1, 2, 3, 1]).astype(dtype)
    out = getattr(xp, name)(xp.asarray(a))
    assert out.dtype == np.dtype(expected)
    ref = {"sum": np.sum, "prod": np.prod, "cumulative_sum": np.cumsum, "cumulative_prod": np.cumprod}[name]
    assert_same(out, np.asarray(ref(a.astype(expected))))


def test_explicit_dtype(executor):
    a = xp.asarray([100, 100, 100], dtype=xp.int8)
    assert_same(xp.sum(a, dtype=xp.int16), np.array(300, np.int16))
    assert_same(xp.prod(xp.asarray([1.5, 2.0], dtype=xp.float32), dtype=xp.float64), np.array(3.0))
    assert_same(xp.sum(xp.asarray([1.5, 2.25]), dtype=xp.complex128), np.array(3.75 + 0j))
    assert_same(xp.cumulative_sum(a, dtype=xp.int32), np.array([100, 200, 300], np.int32))
    assert xp.sum(xp.asarray([1, 2], dtype=xp.int8), dtype=xp.int8).dtype == xp.int8


@pytest.mark.parametrize("include_initial", [False, True])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
def test_cumulative(executor, name, axis, include_initial):
    out = getattr(xp, name)(xp.asarray(F), axis=axis, include_initial=include_initial)
    ref = np.cumsum(F, axis=axis) if name == "cumulative_sum" else np.cumprod(F, axis=axis)
    if include_initial:
        shape = list(F.shape)
        shape[axis] = 1
        ref = np.concatenate([np.full(shape, 0.0 if name == "cumulative_sum" else 1.0), ref], axis=axis)
    assert_same(out, ref)


def test_cumulative_1d_and_empty(executor):
    assert_same(xp.cumulative_sum(xp.asarray([1, 2, 3])), np.array([1, 3, 6]))
    assert_same(xp.cumulative_prod(xp.asarray([2, 2, 3]), include_initial=True), np.array([1, 2, 4, 12]))
    assert_same(xp.cumulative_sum(xp.zeros((0,)), include_initial=True), np.zeros(1))


@pytest.mark.parametrize("correction", [0, 1, 1.5])
@pytest.mark.parametrize("name", ["std", "var"])
def test_correction(executor, name, correction):
    out = getattr(xp, name)(xp.asarray(F), axis=1, correction=correction)
    assert_same(out, getattr(np, name)(F, axis=1, ddof=correction))


@pytest.mark.parametrize("name", ["std", "var"])
def test_correction_too_large_is_nan(executor, name):
    fn = getattr(xp, name)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy warns "Degrees of freedom <= 0"
        assert np.isnan(float(fn(xp.asarray([1.0, 2.0]), correction=2)))
        assert np.isnan(float(fn(xp.asarray([1.0, 2.0]), correction=3)))
        out = fn(xp.asarray(F), axis=0, correction=3, keepdims=True)
        assert out.shape == (1, 4) and bool(xp.all(xp.isnan(out)))


def test_special_cases(executor):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy warns "Mean of empty slice"
        assert np.isnan(float(xp.mean(xp.zeros((0,)))))
    assert np.isnan(float(xp.max(xp.asarray([1.0, np.nan, 3.0]))))
    assert np.isnan(float(xp.min(xp.asarray([np.nan, 1.0]))))
    assert float(xp.sum(xp.zeros((0,)))) == 0.0
    assert float(xp.prod(xp.zeros((0,)))) == 1.0
    assert_same(xp.sum(xp.zeros((2, 0)), axis=1), np.zeros(2))
    assert_same(xp.max(xp.zeros((2, 0)), axis=0), np.zeros((0,)))  # reduces a non-empty axis
    assert_same(xp.mean(xp.asarray([1 + 2j, 3 - 4j])), np.array(2 - 1j))
    assert_same(xp.sum(xp.asarray(2.5)), np.array(2.5))
    assert_same(xp.max(xp.asarray([True, False])), np.array(True))


@settings(max_examples=15, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple),
    data=st.data(),
)
def test_sum_mean_hypothesis(shape, data):
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) / 3.0
    n = len(shape)
    axis = data.draw(st.none() | st.integers(-n, n - 1) | st.lists(st.integers(0, n - 1), unique=True).map(tuple))
    keepdims = data.draw(st.booleans())
    for name in ("sum", "mean", "max", "var"):
        out = getattr(xp, name)(xp.asarray(a), axis=axis, keepdims=keepdims)
        assert_same(out, np.asarray(getattr(np, name)(a, axis=axis, keepdims=keepdims)))


def _strict(fn, *args):
    """``fn(*args)`` in strict mode (the default mode takes Python scalars and integer input)."""
    with xp.strict():
        return fn(*args)


@pytest.mark.parametrize("call, exc, match", [
    (lambda x: _strict(xp.mean, 3), TypeError, "mean: x must be an arrayx array"),
    (lambda x: _strict(xp.std, xp.asarray([1, 2])), TypeError, "std: x must have a real floating dtype"),
    (lambda x: xp.var(xp.asarray([1j])), TypeError, "var: x must have a real floating dtype, got complex128"),
    (lambda x: xp.var(x, correction="1"), TypeError, "var: correction must be an int or a float"),
    (lambda x: xp.max(xp.asarray([1j])), TypeError, "max: x must have a real-valued dtype"),
    (lambda x: xp.min(xp.zeros((0, 2))), ValueError, "min: reducing over an empty axis"),
    (lambda x: xp.max(xp.zeros((0, 2)), axis=0), ValueError, "max: reducing over an empty axis"),
    (lambda x: xp.sum(x, axis=2), IndexError, "sum: axis=2 is out of bounds"),
    (lambda x: xp.sum(x, axis=(1, -1)), ValueError, "sum: axis .* repeated"),
    (lambda x: xp.sum(x, axis=[0]), TypeError, "sum: axis must be an int or a tuple of ints, got a list"),
    (lambda x: xp.sum(xp.asarray([1j]), dtype=xp.float64), TypeError, "sum: dtype=float64 would drop the imaginary part"),
    (lambda x: xp.prod(x, dtype="float64"), TypeError, "prod: 'float64' is not a dtype"),
    (lambda x: xp.sum([1, 2]), TypeError, "sum: x must be an arrayx array"),
    (lambda x: xp.cumulative_sum(x), ValueError, r"cumulative_sum: axis is required for a 2-D array"),
    (lambda x: xp.cumulative_prod(xp.asarray(1.0)), ValueError, "cumulative_prod: x must have at least one dimension"),
    (lambda x: xp.cumulative_sum(x, axis=(0,)), TypeError, "cumulative_sum: axis must be an int"),
])
def test_errors(call, exc, match):
    x = xp.reshape(xp.arange(6.0), (2, 3))
    with pytest.raises(exc, match=match):
        call(x)


def test_mean_of_integers_is_default_float(executor):
    out = xp.mean(xp.asarray([1, 2, 4], dtype=xp.int16))
    assert out.dtype == xp.float64
    assert_same(out, np.asarray(np.mean(np.array([1, 2, 4], dtype=np.int16))))
