"""The Dask executor: buffers are ``dask.array`` arrays, the namespace is array-api-compat's Dask namespace.

Select it with ``arrayx.use_executor("dask")``, ``device="dask"`` or
``ARRAYX_EXECUTOR=dask``.  Operations build a lazy task graph; nothing runs
until a value is needed on the host.

Where it runs
    By default on Dask's own default scheduler: the local threaded scheduler, or
    the ``dask.distributed`` Client that is active in the process.  Choose
    explicitly with ``set_scheduler("threads" | "sync" | "processes")``, or run on
    a cluster with ``connect("tcp://host:8786")`` (or ``connect(LocalCluster())``,
    or ``ARRAYX_DASK_SCHEDULER=tcp://...`` in the environment, which connects
    when the executor first loads, waiting at most ``ARRAYX_DASK_CONNECT_TIMEOUT``
    seconds, default 5; an address that does not answer makes the executor
    unavailable with an error naming the variable and the address).
    ``disconnect()`` returns to the default.

Chunks
    Arrays made from host data and by creation functions (``zeros``, ``ones``,
    ``full``, ``arange``, ``eye``, ``asarray``, ...) get the chunks set with
    ``set_chunks(chunks)``: ``"auto"`` (default; Dask's ``array.chunk-size``),
    an int (elements per chunk along every axis), a byte size such as
    ``"64MiB"``, or a tuple per axis.  Results of operations keep the chunks
    Dask gives them.  An operation whose Dask operands are each one chunk (every array up to
    Dask's ``array.chunk-size``, 128 MiB by default) is one task running the NumPy executor's
    implementation (``dask.onechunk``: its values are the NumPy executor's), and a read of such
    a graph runs its tasks in the calling thread (no scheduler, no optimisation passes);
    several chunks go through Dask's own functions and scheduler.

Implicit computes (each runs the graph of the array involved)
    ``bool(x)``, ``int(x)``, ``float(x)``, ``complex(x)``, ``x.__index__()``,
    ``repr(x)``/``print(x)``, ``numpy.asarray(x)``/``x.__array__()``,
    ``x.__dlpack__()`` and ``from_dlpack``/``to_device`` onto another executor,
    ``reshape``, ``sort``/``argsort`` and gathers (``take``, integer-array
    indexing) of an array whose shape depends on its data (its sizes are computed),
    (DLPack is served from the computed host array), ``x[k] = v`` with updates
    Dask cannot express lazily (an accumulating ``x.at[idx].add`` with integer
    index arrays), integer-array indexing that Dask cannot express lazily
    (several index arrays, or n-D ones: the *index arrays* are computed),
    integer-array indexing, ``take`` and ``take_along_axis`` with an array or
    indices of unknown shape (their chunk sizes are computed), ``repeat`` with an array of counts (the counts are computed), and,
    when the shape policy is ``"compute"``, reading the shape of an array whose
    shape depends on its data.

What reads keep
    A read (any implicit compute above) also computes the arrays still alive that it needs whole
    and keeps their values in place of their graphs, so a loop that reads a value at each step
    computes one step each time, not its whole history (``dask.keep``: arrays of at most 64 MiB,
    256 MiB in all, oldest given back their graphs first; ``set_keep(max_bytes, max_array_bytes)``
    changes the bounds, ``set_keep(0)`` turns it off).  The results of one operation (``svd``'s
    U, S, Vt; ``eigh``'s; ``unique_all``'s) are computed together when a read needs one of them, so
    the operation runs once.  ``reads()`` counts the computes reads started (values and sizes).
    Random draws are one task per chunk, the NumPy
    executor's sampler on the chunk's counters (``dask.random``: the NumPy executor's values bit
    for bit); a slice of a draw, and what ``repr`` shows of a large one, draws only its values.
    ``repr`` of any large lazy array computes only the chunks its shown edges lie in; an elementwise
    one-chunk operation of draws (``exp(normal(key, (2**24,)))``) only the values shown, the
    operation run on the sliced draws (``onechunk.sliced``).

Known deviation: large sums depend on the chunks in the last bit
    ``sum``, ``prod``, ``mean``, ``var`` and ``std`` whose reduced axes fit in one chunk of Dask's
    ``array.chunk-size`` (the whole array, where it fits) are computed on that chunk: NumPy's
    result, whatever the chunks.  Larger ones (and ``vecdot``, ``matmul`` over a contracted axis)
    add each chunk's values, then the chunks' results in Dask's tree, so the same data in other
    chunks can give a result that differs in the last bit (NumPy's own pairwise sum differs the
    same way from a sequential one).  Making them chunking-independent needs either a first pass
    for the magnitude of the values (every chunk held in memory until the second pass: no more
    streaming) or exact per-chunk expansions (several times a sum's work); neither is done.

Unknown shapes
    Boolean-mask indexing, ``nonzero`` and the ``unique_*`` functions give
    arrays whose length Dask does not know without computing.  By default
    (policy ``"compute"``) the array stays lazy until something reads its
    shape (``x.shape``, ``x.size``, ``len(x)``, or an operation that needs the
    size, such as ``ones_like`` or broadcasting against it); that read computes
    the unknown sizes once, in place.  Clients such as scikit-learn and SciPy
    compare ``x.shape[0]`` with ints, so they need the sizes; a pipeline that
    never reads them (``xp.sum(x[x > 0] ** 2)``) computes nothing until its
    value is asked for.  Policy ``"lazy"`` (``set_unknown_shapes("lazy")`` or
    ``ARRAYX_DASK_UNKNOWN_SHAPES=lazy``) reports such dimensions as ``None``,
    as the standard allows (``x.shape == (None,)``, ``x.size is None``), and
    ``resolve_shapes(x)`` computes them for one array.  ``capabilities()``
    reports "boolean indexing" and "data-dependent shapes" as True only under
    ``"compute"`` (the standard asks for False while such shapes read None);
    the operations themselves work under both policies.
"""
from __future__ import annotations

