"""Elementwise functions (the standard's "Element-wise Functions" category).

Each function checks its dtype category, promotes (and under a transform
broadcasts) its operands, then binds the primitive of the same name.  The
primitives and their categories are data: ``UNARY``, ``BINARY`` and ``BOUNDED`` below
are the only place a function's dtype category is stated; the functions are two
lines, ``_unary(sin_p, x)``, which find the category by the primitive.
Rules for transforms live in ``arrayx/transforms/rules/elementwise.py``.
"""
from __future__ import annotations

import numpy as np

from arrayx.api import _device_dtypes, _dtypes, _fast_paths, _inplace
from arrayx.api._array import Array
from arrayx.api._checks import as_array, cast, promote_binary, scalar_operand, with_article
from arrayx.api._modes import is_strict
from arrayx.core.primitives import (
    _TRACE, ELEMENTWISE, ConcretizationError, Primitive, primitives, run_eager1, run_eager2,
)

_CAT = _dtypes.CATEGORIES


def _unary(prim: Primitive, x):
    # Eager fast path (no transform active, a concrete array of an allowed dtype): the
    # executor's function on the buffer.  Everything else goes through bind.
    # (the class, buffer and executor read with no call between them, so no other thread runs in
    # between: a lazy() scope in another thread may change x's class and buffer; then the trace)
    if x.__class__ is Array:
        buf = x._buf
        ex = x._ex
        if buf.dtype in _ACCEPTED[prim] and _TRACE.get() is None:
            return run_eager1(prim, ex, buf)
    fname = prim.name
    category = UNARY[fname]
    x = as_array(fname, x)
    if x.dtype not in _CAT[category]:
        if x.dtype.kind in "biu" and category in _dtypes.FLOAT_ONLY and not is_strict():
            # the default mode computes bool/integer input to a floating-point function in a
            # float dtype (NumPy 2's, see _dtypes.INEXACT_OF); strict mode refuses it, as the standard
            return prim.bind(cast(x, _device_dtypes.chosen_default(_dtypes.inexact_of(x.dtype, fname), x)))
        if x.dtype == _dtypes.bool and fname in _BOOL_AS_NUMPY and not is_strict():
            return _BOOL_AS_NUMPY[fname](x)
        raise TypeError(
            f"{fname}: x must have {with_article(category)} dtype, got {x.dtype}"
            + (_STRICT_HINT if is_strict() and x.dtype.kind in "biu" and category in _dtypes.FLOAT_ONLY else "")
            + ("; NumPy and JAX refuse it too: cast it first, e.g. astype(x, arrayx.int8)"
               if x.dtype == _dtypes.bool and fname in ("sign", "negative") else "")
            + ("; cast it with astype(x, arrayx.int8) (strict mode; the default mode gives NumPy 2's result)"
               if is_strict() and x.dtype == _dtypes.bool and fname in _BOOL_AS_NUMPY else "")
        )
    return prim.bind(x)


_STRICT_HINT = " (strict mode; cast it with astype(x, float64), or leave arrayx.strict())"


def _bool_copy(x):
    from arrayx.api.data_types import astype

    return astype(x, x.dtype, copy=True)


def _bool_round(x):
    from arrayx.api.data_types import astype

    return astype(x, _dtypes.INEXACT_OF[_dtypes.bool])


# the default mode's answer for bool input to the numeric functions NumPy 2 computes on bools:
# abs/floor/ceil/trunc keep the bools (NumPy and JAX), round gives NumPy's float (float32 for its
# float16).  ``sign`` of bool stays refused (NumPy and JAX refuse it too); strict mode refuses all.
_BOOL_AS_NUMPY = {"abs": _bool_copy, "floor": _bool_copy, "ceil": _bool_copy, "trunc": _bool_copy,
                  "round": _bool_round}


