"""Elementwise functions: the NumPy executor against NumPy itself and every executor against the NumPy
executor over representative dtypes (a seeded sample of the function x dtype product in the ci
profile, all of it in the deep one: ``conformance.profile``), dtype promotion (arrays and Python
scalars) and argument errors."""
from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

import arrayx as xp
from arrayx.api import elementwise as ew
from conformance import profile
from tests.conftest import assert_matches_numpy, assert_same

RNG = np.random.default_rng(0)


def sample(dtype, shape=(3, 4), low=-3.0, high=3.0):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.random(shape) > 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = max(int(low), int(info.min), -20), min(int(high) + 1, int(info.max), 20)
        return RNG.integers(lo if dtype.kind == "i" else 0, hi, size=shape).astype(dtype)
    if dtype.kind == "c":
        return (RNG.uniform(low, high, shape) + 1j * RNG.uniform(low, high, shape)).astype(dtype)
    return RNG.uniform(low, high, shape).astype(dtype)


# functions whose domain needs restricting, as (low, high)
DOMAIN = {
    "acos": (-0.9, 0.9), "asin": (-0.9, 0.9), "atanh": (-0.9, 0.9), "acosh": (1.1, 4.0),
    "log": (0.1, 5.0), "log2": (0.1, 5.0), "log10": (0.1, 5.0), "log1p": (-0.5, 3.0),
    "sqrt": (0.0, 5.0), "reciprocal": (0.5, 3.0),
}
REPRESENTATIVE = {
    "numeric": ["int8", "int64", "uint8", "float32", "float64", "complex128"],
    "floating-point": ["float32", "float64", "complex64"],
    "real floating": ["float32", "float64"],
    "real numeric": ["int16", "uint32", "float32", "float64"],
    "integer or boolean": ["bool", "int32", "uint8"],
    "integral": ["int32", "uint16"],
    "bool": ["bool"],
    "all": ["bool", "int64", "float64", "complex64"],
    "real-valued": ["bool", "int8", "float32"],
}
# complex inputs where NumPy's branch cuts/precision differ between libraries are compared on reals only
REAL_ONLY = {"acosh", "atanh", "log1p"}


def unary_cases():
    for name, cat in ew.UNARY.items():
        for dt in REPRESENTATIVE[cat]:
            if name in REAL_ONLY and dt.startswith("complex"):
                continue
            yield name, dt


def binary_cases():
    for name, cat in ew.BINARY.items():
        if name == "divide":  # its own test (integer operands too): test_divide_and_clip
            continue
        for dt in REPRESENTATIVE[cat]:
            yield name, dt


@pytest.mark.parametrize("name,dtype", profile.sample("elementwise unary", unary_cases(), 40))
def test_unary_matches_numpy(executor, name, dtype):
    low, high = DOMAIN.get(name, (-3.0, 3.0))
    x = xp.asarray(sample(dtype, low=low, high=high))
    got = assert_matches_numpy(getattr(xp, name), x)
    # and the NumPy executor agrees with NumPy itself (the reference is right)
    ref = {"bitwise_invert": np.invert, "conj": np.conjugate, "round": np.round,
           "acos": np.arccos, "asin": np.arcsin, "atan": np.arctan, "acosh": np.arccosh,
           "asinh": np.arcsinh, "atanh": np.arctanh, "logical_not": np.logical_not}.get(name, getattr(np, name, None))
    if ref is not None and name not in ("sign",):
        want = ref(np.asarray(x))
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("name,dtype", profile.sample("elementwise binary", binary_cases(), 30))
def test_binary_matches_numpy(executor, name, dtype):
    low, high = (0.5, 3.0) if name in ("pow", "floor_divide", "remainder") else (-3.0, 3.0)
    x1 = xp.asarray(sample(dtype, low=low, high=high))
    x2 = xp.asarray(sample(dtype, low=low, high=high))
    if name in ("bitwise_left_shift", "bitwise_right_shift"):
        x2 = xp.asarray(sample(dtype, low=0, high=5))
    if name in ("floor_divide", "remainder") and np.dtype(dtype).kind in "iu":
        x2 = xp.asarray(np.maximum(np.asarray(x2), 1).astype(dtype))
    assert_matches_numpy(getattr(xp, name), x1, x2)
    # broadcasting against a row
    assert_matches_numpy(getattr(xp, name), x1, x2[:1, :])


