"""``pmap`` and the named-axis collectives (``psum``, ``pmean``, ``pmax``, ``pmin``, ``all_gather``,
``axis_index``), with JAX's semantics, inside ``pmap`` and inside ``vmap(axis_name=...)``.  A
collective may name a tuple of axes: their members numbered row-major in the tuple's order (the
first name varying slowest), as JAX numbers them; ``psum`` binds one primitive over the whole tuple (one reduction
over the combined group, JAX's bits), the others one primitive per name.

An axis name is bound by a frame of the axis environment (``arrayx.core.axis_env``, a ContextVar: the name, the number of
members, and how to get the member's index).  ``vmap(axis_name=)`` binds one around its function;
its trace applies the collectives' *named* batch rules (``batching.COLLECTIVE_RULES``): over the
batch axis a psum is a sum, an all_gather a move of the batch axis.  Collectives are primitives,
so inner transforms (grad inside vmap/pmap) see them: psum and all_gather are linear (psum is
its own transpose; all_gather's is a psum and a slice at the member's index), pmax/pmin pass the
tangent of the members that hold the extremum (shared between ties).  A collective evaluated
on a concrete value (one that is the same for every member) needs no communication: psum is
``x * size``, pmax/pmin ``x``, all_gather ``size`` copies.

``pmap(f)(x)`` with no transform active stages ``f`` once per input signature on one shard's
shapes (with ``disable_jit``: nested jit bodies are inlined, so their collectives are seen) and
runs it on the executor of its arguments:

- jax: ``jax.pmap`` of the lowered graph over the executor's devices (collectives lower to
  ``jax.lax.psum/pmax/pmin/all_gather/ppermute/psum_scatter``); at most
  ``jax.local_device_count()`` members (``XLA_FLAGS=--xla_force_host_platform_device_count=N``
  gives N CPU devices);
- numpy / numba (one device): the members run in turn, segment by segment between collectives,
  each segment compiled once; a collective combines the members' values (``ppermute`` hands each
  member a copy of its source's block only, ``psum_scatter`` adds up only each member's part:
  ``sharding._collectives.combine_in_turn``; ``record_transfers`` counts what they receive);
- dask (``pmap_dask``): the members in one group per worker, one task per group per segment
  between collectives (the NumPy-compiled segment run on each member in turn); a segment's task
  combines the collectives it reads from every group's values (of ppermute / psum_scatter only the
  blocks its members need, cut where they are by a small task); on a cluster the last segment runs
  inside the next call (or when a result is read), so a training step is one task per group; on a
  cluster of in-process workers, and for small calls on any cluster, a call is one message to a
  runner actor instead (``pmap_dask_actor``).

Under a transform (``grad(pmap(f))``, ``jit``, ``vmap``) ``pmap`` is ``vmap(f, axis_name=...)``:
the same values, on the one executor, differentiable and stageable.
"""
from __future__ import annotations

import contextlib
import functools
import math
from typing import Callable, NamedTuple

import numpy as np

from arrayx import pytree
from arrayx.api._array import Array
from arrayx.core.axis_env import AxisFrame, bind_axis, _AXES, _frame, _names  # noqa: F401
from arrayx.core.primitives import Primitive, current_trace
from arrayx.core.axis_env import JAX_MAPPED as _JAX_MAPPED  # noqa: F401 (set by the jax pmap below and shard_map)
from arrayx.core.executor import GENERIC
from arrayx.core.tracers import ShapeDtypeStruct, aval_of, is_weak

__all__ = ["pmap", "psum", "pmean", "pmax", "pmin", "all_gather", "axis_index", "device_count",
           "local_device_count", "psum_p", "pmax_p", "pmin_p", "all_gather_p", "COLLECTIVES"]


# -- primitives ----------------------------------------------------------------------------------------

psum_p = Primitive("psum")
pmax_p = Primitive("pmax")
pmin_p = Primitive("pmin")
all_gather_p = Primitive("all_gather")
#: the primitives that cut a member graph (``segments``) and that the runners combine across members;
#: arrayx/sharding/_collectives.py adds ppermute and psum_scatter (shard_map's runners combine them)
COLLECTIVES = [psum_p, pmax_p, pmin_p, all_gather_p]


