"""The dask executor: a NamedSharding is a chunking (one chunk per block: each dimension cut into as
many chunks as the mesh axes it is split over) plus, on a ``dask.distributed`` cluster whose workers
make up the mesh, a placement: each block is computed on, and kept by, a worker that holds it
(``device_put``, and the results of eager and jitted ops on sharded arrays: :func:`laid_out`)."""
from __future__ import annotations

import itertools
import uuid
import weakref

import numpy as np

from arrayx.executors.dask.sharding import chunks_of  # noqa: F401 (the chunking the dask executor constrains to)
from arrayx.sharding._shardings import NamedSharding

# dask key of a placed block -> the Future that holds it, for ``placement``.  Weak: a placed block's
# Future lives in the graph of every dask array made from it (``from_delayed``), so the cluster
# keeps the block while some array still needs it and releases it with the last one.
_PLACED: weakref.WeakValueDictionary = weakref.WeakValueDictionary()




def worker_of(dev, workers=None):
    """The worker address a dask device stands for: a worker's own device, or virtual device ``i`` on
    worker ``i % n_workers`` of the connected cluster (``workers``: its sorted worker addresses, when
    the caller asked the scheduler once for many devices); None without a cluster."""
    from arrayx.sharding._mesh import _dask_workers

    if dev.label.startswith("worker:"):
        return dev.native
    if not dev.label.startswith("virtual:"):
        return None
    workers = _dask_workers() if workers is None else workers
    return workers[dev.native % len(workers)] if workers else None


def _client(mesh, workers=None):
    from arrayx.executors import dask as dask_executor

    if any(worker_of(d, workers) is None for d in mesh.devices.flat):
        if any(d.label.startswith("worker:") for d in mesh.devices.flat):
            raise ValueError(f"device_put: {mesh!r} is made of dask workers but arrayx is not connected to their "
                             f"cluster; call arrayx.executors.dask.connect(...) first")
        return None
    return dask_executor.get_scheduler()


def _known_workers(mesh):
    """The cluster's workers, asked of the scheduler once for a mesh of virtual devices (asked once
    per device, a loaded scheduler could answer differently between two asks, and a block
    restricted to worker None failed its whole graph on the scheduler); None for a mesh of workers."""
    from arrayx.sharding._mesh import _dask_workers

    return _dask_workers() if any(d.label.startswith("virtual:") for d in mesh.devices.flat) else None


