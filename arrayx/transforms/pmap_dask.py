"""pmap on the dask executor: one graph per call, the members in one contiguous group per worker
(split from parallel.py, which holds pmap itself, the collectives and the other executors' runners).

A call is a few tasks per group: one per compute segment of the member graph (a *stage*).  There is
no task for a collective: each stage that reads a collective's result combines it itself, from
every group's values of the collective's operand (the earlier stages' results, which Dask sends
it), in member order (the bits of the NumPy executor's ``_combine``).  ``ppermute`` and
``psum_scatter`` move only what each member needs: for each (source group, reading group) a *cut*
task on the source group's worker keeps the blocks (ppermute: a source member's value for each of
the reader's members it sends to; psum_scatter: each of its members' part ``m`` for each reader
member ``m``), and the reading stage combines its own group's values with the cuts (the bits of
``_collectives.combine_in_turn``); a source group no member reads from gets no task.  The last
stage stacks the group's results, one array per output.

On a ``dask.distributed`` cluster the graph is submitted at once (``Client.get(..., sync=False)``)
and the last stage is deferred: the stage before it returns, per group, the values the last stage
reads of that group (its *carry*, one future per group, held on the group's worker).  A result is
a dask array whose chunk ``g`` runs group ``g``'s last stage from the carries when it is read (a
small task, not the call again); the next call recognises such an input and runs that last stage
inside its own first stage.  A step of JAX's pmap tutorial (a gradient, ``pmean``, an update) is
then one task per group (this step's gradient with the last step's update), one hop between steps,
and the parameters stay on their workers (a last stage that reads a ppermute or psum_scatter is
not deferred: its carry would hold every group's whole operand); a loop builds no ever-longer graph (each call's graph
holds only the futures of the call before).  Without a cluster the call computes its stages with
Dask's local scheduler and the results hold the NumPy chunks.

On a cluster whose workers all live in this process (``LocalCluster(processes=False)``) the calls
go to a runner actor instead (``pmap_dask_actor``: one message a call, no task; a task's scheduler
round trip alone cost more than a warm jax step), and on a cluster of worker processes the calls
whose inputs hold at most ``RUNNER_ACTOR_MAX_BYTES`` (1 MiB); ``RUNNER_ACTOR = False`` sends every
call here.
"""
from __future__ import annotations

import bisect
import functools
import itertools
import uuid

import numpy as np

from arrayx.transforms.parallel import _wrap, segments

