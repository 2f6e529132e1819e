"""Automatic batching: the batching trace and ``vmap``.

A :class:`BatchTracer` holds a value with one extra axis, ``dim`` (the batch axis,
always an int: values that are not batched are never boxed).  The trace applies each
primitive's ``batch`` rule, ``rule(args, dims, **params) -> (out, out_dim)`` where
``dims[i]`` is the batch axis of operand i or ``None`` when it is not batched; rules
run with the parent trace installed, so their arrayx operations are traced one level
down (nested vmap, vmap of grad, grad of vmap).  Primitives without a rule use a
loop over the batch and a stack (counted: ``arrayx.transforms.rules.coverage()``).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from arrayx import pytree
from arrayx.api._array import Array
from arrayx.core.primitives import _TRACE, Trace, current_trace
from arrayx.core.tracers import bind_with
from arrayx.core.tracers import ShapeDtypeStruct, Tracer, TracerState
from arrayx.transforms.forward import as_array_leaf
from arrayx.transforms.rules._batch import loop_rule as _loop_rule, moveaxis_to

__all__ = ["BatchTrace", "BatchTracer", "vmap", "COLLECTIVE_RULES", "batch_fun", "batch_graph", "front"]

#: collective primitive -> rule(vals, dims, size, **params) -> (out, out_dim) applied by the trace of the
#: vmap whose axis_name the collective names (transforms/parallel.py registers them)
COLLECTIVE_RULES: dict = {}


class BatchState(TracerState):
    __slots__ = ("val", "dim")

    def __init__(self, trace, val, dim: int):
        self.trace = trace
        self.val = val
        self.dim = dim
        shape = tuple(val.shape)
        self.shape = shape[:dim] + shape[dim + 1:]
        self.dtype = val.dtype


class BatchTracer(Tracer):
    """One member of a batch, inside ``vmap``: the batched value and its batch axis."""

    __slots__ = ()

    def _inner(self):
        return self._buf.val

    def _concrete(self, what: str):
        self._check_alive(what)
        from arrayx.core.primitives import ConcretizationError

        raise ConcretizationError(
            f"{what}: the value is batched by vmap (it differs between batch members), so it has no single "
            f"Python value; use arrayx.where / arrayx.cond / arrayx.while_loop instead of Python control flow"
        )

    def _shared_host_value(self, what: str):
        """The member value when every member has the same one (eager vmap only: a staged value is unknown)."""
        self._check_alive(what)
        from arrayx.core.primitives import ConcretizationError

        val, dim = self._buf.val, self._buf.dim
        host = val._shared_host_value(what) if isinstance(val, Tracer) else np.asarray(val)
        if host.shape[dim] == 0:
            raise ConcretizationError(f"{what}: an empty batch has no member value")
        first = np.take(host, 0, axis=dim)
        if not (host == np.expand_dims(first, dim)).all():
            raise ConcretizationError(f"{what}: the value differs between vmap's batch members")
        return first


class BatchTrace(Trace):
    """Applies batch rules to primitives that have one of this trace's tracers as an operand."""

    __slots__ = ("size", "axis_name")

    def __init__(self, parent, size: int, transform: str = "vmap", axis_name=None):
        super().__init__(parent, transform)
        self.size = size
        self.axis_name = axis_name

    def box(self, val, dim):
        if dim is None:
            return val
        return BatchTracer._make(BatchState(self, val, dim))

    def unbox(self, x):
        if x.__class__ is BatchTracer and x._buf.trace is self:
            return x._buf.val, x._buf.dim
        return x, None

    def process_primitive(self, prim, args, params):
        if self.axis_name is not None and prim in COLLECTIVE_RULES and (
                params["axis_name"] == self.axis_name or  # or one of a tuple of names (ppermute)
                (params["axis_name"].__class__ is tuple and self.axis_name in params["axis_name"])):
            return self._process_collective(prim, args, params)
        vals = []
        dims = []
        own = False
        for a in args:
            if a.__class__ is BatchTracer and a._buf.trace is self:
                vals.append(a._buf.val)
                dims.append(a._buf.dim)
                own = True
            else:
                vals.append(a)
                dims.append(None)
        if not own:
            return bind_with(self.parent, prim, args, params)
        rule = prim.batch or _loop_rule(prim, self.size)
        token = _TRACE.set(self.parent)
        try:
            out, odim = rule(vals, dims, **params)
        finally:
            _TRACE.reset(token)
        if prim.multiple_results:
            if not isinstance(odim, (tuple, list)):
                odim = [odim] * len(out)
            return tuple(self.box(o, d) for o, d in zip(out, odim))
        return self.box(out, odim)

    def _process_collective(self, prim, args, params):
        """A collective over this vmap's own axis: its named rule, also for values that are not batched."""
        vals, dims = zip(*(self.unbox(a) for a in args))
        token = _TRACE.set(self.parent)
        try:
            out, odim = COLLECTIVE_RULES[prim](list(vals), list(dims), self.size, **params)
        finally:
            _TRACE.reset(token)
        return self.box(out, odim)

    def process_call(self, prim, args, params):
        """A call-like primitive: its batch rule batches the sub-computations (never inlined, so
        custom rules, checkpointing and compiled calls survive)."""
        if prim.batch is None and any(a.__class__ is BatchTracer and a._buf.trace is self for a in args):
            raise NotImplementedError(
                f"vmap: the call-like primitive {prim.name!r} has no batch rule; register one as "
                f"{prim.name}_p.batch (see arrayx.transforms.batching.batch_fun / batch_graph)"
            )
        return self.process_primitive(prim, args, params)


