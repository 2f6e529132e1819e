"""pmap on the dask executor: one graph per call, the members in one contiguous group per worker
(split from parallel.py, which holds pmap itself, the collectives and the other executors' runners).

A call is a few tasks per group: one per compute segment of the member graph (a *stage*), the
last one also stacking the group's results into one tuple.  There is no task for a collective:
each stage that reads a collective's result combines it itself, from every group's values of the
collective's operand (the earlier stages' results, sent to it by Dask), in member order (the bits
of the NumPy executor's ``_combine``).  A step of JAX's pmap tutorial (a gradient, ``pmean``, an
update) is then 2 tasks per group with one hop between them, not 11 tasks over 4 hops.

On a ``dask.distributed`` cluster the graph is submitted at once (``Client.get(..., sync=False)``):
only the last stage's tuples are held, one future per group on its worker; a result is a dask
array whose chunk ``g`` picks its part of group ``g``'s tuple (a task, run only when the array is
read).  The next call recognises such an array and reads the tuples where they are, so a training
loop's parameters stay on their workers and each step is its own small graph.  Without a cluster
the call computes its tuples with Dask's local scheduler and the results hold the NumPy chunks.
"""
from __future__ import annotations

import functools
import uuid

import numpy as np

from arrayx.transforms.parallel import _wrap, segments

# where a stage finds a member value (see _plan)
_IN, _INDEX, _VALUE, _SEG, _COLL = range(5)


