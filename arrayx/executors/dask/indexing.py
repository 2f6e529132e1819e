"""The Dask executor's indexing: gathers, masks, scatters, slices and their updates, reshapes.

Dask's own ``__getitem__``/``__setitem__`` with the cases it refuses or gets wrong made to work
(several index arrays, n-D masks, bool scalars, negative steps, unknown chunk sizes); what Dask
cannot express lazily is computed on the host, as the executor's docstring lists.
"""
from __future__ import annotations

import numpy as np

from arrayx.executors.common.indexing import drop_out_of_range, gather_key, resolved_basic_key
from arrayx.executors.dask.base import _chunks_for, _compute, _resolve

da = None  # dask.array, set by DaskExecutor._load
_compat = None  # array_api_compat.dask.array


def _is_int_index(k) -> bool:
    return hasattr(k, "dtype") and hasattr(k, "shape") and k.dtype.kind in "iu"


def _host_index(k):
    return _compute(k) if isinstance(k, da.Array) else k


def _gather(buf, *index_bufs, axes):
    for i in index_bufs:
        if isinstance(i, da.Array):
            _resolve(i)  # Dask gathers only with indices of known chunk sizes
    return _index(buf, gather_key(index_bufs, axes))


def _boolean_mask(buf, mask, *, axis):
    return _index(buf, (slice(None),) * axis + (mask,))


def _index(buf, k: tuple):
    """``buf[k]`` with the cases Dask's own indexing refuses or gets wrong made to work."""
    if any(isinstance(e, (bool, np.bool_)) for e in k):
        # Dask reads a bool scalar as the integer 0/1; NumPy (and the standard) add a new axis
        k2 = tuple(None if isinstance(e, (bool, np.bool_)) else e for e in k)
        out = _index(buf, k2)
        if not all(e for e in k if isinstance(e, (bool, np.bool_))):
            first = next(i for i, e in enumerate(k) if isinstance(e, (bool, np.bool_)) and not e)
            out = out[(slice(None),) * _dims_before(k, first, buf.ndim) + (slice(0, 0),)]
        return out
    masks = [(i, e) for i, e in enumerate(k) if _is_mask(e)]
    for i, e in masks:
        ax = _axes_before(k, i, buf.ndim)
        covered = buf.shape[ax:ax + e.ndim]
        if len(covered) < e.ndim or any(m not in (n, 0) for m, n in zip(e.shape, covered) if m == m and n == n):
            raise IndexError(f"boolean index of shape {e.shape} does not match the indexed axes {covered}")
    for i, e in masks:
        if _is_mask(e) and e.ndim != 1 and not (e.ndim == buf.ndim > 0 and len(k) == 1):
            # Dask takes 1-D masks and whole-array masks only
            if e.ndim == 0:  # a 0-d mask adds an axis of length 1 or 0, like a bool scalar
                out = _index(buf, k[:i] + (None,) + k[i + 1:])
                return out[(slice(None),) * _dims_before(k, i, buf.ndim) + (e.reshape(1),)]
            ax = _axes_before(k, i, buf.ndim)  # merge the axes the mask covers, then a 1-D mask
            merged = _reshape(buf, shape=buf.shape[:ax] + (-1,) + buf.shape[ax + e.ndim:])
            return _index(merged, k[:i] + (_reshape(e, shape=(-1,)),) + k[i + 1:])
    arrays = [e for e in k if _is_int_index(e) and e.ndim > 0]
    if arrays:  # Dask gathers only from arrays whose chunk sizes are known (e.g. not unique's values)
        _resolve(buf)
    if not arrays or (len(arrays) == 1 and arrays[0].ndim == 1):
        return buf[k]
    if len(arrays) == 1 and all(e is None or e is Ellipsis or isinstance(e, slice) or e is arrays[0] for e in k):
        out = _take_blockwise(buf, k, next(i for i, e in enumerate(k) if e is arrays[0]))
        if out is not None:
            return out
    if all(_is_int_index(e) or isinstance(e, (int, np.integer)) for e in k) and len(k) == buf.ndim:
        # the standard's integer-array indexing (every axis): vectorised gather
        idx = np.broadcast_arrays(*(np.asarray(_host_index(e)) for e in k))
        if idx[0].ndim == 0:
            return buf[tuple(int(i) for i in idx)]
        return buf.vindex[tuple(idx)]
    if len(arrays) == 1:
        # one n-D integer array along one axis: gather its flattened values, then restore its shape
        pos = next(i for i, e in enumerate(k) if e is arrays[0])
        idx = np.asarray(_host_index(arrays[0]))
        flat = tuple(idx.reshape(-1) if i == pos else e for i, e in enumerate(k))
        out = buf[flat]
        axis = _dims_before(k, pos, buf.ndim)
        return out.reshape(out.shape[:axis] + idx.shape + out.shape[axis + 1:])
    # several index arrays mixed with slices (left implementation-defined by the standard): on the host
    host = _compute(buf)[tuple(_host_index(e) for e in k)]
    return da.from_array(host, chunks=_chunks_for(host.shape), name=False)


