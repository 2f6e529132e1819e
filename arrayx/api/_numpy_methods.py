"""NumPy's array methods on ``arrayx.Array`` in the default mode: ``x.astype(...)``, ``x.max()``, ...

The standard's array object has no ``astype``/``max``/``sum``/``reshape`` methods (they are
functions), but NumPy, CuPy, Dask and JAX arrays all have them, and code that calls NumPy functions
on arrayx arrays gets arrayx arrays back (``__array_function__``) and goes on with NumPy's methods
(SciPy's ``np.where(input, 1, 0).astype(np.int8)``).  Each method here is the namespace function of
the same meaning with NumPy's argument names.  In strict mode (``arrayx.strict()``,
``ARRAYX_STRICT=1``) they do not exist, as on array-api-strict: reading one raises
``AttributeError`` (so ``hasattr`` is False).
"""
from __future__ import annotations

import numpy as np

from arrayx.api import _hooks
from arrayx.api._modes import is_strict
from arrayx.core.array import Array

__all__ = ["install"]


class _NumpyMethod:
    """A descriptor: the bound method in the default mode, AttributeError in strict mode."""

    __slots__ = ("fn", "name")

    def __init__(self, fn):
        self.fn = fn
        self.name = fn.__name__

    def __get__(self, obj, owner=None):
        if obj is None:
            return self.fn
        if is_strict():
            raise AttributeError(
                f"'Array' object has no attribute {self.name!r} in strict mode (the standard's array has "
                f"none; NumPy's method works in the default mode): call the namespace function instead"
            )
        return self.fn.__get__(obj, owner)


def _ns():
    return _hooks.namespace


def _dtype(dtype):
    return None if dtype is None else np.dtype(dtype)


def _axes(axis):
    return tuple(axis) if isinstance(axis, list) else axis


def astype(self, dtype, copy=True):
    """NumPy's ``x.astype(dtype)``: :func:`arrayx.astype` (types and names such as ``np.int8`` taken)."""
    return _ns().astype(self, _dtype(dtype), copy=copy)


def max(self, axis=None, keepdims=False):  # noqa: A001 - NumPy's name
    """NumPy's ``x.max()``: :func:`arrayx.max`."""
    return _ns().max(self, axis=_axes(axis), keepdims=keepdims)


def min(self, axis=None, keepdims=False):  # noqa: A001
    """NumPy's ``x.min()``: :func:`arrayx.min`."""
    return _ns().min(self, axis=_axes(axis), keepdims=keepdims)


def sum(self, axis=None, dtype=None, keepdims=False):  # noqa: A001
    """NumPy's ``x.sum()``: :func:`arrayx.sum`."""
    return _ns().sum(self, axis=_axes(axis), dtype=_dtype(dtype), keepdims=keepdims)


def prod(self, axis=None, dtype=None, keepdims=False):
    """NumPy's ``x.prod()``: :func:`arrayx.prod`."""
    return _ns().prod(self, axis=_axes(axis), dtype=_dtype(dtype), keepdims=keepdims)


def mean(self, axis=None, keepdims=False):
    """NumPy's ``x.mean()``: :func:`arrayx.mean` (integer input averaged in the default float)."""
    ax = _ns()
    x = self if ax.isdtype(self.dtype, ("real floating", "complex floating")) else ax.astype(self, ax.float64)
    return ax.mean(x, axis=_axes(axis), keepdims=keepdims)


def std(self, axis=None, ddof=0, keepdims=False):
    """NumPy's ``x.std(ddof=...)``: :func:`arrayx.std` with ``correction=ddof``."""
    return _ns().std(self, axis=_axes(axis), correction=ddof, keepdims=keepdims)


def var(self, axis=None, ddof=0, keepdims=False):
    """NumPy's ``x.var(ddof=...)``: :func:`arrayx.var` with ``correction=ddof``."""
    return _ns().var(self, axis=_axes(axis), correction=ddof, keepdims=keepdims)


def any(self, axis=None, keepdims=False):  # noqa: A001
    """NumPy's ``x.any()``: :func:`arrayx.any`."""
    return _ns().any(self, axis=_axes(axis), keepdims=keepdims)