def _binary(prim: Primitive, x1, x2):
    if _TRACE.get() is None and x1.__class__ is Array:
        b1 = x1._buf
        dt = b1.dtype
        if x2.__class__ is Array:
            # eager fast path: two concrete arrays of one executor and dtype.  The executor
            # broadcasts; when it refuses, the checked path below raises the error that names
            # the function and the shapes (ops have no side effects, so trying first is safe)
            b2 = x2._buf
            ex = x1._ex
            if x2._ex is ex and dt == b2.dtype and dt in _ACCEPTED[prim]:
                try:
                    return run_eager2(prim, ex, b1, b2)
                except (ValueError, TypeError):
                    pass
        elif (x2.__class__ is float or x2.__class__ is int) and dt.kind in "fc" and dt in _ACCEPTED[prim]:
            # array (op) Python scalar on a floating array: the scalar takes the array's dtype
            return run_eager2(prim, x1._ex, b1, dt.type(x2))
    return prim.bind(*promote_binary(prim.name, x1, x2, BINARY[prim.name]))


# name -> dtype category the function accepts (in the default mode ``divide`` and the
# "floating-point" functions also take bool/integer input, computed in a float dtype: _dtypes.FLOAT_ONLY)
UNARY: dict[str, str] = {
    "abs": "numeric",
    "acos": "floating-point",
    "acosh": "floating-point",
    "asin": "floating-point",
    "asinh": "floating-point",
    "atan": "floating-point",
    "atanh": "floating-point",
    "bitwise_invert": "integer or boolean",
    "ceil": "real numeric",
    "conj": "numeric",
    "cos": "floating-point",
    "cosh": "floating-point",
    "exp": "floating-point",
    "expm1": "floating-point",
    "floor": "real numeric",
    "imag": "numeric",
    "isfinite": "numeric",
    "isinf": "numeric",
    "isnan": "numeric",
    "log": "floating-point",
    "log1p": "floating-point",
    "log2": "floating-point",
    "log10": "floating-point",
    "logical_not": "bool",
    "negative": "numeric",
    "positive": "numeric",
    "real": "numeric",
    "reciprocal": "floating-point",
    "round": "numeric",
    "sign": "numeric",
    "signbit": "real floating",
    "sin": "floating-point",
    "sinh": "floating-point",
    "square": "numeric",
    "sqrt": "floating-point",
    "tan": "floating-point",
    "tanh": "floating-point",
    "trunc": "real numeric",
}
BINARY: dict[str, str] = {
    "add": "numeric",
    "atan2": "real floating",
    "bitwise_and": "integer or boolean",
    "bitwise_left_shift": "integral",
    "bitwise_or": "integer or boolean",
    "bitwise_right_shift": "integral",
    "bitwise_xor": "integer or boolean",
    "copysign": "real floating",
    "divide": "floating-point",
    "equal": "all",
    "floor_divide": "real numeric",
    "greater": "real-valued",
    "greater_equal": "real-valued",
    "hypot": "real floating",
    "less": "real-valued",
    "less_equal": "real-valued",
    "logaddexp": "real floating",
    "logical_and": "bool",
    "logical_or": "bool",
    "logical_xor": "bool",
    "maximum": "real numeric",
    "minimum": "real numeric",
    "multiply": "numeric",
    "nextafter": "real floating",
    "not_equal": "all",
    "pow": "numeric",
    "remainder": "real numeric",
    "subtract": "numeric",
}
#: functions of x and optional bounds (``clip(x, min, max)``), which check their own arguments
BOUNDED: dict[str, str] = {
    "clip": "real numeric",
}

