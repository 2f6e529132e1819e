"""Running a shard_map member graph on the mesh's executor with no transform active.

The member graph is staged once per argument signature on the blocks' shapes, with one extra int32
input per mesh axis (the member's coordinate, what ``axis_index`` returns)
(``_shard_map.stage_member``), its outputs checked against out_specs from the program alone
(``_replication``: the same check on every executor and under jit), then:

- numpy / numba: every member in turn on its own copy of its blocks, cut at the collectives
  (``parallel.segments``); a collective over axis ``a`` combines the members that differ only in
  their ``a`` coordinate (``parallel._combine``; ppermute and psum_scatter hand each member only its
  source's block or its part of the sum, ``_collectives.combine_in_turn``);
- dask: the same, each member's segment one task (pinned to the worker the mesh names for the
  member when the mesh is made of workers, the results then submitted at once without Dask's graph
  optimisation, which would fuse the members' tasks away with their workers); a ppermute wires the source's task into the
  destination's, a psum_scatter cuts each part where its source is (``_dask.combine_blocks``);
- jax: ``jax.shard_map`` of the lowered graph, jitted.

Along a mesh axis an output's spec leaves out, the result is member 0's block (the check has shown
the members agree, or ``check_rep=False`` asked for exactly that), on every executor.
"""
from __future__ import annotations

import uuid

import numpy as np

from arrayx import pytree
from arrayx.sharding import _collectives, _records
from arrayx.sharding._shardings import NamedSharding, shard_index, split_count
from arrayx.core.tracers import aval_of
from arrayx.transforms.parallel import _combine, _read, segments


_CACHE: dict = {}


def run(f, fname, mesh, leaves, tree, specs, out_specs, check):
    from arrayx.sharding._shard_map import check_member, local_aval, stage_member

    key = (f, mesh, tree, tuple(specs), repr(out_specs),
           tuple((tuple(x.shape), x.dtype, aval_of(x).weak_type, x._ex.name) for x in leaves))
    try:
        member = _CACHE.get(key)
    except TypeError:
        member, key = None, None
    if member is None:
        ex = leaves[0]._ex if leaves else None
        member = stage_member(f, fname, mesh, [local_aval(x, s, mesh) for x, s in zip(leaves, specs)], tree, specs,
                              out_specs, device=ex.default_device() if ex is not None else None)
        if key is not None and len(_CACHE) < 256:
            _CACHE[key] = member
    check_member(fname, mesh, member, check)
    from arrayx.core.executor import get

    ex = leaves[0]._ex if leaves else get(mesh.executor)
    if ex.name == "cupy":
        raise NotImplementedError(f"{fname}: shard_map on the 'cupy' executor is not implemented; use 'jax' on GPUs")
    runner = {"jax": _run_jax, "dask": _run_dask}.get(ex.name, _run_in_turn)
    outs = runner(ex, member.graph, fname, mesh, leaves, specs, member.out_specs)
    return pytree.unflatten(member.out_tree, outs)


# -- members in turn ------------------------------------------------------------------------------------


def _member_envs(graph, mesh, bufs, specs, shapes, block_of, coord_value):
    envs, coords = [], []
    for dev, coord in mesh.coords():
        env = {}
        for v, b, s, shape in zip(graph.inputs, bufs, specs, shapes):
            env[v] = block_of(b, shard_index(s, mesh, coord, shape), dev)
        for v, a in zip(graph.inputs[len(bufs):], mesh.axis_names):
            env[v] = coord_value(coord[a])
        envs.append(env)
        coords.append(coord)
    return envs, coords


def _groups(mesh, coords, axes):
    """Members (indices) grouped by their coordinates off ``axes`` (a name or a tuple of names), each
    group in row-major order over ``axes`` (the first name slowest, as JAX numbers them)."""
    axes = axes if isinstance(axes, tuple) else (axes,)
    groups: dict = {}
    for i, c in enumerate(coords):
        pos = 0
        for a in axes:
            pos = pos * mesh.shape[a] + c[a]
        groups.setdefault(tuple(v for a, v in c.items() if a not in axes), []).append((pos, i))
    return [[i for _, i in sorted(g)] for g in groups.values()]