def holders(sharding: NamedSharding, shape, workers=None) -> dict:
    """{block position (chunk index tuple): [worker addresses holding it]} (``workers``: the cluster's
    sorted worker addresses, asked of the scheduler once by the caller)."""
    out: dict = {}
    for dev, idx in sharding.devices_indices_map(shape).items():
        pos = tuple(0 if sl.start is None else sl.start // max(1, (sl.stop - sl.start)) for sl in idx)
        out.setdefault(pos, []).append(worker_of(dev, workers))
    return out


def place(buf, sharding: NamedSharding, host=None):
    """``buf`` rechunked as ``sharding`` cuts it, each chunk computed on its worker where the mesh is
    made of workers (else left lazy: the scheduler runs the chunks).  ``host`` (a NumPy array with
    ``buf``'s values, when the data comes from the host) is cut into blocks sent to their workers
    with ``client.scatter`` instead, so that no block travels inside a task graph.

    A placed array is a persisted one: its graph is its chunks' futures under keys of a name of its
    own (``placed-...``), nothing else.  (It was the blocks' futures joined by ``da.block``: its
    ``concatenate-...`` keys then went into every later computation that read it, fused with their
    neighbours differently by each graph's optimisation, and Dask's scheduler warned of a
    "different ``run_spec``" for the same key: a key name reused for two different tasks.)"""
    import dask
    import dask.array as da
    from dask._task_spec import Alias, cull
    from dask.highlevelgraph import HighLevelGraph

    shape = tuple(buf.shape)
    chunks = chunks_of(sharding, shape)
    known = _known_workers(sharding.mesh)
    client = _client(sharding.mesh, known)
    if client is None:
        return buf.rechunk(chunks)
    who = holders(sharding, shape, known)
    numblocks = tuple(len(c) for c in chunks)
    name = f"placed-{_PREFIX}-{next(_COUNT):x}"
    held: dict = {}

    if host is None:
        # one submission per set of workers (two on two workers, not one per block): each block's
        # tasks restricted to its workers, after Dask has optimised the graph (no per-key
        # annotation, which Dask's blockwise fusion does not survive); the blocks computed under
        # this placement's own keys
        buf = buf.rechunk(chunks)
        named = {(name, *pos): Alias((name, *pos), (buf.name, *pos)) for pos in np.ndindex(*numblocks)}
        arr = da.Array(HighLevelGraph.from_collections(name, named, dependencies=[buf]), name, chunks,
                       dtype=buf.dtype, meta=buf._meta)
        (arr,) = dask.optimize(arr)
        graph = dict(arr.__dask_graph__())
        by_workers: dict = {}
        for pos in np.ndindex(*numblocks):
            by_workers.setdefault(tuple(sorted(set(who[pos]))), []).append(pos)
        for workers, where in by_workers.items():
            keys = [(name, *pos) for pos in where]
            futs = client.get(cull(graph, keys), keys, workers=list(workers), allow_other_workers=False, sync=False)
            held.update(zip(keys, futs))
    else:
        for pos in np.ndindex(*numblocks):
            workers = sorted(set(who[pos]))
            idx = tuple(slice(p * c[0], (p + 1) * c[0]) for p, c in zip(pos, chunks))
            part = np.ascontiguousarray(host[idx])
            held.update(client.scatter({(name, *pos): part}, workers=workers, broadcast=len(workers) > 1,
                                       hash=False))
    for fut in held.values():
        _PLACED[fut.key] = fut
    return da.Array(held, name, chunks, dtype=buf.dtype, meta=buf._meta)


# placement names: a process's own prefix and a counter (no uuid per placement: reading the OS's
# entropy is slow on a loaded machine)
_PREFIX = uuid.uuid4().hex[:8]
_COUNT = itertools.count()


def laid_out(buf, sharding: NamedSharding):
    """An eager result (or a jitted one) on dask that ``sharding`` describes: cut into its blocks,
    and on a cluster whose workers make up the mesh each block computed on, and kept by, a worker
    that holds it (:func:`place`): a result stays where its inputs are, as JAX's eager results
    stay on their devices.  Without such a cluster (virtual devices run by threads) it stays lazy."""
    chunks = chunks_of(sharding, tuple(buf.shape))
    try:
        client = _client(sharding.mesh, _known_workers(sharding.mesh))
    except ValueError:  # a mesh of workers after disconnect(): nothing to place on
        client = None
    if client is None:
        return buf if tuple(buf.chunks) == chunks else buf.rechunk(chunks)
    return place(buf, sharding)


def placement(x) -> dict:
    """{block position: worker addresses that hold it} for a dask array placed by ``device_put``
    (from the cluster's own record, ``Client.who_has``)."""
    from arrayx.executors import dask as dask_executor

    client = dask_executor.get_scheduler()
    futures = [f for f in (_PLACED.get(k) for k in x._buf.__dask_graph__()) if f is not None]
    if futures:
        client.gather(futures)  # finished (no default client is set: wait() would need one)
    who = client.who_has(futures)
    return {k: sorted(v) for k, v in who.items()}


# -- ppermute and psum_scatter inside shard_map: only the blocks each member needs ----------------------


def combine_blocks(eqn, vals, group, workers, run_id) -> list:
    """One group's ppermute or psum_scatter on the dask runner of shard_map (``vals``: the members'
    values in ``group`` order; ``workers[i]``: member ``i``'s worker or None).

    ppermute: a destination's value is its source's block itself, so the destination's next task
    reads it where the source's task left it (one block moves per pair, and nothing else); a member
    no pair sends to gets a zeros task on its own worker.  psum_scatter: for each (worker,
    destination) a task on that worker cuts the destination's part of each of the worker's members'
    values, and one task on the destination's worker adds the parts up in member order (each member
    receives a ``1/n``-th of every other member's value, never the whole sum; two workers make
    2n + n tasks)."""
    import dask
    import dask.array as da

    from arrayx.sharding import _collectives
    from arrayx.sharding._virtual import _as_delayed, _Block, _null

    _collectives.note_collective(eqn, group)
    lazy = [isinstance(v, (_Block, da.Array)) for v in vals]
    if not any(lazy):
        return _collectives.combine_in_turn(np, eqn, [np.asarray(v) for v in vals], np.array)
    aval = eqn.outputs[0].aval
    shape, dtype = tuple(aval.shape), np.dtype(aval.dtype)
    n = len(vals)
    tag = f"{eqn.prim.name}-{run_id}-{uuid.uuid4().hex[:8]}"

    def pinned(member):
        w = workers[member]
        return dask.annotate(workers=[w], allow_other_workers=False) if w else _null()

    if eqn.prim is _collectives.ppermute_p:
        src_of = _collectives.sources(eqn.params["perm"], n)
        out = []
        for pos, s in enumerate(src_of):
            if s >= 0:
                out.append(vals[s])
                continue
            with pinned(group[pos]):
                task = dask.delayed(np.zeros, pure=False)(shape, dtype, dask_key_name=f"{tag}-zeros-{pos}")
            out.append(da.from_delayed(task, shape=shape, dtype=dtype))
        return out
    d, tiled = eqn.params["scatter_dimension"], eqn.params["tiled"]
    in_aval = eqn.inputs[0].aval
    ins = [_as_delayed(v) for v in vals]
    # the sources by worker (all in one without a cluster): per (worker, destination) one task, on
    # that worker, cuts the destination's part of each of its members' values; the destination's
    # task adds them up in member order (as psum: the same bits as the numpy executor)
    by_worker: dict = {}
    for s in range(n):
        by_worker.setdefault(workers[group[s]], []).append(s)
    out = []
    for m in range(n):
        key = _collectives.part_index(len(in_aval.shape), d, m, n, tiled, in_aval.shape[d])
        cuts, order = [], [None] * n
        for g, (w, members) in enumerate(by_worker.items()):
            with pinned(group[members[0]]):
                cuts.append(dask.delayed(_parts, pure=False)(key, *(ins[s] for s in members),
                                                              dask_key_name=f"{tag}-parts-{g}-{m}"))
            for k, s in enumerate(members):
                order[s] = (g, k)
        with pinned(group[m]):
            task = dask.delayed(_sum_parts, pure=False)(tuple(order), *cuts, dask_key_name=f"{tag}-sum-{m}")
        out.append(da.from_delayed(task, shape=shape, dtype=dtype))
    return out


def _parts(key, *blocks):
    return [np.ascontiguousarray(np.asarray(b)[key]) for b in blocks]


def _sum_parts(order, *cuts):
    """The parts (``cuts[g][k]``: worker group g's k-th member's) added in member order."""
    parts = [cuts[g][k] for g, k in order]
    out = np.array(parts[0], copy=True)
    for p in parts[1:]:
        out = out + p
    return np.asarray(out)


def block_placement(x) -> dict:
    """{block position (chunk index tuple): the workers that hold it} for a dask array whose blocks
    were placed (``device_put``, an eager op on placed arrays, a shard_map on a cluster), from
    ``Client.who_has``; a block that is not placed (still lazy) maps to []."""
    from dask.core import get_dependencies
    from distributed import Future

    from arrayx.executors import dask as dask_executor

    buf = x._buf
    graph = dict(buf.__dask_graph__())
    found: dict = {}
    for pos in np.ndindex(*buf.numblocks):
        todo, seen, held = [(buf.name, *pos)], set(), []
        while todo:
            k = todo.pop()
            if k in seen:
                continue
            seen.add(k)
            fut = _PLACED.get(k)
            if fut is None and isinstance(graph.get(k), Future):  # a persisted array's chunk
                fut = graph[k]
            if fut is not None:
                held.append(fut)
                continue
            if k in graph:
                todo.extend(get_dependencies(graph, k))
        found[pos] = held
    client = dask_executor.get_scheduler()
    futures = [f for held in found.values() for f in held]
    if futures:
        client.gather(futures)
    who = client.who_has(futures) if futures else {}
    return {pos: sorted({w for f in held for w in who.get(f.key, ())}) for pos, held in found.items()}
