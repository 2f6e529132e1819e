"""Internal primitives: the XLA-style building blocks transforms and ``arrayx.lax`` use.

They are not functions of the standard (so not in the namespace); each is strict
(operands already promoted and shaped) and has the full rule set in
``transforms/rules/internal.py``:

- ``broadcast_in_dim(x, shape, broadcast_dimensions)``: operand axis i becomes
  result axis ``broadcast_dimensions[i]`` (size 1 or equal), the others are new;
  ``broadcast_to`` is the case of trailing dimensions;
- ``convert_element_type(x, dtype, weak_type=False)``: ``astype`` that also sets
  the weak type (a value standing for a Python scalar);
- ``select(pred, on_true, on_false)``: ``where`` of same-shaped operands;
- ``iota(dtype, shape, dimension, device)``: indices along one axis, broadcast.
"""
from __future__ import annotations

import numpy as np

from arrayx.api import _dtypes
from arrayx.api._array import Array
from arrayx.api._checks import array_arg, check_size, int_arg, shape_arg
from arrayx.core import executor as _exec
from arrayx.core.primitives import Primitive
from arrayx.core.executor import GENERIC

__all__ = ["broadcast_in_dim", "convert_element_type", "select", "iota",
           "broadcast_in_dim_p", "convert_element_type_p", "select_p", "iota_p"]

broadcast_in_dim_p = Primitive("broadcast_in_dim")
convert_element_type_p = Primitive("convert_element_type")
select_p = Primitive("select")
iota_p = Primitive("iota")


def _expanded_shape(x_shape, shape, broadcast_dimensions) -> tuple:
    """``x``'s shape with size-1 axes where the result has new axes."""
    expanded = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[d] = x_shape[i]
    return tuple(expanded)


def _broadcast_in_dim_any(x, *, shape, broadcast_dimensions):
    xp = _namespace_of(x)
    return xp.broadcast_to(xp.reshape(x, _expanded_shape(x.shape, shape, broadcast_dimensions)), shape)


def _convert_any(x, *, dtype, weak_type):
    from arrayx.api.data_types import _astype_any  # astype's float -> int rule, the same one

    return _astype_any(x, dtype=dtype)


def _select_any(pred, on_true, on_false):
    return _namespace_of(on_true).where(pred, on_true, on_false)


def _iota_impl(*, dtype, shape, dimension, device):
    ex = _exec.get(device.executor)
    return _iota_on(ex, dtype, shape, dimension, device)


def _iota_on(ex, dtype, shape, dimension, device):
    xp = ex.xp
    line = xp.arange(shape[dimension], dtype=dtype)
    expanded = [1] * len(shape)
    expanded[dimension] = shape[dimension]
    buf = xp.broadcast_to(xp.reshape(line, tuple(expanded)), tuple(shape))
    if device.executor != ex.name:
        src = _exec.get(device.executor)
        return ex.from_foreign(_iota_on(src, dtype, shape, dimension, device), src)
    return buf if device == ex.default_device() else ex.to_device(buf, device)


def _namespace_of(buf):
    from arrayx.api.manipulation import buffer_namespace

    return buffer_namespace(buf)


GENERIC[broadcast_in_dim_p.name] = _broadcast_in_dim_any
GENERIC[convert_element_type_p.name] = _convert_any
GENERIC[select_p.name] = _select_any
GENERIC[iota_p.name] = _iota_impl
iota_p.lowerings["*"] = lambda ex, params: (lambda: _iota_on(ex, **params))


def broadcast_in_dim(x: Array, shape, broadcast_dimensions) -> Array:
    """``x`` broadcast to ``shape``, its axis i placed at result axis ``broadcast_dimensions[i]``."""
    x = array_arg("broadcast_in_dim", x)
    shape = shape_arg("broadcast_in_dim", shape)
    dims = tuple(int_arg("broadcast_in_dim", d, "broadcast_dimensions") for d in broadcast_dimensions)
    if len(dims) != x.ndim:
        raise ValueError(f"broadcast_in_dim: {len(dims)} broadcast_dimensions for an operand of shape {x.shape}")
    if list(dims) != sorted(set(dims)) or any(not 0 <= d < len(shape) for d in dims):
        raise ValueError(f"broadcast_in_dim: broadcast_dimensions {dims} must be increasing axes of the result shape {shape}")
    for i, d in enumerate(dims):
        if x.shape[i] not in (1, shape[d]):
            raise ValueError(f"broadcast_in_dim: operand axis {i} of size {x.shape[i]} cannot become result axis {d} of size {shape[d]}")
    if tuple(x.shape) == shape:
        return x
    return broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=dims)


def convert_element_type(x: Array, dtype, weak_type: bool = False) -> Array:
    """``x`` cast to ``dtype`` (NumPy's casting), marked weak when it stands for a Python scalar."""
    x = array_arg("convert_element_type", x)
    dt = _dtypes.as_dtype(dtype, "convert_element_type")
    return convert_element_type_p.bind(x, dtype=dt, weak_type=bool(weak_type))


def select(pred: Array, on_true: Array, on_false: Array) -> Array:
    """Elements of ``on_true`` where the bool array ``pred`` holds, else of ``on_false`` (same shapes)."""
    for name, a in (("pred", pred), ("on_true", on_true), ("on_false", on_false)):
        array_arg("select", a, name)
    if pred.dtype != _dtypes.bool:
        raise TypeError(f"select: pred must be a bool array, got {pred.dtype}")
    if on_true.dtype != on_false.dtype:
        raise TypeError(f"select: on_true and on_false must have one dtype, got {on_true.dtype} and {on_false.dtype}")
    if not tuple(pred.shape) == tuple(on_true.shape) == tuple(on_false.shape):
        raise ValueError(f"select: shapes must be equal, got {pred.shape}, {on_true.shape}, {on_false.shape}")
    return select_p.bind(pred, on_true, on_false)


def iota(dtype, shape, dimension: int, *, device=None) -> Array:
    """Indices ``0..shape[dimension]-1`` along axis ``dimension``, broadcast to ``shape``."""
    shape = shape_arg("iota", shape)
    dt = _dtypes.as_dtype(dtype, "iota")
    if dt.kind not in "iuf":
        raise TypeError(f"iota: dtype must be an integer or real floating-point dtype, got {dt}")
    dimension = int_arg("iota", dimension, "dimension")
    if not 0 <= dimension < len(shape):
        raise ValueError(f"iota: dimension {dimension} is not an axis of shape {shape}")
    if dt.kind in "iu" and shape[dimension] > 0 and shape[dimension] - 1 > np.iinfo(dt).max:
        raise OverflowError(f"iota: {shape[dimension]} indices do not fit in {dt}")
    ex, dev = _exec.resolve_device(device, "iota")
    check_size("iota", shape, dt, ex)
    return iota_p.bind(dtype=dt, shape=shape, dimension=dimension, device=ex.default_device() if dev is None else dev)
