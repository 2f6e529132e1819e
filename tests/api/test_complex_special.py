"""Complex functions at signed zeros, infinities and NaNs: the same answer on every executor.

Branch cuts honour the sign of zero as the standard and C99 Annex G define (``sqrt(-2-0j)`` is
``-1.414j``); ``any``/``all`` of complex arrays look at both parts.  Every executor is compared
with the NumPy executor element by element, the sign of every zero and the place of every NaN
included.
"""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as xp

INF, NAN = np.inf, np.nan
PARTS = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, INF, -INF, NAN]
GRID = np.array([complex(a, b) for a in PARTS for b in PARTS])

UNARY = ["acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "exp", "expm1", "log",
         "log1p", "log2", "log10", "sin", "sinh", "sqrt", "square", "tan", "tanh"]


def _same_part(got, want):
    both_nan = np.isnan(got) & np.isnan(want)
    equal = (got == want) & (np.signbit(got) == np.signbit(want))
    close = np.isclose(got, want, rtol=1e-12, atol=0) & (want != 0)
    return both_nan | equal | close


def _assert_same_complex(got, want, inputs):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    ok = _same_part(got.real, want.real) & _same_part(got.imag, want.imag)
    bad = [(inputs[i], want[i], got[i]) for i in np.flatnonzero(~ok)[:8]]
    assert ok.all(), f"{(~ok).sum()} elements differ (input, numpy, got): {bad}"


@pytest.mark.parametrize("name", UNARY)
def test_unary_complex_special_values_match_numpy(executor, name):
    with xp.use_executor("numpy"):
        want = np.asarray(getattr(xp, name)(xp.asarray(GRID)))
    got = getattr(xp, name)(xp.asarray(GRID))
    _assert_same_complex(got, want, GRID)


@pytest.mark.parametrize("name,z,want", [
    ("sqrt", complex(-2, -0.0), complex(0, -np.sqrt(2))),
    ("sqrt", complex(-2, 0.0), complex(0, np.sqrt(2))),
    ("log", complex(-1, -0.0), complex(0, -np.pi)),
    ("asin", complex(2, -0.0), complex(np.pi / 2, -np.arccosh(2))),
    ("acos", complex(2, -0.0), complex(0, np.arccosh(2))),
    ("acosh", complex(-2, -0.0), complex(np.arccosh(2), -np.pi)),
    ("asinh", complex(-0.0, 2), complex(-np.arccosh(2), np.pi / 2)),
    ("atanh", complex(2, -0.0), complex(np.arctanh(0.5), -np.pi / 2)),
    ("atan", complex(-0.0, 2), complex(-np.pi / 2, np.arctanh(0.5))),
], ids=lambda v: str(v))
def test_branch_cuts_follow_the_sign_of_zero(executor, name, z, want):
    # z in every element of an array of GRID's shape: the jax executor reuses the program that
    # test_unary_complex_special_values_match_numpy compiled for the function (one XLA program per shape)
    got = complex(np.asarray(getattr(xp, name)(xp.asarray(np.full(GRID.shape, z))))[0])
    assert np.isclose(got, want, rtol=1e-12), (z, got, want)
    assert np.signbit(got.imag) == np.signbit(want.imag) and np.signbit(got.real) == np.signbit(want.real)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_any_all_of_complex_look_at_both_parts(executor, dtype):
    dt = getattr(xp, dtype)
    assert bool(xp.any(xp.asarray([1e-30j], dtype=dt)))
    assert bool(xp.all(xp.asarray([2j, 1.0], dtype=dt)))
    assert not bool(xp.any(xp.asarray([0j, -0.0 + 0j], dtype=dt)))
    assert not bool(xp.all(xp.asarray([1j, complex(-0.0, -0.0)], dtype=dt)))
    rows = xp.asarray([[0j, 3j], [0j, 0j], [1 + 0j, NAN * 1j]], dtype=dt)
    np.testing.assert_array_equal(np.asarray(xp.any(rows, axis=1)), [True, False, True])
    np.testing.assert_array_equal(np.asarray(xp.all(rows, axis=0)), [False, False])


def test_reciprocal_matches_numpy_executor(executor):
    with xp.use_executor("numpy"):
        want = np.asarray(xp.reciprocal(xp.asarray(GRID)))
    _assert_same_complex(xp.reciprocal(xp.asarray(GRID)), want, GRID)


