"""Rules for the elementwise functions (``arrayx/api/elementwise.py``).

Formulas are the usual calculus ones, written so that the coefficient multiplying
the tangent is computed from primals (one multiplication is recorded under reverse
mode).  Complex inputs follow JAX's conventions: holomorphic functions multiply by
f'(x); transposes do not conjugate.  Ties of maximum/minimum split the tangent
evenly between the operands, as JAX does.
"""
from __future__ import annotations

import math

from arrayx import api as ax
from arrayx.api import _dtypes
from arrayx.api import elementwise as ew
from arrayx.api._array import Array
from arrayx.api._checks import broadcast_shapes_for
from arrayx.core.tracers import ShapeDtypeStruct, is_weak
from arrayx.transforms.rules._define import (
    defabstract, defbilinear, defbroadcasting, defjvp, defjvp_coef, defjvp_zero, deflinear, is_undefined,
)


def _float_mask(mask, like):
    """A boolean mask as 1.0/0.0 of ``like``'s dtype."""
    return ax.astype(mask, like.dtype)


# -- abstract evaluation ----------------------------------------------------------------------

_BOOL_RESULT = {
    "isfinite", "isinf", "isnan", "logical_not", "signbit", "equal", "not_equal", "greater",
    "greater_equal", "less", "less_equal", "logical_and", "logical_or", "logical_xor",
}
_REAL_RESULT = {"abs", "real", "imag"}


_BOOL = _dtypes.bool
_REAL_OF = _dtypes.REAL_OF
_trusted = ShapeDtypeStruct._trusted


def _elementwise_abstract(name):
    """Shape/dtype of an elementwise result: the (broadcast) operand shape, the operands' dtype
    (they are promoted already), bool for predicates, real for abs/real/imag."""
    if name in _BOOL_RESULT:
        def result_dtype(dt):
            return _BOOL
    elif name in _REAL_RESULT:
        def result_dtype(dt):
            return _REAL_OF.get(dt, dt)
    else:
        def result_dtype(dt):
            return dt

    def rule(*args, **params):
        shape = dtype = None
        weak = True  # weakly typed when every array operand is (scalar literals are)
        for a in args:
            if isinstance(a, Array):
                weak = weak and is_weak(a)
                if shape is None:
                    shape, dtype = a.shape, a.dtype
                elif a.shape != shape:  # operands broadcast implicitly (clip bounds)
                    shape = broadcast_shapes_for(name, *(b.shape for b in args if isinstance(b, Array)))
        return _trusted(tuple(shape), result_dtype(dtype), weak)

    rule.__name__ = f"{name}_abstract"
    return rule


for _name in [*ew.UNARY, *ew.BINARY, *ew.BOUNDED]:
    defabstract(getattr(ew, f"{_name}_p"), _elementwise_abstract(_name))


# -- not differentiable --------------------------------------------------------------------------

defjvp_zero(
    ew.bitwise_invert_p, ew.ceil_p, ew.floor_p, ew.round_p, ew.trunc_p, ew.sign_p, ew.signbit_p,
    ew.isfinite_p, ew.isinf_p, ew.isnan_p, ew.logical_not_p,
    ew.bitwise_and_p, ew.bitwise_or_p, ew.bitwise_xor_p, ew.bitwise_left_shift_p,
    ew.bitwise_right_shift_p, ew.equal_p, ew.not_equal_p, ew.greater_p, ew.greater_equal_p,
    ew.less_p, ew.less_equal_p, ew.logical_and_p, ew.logical_or_p, ew.logical_xor_p,
    ew.floor_divide_p, ew.nextafter_p,
)


# -- unary: t * f'(x) -----------------------------------------------------------------------------

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)

