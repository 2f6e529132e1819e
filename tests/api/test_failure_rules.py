"""One failure behaviour for one input, on every executor (README, "Rules").

- linalg on singular / non-positive-definite input: NaN for the failing matrices, never a raise;
- integer ``**`` with a negative exponent: ValueError when the exponent's value is known, the
  truncated real power when it is staged;
- float -> integer ``astype`` of NaN, infinities and out-of-range values: NumPy's result on x86-64
  (int32/int64: the minimum; narrower targets: the int32 result wrapped; uint32/uint64: exact in
  range, else the int64 result wrapped), on every executor and platform.
"""
from __future__ import annotations

import math
import platform

import numpy as np
import pytest

import arrayx as xp
from tests.conftest import assert_same

SINGULAR = [[1.0, 2.0], [2.0, 4.0]]
NOT_SPD = [[1.0, 2.0], [2.0, 1.0]]
PSD_SINGULAR = [[1.0, 1.0], [1.0, 1.0]]  # positive semi-definite: LAPACK's cholesky rejects it too
GOOD = [[4.0, 1.0], [1.0, 3.0]]


# -- linalg ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128"])
def test_singular_inv_and_solve_are_nan(executor, dtype):
    dt = getattr(xp, dtype)
    a = xp.asarray(SINGULAR, dtype=dt)
    assert_same(xp.linalg.inv(a), np.full((2, 2), np.nan, dtype))
    assert_same(xp.linalg.solve(a, xp.asarray([1.0, 1.0], dtype=dt)), np.full(2, np.nan, dtype))
    assert_same(xp.linalg.solve(a, xp.ones((2, 3), dtype=dt)), np.full((2, 3), np.nan, dtype))


@pytest.mark.parametrize("matrix", [NOT_SPD, PSD_SINGULAR], ids=["indefinite", "semidefinite"])
@pytest.mark.parametrize("upper", [False, True])
def test_non_positive_definite_cholesky_is_nan(executor, matrix, upper):
    out = xp.linalg.cholesky(xp.asarray(matrix), upper=upper)
    assert_same(out, np.full((2, 2), np.nan))


def test_only_the_failing_matrices_of_a_batch_are_nan(executor):
    stack = np.array([GOOD, SINGULAR, GOOD, NOT_SPD])
    a = xp.asarray(stack)
    inv = np.asarray(xp.linalg.inv(a))
    assert np.isnan(inv[1]).all()
    np.testing.assert_allclose(inv[[0, 2, 3]], np.linalg.inv(stack[[0, 2, 3]]), rtol=1e-12)  # NOT_SPD is invertible

    x = np.asarray(xp.linalg.solve(a, xp.asarray([1.0, 2.0])))
    assert np.isnan(x[1]).all()
    np.testing.assert_allclose(x[[0, 2, 3]], np.linalg.solve(stack[[0, 2, 3]], np.array([1.0, 2.0])[:, None])[..., 0],
                               rtol=1e-12)

    chol = np.asarray(xp.linalg.cholesky(a))
    assert np.isnan(chol[[1, 3]]).all()
    np.testing.assert_allclose(chol[[0, 2]], np.linalg.cholesky(np.array([GOOD, GOOD])), rtol=1e-12)


def test_well_conditioned_results_are_unchanged(executor):
    a = xp.asarray(GOOD)
    np.testing.assert_allclose(np.asarray(xp.linalg.inv(a)), np.linalg.inv(GOOD), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(xp.linalg.cholesky(a)), np.linalg.cholesky(GOOD), rtol=1e-12)
    # a result that is legitimately infinite (inf in the operands) is not the singular case
    b = np.asarray(xp.linalg.solve(a, xp.asarray([np.inf, 1.0])))
    assert not np.isnan(b).all()


# -- integer ** negative integer ------------------------------------------------------------------


@pytest.mark.parametrize("make", [
    lambda: xp.asarray([2]) ** -1,
    lambda: xp.asarray([2, 3]) ** xp.asarray([1, -1]),
    lambda: 2 ** xp.asarray([0, -3]),
    lambda: xp.pow(xp.asarray([2], dtype=xp.int8), xp.asarray([-1], dtype=xp.int8)),
    lambda: xp.asarray([[2, 3]], dtype=xp.int16) ** xp.asarray([-2], dtype=xp.int64),  # broadcast + promote
    lambda: xp.asarray([2]) ** np.int64(-1),
    lambda: xp.asarray([2]) ** np.array([1, -1]),
], ids=["python-int", "array", "python-base", "int8", "broadcast", "numpy-scalar", "numpy-array"])
def test_integer_to_negative_power_raises(executor, make):
    with pytest.raises(ValueError, match="integers to negative integer powers"):
        make()


def test_integer_powers_that_are_allowed(executor):
    assert_same(xp.asarray([2, -3]) ** xp.asarray([3, 2]), np.array([8, 9]))
    assert_same(xp.asarray([2], dtype=xp.uint8) ** 3, np.array([8], np.uint8))
    assert_same(xp.asarray([2], dtype=xp.int8) ** xp.asarray([7], dtype=xp.uint8), np.array([128], np.int16))
    assert_same(xp.asarray([2.0]) ** -1, np.array([0.5]))  # floats: the real power
    assert_same(xp.asarray([2]) ** -1.0, np.array([0.5]))


def test_in_place_integer_power_raises(executor):
    x = xp.asarray([2, 3])
    with pytest.raises(ValueError, match="negative integer powers"):
        x **= -1
    assert_same(x, np.array([2, 3]))


