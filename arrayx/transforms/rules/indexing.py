"""Rules for the indexing primitives (``arrayx/api/indexing.py``): slice, slice_update, gather,
scatter, dynamic_slice, dynamic_update_slice, boolean_mask and take_along_axis.

Index arrays and starts are integer operands: never differentiated.  Each read transposes
to the matching write into zeros (gather <-> scatter-add, slice <-> slice_update,
dynamic_slice <-> dynamic_update_slice, boolean_mask <-> scatter-add at its nonzero()).
Scatter's kinds: add and set are linear in (x, updates) jointly; multiply is linear in x,
and differentiable in the updates where no index repeats (JAX's rule: pass
``unique_indices=True`` when that is not known from the values); min and max share the
tangent evenly between the elements that reach the extremum (as JAX does).  With repeated
indices ``set`` keeps one write (the executor's); its derivative follows that write.
"""
from __future__ import annotations

import numpy as np

from arrayx import api as ax
from arrayx.api import indexing as ix
from arrayx.api._index_updates import _unique_known
from arrayx.executors.common.indexing import index_dims_at
from arrayx.core.tracers import ShapeDtypeStruct
from arrayx.transforms.rules._define import (
    count_known_values, defabstract, deflinear, is_undefined, unbroadcast, zeros_for,
)


_sds = ShapeDtypeStruct._trusted


# -- abstract evaluation --------------------------------------------------------------------------

defabstract(ix.slice_p, lambda x, *, key: _sds(ix.basic_shape(tuple(x.shape), key), x.dtype))
defabstract(ix.slice_update_p, lambda x, v, *, key: _sds(tuple(x.shape), x.dtype))
defabstract(ix.gather_p, lambda x, *idx, axes: _sds(ix.gather_shape(tuple(x.shape), tuple(idx[0].shape), axes), x.dtype))
defabstract(ix.scatter_p, lambda x, u, *idx, **params: _sds(tuple(x.shape), x.dtype))
defabstract(ix.dynamic_slice_p, lambda x, *starts, sizes: _sds(tuple(sizes), x.dtype))
defabstract(ix.dynamic_update_slice_p, lambda x, u, *starts: _sds(tuple(x.shape), x.dtype))
defabstract(ix.take_along_axis_p, lambda x, indices, *, axis: _sds(tuple(indices.shape), x.dtype))


def _boolean_mask_abstract(x, mask, *, axis):
    # the mask's dimensions collapse into one, as long as its number of True values
    n = int(count_known_values(mask, "boolean_mask").sum())
    shape = tuple(x.shape)
    return _sds(shape[:axis] + (n,) + shape[axis + mask.ndim:], x.dtype)


defabstract(ix.boolean_mask_p, _boolean_mask_abstract,
            data_dependent="index with a boolean mask eagerly (outside make_graph/jit), or keep the shape "
                           "with where(mask, x, 0)")


# -- reads and their transposes ------------------------------------------------------------------------


def _slice_transpose(ct, x, *, key):
    return (ix.slice_update_p.bind(zeros_for(x.aval, ct), ct, key=key),)


deflinear(ix.slice_p, _slice_transpose)


def _slice_update_transpose(ct, x, v, *, key):
    ct_x = ct_v = None
    if is_undefined(x):  # the overwritten region does not reach the output
        ct_x = ix.slice_update_p.bind(ct, np.zeros((), ct.dtype)[()], key=key)
    if is_undefined(v):
        ct_v = unbroadcast(ix.slice_p.bind(ct, key=key), tuple(v.shape))
    return ct_x, ct_v


def _slice_update_jvp(primals, tangents, *, key):
    (x, v), (tx, tv) = primals, tangents
    out = ix.slice_update_p.bind(x, v, key=key)
    if tx is None and tv is None:
        return out, None
    if tv is None:  # v may be a scalar: its zero tangent is a scalar too
        tv = ax.zeros_like(v) if isinstance(v, ax.Array) else np.zeros((), x.dtype)[()]
    return out, ix.slice_update_p.bind(ax.zeros_like(x) if tx is None else tx, tv, key=key)


ix.slice_update_p.jvp = _slice_update_jvp
ix.slice_update_p.transpose = _slice_update_transpose


def _gather_transpose(ct, x, *idx, axes):
    zeros = zeros_for(x.aval, ct)
    out = ix.scatter_p.bind(zeros, ct, *idx, axes=axes, kind="add", mode="promise_in_bounds", unique_indices=False)
    return (out,) + (None,) * len(idx)


deflinear(ix.gather_p, _gather_transpose)


def _dynamic_slice_transpose(ct, x, *starts, sizes):
    return (ix.dynamic_update_slice_p.bind(zeros_for(x.aval, ct), ct, *starts),) + (None,) * len(starts)