abs_p = Primitive("abs")
acos_p = Primitive("acos")
acosh_p = Primitive("acosh")
asin_p = Primitive("asin")
asinh_p = Primitive("asinh")
atan_p = Primitive("atan")
atanh_p = Primitive("atanh")
bitwise_invert_p = Primitive("bitwise_invert")
ceil_p = Primitive("ceil")
conj_p = Primitive("conj")
cos_p = Primitive("cos")
cosh_p = Primitive("cosh")
exp_p = Primitive("exp")
expm1_p = Primitive("expm1")
floor_p = Primitive("floor")
imag_p = Primitive("imag")
isfinite_p = Primitive("isfinite")
isinf_p = Primitive("isinf")
isnan_p = Primitive("isnan")
log_p = Primitive("log")
log1p_p = Primitive("log1p")
log2_p = Primitive("log2")
log10_p = Primitive("log10")
logical_not_p = Primitive("logical_not")
negative_p = Primitive("negative")
positive_p = Primitive("positive")
real_p = Primitive("real")
reciprocal_p = Primitive("reciprocal")
round_p = Primitive("round")
sign_p = Primitive("sign")
signbit_p = Primitive("signbit")
sin_p = Primitive("sin")
sinh_p = Primitive("sinh")
square_p = Primitive("square")
sqrt_p = Primitive("sqrt")
tan_p = Primitive("tan")
tanh_p = Primitive("tanh")
trunc_p = Primitive("trunc")
add_p = Primitive("add")
atan2_p = Primitive("atan2")
bitwise_and_p = Primitive("bitwise_and")
bitwise_left_shift_p = Primitive("bitwise_left_shift")
bitwise_or_p = Primitive("bitwise_or")
bitwise_right_shift_p = Primitive("bitwise_right_shift")
bitwise_xor_p = Primitive("bitwise_xor")
copysign_p = Primitive("copysign")
divide_p = Primitive("divide")
equal_p = Primitive("equal")
floor_divide_p = Primitive("floor_divide")
greater_p = Primitive("greater")
greater_equal_p = Primitive("greater_equal")
hypot_p = Primitive("hypot")
less_p = Primitive("less")
less_equal_p = Primitive("less_equal")
logaddexp_p = Primitive("logaddexp")
logical_and_p = Primitive("logical_and")
logical_or_p = Primitive("logical_or")
logical_xor_p = Primitive("logical_xor")
maximum_p = Primitive("maximum")
minimum_p = Primitive("minimum")
multiply_p = Primitive("multiply")
nextafter_p = Primitive("nextafter")
not_equal_p = Primitive("not_equal")
pow_p = Primitive("pow")
remainder_p = Primitive("remainder")
subtract_p = Primitive("subtract")
clip_p = Primitive("clip")


def _accepted_by_primitive() -> dict:
    """Primitive -> the dtypes its eager fast path takes as they are, from ``UNARY``/``BINARY``:
    built once, so a call costs one dict lookup (as ``CATEGORIES[category]`` did)."""
    return {primitives[name]: _CAT[category] for table in (UNARY, BINARY) for name, category in table.items()}


_ACCEPTED = _accepted_by_primitive()
_dtypes.ON_BFLOAT16.append(lambda: _ACCEPTED.update(_accepted_by_primitive()))
ELEMENTWISE.update(UNARY, BINARY, BOUNDED)

# Each function below whose body is ``_unary(<name>_p, x)`` or ``_binary(<name>_p, x1, x2)`` is wrapped
# by ``_fast_paths.unary`` / ``.binary``: the eager fast path of ``_unary``/``_binary`` and ``run_eager1``/
# ``run_eager2``, written into the function's own frame (three frames fewer per call); the body stays
# the path for everything else (transforms, lazy() scopes, promotion, the errors).


@_fast_paths.unary
def abs(x, /):
    """Absolute value ``|x|``; real-valued for complex input."""
    return _unary(abs_p, x)

@_fast_paths.unary
def acos(x, /):
    """Inverse cosine."""
    return _unary(acos_p, x)

@_fast_paths.unary
def acosh(x, /):
    """Inverse hyperbolic cosine."""
    return _unary(acosh_p, x)

@_fast_paths.binary
def add(x1, x2, /):
    """x1 + x2."""
    return _binary(add_p, x1, x2)

@_fast_paths.unary
def asin(x, /):
    """Inverse sine."""
    return _unary(asin_p, x)

@_fast_paths.unary
def asinh(x, /):
    """Inverse hyperbolic sine."""
    return _unary(asinh_p, x)

@_fast_paths.unary
def atan(x, /):
    """Inverse tangent."""
    return _unary(atan_p, x)

@_fast_paths.binary
def atan2(x1, x2, /):
    """Quadrant-aware inverse tangent of x1/x2."""
    return _binary(atan2_p, x1, x2)