def _same_aval(x, **params):
    return ShapeDtypeStruct._trusted(tuple(x.shape), x.dtype, is_weak(x))


def gathered_shape(shape, axis, tiled, size) -> tuple:
    shape = list(shape)
    if tiled:
        shape[axis] *= size
    else:
        shape.insert(axis, size)
    return tuple(shape)


for _p in (psum_p, pmax_p, pmin_p):
    _p.abstract_eval = _same_aval
all_gather_p.abstract_eval = lambda x, *, axis_name, axis_size, axis, tiled: ShapeDtypeStruct._trusted(
    gathered_shape(x.shape, axis, tiled, axis_size), x.dtype, False)


def _xp(buf):
    from arrayx.api.manipulation import buffer_namespace

    return buffer_namespace(buf)


# a collective on a concrete buffer: the value is the same on every member
def _psum_unmapped(x, *, axis_name, axis_size):
    return x * axis_size


def _extremum_unmapped(x, *, axis_name, axis_size):
    return x


def _all_gather_unmapped(x, *, axis_name, axis_size, axis, tiled):
    xp = _xp(x)
    return xp.concat([x] * axis_size, axis=axis) if tiled else xp.stack([x] * axis_size, axis=axis)


# the collectives' generic implementations (a concrete value is the same on every member); the jax
# executor's table has jax.lax's own for the axes of a jax.pmap (executors/jax/parallel.py)
for _p, _unmapped in ((psum_p, _psum_unmapped), (pmax_p, _extremum_unmapped), (pmin_p, _extremum_unmapped),
                      (all_gather_p, _all_gather_unmapped)):
    GENERIC[_p.name] = _unmapped


# -- rules -----------------------------------------------------------------------------------------------


def _sum_params(params):
    return {"axis_name": params["axis_name"], "axis_size": params["axis_size"]}


def _extremum_jvp(prim):
    def jvp(primals, tangents, **params):
        from arrayx import api as ax

        (x,), (t,) = primals, tangents
        out = prim.bind(x, **params)
        if t is None:
            return out, None
        hit = ax.astype(x == out, t.dtype)  # members holding the extremum share its tangent
        return out, psum_p.bind(t * hit, **params) / psum_p.bind(hit, **params)

    jvp.__name__ = f"{prim.name}_jvp"
    return jvp


def _all_gather_transpose(ct, x, *, axis_name, axis_size, axis, tiled):
    from arrayx.api._slicing import dynamic_index_in_dim, dynamic_slice_in_dim

    total = psum_p.bind(ct, axis_name=axis_name, axis_size=axis_size)
    me = axis_index(axis_name)
    if tiled:
        chunk = x.shape[axis]
        return (dynamic_slice_in_dim(total, me * chunk, chunk, axis),)
    return (dynamic_index_in_dim(total, me, axis, keepdims=False),)


def _define_rules():
    from arrayx.transforms.rules import deflinear

    deflinear(psum_p, lambda ct, x, **params: (psum_p.bind(ct, **params),))
    deflinear(all_gather_p, _all_gather_transpose)
    pmax_p.jvp = _extremum_jvp(pmax_p)
    pmin_p.jvp = _extremum_jvp(pmin_p)


# batch rules over an axis that is not the collective's: the collective acts member-wise
def _elementwise_batch(prim):
    def rule(vals, dims, **params):
        return prim.bind(vals[0], **params), dims[0]

    return rule


def _all_gather_batch(vals, dims, *, axis, **params):
    from arrayx.transforms.rules._batch import to_front

    return all_gather_p.bind(to_front(vals[0], dims[0]), axis=axis + 1, **params), 0


for _p in (psum_p, pmax_p, pmin_p):
    _p.batch = _elementwise_batch(_p)
all_gather_p.batch = _all_gather_batch