def test_divide_matches_numpy_executor(executor):
    x1, x2 = np.meshgrid(GRID, GRID[::7])
    x1, x2 = x1.ravel(), x2.ravel()
    with xp.use_executor("numpy"):
        want = np.asarray(xp.asarray(x1) / xp.asarray(x2))
    _assert_same_complex(xp.asarray(x1) / xp.asarray(x2), want, list(zip(x1, x2)))


@pytest.mark.parametrize("x1,x2,want", [
    (1 + 0j, 0j, complex(INF, NAN)),                      # non-zero / zero: an infinity (NumPy: nan+nanj)
    (complex(1, 1), complex(-0.0, 0.0), complex(INF, INF)),   # an infinity (NumPy's own signs)
    (complex(INF, NAN), 1 + 1j, complex(INF, -INF)),      # infinite / finite: an infinity
    (complex(NAN, INF), 1 + 1j, complex(INF, INF)),
    (1 + 1j, complex(INF, INF), complex(0.0, 0.0)),       # finite / infinite: a zero
    (1 + 1j, complex(2, 0), complex(0.5, 0.5)),
    (complex(NAN, NAN), 0j, complex(NAN, NAN)),
], ids=str)
def test_complex_division_follows_c99_annex_g(executor, x1, x2, want):
    got = complex(np.asarray(xp.asarray([x1]) / xp.asarray([x2]))[0])
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        assert (np.isnan(g) and np.isnan(w)) or (g == w and np.signbit(g) == np.signbit(w)), (x1, x2, got, want)
    if x1 == 1 + 0j:
        r = complex(np.asarray(xp.reciprocal(xp.asarray([x2])))[0])
        assert np.isinf(r.real) and np.isnan(r.imag)


def test_complex_pow_special_values_match_numpy(executor):
    x1, x2 = np.meshgrid(GRID, GRID[::6])
    x1, x2 = x1.ravel(), x2.ravel()
    with xp.use_executor("numpy"):
        want = np.asarray(xp.asarray(x1) ** xp.asarray(x2))
        want_sq = np.asarray(xp.asarray(GRID) ** 2)
        want_half = np.asarray(xp.asarray(GRID) ** 0.5)
    _assert_same_complex(xp.asarray(x1) ** xp.asarray(x2), want, list(zip(x1, x2)))
    _assert_same_complex(xp.asarray(GRID) ** 2, want_sq, GRID)
    _assert_same_complex(xp.asarray(GRID) ** 0.5, want_half, GRID)
    assert complex(np.asarray(xp.asarray([1j]) ** 2)[0]) == -1 + 0j  # exact, not -1+1.2e-16j


def test_abs_of_complex_infinity_is_inf_even_with_nan(executor):
    z = xp.asarray([complex(INF, NAN), complex(NAN, -INF), complex(-INF, 0.0), complex(NAN, 1.0)])
    np.testing.assert_array_equal(np.asarray(xp.abs(z)), [INF, INF, INF, NAN])


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_sums_of_negative_zeros_start_from_plus_zero(executor, dtype):
    dt = getattr(xp, dtype)
    neg = complex(-0.0, -0.0) if dtype == "complex128" else -0.0
    one = xp.asarray([[1.0]], dtype=dt)
    a = xp.asarray([[neg]], dtype=dt)
    for out in (xp.sum(xp.asarray([neg], dtype=dt)), a @ one, xp.tensordot(a, one, axes=1),
                xp.vecdot(xp.asarray([neg], dtype=dt), xp.asarray([1.0], dtype=dt)), xp.mean(xp.asarray([neg], dtype=dt))):
        v = np.asarray(out).ravel()[0]
        assert v == 0 and not np.signbit(np.real(v)) and not np.signbit(np.imag(v)), (out, v)


def _numpy_executor(fn, *arrays):
    with xp.use_executor("numpy"):
        return np.asarray(fn(*(xp.asarray(a) for a in arrays)))


def test_sign_of_complex_matches_numpy(executor):
    # sign(0+inf j) is nan+nanj (z/|z|); the complex64 sign of 0+3.4e38j goes through the subnormal
    # 1/|z|, which NumPy inside an XLA callback thread (flush-to-zero mode on) turned into 0
    _assert_same_complex(xp.sign(xp.asarray(GRID)), _numpy_executor(xp.sign, GRID), GRID)
    huge = np.asarray([complex(-0.0, 3.4028235e38), complex(3.4028235e38, -0.0)], np.complex64)
    _assert_same_complex(xp.sign(xp.asarray(huge)), _numpy_executor(xp.sign, huge), huge)
    assert np.asarray(xp.sign(xp.asarray(huge)))[0].imag > 0.99