# where a stage finds a member value (see _plan); _CUT: the part of a group's values that a
# ppermute / psum_scatter of another group's members needs (a task of its own on the source group)
_IN, _INDEX, _VALUE, _SEG, _COLL, _CUT = range(6)
_BLOCK = ("ppermute", "psum_scatter")


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
    if distributed and RUNNER_ACTOR:
        from arrayx.transforms import pmap_dask_actor

        from arrayx.transforms.parallel import _run_in_turn

        entry = pmap_dask_actor.runner_for(client, _cluster_workers)
        if entry is not None and (entry.local or sum(_nbytes(b) for b in bufs) <= RUNNER_ACTOR_MAX_BYTES):
            def program(local):
                if local:  # NumPy's runner of the members, on the graph itself (the same bits as numpy)
                    return functools.partial(_run_members_in_turn, _run_in_turn, graph, name, n, tuple(flags))
                return _program_for_a_runner(ex, graph, n, flags)

            return pmap_dask_actor.run(entry, ex, graph, n, bufs, flags, program, _wrap)  # one message a call
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
    plan = _plan(ex, graph, sizes, tuple(flags), distributed)
    run_id = f"{_RUN_PREFIX}{next(_RUNS):x}"

    # the inputs: per input and group, what a stage reads (a chunk's key; or the futures an earlier
    # call's result holds, with how to get its part) and the graphs behind them
    in_refs, picks, base = [], [], []
    for b, f in zip(bufs, flags):
        source = _held_source(b, sizes) if f and distributed else None
        if source is not None:
            in_refs.append(source[0])
            picks.append(source[1])
            continue
        arr = _group_chunks(b, f, sizes, distributed, client)
        chunk_keys = [(arr.name, g if f else 0) + (0,) * (arr.ndim - 1) for g in range(n_groups)]
        held_chunks = _futures_of(arr, chunk_keys) if distributed else None
        if held_chunks is not None:  # persisted: its futures, no graph to send again
            in_refs.append(held_chunks)
        else:
            base.append(arr.__dask_graph__())
            in_refs.append([TaskRef(ck) for ck in chunk_keys])
        picks.append(None)
    picks = tuple(picks)

    def key(j, g):
        return (f"pmap-stage{j}-{run_id}", g)

    def ref(dep, g):
        if dep[0] == _IN:
            return in_refs[dep[1]][dep[2]]
        if dep[0] == _CUT:
            return TaskRef(cut_key(dep))
        return TaskRef(key(dep[1], dep[2]))

    def cut_key(dep):  # (_CUT, source, from group, for group)
        return (f"pmap-cut{dep[1]}-{run_id}", dep[2], dep[3])

    def fn_of(seg, j):
        return None if seg is None else held[2][id(seg)] if distributed else plan.fns[j]

    layers, layer_deps = {}, {}
    below = set()
    if base:
        base = HighLevelGraph.merge(*base)
        below = set(base.layers)
    submitted = len(plan.runners)  # the stages run now (the last one is deferred on a cluster)
    for g in range(n_groups):
        tasks = {}
        for j in range(submitted):
            k = key(j, g)
            tasks[k] = Task(k, plan.runners[j][g], fn_of(plan.stages[j], j), picks,
                            *(ref(d, g) for d in plan.deps[j][g]))
        for dep, (runner, deps) in plan.cuts.items():  # the cuts of this group's values, on its worker
            if dep[2] == g:
                k = cut_key(dep)
                tasks[k] = Task(k, runner, None, picks, *(ref(d, g) for d in deps))
        lname = f"pmap-group{g}-{run_id}"
        ann = {"workers": [workers[g]], "allow_other_workers": True} if workers else None  # a preference
        layers[lname] = MaterializedLayer(tasks, annotations=ann)
        # a stage reads the other groups' earlier stages: the layers' dependencies cannot say it (a
        # cycle of layers); the scheduler works from the tasks themselves
        layer_deps[lname] = set(below)
    hlg = HighLevelGraph(layers, layer_deps)
    if base:
        hlg = HighLevelGraph.merge(hlg, base)
    last = [key(submitted - 1, g) for g in range(n_groups)]
    out_names = [f"pmap-out-{run_id}-{k}" for k in range(len(graph.outputs))]
    if distributed:
        from dask._expr import HLGExpr

        # a token of our own: Dask would draw a uuid4 per graph (slow on a loaded machine)
        futures = client.get(HLGExpr(hlg, _determ_token=f"pmap-{run_id}"), last, sync=False)
        final_fn = fn_of(plan.stages[-1], len(plan.stages) - 1) if plan.deferred else None
    else:  # computed now with Dask's local scheduler (its graph optimisations are not for this graph)
        import dask
        import dask.threaded

        getter = dask.base.get_scheduler(scheduler=client) or dask.threaded.get
        tuples = getter(dict(hlg), last)
    outs = []
    for k, (o, oname) in enumerate(zip(graph.outputs, out_names)):
        shape, dtype = tuple(o.aval.shape), np.dtype(o.aval.dtype)
        chunk_keys = [(oname, g) + (0,) * len(shape) for g in range(n_groups)]
        if not distributed:
            layer = {ck: t[k] for ck, t in zip(chunk_keys, tuples)}
        elif plan.deferred:
            layer = {ck: Task(ck, _deferred_part, plan.final[g], k, final_fn, *futures)
                     for g, ck in enumerate(chunk_keys)}
        else:
            layer = {ck: Task(ck, _part, futures[g], k) for g, ck in enumerate(chunk_keys)}
        outs.append(da.Array(HighLevelGraph({oname: MaterializedLayer(layer)}, {oname: set()}), oname,
                             chunks=(sizes,) + tuple((d,) for d in shape), dtype=dtype,
                             meta=np.empty((0,) * (1 + len(shape)), dtype)))
    return [_wrap(o, ex) for o in outs]


