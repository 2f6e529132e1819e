"""Random draws on the Dask executor: one task per chunk, each the NumPy executor's sampler on that chunk's counters.

``arrayx.random`` writes every sampler once, as arrayx operations that are elementwise in the
flat element index (the threefry counter).  Run lazily on Dask arrays, such a sampler is a graph
of ~150 whole-array operations per draw, which Dask rebuilds, optimises and recomputes at every
use.  Here a draw is **one** graph layer instead, a task per chunk: the task receives the index
ranges of the chunk along each axis, makes the chunk's flat indices, and runs the same sampler
on the NumPy executor over them (in cache-sized slices, as the NumPy executor draws eagerly).
Element ``i`` depends only on counter ``i``, so the values are those of the NumPy executor, bit
for bit, whatever the chunks.

A draw remembers its recipe (weakly, by the Dask name), so slicing it (``draw[a:b]``, what a
summarised ``repr`` prints) draws only the sliced counters: printing a lazy draw of 2**24 values
computes a few values, not its chunks.
"""
from __future__ import annotations

import math
import weakref

import numpy as np

__all__ = ["draw", "sliced_draw", "TABLE"]

#: elements per sampler call inside a task (the NumPy executor's eager slice: stays in cache)
SLICE = 1 << 16
#: Dask name -> (values, operand specs, per-axis index vectors, dtype) of the draws alive
_RECIPES: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()


class _Recipe:
    __slots__ = ("values", "operands", "axes", "dtype", "__weakref__")

    def __init__(self, values, operands, axes, dtype):
        self.values, self.operands, self.axes, self.dtype = values, operands, axes, dtype


def _numpy_array(host):
    from arrayx.core import executor as base
    from arrayx.core.array import Array

    return Array._new(host, base.get("numpy"))


def _run(values, ops: tuple, dims: list, axes: tuple) -> np.ndarray:
    """The sampler over the block whose index vectors along each axis are ``axes`` (NumPy arrays)."""
    index = np.zeros((), np.uint64)
    for n, a in zip(dims, axes):  # the flat (row-major) index in the draw of each element of the block
        index = index[..., None] * np.uint64(n) + np.asarray(a).astype(np.uint64)
    flat = index.reshape(-1)
    if flat.size and int(flat.max()) < 2**32:
        flat = flat.astype(np.uint32)  # a zero high counter word: hashed as the eager draw hashes it
    ops = tuple(_numpy_array(v) if isinstance(v, np.ndarray) else v for v in ops)
    parts = []
    with np.errstate(all="ignore"):  # ``values`` draws in arrayx.random's partitionable mode
        for start in range(0, max(flat.size, 1), SLICE):
            parts.append(np.asarray(values(ops, _numpy_array(flat[start:start + SLICE]), None)._buf))
    out = parts[0] if len(parts) == 1 else np.concatenate(parts)
    return out.reshape(index.shape)


def _chunk_task(values, kinds: tuple, dims: list, ranges: tuple):
    """The task of one chunk: ``(array operand blocks...) -> the samples`` of the indices ``ranges``."""
    def sample(*arrays):
        it = iter(arrays)
        ops = tuple(np.asarray(next(it)) if kind is _ARRAY else kind for kind in kinds)
        return _run(values, ops, dims, tuple(np.arange(r.start, r.stop, r.step, dtype=np.int64) for r in ranges))

    return sample


_ARRAY = object()  # marks an operand that reaches the task as a block


def _is_arrayx(v) -> bool:
    from arrayx.core.array import Array

    return isinstance(v, Array)


def _dtype_of(values, ops) -> np.dtype:
    """The draw's dtype: the sampler run on one counter with zeros for the array operands."""
    host = tuple(np.zeros(v.shape, v.dtype) if _is_arrayx(v) else v for v in ops)
    return _run(values, host, [1], (np.zeros(1, np.int64),)).dtype


