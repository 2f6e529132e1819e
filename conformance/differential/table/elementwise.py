"""Elementwise functions of one and two arguments, and ``clip``."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from conformance.differential import strategies as S
from conformance.differential.strategies import Input
from conformance.differential.table._core import SIGNATURES, _dt, _operand, add


def _binary(draw, fn):
    s1, s2 = draw(S.broadcast_pair())
    d1 = _dt(draw, fn)
    d2 = d1 if draw(st.booleans()) else _dt(draw, fn)
    v1, v2 = fn.params.get("pair", (fn.values, fn.values))
    a = draw(S.inputs(d1, s1, v1))
    b = _operand(draw, fn, d2, s2, v2)
    if isinstance(b, Input) and draw(st.integers(0, 5)) == 0 and fn.params.get("scalars", True):
        return (draw(S.python_scalar(d1, v1)), b), {}
    return (a, b), {}


def _inplace(draw, fn):
    """x op= y: y broadcasts to x's shape."""
    s1, s2 = draw(S.broadcast_pair())
    s1 = np.broadcast_shapes(s1, s2)
    d1 = _dt(draw, fn)
    d2 = d1 if draw(st.integers(0, 2)) else _dt(draw, fn)
    v1, v2 = fn.params.get("pair", (fn.values, fn.values))
    return (draw(S.inputs(d1, s1, v1)), _operand(draw, fn, d2, s2, v2)), {}


def _clip(draw, fn):
    x = draw(S.inputs(_dt(draw, fn), draw(S.shapes()), fn.values))
    dt = x.values.dtype.name
    kw = {}
    for key in ("min", "max"):
        choice = draw(st.integers(0, 2))
        if choice == 1:
            kw[key] = draw(S.python_scalar(dt))
        elif choice == 2:
            kw[key] = draw(S.inputs(dt, x.values.shape[draw(st.integers(0, x.values.ndim)):], fn.values))
    return (x,), kw


SIGNATURES.update(binary=_binary, inplace=_inplace, clip=_clip)

# elementwise, one argument: name -> dtype category (the standard's), value kind
UNARY = {
    "abs": "numeric", "acos": "floating", "acosh": "floating", "asin": "floating", "asinh": "floating",
    "atan": "floating", "atanh": "floating", "bitwise_invert": "integer or bool", "ceil": "real numeric",
    "conj": "numeric", "cos": "floating", "cosh": "floating", "exp": "floating", "expm1": "floating",
    "floor": "real numeric", "imag": "numeric", "isfinite": "numeric", "isinf": "numeric", "isnan": "numeric",
    "log": "floating", "log1p": "floating", "log2": "floating", "log10": "floating", "logical_not": "bool",
    "negative": "numeric", "positive": "numeric", "real": "numeric", "reciprocal": "floating",
    "round": "numeric", "sign": "numeric", "signbit": "real floating", "sin": "floating", "sinh": "floating",
    "square": "numeric", "sqrt": "floating", "tan": "floating", "tanh": "floating", "trunc": "real numeric",
}
for _name, _cat in UNARY.items():
    add(_name, dtypes=_cat)

# elementwise, two arguments: name -> (dtype category, value kinds of x1 and x2)
BINARY = {
    "add": ("numeric", None), "atan2": ("real floating", None), "bitwise_and": ("integer or bool", None),
    "bitwise_left_shift": ("integer", ("mixed", "shift")), "bitwise_or": ("integer or bool", None),
    "bitwise_right_shift": ("integer", ("mixed", "shift")), "bitwise_xor": ("integer or bool", None),
    "copysign": ("real floating", None), "divide": ("floating", None), "equal": ("any", None),
    # the standard leaves integer division by zero unspecified: integer divisors are nonzero
    "floor_divide": ("real numeric", ("mixed", "nonzero_int")), "greater": ("real numeric", None),
    "greater_equal": ("real numeric", None), "hypot": ("real floating", None), "less": ("real numeric", None),
    "less_equal": ("real numeric", None), "logaddexp": ("real floating", None), "logical_and": ("bool", None),
    "logical_or": ("bool", None), "logical_xor": ("bool", None), "maximum": ("real numeric", None),
    "minimum": ("real numeric", None), "multiply": ("numeric", None), "nextafter": ("real floating", None),
    "not_equal": ("any", None),
    # negative integer powers are unspecified for integers: exponents are small and non-negative
    "pow": ("numeric", ("mixed", "pow_exponent")),
    "remainder": ("real numeric", ("mixed", "nonzero_int")), "subtract": ("numeric", None),
}
for _name, (_cat, _values) in BINARY.items():
    add(_name, "binary", _cat, **({"pair": _values} if _values else {}))


add("clip", "clip", "real numeric")
