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
import math
from contextvars import ContextVar

import numpy as np

from arrayx import pytree
from arrayx.sharding._mesh import Mesh, PartitionSpec
from arrayx.sharding._shardings import NamedSharding, check_divisible, split_count
from arrayx.core.array import Array
from arrayx.core.primitives import current_trace

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
        return _as_vmaps(f, fname, mesh, leaves, tree, specs, out_specs)

    mapped.__name__ = fname
    return mapped


def _to_mesh_executor(x, mesh):
    from arrayx.sharding._api import _on_executor

    return _on_executor(x, mesh.executor)


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


def _as_vmaps(f, fname, mesh, leaves, tree, specs, out_specs):
    from arrayx.transforms.batching import vmap

    leaves = [_constrain(x, mesh, s) for x, s in zip(leaves, specs)]
    parts = [_split(x, s, mesh) for x, s in zip(leaves, specs)]
    blocks = [p[0] for p in parts]
    uses = [set(p[1]) for p in parts]

    def body(*bl):
        token = _INSIDE.set(mesh)
        try:
            return f(*pytree.unflatten(tree, list(bl)))
        finally:
            _INSIDE.reset(token)

    fn = body
    for level in range(len(mesh.axis_names) - 1, -1, -1):  # the innermost vmap is the last mesh axis
        name = mesh.axis_names[level]
        in_axes = tuple(0 if name in u else None for u in uses)
        out_axes = _map_specs(out_specs, lambda s, name=name: 0 if _names_axis(s, name) else None)
        fn = vmap(fn, in_axes=in_axes, out_axes=out_axes, axis_name=name, axis_size=mesh.shape[name])
    out = fn(*blocks)
    ospecs = [_check_spec(fname, "out_specs", s, mesh) for s in _specs_for("out_specs", out_specs, out, fname)]
    oleaves, otree = pytree.flatten(out)
    results = []
    for o, s in zip(oleaves, ospecs):
        lead = [a for a in mesh.axis_names if _names_axis(s, a)]
        results.append(_constrain(_merge(o, s, mesh, lead), mesh, s))
    return pytree.unflatten(otree, results)


def _names_axis(spec, name) -> bool:
    spec = PartitionSpec() if spec is None else spec
    return any(name in spec.names_of(d) for d in range(len(spec)))


def _map_specs(specs, fn):
    if _is_spec(specs):
        return fn(specs)
    return pytree.map(fn, specs, is_leaf=_is_spec)