def _combine_any(xp, eqn, vals, group, copy=None):
    """The in-turn combine: ppermute/psum_scatter each member its own block (``_collectives``), the
    other collectives ``parallel._combine``."""
    _collectives.note_collective(eqn, group)
    if _collectives.is_block_collective(eqn.prim):
        return _collectives.combine_in_turn(xp, eqn, vals, copy or (lambda v: v))
    return _combine(xp, eqn, vals)


def _run_members(graph, mesh, envs, coords, compute, xp, wrap_const, combine=_combine_any):
    consts = {v: wrap_const(c) for v, c in zip(graph.constvars, graph.consts)}
    for seg in segments(graph):
        if seg.eqn is not None:
            name = seg.eqn.params["axis_name"]
            for a in (name if isinstance(name, tuple) else (name,)):
                if a not in mesh.axis_names:
                    raise NameError(f"shard_map: collective over {a!r}, which is not an axis of {mesh!r}")
            for group in _groups(mesh, coords, name):
                vals = [_read(envs[i], seg.inputs[0], consts) for i in group]
                for i, r in zip(group, combine(xp, seg.eqn, vals, group)):
                    envs[i][seg.outputs[0]] = r
            continue
        for i, env in enumerate(envs):
            outs = compute(seg, [_read(env, a, consts) for a in seg.inputs], i)
            env.update(zip(seg.outputs, outs))
    return [[_read(env, o, consts) for env in envs] for o in graph.outputs]


def _assemble(mesh, coords, parts, spec, local_shape, place):
    """The global result from each member's block; along an axis ``spec`` leaves out the first
    member's (coordinate 0): the check has shown they agree, or check_rep=False asked for it."""
    shape = tuple(n * split_count(spec, mesh, d) for d, n in enumerate(local_shape))
    blocks: dict = {}
    for c, p in zip(coords, parts):
        idx = shard_index(spec, mesh, c, shape)
        blocks.setdefault(tuple((sl.start, sl.stop) for sl in idx), (idx, p))
    return place(shape, blocks)


def _run_in_turn(ex, graph, fname, mesh, leaves, specs, ospecs):
    from arrayx.core.lowering import _buffer_for, lowered
    from arrayx.core.primitives import _wrap

    bufs = [x._buf for x in leaves]
    shapes = [tuple(x.shape) for x in leaves]
    copy = (lambda b: np.array(b, copy=True)) if ex.name == "numpy" else \
        (lambda b: ex.coerce(np.array(ex.to_host(b), copy=True)))
    envs, coords = _member_envs(graph, mesh, bufs, specs, shapes, lambda b, idx, dev: copy(b[idx]),
                                lambda i: ex.asarray(np.int32(i)))
    per_output = _run_members(graph, mesh, envs, coords, lambda seg, ins, i: lowered(ex, seg.graph)(*ins), ex.xp,
                              lambda c: _buffer_for(ex, c),
                              lambda xp, eqn, vals, group: _combine_any(xp, eqn, vals, group, copy))

    def place(shape, blocks):
        first = next(iter(blocks.values()))[1]
        out = np.empty(shape, dtype=np.asarray(first).dtype) if ex.name == "numpy" else None
        if out is None:
            out = np.empty(shape, dtype=np.asarray(ex.to_host(first)).dtype)
            for idx, p in blocks.values():
                out[idx] = ex.to_host(p)
            return ex.coerce(out)
        for idx, p in blocks.values():
            out[idx] = p
        return out

    return _sharded_outputs(mesh, coords, graph, per_output, ospecs, ex, place)


def _sharded_outputs(mesh, coords, graph, per_output, ospecs, ex, place) -> list:
    """Each output's blocks assembled into one array of ``ex``, with its NamedSharding recorded."""
    from arrayx.core.primitives import _wrap

    results = []
    for o, parts, s in zip(graph.outputs, per_output, ospecs):
        buf = _assemble(mesh, coords, parts, s, tuple(o.aval.shape), place)
        arr = _wrap(buf, ex)
        _records.attach(arr, NamedSharding(mesh, s))
        results.append(arr)
    return results