#: calls go to a runner actor (pmap_dask_actor) on a cluster whose workers are in this process, and
#: on any other cluster when the call's inputs hold at most RUNNER_ACTOR_MAX_BYTES (a bigger call's
#: members run where their groups' data are, one task per group: workers in parallel); False sends
#: every call to the task runner below
RUNNER_ACTOR = True
RUNNER_ACTOR_MAX_BYTES = 1 << 20


def _run_members_in_turn(run_in_turn, graph, name, n, flags, *bufs):
    from arrayx.core.executor import get

    return tuple(np.asarray(o._buf) for o in run_in_turn(get("numpy"), graph, name, n, list(bufs), list(flags), None))


def _program_for_a_runner(ex, graph, n, flags):
    """The call as one function of its inputs' values for a runner in another process: the stages
    of one group holding every member (the task runner's recipes and compiled segments: no graph,
    whose primitives would not be this process's after pickling), run in turn."""
    plan = _plan(ex, graph, (n,), tuple(flags), False)
    steps = tuple((plan.runners[j][0], plan.fns[j], plan.deps[j][0]) for j in range(len(plan.runners)))
    return functools.partial(_run_program, steps, (None,) * len(flags))


def _run_program(steps, picks, *inputs):
    done: list = []
    for runner, fn, deps in steps:
        done.append(runner(fn, picks, *(inputs[d[1]] if d[0] == _IN else done[d[1]] for d in deps)))
    return done[-1]


def _nbytes(b) -> int:
    return int(np.prod(np.shape(b), dtype=np.int64)) * np.dtype(getattr(b, "dtype", np.float64)).itemsize

# run ids: a process's own prefix and a counter (no uuid per call: reading the OS's entropy is slow
# on a loaded machine)
_RUN_PREFIX = uuid.uuid4().hex[:8]
_RUNS = itertools.count()


class _Plan:
    """A member graph's stages for one cut of the members into groups (cached on the graph)."""

    __slots__ = ("stages", "runners", "deps", "fns", "final", "deferred", "cuts")


def _plan(ex, graph, sizes, flags, defer) -> _Plan:
    """The stages of ``graph`` for groups of ``sizes`` members and inputs mapped or not (``flags``):
    per stage its compute segment (None for a last stage of its own when the graph ends with
    collectives), and per stage run now and group the task's function (a ``functools.partial`` of
    ``_run_stage`` on a recipe) and what it reads.

    With ``defer`` (a cluster) and more than one stage, the last stage is not run now: the stage
    before it returns, per group, the values the last stage reads of its group (a *carry*), and a
    result's chunk runs the last stage from every group's carry when read (``_deferred_part``) or,
    when it is the next call's input, inside that call's stage that reads it.  A training loop's
    step is then one task per group (the update of a step and the gradient of the next together)."""
    import dask.array as da

    from arrayx.core.executor import get
    from arrayx.core.graph import Var
    from arrayx.core.lowering import lowered

    cache_key = ("pmap dask plan", sizes, flags, defer)
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
            ids[seg.outputs[0]] = new(_collective_source(seg.eqn, source_of(seg.inputs[0]), sum(sizes)))
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
    n_groups, last = len(sizes), len(stages) - 1
    plan = _Plan()
    plan.stages = stages
    plan.fns = [None if seg is None else lowered(get("numpy"), seg.graph) for seg in stages]
    plan.deferred = bool(defer) and last > 0
    # the final stage's recipe per group (run by the last task now, or deferred)
    if plan.deferred and _reads_blocks(sources, stage_inputs[last] + outputs):
        plan.deferred = False  # a carry would hold every group's whole operand: the cuts run now instead
    plan.final = [(g, sizes, starts, sources, stage_inputs[last], "final", last,
                   {d: p for p, d in enumerate(_reads(sources, stage_inputs[last] + outputs, g, last, sizes))},
                   outputs) for g in range(n_groups)]
    carry: list = [[] for _ in range(n_groups)]
    if plan.deferred:  # what the final stage of any group reads of each group, by source
        for g in range(n_groups):
            _reads(sources, stage_inputs[last] + outputs, g, last, sizes, carry)
    plan.runners, plan.deps = [], []
    for j in range(last if plan.deferred else last + 1):
        runners, deps = [], []
        for g in range(n_groups):
            if j == last:
                recipe = plan.final[g]
            else:
                mode, extra = ("carry", tuple(carry[g])) if plan.deferred and j == last - 1 else ("stage", None)
                need = _reads(sources, stage_inputs[j] + (extra or ()), g, j, sizes)
                recipe = (g, sizes, starts, sources, stage_inputs[j], mode, j,
                          {d: p for p, d in enumerate(need)}, extra)
            runners.append(functools.partial(_run_stage, recipe))
            deps.append(tuple(recipe[7]))
        plan.runners.append(runners)
        plan.deps.append(deps)
    # the cut tasks the stages read: (_CUT, source, from group, for group) -> (runner, its deps)
    plan.cuts = {}
    for deps in plan.deps:
        for dep in (d for group_deps in deps for d in group_deps if d[0] == _CUT):
            if dep not in plan.cuts:
                h = dep[2]
                need = _reads(sources, (sources[dep[1]][4],), h, None, sizes)
                recipe = (h, sizes, starts, sources, (), "cut", None, {d: p for p, d in enumerate(need)},
                          (dep[1], dep[3]))
                plan.cuts[dep] = (functools.partial(_run_stage, recipe), need)
    graph.derived[cache_key] = plan
    return plan