import sys
import types

import numpy as np

from arrayx.core import config as _config
from arrayx.executors.dask import base as _base, indexing as _indexing
from arrayx.executors.dask.base import (  # noqa: F401  (the settings are this module's public names)
    _chunks_for,
    _compute,
    _from_host,
    _resolve,
    _without_empty_chunks,
    connect,
    disconnect,
    get_chunks,
    get_scheduler,
    resolve_shapes,
    set_chunks,
    set_scheduler,
    set_unknown_shapes,
)
from arrayx.executors.dask.indexing import (
    _boolean_mask,
    _gather,
    _reshape,
    _scatter,
    _slice,
    _slice_update,
    _summary_to_host,
    _take_along_axis,
)
from arrayx.executors.dask.keep import get_keep, kept_bytes, reads, set_keep
from arrayx.executors.dask.onechunk import one_chunk
from arrayx.executors.dask.linalg import CONTRACTIONS as _CONTRACTIONS, FFT as _FFT, LINALG as _LINALG
from arrayx.executors.common.indexing import NUMPY_LIKE as _INDEXING
from arrayx.core.executor import Device, Executor
from arrayx.executors.dask import lax as _lax, nn as _nn, random as _random, sharding as _sharding

__all__ = [
    "connect", "disconnect", "set_scheduler", "get_scheduler", "set_chunks", "get_chunks",
    "set_unknown_shapes", "resolve_shapes", "set_keep", "get_keep", "kept_bytes", "reads",
]

_INDEX = np.dtype("int64")


def _sort(x, **params):
    """Dask cannot sort along a dimension of unknown size: compute the sizes first (documented)."""
    import array_api_compat.dask.array as dxp

    return dxp.sort(_resolve(x), **params)


def _argsort(x, **params):
    import array_api_compat.dask.array as dxp

    return dxp.argsort(_resolve(x), **params)