def _run_dask(ex, graph, fname, mesh, leaves, specs, ospecs):
    import dask
    import dask.array as da

    from arrayx.core.lowering import _buffer_for
    from arrayx.core.executor import get
    from arrayx.core.primitives import _wrap

    numpy_ex = get("numpy")
    run_id = uuid.uuid4().hex[:12]
    from arrayx.sharding._dask import worker_of

    from arrayx.sharding._mesh import _dask_workers
    from arrayx.executors import dask as dask_executor

    known = _dask_workers() if any(d.label.startswith("virtual:") for d in mesh.devices.flat) else None
    workers = [worker_of(d, known) for d, _ in mesh.coords()]
    bufs = [x._buf for x in leaves]
    shapes = [tuple(x.shape) for x in leaves]
    envs, coords = _member_envs(graph, mesh, bufs, specs, shapes, _dask_block, np.int32)

    def compute(seg, ins, i):
        ins = [_as_delayed(v) for v in ins]
        fn = _task_code(numpy_ex, seg.graph)
        single = len(seg.outputs) == 1  # the task's result is the block itself: no getitem task
        with dask.annotate(workers=[workers[i]], allow_other_workers=False) if workers[i] else _null():
            task = dask.delayed(_call_one if single else _call_tuple, pure=False)(
                fn, *ins, dask_key_name=f"shard-{run_id}-{id(seg)}-{i}")
        if single:
            v = seg.outputs[0]
            return [da.from_delayed(task, shape=v.aval.shape, dtype=v.aval.dtype)]
        return [da.from_delayed(task[k], shape=v.aval.shape, dtype=v.aval.dtype) for k, v in enumerate(seg.outputs)]

    def combine(xp, eqn, vals, group):
        if _collectives.is_block_collective(eqn.prim):  # only the blocks each member needs
            from arrayx.sharding._dask import combine_blocks

            return combine_blocks(eqn, vals, group, workers, run_id)
        _collectives.note_collective(eqn, group)
        # psum/pmax/pmin of the members' blocks: one task (a chain of binary ops is one task each)
        vals = [v.as_array() if isinstance(v, _Block) else v for v in vals]
        op = _REDUCERS.get(eqn.prim.name)
        if op is None or not all(isinstance(v, da.Array) for v in vals):
            return _combine(xp, eqn, vals)
        task = dask.delayed(_reduce_blocks, pure=False)(op, *(_as_delayed(v) for v in vals), dask_key_name=f"{eqn.prim.name}-{run_id}-"
                                                                                  f"{uuid.uuid4().hex[:8]}")
        total = da.from_delayed(task, shape=vals[0].shape, dtype=vals[0].dtype)
        return [total] * len(vals)

    per_output = _run_members(graph, mesh, envs, coords, compute, ex.xp, lambda c: _buffer_for(ex, c), combine)

    def place(shape, blocks):
        grid: dict = {}
        for idx, p in blocks.values():
            p = p.as_array() if isinstance(p, _Block) else p
            grid[tuple(0 if sl.start is None else sl.start for sl in idx)] = \
                p if isinstance(p, da.Array) else da.from_array(np.asarray(p))
        if not shape:
            out = next(iter(grid.values()))
        else:
            starts = [sorted({k[d] for k in grid}) for d in range(len(shape))]
            nested = np.empty(tuple(len(s) for s in starts), dtype=object)
            for k, v in grid.items():
                nested[tuple(starts[d].index(k[d]) for d in range(len(shape)))] = v
            out = da.block(nested.tolist())
        if any(out is v for v in grid.values()):
            # one block, returned as it is (a graph constant, a member's input chunk): a new array
            # object, so that the sharding recorded for this result is not recorded for the other
            # holders of that block (a cached member graph would keep the sharding hook on for good)
            out = out.copy()
        if any(workers):
            # submitted now, unoptimised: Dask's fusion would merge the members' tasks into the
            # result's and drop their workers (the members then run wherever their inputs are)
            (out,) = dask_executor.get_scheduler().persist([out], optimize_graph=False)
        return out

    return _sharded_outputs(mesh, coords, graph, per_output, ospecs, ex, place)


