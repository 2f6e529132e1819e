"""The table's hand-picked examples: calls of every function of the standard with inputs chosen by hand.

The drawn rows of the table (the category modules) sample each function's whole domain, special
values included; these examples pin the uses a drawn call rarely reaches: values in the range a
function needs (``"positive"`` for log/sqrt, ``"spd"`` for cholesky, ``"wellcond"`` for inv/solve),
keyword combinations (``diff(n=2)``, ``fft(n=5, axis=0, norm="ortho")``), decompositions compared
through their unique quantities, operator chains and dtype promotion across operands.

A ``Case`` names the standard function it exercises (``"sin"``, ``"linalg.qr"``, ``"fft.rfft"``, or
``"array.__getitem__"`` for the array object), a callable ``fn(xp, *arrays)`` written against the
standard, and one ``Arg`` per array input, drawn deterministically (a NumPy Generator seeded from
the case id).  The eager sweep (``conformance/test_differential.py``) runs a function's examples
with its drawn calls, on every executor against the NumPy executor, through the one comparator
(``conformance.compare``) with the case's tolerance class; ``python -m conformance.report`` prints
them as a function x executor matrix.

Decompositions whose factors are unique only up to sign or phase (eigh, svd, qr) are
compared through quantities that are unique: eigenvalues, reconstructions, Q^H Q.
A case whose output is not determined by the standard at all (``empty``) compares only
dtype and shape (``tolerance="meta"``).
"""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class Arg:
    """One array input: its shape, dtype name and the kind of values to draw."""

    shape: tuple
    dtype: str = "float64"
    values: str = "normal"


@dataclass(frozen=True)
class Case:
    func: str                   # the standard function exercised ("sin", "linalg.qr", "array.__setitem__")
    fn: Callable                # fn(xp, *arrays) -> result (arrays, tuples of arrays, scalars, dtypes)
    args: tuple = ()            # one Arg per array input
    label: str = ""             # tells the cases of one function apart
    tolerance: str = "composite"  # the comparison class (conformance.compare.TOLERANCES); "meta": dtype and shape

    @property
    def id(self) -> str:
        return f"{self.func}[{self.label}]" if self.label else self.func

    def inputs(self) -> list[np.ndarray]:
        """The host inputs, the same on every call and every machine."""
        rng = np.random.default_rng(zlib.crc32(self.id.encode()))
        return [draw(rng, a) for a in self.args]


def lookup(xp, func: str):
    """``xp.sin`` for "sin", ``xp.linalg.qr`` for "linalg.qr"."""
    obj = xp
    for part in func.split("."):
        obj = getattr(obj, part)
    return obj


# -- drawing inputs ------------------------------------------------------------------------


def _real(rng, shape, dtype, values):
    """Real values of ``values`` kind, as float64 (cast by the caller)."""
    if values == "normal":
        return rng.standard_normal(shape)
    if values == "positive":
        return rng.uniform(0.5, 5.0, shape)
    if values == "unit":                      # open (-1, 1): acos, asin, atanh
        return rng.uniform(-0.9, 0.9, shape)
    if values == "ge1":                       # acosh
        return rng.uniform(1.1, 5.0, shape)
    if values == "angle":                     # tan away from its poles
        return rng.uniform(-1.2, 1.2, shape)
    if values == "nonzero":                   # divisors
        return rng.uniform(0.5, 3.0, shape) * rng.choice([-1.0, 1.0], shape)
    if values == "halves":                    # round/ceil/floor/trunc: includes exact .5 ties and -0.0
        v = rng.integers(-8, 9, shape) / 2.0 + rng.choice([0.0, 0.25], shape)
        return np.where(v == 0, -0.0, v)
    if values == "special":                   # isnan/isinf/isfinite/signbit
        v = rng.standard_normal(shape)
        flat = v.reshape(-1)
        specials = [np.nan, np.inf, -np.inf, -0.0, 0.0]
        for i, s in enumerate(specials[: flat.size]):
            flat[(i * 3) % flat.size] = s
        return v
    if values == "sorted":
        return np.sort(rng.standard_normal(shape), axis=-1)
    if values == "dups":                      # few distinct values (sets, sorting stability)
        return rng.integers(0, 4, shape).astype(np.float64)
    if values == "small":
        return rng.integers(0, 4, shape).astype(np.float64)
    raise ValueError(f"unknown value kind {values!r}")


def _integers(rng, shape, dtype, values):
    info = np.iinfo(dtype)
    lo, hi = {
        "normal": (-10, 11), "positive": (1, 11), "nonzero": (1, 8), "small": (0, 4),
        "dups": (0, 4), "sorted": (-10, 11), "shift": (0, info.bits - 1),
        "halves": (-10, 11), "special": (-10, 11),   # float-only kinds: plain integers
    }.get(values.split(":")[0], (None, None))
    if values.startswith("index:"):           # valid indices into an axis of that length
        lo, hi = 0, int(values.split(":")[1])
    if lo is None:
        raise ValueError(f"unknown integer value kind {values!r}")
    lo, hi = max(lo, info.min), min(hi, int(info.max) + 1)
    v = rng.integers(lo, hi, shape)
    if values == "nonzero" and info.min < 0:
        v = v * rng.choice([-1, 1], shape)
    if values == "sorted":
        v = np.sort(v, axis=-1)
    return v.astype(dtype)


def _matrix(rng, shape, values):
    *batch, m, n = shape
    a = rng.standard_normal(shape)
    if values == "spd":                       # symmetric positive definite
        return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)
    if values == "wellcond":                  # diagonally dominant: far from singular
        return a + 2 * n * np.eye(m, n)
    if values == "symmetric":
        return (a + np.swapaxes(a, -1, -2)) / 2
    if values == "lowrank":                   # rank n - 1 (matrix_rank, pinv)
        b = rng.standard_normal((*batch, m, n - 1))
        c = rng.standard_normal((*batch, n - 1, n))
        return b @ c
    raise ValueError(f"unknown matrix kind {values!r}")


