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

Where the executor has an entry for them (NumPy, Numba), the reduction's jvp binds their twins with
the reduction's result as an operand, ``window_select_out_p(x, out, t)`` /
``window_scatter_out_p(x, out, ct)``: the winners are the elements equal to ``out``, so they are
found by comparing with the forward's result instead of reducing ``x`` again (the CNN's max_pool:
0.45 ms of its 7 ms jit(grad) on the NumPy executor).  Other executors get the plain primitives, the
program they ran before; the twins bound there anyway run as the plain primitive, ``out`` dropped
(eagerly: the composition; under jit: the lowering).

Implementations: each executor's table has its own (``arrayx/executors/<name>/lax.py``: separable
strided maxima on the host, XLA's reduce-window on jax, per block on dask); any other executor
runs the primitives' compositions below, written in arrayx operations.
"""
from __future__ import annotations

import math

from arrayx.core.primitives import Primitive
from arrayx.core.tracers import ShapeDtypeStruct
from arrayx.executors.common.windows import axis_out, crop, identity, window_out_shape, winners

__all__ = ["reduce_window_p", "window_select_p", "window_scatter_p", "window_select_out_p", "window_scatter_out_p",
           "identity", "window_out_shape"]

reduce_window_p = Primitive("reduce_window")
window_select_p = Primitive("window_select")
window_scatter_p = Primitive("window_scatter")
window_select_out_p = Primitive("window_select_out")
window_scatter_out_p = Primitive("window_scatter_out")


def _pooled_abstract(x, *_, window, strides, padding, window_dilation, **__):
    shape = window_out_shape(tuple(x.shape), window, strides, padding, window_dilation)
    return ShapeDtypeStruct._trusted(shape, x.dtype, False)


def _scatter_abstract(x, ct, **_):
    return ShapeDtypeStruct._trusted(tuple(x.shape), ct.dtype, False)


def _select_out_abstract(x, out, t, **_):
    return ShapeDtypeStruct._trusted(tuple(out.shape), t.dtype, False)


def _scatter_out_abstract(x, out, ct, **_):
    return ShapeDtypeStruct._trusted(tuple(x.shape), ct.dtype, False)


reduce_window_p.abstract_eval = _pooled_abstract
window_select_p.abstract_eval = _pooled_abstract
window_scatter_p.abstract_eval = _scatter_abstract
window_select_out_p.abstract_eval = _select_out_abstract
window_scatter_out_p.abstract_eval = _scatter_out_abstract


# -- the reduction in arrayx operations (any executor without its own: a third party's) --------------

def _padded_composed(x, padding, fill):
    """``x`` padded with ``fill`` in arrayx operations: crop, then blocks of ``fill`` concatenated on each side."""
    from arrayx import api as ax

    x = x[crop(padding, tuple(x.shape))]
    for axis, (lo, hi) in enumerate(padding):
        parts = []
        for width in (max(lo, 0), max(hi, 0)):
            shape = tuple(x.shape[:axis]) + (width,) + tuple(x.shape[axis + 1:])
            parts.append(ax.full(shape, fill, dtype=x.dtype, device=x.device) if width else None)
        if parts[0] is not None or parts[1] is not None:
            x = ax.concat([p for p in (parts[0], x, parts[1]) if p is not None], axis=axis)
    return x


def _reduce_composed(x, *, kind, window, strides, padding, window_dilation):
    """The separable max/min of the host implementation (``executors/numpy/lax.py``), one axis at a
    time, without in-place updates."""
    from arrayx import api as ax

    combine = ax.maximum if kind == "max" else ax.minimum
    x = _padded_composed(x, padding, identity(kind, x.dtype))
    for axis, (k, s, d) in enumerate(zip(window, strides, window_dilation)):
        if k == 1 and s == 1:
            continue
        n = axis_out(x.shape[axis], k, s, d)
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


def _winners_composed(x, out, *, kind, window, strides, padding, window_dilation):
    """``winners`` (executors/common/windows.py) of ``x`` padded with the reduction's identity."""
    return winners(_padded_composed(x, padding, identity(kind, x.dtype)), out, window, strides, window_dilation)


def _placed(value, key, shape):
    """Zeros of ``shape`` holding ``value`` at the strided slices ``key``: per axis, zeros between
    neighbours (the step) and on both sides, joined with ``concat``."""
    from arrayx import api as ax

    if math.prod(tuple(value.shape)) == 0:
        return ax.zeros(shape, dtype=value.dtype, device=value.device)
    for axis, (sl, n) in enumerate(zip(key, shape)):
        m = value.shape[axis]
        start, _, step = sl.indices(n)
        if step != 1:
            gaps = ax.zeros(tuple(value.shape[:axis + 1]) + (step - 1,) + tuple(value.shape[axis + 1:]),
                            dtype=value.dtype, device=value.device)
            value = ax.concat([ax.expand_dims(value, axis=axis + 1), gaps], axis=axis + 1)
            value = ax.reshape(value, tuple(value.shape[:axis]) + (m * step,) + tuple(value.shape[axis + 2:]))
            value = value[(slice(None),) * axis + (slice(0, (m - 1) * step + 1),)]
        sides = [start, n - start - ((m - 1) * step + 1)]
        parts = [ax.zeros(tuple(value.shape[:axis]) + (w,) + tuple(value.shape[axis + 1:]), dtype=value.dtype,
                          device=value.device) if w else None for w in sides]
        if parts[0] is not None or parts[1] is not None:
            value = ax.concat([p for p in (parts[0], value, parts[1]) if p is not None], axis=axis)
    return value