# -- the namespace: array-api-compat's Dask namespace with our chunks on creation -----------
da = None  # dask.array, set by DaskExecutor._load (Dask is imported only when the executor is used)
_compat = None  # array_api_compat.dask.array


class _Namespace(types.ModuleType):
    """array-api-compat's Dask namespace, with creation functions that use ``set_chunks``'s chunks."""

    def __getattr__(self, name):
        return getattr(_compat, name)

    @staticmethod
    def asarray(obj, /, *, dtype=None, device=None, copy=None):
        if isinstance(obj, da.Array):
            out = obj if dtype is None else obj.astype(dtype)
            return out.copy() if copy and out is obj else out
        host = np.array(obj, dtype=dtype, copy=True) if copy else np.asarray(obj, dtype=dtype)
        out = da.from_array(host, chunks=_chunks_for(host.shape), name=False)
        out._arrayx_host = host  # index_range reads bounds of host-made indices without a compute
        return out

    @staticmethod
    def zeros(shape, *, dtype=None, device=None):
        return da.zeros(shape, dtype=dtype, chunks=_chunks_for(shape))

    @staticmethod
    def ones(shape, *, dtype=None, device=None):
        return da.ones(shape, dtype=dtype, chunks=_chunks_for(shape))

    @staticmethod
    def empty(shape, *, dtype=None, device=None):
        return da.zeros(shape, dtype=dtype, chunks=_chunks_for(shape))  # Dask's empty is lazily garbage; zeros are cheap

    @staticmethod
    def full(shape, fill_value, *, dtype=None, device=None):
        return da.full(shape, fill_value, dtype=dtype, chunks=_chunks_for(shape))

    @staticmethod
    def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
        return da.arange(start, stop, step, dtype=dtype, chunks=_base._chunks)

    @staticmethod
    def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
        n_cols = n_rows if n_cols is None else n_cols
        n = max(n_rows, n_cols)  # Dask's eye builds a broken graph for non-square shapes: slice a square one
        out = da.eye(n, k=k, dtype=dtype, chunks=_base._chunks)
        return out if n_rows == n_cols else out[:n_rows, :n_cols]


_xp = _Namespace("arrayx.executors.dask.xp")


#: chunks one new array may have: the client keeps a chunks tuple entry and graph keys per chunk
_MAX_CHUNKS = 10**8



def _repeat(x, repeats, *, axis):
    x = _without_empty_chunks(_resolve(x))
    if not isinstance(repeats, da.Array):
        return da.repeat(x, repeats, axis=axis)
    counts = _compute(repeats)  # Dask repeats by Python ints only: the counts are computed (small)
    if counts.shape == (1,):
        return da.repeat(x, int(counts[0]), axis=axis)
    return da.take(x, np.repeat(np.arange(x.shape[axis]), counts), axis=axis)


def _arg_reduce(name):
    """Over all axes Dask breaks ties by block order, not by C order (NumPy's first occurrence):
    flatten first, so the first of equal extremes in C order wins."""
    def impl(x, *, axis=None, keepdims=False):
        fn = getattr(_compat, name)
        if axis is not None or x.ndim <= 1:
            return fn(x, axis=axis, keepdims=keepdims)
        out = fn(_reshape(x, shape=(-1,)), axis=0)
        return out.reshape((1,) * x.ndim) if keepdims else out

    impl.__name__ = name
    return impl


def _diff(x, *, axis, n):
    """Dask's diff subtracts, which bool refuses; NumPy's (and the standard's) bool difference is ``!=``."""
    if x.dtype != np.bool_:
        return _compat.diff(x, axis=axis, n=n)
    for _ in range(n):
        hi = (slice(None),) * axis + (slice(1, None),)
        lo = (slice(None),) * axis + (slice(None, -1),)
        x = x[hi] != x[lo]
    return x


