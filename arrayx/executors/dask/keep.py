"""What a read computes on the Dask executor is kept, so the next read does not compute it again.

A lazy Dask array is its whole history: ``x = f(x)`` in a loop makes a graph that grows by a step
each time, and ``bool(g(x))`` in that loop computes all of it at every step (quadratic time, worse
with Dask's optimisation passes).  Here a read (``bool``/``int``/``float``/``repr``/
``numpy.asarray``/an implicit compute) also computes the arrays that are still alive (held by the
program) and that the read needs whole, and replaces each one's graph by its computed chunks (a
``from_array`` with the same Dask name, so graphs built before still compute it their way and
graphs built after start from the values).  In the loop, each step then computes one step.

Memory is bounded: only arrays of at most ``max_array_bytes`` are kept, and the kept bytes are
an LRU of at most ``max_bytes`` in all; past it the oldest kept array gets its graph back (its
values go, and it is recomputed when next needed).  Arrays that are only read from host data or
made by a creation function (one graph layer) are not kept: computing them again costs nothing.
``set_keep(max_bytes=0)`` turns keeping off; on a ``dask.distributed`` cluster (``connect``)
nothing is kept, as the values belong on the workers.  The defaults: 256 MiB in all, 64 MiB per array.
"""
from __future__ import annotations

import threading
import weakref
from collections import OrderedDict

import numpy as np

__all__ = ["note", "compute", "chunk_sizes", "set_keep", "get_keep", "kept_bytes", "reads"]

_MiB = 1 << 20
_max_bytes = 256 * _MiB
_max_array_bytes = 64 * _MiB

#: Dask name -> the newest Dask array of that name an operation returned (alive ones only)
_LIVE: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()
#: Dask name -> (weak reference to the kept array, its graph before keeping, bytes); oldest first
_KEPT: "OrderedDict[str, tuple]" = OrderedDict()
_kept_bytes = 0
_lock = threading.RLock()  # re-entrant: a kept array's finaliser may run while it is held
#: the computes reads started: "values" (a value read: bool/float/asarray/...), "sizes" (the chunk
#: sizes of an array whose shape depends on its values); ``reads()`` returns a copy
_READS = {"values": 0, "sizes": 0}


def reads() -> dict:
    """How many computes the Dask executor has run for reads since the process started: of values
    (``bool``, ``float``, ``numpy.asarray``, ... and implicit computes) and of data-dependent sizes.
    Take the difference around a piece of code to count what it computes."""
    return dict(_READS)


