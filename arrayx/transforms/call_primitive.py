"""jit's ``call`` primitive: a staged Graph bound as one operation, and its rule for every trace.

- eagerly (``_call_eager``), the graph is compiled for the operands' executor once
  (:func:`compiled_for`, ``Executor.compile``) and called;
- JVP: ``call`` on the graph's JVP (staged once per set of tangents), so ``grad(jit(f))`` keeps
  the primal compiled; staging with some operands known (``linearize``): the graph is split,
  the known part runs now and the rest is recorded as one ``call`` (:func:`partial_eval_graph`);
  transpose: ``call`` on the transposed graph; batching: ``call`` on the batched graph;
- lowering: the graph's own lowering, inside the caller's compiled function.

``jitting`` (``jit``, its caches and ``JitFunction``) binds it; the loops of ``control_flow``
reuse its graph transformations (``_jvp_graph``, ``_transpose_graph``, ``partial_eval_graph``).
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import os
import threading
import warnings
import weakref
from collections import OrderedDict
from contextvars import ContextVar
from typing import Callable

from arrayx import pytree
from arrayx.api import _dtypes
from arrayx.api._array import Array
from arrayx.api._modes import is_strict
from arrayx.core import executor as _base
from arrayx.core.executor import get_executor
from arrayx.core import float_checks as _nan_checks
from arrayx.core.keys import exact_key
from arrayx.core.primitives import _TRACE
from arrayx.core.tracers import CallPrimitive, bind_with
from arrayx.core.tracers import ShapeDtypeStruct, Tracer, UndefinedPrimal, aval_of
from arrayx.core.graph import Graph, Literal, Var, cse, dce
from arrayx.transforms.staging import StagingTrace, StagingTracer, _as_output


__all__ = ["call_p", "compiled_for", "partial_eval_graph"]


def compiled_for(graph: Graph, ex, donate_argnums: tuple = ()) -> Callable:
    """``ex.compile(graph)``, once per graph, executor, donation and debug_nans/debug_infs checks."""
    checks = _nan_checks.active_checks()
    key = ("compiled", ex.name, donate_argnums, checks)
    fn = graph.derived.get(key)
    if fn is None:
        if checks:  # op by op on the executor's eager implementations, each output checked on the host
            from arrayx.core.lowering import straight_line

            fn = straight_line(ex, graph, checks=checks)
        else:
            fn = ex.compile(graph, donate_argnums=donate_argnums)
        graph.derived[key] = fn
    return fn


def _call_eager(args, params):
    graph = params["graph"]
    ex = None
    bufs = []
    for a in args:
        if ex is None:
            ex = a._ex
        elif a._ex is not ex:
            raise TypeError(f"jit: arrays live on different executors ({ex.name!r} and {a._ex.name!r}); "
                            f"move one with x.to_device(...) first")
        bufs.append(a._buf)
    if ex is None:
        ex = get_executor()
    return _wrap_all(compiled_for(graph, ex)(*bufs), ex)


_object_new = object.__new__


def _wrap_all(bufs, ex) -> list:
    out = []
    append = out.append
    for b in bufs:
        new = _object_new(Array)
        new._buf = b
        new._ex = ex
        append(new)
    return out


def _stage_flat(fun: Callable, avals, transform: str) -> Graph:
    """The Graph of ``fun`` (flat arrays in, flat list out) on ``avals``, staged with no parent."""
    trace = StagingTrace(None, get_executor().default_device(), transform)
    ins = [trace.new_input(a) for a in avals]
    outs = trace.run(fun, ins)
    return trace.to_graph(list(trace.inputs), [_as_output(o) for o in outs])


def _zeros(aval):
    from arrayx.api.creation import zeros

    return zeros(aval.shape, dtype=aval.dtype)


def _jvp_graph(graph: Graph, has_tangent: tuple) -> Graph:
    """Graph of ``(*primals, *tangents present) -> (*outs, *out tangents)`` (zeros instantiated)."""
    key = ("jvp", has_tangent)
    g = graph.derived.get(key)
    if g is not None:
        return g
    from arrayx.transforms.forward import jvp_flat

    n = len(graph.inputs)

    def jvp_of(*xs):
        it = iter(xs[n:])
        tangents = [next(it) if h else None for h in has_tangent]
        outs, touts, _ = jvp_flat(graph, list(xs[:n]), tangents, "jit")
        return [*outs, *(_zeros(aval_of(o)) if t is None else t for o, t in zip(outs, touts))]

    avals = [*graph.in_avals, *(a for a, h in zip(graph.in_avals, has_tangent) if h)]
    g = graph.derived[key] = _stage_flat(jvp_of, avals, "jvp of jit")
    return g


def _call_jvp(primals, tangents, *, graph, name):
    has = tuple(t is not None for t in tangents)
    out = call_p.bind(*primals, *(t for t in tangents if t is not None), graph=_jvp_graph(graph, has),
                      name=f"jvp({name})")
    k = len(graph.outputs)
    return tuple(out[:k]), tuple(out[k:])


def _known(trace, a) -> bool:
    return not (a.__class__ is StagingTracer and a._buf.trace is trace)


def partial_eval_graph(graph: Graph, known: tuple):
    """Split ``graph`` by which inputs are known now.

    Returns ``(known_graph, unknown_graph, out_known)``.  ``known_graph`` maps the
    known inputs to the known outputs followed by residuals (known values the rest
    needs); ``unknown_graph`` maps ``(*residuals, *unknown inputs)`` to the unknown
    outputs; ``out_known[i]`` tells where output ``i`` comes from.  A graph with an
    equation that has both kinds of inputs and a staging rule of its own (control flow
    under linearize) is split by :func:`_partial_eval_by_staging`, so that rule splits it.
    """
    key = ("partial_eval", known)
    if key in graph.derived:
        return graph.derived[key]
    known_vars = {v for v, k in zip(graph.inputs, known) if k} | set(graph.constvars)
    known_eqns, unknown_eqns = [], []
    for eqn in graph.equations:
        if all(a.__class__ is not Var or a in known_vars for a in eqn.inputs):
            known_eqns.append(eqn)
            known_vars.update(eqn.outputs)
        else:
            unknown_eqns.append(eqn)
    residuals: dict = {}  # known Var -> None, in first-use order
    for eqn in unknown_eqns:
        mixed = False
        for a in eqn.inputs:
            if a.__class__ is Var and a in known_vars:
                residuals.setdefault(a)
                mixed = True
        if mixed and getattr(eqn.prim, "stage", None) is not None:
            hit = graph.derived[key] = _partial_eval_by_staging(graph, known)
            return hit
    out_known = tuple(o.__class__ is not Var or o in known_vars for o in graph.outputs)
    known_outs = [o for o, k in zip(graph.outputs, out_known) if k]
    kg = Graph([v for v, k in zip(graph.inputs, known) if k], graph.constvars, graph.consts, known_eqns,
               [*known_outs, *residuals])
    ug = Graph([*residuals, *(v for v, k in zip(graph.inputs, known) if not k)], (), (), unknown_eqns,
               [o for o, k in zip(graph.outputs, out_known) if not k])
    hit = graph.derived[key] = (kg, ug, out_known)
    return hit


def _partial_eval_by_staging(graph: Graph, known: tuple):
    """partial_eval_graph's split made by evaluating ``graph`` on two staging traces: the known
    inputs are tracers of ``outer``, the unknown ones of ``inner`` (above it), so each equation
    lands where its operands say and a nested cond / scan / call with both kinds of operands
    goes through its own staging rule (its primal part bound on ``outer``, its linear part
    recorded by ``inner``), recursively, instead of being unrolled or run on both branches."""
    device = graph.device if graph.device is not None else get_executor().default_device()
    outer = StagingTrace(None, device, "partial_eval")
    inner = StagingTrace(outer, device, "partial_eval", stage_nullary=False)
    args = [outer.new_input(v.aval) if k else inner.new_input(v.aval) for v, k in zip(graph.inputs, known)]
    try:
        outs = inner.run(lambda *xs: list(graph(*xs)), args)
        out_known = tuple(not inner.owns(o) for o in outs)
        residuals = [value for _, value in inner.const_values]  # known values the unknown part reads
        kg = outer.to_graph(list(outer.inputs), [*(o for o, k in zip(outs, out_known) if k), *residuals])
        ug = Graph([*(var for var, _ in inner.const_values), *inner.inputs], (), (), inner.equations,
                   [inner.atom(o) for o, k in zip(outs, out_known) if not k], device=graph.device)
    finally:
        outer.finish()
    return kg, ug, out_known


def _call_stage(trace, args, params):
    graph, name = params["graph"], params["name"]
    known = tuple(_known(trace, a) for a in args)
    if not any(known):
        return trace.record(call_p, args, params)
    kg, ug, out_known = partial_eval_graph(graph, known)
    known_out = bind_with(trace.parent, call_p, [a for a, k in zip(args, known) if k], {"graph": kg, "name": name})
    n_known = sum(out_known)
    residuals = known_out[n_known:]
    unknown_out = trace.record(call_p, (*residuals, *(a for a, k in zip(args, known) if not k)),
                               {"graph": ug, "name": name})
    it_k, it_u = iter(known_out[:n_known]), iter(unknown_out)
    return tuple(next(it_k) if k else next(it_u) for k in out_known)


def _transpose_graph(graph: Graph, linear: tuple, has_ct: tuple) -> Graph:
    """Graph of ``(*non-linear inputs, *cotangents present) -> cotangents of the linear inputs``."""
    key = ("transpose", linear, has_ct)
    g = graph.derived.get(key)
    if g is not None:
        return g
    from arrayx.transforms.transpose import backward_pass

    lin_vars = [v for v, lin in zip(graph.inputs, linear) if lin]
    nonlin_vars = [v for v, lin in zip(graph.inputs, linear) if not lin]
    m = len(nonlin_vars)

    def transposed(*xs):
        g_lin = Graph(lin_vars, (*graph.constvars, *nonlin_vars), (*graph.consts, *xs[:m]), graph.equations,
                      graph.outputs)
        it = iter(xs[m:])
        cts = [next(it) if h else None for h in has_ct]
        cts_in = backward_pass(g_lin, cts)
        return [_zeros(v.aval) if c is None else c for v, c in zip(lin_vars, cts_in)]

    avals = [*(v.aval for v in nonlin_vars), *(a for a, h in zip(graph.out_avals, has_ct) if h)]
    g = graph.derived[key] = _stage_flat(transposed, avals, "transpose of jit")
    return g


def _call_transpose(cts, *args, graph, name):
    linear = tuple(a.__class__ is UndefinedPrimal for a in args)
    has_ct = tuple(c is not None for c in cts)
    tg = _transpose_graph(graph, linear, has_ct)
    out = iter(call_p.bind(*(a for a, lin in zip(args, linear) if not lin), *(c for c in cts if c is not None),
                           graph=tg, name=f"transpose({name})"))
    return [next(out) if lin else None for lin in linear]


def _call_lowering(ex, params):
    from arrayx.core.lowering import lowered

    return lowered(ex, params["graph"])  # inside the caller's compiled function: the plain lowering


def _call_batch(vals, dims, *, graph, name):
    # one call of the batched graph (staged once per batch size and batched inputs), still compiled
    from arrayx.transforms.batching import batch_graph, front
    from arrayx.transforms.rules._batch import size_of

    size = size_of(vals, dims)
    bg, out_batched = batch_graph(graph, tuple(d is not None for d in dims), size)
    outs = call_p.bind(*front(vals, dims), graph=bg, name=f"vmap({name})")
    return outs, [0 if b else None for b in out_batched]


call_p = CallPrimitive("call", eager=_call_eager, fun_params=(), stage=_call_stage)
call_p.abstract_eval = lambda *args, graph, name: graph.out_avals
call_p.jvp = _call_jvp
call_p.transpose = _call_transpose
call_p.batch = _call_batch
call_p.lowerings["*"] = _call_lowering