def _run_dask(ex, graph, name, n, bufs, flags, devices):
    import dask.array as da
    from dask._task_spec import Task, TaskRef
    from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

    from arrayx.core.executor import get
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
    sizes = tuple(n // n_groups + (g < n % n_groups) for g in range(n_groups))
    plan = _plan(ex, graph, sizes, tuple(flags))
    run_id = uuid.uuid4().hex[:12]

    # the inputs: per input and group, what a stage reads (a chunk's key, or a held tuple's future
    # and the part of it) and the graphs behind them
    in_refs, picks, base = [], [], []
    for b, f in zip(bufs, flags):
        tuples = _held_tuples(b, sizes) if f and distributed else None
        if tuples is not None:
            in_refs.append(tuples[0])
            picks.append(tuples[1])
            continue
        arr = _group_chunks(b, f, sizes, distributed, client)
        base.append(arr.__dask_graph__())
        in_refs.append([TaskRef((arr.name, g if f else 0) + (0,) * (arr.ndim - 1)) for g in range(n_groups)])
        picks.append(None)
    picks = tuple(picks)

    def key(j, g):
        return (f"pmap-stage{j}-{run_id}", g)

    def ref(dep, g):
        if dep[0] == _IN:
            return in_refs[dep[1]][dep[2]]
        return TaskRef(key(dep[1], dep[2]))

    layers, layer_deps = {}, {}
    below = set()
    if base:
        base = HighLevelGraph.merge(*base)
        below = set(base.layers)
    for g in range(n_groups):
        tasks = {}
        for j, (seg, run, deps) in enumerate(zip(plan.stages, plan.runners, plan.deps)):
            fn = None if seg is None else held[2][id(seg)] if distributed else plan.fns[j]
            k = key(j, g)
            tasks[k] = Task(k, run[g], fn, picks, *(ref(d, g) for d in deps[g]))
        lname = f"pmap-group{g}-{run_id}"
        ann = {"workers": [workers[g]], "allow_other_workers": True} if workers else None  # a preference
        layers[lname] = MaterializedLayer(tasks, annotations=ann)
        # a stage reads the other groups' earlier stages: the layers' dependencies cannot say it (a
        # cycle of layers); the scheduler works from the tasks themselves
        layer_deps[lname] = set(below)
    hlg = HighLevelGraph(layers, layer_deps)
    if base:
        hlg = HighLevelGraph.merge(hlg, base)
    last = len(plan.stages) - 1
    final = [key(last, g) for g in range(n_groups)]
    out_names = [f"pmap-out-{run_id}-{k}" for k in range(len(graph.outputs))]
    if distributed:
        futures = client.get(hlg, final, sync=False)
    else:  # computed now with Dask's local scheduler (its graph optimisations are not for this graph)
        import dask
        import dask.threaded

        getter = dask.base.get_scheduler(scheduler=client) or dask.threaded.get
        tuples = getter(dict(hlg), final)
        parts = [[t[k] for t in tuples] for k in range(len(out_names))]
    outs = []
    for k, (o, oname) in enumerate(zip(graph.outputs, out_names)):
        shape, dtype = tuple(o.aval.shape), np.dtype(o.aval.dtype)
        chunk_keys = [(oname, g) + (0,) * len(shape) for g in range(n_groups)]
        if distributed:
            layer = {ck: Task(ck, _part, futures[g], k) for g, ck in enumerate(chunk_keys)}
        else:
            layer = dict(zip(chunk_keys, parts[k]))
        outs.append(da.Array(HighLevelGraph({oname: MaterializedLayer(layer)}, {oname: set()}), oname,
                             chunks=(sizes,) + tuple((d,) for d in shape), dtype=dtype,
                             meta=np.empty((0,) * (1 + len(shape)), dtype)))
    return [_wrap(o, ex) for o in outs]


class _Plan:
    """A member graph's stages for one cut of the members into groups (cached on the graph)."""

    __slots__ = ("stages", "runners", "deps", "fns")


def _plan(ex, graph, sizes, flags) -> _Plan:
    """The stages of ``graph`` for groups of ``sizes`` members and inputs mapped or not (``flags``):
    per stage its compute segment (None
    for the last stage when the graph ends with collectives), per stage and group the task's
    function (a ``functools.partial`` of ``_run_stage`` on a recipe) and what it reads."""
    import dask.array as da

    from arrayx.core.executor import get
    from arrayx.core.graph import Var
    from arrayx.core.lowering import lowered

    cache_key = ("pmap dask plan", sizes, flags)
    got = graph.derived.get(cache_key)
    if got is not None:
        return got
    ids: dict = {}  # Var -> its number in the recipes
    sources: list = []

    def new(source):
        sources.append(source)
        return len(sources) - 1

    for i, v in enumerate(graph.inputs[:-1]):
        ids[v] = new((_IN, i, bool(flags[i])))
    ids[graph.inputs[-1]] = new((_INDEX,))
    for v, c in zip(graph.constvars, graph.consts):
        ids[v] = new((_VALUE, np.asarray(ex.to_host(c) if isinstance(c, da.Array) else c)))

    def source_of(a):
        if a.__class__ is Var:
            return ids[a]
        return new((_VALUE, None if a is None else a.value))

    segs = segments(graph)
    stages, stage_inputs = [], []
    for seg in segs:
        if seg.eqn is not None:
            p = seg.eqn.params
            ids[seg.outputs[0]] = new((_COLL, seg.eqn.prim.name, p.get("axis"), p.get("tiled"),
                                       source_of(seg.inputs[0])))
            continue
        j = len(stages)
        stages.append(seg)
        stage_inputs.append(tuple(source_of(a) for a in seg.inputs))
        for k, o in enumerate(seg.outputs):
            ids[o] = new((_SEG, j, k))
    if not stages or segs[-1].eqn is not None:  # the results need a stage of their own
        stages.append(None)
        stage_inputs.append(())
    outputs = tuple(source_of(o) for o in graph.outputs)
    sources = tuple(sources)
    starts = tuple(sum(sizes[:g]) for g in range(len(sizes)))
    numpy_ex = get("numpy")
    plan = _Plan()
    plan.stages = stages
    plan.fns = [None if seg is None else lowered(numpy_ex, seg.graph) for seg in stages]
    plan.runners, plan.deps = [], []
    last = len(stages) - 1
    for j, ins in enumerate(stage_inputs):
        runners, deps = [], []
        for g in range(len(sizes)):
            outs = outputs if j == last else None
            need = _reads(sources, ins + (outputs if j == last else ()), g, j, len(sizes))
            recipe = (g, sizes, starts, sources, ins, outs, j, {d: p for p, d in enumerate(need)})
            runners.append(functools.partial(_run_stage, recipe))
            deps.append(need)
        plan.runners.append(runners)
        plan.deps.append(deps)
    graph.derived[cache_key] = plan
    return plan


def _reads(sources, wanted, g, j, n_groups) -> tuple:
    """What group ``g``'s stage ``j`` reads to get the values ``wanted``: ``(_IN, input, group)``
    and ``(_SEG, stage, group)`` entries, its own stage's results excepted."""
    seen, need = set(), []

    def walk(s, h):
        if (s, h) in seen:
            return
        seen.add((s, h))
        src = sources[s]
        if src[0] == _IN:
            dep = (_IN, src[1], h)
        elif src[0] == _SEG:
            if src[1] == j and h == g:
                return
            dep = (_SEG, src[1], h)
        elif src[0] == _COLL:
            for hh in range(n_groups):
                walk(src[4], hh)
            return
        else:
            return
        if dep not in need:
            need.append(dep)

    for s in wanted:
        walk(s, g)
    return tuple(need)


def _run_stage(recipe, fn, picks, *deps):
    """One group's stage: its members' values of the segment's inputs (combining the collectives it
    reads from every group's values), the segment run on each member in turn; the last stage
    returns the group's results, one stacked array per output, as a tuple."""
    g, sizes, starts, sources, ins, outs, j, pos = recipe
    memo: dict = {}
    own: list = []

    def values(s, h):
        got = memo.get((s, h))
        if got is not None:
            return got
        src = sources[s]
        kind = src[0]
        if kind == _IN:
            d = deps[pos[(_IN, src[1], h)]]
            if picks[src[1]] is not None:
                d = d[picks[src[1]]]
            out = list(d) if src[2] else [d] * sizes[h]
        elif kind == _INDEX:
            out = [np.int32(i) for i in range(starts[h], starts[h] + sizes[h])]
        elif kind == _VALUE:
            out = [src[1]] * sizes[h]
        elif kind == _SEG:
            d = own if (src[1] == j and h == g) else deps[pos[(_SEG, src[1], h)]]
            out = [t[src[2]] for t in d]
        else:
            total = memo.get((s, None))
            if total is None:
                total = memo[(s, None)] = _combine(src[1], src[2], src[3], [
                    v for hh in range(len(sizes)) for v in values(src[4], hh)])
            out = [total] * sizes[h]
        memo[(s, h)] = out
        return out

    if fn is not None:
        cols = [values(s, g) for s in ins]
        own.extend(tuple(fn(*(np.asarray(c[i]) for c in cols))) for i in range(sizes[g]))
    if outs is None:
        return own
    return tuple(np.stack([np.asarray(v) for v in values(s, g)]) for s in outs)


def _combine(prim, axis, tiled, values):
    """A collective over every member's value (in member order): the same bits as the NumPy
    executor's ``parallel._combine`` (a left fold for the reductions)."""
    values = [np.asarray(v) for v in values]
    if prim == "psum":
        return functools.reduce(lambda a, b: a + b, values)
    if prim in ("pmax", "pmin"):
        return functools.reduce(np.maximum if prim == "pmax" else np.minimum, values)
    return np.concatenate(values, axis=axis) if tiled else np.stack(values, axis=axis)


def _part(outs, k):
    """Output ``k`` of a group's results (a pmap result's chunk)."""
    return outs[k]


def _held_tuples(b, sizes):
    """``b`` as the futures of an earlier call's groups and its output's place in their tuples, when
    ``b`` is such a result (unchanged, cut into ``sizes`` as now); else None."""
    from dask._task_spec import Task

    if tuple(b.chunks[0]) != tuple(sizes) or any(len(c) != 1 for c in b.chunks[1:]):
        return None
    layers = getattr(b.dask, "layers", None)
    layer = layers.get(b.name) if layers is not None else None
    if layer is None or len(layers) != 1:
        return None
    futures, k = [], None
    for g in range(len(sizes)):
        t = layer.get((b.name, g) + (0,) * (b.ndim - 1))
        if not isinstance(t, Task) or t.func is not _part or (k is not None and t.args[1] != k):
            return None
        futures.append(t.args[0])
        k = t.args[1]
    return futures, k


def _cluster_workers(client) -> list:
    """The sorted addresses of the cluster's workers (all of them: newer clients list 5 by default)."""
    try:
        return sorted(client.scheduler_info(n_workers=-1)["workers"])
    except TypeError:
        return sorted(client.scheduler_info()["workers"])


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
