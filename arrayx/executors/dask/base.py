"""The Dask executor's settings and the few steps every part of it takes: where computations run
(``set_scheduler``, ``connect``), the chunks of new arrays (``set_chunks``), the unknown-shape
policy (``set_unknown_shapes``, ``resolve_shapes``), and a read (``_compute``).  ``executor`` and
``indexing`` both build on it; ``da`` and ``_compat`` are set when the executor loads.
"""
from __future__ import annotations

import numpy as np

from arrayx.core import config as _config

da = None  # dask.array, set by DaskExecutor._load (Dask is imported only when the executor is used)
_compat = None  # array_api_compat.dask.array

_SCHEDULER_NAMES = ("threads", "sync", "synchronous", "processes", "single-threaded")
_SHAPE_POLICIES = ("lazy", "compute")

# -- configuration (module state: one Dask executor per process) -------------------------
_scheduler = None  # None: Dask's default; a scheduler name; or a distributed Client
_client = None  # the Client connect() made (closed by disconnect())
_chunks = "auto"
_shape_policy = _config.get("ARRAYX_DASK_UNKNOWN_SHAPES")


def set_scheduler(scheduler) -> None:
    """Run computations on ``scheduler``: a name (``"threads"``, ``"sync"``, ``"processes"``),
    a ``dask.distributed.Client``, or None for Dask's default."""
    global _scheduler
    if scheduler is not None and not hasattr(scheduler, "get") and scheduler not in _SCHEDULER_NAMES:
        raise ValueError(
            f"set_scheduler: expected one of {_SCHEDULER_NAMES}, a dask.distributed.Client or None, "
            f"got {scheduler!r}; to use a cluster call connect(address)"
        )
    _scheduler = scheduler


def get_scheduler():
    """The scheduler arrayx computes on (None means Dask's default)."""
    return _scheduler


def connect(address=None, **client_kwargs):
    """Compute on a dask.distributed cluster; returns the ``Client``.

    ``address`` is a scheduler address (``"tcp://host:8786"``), a cluster object
    (``LocalCluster(...)``), an existing ``Client``, or None to start a local
    cluster with ``client_kwargs`` (e.g. ``n_workers=2, processes=False``).
    """
    global _client
    try:
        from distributed import Client
    except ImportError as e:
        raise ImportError("connect: dask.distributed is not installed; `pip install distributed`") from e
    disconnect()
    client = address if isinstance(address, Client) else Client(address, set_as_default=False, **client_kwargs)
    if client is not address:
        _client = client
    set_scheduler(client)
    return client


def disconnect() -> None:
    """Stop using the cluster connect() attached (closing the Client it made) and return to the default scheduler."""
    global _client
    if _client is not None:
        _client.close()
        _client = None
    set_scheduler(None)


def set_chunks(chunks) -> None:
    """Chunks for arrays made from host data and by creation functions (see the module docstring)."""
    global _chunks
    if not (chunks == "auto" or isinstance(chunks, (str, tuple)) or
            (isinstance(chunks, int) and not isinstance(chunks, bool) and chunks > 0)):
        raise ValueError(
            f"set_chunks: expected 'auto', a positive int, a byte size such as '64MiB' or a tuple, got {chunks!r}"
        )
    _chunks = chunks


def get_chunks():
    """The chunks set with set_chunks (default ``"auto"``)."""
    return _chunks


def _from_host(value):
    """A Dask array of a host value, one chunk (the results of operations on empty operands)."""
    host = np.asarray(value)
    return da.from_array(host, chunks=host.shape or (), name=False)


def _chunks_for(shape):
    """The chunks for a new array of ``shape``: the set chunks, or one chunk when it has no elements.

    Dask's automatic chunking divides by a zero extent for some shapes with a 0 in them
    (``zeros((0, 20, 1, 1, 1, 1))`` raises ZeroDivisionError); an array without elements needs
    no more than one chunk anyway.
    """
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    return dims if 0 in dims else _chunks


def set_unknown_shapes(policy: str) -> None:
    """``"lazy"``: report data-dependent dimensions as None; ``"compute"``: compute them when a shape is read."""
    global _shape_policy
    if policy not in _SHAPE_POLICIES:
        raise ValueError(f"set_unknown_shapes: policy must be one of {_SHAPE_POLICIES}, got {policy!r}")
    _shape_policy = policy


def resolve_shapes(x):
    """Compute the unknown (data-dependent) dimensions of the Dask-backed arrayx array ``x``, in place; returns x."""
    if getattr(x, "executor", None) != "dask":
        raise TypeError(f"resolve_shapes: expected an arrayx array on the 'dask' executor, got {type(x).__name__}")
    _resolve(x._buf)
    return x


def _resolve(buf):
    if any(d != d for d in buf.shape):
        from arrayx.executors.dask import keep as _dask_keep

        # what computing the sizes goes through is kept, as for a read (a loop masking an
        # array it updates would otherwise compute the array's whole history at every step)
        buf._chunks = _dask_keep.chunk_sizes(buf, _compute_kwargs())
        if any(0 in c and len(c) > 1 for c in buf.chunks):
            _adopt(buf, _without_empty_chunks(buf))
    return buf


def _without_empty_chunks(buf):
    """``buf`` with no chunk of size 0 along an axis of several chunks.  Dask mishandles them:
    an elementwise op on a length-1 axis chunked (1, 0) rechunks one operand and not the
    result's chunks (a block of size 1 where 0 is declared: boolean indexing then fails at
    compute), and ``take`` divides by the mean chunk size, 0 when chunks outnumber elements."""
    if not any(0 in c and len(c) > 1 for c in buf.chunks):
        return buf
    return buf.rechunk(tuple(tuple(n for n in c if n) or (0,) for c in buf.chunks))


def _adopt(buf, other) -> None:
    """Make the Dask array ``buf`` (held by an arrayx array) stand for ``other``, in place."""
    buf.dask = other.dask
    buf._name = other.name
    buf._chunks = other.chunks
    buf._meta = other._meta



def _compute_kwargs() -> dict:
    return {} if _scheduler is None else {"scheduler": _scheduler}


def _compute(buf) -> np.ndarray:
    """``buf``'s values on the host; what the read computes is kept for later reads (_dask_keep)."""
    from arrayx.executors.dask import keep as _dask_keep

    return _dask_keep.compute(buf, _compute_kwargs())
