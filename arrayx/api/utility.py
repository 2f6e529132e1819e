"""Utility functions (the standard's "Utility Functions" category).

``all``/``any`` reduce to bools over ``axis`` (normalised to a sorted tuple).
``diff`` joins ``prepend``/``append`` onto x with ``concat`` (promoting dtypes)
before binding, so its primitive only takes ``axis`` and ``n``.
"""
from __future__ import annotations

import builtins

from arrayx.api import _dtypes
from arrayx.api._array import Array
from arrayx.api._checks import array_arg, array_args, int_arg, normalize_axes, normalize_axis
from arrayx.api._modes import is_strict
from arrayx.core.primitives import Primitive

__all__ = ["all", "any", "diff"]

all_p = Primitive("all")
any_p = Primitive("any")
diff_p = Primitive("diff")


def all(x, /, *, axis=None, keepdims: bool = False) -> Array:  # noqa: A001
    """Whether every element along ``axis`` is truthy (True for an empty reduction)."""
    x = array_arg("all", x)
    return all_p.bind(x, axis=normalize_axes("all", axis, x.ndim), keepdims=bool(keepdims))


def any(x, /, *, axis=None, keepdims: bool = False) -> Array:  # noqa: A001
    """Whether some element along ``axis`` is truthy (False for an empty reduction)."""
    x = array_arg("any", x)
    return any_p.bind(x, axis=normalize_axes("any", axis, x.ndim), keepdims=bool(keepdims))


def diff(x, /, *, axis: int = -1, n: int = 1, prepend=None, append=None) -> Array:
    """The n-th discrete difference ``out[i] = x[i+1] - x[i]`` along ``axis``."""
    x = array_arg("diff", x)
    if x.dtype not in _dtypes.CATEGORIES["numeric"] and x.dtype != _dtypes.bool:
        raise TypeError(f"diff: x must have a numeric dtype, got {x.dtype}")
    if x.ndim == 0:
        raise ValueError("diff: x must have at least one dimension, got a 0-d array")
    axis = normalize_axis("diff", axis, x.ndim)
    n = int_arg("diff", n, "n")
    if n < 0:
        raise ValueError(f"diff: n must be non-negative, got {n}")
    if prepend is not None or append is not None:
        from arrayx.api.manipulation import broadcast_to, concat

        names = [n for n, v in (("prepend", prepend), ("x", x), ("append", append)) if v is not None]
        # a Python scalar is weak beside x (default mode); a 0-d value spans x along axis, as in NumPy
        values = array_args("diff", [v for v in (prepend, x, append) if v is not None], names)
        parts = []
        for name, extra in zip(names, values):
            if extra.ndim == 0 and name != "x" and not is_strict():
                extra = broadcast_to(extra, x.shape[:axis] + (1,) + x.shape[axis + 1:])
            if extra.ndim != x.ndim or builtins.any(
                j != axis and d != e for j, (d, e) in enumerate(zip(extra.shape, x.shape))
            ):
                raise ValueError(
                    f"diff: {name} has shape {extra.shape}, but must match x's shape {x.shape} "
                    f"except along axis {axis}"
                )
            parts.append(extra)
        x = concat(parts, axis=axis)
    if n == 0:
        return x
    return diff_p.bind(x, axis=axis, n=n)