def _select_composed(x, t, **params):
    """``t`` at each window's winner of ``x``: one comparison and one ``where`` per window offset."""
    from arrayx import api as ax

    out = _reduce_composed(x, **params)
    tp = _padded_composed(t, params["padding"], 0)
    res = None
    for key, hit in _winners_composed(x, out, **params):
        part = tp[key]
        res = ax.where(hit, part, ax.zeros_like(part) if res is None else res)
    return res if res is not None else ax.zeros(tuple(out.shape), dtype=t.dtype, device=t.device)


def _scatter_composed(x, ct, **params):
    """``ct`` added back at each window's winner of ``x``: per window offset, the masked cotangent
    placed at that offset's strided positions (zeros elsewhere) and added."""
    from arrayx import api as ax

    out = _reduce_composed(x, **params)
    padding = params["padding"]
    kept = crop(padding, tuple(x.shape))
    inner = tuple(k.stop - k.start for k in kept)
    padded = tuple(n + max(lo, 0) + max(hi, 0) for n, (lo, hi) in zip(inner, padding))
    dxp = ax.zeros(padded, dtype=ct.dtype, device=ct.device)
    zero = ax.zeros_like(ct)
    for key, hit in _winners_composed(x, out, **params):
        dxp = dxp + _placed(ax.where(hit, ct, zero), key, padded)
    dx = dxp[tuple(slice(max(lo, 0), max(lo, 0) + n) for n, (lo, _) in zip(inner, padding))]
    if inner == tuple(x.shape):
        return dx
    return _placed(dx, kept, tuple(x.shape))  # cropped elements get no cotangent


reduce_window_p.composition = _reduce_composed
window_select_p.composition = _select_composed
window_scatter_p.composition = _scatter_composed


# -- the twins given the reduction's result: the plain primitive wherever the executor has no entry ------

def _out_dropped(plain):
    def composition(x, out, t, **params):
        return plain.bind(x, t, **params)

    def lowering(executor, params):
        own = executor.table.get(f"{plain.name}_out")
        if own is not None:  # the executor's entry, which uses ``out``
            return lambda x, out, t: own(x, out, t, **params)
        raw = getattr(executor, "raw_impl", None)  # what its jit lowering calls (JAX: no per-op jit)
        fn = raw(plain) if raw is not None else (executor.impls.get(plain) or executor.resolve(plain))
        return lambda x, out, t: fn(x, t, **params)

    composition.__name__ = f"{plain.name}_out_composed"
    return composition, lowering


window_select_out_p.composition, window_select_out_p.lowerings["*"] = _out_dropped(window_select_p)
window_scatter_out_p.composition, window_scatter_out_p.lowerings["*"] = _out_dropped(window_scatter_p)


# -- rules ----------------------------------------------------------------------------------------------

def _select_transpose(ct, x, t, **params):
    return None, window_scatter_p.bind(x, ct, **params)


def _scatter_transpose(ct, x, c, **params):
    return None, window_select_p.bind(x, ct, **params)


def _has_entry(x, prim) -> bool:
    """Whether the executor of ``x`` (an array or a tracer: its device names the executor) has its own
    implementation of ``prim``."""
    from arrayx.core.executor import get

    device = getattr(x, "device", None)
    try:
        return get(device.executor).table.get(prim.name) is not None
    except (AttributeError, KeyError, ValueError):
        return False


def _reduce_tangent(t, out, x, **params):
    """The tangent of the reduction: the twin given ``out`` where the executor has it (its jit graph
    then reuses the forward's result), else the plain primitive (the program other executors ran)."""
    if _has_entry(x, window_select_out_p):
        return window_select_out_p.bind(x, out, t, **params)
    return window_select_p.bind(x, t, **params)


def _select_out_transpose(ct, x, out, t, **params):
    return None, None, window_scatter_out_p.bind(x, out, ct, **params)


def _scatter_out_transpose(ct, x, out, c, **params):
    return None, None, window_select_out_p.bind(x, out, ct, **params)


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

    defjvp(reduce_window_p, _reduce_tangent)
    deflinear(window_select_p, _select_transpose, linear_argnums=(1,))
    deflinear(window_scatter_p, _scatter_transpose, linear_argnums=(1,))
    deflinear(window_select_out_p, _select_out_transpose, linear_argnums=(2,))
    deflinear(window_scatter_out_p, _scatter_out_transpose, linear_argnums=(2,))
    for prim in (reduce_window_p, window_select_p, window_scatter_p, window_select_out_p, window_scatter_out_p):
        defbatch(prim, _batch(prim))


_define_rules()