def draw(shape: tuple, values, ops: tuple, axes: tuple | None = None, dtype=None):
    """The Dask buffer of ``values`` over ``shape``, one task per chunk (the executor's chunks).

    ``values(ops, counters, None)`` computes the samples of the flat indices ``counters`` (an
    arrayx uint32/uint64 array) from ``ops`` (the key first; arrayx arrays among them, the key
    and 0-d parameters, reach the tasks as blocks; anything else passes unchanged).  ``axes``:
    the indices to draw along each axis, as ``range`` objects (default: all); a slice of a
    draw is the draw of fewer indices.
    """
    import itertools

    import dask.array as da
    from dask.base import tokenize
    from dask.core import flatten
    from dask.highlevelgraph import HighLevelGraph

    from arrayx.executors.dask.base import _chunks_for

    dims = [int(n) for n in shape]
    axes = tuple(range(n) for n in dims) if axes is None else tuple(axes)
    kinds, keys, deps = [], [], []
    for v in ops:
        if _is_arrayx(v):  # the key and 0-d parameters: one block each
            buf = v._buf if v._buf.ndim == 0 or v._buf.npartitions == 1 else v._buf.rechunk(-1)
            kinds.append(_ARRAY)
            keys.append(next(flatten(buf.__dask_keys__())))
            deps.append(buf)
        else:
            kinds.append(v)
    dtype = _dtype_of(values, ops) if dtype is None else dtype
    kinds = tuple(kinds)
    out_shape = tuple(len(r) for r in axes)
    chunks = da.core.normalize_chunks(_chunks_for(out_shape), out_shape, dtype=dtype)
    name = "arrayx-random-" + tokenize(values, kinds, keys, dims, axes, chunks, dtype)
    splits = []  # per axis: the index range of each chunk
    for r, c in zip(axes, chunks):
        offsets = np.cumsum((0,) + c)
        splits.append([r[int(a):int(b)] for a, b in zip(offsets[:-1], offsets[1:])])
    graph = {}
    for block in itertools.product(*(range(len(c)) for c in chunks)):
        ranges = tuple(splits[i][j] for i, j in enumerate(block))
        graph[(name, *block)] = (_chunk_task(values, kinds, dims, ranges), *keys)
    hlg = HighLevelGraph.from_collections(name, graph, dependencies=deps)
    out = da.Array(hlg, name, chunks, dtype=dtype, meta=np.empty((0,) * len(dims), dtype))
    _RECIPES[name] = recipe = _Recipe(values, ops, (dims, axes), dtype)
    out._arrayx_recipe = recipe  # the recipe lives as long as the buffer does
    from arrayx.executors.dask.keep import note

    return note(out)  # a read may keep it computed


def sliced_draw(buf, key: tuple):
    """``buf[key]`` for a draw and a key of ints and slices (one per axis at most), drawn over the
    sliced counters only; None when ``buf`` is not a draw or the key is anything else."""
    recipe = _RECIPES.get(buf.name)
    if recipe is None or len(key) > buf.ndim or not all(isinstance(k, (slice, int, np.integer)) for k in key):
        return None
    dims, axes = recipe.axes
    new_axes, squeeze = [], []
    for i, a in enumerate(axes):
        k = key[i] if i < len(key) else slice(None)
        if isinstance(k, slice):
            new_axes.append(a[k])
        else:  # an index in range (the key is resolved): a range of one, squeezed after
            new_axes.append(a[int(k):int(k) + 1] if int(k) >= 0 else a[int(k):][:1])
            squeeze.append(i)
    out = draw(tuple(dims), recipe.values, recipe.operands, axes=tuple(new_axes), dtype=recipe.dtype)
    return out.squeeze(axis=tuple(squeeze)) if squeeze else out


# -- the table's entry: arrayx.random's primitive libm_log (arrayx/_random_math.py) -----------------


def libm_log(x):
    """The C library's float64 log per block (``executors/libm.py``), as on the NumPy executor."""
    from arrayx.executors import libm as _libm

    return x.map_blocks(_libm.log, dtype=x.dtype)


#: primitive name -> Dask's implementation (merged into ``DaskExecutor.overrides``)
TABLE = {"libm_log": libm_log}