def _collective_source(eqn, operand, n) -> tuple:
    """A collective's entry in a plan's sources: ``(_COLL, name, axis, tiled, operand[, extra])``;
    ppermute's extra is (each member's source member or -1, the block's shape, its dtype),
    psum_scatter's ``axis`` its scatter dimension."""
    p, name = eqn.params, eqn.prim.name
    if name == "ppermute":
        src_of = [-1] * n  # each member's source (-1: none sends to it, it gets zeros)
        for s, d in p["perm"]:
            src_of[d] = s
        aval = eqn.inputs[0].aval
        return (_COLL, name, None, None, operand, (tuple(src_of), tuple(aval.shape), np.dtype(aval.dtype).str))
    if name == "psum_scatter":
        return (_COLL, name, p["scatter_dimension"], p["tiled"], operand, None)
    return (_COLL, name, p.get("axis"), p.get("tiled"), operand)


def _group_of(m, starts) -> int:
    return bisect.bisect_right(starts, m) - 1


def _source_groups(src, h, sizes, starts) -> list:
    """The groups whose values group ``h``'s members need for ppermute / psum_scatter ``src``."""
    if src[1] == "psum_scatter":
        return list(range(len(sizes)))
    src_of = src[5][0]
    return sorted({_group_of(src_of[m], starts) for m in range(starts[h], starts[h] + sizes[h]) if src_of[m] >= 0})


def _reads_blocks(sources, wanted) -> bool:
    """Whether reading ``wanted`` combines a ppermute or psum_scatter (through collectives only)."""
    todo, seen = list(wanted), set()
    while todo:
        s = todo.pop()
        if s in seen:
            continue
        seen.add(s)
        src = sources[s]
        if src[0] == _COLL:
            if src[1] in _BLOCK:
                return True
            todo.append(src[4])
    return False


def _reads(sources, wanted, g, j, sizes, carry=None) -> tuple:
    """What group ``g``'s stage ``j`` reads to get the values ``wanted``: ``(_IN, input, group)``,
    ``(_SEG, stage, group)`` and ``(_CUT, source, from group, for group)`` entries, its own stage's
    results excepted.  With ``carry`` (one list per group), the sources of each group's values it
    reads are added to that group's list (a ppermute / psum_scatter then reads every group's)."""
    seen, need = set(), []
    n_groups = len(sizes)
    starts = tuple(sum(sizes[:h]) for h in range(n_groups))

    def walk(s, h):
        if (s, h) in seen:
            return
        seen.add((s, h))
        src = sources[s]
        if src[0] == _COLL and src[1] in _BLOCK and carry is None:
            for hh in _source_groups(src, h, sizes, starts):
                if hh == g:  # this task's own group's values: no cut
                    walk(src[4], g)
                elif (_CUT, s, hh, h) not in need:
                    need.append((_CUT, s, hh, h))
            return
        if src[0] == _COLL:
            for hh in range(n_groups):
                walk(src[4], hh)
            return
        if src[0] not in (_IN, _SEG) or (src[0] == _SEG and src[1] == j and h == g):
            return
        if carry is not None:
            if s not in carry[h]:
                carry[h].append(s)
            return
        dep = (src[0], src[1], h)
        if dep not in need:
            need.append(dep)

    for s in wanted:
        walk(s, g)
    return tuple(need)


