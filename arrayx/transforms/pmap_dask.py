"""pmap on the dask executor: one graph per call, the members in one contiguous group per worker
(split from parallel.py, which holds pmap itself, the collectives and the other executors' runners)."""
from __future__ import annotations

import functools
import operator
import uuid

import numpy as np

from arrayx.transforms.parallel import _wrap, segments


def _run_dask(ex, graph, name, n, bufs, flags, devices):
    """dask: one graph per call.  The members are cut into as many contiguous groups as the cluster
    has workers (one group without a cluster); a group's members run in turn in one task per compute
    segment, on its worker; a collective is one task over every member's value; a result's chunk
    ``g`` holds group ``g``'s members.  On a ``dask.distributed`` cluster the graph is submitted at
    once (``Client.persist``): the results are held on their groups' workers as futures, the next
    call's groups read their chunks where they are, and reading a result fetches its chunks without
    computing anything again.  Without a cluster the call computes its results with Dask's local
    scheduler (``dask.persist``): a loop of calls builds no ever-longer graph either."""
    import dask.array as da
    from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

    from arrayx.core.executor import get
    from arrayx.core.graph import Var
    from arrayx.core.lowering import lowered
    from arrayx.executors import dask as dask_executor
    numpy_ex = get("numpy")
    client = dask_executor.get_scheduler()
    distributed = getattr(client, "scheduler_info", None) is not None
    # per cluster, once per member graph: the workers (asked of the scheduler once) and each compute
    # segment's function held on every worker (scattered once: a call's graph carries no code)
    held = graph.derived.get(("pmap dask", id(client))) if distributed else None
    if distributed and (held is None or held[0] is not client):
        fns = {id(seg): client.scatter(lowered(numpy_ex, seg.graph), broadcast=True, hash=False)
               for seg in segments(graph) if seg.eqn is None}
        held = graph.derived[("pmap dask", id(client))] = (client, _cluster_workers(client), fns)
    workers = held[1] if distributed else []
    n_groups = max(1, min(n, len(workers)))
    sizes = [n // n_groups + (g < n % n_groups) for g in range(n_groups)]
    starts = [sum(sizes[:g]) for g in range(n_groups)]
    run_id = uuid.uuid4().hex[:12]
    consts = {v: np.asarray(ex.to_host(c) if isinstance(c, da.Array) else c)
              for v, c in zip(graph.constvars, graph.consts)}
    tasks: list = [{} for _ in range(n_groups)]  # per group: its tasks
    envs: list = [{} for _ in range(n_groups)]  # per group: Var -> a task giving its members' values (a list)
    inputs = []
    for v, b, f in zip(graph.inputs[:-1], bufs, flags):
        arr = _group_chunks(b, f, sizes, distributed, client)
        inputs.append(arr)
        for g, env in enumerate(envs):
            key = (arr.name, g if f else 0) + (0,) * (arr.ndim - 1)
            env[v] = (list, key) if f else (_repeat, key, sizes[g])
    for g, env in enumerate(envs):
        env[graph.inputs[-1]] = [np.int32(i) for i in range(starts[g], starts[g] + sizes[g])]

    def arg(g, a):
        if a.__class__ is Var:
            return envs[g][a] if a in envs[g] else (_repeat, consts[a], sizes[g])
        return (_repeat, None if a is None else a.value, sizes[g])

    shared: dict = {}  # the collectives' tasks: one per run of collectives next to each other
    run: list = []

    def flush(j):
        if not run:
            return
        key = f"pmap-collectives-{run_id}-{j}"
        how = tuple((seg.eqn.prim.name, seg.eqn.params.get("axis"), seg.eqn.params.get("tiled")) for seg in run)
        shared[key] = (functools.partial(_combine_runs, how),) + tuple(
            [arg(g, seg.inputs[0]) for seg in run] for g in range(n_groups))
        for k, seg in enumerate(run):
            for g, env in enumerate(envs):
                env[seg.outputs[0]] = (_repeat, (operator.getitem, key, k), sizes[g])
        run.clear()

    for j, seg in enumerate(segments(graph)):
        if seg.eqn is not None:
            run.append(seg)
            continue
        flush(j)
        fn = held[2][id(seg)] if distributed else lowered(numpy_ex, seg.graph)
        for g, env in enumerate(envs):
            key = (f"pmap-shard-{run_id}-{j}", g)
            tasks[g][key] = (_call_group, fn) + tuple(arg(g, a) for a in seg.inputs)
            for k, o in enumerate(seg.outputs):
                env[o] = (_pick, key, k)
    flush("last")
    out_names = [f"pmap-out-{run_id}-{k}" for k in range(len(graph.outputs))]
    for g in range(n_groups):
        for o, oname in zip(graph.outputs, out_names):
            tasks[g][(oname, g) + (0,) * len(o.aval.shape)] = (_stack, arg(g, o))
    layers, deps = {}, {}
    base = HighLevelGraph.merge(*(a.__dask_graph__() for a in inputs)) if inputs else None
    below = set(base.layers) if base is not None else set()
    shared_name = f"pmap-collectives-{run_id}"
    # the collectives read the groups' tasks and the groups read the collectives: the layers'
    # dependencies cannot say it (a cycle of layers); the scheduler works from the tasks themselves
    for g, group in enumerate(tasks):
        ann = {"workers": [workers[g]], "allow_other_workers": True} if workers else None  # a preference
        layers[f"pmap-group-{run_id}-{g}"] = MaterializedLayer(group, annotations=ann)
        deps[f"pmap-group-{run_id}-{g}"] = set(below) | ({shared_name} if shared else set())
    if shared:
        layers[shared_name] = MaterializedLayer(shared)
        deps[shared_name] = set(below)
    hlg = HighLevelGraph(layers, deps)
    if base is not None:
        hlg = HighLevelGraph.merge(hlg, base)
    outs = [da.Array(hlg, oname, chunks=(tuple(sizes),) + tuple((d,) for d in o.aval.shape),
                     dtype=np.dtype(o.aval.dtype), meta=np.empty((0,) * (1 + len(o.aval.shape)), np.dtype(o.aval.dtype)))
            for o, oname in zip(graph.outputs, out_names)]
    if distributed:
        outs = client.persist(outs, optimize_graph=False)
    else:  # computed now (Dask's graph optimisations are not for this hand-built graph)
        import dask

        outs = dask.persist(*outs, optimize_graph=False, scheduler=client)
    return [_wrap(o, ex) for o in outs]


def _cluster_workers(client) -> list:
    """The sorted addresses of the cluster's workers (all of them: newer clients list 5 by default)."""
    try:
        return sorted(client.scheduler_info(n_workers=-1)["workers"])
    except TypeError:
        return sorted(client.scheduler_info()["workers"])


def _repeat(value, k):
    return [value] * k


def _pick(results, k):
    return [r[k] for r in results]


def _call_group(fn, *ins):
    return [tuple(fn(*(np.asarray(b) for b in member))) for member in zip(*ins)]


def _stack(values):
    return np.stack([np.asarray(v) for v in values])


def _combine_runs(how, *groups):
    """A run of collectives: ``groups[g][c]`` are group g's members' values for collective c."""
    return tuple(_combine_groups(prim, axis, tiled, *(group[c] for group in groups))
                 for c, (prim, axis, tiled) in enumerate(how))


def _combine_groups(prim, axis, tiled, *groups):
    values = [np.asarray(v) for group in groups for v in group]
    if prim == "psum":
        return functools.reduce(np.add, values)
    if prim in ("pmax", "pmin"):
        return functools.reduce(np.maximum if prim == "pmax" else np.minimum, values)
    return np.concatenate(values, axis=axis) if tiled else np.stack(values, axis=axis)


# inputs a pmap on a cluster has cut into one chunk per member and placed there, by dask name (the
# data behind a name never changes): a loop calling pmap on the same data sends it once
_PREPARED: dict = {}
_PREPARED_MAX = 32


def _group_chunks(b, mapped, sizes, distributed, client):
    """``b`` as a dask array of one chunk per member group along axis 0 (``mapped``) or of one chunk;
    on a cluster, cut once per name and kept there."""
    import dask.array as da

    if not isinstance(b, da.Array):
        b = da.from_array(np.asarray(b), chunks=-1)
    want = (tuple(sizes),) + tuple((d,) for d in b.shape[1:]) if mapped else tuple((d,) for d in b.shape)
    if tuple(b.chunks) == want:
        return b
    key = (b.name, want)
    got = _PREPARED.get(key)
    if got is None:
        got = b.rechunk(want)
        if distributed:
            (got,) = client.persist([got])
            if len(_PREPARED) >= _PREPARED_MAX:
                _PREPARED.pop(next(iter(_PREPARED)))
            _PREPARED[key] = got
    return got