def test_staged_negative_integer_power_truncates(executor):
    base = [2, -1, 1, 0, 3, -1, -2, 5, -7]
    expo = [-1, -3, -5, -2, 2, -2, -1, 0, 1]
    # truncation toward zero of the real power; 0 ** negative is 0 as integer division by 0 is
    expected = [math.trunc(b ** e) if b != 0 or e >= 0 else 0 for b, e in zip(base, expo)]
    graph = xp.make_graph(lambda a, b: a ** b)(xp.asarray(base), xp.asarray(expo))
    (out,) = graph(xp.asarray(base), xp.asarray(expo))
    assert_same(out, np.array(expected))


# -- float -> integer astype ----------------------------------------------------------------------

INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def _x86(v: float, dtype) -> int:
    """What NumPy gives on x86-64 for ``v`` cast to ``dtype`` (the rule), from Python integers."""
    dt = np.dtype(dtype)
    bits = dt.itemsize * 8
    t = None if math.isnan(v) or math.isinf(v) else math.trunc(v)

    def indefinite(width):  # cvttsd2si: the truncation if it fits, else the minimum
        lo = -(2 ** (width - 1))
        return t if t is not None and lo <= t < -lo else lo

    def wrap(n):
        n %= 2 ** bits
        return n - 2 ** bits if dt.kind == "i" and n >= 2 ** (bits - 1) else n

    if bits < 32:
        return wrap(indefinite(32))
    if dt.kind == "i":
        return indefinite(bits)
    return t if t is not None and 0 <= t < 2 ** bits else wrap(indefinite(64))


def _edges(src, dtype) -> list:
    info = np.iinfo(dtype)
    f = np.finfo(src)
    vals = [0.0, -0.0, 0.5, -0.5, -1.5, 3.7, -3.7, np.nan, np.inf, -np.inf, float(f.max), float(f.min),
            float(info.max), float(info.min), float(info.max) + 1, float(info.min) - 1,
            float(info.max) * 4, float(info.min) * 4 - 8, 2.0 ** 62, -(2.0 ** 62), 2.0 ** 63, 2.0 ** 64]
    near = [float(np.nextafter(src(b), src(d))) for b in (float(info.max) + 1, float(info.min)) for d in (0, np.inf, -np.inf)]
    with np.errstate(over="ignore"):
        return sorted({float(src(v)) for v in vals + near if not math.isnan(v)}) + [np.nan]


@pytest.mark.parametrize("src", ["float32", "float64"])
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_float_to_int_follows_numpy_x86(executor, src, dtype):
    vals = _edges(np.dtype(src).type, dtype)
    out = xp.astype(xp.asarray(np.array(vals, dtype=src)), getattr(xp, dtype))
    expected = np.array([_x86(v, dtype) for v in vals], dtype=dtype)
    np.testing.assert_array_equal(np.asarray(out), expected, strict=True)
    jitted = xp.jit(lambda v: xp.astype(v, getattr(xp, dtype)))(xp.asarray(np.array(vals, dtype=src)))
    np.testing.assert_array_equal(np.asarray(jitted), expected, strict=True)


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="NumPy's own casts differ by platform")
@pytest.mark.parametrize("src", ["float32", "float64"])
@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint16"])
def test_rule_is_numpys_own_result_on_x86(src, dtype):
    # the reference above is NumPy itself where NumPy's x86 result is the C cast's (all but uint32/uint64)
    vals = _edges(np.dtype(src).type, dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        numpy_own = np.array(vals, dtype=src).astype(dtype)
    np.testing.assert_array_equal(numpy_own, np.array([_x86(v, dtype) for v in vals], dtype=dtype))


def test_nan_to_int64_is_nat(executor):
    # xarray: nan -> int64 is INT64_MIN, the representation of NaT
    out = xp.astype(xp.asarray([np.nan, 1.5, -np.inf]), xp.int64)
    np.testing.assert_array_equal(np.asarray(out), np.array([np.iinfo(np.int64).min, 1, np.iinfo(np.int64).min]))


def test_float_to_bool_and_float_unaffected(executor):
    x = xp.asarray([np.nan, 0.0, -0.0, 1e300, -np.inf])
    assert_same(xp.astype(x, xp.bool), np.array([True, False, False, True, True]))
    assert_same(xp.astype(x, xp.float32), np.array([np.nan, 0.0, -0.0, np.inf, -np.inf], np.float32))


def test_complex_to_real_astype_refused(executor):
    with pytest.raises(TypeError, match="real\\(x\\) or abs\\(x\\)"):
        xp.astype(xp.asarray([1 + 2j]), xp.int32)


def test_rules_hold_under_jit(executor):
    base = [2, -1, 1, 0, 3, -1]
    expo = [-1, -3, -5, -2, 2, -2]
    assert_same(xp.jit(lambda a, b: a ** b)(xp.asarray(base), xp.asarray(expo)), np.array([0, -1, 1, 0, 9, 1]))
    assert_same(xp.jit(xp.linalg.inv)(xp.asarray(SINGULAR)), np.full((2, 2), np.nan))
    assert_same(xp.jit(lambda m: xp.linalg.cholesky(m))(xp.asarray(NOT_SPD)), np.full((2, 2), np.nan))
    out = xp.jit(lambda v: xp.astype(v, xp.int8))(xp.asarray([-1e3, 1e3, np.nan, -2.5]))
    assert_same(out, np.array([24, -24, 0, -2], np.int8))  # through int32, wrapped (NumPy on x86-64)