def draw(rng, arg: Arg) -> np.ndarray:
    dtype = np.dtype(arg.dtype)
    if dtype.kind == "b":
        return rng.random(arg.shape) < 0.5
    if dtype.kind in "iu":
        return np.asarray(_integers(rng, arg.shape, dtype, arg.values))
    if arg.values in ("spd", "wellcond", "symmetric", "lowrank"):
        v = _matrix(rng, arg.shape, arg.values)
        if dtype.kind == "c":
            h = rng.standard_normal(arg.shape) * 0.3
            if arg.values in ("spd", "symmetric"):  # keep it Hermitian
                h = h - np.swapaxes(h, -1, -2)
            v = v + 1j * h
        return np.asarray(v, dtype=dtype)
    v = _real(rng, arg.shape, dtype, arg.values)
    if dtype.kind == "c":
        with np.errstate(invalid="ignore"):  # 1j * inf has a nan real part: fine for "special"
            v = v + 1j * _real(rng, arg.shape, dtype, arg.values)
    return np.asarray(v, dtype=dtype)


# -- table builders ------------------------------------------------------------------------

CASES: list[Case] = []


def case(func, fn, *args, label="", **kw) -> None:
    CASES.append(Case(func, fn, tuple(args), label, **kw))


def unary(func, dtypes, values="normal", shape=(3, 4), **kw) -> None:
    for dt in dtypes:
        case(func, lambda xp, x, f=func: lookup(xp, f)(x), Arg(shape, dt, values), label=dt, **kw)


def binary(func, pairs, values=("normal", "normal"), shapes=((3, 4), (3, 4)), label="", **kw) -> None:
    for d1, d2 in pairs:
        lab = label or (d1 if d1 == d2 else f"{d1},{d2}")
        case(func, lambda xp, a, b, f=func: lookup(xp, f)(a, b),
             Arg(shapes[0], d1, values[0]), Arg(shapes[1], d2, values[1]), label=lab, **kw)


def same(*dtypes):
    return [(d, d) for d in dtypes]


F = ("float32", "float64")
FC = ("float32", "float64", "complex64", "complex128")
INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
SOME_INTS = ("int8", "int32", "int64", "uint8", "uint64")
REAL = SOME_INTS + F
NUMERIC = REAL + ("complex64", "complex128")

# -- creation ------------------------------------------------------------------------------
case("arange", lambda xp: xp.arange(10), label="stop")
case("arange", lambda xp: xp.arange(2, 20, 3, dtype=xp.int32), label="int32-step")
case("arange", lambda xp: xp.arange(0.0, 1.0, 0.125), label="float")
case("arange", lambda xp: xp.arange(5, 0, -1), label="negative-step")
case("asarray", lambda xp: xp.asarray([[1, 2], [3, 4]]), label="nested-int")
case("asarray", lambda xp: xp.asarray([1.5, 2.5], dtype=xp.float32), label="float32")
case("asarray", lambda xp: xp.asarray(True), label="scalar-bool")
case("asarray", lambda xp: xp.asarray([1 + 2j, 3j]), label="complex")
case("asarray", lambda xp, x: xp.asarray(x, dtype=xp.float64, copy=True), Arg((3,), "int32"), label="array-copy")
case("empty", lambda xp: xp.empty((2, 3), dtype=xp.float32), tolerance="meta")
case("empty_like", lambda xp, x: xp.empty_like(x), Arg((2, 3), "int16"), tolerance="meta")
case("eye", lambda xp: xp.eye(3), label="square")
case("eye", lambda xp: xp.eye(3, 5, k=1, dtype=xp.int32), label="k1")
case("eye", lambda xp: xp.eye(4, 2, k=-2), label="k-2")
case("from_dlpack", lambda xp, x: xp.from_dlpack(x), Arg((2, 3), "float32"))
case("full", lambda xp: xp.full((2, 3), 7), label="int")
case("full", lambda xp: xp.full((2,), 1.5, dtype=xp.float32), label="float32")
case("full", lambda xp: xp.full((), True), label="bool")
case("full_like", lambda xp, x: xp.full_like(x, 3), Arg((2, 3), "int8"), label="int8")
case("full_like", lambda xp, x: xp.full_like(x, 0.5, dtype=xp.float64), Arg((4,), "float32"), label="dtype")
case("linspace", lambda xp: xp.linspace(0.0, 1.0, 11), label="closed")
case("linspace", lambda xp: xp.linspace(-2, 2, 8, endpoint=False, dtype=xp.float32), label="open")
case("linspace", lambda xp: xp.linspace(0, 1 + 1j, 5), label="complex")
case("meshgrid", lambda xp, a, b: xp.meshgrid(a, b), Arg((3,)), Arg((4,), "float64"), label="xy")
case("meshgrid", lambda xp, a, b: xp.meshgrid(a, b, indexing="ij"), Arg((3,), "int32"), Arg((2,), "int32"), label="ij")
case("ones", lambda xp: xp.ones((2, 3)), label="default")
case("ones", lambda xp: xp.ones(4, dtype=xp.complex64), label="complex64")
case("ones_like", lambda xp, x: xp.ones_like(x), Arg((2, 2), "bool"))
case("tril", lambda xp, x: xp.tril(x), Arg((4, 5)), label="k0")
case("tril", lambda xp, x: xp.tril(x, k=-1), Arg((2, 3, 3), "int32"), label="batch-k-1")
case("triu", lambda xp, x: xp.triu(x), Arg((5, 4)), label="k0")
case("triu", lambda xp, x: xp.triu(x, k=2), Arg((2, 4, 4), "int64"), label="batch-k2")
case("zeros", lambda xp: xp.zeros((3, 0, 2)), label="empty-dim")
case("zeros", lambda xp: xp.zeros(5, dtype=xp.uint8), label="uint8")
case("zeros_like", lambda xp, x: xp.zeros_like(x, dtype=xp.float32), Arg((2, 3), "int64"))

# -- data type functions ---------------------------------------------------------------------
case("astype", lambda xp, x: xp.astype(x, xp.int32), Arg((3, 4), "float64", "halves"), label="float->int")
case("astype", lambda xp, x: xp.astype(x, xp.float32), Arg((3, 4), "int64"), label="int->float32")
case("astype", lambda xp, x: xp.astype(x, xp.complex128), Arg((5,), "float32"), label="float->complex")
case("astype", lambda xp, x: xp.astype(x, xp.bool), Arg((5,), "int8", "small"), label="int->bool")
case("astype", lambda xp, x: xp.astype(x, xp.uint8), Arg((5,), "bool"), label="bool->uint8")
case("can_cast", lambda xp, x: (xp.can_cast(xp.int8, xp.int16), xp.can_cast(xp.float64, xp.float32),
                                xp.can_cast(x, xp.float64), xp.can_cast(xp.uint8, xp.int8)), Arg((2,), "float32"))