deflinear(ix.dynamic_slice_p, _dynamic_slice_transpose)


def _dynamic_update_slice_transpose(ct, x, u, *starts):
    ct_x = ct_u = None
    if is_undefined(x):
        ct_x = ix.dynamic_update_slice_p.bind(ct, zeros_for(_aval(u), ct), *starts)
    if is_undefined(u):
        ct_u = ix.dynamic_slice_p.bind(ct, *starts, sizes=tuple(u.shape))
    return (ct_x, ct_u) + (None,) * len(starts)


deflinear(ix.dynamic_update_slice_p, _dynamic_update_slice_transpose, linear_argnums=(0, 1))


def _boolean_mask_transpose(ct, x, mask, *, axis):
    idx = ax.nonzero(mask)  # the mask is a known constant here
    axes = tuple(range(axis, axis + len(idx)))
    zeros = zeros_for(x.aval, ct)
    return ix.scatter_p.bind(zeros, ct, *idx, axes=axes, kind="add", mode="promise_in_bounds", unique_indices=True), None


deflinear(ix.boolean_mask_p, _boolean_mask_transpose)


def _take_along_axis_transpose(ct, x, indices, *, axis):
    ndim = len(x.shape)
    idx = []
    for d in range(ndim):
        if d == axis:
            idx.append(indices)
        else:
            shape = [1] * ndim
            shape[d] = indices.shape[d]
            idx.append(ax.reshape(ax.arange(indices.shape[d], device=ct.device), tuple(shape)))
    idx = ax.broadcast_arrays(*idx)
    zeros = zeros_for(x.aval, ct)
    out = ix.scatter_p.bind(zeros, ct, *idx, axes=tuple(range(ndim)), kind="add", mode="promise_in_bounds",
                            unique_indices=False)
    return out, None


deflinear(ix.take_along_axis_p, _take_along_axis_transpose)


# -- scatter ---------------------------------------------------------------------------------------


def _aval(v):
    return v.aval if is_undefined(v) else ShapeDtypeStruct._trusted(tuple(v.shape), v.dtype)


def _scatter(x, u, idx, kind, axes, mode, unique_indices=False):
    return ix.scatter_p.bind(x, u, *idx, axes=axes, kind=kind, mode=mode, unique_indices=unique_indices)


def _gather_or_zero(y, idx, axes, mode, like_ndim):
    """``gather(y)`` at the indices, 0 where scatter's mode "drop" skipped them."""
    if mode != "drop":
        return ix.gather_p.bind(y, *idx, axes=axes)
    valid = ix._in_range(idx, [y.shape[a] for a in axes])
    safe = [ax.where(valid, i, 0) for i in idx]
    out = ix.gather_p.bind(y, *safe, axes=axes)
    return ax.where(ix._broadcast_valid(valid, out.shape, index_dims_at(axes)), out, 0)


def _winners(x, u, idx, axes, mode, device):
    """Which updates a ``set`` with repeated indices kept (True in u's index dimensions)."""
    shape = tuple(idx[0].shape)
    ids = ax.reshape(ax.arange(int(np.prod(shape, dtype=np.int64)), device=device), shape)
    target = tuple(x.shape[a] for a in axes)
    k_axes = tuple(range(len(axes)))
    written = _scatter(ax.full(target, -1, dtype=ids.dtype, device=device), ids, idx, "set", k_axes, mode)
    won = _gather_or_zero(written, idx, k_axes, mode, len(shape)) == ids
    return ix._broadcast_valid(won, tuple(u.shape), index_dims_at(axes))


def _scatter_jvp(primals, tangents, *, axes, kind, mode, unique_indices):
    x, u, *idx = primals
    tx, tu = tangents[0], tangents[1]
    out = _scatter(x, u, idx, kind, axes, mode, unique_indices)
    if tx is None and tu is None:
        return out, None
    if kind in ("set", "add"):  # linear in (x, u) jointly; u may be a scalar
        tu0 = (ax.zeros_like(u) if isinstance(u, ax.Array) else np.zeros((), x.dtype)[()]) if tu is None else tu
        t = _scatter(ax.zeros_like(x) if tx is None else tx, tu0, idx, kind, axes, mode, unique_indices)
        return out, t
    if kind == "multiply":
        t = None if tx is None else _scatter(tx, u, idx, "multiply", axes, mode, unique_indices)
        if tu is not None:
            if not (unique_indices or _unique_known(idx)):
                raise NotImplementedError(
                    "at[...].multiply: the derivative with respect to the values needs indices that do "
                    "not repeat; pass unique_indices=True when they are unique (as in JAX)"
                )
            c = _scatter(ax.zeros_like(x), _gather_or_zero(x, idx, axes, mode, u.ndim) * tu, idx, "add",
                         axes, mode, True)
            t = c if t is None else t + c
        return out, t
    # min / max: the tangent of the elements reaching the extremum, shared evenly between ties
    tie_x = ax.astype(x == out, x.dtype)
    reached = _gather_or_zero(out, idx, axes, mode, u.ndim)
    tie_u = u == reached
    if mode == "drop":
        valid = ix._in_range(idx, [x.shape[a] for a in axes])
        tie_u = tie_u & ix._broadcast_valid(valid, tuple(reached.shape), index_dims_at(axes))
    tie_u = ax.astype(tie_u, x.dtype)
    count = tie_x + _scatter(ax.zeros_like(x), tie_u, idx, "add", axes, mode)
    t = None
    if tx is not None:
        t = tx * tie_x
    if tu is not None:
        c = _scatter(ax.zeros_like(x), tu * tie_u, idx, "add", axes, mode)
        t = c if t is None else t + c
    return out, t / count


