"""Searching functions (the standard's "Searching Functions" category).

Index results have the default index dtype of the array's device (``int64``; ``int32`` on a TPU,
``api/_device_dtypes.py``).
``where`` promotes ``x1``/``x2`` (Python scalars allowed, as in 2024.12+) and,
under a transform, broadcasts all three operands before binding;
``searchsorted`` applies ``sorter`` with ``take`` so its primitive only sees a
sorted ``x1``.
"""
from __future__ import annotations

from arrayx.api import _dtypes
from arrayx.api._array import Array
from arrayx.api._device_dtypes import index_params
from arrayx.api._checks import (
    array_arg, broadcast_shapes_for, cast, normalize_axes, normalize_axis, promote_binary, promote_dtypes,
    scalar_operand,
)
from arrayx.core.primitives import Primitive, _TRACE, run_eager

__all__ = ["argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where"]

_CAT = _dtypes.CATEGORIES

argmax_p = Primitive("argmax")
argmin_p = Primitive("argmin")
count_nonzero_p = Primitive("count_nonzero")
nonzero_p = Primitive("nonzero", multiple_results=True)
searchsorted_p = Primitive("searchsorted")
where_p = Primitive("where")


def _arg_reduce(fname: str, prim: Primitive, x, axis, keepdims) -> Array:
    x = array_arg(fname, x)
    if x.dtype not in _CAT["real-valued"]:
        raise TypeError(f"{fname}: x must have a real-valued dtype, got {x.dtype}; compare abs(x) or real(x)")
    if axis is None:
        if x.size == 0:
            raise ValueError(f"{fname}: x is empty (shape {x.shape}); there is no index to return")
    else:
        axis = normalize_axis(fname, axis, x.ndim)
        if x.shape[axis] == 0:
            raise ValueError(f"{fname}: axis {axis} of x (shape {x.shape}) is empty; there is no index to return")
    index = index_params(x)  # {} on 64-bit devices: the plain call, without unpacking (hot path)
    if index:
        return prim.bind(x, axis=axis, keepdims=bool(keepdims), **index)
    return prim.bind(x, axis=axis, keepdims=bool(keepdims))


def argmax(x, /, *, axis: int | None = None, keepdims: bool = False) -> Array:
    """Index of the first maximum along ``axis`` (of the flattened array when None)."""
    return _arg_reduce("argmax", argmax_p, x, axis, keepdims)


def argmin(x, /, *, axis: int | None = None, keepdims: bool = False) -> Array:
    """Index of the first minimum along ``axis`` (of the flattened array when None)."""
    return _arg_reduce("argmin", argmin_p, x, axis, keepdims)


def count_nonzero(x, /, *, axis=None, keepdims: bool = False) -> Array:
    """Number of non-zero elements along ``axis`` (all axes when None), as the default index dtype."""
    x = array_arg("count_nonzero", x)
    axes = normalize_axes("count_nonzero", axis, x.ndim)
    index = index_params(x)
    if index:
        return count_nonzero_p.bind(x, axis=axes, keepdims=bool(keepdims), **index)
    return count_nonzero_p.bind(x, axis=axes, keepdims=bool(keepdims))


def nonzero(x, /) -> tuple:
    """Indices of the non-zero elements, one index array per dimension (row-major order)."""
    x = array_arg("nonzero", x)
    if x.ndim == 0:
        raise ValueError("nonzero: x must have at least one dimension; use reshape(x, (1,)) for a 0-d array")
    return tuple(nonzero_p.bind(x, **index_params(x)))


def searchsorted(x1, x2, /, *, side: str = "left", sorter=None) -> Array:
    """Indices where the values ``x2`` would be inserted into the ascending 1-D ``x1``."""
    x1 = array_arg("searchsorted", x1, "x1")
    if x1.ndim != 1:
        raise ValueError(f"searchsorted: x1 must be 1-D, got shape {x1.shape}")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if x1.dtype not in _CAT["real-valued"]:
        raise TypeError(f"searchsorted: x1 must have a real-valued dtype, got {x1.dtype}")
    if sorter is not None:
        sorter = array_arg("searchsorted", sorter, "sorter")
        if sorter.dtype.kind not in "iu" or sorter.shape != x1.shape:
            raise ValueError(
                f"searchsorted: sorter must be an integer array shaped like x1 {x1.shape}, "
                f"got {sorter.dtype} of shape {sorter.shape}"
            )
        from arrayx.api.indexing import take

        x1 = take(x1, sorter)
    if not isinstance(x2, (Array, bool, int, float)):
        x2 = array_arg("searchsorted", x2, "x2")  # a NumPy array in the default mode
    if isinstance(x2, Array):
        if x2.dtype not in _CAT["real-valued"]:
            raise TypeError(f"searchsorted: x2 must have a real-valued dtype, got {x2.dtype}")
        if x2.dtype != x1.dtype:
            dt = promote_dtypes("searchsorted", (x1.dtype, x2.dtype))
            x1, x2 = cast(x1, dt), cast(x2, dt)
    elif isinstance(x2, (bool, int, float)):
        dt = _dtypes.scalar_result_dtype(x1.dtype, x2)
        x1, x2 = cast(x1, dt), scalar_operand("searchsorted", x2, dt)
    else:
        raise TypeError(
            f"searchsorted: x2 must be an arrayx array or a Python int/float, got {type(x2).__name__}"
        )
    index = index_params(x1)
    return searchsorted_p.bind(x1, x2, side=side, **index) if index else searchsorted_p.bind(x1, x2, side=side)


def where(condition, x1, x2, /) -> Array:
    """Elements of ``x1`` where ``condition`` is True, else of ``x2`` (scalars allowed for x1/x2)."""
    if condition.__class__ is Array and _TRACE.get() is None and condition.dtype == _dtypes.bool:
        # eager fast path: a bool condition and operands of one executor straight to its where
        # (4.3 -> ~2 us); two arrays of one dtype need no promotion, a scalar its usual rule
        ex = condition._ex
        if x1.__class__ is Array and x2.__class__ is Array and x1.dtype == x2.dtype:
            a1, a2 = x1, x2
        else:
            a1, a2 = promote_binary("where", x1, x2, "all")
        c1, c2 = a1.__class__ is Array, a2.__class__ is Array
        s = condition.shape
        if (c1 and a1.shape != s) or (c2 and a2.shape != s):
            broadcast_shapes_for("where", s, *[a.shape for a in (a1, a2) if a.__class__ is Array])
        if (not c1 or a1._ex is ex) and (not c2 or a2._ex is ex):
            return run_eager(where_p, ex, (condition._buf, a1._buf if c1 else a1, a2._buf if c2 else a2), {})
        return where_p.bind(condition, a1, a2)
    condition = array_arg("where", condition, "condition")
    if condition.dtype != _dtypes.bool:
        raise TypeError(
            f"where: condition must have a bool dtype, got {condition.dtype}; use e.g. x != 0 "
            f"or astype(x, arrayx.bool)"
        )
    x1, x2 = promote_binary("where", x1, x2, "all")
    shapes = [condition.shape] + [a.shape for a in (x1, x2) if isinstance(a, Array)]
    shape = broadcast_shapes_for("where", *shapes)
    if _TRACE.get() is not None:
        from arrayx.api.manipulation import broadcast_to

        condition, x1, x2 = (
            broadcast_to(a, shape) if isinstance(a, Array) and a.shape != shape else a
            for a in (condition, x1, x2)
        )
    return where_p.bind(condition, x1, x2)
