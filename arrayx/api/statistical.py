"""Statistical functions (the standard's "Statistical Functions" category).

Reductions take ``axis`` as None (all axes), an int or a tuple of ints, which
is normalised to a sorted tuple of non-negative ints before binding.
Accumulation dtypes follow the standard: ``sum``, ``prod``, ``cumulative_sum``
and ``cumulative_prod`` of a narrower integer type give the default integer of
the same signedness (``int64`` / ``uint64``; ``int32`` / ``uint32`` on a TPU), bools give the
default integer, and the resolved dtype is always passed to the primitive.  ``mean``, ``std`` and
``var`` compute bool and integer input in the default float dtype (NumPy 2, JAX); strict mode
(``arrayx.strict()``) refuses it, as the standard does.  "Default" is the default of x's device
(``api/_device_dtypes.py``).
"""
from __future__ import annotations

import math

from arrayx.api import _device_dtypes, _dtypes
from arrayx.api._array import Array
from arrayx.api._checks import as_array, normalize_axes, normalize_axis, with_article
from arrayx.api._modes import is_strict
from arrayx.core import primitives as _prims
from arrayx.core.primitives import _TRACE, Primitive, _object_new

__all__ = [
    "cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var",
]

_CAT = _dtypes.CATEGORIES
_trace_now = _TRACE.get  # the active trace, None when eager (bound once: the fast paths call it)
_UNIFORM = _device_dtypes._uniform  # executor name -> the defaults all its devices share

cumulative_prod_p = Primitive("cumulative_prod")
cumulative_sum_p = Primitive("cumulative_sum")
max_p = Primitive("max")
mean_p = Primitive("mean")
min_p = Primitive("min")
prod_p = Primitive("prod")
std_p = Primitive("std")
sum_p = Primitive("sum")
var_p = Primitive("var")


def _check(fname: str, x, category: str, hint: str = "") -> Array:
    """``x`` checked (a Python scalar becomes a 0-d array in the default mode, see ``as_array``)."""
    x = as_array(fname, x)
    if x.dtype not in _CAT[category]:
        raise TypeError(f"{fname}: x must have {with_article(category)} dtype, got {x.dtype}{hint}")
    return x


def _check_float(fname: str, x, category: str, hint: str) -> Array:
    """``x`` for a floating-point statistic: bool and integer input is computed in the default
    float dtype in the default mode (NumPy 2, JAX), and refused in strict mode (the standard)."""
    x = as_array(fname, x)
    if x.dtype.kind in "biu" and not is_strict():
        from arrayx.api.data_types import astype

        return astype(x, _device_dtypes.for_array(x).real)
    return _check(fname, x, category, hint + ("; strict mode refuses it" if is_strict() else ""))


def _check_summable(fname: str, x) -> Array:
    x = as_array(fname, x)
    if x.dtype not in _CAT["numeric"] and x.dtype != _dtypes.bool:
        raise TypeError(f"{fname}: x must have a numeric (or bool) dtype, got {x.dtype}")
    return x


def accumulation_dtype(fname: str, x: Array, dtype):
    """The result dtype of a sum/product of x: ``dtype`` if given, else the standard's default (the
    default integer of x's device, of x's signedness, for narrower integers and bools)."""
    if dtype is not None:
        dt = _dtypes.as_dtype(dtype, fname)
        if x.dtype.kind == "c" and dt.kind != "c":
            raise TypeError(
                f"{fname}: dtype={dt} would drop the imaginary part of the complex x; take real(x) first"
            )
        if dt in _device_dtypes.WIDE and dt != x.dtype:  # an explicit 64-bit request: the device's setting
            dd = _device_dtypes.for_array(x)
            if not dd.native64:
                dt = _device_dtypes.requested(dt, dd, x._ex, x.device, fname)
        return dt
    kind = x.dtype.kind
    if kind not in "biu":
        return x.dtype
    dd = _UNIFORM.get(x._ex.name) or _device_dtypes.for_array(x)  # for_array's first step, inline
    if kind == "b":
        return dd.integral
    if kind == "i" and x.dtype.itemsize < dd.integral.itemsize:
        return dd.integral
    if kind == "u" and x.dtype.itemsize < dd.unsigned.itemsize:
        return dd.unsigned
    return x.dtype


def _reduced_size(x: Array, axes) -> int | None:
    shape = x.shape
    dims = shape if axes is None else [shape[a] for a in axes]
    if any(d is None for d in dims):
        return None
    return math.prod(dims)


# -- sums and products --------------------------------------------------------------------

def sum(x, /, *, axis=None, dtype=None, keepdims: bool = False) -> Array:  # noqa: A001
    """Sum of x over ``axis``; narrower integers accumulate in the default integer type."""
    if x.__class__ is Array and dtype is None:
        # eager fast path for a floating array: the same call the primitive would make (class, buffer
        # and executor read with no call between them: a lazy() scope in another thread may change them)
        buf = x._buf
        ex = x._ex
        dt = buf.dtype
        if dt.kind in "fc" and (axis is None or axis.__class__ is int) and _trace_now() is None:
            axes = None if axis is None else (normalize_axis("sum", axis, buf.ndim),)
            keepdims = bool(keepdims)
            # run_eager, spelled out with the params as keywords (``fn(*bufs, **params)`` costs ~0.2 us)
            fn = ex.impls.get(sum_p) or ex.resolve(sum_p)
            out = fn(buf, axis=axes, dtype=dt, keepdims=keepdims)
            if out.__class__ is not ex.array_type:
                out = ex.coerce(out)
            if _prims.eager_hook is not None:
                out = _prims.eager_hook(sum_p, ex, (buf,), {"axis": axes, "dtype": dt, "keepdims": keepdims}, out)
            new = _object_new(Array)
            new._buf = out
            new._ex = ex
            return new
    x = _check_summable("sum", x)
    axes = normalize_axes("sum", axis, x.ndim)
    return sum_p.bind(x, axis=axes, dtype=accumulation_dtype("sum", x, dtype), keepdims=bool(keepdims))