def _evaluate(recipe, fn, lookup, cut=None):
    """One group's stage: its members' values of the segment's inputs (``lookup(source, group)``
    gives a group's members' values of an input or of an earlier stage's result; a collective is
    combined here from every group's values), the segment run on each member in turn.  Returns the
    members' results (``"stage"``), the values of the sources the deferred last stage reads
    (``"carry"``), or the group's results stacked, one array per output (``"final"``); a cut task
    (``"cut"``) returns the part of its group's values of a ppermute / psum_scatter operand that
    another group's members need.  ``cut(source, from group, for group)`` gives a cut task's result
    (None: the operand's values are had of every group through ``lookup``)."""
    g, sizes, starts, sources, ins, mode, j, _, extra = recipe
    memo: dict = {}
    own: list = []

    def values(s, h):
        got = memo.get((s, h))
        if got is not None:
            return got
        src = sources[s]
        kind = src[0]
        if kind == _SEG and src[1] == j and h == g:
            out = [t[src[2]] for t in own]
        elif kind == _IN or kind == _SEG:
            out = lookup(s, h)
        elif kind == _INDEX:
            out = [np.int32(i) for i in range(starts[h], starts[h] + sizes[h])]
        elif kind == _VALUE:
            out = [src[1]] * sizes[h]
        elif src[1] in _BLOCK:
            out = _block_values(s, src, h)
        else:
            total = memo.get((s, None))
            if total is None:
                total = memo[(s, None)] = _combine(src[1], src[2], src[3], [
                    v for hh in range(len(sizes)) for v in values(src[4], hh)])
            out = [total] * sizes[h]
        memo[(s, h)] = out
        return out

    def from_group(s, src, hh, h):  # what group hh's members give group h's for a block collective
        if cut is not None and hh != g:
            return cut(s, hh, h)
        return _cut(src, values(src[4], hh), starts[hh], starts[h], sizes[h], sum(sizes))

    def _block_values(s, src, h):
        lo, k = starts[h], sizes[h]
        if src[1] == "ppermute":
            src_of, shape, dtype = src[5]
            got: dict = {}
            out = []
            for m in range(lo, lo + k):
                if src_of[m] < 0:
                    out.append(np.zeros(shape, dtype))
                    continue
                hh = _group_of(src_of[m], starts)
                if hh not in got:
                    got[hh] = from_group(s, src, hh, h)
                out.append(got[hh][m])
            return out
        pieces = [from_group(s, src, hh, h) for hh in range(len(sizes))]
        out = []
        for m in range(lo, lo + k):  # the parts added in member order (combine_in_turn's bits)
            parts = [p for got in pieces for p in got[m]]
            acc = np.array(parts[0], copy=True)
            for p in parts[1:]:
                acc = acc + p
            out.append(np.asarray(acc))
        return out

    if mode == "cut":
        s, h = extra
        return from_group(s, sources[s], g, h)
    if fn is not None:
        cols = [values(s, g) for s in ins]
        own.extend(tuple(fn(*(np.asarray(c[i]) for c in cols))) for i in range(sizes[g]))
    if mode == "stage":
        return own
    if mode == "carry":
        return {s: values(s, g) for s in extra}
    return tuple(np.stack([np.asarray(v) for v in values(s, g)]) for s in extra)


def _cut(src, vals, start, lo, k, n) -> dict:
    """What the members ``start, start + 1, ...`` (their values ``vals``) give members ``lo`` to
    ``lo + k - 1`` for ppermute / psum_scatter ``src``: {member: its source's block} or {member:
    [each member's part of it]}, copies (only these travel)."""
    if src[1] == "ppermute":
        src_of = src[5][0]
        return {m: np.array(vals[src_of[m] - start], copy=True) for m in range(lo, lo + k)
                if start <= src_of[m] < start + len(vals)}
    vals = [np.asarray(v) for v in vals]
    d, tiled = src[2], src[3]
    size = vals[0].shape[d] // n if tiled else None

    def part(m):  # member m's part along d: its size-th (tiled) or its index
        return (slice(None),) * d + ((slice(m * size, (m + 1) * size),) if tiled else (m,))

    return {m: [np.ascontiguousarray(v[part(m)]) for v in vals] for m in range(lo, lo + k)}