case("finfo", lambda xp: tuple((f.bits, f.eps, f.max, f.min, f.smallest_normal, f.dtype)
                               for f in (xp.finfo(xp.float32), xp.finfo(xp.float64), xp.finfo(xp.complex64))))
case("iinfo", lambda xp, x: tuple((i.bits, i.max, i.min, i.dtype)
                                  for i in (xp.iinfo(xp.int8), xp.iinfo(xp.uint64), xp.iinfo(x))), Arg((2,), "int16"))
case("isdtype", lambda xp, x: (xp.isdtype(x.dtype, "real floating"), xp.isdtype(xp.int8, ("integral", xp.float32)),
                               xp.isdtype(xp.complex64, "numeric"), xp.isdtype(xp.bool, "integral")), Arg((2,), "float32"))
case("result_type", lambda xp, a, b: (xp.result_type(a, b), xp.result_type(xp.uint8, xp.int16),
                                      xp.result_type(a, 1.0), xp.result_type(xp.float32, xp.complex128)),
     Arg((2,), "int8"), Arg((2,), "int32"))

# -- elementwise ---------------------------------------------------------------------------------
unary("abs", ("int8", "int64", "float32", "float64", "complex128"))
unary("acos", FC, "unit")
unary("acosh", F, "ge1")
unary("asin", FC, "unit")
unary("asinh", FC)
unary("atan", FC)
unary("atanh", F, "unit")
unary("bitwise_invert", ("bool", "int8", "int64", "uint8", "uint32"))
unary("ceil", F + ("int32",), "halves")
unary("conj", ("complex64", "complex128", "float64"))
unary("cos", FC)
unary("cosh", FC)
unary("exp", FC)
unary("expm1", FC)
unary("floor", F + ("int64",), "halves")
unary("imag", ("complex64", "complex128", "float32"))
unary("isfinite", F + ("int32",), "special")
unary("isinf", F, "special")
unary("isnan", F + ("complex128",), "special")
unary("log", FC, "positive")
unary("log1p", FC, "positive")
unary("log2", FC, "positive")
unary("log10", FC, "positive")
unary("logical_not", ("bool",))
unary("negative", ("int8", "int64", "float32", "complex128"))
unary("positive", ("int16", "float64", "complex64"))
unary("real", ("complex64", "complex128", "float64"))
unary("reciprocal", FC, "nonzero")
unary("round", F + ("int16", "complex128"), "halves")
unary("sign", ("int32", "float32", "float64", "complex128"), "nonzero")
case("sign", lambda xp, x: xp.sign(x), Arg((8,), "float64", "special"), label="special")
unary("signbit", F, "special")
unary("sin", FC)
unary("sinh", FC)
unary("square", ("int32", "float32", "float64", "complex128"))
unary("sqrt", F, "positive")
unary("sqrt", ("complex64", "complex128"))
unary("tan", F + ("complex128",), "angle")
unary("tanh", FC)
unary("trunc", F + ("uint8",), "halves")

binary("add", same("int8", "uint16", "int64", "float32", "float64", "complex128")
       + [("int8", "int16"), ("uint8", "int8"), ("float32", "float64"), ("float32", "complex128"), ("int32", "float32")])
binary("add", [("float32", "float32")], shapes=((3, 1), (4,)), label="broadcast")
case("add", lambda xp, x: xp.add(x, 1), Arg((3,), "int8"), label="python-int")
case("add", lambda xp, x: xp.add(x, 0.5), Arg((3,), "float32"), label="python-float")
case("add", lambda xp, x: xp.add(2.5, x), Arg((3,), "int64"), label="python-float-int-array")
binary("atan2", same(*F))
binary("bitwise_and", same("bool", "int8", "uint64", "int64") + [("uint8", "int16")])
binary("bitwise_left_shift", same("int8", "int64", "uint8", "uint32"), values=("normal", "shift"))
binary("bitwise_or", same("bool", "int16", "uint32"))
binary("bitwise_right_shift", same("int8", "int64", "uint16"), values=("normal", "shift"))
binary("bitwise_xor", same("bool", "int32", "uint8"))
case("clip", lambda xp, x: xp.clip(x, -0.5, 0.5), Arg((3, 4)), label="scalars")
case("clip", lambda xp, x, lo, hi: xp.clip(x, lo, hi), Arg((3, 4)), Arg((4,), "float64", "normal"),
     Arg((3, 1), "float64", "positive"), label="arrays")
case("clip", lambda xp, x: xp.clip(x, max=3), Arg((6,), "int16"), label="max-only")
case("clip", lambda xp, x: xp.clip(x), Arg((6,), "float32"), label="none")
binary("copysign", same(*F), values=("normal", "special"))
binary("divide", same(*FC) + [("float32", "float64"), ("int32", "int32")], values=("normal", "nonzero"))
binary("equal", same("bool", "int32", "float64", "complex64") + [("int8", "uint8")], values=("dups", "dups"))
binary("floor_divide", same("int8", "int64", "uint8", "float32", "float64"), values=("normal", "nonzero"))
binary("greater", same("int16", "float32", "uint64"), values=("dups", "dups"))
binary("greater_equal", same("int64", "float64"), values=("dups", "dups"))
binary("hypot", same(*F))
binary("less", same("int8", "float64") + [("int32", "float32")], values=("dups", "dups"))
binary("less_equal", same("uint8", "float32"), values=("dups", "dups"))
binary("logaddexp", same(*F))
binary("logical_and", same("bool"))
binary("logical_or", same("bool"))
binary("logical_xor", same("bool"))
binary("maximum", same("int8", "uint32", "float32", "float64"))
binary("minimum", same("int64", "uint8", "float32", "float64"))
binary("multiply", same("int16", "uint64", "float32", "float64", "complex64", "complex128") + [("uint8", "float64")])
binary("nextafter", same(*F))
binary("not_equal", same("bool", "int64", "float32", "complex128"), values=("dups", "dups"))
binary("pow", same(*F), values=("positive", "normal"))
binary("pow", same("int32", "int64", "uint8"), values=("normal", "small"))
binary("pow", same("complex128"), values=("normal", "small"))
case("pow", lambda xp, x: x ** 2, Arg((4,), "float32"), label="python-int")
binary("remainder", same("int8", "int64", "uint16", "float32", "float64"), values=("normal", "nonzero"))
binary("subtract", same("int8", "uint32", "float32", "float64", "complex64") + [("int64", "float64")])