def _axis_bound(axis_name, size, trace, device):
    """The axis environment frame of ``vmap(axis_name=...)`` (collectives may name it), or nothing."""
    import contextlib

    if axis_name is None:
        return contextlib.nullcontext()
    from arrayx.core.axis_env import bind_axis

    def index():
        from arrayx.api._dtypes import int32
        from arrayx.api.creation import arange

        with _set_parent(trace):
            return trace.box(arange(size, dtype=int32, device=device), 0)

    return bind_axis(axis_name, size, index, "vmap")


def _set_parent(trace):
    from arrayx.core.primitives import set_trace

    return set_trace(trace.parent)


# -- batching sub-computations (the batch rules of call-like primitives use these) ------------------


def _batched_out(trace, o, size, force: bool):
    """Output ``o`` of a function run under ``trace``: (value, batched?), batch axis first."""
    if o is None:
        return None, False
    val, d = trace.unbox(as_array_leaf("vmap", o))
    if d is None and not force:
        return val, False
    return moveaxis_to(val, d, 0, size), True


def batch_fun(fun: Callable, dims, size: int) -> Callable:
    """``fun`` (flat arrays in, flat list out) as a function of batched operands.

    Operand i has its batch axis at ``dims[i]`` (None: not batched); every output comes
    back with its batch axis first (unbatched results are broadcast; None stays None).
    The batch trace is made when the function runs, under whatever trace is current then.
    """
    dims = tuple(dims)

    def batched(*vals):
        trace = BatchTrace(current_trace(), size)
        outs = trace.run(fun, [trace.box(v, d) for v, d in zip(vals, dims)])
        return [_batched_out(trace, o, size, True)[0] for o in outs]

    batched.__name__ = f"vmap({getattr(fun, '__name__', 'fun')})"
    return batched


def batch_graph(graph, batched: tuple, size: int, force: tuple | None = None):
    """``graph`` batched: ``(new graph, out_batched)``, cached on the graph.

    Input i is batched along axis 0 when ``batched[i]``; output j comes out batched along
    axis 0 when it depends on a batched input or ``force[j]`` (then unbatched values are
    broadcast), else it stays unbatched; ``out_batched[j]`` says which.
    """
    from arrayx.transforms.staging import StagingTrace, _as_output

    key = ("batch", size, tuple(batched), None if force is None else tuple(force))
    hit = graph.derived.get(key)
    if hit is not None:
        return hit
    out_batched = []

    def fun(*xs):
        trace = BatchTrace(current_trace(), size)
        outs = trace.run(graph, [trace.box(x, 0 if b else None) for x, b in zip(xs, batched)])
        res = []
        for j, o in enumerate(outs):
            val, b = _batched_out(trace, o, size, bool(force and force[j]))
            out_batched.append(b)
            res.append(val)
        return res

    avals = [ShapeDtypeStruct._trusted((size, *a.shape), a.dtype, a.weak_type) if b else a
             for a, b in zip(graph.in_avals, batched)]
    device = graph.device or _default_device()
    staging = StagingTrace(None, device, "vmap")
    ins = [staging.new_input(a) for a in avals]
    outs = staging.run(fun, ins)
    new = staging.to_graph(list(staging.inputs), [_as_output(o) for o in outs])
    hit = graph.derived[key] = (new, tuple(out_batched))
    return hit


def _default_device():
    from arrayx.core.executor import get_executor

    return get_executor().default_device()


def front(vals, dims, size: int | None = None):
    """Operands with their batch axes first; with ``size``, unbatched ones are broadcast too."""
    out = []
    for v, d in zip(vals, dims):
        if d is None:
            out.append(v if size is None or not isinstance(v, Array) else moveaxis_to(v, None, 0, size))
        else:
            out.append(moveaxis_to(v, d, 0, 0))
    return out


# -- vmap -----------------------------------------------------------------------------------------


def _is_none(x):
    return x is None


