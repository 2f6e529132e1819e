"""The max/min window reduction as primitives, native on every executor, and their derivative.

``reduce_window_p(x)``: the maximum (``kind="max"``) or minimum of every window of ``x``; params
``kind``, ``window``, ``strides``, ``padding`` ((low, high) per axis, negative crops; padding holds
the reduction's identity, so it never wins) and ``window_dilation``, one entry per axis of ``x``.

Its tangent picks, in every window, the tangent of the element that won (the first in row-major
window order on ties):

- ``window_select_p(x, t)``: ``t`` at each window's winner of ``x`` (result: the pooled shape);
- ``window_scatter_p(x, ct)``: ``ct`` added back at each window's winner (result: ``x``'s shape).

Both are linear in their second operand and each is the other's transpose, so grad works to any
order (``x`` only chooses positions: its own derivative there is zero).

Implementations:

- numpy / numba / cupy: the maximum is separable, so it is taken one axis at a time: per axis,
  one elementwise ``maximum`` per window offset over strided views (2 + 2 for 2x2 pooling, on ever
  smaller arrays), written into the accumulator in place; select/scatter take one comparison and
  one masked copy (add) per window offset;
- jax: ``jax.lax.reduce_window`` (XLA's reduce-window) and the same select/scatter in jax.numpy
  (the scatter's strided placement as interior padding), fused by XLA under jit;
- dask: the host implementation per block, with the windowed axes in one chunk each.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from arrayx.core.primitives import Primitive
from arrayx.core.executor import register_impls
from arrayx.core.tracers import ShapeDtypeStruct

__all__ = ["reduce_window_p", "window_select_p", "window_scatter_p", "identity", "window_out_shape"]

reduce_window_p = Primitive("reduce_window")
window_select_p = Primitive("window_select")
window_scatter_p = Primitive("window_scatter")

_COMBINE = {"max": "maximum", "min": "minimum"}


def identity(kind: str, dtype) -> object:
    """The value padding takes for a window reduction: the reduction's identity."""
    dtype = np.dtype(dtype)
    if kind == "sum":
        return 0
    if kind == "prod":
        return 1
    if dtype.kind == "f":
        return -math.inf if kind == "max" else math.inf
    if dtype.kind == "b":
        return kind == "min"
    info = np.iinfo(dtype)
    return int(info.min) if kind == "max" else int(info.max)


def _axis_out(n, k, s, d) -> int:
    span = (k - 1) * d + 1
    return (n - span) // s + 1 if n >= span else 0


def window_out_shape(shape, window, strides, padding, window_dilation) -> tuple:
    """The pooled shape of an operand of ``shape`` (padding applied)."""
    return tuple(_axis_out(n + lo + hi, k, s, d)
                 for n, k, s, (lo, hi), d in zip(shape, window, strides, padding, window_dilation))


def _pooled_abstract(x, *_, window, strides, padding, window_dilation, **__):
    shape = window_out_shape(tuple(x.shape), window, strides, padding, window_dilation)
    return ShapeDtypeStruct._trusted(shape, x.dtype, False)


def _scatter_abstract(x, ct, **_):
    return ShapeDtypeStruct._trusted(tuple(x.shape), ct.dtype, False)


reduce_window_p.abstract_eval = _pooled_abstract
window_select_p.abstract_eval = _pooled_abstract
window_scatter_p.abstract_eval = _scatter_abstract


# -- host implementation (any array module with NumPy's pad/where/out=) -------------------------------

def _crop(padding, shape) -> tuple:
    """The slice of an operand that negative padding keeps."""
    return tuple(slice(max(-lo, 0), max(max(-lo, 0), n - max(-hi, 0))) for n, (lo, hi) in zip(shape, padding))


def _padded(m, x, padding, fill):
    x = x[_crop(padding, x.shape)]
    widths = tuple((max(lo, 0), max(hi, 0)) for lo, hi in padding)
    return m.pad(x, widths, constant_values=fill) if any(w != (0, 0) for w in widths) else x


def _offset_key(offset, window_dilation, out_shape, strides) -> tuple:
    """Every window's element at ``offset``: one strided slice per axis."""
    return tuple(slice(o * d, o * d + (n - 1) * s + 1, s) if n else slice(0, 0)
                 for o, d, n, s in zip(offset, window_dilation, out_shape, strides))


def _reduce_host(m, x, *, kind, window, strides, padding, window_dilation):
    combine = getattr(m, _COMBINE[kind])
    x = _padded(m, x, padding, identity(kind, x.dtype))
    fresh = False  # whether x is already a new buffer (the result must never alias the operand)
    for axis, (k, s, d) in enumerate(zip(window, strides, window_dilation)):
        if k == 1 and s == 1:
            continue
        n = _axis_out(x.shape[axis], k, s, d)

        def part(o, axis=axis, n=n, s=s, d=d):
            key = [slice(None)] * x.ndim
            key[axis] = slice(o * d, o * d + (n - 1) * s + 1, s) if n else slice(0, 0)
            return x[tuple(key)]

        if k == 1:
            x = part(0)
            continue
        acc = combine(part(0), part(1))
        for o in range(2, k):
            combine(acc, part(o), out=acc)
        x, fresh = acc, True
    return x if fresh else m.array(x, copy=True)


