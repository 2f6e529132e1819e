"""Set functions (the standard's "Set Functions" category).

The ``unique_*`` functions have data-dependent output shapes; ``unique_all``,
``unique_counts`` and ``unique_inverse`` return namedtuples with the standard's
field names.  NaNs are distinct values (each counted once); ``inverse_indices``
has x's shape.  Index and count arrays have the default index dtype of x's device.
"""
from __future__ import annotations

from typing import NamedTuple

from arrayx.api import _dtypes
from arrayx.api._array import Array
from arrayx.api._device_dtypes import index_params
from arrayx.api._checks import array_arg, cast, promote_dtypes, scalar_operand
from arrayx.api._modes import is_strict
from arrayx.core.primitives import Primitive

__all__ = ["isin", "unique_all", "unique_counts", "unique_inverse", "unique_values"]


class UniqueAllResult(NamedTuple):
    values: Array
    indices: Array
    inverse_indices: Array
    counts: Array


class UniqueCountsResult(NamedTuple):
    values: Array
    counts: Array


class UniqueInverseResult(NamedTuple):
    values: Array
    inverse_indices: Array


isin_p = Primitive("isin")
unique_all_p = Primitive("unique_all", multiple_results=True)
unique_counts_p = Primitive("unique_counts", multiple_results=True)
unique_inverse_p = Primitive("unique_inverse", multiple_results=True)
unique_values_p = Primitive("unique_values")


def isin(x1, x2, /, *, invert: bool = False) -> Array:
    """For each element of x1, whether it equals some element of x2 (``invert`` negates)."""
    scalars = (bool, int, float, complex)
    if not isinstance(x1, scalars) or isinstance(x2, scalars) and not is_strict():
        x1 = array_arg("isin", x1, "x1")  # NumPy arrays, and two scalars, in the default mode
    if not isinstance(x2, scalars):
        x2 = array_arg("isin", x2, "x2")
    if isinstance(x1, Array) and isinstance(x2, Array):
        if x1.dtype != x2.dtype:
            dt = promote_dtypes("isin", (x1.dtype, x2.dtype))
            x1, x2 = cast(x1, dt), cast(x2, dt)
    elif isinstance(x1, Array) and isinstance(x2, scalars):
        dt = _dtypes.scalar_result_dtype(x1.dtype, x2)
        x1, x2 = cast(x1, dt), scalar_operand("isin", x2, dt)
    elif isinstance(x2, Array) and isinstance(x1, scalars):
        dt = _dtypes.scalar_result_dtype(x2.dtype, x1)
        x1, x2 = scalar_operand("isin", x1, dt), cast(x2, dt)
    else:
        raise TypeError(
            f"isin: x1 and x2 must be arrayx arrays (one may be a Python scalar), got "
            f"{type(x1).__name__} and {type(x2).__name__}"
        )
    return isin_p.bind(x1, x2, invert=bool(invert))


def unique_all(x, /) -> UniqueAllResult:
    """Unique values of x, the first index of each, the inverse indices and the counts."""
    x = array_arg("unique_all", x)
    return UniqueAllResult(*unique_all_p.bind(x, **index_params(x)))


def unique_counts(x, /) -> UniqueCountsResult:
    """Unique values of x and how often each occurs."""
    x = array_arg("unique_counts", x)
    return UniqueCountsResult(*unique_counts_p.bind(x, **index_params(x)))


def unique_inverse(x, /) -> UniqueInverseResult:
    """Unique values of x and the indices (shaped like x) that rebuild x from them."""
    x = array_arg("unique_inverse", x)
    return UniqueInverseResult(*unique_inverse_p.bind(x, **index_params(x)))


def unique_values(x, /) -> Array:
    """Unique values of x, sorted, as a 1-D array."""
    x = array_arg("unique_values", x)
    return unique_values_p.bind(x)