def _task_code(numpy_ex, graph):
    """A segment's NumPy code for a dask task: without the NumPy executor's buffer pool (what a
    task's code holds is pickled into the graph sent to the scheduler, and the pool holds a lock)."""
    from arrayx.core.lowering import straight_line

    key = "dask task code"
    fn = graph.derived.get(key)
    if fn is None:
        fn = graph.derived[key] = straight_line(numpy_ex, graph, impl_of=numpy_ex.resolve)
    return fn


def _dask_block(b, idx, dev):
    """A member's block of dask array ``b``: the chunk itself (a Delayed of its key: no task, and no
    graph optimisation when a task takes it) where ``idx`` is exactly one chunk, else a slice."""
    import dask.array as da
    from dask.delayed import Delayed

    if not isinstance(b, da.Array):
        return b[idx]
    pos = []
    for sl, chunks in zip(idx, b.chunks):
        start = 0 if sl.start is None else sl.start
        stop = sum(chunks) if sl.stop is None else sl.stop
        edges = np.cumsum((0,) + tuple(chunks))
        k = int(np.searchsorted(edges, start))
        if k >= len(chunks) or edges[k] != start or edges[k + 1] != stop:
            return b[idx]
        pos.append(k)
    return _Block(Delayed((b.name, *pos), b.__dask_graph__(), layer=b.name), b, tuple(pos))


class _Block:
    """A chunk of a dask array as a task argument (``delayed``) or, elsewhere, as an array."""

    __slots__ = ("delayed", "array", "pos")

    def __init__(self, delayed, array, pos):
        self.delayed, self.array, self.pos = delayed, array, pos

    def as_array(self):
        return self.array.blocks[self.pos]


def _as_delayed(v):
    import dask.array as da

    if isinstance(v, _Block):
        return v.delayed
    if isinstance(v, da.Array) and v.npartitions == 1:
        from dask.delayed import Delayed

        return Delayed((v.name,) + (0,) * v.ndim, v.__dask_graph__(), layer=v.name)
    return v


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_REDUCERS = {"psum": np.add, "pmax": np.maximum, "pmin": np.minimum}


def _reduce_blocks(op, *blocks):
    out = np.asarray(blocks[0])
    for b in blocks[1:]:
        out = op(out, b)
    return np.asarray(out)


def _call_one(fn, *ins):
    return fn(*(np.asarray(b) for b in ins))[0]


def _call_tuple(fn, *ins):
    return tuple(fn(*(np.asarray(b) for b in ins)))


def _run_jax(ex, graph, fname, mesh, leaves, specs, ospecs):
    import jax
    import jax.numpy as jnp

    from arrayx.sharding._jax import jax_mesh, jax_spec
    from arrayx.core.primitives import _wrap
    from arrayx.core.axis_env import JAX_MAPPED as _JAX_MAPPED

    if mesh.executor != "jax":
        raise ValueError(f"{fname}: the arguments live on 'jax' but {mesh!r} is over {mesh.executor!r} devices")
    names = mesh.axis_names
    key = ("jax shard_map", mesh, tuple(specs), tuple(ospecs))
    fn = graph.derived.get(key)
    if fn is None:
        body = ex.lower(graph)
        k = len(names)

        def member(*a):
            return tuple(body(*a[:-k], *(i.reshape(()) for i in a[-k:])))

        smap = getattr(jax, "shard_map", None)
        kw = {"check_vma": False} if smap is not None else {"check_rep": False}
        if smap is None:
            from jax.experimental.shard_map import shard_map as smap
        fn = graph.derived[key] = ex.scoped(jax.jit(smap(member, mesh=jax_mesh(mesh),
                                                          in_specs=tuple(jax_spec(s) for s in specs) +
                                                          tuple(jax.sharding.PartitionSpec(a) for a in names),
                                                          out_specs=tuple(jax_spec(s) for s in ospecs), **kw)))
    token = _JAX_MAPPED.set(_JAX_MAPPED.get() | set(names))
    try:
        outs = fn(*(x._buf for x in leaves), *(jnp.arange(mesh.shape[a], dtype=jnp.int32) for a in names))
    finally:
        _JAX_MAPPED.reset(token)
    return [_wrap(o, ex) for o in outs]