@_fast_paths.unary
def atanh(x, /):
    """Inverse hyperbolic tangent."""
    return _unary(atanh_p, x)

@_fast_paths.binary
def bitwise_and(x1, x2, /):
    """Bitwise AND."""
    return _binary(bitwise_and_p, x1, x2)

@_fast_paths.unary
def bitwise_invert(x, /):
    """Bitwise NOT (logical NOT for bool)."""
    return _unary(bitwise_invert_p, x)

@_fast_paths.binary
def bitwise_left_shift(x1, x2, /):
    """x1 shifted left by x2 bits."""
    return _binary(bitwise_left_shift_p, x1, x2)

@_fast_paths.binary
def bitwise_or(x1, x2, /):
    """Bitwise OR."""
    return _binary(bitwise_or_p, x1, x2)

@_fast_paths.binary
def bitwise_right_shift(x1, x2, /):
    """x1 shifted right by x2 bits."""
    return _binary(bitwise_right_shift_p, x1, x2)

@_fast_paths.binary
def bitwise_xor(x1, x2, /):
    """Bitwise XOR."""
    return _binary(bitwise_xor_p, x1, x2)

@_fast_paths.unary
def ceil(x, /):
    """Smallest integer-valued number not less than x."""
    return _unary(ceil_p, x)

@_fast_paths.unary
def conj(x, /):
    """Complex conjugate (identity for real dtypes)."""
    return _unary(conj_p, x)

@_fast_paths.binary
def copysign(x1, x2, /):
    """Magnitude of x1 with the sign of x2."""
    return _binary(copysign_p, x1, x2)

@_fast_paths.unary
def cos(x, /):
    """Cosine."""
    return _unary(cos_p, x)

@_fast_paths.unary
def cosh(x, /):
    """Hyperbolic cosine."""
    return _unary(cosh_p, x)

@_fast_paths.binary
def divide(x1, x2, /):
    """x1 / x2.  In the default mode bool and integer operands are divided as the default float
    dtype (as NumPy 2 does); strict mode takes floating-point operands only, as the standard."""
    return _binary(divide_p, x1, x2)

@_fast_paths.binary
def equal(x1, x2, /):
    """x1 == x2."""
    return _binary(equal_p, x1, x2)

@_fast_paths.unary
def exp(x, /):
    """e raised to x."""
    return _unary(exp_p, x)

@_fast_paths.unary
def expm1(x, /):
    """exp(x) - 1, accurate for small x."""
    return _unary(expm1_p, x)

@_fast_paths.unary
def floor(x, /):
    """Largest integer-valued number not greater than x."""
    return _unary(floor_p, x)

@_fast_paths.binary
def floor_divide(x1, x2, /):
    """Floor of x1 / x2."""
    return _binary(floor_divide_p, x1, x2)

@_fast_paths.binary
def greater(x1, x2, /):
    """x1 > x2."""
    return _binary(greater_p, x1, x2)

@_fast_paths.binary
def greater_equal(x1, x2, /):
    """x1 >= x2."""
    return _binary(greater_equal_p, x1, x2)

@_fast_paths.binary
def hypot(x1, x2, /):
    """sqrt(x1**2 + x2**2) without undue overflow."""
    return _binary(hypot_p, x1, x2)

@_fast_paths.unary
def imag(x, /):
    """Imaginary part (zeros for real dtypes)."""
    return _unary(imag_p, x)

@_fast_paths.unary
def isfinite(x, /):
    """True where x is finite."""
    return _unary(isfinite_p, x)

@_fast_paths.unary
def isinf(x, /):
    """True where x is infinite."""
    return _unary(isinf_p, x)

@_fast_paths.unary
def isnan(x, /):
    """True where x is NaN."""
    return _unary(isnan_p, x)

@_fast_paths.binary
def less(x1, x2, /):
    """x1 < x2."""
    return _binary(less_p, x1, x2)

@_fast_paths.binary
def less_equal(x1, x2, /):
    """x1 <= x2."""
    return _binary(less_equal_p, x1, x2)

@_fast_paths.unary
def log(x, /):
    """Natural logarithm."""
    return _unary(log_p, x)