def _check_axis(name: str, axis, ndim: int, path: str) -> int | None:
    if axis is None:
        return None
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise TypeError(f"vmap: {name} must hold ints or None, got {axis!r} at {path}")
    if not -ndim <= axis < ndim:
        raise ValueError(
            f"vmap: {name} {axis} at {path} is out of range for a value of {ndim} dimension(s)"
            + ("" if name == "in_axes" else " (with its batch axis)")
        )
    return axis % ndim


def vmap(fun: Callable, in_axes=0, out_axes=0, axis_size: int | None = None, axis_name=None,
         spmd_axis_name=None) -> Callable:
    """``fun`` mapped over an axis of its arguments, computed batched (not by a loop).

    ``in_axes`` is an int, None or a pytree prefix of the positional arguments (a tuple
    with one entry per argument) saying which axis of each leaf is mapped (None: not
    mapped, the same value for every batch member; negative axes count from the end);
    keyword arguments are mapped along axis 0.  ``out_axes`` places the batch axis of
    each output leaf (a prefix of the output).  ``axis_size`` gives the batch size
    when no argument is mapped.

    >>> import arrayx as ax
    >>> ax.vmap(lambda x, y: x @ y, in_axes=(0, None))(ax.ones((3, 2)), ax.ones(2)).tolist()
    [2.0, 2.0, 2.0]
    """
    if spmd_axis_name is not None:
        raise NotImplementedError("vmap: spmd_axis_name is not implemented (axis_name is)")
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)

    def batched(*args, **kwargs):
        from arrayx.transforms.forward import as_array_leaf

        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(
                f"vmap: in_axes has {len(in_axes)} entries but the function got {len(args)} positional "
                f"argument(s); give one entry per argument (None for an unmapped one)"
            )
        leaves, tree = pytree.flatten((args, kwargs))
        axes_prefix = (in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args),
                       {k: 0 for k in kwargs})
        axes = pytree.broadcast_prefix(axes_prefix, (args, kwargs), is_leaf=_is_none,
                                       prefix_name="in_axes", full_name="the arguments", who="vmap")
        paths = [pytree.keystr(p) for p, _ in pytree.leaves_with_path((args, kwargs))]
        leaves = [as_array_leaf("vmap", x) if a is not None else x for x, a in zip(leaves, axes)]
        size = axis_size
        sizes = []
        dims = []
        for x, a, path in zip(leaves, axes, paths):
            if a is None:
                dims.append(None)
                continue
            d = _check_axis("in_axes", a, x.ndim, path)
            dims.append(d)
            sizes.append((path, x.shape[d]))
        found = {n for _, n in sizes}
        if axis_size is not None:
            found.add(axis_size)
        if len(found) > 1:
            listed = ", ".join(f"{p}: {n}" for p, n in sizes)
            raise ValueError(
                f"vmap: the mapped axes have inconsistent sizes ({listed}"
                + (f"; axis_size={axis_size}" if axis_size is not None else "") + ")"
            )
        if not found:
            raise ValueError("vmap: no argument is mapped (every in_axes entry is None); pass axis_size")
        size = found.pop()
        trace = BatchTrace(current_trace(), size, axis_name=axis_name)
        ins = [trace.box(x, d) for x, d in zip(leaves, dims)]
        a2, k2 = pytree.unflatten(tree, ins)
        token = _TRACE.set(trace)
        try:
            with _axis_bound(axis_name, size, trace, next((x.device for x, d in zip(leaves, dims) if d is not None),
                                                          None)):
                out = fun(*a2, **k2)
        except BaseException:
            trace.finish()  # arrays rebound by in-place code get their old values back
            raise
        finally:
            _TRACE.reset(token)
        out_leaves, out_tree = pytree.flatten(out)
        out_leaves = trace.finish(out_leaves)
        out = pytree.unflatten(out_tree, out_leaves)
        oaxes = pytree.broadcast_prefix(out_axes, out, is_leaf=_is_none, prefix_name="out_axes",
                                        full_name="the output", who="vmap")
        opaths = [pytree.keystr(p) for p, _ in pytree.leaves_with_path(out)]
        res = []
        for o, a, path in zip(out_leaves, oaxes, opaths):
            o = as_array_leaf("vmap", o)
            val, d = trace.unbox(o)
            if a is None:
                if d is not None:
                    raise ValueError(
                        f"vmap: out_axes is None at {path} but that output is batched (it depends on a mapped "
                        f"argument); give an axis"
                    )
                res.append(val)
                continue
            a = _check_axis("out_axes", a, val.ndim + (d is None), path)
            res.append(moveaxis_to(val, d, a, size))
        return pytree.unflatten(out_tree, res)

    batched.__name__ = f"vmap({getattr(fun, '__name__', 'fun')})"
    batched.__wrapped__ = fun
    return batched
