"""Creation functions on every executor, against the NumPy executor, plus argument errors."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as xp
from tests import covering
from tests.conftest import assert_matches_numpy, assert_same, on_numpy


def test_constant_fills(executor):
    assert_same(xp.zeros((2, 3)), np.zeros((2, 3)))
    assert_same(xp.ones(4, dtype=xp.int32), np.ones(4, dtype=np.int32))
    assert_same(xp.full((2,), 7), np.full((2,), 7, dtype=np.int64))
    assert_same(xp.full((2,), 1.5, dtype=xp.float32), np.full((2,), 1.5, dtype=np.float32))
    assert_same(xp.full((), True), np.array(True))
    assert xp.empty((3, 0)).shape == (3, 0)
    assert xp.zeros(3).device.executor == executor


def test_arange_linspace_eye(executor):
    assert_same(xp.arange(5), np.arange(5))
    assert_same(xp.arange(1, 10, 3), np.arange(1, 10, 3))
    assert_same(xp.arange(10, 1, -4), np.arange(10, 1, -4))
    assert_same(xp.arange(0.0, 1.0, 0.25), np.arange(0.0, 1.0, 0.25))
    assert_same(xp.arange(3, dtype=xp.uint8), np.arange(3, dtype=np.uint8))
    assert xp.arange(5, 1).shape == (0,)
    assert_same(xp.linspace(0.0, 1.0, 5), np.linspace(0.0, 1.0, 5))
    assert_same(xp.linspace(0, 1, 4, endpoint=False, dtype=xp.float32),
                np.linspace(0, 1, 4, endpoint=False, dtype=np.float32))
    assert_same(xp.eye(3, 4, k=1), np.eye(3, 4, k=1))


# On the jax executor each case is two new XLA programs (eager and jitted); there the ci profile takes
# each (start, stop, num, endpoint) row in one dtype, the dtypes in turn (tests/covering.py: every row
# and every dtype still runs on jax); numpy, numba and dask, and the deep profile, every case.
@pytest.mark.parametrize("executor, start, stop, num, endpoint, dtype", covering.on_executors([
    (*row, dtype) for dtype in ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint64", "bool"]
    for row in [(0, 3, 4, True), (-1, 1, 5, True), (-3.5, 2.25, 9, True), (0.5, 3.5, 4, False), (10, -10, 7, True),
                (-2.5, 0.9, 5, True), (0, 100, 0, True), (5, 5, 3, True), (0, 30000, 11, False)]]),
    indirect=["executor"])
def test_linspace_integer_and_bool_dtypes_match_numpy(executor, start, stop, num, endpoint, dtype):
    # NumPy computes in float64, then floors for integer dtypes (SciPy's linspace(0, 3, 4, dtype=int16))
    info = np.iinfo(dtype) if dtype != "bool" else None
    expected = np.linspace(start, stop, num, endpoint=endpoint, dtype=np.float64)
    if info is not None and expected.size and not info.min <= np.floor(expected).min() <= np.floor(expected).max() <= info.max:
        with pytest.raises(OverflowError, match=f"do not fit {dtype}"):
            xp.linspace(start, stop, num, endpoint=endpoint, dtype=getattr(xp, dtype))
        return
    want = np.linspace(start, stop, num, endpoint=endpoint, dtype=dtype)
    assert_same(xp.linspace(start, stop, num, endpoint=endpoint, dtype=getattr(xp, dtype)), want)
    jitted = xp.jit(lambda: xp.linspace(start, stop, num, endpoint=endpoint, dtype=getattr(xp, dtype)))()
    assert_same(jitted, want)


def test_arange_takes_0d_arrays_and_numpy_scalars(executor):
    n = xp.asarray(5)
    assert_same(xp.arange(1, n + 1), np.arange(1, 6))  # SciPy's arange(1, n + 1)
    assert_same(xp.arange(n), np.arange(5))
    assert_same(xp.arange(xp.asarray(0.5), xp.asarray(4), xp.asarray(1.5)), np.arange(0.5, 4, 1.5))
    assert_same(xp.arange(np.int32(2), np.asarray(9), np.int64(3)), np.arange(2, 9, 3))
    assert_same(xp.arange(np.float64(2.5)), np.arange(2.5))
    assert_same(xp.linspace(xp.asarray(0.0), np.float32(1.0), 3), np.linspace(0.0, 1.0, 3))


@pytest.mark.parametrize("args", [(27,), (2, 9, 3), (0.5, 4.0, 0.75), (10, 0, -3), (0, 9000.5)])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_arange_complex_dtype_matches_numpy(executor, args, dtype):
    real = {"complex64": np.float32, "complex128": np.float64}[dtype]
    want = np.arange(*args, dtype=np.float64).astype(real).astype(dtype)
    assert_same(xp.arange(*args, dtype=getattr(xp, dtype)), want)
    assert_same(xp.jit(lambda: xp.arange(*args, dtype=getattr(xp, dtype)))(), want)
    np.testing.assert_array_equal(np.asarray(xp.arange(*args, dtype=getattr(xp, dtype))), want)


def test_long_float_arange_has_numpy_bits(executor):
    # long float ranges are built by the executor (lazily on Dask), with NumPy's exact values
    rng = np.random.default_rng(5)
    for _ in range(12):
        start = float(rng.uniform(-1e3, 1e3) * rng.choice([1e-5, 1.0, 1e5]))
        step = float(rng.uniform(1e-3, 1.0) * rng.choice([-7.3, -1.0, 1e-3, 1.0]))
        stop = start + step * int(rng.integers(5000, 20000))
        for dtype in (xp.float64, xp.float32):
            assert_same(xp.arange(start, stop, step, dtype=dtype),
                        np.arange(start, stop, step, dtype=np.float64).astype(dtype))
    assert_same(xp.arange(3, 9000.5), np.arange(3, 9000.5))


def test_like_functions(executor):
    x = xp.asarray(np.arange(6, dtype=np.int16).reshape(2, 3))
    assert_matches_numpy(xp.zeros_like, x)
    assert_matches_numpy(xp.ones_like, x)
    assert_matches_numpy(lambda a: xp.full_like(a, 9), x)
    assert_matches_numpy(lambda a: xp.full_like(a, 0.5, dtype=xp.float32), x)
    assert xp.empty_like(x).shape == (2, 3) and xp.empty_like(x).dtype == xp.int16
    assert_matches_numpy(lambda a: xp.tril(a, k=-1), x)
    assert_matches_numpy(xp.triu, x)


def test_meshgrid(executor):
    a = xp.asarray([1, 2, 3])
    b = xp.asarray([4, 5])
    for indexing in ("xy", "ij"):
        got = xp.meshgrid(a, b, indexing=indexing)
        want = np.meshgrid(np.asarray(a), np.asarray(b), indexing=indexing)
        assert_same(list(got), want)


def test_meshgrid_returns_tuple(executor):
    # 2025.12: meshgrid returns a tuple (it was a list before)
    out = xp.meshgrid(xp.asarray([1.0, 2.0]), xp.asarray([3.0]))
    assert type(out) is tuple and len(out) == 2
    assert type(xp.meshgrid(xp.asarray([1]))) is tuple


def test_asarray_sources(executor):
    assert_same(xp.asarray([[1, 2], [3, 4]]), np.array([[1, 2], [3, 4]]))
    assert_same(xp.asarray([1.0, 2]), np.array([1.0, 2.0]))
    assert_same(xp.asarray(True), np.array(True))
    assert_same(xp.asarray(3, dtype=xp.float32), np.array(3, dtype=np.float32))
    assert_same(xp.asarray(np.arange(3, dtype=np.uint16)), np.arange(3, dtype=np.uint16))
    x = xp.asarray([1.0, 2.0])
    assert xp.asarray(x) is x
    y = xp.asarray(x, copy=True)
    assert y is not x
    assert_same(y, x)
    assert_same(xp.asarray([xp.asarray(1.0), xp.asarray(2.0)]), np.array([1.0, 2.0]))
    assert_same(xp.asarray(x, dtype=xp.float32), np.array([1.0, 2.0], dtype=np.float32))


def test_asarray_copy_semantics_numpy():
    base = np.arange(3.0)
    shared = xp.asarray(base, device="numpy")
    base[0] = 10.0
    assert float(shared[0]) == 10.0  # copy=None shares when it can
    copied = xp.asarray(base, copy=True, device="numpy")
    base[1] = 20.0
    assert float(copied[1]) == 1.0
    with pytest.raises(ValueError, match="copy=False"):
        xp.asarray(xp.asarray([1, 2]), dtype=xp.float64, copy=False)


def test_from_dlpack_roundtrip(executor):
    x = xp.asarray(np.arange(4.0))
    y = xp.from_dlpack(np.arange(4.0))
    assert_same(y, np.arange(4.0))
    assert_same(np.from_dlpack(xp.asarray(np.arange(4.0), device="numpy")), np.arange(4.0))
    assert_same(xp.from_dlpack(x), x)


@pytest.mark.parametrize("call,exc,match", [
    (lambda: xp.zeros((2, -1)), ValueError, "zeros: shape entries must be non-negative"),
    (lambda: xp.zeros("3"), TypeError, "zeros: shape must be"),
    (lambda: xp.ones(3, dtype="float32"), TypeError, "is not a dtype of the array API"),
    (lambda: xp.full(3, "a"), TypeError, "full: fill_value must be a Python scalar"),
    (lambda: xp.full(3, 300, dtype=xp.int8), OverflowError, "out of range for int8"),
    (lambda: xp.arange(0, 5, 0), ValueError, "arange: step must not be zero"),
    (lambda: xp.linspace(0, 300, 4, dtype=xp.int8), OverflowError, "linspace: samples from 0 to 300 do not fit int8"),
    (lambda: xp.linspace(0, 1j, 3, dtype=xp.float64), TypeError, "linspace: complex start/stop need a complex dtype"),
    (lambda: xp.arange(xp.ones(3)), TypeError, "arange: start must be a scalar or a 0-d array"),
    (lambda: xp.arange(0, 1j), TypeError, "arange: stop must be an int or a float"),
    (lambda: xp.arange(3, dtype=xp.bool), TypeError, "arange: dtype must be an integer, real or complex"),
    (lambda: xp.tril(xp.ones(3)), ValueError, "tril: x must have at least 2 dimensions"),
    (lambda: xp.asarray(object()), TypeError, "asarray: cannot convert object"),
    (lambda: xp.asarray(1, device="nope"), ValueError, "unknown executor 'nope'"),
])
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


@pytest.mark.parametrize("first,then", [(0.0, -0.0), (-0.0, 0.0), (complex(0, 0), complex(-0.0, -0.0)), (1, True)],
                         ids=["0-then-neg0", "neg0-then-0", "0j-then-neg0j", "1-then-True"])
def test_full_fill_values_that_compare_equal_keep_their_bits(executor, first, then):
    # jax compiled full once per fill value by ==: -0.0 got the program made for 0.0 (differential seed 3)
    for fill in (first, then):
        got = xp.full((2,), fill)
        want = on_numpy(lambda: xp.full((2,), fill))
        assert got.dtype == want.dtype
        assert np.asarray(got).tobytes() == np.asarray(want).tobytes(), (fill, np.asarray(got), np.asarray(want))


def test_asarray_strings_follow_numpy(executor):
    # with a numeric dtype NumPy parses text (its values, its error wording); without one: no standard dtype
    assert_same(xp.asarray("1.5", dtype=xp.float64), np.asarray("1.5", dtype=np.float64))
    assert_same(xp.asarray(["1", "2"], dtype=xp.int32), np.asarray(["1", "2"], dtype=np.int32))
    assert_same(xp.asarray(np.array(["0.25"]), dtype=xp.float32), np.array([0.25], np.float32))
    with pytest.raises(ValueError, match="asarray: could not convert string to float: 'abc'"):
        xp.asarray("abc", dtype=xp.float64)
    with pytest.raises(ValueError, match=r"asarray: invalid literal for int\(\) with base 10: 'x'"):
        xp.asarray(["1", "x"], dtype=xp.int32)
    for text in ("abc", ["a", "b"], np.array(["a"]), np.str_("a")):
        # "Unsupported": the word SciPy's ndimage tests accept from array libraries refusing text
        with pytest.raises(TypeError, match="asarray: cannot make an array of strings .*NumPy dtype <U1?.*Unsupported dtype.*pass a numeric dtype="):
            xp.asarray(text)