# -- indexing functions ------------------------------------------------------------------------
case("take", lambda xp, x, i: xp.take(x, i, axis=1), Arg((3, 5)), Arg((6,), "int64", "index:5"), label="axis1")
case("take", lambda xp, x, i: xp.take(x, i), Arg((7,), "int32"), Arg((4,), "int32", "index:7"), label="1d")
case("take_along_axis", lambda xp, x, i: xp.take_along_axis(x, i, axis=0),
     Arg((4, 3)), Arg((2, 3), "int64", "index:4"), label="axis0")
case("take_along_axis", lambda xp, x: xp.take_along_axis(x, xp.argsort(x, axis=-1), axis=-1),
     Arg((3, 5), "int16"), label="argsort")

# -- linear algebra (main namespace) -------------------------------------------------------------
case("matmul", lambda xp, a, b: xp.matmul(a, b), Arg((3, 4)), Arg((4, 2)), label="2d")
case("matmul", lambda xp, a, b: a @ b, Arg((2, 3, 4), "float32"), Arg((4, 5), "float32"), label="batch")
case("matmul", lambda xp, a, b: xp.matmul(a, b), Arg((4,)), Arg((2, 4, 3)), label="vector-left")
case("matmul", lambda xp, a, b: xp.matmul(a, b), Arg((3, 3), "int64"), Arg((3,), "int64"), label="int")
case("matmul", lambda xp, a, b: xp.matmul(a, b), Arg((2, 3), "complex128"), Arg((3, 2), "complex128"), label="complex")
case("matrix_transpose", lambda xp, x: xp.matrix_transpose(x), Arg((2, 3, 4), "int32"))
case("tensordot", lambda xp, a, b: xp.tensordot(a, b), Arg((2, 3, 4)), Arg((3, 4, 5)), label="axes2")
case("tensordot", lambda xp, a, b: xp.tensordot(a, b, axes=([0, 2], [1, 0])), Arg((2, 3, 4)), Arg((4, 2)), label="pairs")
case("tensordot", lambda xp, a, b: xp.tensordot(a, b, axes=0), Arg((2,), "int32"), Arg((3,), "int32"), label="outer")
case("vecdot", lambda xp, a, b: xp.vecdot(a, b), Arg((3, 4)), Arg((4,)), label="broadcast")
case("vecdot", lambda xp, a, b: xp.vecdot(a, b, axis=0), Arg((3, 2), "complex128"), Arg((3, 2), "complex128"), label="complex-axis0")

# -- manipulation ---------------------------------------------------------------------------------
case("broadcast_arrays", lambda xp, a, b: xp.broadcast_arrays(a, b), Arg((3, 1)), Arg((4,), "float64"))
case("broadcast_shapes", lambda xp: (xp.broadcast_shapes((3, 1), (4,)), xp.broadcast_shapes((2, 1, 5), (1, 3, 1), ()),
                                     xp.broadcast_shapes()))
case("broadcast_to", lambda xp, x: xp.broadcast_to(x, (2, 3, 4)), Arg((3, 1), "int16"))
case("concat", lambda xp, a, b: xp.concat((a, b)), Arg((2, 3)), Arg((4, 3)), label="axis0")
case("concat", lambda xp, a, b: xp.concat([a, b], axis=-1), Arg((2, 3), "int8"), Arg((2, 1), "int16"), label="promote")
case("concat", lambda xp, a, b: xp.concat((a, b), axis=None), Arg((2, 3)), Arg((4,)), label="flat")
case("expand_dims", lambda xp, x: xp.expand_dims(x, axis=0), Arg((3, 4)), label="axis0")
case("expand_dims", lambda xp, x: xp.expand_dims(x, axis=-1), Arg((3,), "int8"), label="axis-1")
case("flip", lambda xp, x: xp.flip(x), Arg((3, 4)), label="all")
case("flip", lambda xp, x: xp.flip(x, axis=(0, 2)), Arg((2, 3, 4), "uint8"), label="axes")
case("moveaxis", lambda xp, x: xp.moveaxis(x, 0, -1), Arg((2, 3, 4)), label="int")
case("moveaxis", lambda xp, x: xp.moveaxis(x, (0, 1), (2, 0)), Arg((2, 3, 4), "int32"), label="tuple")
case("permute_dims", lambda xp, x: xp.permute_dims(x, (2, 0, 1)), Arg((2, 3, 4), "complex64"))
case("repeat", lambda xp, x: xp.repeat(x, 2), Arg((2, 3)), label="flat")
case("repeat", lambda xp, x, r: xp.repeat(x, r, axis=1), Arg((2, 3), "int32"), Arg((3,), "int64", "small"), label="array")
case("reshape", lambda xp, x: xp.reshape(x, (4, -1)), Arg((2, 3, 4)), label="infer")
case("reshape", lambda xp, x: xp.reshape(x, (6,), copy=True), Arg((2, 3), "bool"), label="copy")
case("roll", lambda xp, x: xp.roll(x, 2), Arg((3, 4)), label="flat")
case("roll", lambda xp, x: xp.roll(x, (1, -2), axis=(0, 1)), Arg((3, 4), "int8"), label="axes")
case("squeeze", lambda xp, x: xp.squeeze(x, axis=1), Arg((3, 1, 4)), label="int")
case("squeeze", lambda xp, x: xp.squeeze(x, axis=(0, 2)), Arg((1, 3, 1), "int64"), label="tuple")
case("stack", lambda xp, a, b: xp.stack((a, b)), Arg((2, 3)), Arg((2, 3)), label="axis0")
case("stack", lambda xp, a, b: xp.stack([a, b], axis=-1), Arg((2,), "int32"), Arg((2,), "int32"), label="axis-1")
case("tile", lambda xp, x: xp.tile(x, (2, 3)), Arg((2, 2)), label="same-rank")
case("tile", lambda xp, x: xp.tile(x, (2, 1, 2)), Arg((3,), "int8"), label="more-reps")
case("unstack", lambda xp, x: xp.unstack(x), Arg((3, 4)), label="axis0")
case("unstack", lambda xp, x: xp.unstack(x, axis=-1), Arg((2, 3), "int16"), label="axis-1")