def _winners(m, x, out, *, kind, window, strides, padding, window_dilation):
    """For each window offset, the key of its strided slice and where it holds the window's winner
    (the first offset that attains the window's max/min)."""
    xp = _padded(m, x, padding, identity(kind, x.dtype))
    taken = None
    for offset in itertools.product(*(range(k) for k in window)):
        key = _offset_key(offset, window_dilation, out.shape, strides)
        hit = xp[key] == out
        if taken is None:
            taken = hit
        else:
            hit = hit & ~taken
            taken = taken | hit
        yield key, hit


def _select_host(m, reduce, x, t, **params):
    out = reduce(x, **params)
    tp = _padded(m, t, params["padding"], 0)
    zero = m.zeros((), dtype=t.dtype)
    res = None
    for key, hit in _winners(m, x, out, **params):
        res = m.where(hit, tp[key], zero if res is None else res)
    return res if res is not None else m.zeros(out.shape, dtype=t.dtype)


def _add_at_inplace(buf, key, value):
    view = buf[key]
    view += value
    return buf


def _add_at_jax(buf, key, value):
    """``buf`` plus ``value`` placed at the strided slices ``key``: a padding with holes (interior
    padding), which XLA fuses into the sum; ``.at[].add`` would be a serial XLA scatter on CPU."""
    import jax

    if value.size == 0:
        return buf
    config = []
    for sl, n, m in zip(key, buf.shape, value.shape):
        start, _, step = sl.indices(n)
        config.append((start, n - start - (m - 1) * step - 1, step - 1))
    return buf + jax.lax.pad(value, np.zeros((), dtype=value.dtype), config)


def _scatter_host(m, reduce, add_at, x, ct, **params):
    out = reduce(x, **params)
    padding = params["padding"]
    kept = _crop(padding, x.shape)
    inner = tuple(k.stop - k.start for k in kept)
    dxp = m.zeros(tuple(n + max(lo, 0) + max(hi, 0) for n, (lo, hi) in zip(inner, padding)), dtype=ct.dtype)
    zero = m.zeros((), dtype=ct.dtype)
    for key, hit in _winners(m, x, out, **params):
        dxp = add_at(dxp, key, m.where(hit, ct, zero))
    dx = dxp[tuple(slice(max(lo, 0), max(lo, 0) + n) for n, (lo, _) in zip(inner, padding))]
    if inner == tuple(x.shape):
        return dx
    return add_at(m.zeros(tuple(x.shape), dtype=ct.dtype), kept, dx)  # cropped elements get no cotangent


def _reduce_jax(x, *, kind, window, strides, padding, window_dilation):
    import jax

    init = np.array(identity(kind, x.dtype), dtype=x.dtype)
    reducer = jax.lax.max if kind == "max" else jax.lax.min
    return jax.lax.reduce_window(x, init, reducer, window, strides, padding, window_dilation=window_dilation)


def _impls_over(load_module, add_at, reduce=None) -> tuple:
    """(reduce, select, scatter) over the array module ``load_module()`` (imported on first use)."""
    if reduce is None:
        def reduce(x, **params):
            return _reduce_host(load_module(), x, **params)

    def select(x, t, **params):
        return _select_host(load_module(), reduce, x, t, **params)

    def scatter(x, ct, **params):
        return _scatter_host(load_module(), reduce, add_at, x, ct, **params)

    return reduce, select, scatter


def _cupy():
    import cupy

    return cupy


def _jax_numpy():
    import jax.numpy as jnp

    return jnp


_HOST = _impls_over(lambda: np, _add_at_inplace)


# -- the reduction in arrayx operations (any executor without its own: a third party's) --------------

def _padded_composed(x, padding, fill):
    """``_padded`` in arrayx operations: crop, then blocks of ``fill`` concatenated on each side."""
    from arrayx import api as ax

    x = x[_crop(padding, tuple(x.shape))]
    for axis, (lo, hi) in enumerate(padding):
        parts = []
        for width in (max(lo, 0), max(hi, 0)):
            shape = tuple(x.shape[:axis]) + (width,) + tuple(x.shape[axis + 1:])
            parts.append(ax.full(shape, fill, dtype=x.dtype, device=x.device) if width else None)
        if parts[0] is not None or parts[1] is not None:
            x = ax.concat([p for p in (parts[0], x, parts[1]) if p is not None], axis=axis)
    return x