def all(self, axis=None, keepdims=False):  # noqa: A001
    """NumPy's ``x.all()``: :func:`arrayx.all`."""
    return _ns().all(self, axis=_axes(axis), keepdims=keepdims)


def argmax(self, axis=None, keepdims=False):
    """NumPy's ``x.argmax()``: :func:`arrayx.argmax` (of the flattened array without an axis)."""
    return _ns().argmax(self, axis=axis, keepdims=keepdims)


def argmin(self, axis=None, keepdims=False):
    """NumPy's ``x.argmin()``: :func:`arrayx.argmin`."""
    return _ns().argmin(self, axis=axis, keepdims=keepdims)


def reshape(self, *shape, copy=None):
    """NumPy's ``x.reshape(2, 3)`` or ``x.reshape((2, 3))``: :func:`arrayx.reshape`."""
    if len(shape) == 1 and not isinstance(shape[0], int):
        shape = tuple(shape[0])
    return _ns().reshape(self, shape, copy=copy)


def ravel(self):
    """NumPy's ``x.ravel()``: ``reshape(x, (-1,))``."""
    return _ns().reshape(self, (-1,))


def flatten(self):
    """NumPy's ``x.flatten()``: a flat copy."""
    return _ns().reshape(self, (-1,), copy=True)


def copy(self):
    """NumPy's ``x.copy()``: :func:`arrayx.asarray` with ``copy=True``."""
    return _ns().asarray(self, copy=True)


def squeeze(self, axis=None):
    """NumPy's ``x.squeeze()``: every length-1 axis without ``axis``."""
    if axis is None:
        axis = tuple(i for i, n in enumerate(self.shape) if n == 1)
    return _ns().squeeze(self, axis=axis)


def transpose(self, *axes):
    """NumPy's ``x.transpose()`` (axes reversed) or ``x.transpose(1, 0, 2)``: :func:`arrayx.permute_dims`."""
    if len(axes) == 1 and not isinstance(axes[0], int):
        axes = tuple(axes[0])
    return _ns().permute_dims(self, axes or tuple(reversed(range(self.ndim))))


def cumsum(self, axis=None, dtype=None):
    """NumPy's ``x.cumsum()`` (of the flattened array without an axis): :func:`arrayx.cumulative_sum`."""
    x = _ns().reshape(self, (-1,)) if axis is None else self
    return _ns().cumulative_sum(x, axis=0 if axis is None else axis, dtype=_dtype(dtype))


def cumprod(self, axis=None, dtype=None):
    """NumPy's ``x.cumprod()``: :func:`arrayx.cumulative_prod`."""
    x = _ns().reshape(self, (-1,)) if axis is None else self
    return _ns().cumulative_prod(x, axis=0 if axis is None else axis, dtype=_dtype(dtype))


def clip(self, min=None, max=None):  # noqa: A002
    """NumPy's ``x.clip(lo, hi)``: :func:`arrayx.clip`."""
    return _ns().clip(self, min, max)


def round(self, decimals=0):  # noqa: A001
    """NumPy's ``x.round(decimals)``: :func:`arrayx.round`, scaled by ``10**decimals`` as NumPy does."""
    ax = _ns()
    if decimals == 0:
        return ax.round(self)
    scale = 10.0 ** decimals
    return ax.round(self * scale) / scale


def conj(self):
    """NumPy's ``x.conj()``: :func:`arrayx.conj`."""
    return _ns().conj(self)


def nonzero(self):
    """NumPy's ``x.nonzero()``: :func:`arrayx.nonzero`."""
    return _ns().nonzero(self)


def item(self, *index):
    """NumPy's ``x.item()``: the one element (or ``x[index]``) as a Python scalar."""
    return np.asarray(self).item(*index)


def tolist(self):
    """NumPy's ``x.tolist()``: nested Python lists of Python scalars."""
    return np.asarray(self).tolist()


METHODS = (astype, max, min, sum, prod, mean, std, var, any, all, argmax, argmin, reshape, ravel, flatten,
           copy, squeeze, transpose, cumsum, cumprod, clip, round, conj, nonzero, item, tolist)


def install() -> None:
    """Put the methods on :class:`Array` (tracers included) as mode-aware descriptors."""
    for fn in METHODS:
        setattr(Array, fn.__name__, _NumpyMethod(fn))