# -- searching ---------------------------------------------------------------------------------------
case("argmax", lambda xp, x: xp.argmax(x), Arg((3, 4)), label="flat")
case("argmax", lambda xp, x: xp.argmax(x, axis=1, keepdims=True), Arg((3, 4), "int32", "dups"), label="axis-ties")
case("argmin", lambda xp, x: xp.argmin(x), Arg((3, 4), "float32"), label="flat")
case("argmin", lambda xp, x: xp.argmin(x, axis=0), Arg((3, 4), "uint8", "dups"), label="axis-ties")
case("count_nonzero", lambda xp, x: xp.count_nonzero(x), Arg((3, 4), "int32", "small"), label="all")
case("count_nonzero", lambda xp, x: xp.count_nonzero(x, axis=1, keepdims=True), Arg((3, 4), "bool"), label="axis")
case("nonzero", lambda xp, x: xp.nonzero(x), Arg((3, 4), "int32", "small"), label="2d")
case("nonzero", lambda xp, x: xp.nonzero(x), Arg((6,), "bool"), label="1d")
case("searchsorted", lambda xp, a, v: xp.searchsorted(a, v), Arg((8,), "float64", "sorted"), Arg((5,)), label="left")
case("searchsorted", lambda xp, a, v: xp.searchsorted(a, v, side="right"), Arg((8,), "int32", "sorted"),
     Arg((3, 2), "int32"), label="right")
case("searchsorted", lambda xp, a, v: xp.searchsorted(a, v, sorter=xp.argsort(a)), Arg((6,), "float32"),
     Arg((4,), "float32"), label="sorter")
case("where", lambda xp, c, a, b: xp.where(c, a, b), Arg((3, 4), "bool"), Arg((3, 4)), Arg((4,)), label="broadcast")
case("where", lambda xp, c, a: xp.where(c, a, 0), Arg((5,), "bool"), Arg((5,), "int16"), label="scalar")
case("where", lambda xp, c, a, b: xp.where(c, a, b), Arg((4,), "bool"), Arg((4,), "int8"), Arg((4,), "float32"),
     label="promote")

# -- sets (output order is unspecified: sort, or compare reconstructions) -------------------------
case("isin", lambda xp, a, b: xp.isin(a, b), Arg((3, 4), "int32", "small"), Arg((3,), "int32", "small"), label="int")
case("isin", lambda xp, a, b: xp.isin(a, b, invert=True), Arg((5,), "float64", "dups"), Arg((2,), "float64", "dups"),
     label="invert")
case("unique_values", lambda xp, x: xp.sort(xp.unique_values(x)), Arg((3, 4), "int64", "dups"), label="int")
case("unique_values", lambda xp, x: xp.sort(xp.unique_values(x)), Arg((10,), "float32", "dups"), label="float")


# Every executor here returns unique values sorted (the standard leaves the order open), so the
# plain cases compare the outputs as they are; the "reconstruct" cases check the documented
# relations (values[inverse] == x, x[indices] == values), which gather with data-dependent sizes.


def _unique_inverse_reconstruct(xp, x):
    values, inverse = xp.unique_inverse(x)
    return xp.take(values, xp.reshape(inverse, (-1,))), inverse.shape


def _unique_all_reconstruct(xp, x):
    r = xp.unique_all(x)
    flat = xp.reshape(x, (-1,))
    return xp.take(r.values, xp.reshape(r.inverse_indices, (-1,))), xp.take(flat, r.indices), xp.sum(r.counts)


case("unique_counts", lambda xp, x: xp.unique_counts(x), Arg((3, 4), "int32", "dups"), label="int")
case("unique_counts", lambda xp, x: tuple(xp.unique_counts(x)), Arg((9,), "float32", "dups"), label="float")
case("unique_inverse", lambda xp, x: xp.unique_inverse(x), Arg((3, 4), "int16", "dups"), label="2d")
case("unique_inverse", _unique_inverse_reconstruct, Arg((3, 4), "float64", "dups"), label="reconstruct")
case("unique_all", lambda xp, x: xp.unique_all(x), Arg((12,), "float64", "dups"), label="1d")
case("unique_all", _unique_all_reconstruct, Arg((2, 5), "int64", "dups"), label="reconstruct")

# -- sorting ---------------------------------------------------------------------------------------------
case("argsort", lambda xp, x: xp.argsort(x), Arg((3, 5)), label="default")
case("argsort", lambda xp, x: xp.argsort(x, axis=0, stable=True), Arg((6, 3), "int8", "dups"), label="stable")
case("argsort", lambda xp, x: xp.argsort(x, descending=True, stable=True), Arg((10,), "int32", "dups"),
     label="descending-stable")
case("sort", lambda xp, x: xp.sort(x), Arg((3, 5)), label="default")
case("sort", lambda xp, x: xp.sort(x, axis=0, descending=True), Arg((4, 3), "uint16"), label="descending")

# -- statistical ------------------------------------------------------------------------------------------
case("cumulative_prod", lambda xp, x: xp.cumulative_prod(x), Arg((6,), "float64", "positive"), label="1d")
case("cumulative_prod", lambda xp, x: xp.cumulative_prod(x, axis=1, include_initial=True), Arg((2, 4), "int32", "small"),
     label="initial")
case("cumulative_sum", lambda xp, x: xp.cumulative_sum(x), Arg((6,), "float32"), label="1d")
case("cumulative_sum", lambda xp, x: xp.cumulative_sum(x, axis=0, include_initial=True), Arg((3, 4), "int8"),
     label="int8-initial")
