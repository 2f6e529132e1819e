"""The generic implementations of the indexing primitives, which any executor gets for free.

Entries of :data:`arrayx.core.executor.GENERIC` (step 2 of ``Executor.resolve``) for ``slice``,
``slice_update``, ``gather``, ``scatter``, ``dynamic_slice``, ``dynamic_update_slice`` and
``boolean_mask`` (their contracts are listed in ``arrayx/api/indexing.py``), written only with the
Array API standard: the namespace of the buffers themselves (``array_api_compat.array_namespace``),
its basic indexing, ``take``, ``where``, ``argsort``, ``searchsorted``, ``concat`` ... .  So a third
party's executor (one class over a standard namespace) runs ``x[key]``, ``x.at[key].op(v)``,
``lax.dynamic_slice`` and their derivatives (``gather``'s transpose is a ``scatter`` add), and jit
of them, with no entry of its own.

No implementation writes into a buffer (the standard does not require ``__setitem__`` with index
arrays, and immutable buffers such as JAX's have none): every update is a ``where`` between the
operand and the values moved into place with ``take``, so results are new buffers, and nothing
needs the value of an index on the host (starts and indices may be lazy or traced buffers).

The built-in executors keep their own entries (``arrayx/executors/common/indexing.py`` for
NumPy-like buffers, JAX's and Dask's tables): these run only where an executor's table has none.
"""
from __future__ import annotations

import math
import operator

from arrayx.core.executor import GENERIC

__all__ = ["namespace_of"]

_NAMESPACES: dict = {}


def namespace_of(buf):
    """The standard namespace of ``buf`` (``array_api_compat.array_namespace``, once per type)."""
    t = type(buf)
    xp = _NAMESPACES.get(t)
    if xp is None:
        import array_api_compat

        xp = _NAMESPACES[t] = array_api_compat.array_namespace(buf)
    return xp


def _is_buffer(v) -> bool:
    """Whether an operand is a buffer (an index or start that may be lazy), not a Python integer."""
    return hasattr(v, "shape") and hasattr(v, "dtype")


def _operand(xp, v, like):
    """``v`` (a buffer or a scalar) as a buffer of ``like``'s dtype."""
    v = xp.asarray(v) if _is_buffer(v) else xp.asarray(v, dtype=like.dtype)
    return v if v.dtype == like.dtype else xp.astype(v, like.dtype)


def _fresh(xp, x):
    """A new buffer holding ``x``'s values (the primitives' results never alias their operands)."""
    return xp.asarray(x, copy=True)


def _along(axis: int, n: int, ndim: int) -> tuple:
    """The shape that puts a 1-D array of length ``n`` along ``axis`` of an ``ndim``-d array."""
    return (1,) * axis + (n,) + (1,) * (ndim - axis - 1)


# -- basic keys: slice and slice_update -------------------------------------------------------------


def _key_ranges(key: tuple, shape: tuple) -> tuple[list, list]:
    """(per axis of x: its index as an int or the range of indices a slice takes; the result axes
    that ``None`` entries add).  Ints are normalised, slices resolved against their axis."""
    entries, new, out_axis, axis = [], [], 0, 0
    for e in key:
        if e is None:
            new.append(out_axis)
            out_axis += 1
            continue
        n = shape[axis]
        axis += 1
        if e.__class__ is tuple:
            entries.append(range(*slice(*e).indices(n)))
            out_axis += 1
        else:
            i = operator.index(e)
            entries.append(i + n if i < 0 else i)
    entries += [range(n) for n in shape[axis:]]
    return entries, new


def _as_slice(r: range) -> slice:
    """A slice with in-range bounds taking the indices of ``r`` (the standard leaves out-of-range
    bounds unspecified)."""
    if not len(r):
        return slice(0, 0)
    return slice(r.start, r.stop if r.stop >= 0 else None, r.step)


def _with_new_axes(xp, y, new: list):
    if not new:
        return y
    shape = list(y.shape)
    for d in new:
        shape.insert(d, 1)
    return xp.reshape(y, tuple(shape))


def _slice_any(x, *, key):
    xp = namespace_of(x)
    entries, new = _key_ranges(key, x.shape)
    y = x[tuple(e if e.__class__ is int else _as_slice(e) for e in entries)] if entries else x
    return _with_new_axes(xp, y, new)


def _placed(xp, x, v, windows: list):
    """``x`` with the values ``v`` written into a window, as a select (no buffer is written).

    ``windows[a]`` describes axis a: None where ``v`` covers the whole axis, else
    ``(t, inside, size)``: for each index c of x's axis, the index ``t[c]`` of ``v`` along that axis
    and whether c lies in the window (``v`` has ``size`` elements there, 1 where it broadcasts)."""
    mask = None
    for a, w in enumerate(windows):
        if w is None:
            continue
        t, inside, size = w
        if size > 1:
            v = xp.take(v, xp.clip(t, 0, size - 1), axis=a)
        m = xp.reshape(inside, _along(a, inside.shape[0], x.ndim))
        mask = m if mask is None else mask & m
    if mask is None:  # the window is the whole array
        return _fresh(xp, xp.broadcast_to(v, x.shape))
    return xp.where(mask, v, x)