defjvp_coef(ew.sin_p, lambda y, x: ax.cos(x))
defjvp_coef(ew.cos_p, lambda y, x: -ax.sin(x))
defjvp_coef(ew.tan_p, lambda y, x: 1.0 + y * y)
defjvp_coef(ew.asin_p, lambda y, x: 1.0 / ax.sqrt(1.0 - x * x))
defjvp_coef(ew.acos_p, lambda y, x: -1.0 / ax.sqrt(1.0 - x * x))
defjvp_coef(ew.atan_p, lambda y, x: 1.0 / (1.0 + x * x))
defjvp_coef(ew.sinh_p, lambda y, x: ax.cosh(x))
defjvp_coef(ew.cosh_p, lambda y, x: ax.sinh(x))
defjvp_coef(ew.tanh_p, lambda y, x: 1.0 - y * y)
defjvp_coef(ew.asinh_p, lambda y, x: 1.0 / ax.sqrt(x * x + 1.0))
defjvp_coef(ew.acosh_p, lambda y, x: 1.0 / (ax.sqrt(x - 1.0) * ax.sqrt(x + 1.0)))
defjvp_coef(ew.atanh_p, lambda y, x: 1.0 / (1.0 - x * x))
defjvp_coef(ew.exp_p, lambda y, x: y)
defjvp_coef(ew.expm1_p, lambda y, x: y + 1.0)
defjvp_coef(ew.log_p, lambda y, x: 1.0 / x)
defjvp_coef(ew.log1p_p, lambda y, x: 1.0 / (1.0 + x))
defjvp_coef(ew.log2_p, lambda y, x: 1.0 / (x * _LN2))
defjvp_coef(ew.log10_p, lambda y, x: 1.0 / (x * _LN10))
defjvp_coef(ew.sqrt_p, lambda y, x: 0.5 / y)
defjvp_coef(ew.reciprocal_p, lambda y, x: -(y * y))
defjvp_coef(ew.square_p, lambda y, x: 2.0 * x)


def _abs_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    out = ew.abs_p.bind(x)
    if x.dtype.kind == "c":
        # d|x| = Re(conj(x) t) / |x|, taken as 0 at x = 0
        safe = ax.where(out == 0, ax.ones_like(out), out)
        coef = ax.conj(x) / ax.astype(safe, x.dtype)
        return out, ax.real(t * coef)
    # the derivative at 0 is taken as +1 (as JAX)
    return out, t * (2.0 * _float_mask(x >= 0, x) - 1.0)


ew.abs_p.jvp = _abs_jvp


# -- linear unary -----------------------------------------------------------------------------------

deflinear(ew.negative_p, lambda ct, x: (-ct,))
deflinear(ew.positive_p, lambda ct, x: (ct,))
deflinear(ew.conj_p, lambda ct, x: (ax.conj(ct),))


def _real_transpose(ct, x):
    if x.dtype.kind == "c":
        return (ax.astype(ct, x.dtype),)
    return (ct,)


def _imag_transpose(ct, x):
    if x.dtype.kind == "c":
        return (ct * (-1j),)
    return (None,)


deflinear(ew.real_p, _real_transpose)


def _imag_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    out = ew.imag_p.bind(x)
    if x.dtype.kind != "c":
        return out, None
    return out, ew.imag_p.bind(t)


ew.imag_p.jvp = _imag_jvp
ew.imag_p.transpose = _imag_transpose


# -- binary ------------------------------------------------------------------------------------------


def _neg(t, *_):
    return -t


def _ident(t, *_):
    return t


defjvp(ew.add_p, _ident, _ident)
defjvp(ew.subtract_p, _ident, _neg)


def _add_transpose(ct, x1, x2):
    return (ct if is_undefined(x1) else None, ct if is_undefined(x2) else None)


def _subtract_transpose(ct, x1, x2):
    return (ct if is_undefined(x1) else None, -ct if is_undefined(x2) else None)


ew.add_p.transpose = _add_transpose
ew.subtract_p.transpose = _subtract_transpose

defbilinear(ew.multiply_p, lambda ct, x, y: ct * y, lambda ct, x, y: x * ct)


def _divide_rhs(t, out, x1, x2):
    return t * (-out / x2)


defjvp(ew.divide_p, lambda t, out, x1, x2: t / x2, _divide_rhs)


def _divide_transpose(ct, x1, x2):
    if is_undefined(x2):
        raise ValueError("divide: not linear in its denominator")
    return (ct / x2, None)


ew.divide_p.transpose = _divide_transpose


def _atan2_coef(x1, x2):
    return 1.0 / (x1 * x1 + x2 * x2)


defjvp(
    ew.atan2_p,
    lambda t, out, x1, x2: t * (x2 * _atan2_coef(x1, x2)),
    lambda t, out, x1, x2: t * (-x1 * _atan2_coef(x1, x2)),
)