def test_divide_and_clip(executor):
    a = xp.asarray(sample("float32"))
    b = xp.asarray(sample("float32", low=0.5, high=2))
    assert_matches_numpy(xp.divide, a, b)
    i = xp.asarray(np.array([1, 2, 3], dtype=np.int32))
    out = assert_matches_numpy(xp.divide, i, i)
    assert out.dtype == xp.float64  # int / int follows NumPy 2: default float
    assert_matches_numpy(lambda x: xp.clip(x, -1.0, 1.0), a)
    assert_matches_numpy(lambda x, m: xp.clip(x, min=m), a, b)
    assert_matches_numpy(lambda x: xp.clip(x, max=2), i)
    out = xp.clip(xp.asarray(np.array([-5, 5, 120], dtype=np.int8)), -1000, 100)
    assert_same(out, np.array([-5, 5, 100], dtype=np.int8))


PROMOTIONS = [
    ("int8", "int16", "int16"), ("uint8", "int8", "int16"), ("uint32", "int32", "int64"),
    ("float32", "float64", "float64"), ("float32", "complex64", "complex64"),
    ("float64", "complex64", "complex128"), ("int8", "uint64", "float64"), ("bool", "bool", "bool"),
]


@pytest.mark.parametrize("d1,d2,want", PROMOTIONS)
def test_array_promotion(executor, d1, d2, want):
    a = xp.ones(3, dtype=np.dtype(d1))
    b = xp.ones(3, dtype=np.dtype(d2))
    op = xp.logical_and if want == "bool" else xp.add
    assert op(a, b).dtype == np.dtype(want)
    assert op(b, a).dtype == np.dtype(want)


@pytest.mark.parametrize("dtype,scalar,want", [
    ("float32", 1.5, "float32"), ("float32", 2, "float32"), ("int8", 3, "int8"),
    ("uint8", 3, "uint8"), ("int16", 1.5, "float64"), ("bool", True, "bool"),
    ("float32", 1j, "complex64"), ("float64", 1j, "complex128"), ("complex64", 2.0, "complex64"),
])
def test_scalar_promotion(executor, dtype, scalar, want):
    a = xp.ones(3, dtype=np.dtype(dtype))
    op = xp.logical_or if want == "bool" else xp.multiply
    assert op(a, scalar).dtype == np.dtype(want)
    assert op(scalar, a).dtype == np.dtype(want)
    np.testing.assert_allclose(np.asarray(op(a, scalar)), np.full(3, True if want == "bool" else scalar))