@_fast_paths.unary
def log10(x, /):
    """Base-10 logarithm."""
    return _unary(log10_p, x)

@_fast_paths.unary
def log1p(x, /):
    """log(1 + x), accurate for small x."""
    return _unary(log1p_p, x)

@_fast_paths.unary
def log2(x, /):
    """Base-2 logarithm."""
    return _unary(log2_p, x)

@_fast_paths.binary
def logaddexp(x1, x2, /):
    """log(exp(x1) + exp(x2)), computed stably."""
    return _binary(logaddexp_p, x1, x2)

@_fast_paths.binary
def logical_and(x1, x2, /):
    """Logical AND."""
    return _binary(logical_and_p, x1, x2)

@_fast_paths.unary
def logical_not(x, /):
    """Logical NOT."""
    return _unary(logical_not_p, x)

@_fast_paths.binary
def logical_or(x1, x2, /):
    """Logical OR."""
    return _binary(logical_or_p, x1, x2)

@_fast_paths.binary
def logical_xor(x1, x2, /):
    """Logical XOR."""
    return _binary(logical_xor_p, x1, x2)

@_fast_paths.binary
def maximum(x1, x2, /):
    """Elementwise maximum (NaN propagates)."""
    return _binary(maximum_p, x1, x2)

@_fast_paths.binary
def minimum(x1, x2, /):
    """Elementwise minimum (NaN propagates)."""
    return _binary(minimum_p, x1, x2)

@_fast_paths.binary
def multiply(x1, x2, /):
    """x1 * x2."""
    return _binary(multiply_p, x1, x2)

@_fast_paths.unary
def negative(x, /):
    """-x."""
    return _unary(negative_p, x)

@_fast_paths.binary
def nextafter(x1, x2, /):
    """Next representable value after x1 towards x2."""
    return _binary(nextafter_p, x1, x2)

@_fast_paths.binary
def not_equal(x1, x2, /):
    """x1 != x2."""
    return _binary(not_equal_p, x1, x2)

@_fast_paths.unary
def positive(x, /):
    """+x."""
    return _unary(positive_p, x)

def pow(x1, x2, /):
    """x1 raised to x2.  Integers to negative integer powers raise ValueError (see ``_integer_pow``)."""
    if _is_integer(x1) and _is_integer(x2):
        return _integer_pow(x1, x2)
    return _binary(pow_p, x1, x2)


def _is_integer(x) -> bool:
    if isinstance(x, (Array, np.ndarray, np.generic)):
        return x.dtype.kind in "iu"
    return isinstance(x, int) and not isinstance(x, bool)


def _integer_pow(x1, x2):
    """The rule for integer ``**`` (docs/semantics.rst): a negative exponent raises ValueError on every
    executor when its value is known (a Python int, or a concrete array: one ``any(x2 < 0)``, which
    on Dask computes only the exponent).  Staged (values unknown) the result is the truncation
    toward zero of the real power: 0 for |x1| > 1 (and for 0, as integer division by 0 gives 0),
    x1 ** x2 for |x1| == 1."""
    a1, a2 = promote_binary("pow", x1, x2, BINARY["pow"])
    if a1.dtype.kind != "i":  # unsigned after promotion: no negative exponent exists
        return pow_p.bind(a1, a2)
    from arrayx.api.utility import any as any_

    try:
        negative = a2 < 0 if not isinstance(a2, Array) else any_(a2 < 0)
        negative = negative.__bool__()
    except ConcretizationError:
        return _truncated_negative_pow(a1, a2)
    if negative:
        raise ValueError(
            f"pow: integers to negative integer powers are not allowed ({a1.dtype} base, exponent "
            f"{'array holding negative values' if isinstance(a2, Array) else int(a2)}); "
            f"cast the base to a floating dtype first, e.g. astype(x1, float64)"
        )
    return pow_p.bind(a1, a2)


