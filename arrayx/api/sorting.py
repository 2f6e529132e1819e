"""Sorting functions (the standard's "Sorting Functions" category).

``sort`` and ``argsort`` sort along one axis, ascending unless ``descending``;
``stable=True`` (the default) keeps equal elements in their original order in
both directions.  ``argsort`` returns the default index dtype of x's device.
"""
from __future__ import annotations

from arrayx.api import _dtypes
from arrayx.api._array import Array
from arrayx.api._checks import array_arg, normalize_axis
from arrayx.api._device_dtypes import index_params
from arrayx.core.primitives import Primitive

__all__ = ["argsort", "sort"]

argsort_p = Primitive("argsort")
sort_p = Primitive("sort")


def _sort_args(fname: str, x, axis, descending, stable) -> tuple:
    x = array_arg(fname, x)
    if x.dtype not in _dtypes.CATEGORIES["real-valued"]:
        raise TypeError(
            f"{fname}: x must have a real-valued dtype, got {x.dtype}; sort real(x) or abs(x) instead"
        )
    if x.ndim == 0:
        raise ValueError(f"{fname}: x must have at least one dimension, got a 0-d array")
    return x, {
        "axis": normalize_axis(fname, axis, x.ndim),
        "descending": bool(descending),
        "stable": bool(stable),
    }


def argsort(x, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Array:
    """Indices that sort x along ``axis``."""
    x, params = _sort_args("argsort", x, axis, descending, stable)
    params.update(index_params(x))  # the device's index dtype where it is not int64
    return argsort_p.bind(x, **params)


def sort(x, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Array:
    """x sorted along ``axis``."""
    x, params = _sort_args("sort", x, axis, descending, stable)
    return sort_p.bind(x, **params)
