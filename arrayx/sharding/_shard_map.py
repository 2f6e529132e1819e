"""``shard_map(f, mesh=, in_specs=, out_specs=)``: ``f`` runs once per device of ``mesh`` on that
device's block of each argument; collectives (``psum``, ``pmean``, ``pmax``, ``pmin``, ``all_gather``,
``axis_index``, ``ppermute``, ``psum_scatter``) name mesh axes; ``out_specs`` say how the members'
results make up the global result (a mesh axis it does not name must hold equal values: ``psum``).

With no transform active it runs on the mesh's executor:

- jax: ``jax.shard_map`` of the staged member graph (collectives lower to ``jax.lax``'s);
- numpy / numba: each member in turn on its own copy of its blocks, segment by segment between
  collectives (the machinery of ``pmap``), a collective combining the members of each group;
- dask: each member's segment is one task on its blocks (on the worker that holds them where the
  mesh is made of workers), collectives combine lazily.

Under a transform (``jit``, ``grad``, ``vmap``) it is nested ``vmap``s, one per mesh axis, over the
arguments cut into blocks: the same values, differentiable and stageable, with the inputs and
results constrained to their shardings.
"""
from __future__ import annotations

import functools
from contextvars import ContextVar
from typing import NamedTuple

import numpy as np

from arrayx import pytree
from arrayx.sharding._mesh import Mesh, PartitionSpec
from arrayx.sharding._shardings import NamedSharding, check_divisible, split_count
from arrayx.core.array import Array
from arrayx.core.primitives import current_trace
from arrayx.core.tracers import ShapeDtypeStruct, aval_of

_INSIDE: ContextVar = ContextVar("arrayx_shard_map_mesh", default=None)


def _is_spec(v) -> bool:
    return v is None or isinstance(v, PartitionSpec)


def _specs_for(what, specs, tree_value, fname):
    if isinstance(specs, PartitionSpec):
        return [specs] * len(pytree.leaves(tree_value))
    return pytree.broadcast_prefix(specs, tree_value, is_leaf=_is_spec, prefix_name=what,
                                   full_name="the arguments" if what == "in_specs" else "the results", who=fname)


def _check_spec(fname, what, spec, mesh):
    if spec is None:
        return PartitionSpec()
    if not isinstance(spec, PartitionSpec):
        raise TypeError(f"{fname}: {what} entries must be PartitionSpecs (P(...)), got {type(spec).__name__}")
    NamedSharding(mesh, spec)  # names must be the mesh's, each once
    return spec


def shard_map(f=None, *, mesh: Mesh, in_specs, out_specs, check_rep: bool = True, check_vma=None, auto=frozenset()):
    """``f`` applied to each device's blocks (see the module doc); ``in_specs``/``out_specs`` are
    PartitionSpecs or pytree prefixes of them over the arguments/results."""
    if f is None:
        return functools.partial(shard_map, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_rep=check_rep,
                                 check_vma=check_vma, auto=auto)
    if not isinstance(mesh, Mesh):
        raise TypeError(f"shard_map: mesh must be an arrayx.sharding.Mesh, got {type(mesh).__name__}")
    if auto:
        raise NotImplementedError("shard_map: auto= (axes left to the partitioner) is not implemented")
    fname = f"shard_map({getattr(f, '__name__', 'f')})"
    check = check_rep if check_vma is None else check_vma

    @functools.wraps(f)
    def mapped(*args):
        outer = _INSIDE.get()
        if outer is not None:
            raise NotImplementedError(f"{fname}: nested shard_map (inside a shard_map over {outer!r}) is not "
                                      f"supported; use one mesh with all the axes, or vmap inside the body")
        from arrayx import api as ax

        args = pytree.map(lambda v: v if isinstance(v, Array) else ax.asarray(v), args)
        leaves, tree = pytree.flatten(args)
        specs = [_check_spec(fname, "in_specs", s, mesh) for s in _specs_for("in_specs", in_specs, args, fname)]
        for x, s in zip(leaves, specs):
            check_divisible(fname, s, mesh, tuple(x.shape))
        if current_trace() is None and all(x.__class__ is Array for x in leaves):
            from arrayx.sharding import _virtual

            leaves = [_to_mesh_executor(x, mesh) for x in leaves]
            return _virtual.run(f, fname, mesh, leaves, tree, specs, out_specs, check)
        return _as_vmaps(f, fname, mesh, leaves, tree, specs, out_specs, check)

    mapped.__name__ = fname
    return mapped


