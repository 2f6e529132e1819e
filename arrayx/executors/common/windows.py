"""The arithmetic of windowed operations (convolution, window reductions), shared by the ``lax``
primitives' shape rules and compositions and by every executor's implementation of them: output
sizes, the padding value of a max/min window reduction, the slice that negative padding keeps.
Plain integers and tuples, and the winners' masks, which need only an array's operators."""
from __future__ import annotations

import itertools
import math

import numpy as np

from arrayx.executors.common.narrow_floats import is_narrow

__all__ = ["conv_shape", "window_out_shape", "axis_out", "identity", "crop", "offset_key", "winners"]


def _out_size(n, k, s, lo, hi, ld, rd) -> int:
    dilated = (n - 1) * ld + 1 if n else 0
    window = (k - 1) * rd + 1
    span = dilated + lo + hi - window
    return max(span // s + 1, 0) if span >= 0 else 0


def conv_shape(lhs_shape, rhs_shape, strides, padding, lhs_dilation, rhs_dilation) -> tuple:
    """The result shape of ``lax``'s ``conv`` in the canonical layout ((N, C, *spatial) operands)."""
    spatial = tuple(
        _out_size(n, k, s, lo, hi, ld, rd)
        for n, k, s, (lo, hi), ld, rd in zip(lhs_shape[2:], rhs_shape[2:], strides, padding, lhs_dilation,
                                             rhs_dilation)
    )
    return (lhs_shape[0], rhs_shape[0]) + spatial


def identity(kind: str, dtype) -> object:
    """The value padding takes for a window reduction: the reduction's identity."""
    dtype = np.dtype(dtype)
    if kind == "sum":
        return 0
    if kind == "prod":
        return 1
    if dtype.kind == "f" or is_narrow(dtype):  # bfloat16 is NumPy kind "V"
        return -math.inf if kind == "max" else math.inf
    if dtype.kind == "b":
        return kind == "min"
    info = np.iinfo(dtype)
    return int(info.min) if kind == "max" else int(info.max)


def axis_out(n, k, s, d) -> int:
    """How many windows of ``k`` taps (dilation ``d``, stride ``s``) fit in ``n`` elements."""
    span = (k - 1) * d + 1
    return (n - span) // s + 1 if n >= span else 0


def window_out_shape(shape, window, strides, padding, window_dilation) -> tuple:
    """The pooled shape of an operand of ``shape`` (padding applied)."""
    return tuple(axis_out(n + lo + hi, k, s, d)
                 for n, k, s, (lo, hi), d in zip(shape, window, strides, padding, window_dilation))


def crop(padding, shape) -> tuple:
    """The slice of an operand that negative padding keeps."""
    return tuple(slice(max(-lo, 0), max(max(-lo, 0), n - max(-hi, 0))) for n, (lo, hi) in zip(shape, padding))


def offset_key(offset, window_dilation, out_shape, strides) -> tuple:
    """Every window's element at ``offset`` (a window position): one strided slice per axis."""
    return tuple(slice(o * d, o * d + (n - 1) * s + 1, s) if n else slice(0, 0)
                 for o, d, n, s in zip(offset, window_dilation, out_shape, strides))


def winners(padded, out, window, strides, window_dilation):
    """For each window offset, the key of its strided slice and where it holds the window's winner:
    the first offset (in row-major window order) whose element of ``padded`` (the operand with its
    padding) equals ``out`` (the window's max/min).  Written with ``==``, ``&``, ``~``, ``|`` and
    slicing only, so for any array type: host buffers, arrayx arrays."""
    taken = None
    for offset in itertools.product(*(range(k) for k in window)):
        key = offset_key(offset, window_dilation, tuple(out.shape), strides)
        hit = padded[key] == out
        if taken is None:
            taken = hit
        else:
            hit = hit & ~taken
            taken = taken | hit
        yield key, hit