def _numpy_blockwise(name):
    """Elementwise ``name`` as the NumPy executor computes it (its special-value fixes), block by block."""
    def impl(x):
        from arrayx.core.executor import get

        fn = get("numpy").overrides.get(name)
        if fn is None:
            return getattr(_compat, name)(x)
        return x.map_blocks(fn, dtype=x.dtype)

    impl.__name__ = name
    return impl


def _numpy_elemwise(name):
    """Binary elementwise ``name`` as the NumPy executor computes it, block by block (broadcasting)."""
    def impl(x1, x2):
        from arrayx.core.executor import get

        return da.core.elemwise(get("numpy").overrides[name], x1, x2)

    impl.__name__ = name
    return impl


# -- unique: the standard counts every NaN as distinct (Dask's unique merges them), and Dask's
# counts fail on arrays of unknown chunk sizes.  unique_values stays a parallel Dask reduction
# over the non-NaN values; the others run NumPy's (array-api-compat's) in one task, as Dask's own
# final merge step does.

def _unique_values(x):
    f = x if x.ndim == 1 else _reshape(_resolve(x), shape=(-1,))
    if f.dtype.kind not in "fc":
        return da.unique(f)
    nan = da.isnan(f)
    return da.concatenate([da.unique(f[~nan]), f[nan]])


def _unique_on_host(name, outputs):
    import array_api_compat.numpy as npx

    fn = getattr(npx, name)

    def impl(x):
        import dask

        parts = dask.delayed(lambda a: tuple(fn(a)), nout=len(outputs))(x)
        return tuple(da.from_delayed(part, shape=x.shape if shape == "x" else (np.nan,), dtype=dt or x.dtype)
                     for part, (shape, dt) in zip(parts, outputs))

    impl.__name__ = name
    return impl


_UNKNOWN, _INDICES = ("n", None), ("n", _INDEX)
_UNIQUE = {
    "unique_values": _unique_values,
    "unique_counts": _unique_on_host("unique_counts", [_UNKNOWN, _INDICES]),
    "unique_inverse": _unique_on_host("unique_inverse", [_UNKNOWN, ("x", _INDEX)]),
    "unique_all": _unique_on_host("unique_all", [_UNKNOWN, _INDICES, ("x", _INDEX), _INDICES]),
}


def _searchsorted(x1, x2, *, side="left", sorter=None):
    if not isinstance(x2, da.Array):  # a scalar operand: Dask's searchsorted only takes arrays
        x2 = da.from_array(np.asarray(x2), name=False)
    if x2.ndim == 0:  # Dask's block function cannot take 0-d values: search a 1-element array
        return _searchsorted(x1, x2.reshape(1), side=side, sorter=sorter).reshape(())
    out = _compat.searchsorted(x1, x2, side=side, sorter=sorter)
    return out if out.dtype == _INDEX else out.astype(_INDEX)


# -- size-0 operands: Dask's reductions, block functions and chunk arithmetic break on empty chunks
# (min over a zero-length axis keeps a dimension, nonzero/roll/unique raise, searchsorted loses a
# dimension).  An op with an empty operand has a result that no element value decides, only shapes
# and params, so it runs NumPy's implementation on zero-filled host stand-ins (no compute, exact).

#: primitives whose other operands' values still matter when one operand is empty: never on stand-ins
_EMPTY_NATIVE = frozenset({"concat", "stack"})
#: primitive -> which operands must keep their values (bounds checks, counts); the rest are stand-ins
_EMPTY_KEEP_VALUES = {
    "gather": slice(1, None), "scatter": slice(2, None), "boolean_mask": slice(1, 2),
    "dynamic_slice": slice(1, None), "dynamic_update_slice": slice(2, None),
    "take_along_axis": slice(1, 2), "repeat": slice(1, 2),
}
#: primitive -> the operand whose emptiness makes the result value-free (default: any operand)
_EMPTY_DECIDES = {"scatter": 0, "slice_update": 0, "dynamic_update_slice": 0}


