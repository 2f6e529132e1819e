"""Native keys for the indexing primitives, shared by the executors' implementations.

The namespace turns a user's key into primitives (slice, gather, scatter,
dynamic_slice, ...) whose params are plain data; these helpers turn those params into
the key Python's indexing (NumPy, CuPy, JAX, Dask buffers) understands.
"""
from __future__ import annotations

import numpy as np

__all__ = ["native_basic_key", "gather_key", "index_dims_at", "drop_out_of_range", "dynamic_window",
           "NUMPY_LIKE", "resolved_basic_key"]


def native_basic_key(key: tuple) -> tuple:
    """The key of the ``slice``/``slice_update`` param: ints, None (a new axis) and
    ``(start, stop, step)`` tuples (slices, hashable that way)."""
    return tuple(slice(*e) if e.__class__ is tuple else e for e in key)


def resolved_basic_key(key: tuple, shape: tuple) -> tuple:
    """``native_basic_key`` with each slice resolved against its axis length into non-negative
    bounds (an empty one as ``0:0``), for buffers whose slicing gets clamped negative bounds wrong
    (Dask reads ``x[-4::-2]`` on an axis of length 2 as ``x[-1::-2]``); axes of unknown length
    keep their slice."""
    out, axis = [], 0
    for e in key:
        if e is None:
            out.append(None)
            continue
        n = shape[axis]
        axis += 1
        if e.__class__ is not tuple:
            out.append(e)
        elif n != n or n is None:  # unknown length (NaN in Dask): nothing to resolve against
            out.append(slice(*e))
        else:
            r = range(*slice(*e).indices(int(n)))
            out.append(slice(r.start, r.stop if r.stop >= 0 else None, r.step) if len(r) else slice(0, 0))
    return tuple(out)


def gather_key(index_bufs, axes: tuple) -> tuple:
    """The key of ``gather``/``scatter``: index array ``j`` at axis ``axes[j]`` (increasing),
    full slices elsewhere; NumPy's advanced-indexing rule then gives the primitives' layout."""
    if len(axes) == 1:
        return (slice(None),) * axes[0] + (index_bufs[0],)
    key = [slice(None)] * (axes[-1] + 1)
    for i, a in zip(index_bufs, axes):
        key[a] = i
    return tuple(key)


def index_dims_at(axes: tuple) -> int:
    """Where gather's result holds the index arrays' dimensions: in place of adjacent axes,
    else in front (NumPy's rule)."""
    return axes[0] if axes[-1] - axes[0] == len(axes) - 1 else 0


def drop_out_of_range(shape: tuple, u, index_bufs, axes: tuple):
    """(index arrays, updates) without the updates whose indices lie outside [-n, n)
    (scatter's mode "drop"); NumPy-like buffers."""
    valid = None
    for i, a in zip(index_bufs, axes):
        n = shape[a]
        ok = (i >= -n) & (i < n)
        valid = ok if valid is None else valid & ok
    if valid is None or bool(valid.all()):
        return index_bufs, u
    if not getattr(u, "ndim", 0):  # a scalar update: the same value everywhere
        return [i[valid] for i in index_bufs], u
    lead = index_dims_at(axes)
    return [i[valid] for i in index_bufs], u[(slice(None),) * lead + (valid,)]


def dynamic_window(x, starts, sizes) -> tuple:
    """The slices of ``dynamic_slice``: each start clamped so that the window fits (JAX's rule)."""
    key = []
    for s, size, n in zip(starts, sizes, x.shape):
        s = min(max(int(s), 0), n - size)
        key.append(slice(s, s + size))
    return tuple(key)


# -- implementations for buffers with NumPy's indexing and copy (numpy, numba, cupy) --------------



def _slice(x, *, key):
    return x[native_basic_key(key)]


def _slice_update(x, v, *, key):
    out = x.copy()
    out[native_basic_key(key)] = v
    return out


def _gather(x, *index_bufs, axes):
    return x[gather_key(index_bufs, axes)]


def scatter_on_copy(accumulate: dict):
    """The scatter primitive for buffers with NumPy's indexing and copy: on a copy of x, kind "set"
    by assignment, the others (add, multiply, min, max) by ``accumulate[kind](out, key, u)``, which
    updates ``out`` at ``key`` with repeated indices accumulating and returns the result (``out``
    or a new buffer).  Each executor's table gives its accumulators (CuPy: its scatter kernels)."""

    def scatter(x, u, *index_bufs, axes, kind, mode, unique_indices=False):
        if mode == "drop":
            index_bufs, u = drop_out_of_range(x.shape, u, index_bufs, axes)
        out = x.copy()
        key = gather_key(index_bufs, axes)
        if kind == "set":
            out[key] = u
            return out
        return accumulate[kind](out, key, u)

    scatter.__name__ = scatter.__qualname__ = "scatter"
    return scatter


def _ufunc_at(ufunc):
    def at(out, key, u):
        ufunc.at(out, key, u)  # unbuffered: repeated indices accumulate
        return out

    at.__name__ = f"{ufunc.__name__}_at"
    return at


_scatter = scatter_on_copy({"add": _ufunc_at(np.add), "multiply": _ufunc_at(np.multiply),
                            "min": _ufunc_at(np.minimum), "max": _ufunc_at(np.maximum)})


def _dynamic_slice(x, *starts, sizes):
    return x[dynamic_window(x, starts, sizes)]


def _dynamic_update_slice(x, u, *starts):
    out = x.copy()
    out[dynamic_window(x, starts, u.shape)] = u
    return out


def _boolean_mask(x, mask, *, axis):
    return x[(slice(None),) * axis + (mask,)]


NUMPY_LIKE = {
    "slice": _slice,
    "slice_update": _slice_update,
    "gather": _gather,
    "scatter": _scatter,
    "dynamic_slice": _dynamic_slice,
    "dynamic_update_slice": _dynamic_update_slice,
    "boolean_mask": _boolean_mask,
}