# named batch rules: the collective over the vmapped axis itself (out_dim None: one value for all)
def _named_reduction(reduce_name, unmapped):
    def rule(vals, dims, size, **params):
        from arrayx import api as ax

        (x,), (d,) = vals, dims
        if d is None:
            return unmapped(x, size), None
        if reduce_name == "sum":
            return ax.sum(x, axis=d, dtype=x.dtype), None
        return getattr(ax, reduce_name)(x, axis=d), None

    return rule


def _psum_named(vals, dims, size, *, axis_name, axis_size):
    """psum over the vmapped axis; over a tuple of names that holds it, the other names' members
    are gathered first (they are enclosing axes) and every member of the tuple is added in turn, in
    row-major order over the tuple: one reduction, the bits of the members' runners."""
    from arrayx import api as ax
    from arrayx.transforms.rules._batch import moveaxis_to

    (x,), (d,) = vals, dims
    if axis_name.__class__ is not tuple:
        return (x * size if d is None else ax.sum(x, axis=d, dtype=x.dtype)), None
    here = _vmapped_name("psum", axis_name, size)
    rest = [a for a in axis_name if a != here]
    if d is None:
        x = ax.broadcast_to(ax.expand_dims(x, axis=0), (size,) + tuple(x.shape))
    else:
        x = moveaxis_to(x, d, 0, size)
    for a in reversed(rest):  # leading axes: the other names (in the tuple's order), then this one
        x = all_gather_p.bind(x, axis_name=a, axis_size=_frame("psum", a).size, axis=0, tiled=False)
    lead = rest + [here]
    x = ax.permute_dims(x, tuple(lead.index(a) for a in axis_name) + tuple(range(len(lead), x.ndim)))
    x = ax.reshape(x, (axis_size,) + tuple(x.shape[len(lead):]))
    total = x[0]
    for i in range(1, axis_size):
        total = total + x[i]
    return total, None


def _vmapped_name(fname, names, size):
    """Which of ``names`` the trace applying a named rule maps: the innermost frame among them (bind
    reaches the innermost trace first)."""
    from arrayx.core.axis_env import axis_frames

    for f in reversed(axis_frames()):
        if f.name in names and f.size == size:
            return f.name
    raise NameError(f"{fname} over {names!r}: no enclosing vmap maps one of these axes")


def _named_all_gather(vals, dims, size, *, axis, tiled, **params):
    from arrayx import api as ax

    (x,), (d,) = vals, dims
    if d is None:
        x = ax.broadcast_to(ax.expand_dims(x, axis=0), (size,) + tuple(x.shape))
        d = 0
    out = ax.moveaxis(x, d, axis)
    if tiled:
        shape = list(out.shape)
        out = ax.reshape(out, tuple(shape[:axis]) + (shape[axis] * shape[axis + 1],) + tuple(shape[axis + 2:]))
    return out, None


def _register_named_rules():
    from arrayx.transforms.batching import COLLECTIVE_RULES

    COLLECTIVE_RULES[psum_p] = _psum_named
    COLLECTIVE_RULES[pmax_p] = _named_reduction("max", lambda x, n: x)
    COLLECTIVE_RULES[pmin_p] = _named_reduction("min", lambda x, n: x)
    COLLECTIVE_RULES[all_gather_p] = _named_all_gather


_define_rules()
_register_named_rules()


# -- the public collectives ------------------------------------------------------------------------------


def _frames(fname, axis_name) -> list:
    """The frames of ``axis_name`` (a name, or a tuple of names: the axes taken together, their
    members numbered row-major in the tuple's order, the first name varying slowest, as JAX)."""
    names = _names(axis_name)
    if len(set(names)) != len(names):
        raise ValueError(f"{fname}: axis_name {axis_name!r} names an axis twice; name each mapped axis once")
    return [_frame(fname, name) for name in names]


def _over_leaves(fname, x, axis_name, one):
    """A reduction over several axes is one per axis (in any order: the same members combined)."""
    frames = _frames(fname, axis_name)

    def leaf(v):
        for frame in frames:
            v = one(v, frame)
        return v

    return pytree.map(leaf, x)


