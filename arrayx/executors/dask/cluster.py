"""Reads on a ``dask.distributed`` cluster that fail when data they need is lost, instead of
waiting for ever.

A block that ``device_put`` computed on a worker of the mesh is restricted to that worker (it must
stay where the sharding puts it).  When that worker dies, the scheduler holds the block's task
until a worker of that address comes back, which a restarted worker (a new port) never is: a read
of the array waited for ever.  Blocks ``device_put`` sent from the host (``client.scatter``) cannot
be recomputed at all: Dask cancels what needs them and names the read's own final task, not the
lost block.  ``gather`` here computes the arrays as ``dask.compute`` does, checking every
:data:`PERIOD` seconds whether a block of theirs that the program holds as a Dask ``Future`` is
lost, and raises a RuntimeError naming its Dask key, chained to Dask's own error where there is
one.
"""
from __future__ import annotations

__all__ = ["gather", "PERIOD"]

#: seconds between two checks, while a read waits, of the blocks it needs
PERIOD = 0.5


def _futures_in(arrays) -> dict:
    """{Dask key: Future} of the futures the arrays' graphs read (their blocks held on the cluster)."""
    from distributed import Future

    out = {}
    for a in arrays:
        graph = a.__dask_graph__()
        layers = getattr(graph, "layers", None)
        for layer in (layers.values() if layers is not None else (graph,)):
            if type(layer).__name__ not in ("MaterializedLayer", "dict"):
                continue  # Blockwise and the like compute: they hold no futures
            for v in getattr(layer, "mapping", layer).values():
                if isinstance(v, Future):
                    out[v.key] = v
    return out


def _lost(futures: dict) -> list:
    """The keys among ``futures`` whose data is gone for good: cancelled or erred (Dask gave up on
    them), or placed by ``device_put`` on a worker and lost (only that worker may compute them)."""
    placed = _placed_keys()
    return [k for k, f in futures.items()
            if f.status in ("cancelled", "error") or (f.status == "lost" and k in placed)]


def _placed_keys():
    import sys

    module = sys.modules.get("arrayx.sharding._dask")  # not imported: nothing was placed
    return module._PLACED if module is not None else {}


def _lost_error(what: str, keys: list, cause=None) -> RuntimeError:
    shown = ", ".join(repr(k) for k in keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")
    return RuntimeError(
        f"{what}: the Dask data {shown} that this array needs is lost: the worker that held it left the "
        f"cluster (died, ran out of memory or was closed) and Dask cannot compute it again elsewhere (a block "
        f"device_put sent from the host, or computed on the worker its sharding names).  Make the array again "
        f"from its source (device_put it again) on the workers now in the cluster"
        + (f" (Dask: {type(cause).__name__}: {cause})" if cause is not None else "") + "."
    )


def gather(client, arrays: list, what: str = "read of a Dask array") -> list:
    """The values of ``arrays`` (Dask collections) computed on ``client``, as ``dask.compute``
    gives them; RuntimeError naming the lost keys when data they need is lost."""
    from concurrent.futures import CancelledError

    held = _futures_in(arrays)
    lost = _lost(held)
    if lost:
        raise _lost_error(what, lost)
    futures = client.compute(list(arrays))
    out = []
    try:
        for f in futures:
            while True:
                try:
                    out.append(f.result(timeout=PERIOD))
                    break
                except TimeoutError:
                    lost = _lost(held)
                    if lost:
                        raise _lost_error(what, lost) from None
    except CancelledError as e:  # Dask's FutureCancelledError names the read's own task
        lost = _lost(held)
        if lost:
            client.cancel(futures)
            raise _lost_error(what, lost, e) from e
        raise
    except RuntimeError:
        client.cancel(futures)  # the tasks still waiting on the lost data
        raise
    return out