def _to_mesh_executor(x, mesh):
    from arrayx.sharding._api import _on_executor

    return _on_executor(x, mesh.executor)


# -- the member graph ------------------------------------------------------------------------------------


class Member(NamedTuple):
    """One member's program: ``graph`` takes the blocks, then one int32 coordinate per mesh axis
    (what ``axis_index`` returns); its outputs' tree, out_specs, paths (``"[1]"``) and the mesh axes
    each output varies along (:mod:`arrayx.sharding._replication`)."""
    graph: object
    out_tree: object
    out_specs: list
    out_paths: list
    out_axes: list


def local_aval(x, spec, mesh) -> ShapeDtypeStruct:
    """The aval of one member's block of ``x``."""
    return ShapeDtypeStruct(tuple(n // split_count(spec, mesh, d) for d, n in enumerate(x.shape)), x.dtype,
                            aval_of(x).weak_type)


def stage_member(f, fname, mesh, local_avals, tree, specs, out_specs, parent=None, device=None) -> Member:
    """Stage ``f`` on one member's blocks with the mesh axes bound (nested jit inlined, so every
    collective is seen), under ``parent`` (values captured from its tracers stay its values)."""
    import contextlib

    from arrayx import api as ax
    from arrayx.sharding import _replication
    from arrayx.transforms.jitting import disable_jit
    from arrayx.transforms.parallel import bind_axis
    from arrayx.transforms.staging import StagingTrace, _as_output

    if device is None:
        from arrayx.core.executor import get

        device = get(mesh.executor).default_device()
    trace = StagingTrace(parent, device, fname)
    ins = [trace.new_input(a) for a in local_avals]
    index = {a: trace.new_input(ShapeDtypeStruct((), np.dtype("int32"))) for a in mesh.axis_names}
    info = {}

    def body(*arrays):
        with contextlib.ExitStack() as stack:
            for a in mesh.axis_names:
                stack.enter_context(bind_axis(a, mesh.shape[a], lambda a=a: index[a], "shard_map"))
            stack.enter_context(disable_jit())
            token = _INSIDE.set(mesh)
            try:
                out = f(*pytree.unflatten(tree, list(arrays)))
            finally:
                _INSIDE.reset(token)
            # a Python scalar result is a constant: the same on every member (as JAX's)
            out = pytree.map(lambda v: v if isinstance(v, Array) else ax.asarray(_as_output(v)), out)
        outs, otree = pytree.flatten(out)
        info["tree"] = otree
        info["specs"] = [_check_spec(fname, "out_specs", s, mesh) for s in _specs_for("out_specs", out_specs, out,
                                                                                     fname)]
        info["paths"] = [pytree.keystr(p) for p, _ in pytree.leaves_with_path(out)]
        return outs

    outs = trace.run(body, ins)
    graph = trace.to_graph(list(trace.inputs), [_as_output(o) for o in outs])
    in_axes = [frozenset(n for d in range(len(s)) for n in s.names_of(d)) for s in specs] + \
        [frozenset({a}) for a in mesh.axis_names]
    return Member(graph, info["tree"], info["specs"], info["paths"], _replication.output_axes(graph, in_axes))


def check_member(fname, mesh, member: Member, check: bool) -> None:
    """Ranks of the out_specs, and (``check``) replication along the axes they leave out."""
    from arrayx.sharding import _replication

    for o, s, path in zip(member.graph.outputs, member.out_specs, member.out_paths):
        if len(s) > len(o.aval.shape):
            raise ValueError(f"{fname}: out_specs{path} entry {s!r} has more entries than output{path} has "
                             f"dimensions (shape {o.aval.shape}); a rank-0 result that differs per member needs "
                             f"a dimension of size 1 to be laid out (arrayx.reshape(v, (1,)))")
    if check:
        _replication.check_outputs(fname, mesh, member.out_axes, member.out_specs, member.out_paths)


# -- under a transform: nested vmaps over the blocks ------------------------------------------------------


def _split(x, spec, mesh):
    """``x`` reshaped so that each mesh axis ``spec`` names is a leading dimension (mesh order), the
    rest being the block's dimensions; and the mesh axes that lead."""
    from arrayx import api as ax

    shape = tuple(x.shape)
    new_shape, labels = [], []
    for d, n in enumerate(shape):
        names = spec.names_of(d)
        for a in names:
            new_shape.append(mesh.shape[a])
            labels.append(a)
        new_shape.append(n // split_count(spec, mesh, d))
        labels.append(None)
    y = ax.reshape(x, tuple(new_shape))
    lead = [a for a in mesh.axis_names if a in labels]
    order = [labels.index(a) for a in lead] + [i for i, lab in enumerate(labels) if lab is None]
    return ax.permute_dims(y, tuple(order)) if order != list(range(len(order))) else y, lead


def _merge(y, spec, mesh, lead):
    """The inverse of :func:`_split` for a result: leading mesh axes ``lead`` back into their dims."""
    from arrayx import api as ax

    nlead = len(lead)
    local = tuple(y.shape[nlead:])
    order, new_shape = [], []
    for d, n in enumerate(local):
        names = spec.names_of(d)
        for a in names:
            order.append(lead.index(a))
        order.append(nlead + d)
        new_shape.append(n * split_count(spec, mesh, d))
    if order != list(range(len(order))):
        y = ax.permute_dims(y, tuple(order))
    return ax.reshape(y, tuple(new_shape))


def _constrain(v, mesh, spec):
    from arrayx.sharding._constraint import sharding_constraint_p

    if not isinstance(v, Array) or v.__class__ is Array:
        return v
    return sharding_constraint_p.bind(v, sharding=NamedSharding(mesh, spec))


def _as_vmaps(f, fname, mesh, leaves, tree, specs, out_specs, check):
    from arrayx.core.graph import eval_graph
    from arrayx.transforms.batching import vmap
    from arrayx.transforms.parallel import axis_index

    leaves = [_constrain(x, mesh, s) for x, s in zip(leaves, specs)]
    member = stage_member(f, fname, mesh, [local_aval(x, s, mesh) for x, s in zip(leaves, specs)], tree, specs,
                          out_specs, parent=current_trace(), device=next((x.device for x in leaves), None))
    check_member(fname, mesh, member, check)
    parts = [_split(x, s, mesh) for x, s in zip(leaves, specs)]
    blocks = [p[0] for p in parts]
    uses = [set(p[1]) for p in parts]
    # an output gets a leading axis per mesh axis it varies along or its spec names (mesh order)
    leads = [[a for a in mesh.axis_names if _names_axis(s, a) or a in vary]
             for s, vary in zip(member.out_specs, member.out_axes)]

    def body(*bl):
        return eval_graph(member.graph, [*bl, *(axis_index(a) for a in mesh.axis_names)])

    fn = body
    for level in range(len(mesh.axis_names) - 1, -1, -1):  # the innermost vmap is the last mesh axis
        name = mesh.axis_names[level]
        in_axes = tuple(0 if name in u else None for u in uses)
        out_axes = [0 if name in lead else None for lead in leads]
        fn = vmap(fn, in_axes=in_axes, out_axes=out_axes, axis_name=name, axis_size=mesh.shape[name])
    from arrayx import api as ax

    results = []
    for o, s, lead in zip(fn(*blocks), member.out_specs, leads):
        o = o if isinstance(o, Array) else ax.asarray(o)
        named = [a for a in lead if _names_axis(s, a)]
        if len(named) != len(lead):  # check_rep=False: member 0's value along an axis the spec leaves out
            o = o[tuple(slice(None) if a in named else 0 for a in lead)]
        results.append(_constrain(_merge(o, s, mesh, named), mesh, s))
    return pytree.unflatten(member.out_tree, results)


def _names_axis(spec, name) -> bool:
    spec = PartitionSpec() if spec is None else spec
    return any(name in spec.names_of(d) for d in range(len(spec)))


def _map_specs(specs, fn):
    if _is_spec(specs):
        return fn(specs)
    return pytree.map(fn, specs, is_leaf=_is_spec)