def psum(x, axis_name):
    """The sum of ``x`` over the members of the mapped axis ``axis_name`` (a name or a tuple of names);
    every member gets it.  ``x`` may be a pytree; ``psum(1, name)`` is the axis size.  Over a tuple
    it is ONE reduction over the members of all the names (one primitive whose ``axis_name`` is the
    tuple): the members added in turn, numbered row-major in the tuple's order (the bits of
    ``jax.lax.psum`` over the tuple under ``jax.shard_map``, not a sum per name)."""
    frames = _frames("psum", axis_name)
    size = math.prod(f.size for f in frames)
    name = frames[0].name if len(frames) == 1 else tuple(f.name for f in frames)

    def leaf(v):
        if not frames:
            return v
        if not isinstance(v, Array):
            return v * size
        return psum_p.bind(v, axis_name=name, axis_size=size)

    return pytree.map(leaf, x)


def pmean(x, axis_name):
    """The mean of ``x`` over the members of ``axis_name`` (``psum(x) / size``)."""
    size = math.prod(f.size for f in _frames("pmean", axis_name))
    return pytree.map(lambda v: v / size, psum(x, axis_name))


def _extremum(fname, prim):
    def collective(x, axis_name):
        def one(v, frame):
            if not isinstance(v, Array):
                return v
            return prim.bind(v, axis_name=frame.name, axis_size=frame.size)

        return _over_leaves(fname, x, axis_name, one)

    return collective


pmax = _extremum("pmax", pmax_p)
pmax.__doc__ = "The maximum of ``x`` over the members of the mapped axis ``axis_name``."
pmin = _extremum("pmin", pmin_p)
pmin.__doc__ = "The minimum of ``x`` over the members of the mapped axis ``axis_name``."


def all_gather(x, axis_name, *, axis: int = 0, tiled: bool = False):
    """Every member's ``x`` stacked along a new axis ``axis`` (concatenated along ``axis`` when
    ``tiled``), in member order; every member gets the whole.

    Over a tuple of names the members are numbered row-major in the tuple's order (the first name
    varies slowest, as JAX) and ``tiled=False`` adds one axis of the product of their sizes: a
    gather over the last name, then the earlier ones, last to first, each concatenated onto it."""
    from arrayx import api as ax

    frames = _frames("all_gather", axis_name)

    def leaf(v):
        v = v if isinstance(v, Array) else ax.asarray(v)
        nd = v.ndim + (0 if tiled else 1)
        if not -nd <= axis < nd:
            raise ValueError(f"all_gather: axis {axis} is out of range for a result of {nd} dimension(s) (x of "
                             f"shape {tuple(v.shape)}, tiled={bool(tiled)})")
        a = axis % nd
        if not frames:  # no axis: one member
            return v if tiled else ax.expand_dims(v, axis=a)
        for k, frame in enumerate(reversed(frames)):
            v = all_gather_p.bind(v, axis_name=frame.name, axis_size=frame.size, axis=a, tiled=bool(tiled) or k > 0)
        return v

    return pytree.map(leaf, x)


def axis_index(axis_name):
    """This member's position (int32, from 0) along the mapped axis ``axis_name``; over a tuple of
    names its position row-major over them, the first name varying slowest (as JAX)."""
    from arrayx import api as ax

    if not isinstance(axis_name, (tuple, list)):
        return _frame("axis_index", axis_name).index()
    frames = _frames("axis_index", axis_name)
    if not frames:
        return ax.asarray(0, dtype=ax.int32)
    me = frames[0].index()
    for frame in frames[1:]:
        me = me * frame.size + frame.index()
    return me


def device_count(executor: str | None = None) -> int:
    """How many devices ``executor`` (default: the current one) maps ``pmap`` over: JAX's devices of
    its default platform, every process's (``jax.device_count()``), the workers of the Dask cluster
    arrayx is connected to, else 1 (numpy/numba run members in turn)."""
    from arrayx.core.executor import get, get_executor

    ex = get_executor() if executor is None else get(executor)
    if ex.name == "dask":
        from arrayx.executors import dask as dask_executor

        client = dask_executor.get_scheduler()
        info = getattr(client, "scheduler_info", None)
        return max(1, len(info()["workers"])) if info is not None else 1
    if ex.name == "jax":  # not len(ex.devices()): it lists the host's CPU devices after an accelerator's
        ex.devices()  # loads JAX (raises with the reason when it is missing)
        import jax

        return jax.device_count()
    return len(ex.devices())