case("cumulative_sum", lambda xp, x: xp.cumulative_sum(x, axis=1, dtype=xp.float64), Arg((2, 3), "int32"), label="dtype")
case("max", lambda xp, x: xp.max(x), Arg((3, 4)), label="all")
case("max", lambda xp, x: xp.max(x, axis=(0, 2), keepdims=True), Arg((2, 3, 4), "int16"), label="axes")
case("mean", lambda xp, x: xp.mean(x), Arg((3, 4), "float32"), label="all")
case("mean", lambda xp, x: xp.mean(x, axis=1, keepdims=True), Arg((3, 4)), label="axis")
case("mean", lambda xp, x: xp.mean(x, axis=0), Arg((3, 2), "complex128"), label="complex")
case("min", lambda xp, x: xp.min(x, axis=-1), Arg((3, 4), "float32"), label="axis")
case("min", lambda xp, x: xp.min(x), Arg((5,), "uint8"), label="uint8")
case("prod", lambda xp, x: xp.prod(x, axis=0), Arg((3, 4)), label="axis")
case("prod", lambda xp, x: xp.prod(x), Arg((4,), "int8", "small"), label="int8-upcast")
case("prod", lambda xp, x: xp.prod(x, dtype=xp.float32, keepdims=True), Arg((2, 3), "int32", "small"), label="dtype")
case("std", lambda xp, x: xp.std(x), Arg((3, 4)), label="all")
case("std", lambda xp, x: xp.std(x, axis=0, correction=1, keepdims=True), Arg((5, 3), "float32"), label="ddof1")
case("sum", lambda xp, x: xp.sum(x), Arg((3, 4)), label="all")
case("sum", lambda xp, x: xp.sum(x, axis=1), Arg((3, 4), "int8"), label="int8-upcast")
case("sum", lambda xp, x: xp.sum(x, axis=(0, 1), dtype=xp.float32), Arg((2, 3, 2), "uint16"), label="dtype")
case("sum", lambda xp, x: xp.sum(x, axis=0), Arg((3, 2), "complex64"), label="complex")
case("sum", lambda xp, x: xp.sum(x), Arg((0, 3)), label="empty")
case("var", lambda xp, x: xp.var(x, axis=1), Arg((3, 4)), label="axis")
case("var", lambda xp, x: xp.var(x, correction=1.5), Arg((8,), "float32"), label="correction")

# -- utility -----------------------------------------------------------------------------------------------
case("all", lambda xp, x: xp.all(x), Arg((3, 4), "bool"), label="flat")
case("all", lambda xp, x: xp.all(x, axis=0, keepdims=True), Arg((3, 4), "int32", "small"), label="axis")
case("any", lambda xp, x: xp.any(x, axis=1), Arg((3, 4), "bool"), label="axis")
case("any", lambda xp, x: xp.any(x), Arg((4,), "float64", "special"), label="float")
case("diff", lambda xp, x: xp.diff(x), Arg((3, 5)), label="default")
case("diff", lambda xp, x: xp.diff(x, axis=0, n=2), Arg((5, 3), "int32"), label="n2")
case("diff", lambda xp, x, p, a: xp.diff(x, prepend=p, append=a), Arg((2, 4)), Arg((2, 1)), Arg((2, 2)),
     label="prepend-append")

# -- inspection -----------------------------------------------------------------------------------------------
case("__array_namespace_info__",
     lambda xp: (xp.__array_namespace_info__().default_dtypes(), xp.__array_namespace_info__().dtypes(),
                 xp.__array_namespace_info__().dtypes(kind="integral"),
                 # exactly the standard's three keys (the rest is executor_info())
                 sorted(xp.__array_namespace_info__().capabilities()),
                 type(xp.__array_namespace_info__().devices()).__name__))

# -- linalg extension (looser tolerances: LAPACK implementations differ) ---------------------------------------
def lin(func, fn, *args, label="", **kw):
    dt = args[0].dtype if args else "float64"
    case(func, fn, *args, label=label or dt, **{"tolerance": "linalg", **kw})


def _mT(xp, a):
    return xp.conj(xp.matrix_transpose(a)) if xp.isdtype(a.dtype, "complex floating") else xp.matrix_transpose(a)


def _eigh(xp, a):
    w, q = xp.linalg.eigh(a)
    recon = (q * w[..., None, :]) @ _mT(xp, q)
    return w, recon, _mT(xp, q) @ q


def _svd(xp, a, full):
    u, s, vh = xp.linalg.svd(a, full_matrices=full)
    k = s.shape[-1]
    recon = (u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :]
    return s, recon, u.shape, vh.shape


def _qr(xp, a, mode):
    q, r = xp.linalg.qr(a, mode=mode)
    return q @ r, _mT(xp, q) @ q, xp.abs(xp.linalg.diagonal(r)), xp.triu(r) - r, q.shape, r.shape


for dt in ("float32", "float64", "complex128"):
    lin("linalg.cholesky", lambda xp, a: xp.linalg.cholesky(a), Arg((3, 3), dt, "spd"))
lin("linalg.cholesky", lambda xp, a: xp.linalg.cholesky(a, upper=True), Arg((2, 4, 4), "float64", "spd"), label="upper-batch")
lin("linalg.cross", lambda xp, a, b: xp.linalg.cross(a, b), Arg((4, 3)), Arg((4, 3)))
lin("linalg.cross", lambda xp, a, b: xp.linalg.cross(a, b, axis=0), Arg((3, 2), "int32"), Arg((3, 1), "int32"), label="int-axis0")
for dt in ("float32", "float64", "complex128"):
    lin("linalg.det", lambda xp, a: xp.linalg.det(a), Arg((2, 3, 3), dt, "wellcond"))
lin("linalg.diagonal", lambda xp, a: xp.linalg.diagonal(a), Arg((3, 4)))
lin("linalg.diagonal", lambda xp, a: xp.linalg.diagonal(a, offset=-1), Arg((2, 4, 3), "int16"), label="offset")
for dt in ("float32", "float64", "complex128"):
    lin("linalg.eigh", _eigh, Arg((2, 4, 4), dt, "symmetric"))
    lin("linalg.eigvalsh", lambda xp, a: xp.linalg.eigvalsh(a), Arg((4, 4), dt, "symmetric"))
for dt in ("float32", "float64", "complex128"):
    lin("linalg.inv", lambda xp, a: xp.linalg.inv(a), Arg((2, 3, 3), dt, "wellcond"))
lin("linalg.matmul", lambda xp, a, b: xp.linalg.matmul(a, b), Arg((2, 3, 4)), Arg((2, 4, 2)))
for ord_ in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
    lin("linalg.matrix_norm", lambda xp, a, o=ord_: xp.linalg.matrix_norm(a, ord=o), Arg((2, 3, 4)), label=f"ord={ord_}")