def test_complex_pow_that_overflows_inside_is_c99s_infinity(executor):
    # exp(y*log(x)) with an infinite imaginary exponent: C99's cexp(inf+inf j) is inf+nan j (XLA: nan+nan j)
    x1 = np.asarray([1.1920929e-07 - 2.4180539j, 2.0 + 1.0j], np.complex64)
    x2 = np.asarray([complex(-3.4028235e38, 3.4028235e38), 0.5 - 0.5j], np.complex64)
    want = _numpy_executor(lambda a, b: a ** b, x1, x2)
    assert np.isinf(want[0].real) and np.isnan(want[0].imag)
    _assert_same_complex(xp.asarray(x1) ** xp.asarray(x2), want, list(zip(x1, x2)))
    y = xp.asarray(x1)
    y **= xp.asarray(x2)
    _assert_same_complex(y, want, list(zip(x1, x2)))


def _flush(a):
    out = np.empty_like(a)
    for part, src in ((out.real, a.real), (out.imag, a.imag)):
        tiny = np.finfo(src.dtype).smallest_normal
        part[...] = np.where((src != 0) & (np.abs(src) < tiny), np.copysign(0.0, src), src)
    return out


@pytest.mark.parametrize("name", ["cos", "sin", "sinh", "cosh", "sign", "asin", "tanh"])
def test_complex_parts_that_are_subnormal_keep_the_sign_of_their_zero(executor, name):
    """NumPy's answer; on an executor that flushes subnormals (XLA on CPU), NumPy's for the flushed inputs."""
    z = np.asarray([complex(2.2250738585e-313, 0.5), complex(-5e-324, 1.78), complex(8.6, -5e-324),
                    complex(1.7976931348623157e308, -5e-324), complex(-1.02, -5e-324)])
    # the five values first in an array of GRID's shape (GRID after them: no subnormal parts), so the
    # jax executor reuses the program compiled for the function on GRID; all of it compared
    z = np.concatenate([z, GRID[len(z):]])
    flushes = bool(np.asarray(xp.asarray([5e-324]) * 1.0)[0] == 0)
    fn = getattr(xp, name)
    want = _flush(_numpy_executor(fn, _flush(z))) if flushes else _numpy_executor(fn, z)
    _assert_same_complex(fn(xp.asarray(z)), want, z)


@pytest.mark.parametrize("name", ["unique_values", "unique_counts", "unique_inverse", "unique_all"])
def test_unique_of_complex_nans_keeps_their_parts(executor, name):
    z = np.asarray([complex(0, NAN), 1 + 0j, complex(0, NAN), complex(NAN, 1), 1 + 0j])

    def parts(out):
        return [np.asarray(out)] if name == "unique_values" else [np.asarray(v) for v in out]

    with xp.use_executor("numpy"):
        want = parts(getattr(xp, name)(xp.asarray(z)))
    got = parts(getattr(xp, name)(xp.asarray(z)))
    _assert_same_complex(got[0], want[0], z)
    for g, w in zip(got[1:], want[1:]):
        np.testing.assert_array_equal(g, w)


def test_complex_results_that_underflow_keep_the_sign_of_their_zero(executor):
    # 1/(-0.36+3.4e38j): the real part -3e-78 underflows to -0 in complex64 (XLA's formula gave +0)
    z = np.asarray([complex(-0.3580648, 3.4028235e38), complex(3.4e38, -0.5), 2 - 1j], np.complex64)
    flushes = bool(np.asarray(xp.asarray([5e-324]) * 1.0)[0] == 0)
    want = _flush(_numpy_executor(xp.reciprocal, z)) if flushes else _numpy_executor(xp.reciprocal, z)
    assert np.signbit(want[0].real) and want[0].real == 0
    _assert_same_complex(xp.reciprocal(xp.asarray(z)), want, z)
    _assert_same_complex(1 / xp.asarray(z), want, z)


def test_square_of_overflowing_and_underflowing_complex_matches_numpy(executor):
    # the differential suite's reproducers (seed 3): jax gave 0+infj and -0-0j
    m, t = np.finfo(np.float64).max, np.finfo(np.float64).smallest_normal
    z = np.array([complex(-m, -m), complex(0.0, -t), complex(m, t), complex(t, t), complex(-m, 0.5)])
    with xp.use_executor("numpy"):
        want = np.asarray(xp.square(xp.asarray(z)))
    _assert_same_complex(xp.square(xp.asarray(z)), want, z)