def _stand_in(buf):
    """Host values for an operand whose values cannot matter: identities for square stacks (so that
    ``solve(a, b)`` with an empty ``b`` finds ``a`` invertible), zeros otherwise."""
    shape = tuple(int(d) for d in _resolve(buf).shape)
    if len(shape) >= 2 and shape[-1] == shape[-2]:
        return np.broadcast_to(np.eye(shape[-1], dtype=buf.dtype), shape).copy()
    return np.zeros(shape, buf.dtype)


def _reduced_axes_whole(x, axis):
    """``x`` with the axes a reduction reduces over in one chunk, where such a chunk stays within
    Dask's ``array.chunk-size``: the reduction is then NumPy's on each block, whatever the chunks
    were (SciPy's bootstrap compares a statistic of resamples made in one batch and in ten: the
    tree of partial sums differed in the last bit).  Larger reductions stream as before."""
    axes = tuple(range(x.ndim)) if axis is None else tuple(a % x.ndim for a in axis)
    if not axes or all(len(x.chunks[a]) == 1 for a in axes) or any(d != d for d in x.shape):
        return x
    import dask

    limit = dask.utils.parse_bytes(dask.config.get("array.chunk-size"))
    nbytes = x.dtype.itemsize
    for i, c in enumerate(x.chunks):
        nbytes *= x.shape[i] if i in axes else max(c, default=1)
    if nbytes > limit:
        return x
    if x.nbytes <= limit:  # all of it in one chunk: NumPy's reduction of the whole, bit for bit
        return x.rechunk(-1)
    return x.rechunk({a: -1 for a in axes})


def _whole_axes(name, native=None):
    """The reduction ``name`` over axes held in one chunk where they fit (``_reduced_axes_whole``)."""
    def impl(x, *, axis, **params):
        fn = native or getattr(_compat, name)
        return fn(_reduced_axes_whole(x, axis), axis=axis, **params)

    impl.__name__ = name
    return impl


def _prod(x, *, axis, dtype, keepdims):
    """NumPy's product of one complex element z is (1+0j) * z (inf+0j gives inf+nanj); Dask's chunk
    and combine steps each multiply by 1+0j (nan+nanj), so a product over one element is that product."""
    out = _compat.prod(x, axis=axis, dtype=dtype, keepdims=keepdims)
    axes = tuple(range(x.ndim)) if axis is None else tuple(axis)
    if out.dtype.kind != "c" or not all(x.shape[a] == 1 for a in axes):  # an unknown (nan) length is not 1
        return out
    one = x.astype(out.dtype) * (1 + 0j)
    return one if keepdims or not axes else da.squeeze(one, axis=axes)


def _empty_on_host(prim, native):
    from arrayx.core.executor import get

    numpy_impl = get("numpy").resolve(prim)
    keep = _EMPTY_KEEP_VALUES.get(prim.name, slice(0, 0))
    decides = _EMPTY_DECIDES.get(prim.name)
    darray = da.Array

    def impl(*bufs, **params):
        candidates = bufs if decides is None else bufs[decides:decides + 1]
        if not any(b.__class__ is darray and 0 in b.shape for b in candidates):
            return native(*bufs, **params)
        kept = range(len(bufs))[keep]
        host = [b if b.__class__ is not darray else _compute(b) if i in kept else _stand_in(b)
                for i, b in enumerate(bufs)]
        out = numpy_impl(*host, **params)
        if prim.multiple_results:
            return tuple(_from_host(o) for o in out)
        return _from_host(out)

    impl.__name__ = f"{prim.name}_empty_on_host"
    return impl


def _distributed() -> bool:
    """Whether computations go to other processes now (a ``dask.distributed`` Client, the
    ``processes`` scheduler): the one-chunk tasks (``dask.onechunk``) stay in this process."""
    s = _base._scheduler
    if s is not None:
        return hasattr(s, "scatter") or s == "processes"
    if "distributed" not in sys.modules:
        return False
    from distributed import default_client

    try:
        default_client()
    except ValueError:
        return False
    return True