def set_keep(max_bytes: int | None = None, max_array_bytes: int | None = None) -> None:
    """Bound what reads keep: ``max_bytes`` in all (0 keeps nothing), ``max_array_bytes`` per array."""
    global _max_bytes, _max_array_bytes
    for name, v in (("max_bytes", max_bytes), ("max_array_bytes", max_array_bytes)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
            raise ValueError(f"set_keep: {name} must be a non-negative int (bytes), got {v!r}")
    if max_bytes is not None:
        _max_bytes = max_bytes
    if max_array_bytes is not None:
        _max_array_bytes = max_array_bytes
    with _lock:
        _evict(0)


def get_keep() -> dict:
    """The bounds set with ``set_keep``."""
    return {"max_bytes": _max_bytes, "max_array_bytes": _max_array_bytes}


def kept_bytes() -> int:
    """Bytes of computed chunks the kept arrays hold now."""
    return _kept_bytes


def note(out):
    """Remember an operation's result(s) (weakly): a later read may keep them.  The results of one
    operation (``svd``'s U, S and Vt) are each other's siblings: a read that computes one of them
    computes the others alive too (one task), instead of running the operation again per result."""
    if out.__class__ is tuple or out.__class__ is list:
        for o in out:
            note(o)
        names = tuple(o.name for o in out if hasattr(o, "dask") and hasattr(o, "name"))
        if len(names) > 1:
            for o in out:
                if hasattr(o, "dask") and hasattr(o, "name"):
                    o._arrayx_siblings = names
    elif hasattr(out, "dask") and hasattr(out, "name"):
        _LIVE[out.name] = out
    return out


def _worth_keeping(a) -> bool:
    if len(a.dask.layers) < 2 or a.name in _KEPT:  # a root (host data, creation) or kept already
        return False
    nbytes = a.nbytes
    return nbytes == nbytes and nbytes <= min(_max_array_bytes, _max_bytes)  # known shape, small enough


def _needed_whole(buf) -> list:
    """The alive arrays that computing ``buf`` computes every chunk of, worth keeping."""
    from dask.core import flatten

    graph = buf.__dask_graph__()
    layers = getattr(graph, "layers", None)
    if layers is None:
        return []
    names = [n for n in layers if n != buf.name and n in _LIVE]
    if not names:
        return []
    if all(len(layer) == 1 for layer in layers.values()):
        # one task per layer, each an ancestor of buf (its graph holds no other): all needed whole
        out = []
        for n in names:
            a = _LIVE.get(n)
            if a is not None and a.npartitions == 1 and _worth_keeping(a):
                out.append(a)
        return out
    wanted = set(names)
    needed = dict.fromkeys(names, 0)  # chunks of each that the read computes (the culled layers keep the keys' names)
    for layer in graph.cull(set(flatten(buf.__dask_keys__()))).layers.values():
        for k in layer.get_output_keys():
            if k.__class__ is tuple and k[0] in wanted:
                needed[k[0]] += 1
    out = []
    for n in names:
        a = _LIVE.get(n)
        if a is not None and needed[n] == a.npartitions and _worth_keeping(a):
            out.append(a)
    return out


def _with_siblings(arrays: list, buf) -> list:
    """``arrays`` and the alive, worth-keeping siblings (results of the same operation) of them and
    of ``buf``: computed in the same pass, they share the operation's tasks."""
    seen = {a.name for a in arrays} | {buf.name}
    out = list(arrays)
    for a in [buf, *arrays]:
        for n in a.__dict__.get("_arrayx_siblings", ()):
            s = _LIVE.get(n) if n not in seen else None
            if s is not None and _worth_keeping(s):
                seen.add(n)
                out.append(s)
    return out


def compute(buf, compute_kwargs: dict) -> np.ndarray:
    """``buf``'s values on the host, keeping what the read computes that is worth keeping."""
    import dask

    _READS["values"] += 1
    scheduler = compute_kwargs.get("scheduler")
    if hasattr(scheduler, "scatter"):
        # with a distributed Client the values live on the workers (placed blocks, shardings):
        # keeping them here would pull them into this process, so nothing is kept there; a read
        # of lost data raises (dask.cluster) instead of waiting for ever
        from arrayx.executors.dask.cluster import gather

        return np.asarray(gather(scheduler, [buf])[0])
    if _max_bytes == 0:
        return np.asarray(buf.compute(**compute_kwargs))
    keep = _with_siblings(_needed_whole(buf), buf)
    self_too = _worth_keeping(buf)
    results = _direct([buf, *keep], compute_kwargs)
    if results is not None:  # the blocks themselves: the caller gets a copy (it may write into it)
        host = np.array(results[0], copy=True)
        if self_too:
            keep.append(buf)
            results = (*results, results[0])
    else:
        results = dask.compute(buf, *keep, **compute_kwargs)
        host = np.asarray(results[0])
        if self_too:
            keep.append(buf)
            results = (*results, host.copy())  # what the caller gets is its own (it may write into it)
    for a, values in zip(keep, results[1:]):
        _keep(a, np.asarray(values))
    _rebase_live([a.name for a in keep])
    return host


#: most tasks a read runs in this thread, without Dask's scheduler (``_direct``)
DIRECT_MAX_TASKS = 2000


def _direct(arrays: list, compute_kwargs: dict):
    """The blocks of ``arrays`` (each one chunk), computed here in topological order, or None where
    Dask's scheduler should run them: a graph of several chunks in a layer (parallel work), a
    scheduler chosen other than the local ones, or Dask callbacks watching (diagnostics, tests).

    A client's read of arrays that fit one chunk runs a chain of one-task layers: Dask's
    ``compute`` spent 2-10 ms per read on its expression, optimisation, ordering and thread
    hand-offs, more than the tasks of a small array take (scikit-learn's tests read ~10 times
    per call)."""
    scheduler = compute_kwargs.get("scheduler")
    if scheduler not in (None, "sync", "synchronous", "single-threaded", "threads"):
        return None
    from dask.callbacks import Callback

    if Callback.active:
        return None
    if scheduler is None:
        import dask

        if dask.config.get("scheduler", None) is not None:
            return None
    layers = {}
    for a in arrays:
        if a.npartitions != 1:
            return None
        layers.update(a.dask.layers)
    if sum(len(layer) for layer in layers.values()) > DIRECT_MAX_TASKS or any(
            len(layer) != 1 for layer in layers.values()):
        return None
    from dask._task_spec import GraphNode, convert_legacy_graph

    dsk = {}
    for layer in layers.values():
        dsk.update(layer)
    if not all(isinstance(t, GraphNode) for t in dsk.values()):
        dsk = convert_legacy_graph(dsk)
    keys = [(a.name,) + (0,) * a.ndim for a in arrays]
    return _run_graph(dsk, keys)


def _run_graph(dsk: dict, keys: list) -> list:
    """The values of ``keys`` in the task graph ``dsk`` (dask task-spec nodes), computed in this
    thread, each intermediate freed once its last dependent has run."""
    order, seen = [], set()
    stack = [(k, False) for k in reversed(keys)]
    while stack:
        k, ready = stack.pop()
        if ready:
            order.append(k)
            continue
        if k in seen:
            continue
        seen.add(k)
        stack.append((k, True))
        stack.extend((d, False) for d in dsk[k].dependencies if d not in seen)
    waiting = {}
    for k in order:
        for d in dsk[k].dependencies:
            waiting[d] = waiting.get(d, 0) + 1
    wanted = set(keys)
    cache = {}
    for k in order:
        node = dsk[k]
        cache[k] = node(cache)
        for d in node.dependencies:
            waiting[d] -= 1
            if not waiting[d] and d not in wanted:
                del cache[d]
    return [cache[k] for k in keys]


def chunk_sizes(buf, compute_kwargs: dict) -> tuple:
    """The chunk sizes of ``buf`` (of unknown shape: after a mask, ``unique``), computed, keeping
    what the computation goes through that is worth keeping, as a read does.  Without that, a loop
    that masks an array it updates (SciPy's ``_cdf_cvm_inf``: ``tot = at(tot)[cond].add(z)``)
    computes the whole history of the array at each step to learn a size."""
    import dask

    _READS["sizes"] += 1
    local = _max_bytes != 0 and not hasattr(compute_kwargs.get("scheduler"), "scatter")
    keep = _with_siblings(_needed_whole(buf), buf) if local else []
    results = _direct([buf, *keep], compute_kwargs)
    if results is not None:  # one chunk: its values give its size, and are kept as a read's are
        sizes = tuple((int(d),) for d in np.shape(results[0]))
        buf._chunks = sizes
        if local and _worth_keeping(buf):
            keep.append(buf)
            results = (*results, results[0])
        for a, values in zip(keep, results[1:]):
            _keep(a, np.asarray(values))
        _rebase_live([a.name for a in keep])
        return sizes
    shapes = buf.map_blocks(_block_shape, dtype=np.int64, new_axis=buf.ndim,
                            chunks=tuple(len(c) * (1,) for c in buf.chunks) + ((buf.ndim,),))
    scheduler = compute_kwargs.get("scheduler")
    if hasattr(scheduler, "scatter"):  # nothing kept on a cluster; lost data raises (dask.cluster)
        from arrayx.executors.dask.cluster import gather

        results = gather(scheduler, [shapes, *keep], "size of a Dask array")
    else:
        results = dask.compute(shapes, *keep, **compute_kwargs)
    for a, values in zip(keep, results[1:]):
        _keep(a, np.asarray(values))
    _rebase_live([a.name for a in keep])
    s = np.asarray(results[0])
    n = buf.ndim
    return tuple(tuple(int(v) for v in s[(0,) * i + (slice(None),) + (0,) * (n - 1 - i) + (i,)])
                 for i in range(n))


def _rebase_live(names: list) -> None:
    """Alive arrays built before ``names`` were kept still carry their graphs: point them at the
    kept values (a mask of an array, built before a read kept the array and used after it, would
    otherwise bring the array's whole history into every later result)."""
    if not names:
        return
    with _lock:
        kept = {n: _KEPT[n][0]() for n in names if n in _KEPT}
    kept = {n: a for n, a in kept.items() if a is not None}
    if not kept:
        return
    for a in list(_LIVE.values()):
        layers = getattr(a.dask, "layers", None)
        if a.name not in kept and layers is not None and any(n in layers for n in kept):
            _rebase(a, kept)


def _rebase(a, kept: dict) -> None:
    """Replace, in ``a``'s graph, the layers of the kept arrays by their computed chunks, and drop
    the layers only they needed."""
    from dask.highlevelgraph import HighLevelGraph

    graph = a.dask
    layers = dict(graph.layers)
    deps = dict(graph.dependencies)
    for n, k in kept.items():
        if n in layers and n in k.dask.layers:
            layers[n] = k.dask.layers[n]
            deps[n] = set()
    reach, todo = set(), [a.name]
    while todo:
        n = todo.pop()
        if n not in reach and n in layers:
            reach.add(n)
            todo.extend(deps.get(n, ()))
    a.dask = HighLevelGraph({n: layers[n] for n in reach}, {n: set(deps.get(n, ())) & reach for n in reach})


def _block_shape(block) -> np.ndarray:
    return np.asarray(block.shape, dtype=np.int64)[(None,) * block.ndim]


def _keep(a, values: np.ndarray) -> None:
    if values.dtype != a.dtype or values.shape != a.shape:  # unknown chunk sizes, or a meta Dask got wrong
        return
    with _lock:
        if a.name in _KEPT:
            return
        _evict(values.nbytes)
        if values.nbytes > _max_bytes - _kept_bytes:
            return
        original = a.dask
        a.dask = _graph_of(a, values)
        name = a.name
        _KEPT[name] = (weakref.ref(a, lambda _, name=name: _forget(name)), original, values.nbytes)
        _add(values.nbytes)


def _graph_of(a, values: np.ndarray):
    """A graph of ``a``'s chunks (its name, its chunks) holding views of ``values`` (no copy:
    ``from_array`` copies the whole array first)."""
    import itertools

    from dask._task_spec import DataNode
    from dask.array.core import slices_from_chunks
    from dask.highlevelgraph import HighLevelGraph

    name = a.name
    blocks = itertools.product(*(range(len(c)) for c in a.chunks))
    layer = {}
    for block, where in zip(blocks, slices_from_chunks(a.chunks)):
        key = (name,) + block
        layer[key] = DataNode(key, values[where])
    return HighLevelGraph.from_collections(name, layer, dependencies=())


def _add(n: int) -> None:
    global _kept_bytes
    _kept_bytes += n


def _forget(name: str) -> None:
    """The kept array is gone: its bytes are free."""
    with _lock:
        entry = _KEPT.pop(name, None)
        if entry is not None:
            _add(-entry[2])


def _evict(room: int) -> None:
    """Give the oldest kept arrays their graphs back until ``room`` more bytes fit (lock held)."""
    while _KEPT and _kept_bytes + room > _max_bytes:
        name, (ref, original, nbytes) = _KEPT.popitem(last=False)
        a = ref()
        if a is not None:
            a.dask = original
        _add(-nbytes)