def local_device_count(executor: str | None = None) -> int:
    """How many of :func:`device_count`'s devices this process has: under many JAX processes
    (``arrayx.distributed.initialize``) this process's (``jax.local_device_count()``, as
    ``arrayx.sharding.local_device_count("jax")``), the default platform's; on one process
    :func:`device_count`."""
    from arrayx.core.executor import get, get_executor

    ex = get_executor() if executor is None else get(executor)
    if ex.name == "jax":
        ex.devices()
        import jax

        return jax.local_device_count()
    return device_count(executor)


# -- pmap ---------------------------------------------------------------------------------------------------


def pmap(fun: Callable, axis_name=None, *, in_axes=0, out_axes=0, static_broadcasted_argnums=(), devices=None,
         backend=None, axis_size=None, donate_argnums=()) -> Callable:
    """``fun`` mapped over an axis of its arguments, one member per device (see the module doc).

    ``in_axes``/``out_axes`` as in ``vmap`` (ints, None, pytree prefixes); ``axis_name`` names the
    mapped axis for the collectives; ``static_broadcasted_argnums`` are passed to every member as
    Python values; ``devices`` (jax) chooses the devices.  ``donate_argnums`` is accepted and ignored.
    """
    from arrayx.transforms.batching import vmap

    if backend is not None:
        raise NotImplementedError("pmap: backend= is not supported; put the arguments on the executor to use")
    name = axis_name if axis_name is not None else _Anonymous()
    static = (static_broadcasted_argnums,) if isinstance(static_broadcasted_argnums, int) \
        else tuple(static_broadcasted_argnums)
    cache: dict = {}

    @functools.wraps(fun)
    def mapped(*args):
        n_args = len(args)
        static_pos = {i % n_args for i in static} if n_args else set()
        dyn_pos = [i for i in range(n_args) if i not in static_pos]

        def with_static(*dyn):
            full = list(args)
            for i, v in zip(dyn_pos, dyn):
                full[i] = v
            return fun(*full)

        dyn = [args[i] for i in dyn_pos]
        dyn_axes = in_axes
        if isinstance(in_axes, (tuple, list)):
            if len(in_axes) != n_args:
                raise ValueError(f"pmap: in_axes has {len(in_axes)} entries but the function got {n_args} arguments")
            dyn_axes = tuple(in_axes[i] for i in dyn_pos)
        if current_trace() is not None:  # under a transform: the same values as vmap over the named axis
            return vmap(with_static, in_axes=dyn_axes, out_axes=out_axes, axis_size=axis_size, axis_name=name)(*dyn)
        return _pmap_top(with_static, name, dyn, dyn_axes, out_axes, devices, cache,
                         tuple((i, _static_key(args[i])) for i in sorted(static_pos)))

    mapped.__name__ = f"pmap({getattr(fun, '__name__', 'fun')})"
    return mapped