def _scatter_transpose(ct, x, u, *idx, axes, kind, mode, unique_indices):
    ux, uu = is_undefined(x), is_undefined(u)
    none = (None,) * len(idx)
    if kind == "multiply" and not uu:  # linear in x for known factors
        return (_scatter(ct, u, idx, "multiply", axes, mode, unique_indices), None) + none
    if kind not in ("add", "set"):
        raise ValueError(f"scatter: the {kind!r} kind is not linear in its updates")
    ct_x = ct_u = None
    if ux:
        ct_x = ct if kind == "add" else _scatter(ct, zeros_for(_aval(u), ct), idx, "set", axes, mode, unique_indices)
    if uu:
        ct_u = _gather_or_zero(ct, idx, axes, mode, len(u.shape))
        if kind == "set" and not unique_indices:
            ct_u = ax.where(_winners(x, u, idx, axes, mode, ct.device), ct_u, 0)
    return (ct_x, ct_u) + none


ix.scatter_p.jvp = _scatter_jvp
ix.scatter_p.transpose = _scatter_transpose


# -- batching -------------------------------------------------------------------------------------
# Every rule moves batch axes first; a batched index array or start makes the batch axis one more
# indexed axis (a gather/scatter with an iota index for it), so members never mix.

from arrayx.transforms.rules._batch import moveaxis_to  # noqa: E402
from arrayx.transforms.rules._batch import defbatch, size_of, to_front  # noqa: E402

_ALL = (None, None, None)


def _consecutive(axes) -> bool:
    return axes[-1] - axes[0] == len(axes) - 1


def _member_shape(v, d) -> tuple:
    shape = tuple(v.shape)
    return shape if d is None else shape[:d] + shape[d + 1:]


def _batch_iota(size, ndim, dtype, device):
    """``arange(size)`` shaped ``(size, 1, ..., 1)`` with ``ndim`` dimensions: the batch axis' index."""
    return ax.reshape(ax.arange(size, dtype=dtype, device=device), (size,) + (1,) * (ndim - 1))


def _slice_batch(vals, dims, *, key):
    return ix.slice_p.bind(to_front(vals[0], dims[0]), key=(_ALL, *key)), 0


def _slice_update_batch(vals, dims, *, key):
    (x, v), (dx, dv) = vals, dims
    size = size_of(vals, dims)
    x = moveaxis_to(x, dx, 0, size)
    if dv is not None:  # v broadcasts to the region: give it the region's rank behind the batch axis
        region = ix.basic_shape(tuple(x.shape[1:]), key)
        v = to_front(v, dv)
        v = ax.reshape(v, (size,) + (1,) * (len(region) - v.ndim + 1) + tuple(v.shape[1:]))
    return ix.slice_update_p.bind(x, v, key=(_ALL, *key)), 0


def _batched_indices(idx, dims, size):
    """Index arrays (they share one shape) with the batch axis first, broadcast where unbatched."""
    return [moveaxis_to(i, d, 0, size) for i, d in zip(idx, dims)]


def _gather_batch(vals, dims, *, axes):
    (x, *idx), (dx, *di) = vals, dims
    size = size_of(vals, dims)
    shifted = tuple(a + 1 for a in axes)
    if all(d is None for d in di):  # only x is batched: its indexed axes move by one
        out_dim = 0 if _consecutive(axes) else idx[0].ndim
        return ix.gather_p.bind(to_front(x, dx), *idx, axes=shifted), out_dim
    idx = _batched_indices(idx, di, size)
    if dx is None:  # the indices' batch axis lands where NumPy puts the index dimensions
        return ix.gather_p.bind(x, *idx, axes=axes), index_dims_at(axes)
    iota = _batch_iota(size, idx[0].ndim, idx[0].dtype, x.device)
    out = ix.gather_p.bind(to_front(x, dx), ax.broadcast_to(iota, tuple(idx[0].shape)), *idx, axes=(0, *shifted))
    if _consecutive(axes) and axes[0] > 0:  # the result has (batch, *index dims, *rest): put the index dims back
        p, m = axes[0], idx[0].ndim - 1
        out = ax.moveaxis(out, tuple(range(1, 1 + m)), tuple(range(1 + p, 1 + p + m)))
    return out, 0