def _truncated_negative_pow(a1, a2):
    from arrayx.api.creation import full_like, ones_like, zeros_like
    from arrayx.api.searching import where

    if not isinstance(a1, Array):
        a1 = full_like(a2, a1)
    negative = a2 < 0
    base = pow_p.bind(*promote_binary("pow", a1, where(negative, zeros_like(a2), a2), BINARY["pow"]))
    one = ones_like(base)
    unit = where((a2 & 1) == 0, one, -one)  # (-1) ** x2
    truncated = where(a1 == 1, one, where(a1 == -1, unit, zeros_like(base)))
    return where(negative, truncated, base)

@_fast_paths.unary
def real(x, /):
    """Real part (x itself for real dtypes)."""
    return _unary(real_p, x)

@_fast_paths.unary
def reciprocal(x, /):
    """1 / x."""
    return _unary(reciprocal_p, x)

@_fast_paths.binary
def remainder(x1, x2, /):
    """Remainder of floor division, with the sign of x2."""
    return _binary(remainder_p, x1, x2)

@_fast_paths.unary
def round(x, /):
    """Round half to even."""
    return _unary(round_p, x)

@_fast_paths.unary
def sign(x, /):
    """Sign of x (``x / |x|`` for complex)."""
    return _unary(sign_p, x)

@_fast_paths.unary
def signbit(x, /):
    """True where the sign bit of x is set."""
    return _unary(signbit_p, x)

@_fast_paths.unary
def sin(x, /):
    """Sine."""
    return _unary(sin_p, x)

@_fast_paths.unary
def sinh(x, /):
    """Hyperbolic sine."""
    return _unary(sinh_p, x)

@_fast_paths.unary
def sqrt(x, /):
    """Principal square root."""
    return _unary(sqrt_p, x)

@_fast_paths.unary
def square(x, /):
    """x * x."""
    return _unary(square_p, x)

@_fast_paths.binary
def subtract(x1, x2, /):
    """x1 - x2."""
    return _binary(subtract_p, x1, x2)

@_fast_paths.unary
def tan(x, /):
    """Tangent."""
    return _unary(tan_p, x)

@_fast_paths.unary
def tanh(x, /):
    """Hyperbolic tangent."""
    return _unary(tanh_p, x)

@_fast_paths.unary
def trunc(x, /):
    """Round towards zero."""
    return _unary(trunc_p, x)


def clip(x, /, min=None, max=None):  # noqa: A002 - the standard's names
    """Clamp x to [min, max]; min/max are arrays or Python scalars; the result has x's dtype."""
    x = as_array("clip", x)
    accepted = _CAT[BOUNDED["clip"]]
    if x.dtype not in accepted:
        raise TypeError(f"clip: x must have {with_article(BOUNDED['clip'])} dtype, got {x.dtype}")
    bounds = []
    for name, b in (("min", min), ("max", max)):
        if b is None:
            bounds.append(None)
        elif isinstance(b, Array):
            if b.dtype not in accepted:
                raise TypeError(f"clip: {name} must have {with_article(BOUNDED['clip'])} dtype, got {b.dtype}")
            bounds.append(cast(b, x.dtype))
        elif isinstance(b, (bool, int, float)):
            if x.dtype.kind in "iu" and isinstance(b, float):
                raise TypeError(f"clip: {name}={b!r} is a float but x has integer dtype {x.dtype}; pass an int")
            if x.dtype.kind in "iu":
                info = np.iinfo(x.dtype)  # out-of-range integer bounds clamp to the dtype's range
                b = info.min if b < info.min else info.max if b > info.max else b
            bounds.append(x.dtype.type(b))
        else:
            raise TypeError(f"clip: {name} must be an arrayx array, a Python scalar or None, got {type(b).__name__}")
    return clip_p.bind(x, *bounds)


# the functions ``x op= y`` (and a temporary's ``t op y``) run as their ufunc into x itself (api/_inplace.py)
_inplace.INTO_PRIMS.update({
    **{globals()[name]: (globals()[f"{name}_p"], BINARY[name])
       for name in ("add", "subtract", "multiply", "floor_divide", "remainder",
                    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift")},
    pow: (pow_p, "floating-point"),  # pow and divide of integers take other paths: floats only here
    divide: (divide_p, "real floating"),
})