class _Anonymous:
    """The axis name of a pmap without one (collectives cannot name it; it stays distinct)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<anonymous pmap axis>"


def _static_key(v):
    try:
        hash(v)
        return v
    except TypeError:
        return id(v)


def _pmap_top(fun, name, args, in_axes, out_axes, devices, cache, static_key):
    from arrayx import api as ax
    from arrayx.transforms.batching import _check_axis
    leaves, tree = pytree.flatten(tuple(args))
    prefix = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    axes = pytree.broadcast_prefix(prefix, tuple(args), is_leaf=lambda v: v is None, prefix_name="in_axes",
                                   full_name="the arguments", who="pmap")
    ex = None
    sizes = set()
    moved, mapped_flags, avals = [], [], []
    for x, a in zip(leaves, axes):
        if not isinstance(x, Array):
            moved.append(x)
            mapped_flags.append(None)
            avals.append(None)
            continue
        if ex is None:
            ex = x._ex
        elif x._ex != ex:
            raise TypeError(f"pmap: arguments live on different executors ({ex.name!r} and {x._ex.name!r}); "
                            f"move one with x.to_device(...) first")
        if a is None:
            moved.append(x)
            mapped_flags.append(False)
            avals.append(aval_of(x))
            continue
        d = _check_axis("in_axes", a, x.ndim, "pmap argument")
        sizes.add(x.shape[d])
        x = ax.moveaxis(x, d, 0) if d else x
        moved.append(x)
        mapped_flags.append(True)
        avals.append(ShapeDtypeStruct(tuple(x.shape[1:]), x.dtype))
    if len(sizes) != 1:
        raise ValueError("pmap: no argument is mapped" if not sizes else
                         f"pmap: the mapped axes have different sizes {sorted(sizes)}")
    (n,) = sizes
    key = (tree, tuple(mapped_flags), tuple((a.shape, a.dtype, a.weak_type) if a is not None else
                                              (type(v), _static_key(v)) for a, v in zip(avals, moved)),
           static_key, ex.name, n)
    staged = cache.get(key)
    if staged is None:
        # dask's members run the NumPy executor's code in their tasks: staged for its device, the
        # arrays they create are NumPy's (staged for dask's, a task would compute on the cluster)
        from arrayx.core.executor import get

        staged = cache[key] = _stage_member(fun, name, n, tree, moved, mapped_flags, avals,
                                            get("numpy") if ex.name == "dask" else ex)
    graph, out_tree = staged
    bufs = [x._buf for x, f in zip(moved, mapped_flags) if f is not None]
    flags = [f for f in mapped_flags if f is not None]
    runner = _RUNNERS.get(ex.name, _run_in_turn)
    outs = runner(ex, graph, name, n, bufs, flags, devices)
    results = []
    oaxes = pytree.broadcast_prefix(out_axes, pytree.unflatten(out_tree, [0] * len(outs)),
                                    is_leaf=lambda v: v is None, prefix_name="out_axes", full_name="the output",
                                    who="pmap")
    for o, a in zip(outs, oaxes):
        if a is None:
            results.append(o[0])
        else:
            results.append(ax.moveaxis(o, 0, _check_axis("out_axes", a, o.ndim, "pmap output")) if a else o)
    return pytree.unflatten(out_tree, results)


def _stage_member(fun, name, n, tree, leaves, mapped_flags, avals, ex):
    """One member's graph: its array leaves and, last, its index (int32) are the graph's inputs."""
    from arrayx.transforms.jitting import disable_jit
    from arrayx.transforms.staging import StagingTrace, _as_output

    trace = StagingTrace(None, ex.default_device(), "pmap")
    ins = [trace.new_input(a) if a is not None else None for a in avals]
    index = trace.new_input(ShapeDtypeStruct((), np.dtype("int32")))
    out_tree = []

    def body(*arrays):
        it = iter(arrays)
        member = [next(it) if f is not None else v for v, f in zip(leaves, mapped_flags)]
        with bind_axis(name, n, lambda: index, "pmap"), disable_jit():
            out = fun(*pytree.unflatten(tree, member))
        outs, otree = pytree.flatten(out)
        out_tree.append(otree)
        return outs

    outs = trace.run(body, [t for t in ins if t is not None])
    graph = trace.to_graph(list(trace.inputs), [_as_output(o) for o in outs])
    return graph, out_tree[0]


# -- running a member's graph --------------------------------------------------------------------------------


def _nested_collectives(value) -> bool:
    from arrayx.core.graph import Graph

    if isinstance(value, Graph):
        return any(e.prim in COLLECTIVES or any(_nested_collectives(p) for p in e.params.values())
                   for e in value.equations)
    if isinstance(value, (tuple, list)):
        return any(_nested_collectives(v) for v in value)
    return False


class _Segment(NamedTuple):
    graph: object  # Graph of the equations between two collectives, or None for a collective
    eqn: object  # the collective's Equation, or None
    inputs: tuple
    outputs: tuple


def segments(graph) -> list:
    """The member graph cut at its collectives: compute segments (closed Graphs) and collectives."""
    from arrayx.core.graph import Graph, Var

    key = "pmap segments"
    if key in graph.derived:
        return graph.derived[key]
    equations = _collectives_late(graph.equations)
    needed_later: list = [set() for _ in range(len(equations) + 1)]
    live = {o for o in graph.outputs if o.__class__ is Var}
    needed_later[-1] = set(live)
    for j in range(len(equations) - 1, -1, -1):
        live = live | {a for a in equations[j].inputs if a.__class__ is Var}
        needed_later[j] = set(live)
    out, run, start = [], [], 0

    def flush(stop):
        if not run:
            return
        defined = {v for e in run for v in e.outputs}
        ins = []
        for e in run:
            for a in e.inputs:
                if a.__class__ is Var and a not in defined and a not in ins:
                    ins.append(a)
        outs = tuple(v for v in defined if v in needed_later[stop])
        out.append(_Segment(Graph(ins, (), (), list(run), outs), None, tuple(ins), outs))
        run.clear()

    for j, eqn in enumerate(equations):
        if eqn.prim in COLLECTIVES:
            flush(j)
            out.append(_Segment(None, eqn, eqn.inputs, eqn.outputs))
            continue
        if any(_nested_collectives(p) for p in eqn.params.values()):
            raise NotImplementedError(
                f"pmap: a collective inside {eqn.prim.name} (control flow or a custom rule) is only supported on "
                f"the 'jax' executor; move the collective out of the {eqn.prim.name} body"
            )
        run.append(eqn)
    flush(len(equations))
    graph.derived[key] = out
    return out


def _collectives_late(equations) -> list:
    """The equations reordered (dependencies kept) so that the collectives that can run together
    are next to each other: an equation's level is the number of collectives on its longest path
    from the inputs; the computations of level L come first, then the collectives of level L + 1.
    ``pmean`` of a tuple of gradients is then one run of collectives, not one per gradient between
    their divisions."""
    from arrayx.core.graph import Var

    level: dict = {}
    keys = []
    for eqn in equations:
        lv = max((level.get(a, 0) for a in eqn.inputs if a.__class__ is Var), default=0)
        is_collective = eqn.prim in COLLECTIVES
        keys.append((lv, 1 if is_collective else 0))
        for o in eqn.outputs:
            level[o] = lv + is_collective
    order = sorted(range(len(equations)), key=lambda j: keys[j])
    return [equations[j] for j in order]


def _combine(xp, eqn, values):
    """One collective over the members' values (a list in member order) -> each member's result."""
    prim, params = eqn.prim, eqn.params
    if prim is psum_p:
        total = functools.reduce(lambda a, b: a + b, values)
        return [total] * len(values)
    if prim in (pmax_p, pmin_p):
        op = xp.maximum if prim is pmax_p else xp.minimum
        best = functools.reduce(op, values)
        return [best] * len(values)
    whole = xp.concat(values, axis=params["axis"]) if params["tiled"] else xp.stack(values, axis=params["axis"])
    return [whole] * len(values)


def _member_inputs(graph, bufs, flags, n, index_of):
    envs = []
    for i in range(n):
        env = {}
        for v, b, f in zip(graph.inputs[:-1], bufs, flags):
            env[v] = b[i] if f else b
        env[graph.inputs[-1]] = index_of(i)
        envs.append(env)
    return envs


def _read(env, a, consts):
    from arrayx.core.graph import Var

    if a.__class__ is Var:
        return env[a] if a in env else consts[a]
    return None if a is None else a.value


def _combine_members(xp, eqn, values, copy):
    """A collective of the pmap runners over the members' values: ppermute / psum_scatter hand each
    member only its source's block (a copy) or its summed part, the others ``_combine``; what the
    members receive is counted for ``record_transfers`` (both through ``BLOCK_COLLECTIVES``)."""
    hooks = BLOCK_COLLECTIVES
    if hooks is None:  # arrayx.sharding not loaded: no ppermute / psum_scatter exists
        return _combine(xp, eqn, values)
    hooks.note_collective(eqn, range(len(values)))
    if hooks.is_block_collective(eqn.prim):
        return hooks.combine_in_turn(xp, eqn, values, copy)
    return _combine(xp, eqn, values)


#: ``arrayx.sharding._collectives`` once it is loaded (it defines ppermute and psum_scatter, adds
#: them to COLLECTIVES and sets this): their combine and the transfer count (transforms do not
#: import sharding, which builds on them)
BLOCK_COLLECTIVES = None


def _run_segments(ex, graph, n, bufs, flags, run_compute, xp, index_of, wrap_const, copy=None):
    envs = _member_inputs(graph, bufs, flags, n, index_of)
    consts = {v: wrap_const(c) for v, c in zip(graph.constvars, graph.consts)}
    copy = copy or (lambda b: np.array(b, copy=True))
    for seg in segments(graph):
        if seg.eqn is not None:
            vals = [_read(env, seg.inputs[0], consts) for env in envs]
            for env, r in zip(envs, _combine_members(xp, seg.eqn, vals, copy)):
                env[seg.outputs[0]] = r
            continue
        for i, env in enumerate(envs):
            outs = run_compute(seg, [_read(env, a, consts) for a in seg.inputs], i)
            env.update(zip(seg.outputs, outs))
    return [[_read(env, o, consts) for env in envs] for o in graph.outputs]


def _wrap(buf, ex):
    from arrayx.core.primitives import _wrap as wrap

    return wrap(buf, ex)


def _run_in_turn(ex, graph, name, n, bufs, flags, devices):
    """numpy / numba: the members one after another, segment by segment."""
    from arrayx.core.lowering import _buffer_for, lowered

    xp = ex.xp

    def compute(seg, ins, i):
        return lowered(ex, seg.graph)(*ins)

    copy = (lambda b: np.array(b, copy=True)) if ex.name == "numpy" else \
        (lambda b: ex.coerce(np.array(ex.to_host(b), copy=True)))
    per_output = _run_segments(ex, graph, n, bufs, flags, compute, xp,
                               lambda i: ex.asarray(np.int32(i)), lambda c: _buffer_for(ex, c), copy)
    return [_wrap(xp.stack([ex.coerce(p) if p.__class__ is not ex.array_type else p for p in parts], axis=0), ex)
            for parts in per_output]


def _call_tuple(fn, *ins):
    return tuple(fn(*(np.asarray(b) for b in ins)))


def _run_jax(ex, graph, name, n, bufs, flags, devices):
    """jax: ``jax.pmap`` of the lowered member graph over the executor's devices."""
    import jax
    import jax.numpy as jnp

    natives = None
    if devices is not None:
        natives = [d.native if hasattr(d, "native") else d for d in devices]
    available = len(natives) if natives is not None else jax.local_device_count()
    if n > available:
        raise ValueError(
            f"pmap on the 'jax' executor: {n} members but {available} device(s); map over at most {available} "
            f"(on CPU, XLA_FLAGS=--xla_force_host_platform_device_count={n} before JAX starts gives {n} devices)"
        )
    key = ("jax pmap", name, tuple(flags), None if natives is None else tuple(natives))
    fn = graph.derived.get(key)
    if fn is None:
        body = ex.lower(graph)
        # an anonymous axis (no collective can name it) gets a string of its own: jax's pmap builds a
        # mesh from the name, and jaxlib accepts only strings there
        jax_name = f"_arrayx_anonymous_pmap_{id(name):x}" if isinstance(name, _Anonymous) else name
        fn = graph.derived[key] = ex.scoped(jax.pmap(lambda *a: body(*a), axis_name=jax_name,  # arrayx's 64 bits
                                                      in_axes=tuple(0 if f else None for f in flags) + (0,),
                                                      devices=natives))
    token = _JAX_MAPPED.set(_JAX_MAPPED.get() | {name})
    try:
        outs = fn(*bufs, jnp.arange(n, dtype=jnp.int32))
    finally:
        _JAX_MAPPED.reset(token)
    return [_wrap(o, ex) for o in outs]


from arrayx.transforms.pmap_dask import _run_dask  # noqa: E402  (it reads this module's helpers)

_RUNNERS = {"jax": _run_jax, "dask": _run_dask}