def _slice_update_any(x, v, *, key):
    xp = namespace_of(x)
    entries, new = _key_ranges(key, x.shape)
    region = [len(e) for e in entries if e.__class__ is range]
    if 0 in region:
        return _fresh(xp, x)
    v = _operand(xp, v, x)
    # v broadcasts to x[key]; then without the new axes and with size 1 at the integer entries
    v = xp.broadcast_to(v, tuple(_with_new_axes_shape(region, new)))
    v = xp.reshape(v, tuple(1 if e.__class__ is int else len(e) for e in entries))
    windows = []
    for n, e in zip(x.shape, entries):
        c = xp.arange(n, dtype=xp.int64)
        if e.__class__ is int:
            windows.append((c, c == e, 1))
        elif e == range(n):
            windows.append(None)
        else:
            offset = c - e.start
            t = offset // e.step
            windows.append((t, (offset % e.step == 0) & (t >= 0) & (t < len(e)), len(e)))
    return _placed(xp, x, v, windows)


def _with_new_axes_shape(region: list, new: list) -> list:
    shape = list(region)
    for d in new:
        shape.insert(d, 1)
    return shape


# -- index arrays: gather and scatter ---------------------------------------------------------------


def _index_dims_at(axes: tuple) -> int:
    """Where gather's result holds the index arrays' dimensions: in place of adjacent axes, else in
    front (NumPy's rule)."""
    return axes[0] if axes[-1] - axes[0] == len(axes) - 1 else 0


def _indexed_layout(xp, x, axes: tuple):
    """(x with its indexed axes moved to gather's index position ``lead`` and merged into one,
    lead, the shapes before and after that axis)."""
    shape = tuple(x.shape)
    rest = [a for a in range(x.ndim) if a not in axes]
    lead = _index_dims_at(axes)
    perm = tuple(rest[:lead]) + tuple(axes) + tuple(rest[lead:])
    if perm != tuple(range(x.ndim)):
        x = xp.permute_dims(x, perm)
    pre = tuple(shape[a] for a in rest[:lead])
    post = tuple(shape[a] for a in rest[lead:])
    return xp.reshape(x, pre + (math.prod(shape[a] for a in axes),) + post), lead, pre, post, perm


def _flat_indices(xp, shape: tuple, index_bufs, axes: tuple, mode=None):
    """(the index arrays as one 1-D int64 index into the merged indexed axes (C order), their
    broadcast shape, the mask of the in-range ones or None).  Negative indices count from the end;
    mode "clip" clamps, "drop"/"fill" mark the out-of-range ones invalid."""
    if len({tuple(i.shape) for i in index_bufs}) > 1:
        index_bufs = xp.broadcast_arrays(*index_bufs)
    lin, valid, stride = None, None, 1
    for i, a in reversed(list(zip(index_bufs, axes))):
        n = shape[a]
        if mode in ("drop", "fill"):
            ok = (i < n) if xp.isdtype(i.dtype, "unsigned integer") else (i >= -n) & (i < n)
            valid = ok if valid is None else valid & ok
        i = xp.astype(i, xp.int64)
        i = xp.where(i < 0, i + n, i)
        if mode == "clip":
            i = xp.clip(i, 0, max(n - 1, 0))
        lin = i * stride if lin is None else lin + i * stride
        stride *= n
    bshape = tuple(lin.shape)
    return xp.reshape(lin, (-1,)), bshape, None if valid is None else xp.reshape(valid, (-1,))


def _gather_any(x, *index_bufs, axes):
    xp = namespace_of(x)
    xt, lead, pre, post, _ = _indexed_layout(xp, x, axes)
    lin, bshape, _ = _flat_indices(xp, tuple(x.shape), index_bufs, axes)
    return xp.reshape(xp.take(xt, lin, axis=lead), pre + bshape + post)


def _combiners(xp, dtype) -> dict:
    if dtype == xp.bool:  # NumPy's add/multiply/minimum/maximum of booleans
        return {"add": xp.logical_or, "multiply": xp.logical_and, "min": xp.logical_and, "max": xp.logical_or}
    return {"add": xp.add, "multiply": xp.multiply, "min": xp.minimum, "max": xp.maximum}