_TAKE_CHUNK_BYTES = 128 << 20


def _take_blockwise(buf, k: tuple, pos: int):
    """``buf[k]`` where ``k[pos]`` is the one n-D integer array and the rest are slices, ``None``
    and ``...``: one ``numpy.take`` per chunk of the index, with the gathered axis of ``buf`` in one
    chunk.  Dask's own gather of a flattened n-D index splits the result into a chunk per row
    (SciPy's bootstrap, ``sample[..., i]`` with ``i`` of shape (9999, 100): 30,000 tasks that every
    later read orders and runs again).  ``None`` when the gathered axis is too large for one chunk."""
    idx = _resolve(k[pos]) if isinstance(k[pos], da.Array) else k[pos]
    pre = buf[tuple(slice(None) if i == pos else e for i, e in enumerate(k))]
    ax = _dims_before(k, pos, buf.ndim)
    other = 1
    for i, c in enumerate(pre.chunks):
        if i != ax:
            other *= max(c, default=1)
    row_bytes = other * pre.dtype.itemsize  # result bytes per index element in one chunk
    if row_bytes * pre.shape[ax] > _TAKE_CHUNK_BYTES:
        return None
    pre = pre.rechunk({ax: -1})
    per_first = row_bytes * int(np.prod(idx.shape[1:]))
    rows = max(1, _TAKE_CHUNK_BYTES // max(per_first, 1))
    wanted = (rows,) + tuple(idx.shape[1:])
    if isinstance(idx, da.Array):
        index = idx.rechunk(wanted)
    else:
        index = da.from_array(np.asarray(idx), chunks=wanted, name=False)
    n, m = pre.ndim, index.ndim
    pre_ind = tuple(range(n))
    idx_ind = tuple(range(n, n + m))
    out_ind = pre_ind[:ax] + idx_ind + pre_ind[ax + 1:]
    return da.blockwise(_take_block, out_ind, pre, pre_ind, index, idx_ind, axis=ax, dtype=pre.dtype,
                        concatenate=True, meta=np.empty((0,) * len(out_ind), dtype=pre.dtype))


def _take_block(block, index, axis):
    return np.take(block, index, axis=axis)


def _is_mask(e) -> bool:
    return hasattr(e, "dtype") and hasattr(e, "ndim") and e.dtype == np.bool_


def _consumed(e) -> int:
    """Input axes one key entry indexes (Ellipsis aside)."""
    if e is None or isinstance(e, (bool, np.bool_)):
        return 0
    return e.ndim if _is_mask(e) else 1


def _axes_before(k: tuple, pos: int, ndim: int) -> int:
    """Number of input axes that entries ``k[:pos]`` index."""
    rest = ndim - sum(_consumed(e) for e in k if e is not Ellipsis)
    return sum(rest if e is Ellipsis else _consumed(e) for e in k[:pos])


def _dims_before(k: tuple, pos: int, ndim: int) -> int:
    """Number of result dimensions that entries ``k[:pos]`` produce."""
    n = 0
    for e in k[:pos]:
        if e is Ellipsis:
            n += ndim - sum(1 for f in k if f is not None and f is not Ellipsis
                            and not isinstance(f, (bool, np.bool_)))
        elif e is None or isinstance(e, (bool, np.bool_)) or isinstance(e, slice):
            n += 1
        elif _is_int_index(e):
            n += e.ndim
    return n


_NUMPY_UPDATE = {"add": np.add, "multiply": np.multiply, "min": np.minimum, "max": np.maximum}


def _scatter(buf, u, *index_bufs, axes, kind, mode, unique_indices=False):
    """scatter, lazily where Dask can express it: a set through one 1-D index array in range."""
    k = gather_key(index_bufs, axes)
    if kind == "set" and mode != "drop" and len(index_bufs) == 1 and index_bufs[0].ndim == 1:
        out = buf.copy()
        try:
            out[k] = u
            return out
        except (NotImplementedError, ValueError, IndexError, TypeError):
            pass  # a key Dask's __setitem__ cannot take: below, on the host
    # accumulating updates (repeated indices add up): NumPy's unbuffered ufunc.at on the host
    host = np.array(_compute(buf), copy=True)
    hk = [_host_index(e) for e in index_bufs]
    hv = _compute(u) if isinstance(u, da.Array) else u
    if mode == "drop":
        hk, hv = drop_out_of_range(host.shape, hv, hk, axes)
    key = gather_key(hk, axes)
    if kind == "set":
        host[key] = hv
    else:
        _NUMPY_UPDATE[kind].at(host, key, hv)
    return da.from_array(host, chunks=buf.chunks if all(c == c for c in buf.shape) else _chunks_for(host.shape), name=False)


def _slice(buf, *, key):
    key = resolved_basic_key(key, buf.shape)
    from arrayx.executors.dask.random import sliced_draw

    out = sliced_draw(buf, key)  # a slice of a random draw draws only the sliced counters
    return buf[key] if out is None else out


def _summary_to_host(buf, edge: int) -> np.ndarray:
    """What a summarised print shows of ``buf``: along each axis longer than ``2 * edge + 1``, the
    first and last ``edge`` entries with the first entry again between them (NumPy formats a
    summarised array from its edges only; the entry between keeps the axis long enough to be
    elided).  Only the chunks those touch are computed; a random draw draws only those values."""
    from arrayx.executors.dask.onechunk import sliced

    long = [n > 2 * edge + 1 for n in buf.shape]
    if not any(long):
        return _compute(buf)

    def piece(key):
        out = sliced(buf, key)
        return buf[key] if out is None else out

    def nested(prefix, axis):
        if axis == buf.ndim:
            return piece(prefix)
        if not long[axis]:
            return [nested(prefix + (slice(None),), axis + 1)]
        n = buf.shape[axis]
        return [nested(prefix + (slice(0, edge),), axis + 1), nested(prefix + (slice(n - edge, n),), axis + 1)]

    host = _compute(da.block(nested((), 0)))
    for axis in range(buf.ndim):  # the first entry again between the edges: any value does
        if long[axis]:
            lead = (slice(None),) * axis
            host = np.concatenate([host[lead + (slice(0, edge),)], host[lead + (slice(0, 1),)],
                                   host[lead + (slice(edge, None),)]], axis=axis)
    return host


def _slice_update(buf, v, *, key):
    """Dask's ``__setitem__`` fails on keys with several Nones and on a negative step after an
    int: the Nones go (with the length-1 axes they give the region) and negative steps become
    positive ones over the same elements (with the region's values reversed along that axis)."""
    key = resolved_basic_key(key, buf.shape)
    region = buf[key].shape
    if getattr(v, "ndim", 0):
        v = da.broadcast_to(v, region)  # v may be broadcastable to the region only
    if 0 in region:  # nothing to write; Dask's __setitem__ refuses a value of size 0
        return buf.copy()
    region_dims = [e for e in key if not isinstance(e, (int, np.integer))]
    region_dims += [slice(None)] * (getattr(v, "ndim", 0) - len(region_dims))
    if getattr(v, "ndim", 0):
        v = v[tuple(0 if e is None else slice(None, None, -1) if e.step is not None and e.step < 0
                    else slice(None) for e in region_dims)]
    out = buf.copy()
    out[tuple(_forward(e) for e in key if e is not None)] = v
    return out


def _forward(e):
    """A resolved slice with a negative step as the positive-step slice over the same elements."""
    if not isinstance(e, slice) or e.step is None or e.step > 0 or e.start == e.stop:
        return e
    r = range(e.start, -1 if e.stop is None else e.stop, e.step)
    return slice(r[-1], r[0] + 1, -e.step)


def _take_along_axis(x, indices, *, axis):
    """Dask has no take_along_axis: a blockwise gather with the gathered axis in one chunk."""
    _resolve(x)
    _resolve(indices)
    x = x.rechunk({axis: -1})
    shape = np.broadcast_shapes(
        tuple(1 if i == axis else n for i, n in enumerate(x.shape)),
        tuple(1 if i == axis else n for i, n in enumerate(indices.shape)),
    )
    x = da.broadcast_to(x, tuple(x.shape[i] if i == axis else n for i, n in enumerate(shape)))
    indices = da.broadcast_to(indices, tuple(indices.shape[i] if i == axis else n for i, n in enumerate(shape)))
    x = x.rechunk({i: indices.chunks[i] for i in range(x.ndim) if i != axis})
    n = x.shape[axis]
    return da.map_blocks(
        lambda b, i: np.take_along_axis(b, np.where(i < 0, i + n, i), axis=axis),
        x, indices, dtype=x.dtype, chunks=indices.chunks,
    )


def _reshape(x, *, shape, copy=None):
    _resolve(x)  # Dask reshapes only arrays whose chunk sizes are known
    try:
        return _compat.reshape(x, shape, copy=copy)
    except NotImplementedError:  # Dask only merges or splits whole chunks: give it one chunk to reshape
        return _compat.reshape(x.rechunk(-1), shape, copy=copy)