def prod(x, /, *, axis=None, dtype=None, keepdims: bool = False) -> Array:
    """Product of x over ``axis``; narrower integers accumulate in the default integer type."""
    x = _check_summable("prod", x)
    axes = normalize_axes("prod", axis, x.ndim)
    return prod_p.bind(x, axis=axes, dtype=accumulation_dtype("prod", x, dtype), keepdims=bool(keepdims))


def _cumulative(fname: str, prim: Primitive, x, axis, dtype, include_initial) -> Array:
    x = _check_summable(fname, x)
    if x.ndim == 0:
        raise ValueError(f"{fname}: x must have at least one dimension, got a 0-d array")
    if axis is None:
        if x.ndim > 1:
            raise ValueError(
                f"{fname}: axis is required for a {x.ndim}-D array (shape {x.shape}); pass axis=..., "
                f"or reshape(x, (-1,)) to accumulate over all elements"
            )
        axis = 0
    axis = normalize_axis(fname, axis, x.ndim)
    return prim.bind(
        x, axis=axis, dtype=accumulation_dtype(fname, x, dtype), include_initial=bool(include_initial)
    )


def cumulative_sum(x, /, *, axis: int | None = None, dtype=None, include_initial: bool = False) -> Array:
    """Running sum of x along ``axis`` (starting with 0 when ``include_initial``)."""
    return _cumulative("cumulative_sum", cumulative_sum_p, x, axis, dtype, include_initial)


def cumulative_prod(x, /, *, axis: int | None = None, dtype=None, include_initial: bool = False) -> Array:
    """Running product of x along ``axis`` (starting with 1 when ``include_initial``)."""
    return _cumulative("cumulative_prod", cumulative_prod_p, x, axis, dtype, include_initial)


# -- extrema ---------------------------------------------------------------------------------

def _extremum(fname: str, prim: Primitive, x, axis, keepdims) -> Array:
    x = _check(fname, x, "real-valued", "; compare abs(x) or real(x) for complex values")
    axes = normalize_axes(fname, axis, x.ndim)
    if _reduced_size(x, axes) == 0:
        raise ValueError(
            f"{fname}: reducing over an empty axis of x (shape {x.shape}) has no identity; "
            f"the result is undefined"
        )
    return prim.bind(x, axis=axes, keepdims=bool(keepdims))


def max(x, /, *, axis=None, keepdims: bool = False) -> Array:  # noqa: A001
    """Maximum of x over ``axis`` (NaNs propagate)."""
    return _extremum("max", max_p, x, axis, keepdims)


def min(x, /, *, axis=None, keepdims: bool = False) -> Array:  # noqa: A001
    """Minimum of x over ``axis`` (NaNs propagate)."""
    return _extremum("min", min_p, x, axis, keepdims)


# -- moments ----------------------------------------------------------------------------------

_FLOAT_HINT = "; cast integer input first, e.g. astype(x, arrayx.float64) (float32 on a TPU)"


def mean(x, /, *, axis=None, keepdims: bool = False) -> Array:
    """Arithmetic mean of x over ``axis`` (NaN for an empty reduction).

    Integer and bool input is averaged as the default float dtype (NumPy 2, JAX); strict mode
    refuses it, as array-api-strict does.
    """
    x = _check_float("mean", x, "floating-point", _FLOAT_HINT)
    axes = normalize_axes("mean", axis, x.ndim)
    return mean_p.bind(x, axis=axes, keepdims=bool(keepdims))


def _moment(fname: str, prim: Primitive, x, axis, correction, keepdims) -> Array:
    x = _check_float(fname, x, "real floating", _FLOAT_HINT)
    if isinstance(correction, bool) or not isinstance(correction, (int, float)):
        raise TypeError(f"{fname}: correction must be an int or a float, got {type(correction).__name__}")
    axes = normalize_axes(fname, axis, x.ndim)
    out = prim.bind(x, axis=axes, correction=correction, keepdims=bool(keepdims))
    m = _reduced_size(x, axes)
    if m is not None and m - correction <= 0:
        # the standard asks for NaN when M - correction <= 0 (libraries differ: inf, nan)
        from arrayx.api.elementwise import multiply

        out = multiply(out, math.nan)
    return out


def std(x, /, *, axis=None, correction: int | float = 0.0, keepdims: bool = False) -> Array:
    """Standard deviation of x over ``axis`` with divisor ``M - correction``."""
    return _moment("std", std_p, x, axis, correction, keepdims)


def var(x, /, *, axis=None, correction: int | float = 0.0, keepdims: bool = False) -> Array:
    """Variance of x over ``axis`` with divisor ``M - correction``."""
    return _moment("var", var_p, x, axis, correction, keepdims)