lin("linalg.matrix_norm", lambda xp, a: xp.linalg.matrix_norm(a, keepdims=True), Arg((3, 3), "complex64"), label="complex-keepdims")
lin("linalg.matrix_power", lambda xp, a: xp.linalg.matrix_power(a, 3), Arg((2, 3, 3)), label="3")
lin("linalg.matrix_power", lambda xp, a: xp.linalg.matrix_power(a, 0), Arg((3, 3), "float32"), label="0")
lin("linalg.matrix_power", lambda xp, a: xp.linalg.matrix_power(a, -2), Arg((3, 3), "float64", "wellcond"), label="-2")
lin("linalg.matrix_rank", lambda xp, a: xp.linalg.matrix_rank(a), Arg((2, 4, 4), "float64", "lowrank"))
lin("linalg.matrix_rank", lambda xp, a: xp.linalg.matrix_rank(a, rtol=0.5), Arg((4, 4), "float32", "wellcond"), label="rtol")
lin("linalg.matrix_transpose", lambda xp, a: xp.linalg.matrix_transpose(a), Arg((2, 3, 4), "complex64"))
lin("linalg.outer", lambda xp, a, b: xp.linalg.outer(a, b), Arg((3,)), Arg((4,)))
lin("linalg.outer", lambda xp, a, b: xp.linalg.outer(a, b), Arg((3,), "int8"), Arg((2,), "int32"), label="int")
lin("linalg.pinv", lambda xp, a: xp.linalg.pinv(a), Arg((4, 3)))
lin("linalg.pinv", lambda xp, a: xp.linalg.pinv(a, rtol=1e-8), Arg((2, 4, 4), "float64", "lowrank"), label="lowrank")
for dt in ("float32", "float64", "complex128"):
    lin("linalg.qr", lambda xp, a: _qr(xp, a, "reduced"), Arg((5, 3), dt), label=f"reduced-{dt}")
lin("linalg.qr", lambda xp, a: _qr(xp, a, "complete"), Arg((2, 4, 3)), label="complete")
for dt in ("float32", "float64", "complex128"):
    lin("linalg.slogdet", lambda xp, a: tuple(xp.linalg.slogdet(a)), Arg((2, 3, 3), dt, "wellcond"))
lin("linalg.solve", lambda xp, a, b: xp.linalg.solve(a, b), Arg((3, 3), "float64", "wellcond"), Arg((3, 2)), label="matrix")
lin("linalg.solve", lambda xp, a, b: xp.linalg.solve(a, b), Arg((2, 3, 3), "float32", "wellcond"), Arg((2, 3, 1), "float32"),
    label="batch-float32")
lin("linalg.solve", lambda xp, a, b: xp.linalg.solve(a, b), Arg((4, 4), "float64", "wellcond"), Arg((4,)), label="vector")
lin("linalg.solve", lambda xp, a, b: xp.linalg.solve(a, b), Arg((3, 3), "complex128", "wellcond"), Arg((3, 3), "complex128"),
    label="complex")
for dt in ("float32", "float64", "complex128"):
    lin("linalg.svd", lambda xp, a: _svd(xp, a, False), Arg((2, 5, 3), dt), label=f"reduced-{dt}")
lin("linalg.svd", lambda xp, a: _svd(xp, a, True), Arg((3, 4)), label="full")
lin("linalg.svdvals", lambda xp, a: xp.linalg.svdvals(a), Arg((2, 4, 3)))
lin("linalg.svdvals", lambda xp, a: xp.linalg.svdvals(a), Arg((3, 5), "complex64"))
lin("linalg.tensordot", lambda xp, a, b: xp.linalg.tensordot(a, b, axes=1), Arg((2, 3)), Arg((3, 4)))
lin("linalg.trace", lambda xp, a: xp.linalg.trace(a), Arg((2, 3, 3)))
lin("linalg.trace", lambda xp, a: xp.linalg.trace(a, offset=1, dtype=xp.int64), Arg((3, 4), "int16"), label="offset-dtype")
lin("linalg.vecdot", lambda xp, a, b: xp.linalg.vecdot(a, b), Arg((2, 3), "complex64"), Arg((2, 3), "complex64"))
lin("linalg.vector_norm", lambda xp, a: xp.linalg.vector_norm(a), Arg((3, 4)), label="2")
for ord_ in (1, 3, 0, math.inf, -math.inf):
    lin("linalg.vector_norm", lambda xp, a, o=ord_: xp.linalg.vector_norm(a, ord=o, axis=1), Arg((3, 4), "float32"),
        label=f"ord={ord_}")
lin("linalg.vector_norm", lambda xp, a: xp.linalg.vector_norm(a, axis=(0, 2), keepdims=True), Arg((2, 3, 4), "complex128"),
    label="complex-axes")

# -- fft extension ---------------------------------------------------------------------------------------------------------
def fft_case(func, fn, *args, label="", **kw):
    dt = args[0].dtype if args else "float64"
    case(func, fn, *args, label=label or dt, **{"tolerance": "fft", **kw})


for dt in ("complex64", "complex128", "float64"):
    fft_case("fft.fft", lambda xp, x: xp.fft.fft(x), Arg((3, 8), dt))
    fft_case("fft.ifft", lambda xp, x: xp.fft.ifft(x), Arg((3, 8), dt))
fft_case("fft.fft", lambda xp, x: xp.fft.fft(x, n=5, axis=0, norm="ortho"), Arg((4, 3), "complex128"), label="n-axis-ortho")
fft_case("fft.ifft", lambda xp, x: xp.fft.ifft(x, n=12, norm="forward"), Arg((8,), "complex128"), label="pad-forward")
fft_case("fft.fftn", lambda xp, x: xp.fft.fftn(x), Arg((2, 4, 6), "complex128"))
fft_case("fft.fftn", lambda xp, x: xp.fft.fftn(x, s=(3, 5), axes=(0, 2)), Arg((2, 4, 6), "complex64"), label="s-axes")
fft_case("fft.ifftn", lambda xp, x: xp.fft.ifftn(x, axes=(0,)), Arg((4, 6), "complex128"))
fft_case("fft.ifftn", lambda xp, x: xp.fft.ifftn(x, norm="ortho"), Arg((4, 6), "float32"), label="float32-ortho")
for dt in F:
    fft_case("fft.rfft", lambda xp, x: xp.fft.rfft(x), Arg((3, 8), dt))
    fft_case("fft.ihfft", lambda xp, x: xp.fft.ihfft(x), Arg((3, 8), dt))