def _copysign_lhs(t, out, x1, x2):
    same = ax.signbit(x1) == (ax.signbit(x2) if hasattr(x2, "shape") else (math.copysign(1.0, x2) < 0))
    return t * (2.0 * _float_mask(same, t) - 1.0)


defjvp(ew.copysign_p, _copysign_lhs, lambda t, *_: None)

defjvp(ew.hypot_p, lambda t, out, x1, x2: t * (x1 / out), lambda t, out, x1, x2: t * (x2 / out))
defjvp(
    ew.logaddexp_p,
    lambda t, out, x1, x2: t * ax.exp(x1 - out),
    lambda t, out, x1, x2: t * ax.exp(x2 - out),
)


def _extremum_share(mine, other, out, like, beats):
    """Share of the tangent an operand of maximum/minimum gets: 1 if it won, 1/2 on ties, 0 if it lost
    (or a NaN is involved: the result is NaN and equals neither operand).

    Counted in bytes, then scaled once: (mine == out) + (mine strictly beats other) is 2 for a win, 1
    for a tie, 0 otherwise, and half of it is the share, exactly (the values of won / (1 + tie), which
    took two casts to floating point, an add and a division: a relu's derivative is two passes over
    the activations' floating-point memory, not four)."""
    count = ax.astype(mine == out, _dtypes.int8) + beats(mine, other)
    return ax.astype(count, like.dtype) * 0.5


def _greater(a, b):
    return a > b


def _less(a, b):
    return a < b


defjvp(
    ew.maximum_p,
    lambda t, out, x1, x2: t * _extremum_share(x1, x2, out, t, _greater),
    lambda t, out, x1, x2: t * _extremum_share(x2, x1, out, t, _greater),
)
defjvp(
    ew.minimum_p,
    lambda t, out, x1, x2: t * _extremum_share(x1, x2, out, t, _less),
    lambda t, out, x1, x2: t * _extremum_share(x2, x1, out, t, _less),
)


def _pow_base(t, out, x1, x2):
    if not hasattr(x2, "shape"):
        if x2 == 0:
            return None
        if x2 == 1:
            return t
        if x2 == 2:
            return t * (2.0 * x1)
        return t * (x2 * x1 ** (x2 - 1))
    coef = x2 * x1 ** (x2 - 1)
    return t * ax.where(x2 == 0, ax.zeros_like(coef), coef)


def _pow_exponent(t, out, x1, x2):
    if not hasattr(x1, "shape"):
        if x1 == 0:
            return None
        return t * (out * _scalar_log(x1))
    safe = ax.where(x1 == 0, ax.ones_like(x1), x1)
    return t * ax.where(x1 == 0, ax.zeros_like(out), out * ax.log(safe))


def _scalar_log(v):
    import cmath

    if isinstance(v, complex) or v < 0:
        return cmath.log(v) if isinstance(v, complex) else math.nan
    return math.log(v)


defjvp(ew.pow_p, _pow_base, _pow_exponent)

defjvp(
    ew.remainder_p,
    lambda t, out, x1, x2: t,
    lambda t, out, x1, x2: t * (-ax.floor_divide(x1, x2)),
)


# -- clip: the bounds may be smaller than x (they are not broadcast before binding) ------------------

defbroadcasting(ew.clip_p)


def _clip_masks(x, lo, hi):
    below = (x < lo) if lo is not None else None
    above = (x > hi) if hi is not None else None
    if below is not None and above is not None:
        below = ax.logical_and(below, ax.logical_not(above))
    return below, above


def _clip_x(t, out, x, lo, hi):
    below, above = _clip_masks(x, lo, hi)
    outside = below if above is None else above if below is None else ax.logical_or(below, above)
    if outside is None:
        return t
    return t * _float_mask(ax.logical_not(outside), t)


def _clip_lo(t, out, x, lo, hi):
    below, _ = _clip_masks(x, lo, hi)
    return t * _float_mask(below, out)


def _clip_hi(t, out, x, lo, hi):
    _, above = _clip_masks(x, lo, hi)
    return t * _float_mask(above, out)


defjvp(ew.clip_p, _clip_x, _clip_lo, _clip_hi)


# -- batching: every elementwise primitive maps its operands elementwise -----------------------

from arrayx.transforms.rules._batch import defvectorized  # noqa: E402

defvectorized(*(getattr(ew, f"{_name}_p") for _name in [*ew.UNARY, *ew.BINARY, *ew.BOUNDED]))