def _noting(fn):
    """``fn`` whose results a later read may keep computed (``dask.keep``: they are remembered weakly)."""
    from arrayx.executors.dask.keep import note

    def impl(*args, **params):
        return note(fn(*args, **params))

    impl.__dict__.update(getattr(fn, "__dict__", {}))  # what callers read off a compiled function (fused_regions)
    impl.__name__ = getattr(fn, "__name__", "impl")
    impl.__wrapped__ = fn
    return impl


class DaskExecutor(Executor):
    name = "dask"
    install_hint = "Install Dask with `pip install 'dask[array]' array-api-compat` (and `distributed` for clusters)."
    mutable = False  # updates are functional: a Dask array's graph is rebuilt, never written in place
    unknown_shapes = True
    #: primitive name -> implementation, where ``getattr(xp, name)`` is not what the standard says
    overrides: dict = {
        "sort": _sort,
        "argsort": _argsort,
        **_INDEXING,
        "gather": _gather,
        "boolean_mask": _boolean_mask,
        "scatter": _scatter,
        "slice": _slice,
        "slice_update": _slice_update,
        "take_along_axis": _take_along_axis,
        "searchsorted": _searchsorted,
        "prod": _whole_axes("prod", _prod),
        "sum": _whole_axes("sum"),
        "mean": _whole_axes("mean"),
        "var": _whole_axes("var"),
        "std": _whole_axes("std"),
        "reshape": _reshape,
        "repeat": _repeat,
        "diff": _diff,
        "argmax": _arg_reduce("argmax"),
        "argmin": _arg_reduce("argmin"),
        "expm1": _numpy_blockwise("expm1"),
        "tanh": _numpy_blockwise("tanh"),
        "reciprocal": _numpy_blockwise("reciprocal"),
        "divide": _numpy_elemwise("divide"),  # C99's complex quotients at zeros/infinities
        **_CONTRACTIONS,
        **_LINALG,
        **_FFT,
        **_UNIQUE,
        # lax, nn, random and the sharding constraint (this package's modules)
        **_lax.TABLE,
        **_nn.TABLE,
        **_random.TABLE,
        **_sharding.TABLE,
    }

    def _load(self):
        global da, _compat
        import array_api_compat.dask.array as compat
        import dask.array

        da = dask.array
        _compat = compat
        for module in (_base, _indexing):
            module.da, module._compat = dask.array, compat
        self.array_type = dask.array.Array
        address = _config.get("ARRAYX_DASK_SCHEDULER")  # checked before any Client is built
        if address:
            if "://" in address:
                self._connect_from_environment(address)
            else:
                set_scheduler(address)
        return _xp

    def _connect_from_environment(self, address: str) -> None:
        timeout = _config.get("ARRAYX_DASK_CONNECT_TIMEOUT")
        try:
            connect(address, timeout=timeout)
        except (OSError, TimeoutError) as e:  # the executor is unavailable: say why and what to change
            self.install_hint = (
                "Start that scheduler, correct ARRAYX_DASK_SCHEDULER, or unset it to compute on this machine "
                "(ARRAYX_DASK_CONNECT_TIMEOUT sets the wait in seconds)."
            )
            raise ConnectionError(
                f"ARRAYX_DASK_SCHEDULER={address!r}: no Dask scheduler answered at {address} within "
                f"{timeout:g} s ({type(e).__name__}: {e})"
            ) from e

    def compile(self, graph, donate_argnums: tuple = ()):
        # one lazy dask graph, each fusible region one blockwise task per chunk (dask.fusion): nothing
        # is computed until the user asks (control flow that needs a value, e.g. while_loop's predicate, computes it)
        from arrayx.executors.dask.fusion import fuse

        return _noting(fuse(self, graph))

    def finish_impl(self, prim, fn):
        from arrayx.core.tracers import CallPrimitive
        from arrayx.executors.common import narrow_floats

        if prim.name in narrow_floats.WIDENED:  # float16/bfloat16 accumulate in float32
            fn = narrow_floats.widened(fn)

        if prim.name not in _EMPTY_NATIVE and not isinstance(prim, CallPrimitive):
            fn = _empty_on_host(prim, fn)
        return _noting(one_chunk(prim, fn, _distributed))

    def memory_limit(self):
        # lazy: chunks are allocated when computed, but the client holds an entry per chunk
        import dask

        chunk = dask.utils.parse_bytes(dask.config.get("array.chunk-size"))
        return _MAX_CHUNKS * chunk, f"{_MAX_CHUNKS:.0e} chunks of Dask's array.chunk-size"

    def capabilities(self) -> dict:
        # Data-dependent shapes (masks, nonzero, unique) are only known once computed: supported
        # in the sense of the standard when the shape policy computes them, not while they read None.
        known = _base._shape_policy == "compute"
        return {"boolean indexing": known, "data-dependent shapes": known, "max dimensions": 64}

    # -- devices ----------------------------------------------------------------------------
    def devices(self) -> list[Device]:
        return [_CPU]

    def default_device(self) -> Device:
        return _CPU

    def device_of(self, buf) -> Device:
        return _CPU

    def to_device(self, buf, device: Device):
        if device != _CPU:
            raise ValueError(f"to_device: {device} is not a device of the 'dask' executor; its device is {_CPU}")
        return buf

    # -- buffers ----------------------------------------------------------------------------
    def shape_of(self, buf) -> tuple:
        if _base._shape_policy == "compute":
            _resolve(buf)
        return tuple(None if d != d else int(d) for d in buf.shape)

    def unknown_size_error(self, fname: str) -> TypeError:
        return TypeError(
            f"{fname}: this Dask array's size depends on its values (after a boolean mask, nonzero or "
            f"unique) and the unknown-shape policy is {_base._shape_policy!r}; call "
            f"arrayx.executors.dask.resolve_shapes(x) first, or "
            f"arrayx.executors.dask.set_unknown_shapes('compute') to compute sizes when they are read"
        )

    def coerce(self, out):
        out = np.asarray(out)
        return da.from_array(out, chunks=_chunks_for(out.shape), name=False)

    def asarray(self, obj, dtype=None, copy=None, device: Device | None = None):
        return _xp.asarray(obj, dtype=dtype, copy=copy)

    def from_dlpack(self, obj, copy=None):
        host = np.from_dlpack(obj, copy=copy)
        return da.from_array(np.array(host, copy=True) if copy is None else host, chunks=_chunks_for(host.shape),
                             name=False)

    def to_host(self, buf) -> np.ndarray:
        return _compute(buf)

    def index_range(self, buf) -> tuple[int, int]:
        """An index array made from host data (``asarray(numpy_indices)``, SciPy's resamples) has its
        bounds read from that data: a Dask compute per gather cost ~17 ms (bootstrap: 200 of them)."""
        host = buf.__dict__.get("_arrayx_host") if buf.__class__ is da.Array else None
        if host is not None and host.size and host.shape == buf.shape:
            return int(host.min()), int(host.max())
        return super().index_range(buf)

    def summary_to_host(self, buf, edge: int) -> np.ndarray:
        """The entries a summarised print of ``buf`` shows (``Array.__repr__``'s hook)."""
        return _summary_to_host(buf, edge)

    def dlpack_buffer(self, buf):
        return _compute(buf)

    def host_for_pickle(self, buf) -> np.ndarray:
        # local threads, not the cluster: pickling inside Client.submit must not call back into it
        return np.asarray(buf.compute(scheduler="threads"))

    def from_foreign(self, buf, source: Executor):
        host = np.array(source.to_host(buf), copy=True)
        return da.from_array(host, chunks=_chunks_for(host.shape), name=False)


_CPU = Device("dask", "cpu")