fft_case("fft.rfft", lambda xp, x: xp.fft.rfft(x, n=7, axis=0), Arg((4, 3)), label="odd-n")
fft_case("fft.irfft", lambda xp, x: xp.fft.irfft(x), Arg((3, 5), "complex128"))
fft_case("fft.irfft", lambda xp, x: xp.fft.irfft(x, n=9), Arg((5,), "complex64"), label="odd-n")
fft_case("fft.rfftn", lambda xp, x: xp.fft.rfftn(x), Arg((4, 6)))
fft_case("fft.rfftn", lambda xp, x: xp.fft.rfftn(x, s=(4, 5), axes=(0, 1)), Arg((3, 4, 6), "float32"), label="s-axes")
fft_case("fft.irfftn", lambda xp, x: xp.fft.irfftn(x), Arg((4, 4), "complex128"))
fft_case("fft.irfftn", lambda xp, x: xp.fft.irfftn(x, s=(4, 7), axes=(0, 1)), Arg((4, 4), "complex128"), label="s-axes")
fft_case("fft.hfft", lambda xp, x: xp.fft.hfft(x), Arg((3, 5), "complex128"))
fft_case("fft.hfft", lambda xp, x: xp.fft.hfft(x, n=7, norm="ortho"), Arg((5,), "complex64"), label="odd-n-ortho")
fft_case("fft.ihfft", lambda xp, x: xp.fft.ihfft(x, n=6, norm="forward"), Arg((8,)), label="n-forward")
fft_case("fft.fftfreq", lambda xp: xp.fft.fftfreq(8), label="even")
fft_case("fft.fftfreq", lambda xp: xp.fft.fftfreq(7, d=0.5, dtype=xp.float32), label="odd-d-float32")
fft_case("fft.rfftfreq", lambda xp: xp.fft.rfftfreq(9, d=2.0), label="odd")
fft_case("fft.rfftfreq", lambda xp: xp.fft.rfftfreq(8, dtype=xp.float32), label="even-float32")
fft_case("fft.fftshift", lambda xp, x: xp.fft.fftshift(x), Arg((4, 5)))
fft_case("fft.fftshift", lambda xp, x: xp.fft.fftshift(x, axes=(1,)), Arg((3, 5), "int32"), label="axes")
fft_case("fft.ifftshift", lambda xp, x: xp.fft.ifftshift(x), Arg((4, 5)))
fft_case("fft.ifftshift", lambda xp, x: xp.fft.ifftshift(x, axes=0), Arg((5, 2), "complex64"), label="axes")

# -- the array object: indexing, updates and operators ------------------------------------------------------------


def _setitem(xp, x, v):
    y = xp.asarray(x, copy=True)
    y[1, :] = v
    y[0, 0] = -1.0
    y[..., -1] = 5.0
    return y, x  # x must be unchanged by writes to its copy


def _setitem_mask(xp, x, m):
    y = xp.asarray(x, copy=True)
    y[m] = 0
    return y


def _setitem_iadd(xp, x, y):
    z = xp.asarray(x, copy=True)
    z += y
    z *= 2
    return z, x


case("array.__getitem__", lambda xp, x: (x[1], x[:, 1:3], x[::-1, ::2], x[..., None, 0], x[-1, -1]),
     Arg((3, 4)), label="basic")
case("array.__getitem__", lambda xp, x, i: x[i], Arg((5, 3), "int32"), Arg((4,), "int64", "index:5"), label="int-array")
case("array.__getitem__", lambda xp, x, m: x[m], Arg((3, 4)), Arg((3, 4), "bool"), label="bool-mask")
case("array.__getitem__", lambda xp, x, i, j: x[i, j], Arg((3, 4), "int16"), Arg((2,), "int64", "index:3"),
     Arg((2,), "int64", "index:4"), label="int-arrays")
case("array.__setitem__", _setitem, Arg((3, 4)), Arg((4,)), label="basic")
case("array.__setitem__", _setitem_mask, Arg((3, 4), "int32"), Arg((3, 4), "bool"), label="bool-mask")
case("array.__iadd__", _setitem_iadd, Arg((3, 4), "float32"), Arg((4,), "float32"))
case("array.at", lambda xp, x, i: x.at[i].add(1.0), Arg((4,)), Arg((7,), "int64", "index:4"), label="add-repeated")
case("array.at", lambda xp, x, i, v: x.at[i].set(v), Arg((5,), "int32"), Arg((2,), "int64", "index:5"),
     Arg((2,), "int32"), label="set")
case("array.at", lambda xp, x, i: (x.at[i].min(0.0), x.at[i].max(0.0), x.at[i].multiply(2.0)), Arg((4,)),
     Arg((3,), "int64", "index:4"), label="min-max-multiply")
case("array.operators", lambda xp, a, b: (a + b, a - b, a * b, a / b, -a, abs(a), a ** 2, 2.0 * a, 1.0 - a, a < b,
                                          a == b, a >= 0.5), Arg((3, 4)), Arg((3, 4), "float64", "nonzero"), label="float")
case("array.operators", lambda xp, a, b: (a // b, a % b, a & b, a | b, a ^ b, ~a, a << 1, a >> 1, 3 - a),
     Arg((3, 4), "int32"), Arg((3, 4), "int32", "nonzero"), label="int")
case("array.mT", lambda xp, a: (a.mT, a[0].T), Arg((2, 3, 4)))
# chains of operators: complex arithmetic, promotion across three dtypes, Python scalars on both
# sides, integers past 2**53 and float64 differences far below float32's resolution
case("array.operators", lambda xp, a: xp.exp(a) * a - xp.sqrt(a) / (a + 1), Arg((3, 4), "complex128"), label="complex-chain")
case("array.operators", lambda xp, a, b, c: a + b * c, Arg((3, 4), "int8"), Arg((3, 4), "uint8"), Arg((3, 4), "float32"),
     label="mixed-promotion")
case("array.operators", lambda xp, a: (2 * a - 1.5) ** 2 // 3 % 2, Arg((3, 4), "float32"), label="scalar-operands")
case("array.operators", lambda xp, a: a * 1_000_000_007 + (2**62), Arg((3, 4), "int64"), label="int64-precision")
case("array.operators", lambda xp, a: (a + 1e-12) - a, Arg((3, 4)), label="float64-precision")


def functions_covered() -> set[str]:
    return {c.func for c in CASES}


def by_function() -> dict[str, list[Case]]:
    out: dict[str, list[Case]] = {}
    for c in CASES:
        out.setdefault(c.func, []).append(c)
    return out


def _check_unique_ids() -> None:
    seen: set[str] = set()
    for c in CASES:
        if c.id in seen:
            raise AssertionError(f"duplicate parity case id {c.id!r}")
        seen.add(c.id)


_check_unique_ids()