def test_operators(executor):
    a = xp.asarray([1.0, 2.0, 4.0])
    b = xp.asarray([2.0, 2.0, 2.0])
    assert_same(a + b, np.array([3.0, 4.0, 6.0]))
    assert_same(a - b, np.array([-1.0, 0.0, 2.0]))
    assert_same(a * b, np.array([2.0, 4.0, 8.0]))
    assert_same(a / b, np.array([0.5, 1.0, 2.0]))
    assert_same(a // b, np.array([0.0, 1.0, 2.0]))
    assert_same(a % b, np.array([1.0, 0.0, 0.0]))
    assert_same(a**b, np.array([1.0, 4.0, 16.0]))
    assert_same(2.0 ** a, np.array([2.0, 4.0, 16.0]))
    assert_same(1 - a, np.array([0.0, -1.0, -3.0]))
    assert_same(-a, np.array([-1.0, -2.0, -4.0]))
    assert_same(abs(-a), np.array([1.0, 2.0, 4.0]))
    assert_same(a < b, np.array([True, False, False]))
    assert_same(a >= b, np.array([False, True, True]))
    assert_same(a == 2.0, np.array([False, True, False]))
    assert_same(a != b, np.array([True, False, True]))
    i = xp.asarray([1, 2, 3])
    assert_same(i << 2, np.array([4, 8, 12]))
    assert_same(i >> 1, np.array([0, 1, 1]))
    assert_same(i & 1, np.array([1, 0, 1]))
    assert_same(i | 4, np.array([5, 6, 7]))
    assert_same(i ^ 3, np.array([2, 1, 0]))
    assert_same(~i, np.array([-2, -3, -4]))
    n = np.array([1.0, 1.0, 1.0])
    assert_same(n + a, np.array([2.0, 3.0, 5.0]))  # NumPy defers to arrayx


def test_inplace_operators(executor):
    a = xp.asarray([1.0, 2.0, 3.0])
    a += 1
    a *= xp.asarray([2.0, 2.0, 2.0])
    assert_same(a, np.array([4.0, 6.0, 8.0]))
    i = xp.asarray([1, 2, 3], dtype=xp.int8)
    with pytest.raises(TypeError, match="dtype"):
        i += 1.5
    with pytest.raises(ValueError, match="shape"):
        a += xp.ones((2, 3))


def test_special_values(executor):
    a = xp.asarray([0.0, -0.0, math.inf, -math.inf, math.nan])
    assert_matches_numpy(xp.signbit, a)
    assert_matches_numpy(xp.isnan, a)
    assert_matches_numpy(xp.isfinite, a)
    assert_matches_numpy(lambda v: xp.maximum(v, 0.0), a)


@pytest.mark.parametrize("fn,args,match", [
    (xp.sin, (np.array([True]),), "sin: x must have a floating-point dtype, got bool"),
    (xp.bitwise_and, (np.array([1.0]), np.array([1.0])), "bitwise_and: expected integer or boolean dtypes"),
    (xp.logical_and, (np.array([1]), np.array([1])), "logical_and"),
    (xp.less, (np.array([1j]), np.array([1j])), "less: expected real-valued"),
])
def test_dtype_errors(fn, args, match):
    with xp.strict(), pytest.raises(TypeError, match=match):  # the default mode takes sin(bool)
        fn(*[xp.asarray(a) for a in args])


def test_operand_errors():
    a = xp.asarray([1.0, 2.0])
    with pytest.raises(ValueError, match=r"add: shapes \(2,\), \(3,\) cannot be broadcast"):
        xp.add(a, xp.ones(3))
    with pytest.raises(TypeError, match="add: x2 must be an arrayx array or a Python scalar"):
        xp.add(a, "1")
    with pytest.raises(TypeError, match="sin: x must be an arrayx array"):
        xp.sin([1.0])
    with xp.strict(), pytest.raises(TypeError, match="at least one argument must be an arrayx array"):
        xp.add(1, 2)  # the default mode takes two Python scalars (tests/api/test_modes.py)
    with pytest.raises(OverflowError, match="out of range for int8"):
        xp.add(xp.asarray([1], dtype=xp.int8), 1000)


def _parts(z):
    """(real, imag) of a complex result with the sign of each zero made visible."""
    z = np.asarray(z)
    return [(float(v.real), math.copysign(1.0, v.real), float(v.imag), math.copysign(1.0, v.imag))
            for v in z.reshape(-1)]


def test_expm1_complex_special_cases():
    # NumPy's complex expm1 gives NaN + NaN j for infinite parts and -0 + 0j at -0 + 0j; the
    # standard asks for exp(z) - 1's C99 values there (array-api-tests test_special_cases)
    inf, nan = math.inf, math.nan
    z = np.array([complex(inf, 0.0), complex(-inf, inf), complex(-inf, nan), complex(nan, 0.0),
                  complex(-0.0, 0.0), complex(inf, inf), complex(1e-10, 1e-10)])
    got = np.asarray(xp.expm1(xp.asarray(z, device="numpy")))
    want = np.array([complex(inf, 0.0), complex(-1.0, 0.0), complex(-1.0, 0.0), complex(nan, 0.0),
                     complex(0.0, 0.0), complex(inf, nan), np.expm1(complex(1e-10, 1e-10))])
    assert _parts(got[[0, 1, 2, 4]]) == _parts(want[[0, 1, 2, 4]])
    assert np.isnan(got[3].real) and got[3].imag == 0.0
    assert got[5].real == inf and np.isnan(got[5].imag)
    np.testing.assert_allclose(got[6], want[6], rtol=1e-12)
    # 0-d and complex64 take the same path; real inputs are untouched
    assert complex(xp.expm1(xp.asarray(complex(inf, 0.0), dtype=xp.complex64, device="numpy"))) == complex(inf, 0)
    assert_same(xp.expm1(xp.asarray([1e-10, -inf], device="numpy")), np.expm1(np.array([1e-10, -inf])))


def test_tanh_complex_infinite_real_part():
    # tanh(±inf + bj), b finite: the standard's zero imaginary part has b's sign (NumPy: sin(2b)'s)
    z = np.array([complex(math.inf, 3.0), complex(math.inf, -3.0), complex(-math.inf, 2.0)])
    got = np.asarray(xp.tanh(xp.asarray(z, device="numpy")))
    assert _parts(got) == [(1.0, 1.0, 0.0, 1.0), (1.0, 1.0, 0.0, -1.0), (-1.0, -1.0, 0.0, 1.0)]
    assert complex(xp.tanh(xp.asarray(complex(math.inf, 3.0), device="numpy"))) == 1.0


# -- the dtype-category table is the one place a function's category is stated ------------------------

TABLE = {**ew.UNARY, **ew.BINARY, **ew.BOUNDED}
ARITY = {**{n: ["x"] for n in ew.UNARY}, **{n: ["x1", "x2"] for n in ew.BINARY}, "clip": ["x", "min", "max"]}


def test_the_table_the_functions_and_the_primitives_coincide():
    from arrayx.core.primitives import Primitive

    public = {n for n, v in vars(ew).items()
              if inspect.isfunction(v) and v.__module__ == ew.__name__ and not n.startswith("_")}
    prims = {v.name for v in vars(ew).values() if isinstance(v, Primitive)}
    assert public == set(TABLE), (public ^ set(TABLE))
    assert prims == set(TABLE), (prims ^ set(TABLE))
    assert not set(ew.UNARY) & set(ew.BINARY) and not (set(ew.UNARY) | set(ew.BINARY)) & set(ew.BOUNDED)
    for name in TABLE:
        fn = getattr(ew, name)
        assert getattr(xp, name) is fn, name
        assert getattr(ew, f"{name}_p").name == name
        assert list(inspect.signature(fn).parameters) == ARITY[name], name
        assert fn.__doc__, name
    for category in TABLE.values():
        assert category in xp.api._dtypes.CATEGORIES


def test_a_category_changed_in_the_table_changes_the_accepted_dtypes(monkeypatch):
    x = xp.asarray([0.5, 2.0])
    assert_same(xp.exp(x), np.exp([0.5, 2.0]))
    assert_same(x + x, np.array([1.0, 4.0]))
    monkeypatch.setitem(ew.UNARY, "exp", "complex floating")
    monkeypatch.setitem(ew.BINARY, "add", "integral")
    monkeypatch.setitem(ew.BOUNDED, "clip", "signed integer")
    monkeypatch.setattr(ew, "_ACCEPTED", ew._accepted_by_primitive())  # the eager fast path's lookup, rebuilt
    with pytest.raises(TypeError, match="exp: x must have a complex floating dtype, got float64"):
        xp.exp(x)
    with pytest.raises(TypeError, match="add: .*integral"):
        xp.add(x, x)
    with pytest.raises(TypeError, match="add: .*integral"):
        x + 1.0
    with pytest.raises(TypeError, match="clip: x must have a signed integer dtype, got float64"):
        xp.clip(x, 0.0, 1.0)
    assert_same(xp.exp(xp.asarray([1j])), np.exp([1j]))  # now accepted
    assert_same(xp.add(xp.asarray([1, 2]), xp.asarray([3, 4])), np.array([4, 6]))
    assert_same(xp.sin(x), np.sin([0.5, 2.0]))  # the other entries unchanged
