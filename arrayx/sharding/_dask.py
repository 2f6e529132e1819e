"""The dask executor: a NamedSharding is a chunking (one chunk per block: each dimension cut into as
many chunks as the mesh axes it is split over) plus, on a ``dask.distributed`` cluster whose workers
make up the mesh, a placement: each block is computed on, and kept by, a worker that holds it."""
from __future__ import annotations

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


def _client(mesh):
    from arrayx.executors import dask as dask_executor

    if any(worker_of(d) is None for d in mesh.devices.flat):
        if any(d.label.startswith("worker:") for d in mesh.devices.flat):
            raise ValueError(f"device_put: {mesh!r} is made of dask workers but arrayx is not connected to their "
                             f"cluster; call arrayx.executors.dask.connect(...) first")
        return None
    return dask_executor.get_scheduler()


def holders(sharding: NamedSharding, shape) -> dict:
    """{block position (chunk index tuple): [worker addresses holding it]}."""
    out: dict = {}
    for dev, idx in sharding.devices_indices_map(shape).items():
        pos = tuple(0 if sl.start is None else sl.start // max(1, (sl.stop - sl.start)) for sl in idx)
        out.setdefault(pos, []).append(worker_of(dev))
    return out


def place(buf, sharding: NamedSharding, host=None):
    """``buf`` rechunked as ``sharding`` cuts it, each chunk computed on its worker where the mesh is
    made of workers (else left lazy: the scheduler runs the chunks).  ``host`` (a NumPy array with
    ``buf``'s values, when the data comes from the host) is cut into blocks sent to their workers
    with ``client.scatter`` instead, so that no block travels inside a task graph."""
    import dask
    import dask.array as da

    shape = tuple(buf.shape)
    chunks = chunks_of(sharding, shape)
    client = _client(sharding.mesh)
    if client is None:
        return buf.rechunk(chunks)
    who = holders(sharding, shape)
    numblocks = tuple(len(c) for c in chunks)
    blocks = np.empty(numblocks, dtype=object)
    meta = buf._meta
    if host is None:
        buf = buf.rechunk(chunks)
    for pos in np.ndindex(*numblocks):
        workers = sorted(set(who[pos]))
        if host is not None:
            idx = tuple(slice(p * c[0], (p + 1) * c[0]) for p, c in zip(pos, chunks))
            part = np.ascontiguousarray(host[idx])
            fut = client.scatter(part, workers=workers, broadcast=len(workers) > 1, hash=False)
            bshape, dtype = part.shape, part.dtype
        else:
            block = buf.blocks[pos]
            fut = client.compute(block, workers=workers, allow_other_workers=False)
            bshape, dtype = block.shape, block.dtype
        blocks[pos] = da.from_delayed(dask.delayed(fut), shape=bshape, dtype=dtype, meta=meta)
        _PLACED[fut.key] = fut
    return da.block(blocks.tolist()) if blocks.ndim else blocks[()]


def placement(x) -> dict:
    """{block position: worker addresses that hold it} for a dask array placed by ``device_put``
    (from the cluster's own record, ``Client.who_has``)."""
    from arrayx.executors import dask as dask_executor

    client = dask_executor.get_scheduler()
    futures = [f for f in (_PLACED.get(k) for k in x._buf.__dask_graph__() if isinstance(k, str)) if f is not None]
    if futures:
        client.gather(futures)  # finished (no default client is set: wait() would need one)
    who = client.who_has(futures)
    return {k: sorted(v) for k, v in who.items()}