def _run_stage(recipe, fn, picks, *deps):
    """A stage's task: ``deps`` are what ``recipe`` reads (its positions in ``recipe[7]``);
    ``picks[i]`` says how input ``i`` is had from its dep: its chunk (None), part ``k`` of a held
    tuple (``("held", k)``) or part ``k`` of an earlier call's deferred last stage, run here from
    the carries (``("deferred", k, its recipes per group)``, the dep ``[fn, *carries]``)."""
    sizes, sources, pos = recipe[1], recipe[3], recipe[7]
    earlier: dict = {}

    def lookup(s, h):
        src = sources[s]
        if src[0] == _SEG:
            return [t[src[2]] for t in deps[pos[(_SEG, src[1], h)]]]
        i = src[1]
        d, pick = deps[pos[(_IN, i, h)]], picks[i]
        if pick is not None and pick[0] == "held":
            d = d[pick[1]]
        elif pick is not None:
            k = (h,) + tuple(map(id, d[1:]))
            outs = earlier.get(k)
            if outs is None:
                carries = d[1:]
                outs = earlier[k] = _evaluate(pick[2][h], d[0], lambda s2, h2: carries[h2][s2])
            d = outs[pick[1]]
        return list(d) if src[2] else [d] * sizes[h]

    return _evaluate(recipe, fn, lookup, lambda s, hh, h: deps[pos[(_CUT, s, hh, h)]])


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


def _deferred_part(recipe, k, fn, *carries):
    """Output ``k`` of a group's deferred last stage, run from every group's carry."""
    return _evaluate(recipe, fn, lambda s, h: carries[h][s])[k]


def held_futures(b) -> list:
    """The futures a pmap result on a cluster holds (tests: where its data is)."""
    from dask._task_spec import TaskRef

    return list({a.key: a for t in dict(b.__dask_graph__()).values() for a in getattr(t, "args", ())
                 if isinstance(a, TaskRef)}.values())


def _futures_of(arr, keys):
    """The futures of ``arr``'s chunks ``keys`` when its graph is only futures (a persisted array)."""
    from distributed import Future

    graph = arr.__dask_graph__()
    layers = getattr(graph, "layers", None)
    if layers is None or len(layers) != 1:
        return None
    (layer,) = layers.values()
    got = [layer.get(k) for k in keys]
    return got if all(isinstance(f, Future) for f in got) else None


def _held_source(b, sizes):
    """When ``b`` is an unchanged pmap result on a cluster cut into ``sizes`` as now: per group the
    dep a stage reads it from and how (see ``_run_stage``); else None."""
    from dask._task_spec import List, Task

    if tuple(b.chunks[0]) != tuple(sizes) or any(len(c) != 1 for c in b.chunks[1:]):
        return None
    layers = getattr(b.dask, "layers", None)
    layer = layers.get(b.name) if layers is not None else None
    if layer is None or len(layers) != 1:
        return None
    tasks = [layer.get((b.name, g) + (0,) * (b.ndim - 1)) for g in range(len(sizes))]
    if not all(isinstance(t, Task) for t in tasks):
        return None
    if all(t.func is _part for t in tasks) and len({t.args[1] for t in tasks}) == 1:
        return [t.args[0] for t in tasks], ("held", tasks[0].args[1])
    if all(t.func is _deferred_part for t in tasks):
        k, rest = tasks[0].args[1], tasks[0].args[2:]
        if any(t.args[1] != k or len(t.args) != len(tasks[0].args) or
               any(a is not b2 for a, b2 in zip(t.args[2:], rest)) for t in tasks):
            return None
        dep = List(*rest)
        return [dep] * len(sizes), ("deferred", k, tuple(t.args[0] for t in tasks))
    return None


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
