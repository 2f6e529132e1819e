"""``reduce_window`` (JAX's signature) and max/avg/sum pooling.

Maximum and minimum windows are one primitive, native on every executor, with its own select /
scatter derivative (``_window_prims.py``).  Sum and product windows are a reduction over the
window's offsets: the operand is padded with the reduction's identity (base dilation fills its
holes with it too, as XLA does), and for each offset of the window one strided static slice of
it (every window's element at that offset) is combined with the running result by the
elementwise reducer: prod(window) vectorised operations over the output (4 for 2x2 pooling),
fused by XLA under jit; grad/vmap/jit come from the rules of slicing and addition.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from arrayx.api._checks import array_arg
from arrayx.lax._conv import padding_pairs
from arrayx.lax._window_prims import identity, reduce_window_p, window_out_shape

__all__ = ["reduce_window", "max_pool", "min_pool", "avg_pool", "sum_pool"]


def _reducers():
    from arrayx import api as ax

    # computation -> (name, elementwise reducer); JAX's lax.add/max/min/mul are accepted too
    table = {ax.add: "sum", ax.maximum: "max", ax.minimum: "min", ax.multiply: "prod",
             "sum": "sum", "add": "sum", "max": "max", "min": "min", "prod": "prod", "mul": "prod"}
    try:
        import jax.lax as jl

        table.update({jl.add: "sum", jl.max: "max", jl.min: "min", jl.mul: "prod"})
    except ImportError:
        pass
    return table


_COMBINE = {"sum": "add", "max": "maximum", "min": "minimum", "prod": "multiply"}


def _ints(fname, name, value, n):
    value = (1,) * n if value is None else tuple(int(v) for v in value)
    if len(value) != n or any(v < 1 for v in value):
        raise ValueError(f"{fname}: {name} needs {n} positive integers (one per operand dimension), got {value}")
    return value


def _spread(x, factors, fill):
    """``x`` with ``factors - 1`` fill values between neighbours along each axis (base dilation)."""
    from arrayx import api as ax

    if all(f == 1 for f in factors):
        return x
    shape = tuple((n - 1) * f + 1 if n else 0 for n, f in zip(x.shape, factors))
    out = ax.full(shape, fill, dtype=x.dtype, device=x.device)
    return out.at[tuple(slice(None, None, f) for f in factors)].set(x)


def _padded(x, pads, fill):
    from arrayx import api as ax

    crop = tuple(slice(max(-lo, 0), max(max(-lo, 0), n - max(-hi, 0))) for n, (lo, hi) in zip(x.shape, pads))
    if any(lo < 0 or hi < 0 for lo, hi in pads):
        x = x[crop]  # negative padding removes elements
    grow = tuple((max(lo, 0), max(hi, 0)) for lo, hi in pads)
    if all(g == (0, 0) for g in grow):
        return x
    shape = tuple(n + lo + hi for n, (lo, hi) in zip(x.shape, grow))
    out = ax.full(shape, fill, dtype=x.dtype, device=x.device)
    return out.at[tuple(slice(lo, lo + n) for n, (lo, _) in zip(x.shape, grow))].set(x)


def reduce_window(operand, init_value, computation, window_dimensions, window_strides=None, padding="VALID",
                  base_dilation=None, window_dilation=None):
    """Reduce every window of ``operand`` with ``computation`` (``jax.lax.reduce_window``).

    ``computation`` is one of arrayx.add/maximum/minimum/multiply (or jax.lax's add/max/min/mul, or
    "sum"/"max"/"min"/"prod"); ``init_value`` is combined into every window, as in JAX; padding
    and base-dilation holes hold the reduction's identity.  A window that covers no element gives
    ``init_value``.
    """
    from arrayx import api as ax

    fname = "reduce_window"
    x = array_arg(fname, operand, "operand")
    kind = _reducers().get(computation)
    if kind is None:
        raise NotImplementedError(
            f"{fname}: computation {computation!r} is not supported; use arrayx.add, arrayx.maximum, "
            f"arrayx.minimum or arrayx.multiply (or jax.lax.add/max/min/mul)"
        )
    nd = x.ndim
    window = _ints(fname, "window_dimensions", window_dimensions, nd)
    strides = _ints(fname, "window_strides", window_strides, nd)
    base = _ints(fname, "base_dilation", base_dilation, nd)
    wdil = _ints(fname, "window_dilation", window_dilation, nd)
    fill = identity(kind, x.dtype)
    x = _spread(x, base, fill)
    span = tuple((k - 1) * d + 1 for k, d in zip(window, wdil))
    pads = padding_pairs(fname, padding, x.shape, span, strides)
    combine = getattr(ax, _COMBINE[kind])
    out_shape = window_out_shape(tuple(x.shape), window, strides, pads, wdil)
    result = None
    if kind in ("max", "min") and math.prod(out_shape):  # one native primitive (see _window_prims)
        result = reduce_window_p.bind(x, kind=kind, window=window, strides=strides, padding=pads,
                                      window_dilation=wdil)
    elif math.prod(out_shape):
        x = _padded(x, pads, fill)
        for offset in itertools.product(*(range(k) for k in window)):
            key = tuple(slice(o * d, o * d + (m - 1) * s + 1, s)
                        for o, d, m, s in zip(offset, wdil, out_shape, strides))
            part = x[key]
            result = part if result is None else combine(result, part)
    if result is None:
        result = ax.full(out_shape, fill, dtype=x.dtype, device=x.device)
    if isinstance(init_value, ax.Array):
        result = combine(result, ax.astype(init_value, x.dtype))
    elif init_value != fill:  # the identity changes nothing
        result = combine(result, ax.asarray(init_value, dtype=x.dtype, device=x.device))
    return result


def _pool_args(fname, x, window_shape, strides, padding, axes):
    x = array_arg(fname, x)
    window_shape = tuple(int(w) for w in window_shape)
    if axes is None:
        axes = tuple(range(x.ndim - len(window_shape), x.ndim))
    axes = tuple(a % x.ndim for a in axes)
    if len(axes) != len(window_shape) or len(set(axes)) != len(axes):
        raise ValueError(f"{fname}: window_shape {window_shape} needs one distinct axis each, got axes {axes}")
    strides = window_shape if strides is None else tuple(int(s) for s in strides)
    if len(strides) != len(window_shape):
        raise ValueError(f"{fname}: strides {strides} needs {len(window_shape)} entries, like window_shape")
    full_window = [1] * x.ndim
    full_strides = [1] * x.ndim
    for a, w, s in zip(axes, window_shape, strides):
        full_window[a], full_strides[a] = w, s
    if not isinstance(padding, str):
        pairs = [(0, 0)] * x.ndim
        for a, p in zip(axes, padding):
            pairs[a] = tuple(p)
        padding = tuple(pairs)
    return x, tuple(full_window), tuple(full_strides), padding, axes


def max_pool(x, window_shape, strides=None, padding="VALID", *, axes=None):
    """Maximum over windows of ``window_shape`` moved by ``strides`` (default: the window) over ``axes``
    (default: the last len(window_shape) axes, e.g. H and W of NCHW); padding never wins."""
    x, window, strides, padding, _ = _pool_args("max_pool", x, window_shape, strides, padding, axes)
    return reduce_window(x, identity("max", x.dtype), "max", window, strides, padding)


def min_pool(x, window_shape, strides=None, padding="VALID", *, axes=None):
    """Minimum over windows (see ``max_pool``)."""
    x, window, strides, padding, _ = _pool_args("min_pool", x, window_shape, strides, padding, axes)
    return reduce_window(x, identity("min", x.dtype), "min", window, strides, padding)


def sum_pool(x, window_shape, strides=None, padding="VALID", *, axes=None):
    """Sum over windows (see ``max_pool``); padding counts as 0."""
    x, window, strides, padding, _ = _pool_args("sum_pool", x, window_shape, strides, padding, axes)
    return reduce_window(x, 0, "sum", window, strides, padding)


def avg_pool(x, window_shape, strides=None, padding="VALID", *, axes=None, count_include_pad: bool = False):
    """Mean over windows (see ``max_pool``): each window's sum divided by the number of elements it
    actually covers (padding excluded); ``count_include_pad=True`` divides by the window size."""
    from arrayx import api as ax

    x, window, strides, padding, axes = _pool_args("avg_pool", x, window_shape, strides, padding, axes)
    if not ax.isdtype(x.dtype, "real floating"):  # bfloat16 too (NumPy kind "V")
        raise TypeError(f"avg_pool: x must be floating (got {x.dtype}); cast with astype(x, float32)")
    total = reduce_window(x, 0, "sum", window, strides, padding)
    if count_include_pad:
        return total / math.prod(window)
    # the count per window depends only on the pooled axes: pool ones of those axes' shape
    ones_shape = tuple(n if a in axes else 1 for a, n in enumerate(x.shape))
    ones = ax.ones(ones_shape, dtype=x.dtype, device=x.device)
    counts = reduce_window(ones, 0, "sum", tuple(w if a in axes else 1 for a, w in enumerate(window)),
                           tuple(s if a in axes else 1 for a, s in enumerate(strides)),
                           _count_padding(padding, x.shape, window, strides, axes))
    return total / counts


def _count_padding(padding, shape, window, strides, axes):
    """The explicit padding that ``padding`` resolves to on x (ones of size 1 elsewhere must not be padded)."""
    pairs = padding_pairs("avg_pool", padding, shape, window, strides)
    return tuple(p if a in axes else (0, 0) for a, p in enumerate(pairs))