def _scatter_batch(vals, dims, *, axes, kind, mode, unique_indices):
    (x, u, *idx), (dx, du, *di) = vals, dims
    size = size_of(vals, dims)
    x = moveaxis_to(x, dx, 0, size)
    shifted = tuple(a + 1 for a in axes)
    params = dict(kind=kind, mode=mode, unique_indices=unique_indices)
    if all(d is None for d in di):  # as gather: u's batch axis goes where gather's result has it
        m = idx[0].ndim
        if isinstance(u, ax.Array):
            u = moveaxis_to(u, du, 0 if _consecutive(axes) else m, size)
        return ix.scatter_p.bind(x, u, *idx, axes=shifted, **params), 0
    idx = _batched_indices(idx, di, size)
    m = idx[0].ndim - 1
    iota = ax.broadcast_to(_batch_iota(size, idx[0].ndim, idx[0].dtype, x.device), tuple(idx[0].shape))
    if isinstance(u, ax.Array):  # new layout: (batch, *index dims, *other axes)
        u = moveaxis_to(u, du, 0, size)
        if _consecutive(axes) and axes[0] > 0:
            p = axes[0]
            u = ax.moveaxis(u, tuple(range(1 + p, 1 + p + m)), tuple(range(1, 1 + m)))
    return ix.scatter_p.bind(x, u, iota, *idx, axes=(0, *shifted), **params), 0


def _window_indices(starts, dims, sizes, shape, size, device):
    """Index arrays (batch iota first) of the clamped windows ``start[:, j] + arange(sizes[j])``."""
    ndim = len(shape) + 1
    dtype = next(s.dtype for s in starts if isinstance(s, ax.Array))  # some start is batched
    idx = [_batch_iota(size, ndim, dtype, device)]
    for j, (s, d, k, n) in enumerate(zip(starts, dims, sizes, shape)):
        if isinstance(s, ax.Array):
            s = ax.reshape(moveaxis_to(s, d, 0, size) if d is not None else s, (-1,) + (1,) * len(shape))
            s = ax.clip(s, 0, n - k)
        else:
            s = min(max(int(s), 0), n - k)
        pos = ax.reshape(ax.arange(k, dtype=idx[0].dtype, device=device), (1,) * (j + 1) + (k,) + (1,) * (ndim - j - 2))
        idx.append(ax.astype(s, dtype) + pos if isinstance(s, ax.Array) else pos + s)
    return list(ax.broadcast_arrays(*idx)), tuple(range(ndim))


def _dynamic_slice_batch(vals, dims, *, sizes):
    (x, *starts), (dx, *ds) = vals, dims
    size = size_of(vals, dims)
    if all(d is None for d in ds):
        return ix.dynamic_slice_p.bind(to_front(x, dx), 0, *starts, sizes=(size, *sizes)), 0
    x = moveaxis_to(x, dx, 0, size)  # starts differ per member: a gather of each member's window
    idx, axes = _window_indices(starts, ds, sizes, tuple(x.shape[1:]), size, x.device)
    return ix.gather_p.bind(x, *idx, axes=axes), 0


def _dynamic_update_slice_batch(vals, dims):
    (x, u, *starts), (dx, du, *ds) = vals, dims
    size = size_of(vals, dims)
    x, u = moveaxis_to(x, dx, 0, size), moveaxis_to(u, du, 0, size)
    if all(d is None for d in ds):
        return ix.dynamic_update_slice_p.bind(x, u, 0, *starts), 0
    idx, axes = _window_indices(starts, ds, tuple(u.shape[1:]), tuple(x.shape[1:]), size, x.device)
    return ix.scatter_p.bind(x, u, *idx, axes=axes, kind="set", mode="promise_in_bounds", unique_indices=True), 0


def _take_along_axis_batch(vals, dims, *, axis):
    (x, i), (dx, di) = vals, dims
    size = size_of(vals, dims)
    return ix.take_along_axis_p.bind(moveaxis_to(x, dx, 0, size), moveaxis_to(i, di, 0, size), axis=axis + 1), 0


defbatch(ix.slice_p, _slice_batch)
defbatch(ix.slice_update_p, _slice_update_batch)
defbatch(ix.gather_p, _gather_batch)
defbatch(ix.scatter_p, _scatter_batch)
defbatch(ix.dynamic_slice_p, _dynamic_slice_batch)
defbatch(ix.dynamic_update_slice_p, _dynamic_update_slice_batch)
defbatch(ix.take_along_axis_p, _take_along_axis_batch)