def _reduce_composed(x, *, kind, window, strides, padding, window_dilation):
    """The separable max/min of ``_reduce_host``, one axis at a time, without in-place updates."""
    from arrayx import api as ax

    combine = ax.maximum if kind == "max" else ax.minimum
    x = _padded_composed(x, padding, identity(kind, x.dtype))
    for axis, (k, s, d) in enumerate(zip(window, strides, window_dilation)):
        if k == 1 and s == 1:
            continue
        n = _axis_out(x.shape[axis], k, s, d)
        parts = []
        for o in range(k):
            key = [slice(None)] * x.ndim
            key[axis] = slice(o * d, o * d + (n - 1) * s + 1, s) if n else slice(0, 0)
            parts.append(x[tuple(key)])
        acc = parts[0]
        for part in parts[1:]:
            acc = combine(acc, part)
        x = acc
    return ax.asarray(x, copy=True)


reduce_window_p.composition = _reduce_composed


def _windowed_axes(window, strides, padding) -> tuple:
    return tuple(a for a, (k, s, p) in enumerate(zip(window, strides, padding)) if k != 1 or s != 1 or p != (0, 0))


def _dask_blocks(fn, out_of, *operands, dtype, **params):
    """``fn`` per block, the windowed axes of every operand in one chunk (the others chunked alike)."""
    import dask.array as da

    axes = _windowed_axes(params["window"], params["strides"], params["padding"])
    x = operands[0].rechunk({a: -1 for a in axes})
    rest = [v.rechunk(tuple(-1 if a in axes else c for a, c in enumerate(x.chunks))) for v in operands[1:]]
    out_shape = out_of(x.shape)
    chunks = tuple((out_shape[a],) if a in axes else c for a, c in enumerate(x.chunks))
    return da.map_blocks(lambda *bufs: fn(*bufs, **params), x, *rest, chunks=chunks, dtype=dtype,
                         meta=np.empty((0,) * x.ndim, dtype=dtype))


def _pooled_shape_of(params):
    return lambda shape: window_out_shape(shape, params["window"], params["strides"], params["padding"],
                                          params["window_dilation"])


def _reduce_dask(x, **params):
    return _dask_blocks(_HOST[0], _pooled_shape_of(params), x, dtype=x.dtype, **params)


def _select_dask(x, t, **params):
    return _dask_blocks(_HOST[1], _pooled_shape_of(params), x, t, dtype=t.dtype, **params)


def _scatter_dask(x, ct, **params):
    return _dask_blocks(_HOST[2], lambda shape: shape, x, ct, dtype=ct.dtype, **params)


#: executor -> (reduce_window, window_select, window_scatter) implementations
_IMPLS = {
    "numpy": _HOST,
    "numba": _HOST,  # the strided maximum is memory-bound: NumPy's SIMD loops are what a kernel would be
    "cupy": _impls_over(_cupy, _add_at_inplace),
    "jax": _impls_over(_jax_numpy, _add_at_jax, reduce=_reduce_jax),
    "dask": (_reduce_dask, _select_dask, _scatter_dask),
}
for _i, _prim in enumerate((reduce_window_p, window_select_p, window_scatter_p)):
    register_impls(_prim.name, **{name: fns[_i] for name, fns in _IMPLS.items()})


# -- rules ----------------------------------------------------------------------------------------------

def _select_transpose(ct, x, t, **params):
    return None, window_scatter_p.bind(x, ct, **params)


def _scatter_transpose(ct, x, c, **params):
    return None, window_select_p.bind(x, ct, **params)


def _with_batch_axis(params) -> dict:
    """The params for operands with a leading batch axis (a window of 1 there)."""
    return dict(params, window=(1,) + params["window"], strides=(1,) + params["strides"],
                padding=((0, 0),) + params["padding"], window_dilation=(1,) + params["window_dilation"])


def _batch(prim):
    def rule(vals, dims, **params):
        from arrayx.transforms.rules._batch import full_batch, size_of

        size = size_of(vals, dims)
        args = [full_batch(v, d, size, v.shape if d is None else v.shape[:d] + v.shape[d + 1:])
                for v, d in zip(vals, dims)]
        return prim.bind(*args, **_with_batch_axis(params)), 0

    rule.__name__ = f"{prim.name}_batch"
    return rule


def _define_rules():
    from arrayx.transforms.rules import defjvp, deflinear
    from arrayx.transforms.rules._batch import defbatch

    defjvp(reduce_window_p, lambda t, out, x, **params: window_select_p.bind(x, t, **params))
    deflinear(window_select_p, _select_transpose, linear_argnums=(1,))
    deflinear(window_scatter_p, _scatter_transpose, linear_argnums=(1,))
    for prim in (reduce_window_p, window_select_p, window_scatter_p):
        defbatch(prim, _batch(prim))


_define_rules()