@pytest.mark.parametrize("reduce", [lambda x: xp.prod(x, axis=()), lambda x: xp.prod(xp.reshape(x, (-1, 1)), axis=1),
                                    lambda x: xp.prod(x, axis=(), dtype=xp.complex64)], ids=["axis=()", "length-1", "to-c64"])
def test_prod_of_one_complex_element_starts_from_one(executor, reduce):
    # NumPy multiplies by 1+0j: nan+0j -> nan+nanj, inf+0j -> inf+nanj (differential seed 3: jax kept nan+0j)
    z = np.array([complex(NAN, 0), complex(INF, 0), complex(0, INF), complex(-0.0, -0.0), complex(2, 3), complex(NAN, NAN)])
    with xp.use_executor("numpy"):
        want = np.asarray(reduce(xp.asarray(z)))
    _assert_same_complex(reduce(xp.asarray(z)), want, z)


@pytest.mark.parametrize("axis,include_initial", [(0, False), (1, False), (1, True), (0, True)])
@pytest.mark.parametrize("staged", [False, True], ids=["eager", "jit"])
def test_cumulative_prod_of_complex_starts_from_the_first_element(executor, axis, include_initial, staged):
    # NumPy's running product starts from the first element, XLA's from 1+0j: 1*(nan-9.1j) is nan+nanj
    # (differential seed 4: cumulative_prod([nan-9.1j, -9.1j], include_initial=True) on jax)
    z = GRID.reshape(len(PARTS), len(PARTS))

    def f(a):
        return xp.cumulative_prod(a, axis=axis, include_initial=include_initial)

    with xp.use_executor("numpy"):
        want = np.asarray(f(xp.asarray(z)))
    got = (xp.jit(f) if staged else f)(xp.asarray(z))
    _assert_same_complex(np.asarray(got).ravel(), want.ravel(), np.arange(want.size))  # flat positions


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_log1p_of_ordinary_and_huge_complex_values_matches_numpy(executor, dtype):
    # differential seed 4: XLA's log1p(-0.28-0.28j) was 8 ulp from NumPy's (and from the exact value),
    # and stayed finite (710.13) where NumPy's |1+z| overflows to inf
    big = np.finfo(np.float32 if dtype == "complex64" else np.float64).max
    z = np.array([complex(-0.28163522542470965, -0.28163522542470965), complex(big, big), 3 - 4j, -0.5 + 0.866j,
                  0.25 + 1e-3j], dtype=dtype)
    with xp.use_executor("numpy"):
        want = np.asarray(xp.log1p(xp.asarray(z)))
    got = np.asarray(xp.log1p(xp.asarray(z)))
    assert np.isinf(want[1].real) and np.isinf(got[1].real)
    eps = np.finfo(want.real.dtype).eps
    np.testing.assert_allclose(got.real, want.real, rtol=4 * eps, atol=4 * eps)
    np.testing.assert_allclose(got.imag, want.imag, rtol=4 * eps, atol=0)


@pytest.mark.parametrize("reduce", [lambda x: xp.mean(x, axis=()), lambda x: xp.mean(xp.reshape(x, (-1, 1)), axis=1),
                                    lambda x: xp.mean(xp.stack([x, x, x]), axis=0),
                                    lambda x: xp.mean(xp.reshape(x, (len(PARTS), len(PARTS))), axis=1, keepdims=True),
                                    lambda x: xp.mean(xp.reshape(x, (len(PARTS), len(PARTS)))[:, :0], axis=1)],
                         ids=["axis=()", "length-1", "length-3", "rows", "empty"])
@pytest.mark.parametrize("staged", [False, True], ids=["eager", "jit"])
def test_mean_of_complex_divides_by_the_count_as_a_complex_number(executor, reduce, staged):
    # NumPy divides the sum by n+0j: a non-finite part makes the other NaN (differential seed 4:
    # mean(nan+1j, axis=()) on jax was nan+1j, NumPy's nan+nanj)
    with xp.use_executor("numpy"):
        want = np.asarray(reduce(xp.asarray(GRID)))
    got = np.asarray((xp.jit(reduce) if staged else reduce)(xp.asarray(GRID)))
    _assert_same_complex(got.ravel(), want.ravel(), np.arange(want.size))