def _scatter_any(x, u, *index_bufs, axes, kind, mode, unique_indices=False):
    """Scatter by sorting: the updates are ordered by their position (a stable sort, so repeated
    indices keep their order), each run of one position is reduced by a segmented scan (log2(m)
    ``where`` steps over the m updates), and every position of x finds the last update of its run
    with ``searchsorted``; x's values are then combined with it (kind "set": replaced by the last of
    the repeated updates, as NumPy's assignment gives).  Memory O(size of x + size of the updates),
    time O((m log m) * the update's other dimensions); "drop"/"fill" skip out-of-range updates,
    "clip" clamps their indices."""
    xp = namespace_of(x)
    shape = tuple(x.shape)
    xt, lead, pre, post, perm = _indexed_layout(xp, x, axes)
    k = xt.shape[lead]
    lin, bshape, valid = _flat_indices(xp, shape, index_bufs, axes, mode)
    m = lin.shape[0]
    if m == 0 or k == 0 or 0 in pre or 0 in post:
        return _fresh(xp, x)
    if valid is not None:  # out-of-range updates go past the last position, where nothing reads them
        lin = xp.where(valid, lin, xp.asarray(k, dtype=lin.dtype))
    u = xp.reshape(xp.broadcast_to(_operand(xp, u, x), pre + bshape + post), pre + (m,) + post)
    order = xp.argsort(lin, stable=True)
    lin = xp.take(lin, order)
    u = xp.take(u, order, axis=lead)
    combine = None if kind == "set" else _combiners(xp, x.dtype)[kind]
    if combine is not None:
        u = _segmented_scan(xp, u, lin, lead, combine)
    positions = xp.arange(k, dtype=lin.dtype)
    last = xp.clip(xp.searchsorted(lin, positions, side="right") - 1, 0, m - 1)
    hit = xp.take(lin, last) == positions  # the position's run exists (its last element is there)
    values = xp.take(u, last, axis=lead)
    if combine is not None:
        values = combine(xt, values)
    out = xp.where(xp.reshape(hit, _along(lead, k, xt.ndim)), values, xt)
    out = xp.reshape(out, pre + tuple(shape[a] for a in axes) + post)
    if perm != tuple(range(len(shape))):
        inverse = [0] * len(perm)
        for i, p in enumerate(perm):
            inverse[p] = i
        out = xp.permute_dims(out, tuple(inverse))
    return out


def _segmented_scan(xp, u, keys, axis: int, combine):
    """The inclusive scan of ``u`` along ``axis`` within each run of equal ``keys`` (sorted, 1-D):
    after it, the last element of a run holds the combination of the whole run (Hillis-Steele:
    at step d each element combines with the one d before it when both lie in one run)."""
    m = keys.shape[0]
    lead = (slice(None),) * axis
    d = 1
    while d < m:
        same = xp.concat([xp.zeros((d,), dtype=xp.bool), keys[d:] == keys[:-d]])
        before = xp.concat([u[lead + (slice(0, d), ...)], u[lead + (slice(0, m - d), ...)]], axis=axis)
        u = xp.where(xp.reshape(same, _along(axis, m, u.ndim)), combine(before, u), u)
        d *= 2
    return u


# -- windows with dynamic starts, boolean masks -------------------------------------------------------


def _clamped_start(xp, s, n: int, size: int):
    """A start clamped so that a window of ``size`` fits in ``n`` (JAX's rule): a Python int, or an
    int64 0-d buffer for a buffer start (its value is never read on the host)."""
    if _is_buffer(s):
        return xp.clip(xp.astype(s, xp.int64), 0, n - size)
    return min(max(operator.index(s), 0), n - size)


def _dynamic_slice_any(x, *starts, sizes):
    xp = namespace_of(x)
    key, moved = [], []
    for a, (s, size, n) in enumerate(zip(starts, sizes, x.shape)):
        s = 0 if size == n else _clamped_start(xp, s, n, size)
        if _is_buffer(s):
            key.append(slice(None))
            moved.append((a, s, size))
        else:
            key.append(slice(s, s + size))
    y = x[tuple(key)] if key else x
    for a, s, size in moved:
        y = xp.take(y, s + xp.arange(size, dtype=xp.int64), axis=a)
    return y


def _dynamic_update_slice_any(x, u, *starts):
    xp = namespace_of(x)
    u = _operand(xp, u, x)
    if 0 in tuple(u.shape):
        return _fresh(xp, x)
    windows = []
    for s, size, n in zip(starts, u.shape, x.shape):
        if size == n:
            windows.append(None)
            continue
        t = xp.arange(n, dtype=xp.int64) - _clamped_start(xp, s, n, size)
        windows.append((t, (t >= 0) & (t < size), size))
    return _placed(xp, x, u, windows)


def _boolean_mask_any(x, mask, *, axis):
    """``x[(slice(None),) * axis + (mask,)]`` with the standard's one boolean index (the sole index):
    the masked axes are moved to the front for it and the selection put back at ``axis``."""
    xp = namespace_of(x)
    if axis == 0:
        return x[mask]
    k = mask.ndim
    perm = tuple(range(axis, axis + k)) + tuple(range(axis)) + tuple(range(axis + k, x.ndim))
    y = xp.permute_dims(x, perm)[mask]
    return xp.permute_dims(y, tuple(range(1, axis + 1)) + (0,) + tuple(range(axis + 1, y.ndim)))


GENERIC.update({
    "slice": _slice_any,
    "slice_update": _slice_update_any,
    "gather": _gather_any,
    "scatter": _scatter_any,
    "dynamic_slice": _dynamic_slice_any,
    "dynamic_update_slice": _dynamic_update_slice_any,
    "boolean_mask": _boolean_mask_any,
})
