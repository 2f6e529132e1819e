"""Straight-line lowering of a Graph to Python over one executor's implementations.

``straight_line(executor, graph)`` generates, once, a Python function of the
graph's input buffers that calls each equation's implementation in order: no
tracing, no wrapper, no promotion at call time.  The generated source never
embeds a user-supplied string: variables are named from their positions
(``v3``), implementations, literals and params are bound as globals named from
the equation's index (``f2``, ``c2_1``, ``p2_0``), and param names are those
primitives declare (checked to be identifiers).

An equation's implementation is the primitive's lowering for this executor
(``prim.lowerings[name]`` or ``prim.lowerings["*"]``, called as
``lowering(executor, params)`` and returning a callable over buffers: how
call-like primitives lower their sub-graphs) or else the executor's eager
implementation called with the params as keyword arguments.
"""
from __future__ import annotations

import keyword
import math
from typing import Callable

from arrayx.core import executor as _executor
from arrayx.core.float_checks import check_outputs
from arrayx.core.graph import Graph, Literal, Var

__all__ = ["straight_line", "lowering_of", "lowered", "lower_fun_param"]


def lowered(executor, graph: Graph):
    """``executor.lower(graph)``, once per graph and executor (sub-graphs of call-like primitives)."""
    key = ("lowered", executor.name)
    fn = graph.derived.get(key)
    if fn is None:
        fn = graph.derived[key] = executor.lower(graph)
    return fn


def lower_fun_param(executor, params: dict):
    """The lowering of a call-like primitive that just runs its staged ``fun`` (custom rules, checkpoint:
    their rules matter to transforms, which are done before lowering)."""
    return lowered(executor, params["fun"])


def lowering_of(executor, prim, params: dict, impl_of: Callable):
    """(callable, pass params as keywords?) for one equation on ``executor``."""
    lower = prim.lowerings.get(executor.name) or prim.lowerings.get("*")
    if lower is not None:
        return lower(executor, params), False
    if prim.call_like:
        raise NotImplementedError(
            f"jit: the call-like primitive {prim.name!r} has no lowering for the {executor.name!r} executor"
        )
    return impl_of(prim), True


def straight_line(executor, graph: Graph, impl_of: Callable | None = None, consts_of: Callable | None = None,
                  coerce_scalars: bool = True, checks: frozenset = frozenset()):
    """A Python function ``f(*input_buffers) -> list of output buffers`` computing ``graph``.

    ``impl_of(prim)`` gives the executor's implementation (default: what eager
    bind uses); ``consts_of(array)`` turns a captured constant into a buffer of
    this executor (default: its buffer, copied over from another executor if needed).
    ``checks`` ("nan"/"inf", from ``debug_nans``/``debug_infs``) adds a check after every equation.
    """
    pool_min_bytes = 0
    if impl_of is None:
        def impl_of(prim):
            fn = executor.impls.get(prim)
            return fn if fn is not None else executor.resolve(prim)

        def large_impl_of(prim):
            fn = executor.large_impls.get(prim)
            return fn if fn is not None else executor.resolve_large(prim)

        # an equation whose staged result takes this many bytes writes it into reused memory
        pool_min_bytes = executor.pool_min_bytes
    if consts_of is None:
        consts_of = lambda a: _buffer_for(executor, a)  # noqa: E731
    names: dict = {}
    ns: dict = {"_coerce": executor.coerce, "_scalar_type": executor.array_type}
    if checks:
        ns["_check"] = lambda j, outs, ins: check_outputs(checks, graph.equations[j].prim.name, ins, outs)

    def name(v) -> str:
        if v.__class__ is Var:
            return names[v]
        if v is None or (v.__class__ is Literal and v.value is None):
            return "None"
        key = f"c{len(ns)}"
        ns[key] = v.value if v.__class__ is Literal else v
        return key

    for i, v in enumerate(graph.inputs):
        names[v] = f"a{i}"
    for i, (v, c) in enumerate(zip(graph.constvars, graph.consts)):
        names[v] = f"k{i}"
        ns[f"k{i}"] = consts_of(c)
    lines = [f"def compiled({', '.join(names[v] for v in graph.inputs)}):"]
    drop = _drops(graph)
    n = 0
    for j, eqn in enumerate(graph.equations):
        large = pool_min_bytes and _result_bytes(eqn) >= pool_min_bytes
        fn, keywords = lowering_of(executor, eqn.prim, eqn.params, large_impl_of if large else impl_of)
        ns[f"f{j}"] = fn
        args = [name(a) for a in eqn.inputs]
        if keywords:
            for k, (pname, pvalue) in enumerate(eqn.params.items()):
                if not (pname.isidentifier() and not keyword.iskeyword(pname)):
                    raise ValueError(f"jit: {eqn.prim.name} has a param named {pname!r}, not an identifier")
                ns[f"p{j}_{k}"] = pvalue
                args.append(f"{pname}=p{j}_{k}")
        outs = []
        for v in eqn.outputs:
            names[v] = f"v{n}"
            outs.append(f"v{n}")
            n += 1
        call = f"f{j}({', '.join(args)})"
        if eqn.prim.multiple_results:
            lines.append(f"    {', '.join(outs) + ',' if outs else '_'} = {call}")
        else:
            lines.append(f"    {outs[0]} = {call}")
        if checks:
            lines.append(f"    _check({j}, [{', '.join(outs)}], [{', '.join(args[:len(eqn.inputs)])}])")
        if drop[j]:  # values read for the last time (or never read): their buffers go back now
            lines.append(f"    del {', '.join(names[v] for v in drop[j])}")
    results = []
    for o in graph.outputs:
        r = name(o)
        if coerce_scalars and o.__class__ is Var and o.aval is not None and o.aval.shape == ():
            r = f"({r} if {r}.__class__ is _scalar_type else _coerce({r}))"  # NumPy gives scalars for 0-d results
        results.append(r)
    lines.append(f"    return [{', '.join(results)}]")
    source = "\n".join(lines)
    exec(compile(source, f"<arrayx jit on {executor.name}>", "exec"), ns)  # noqa: S102 - names are ours
    fn = ns["compiled"]
    fn.source = source
    return fn


def _drops(graph: Graph) -> list:
    """For each equation, the Vars (inputs of the graph and equation results, not graph outputs)
    that no later equation reads: the generated code deletes them after that equation, so a long
    chain holds only what it still needs (as a Python frame running the ops one by one would),
    not every intermediate until it returns."""
    last: dict = {}
    for v in graph.inputs:
        last[v] = -1
    for j, eqn in enumerate(graph.equations):
        for a in eqn.inputs:
            if a.__class__ is Var:
                last[a] = j
        for v in eqn.outputs:
            last.setdefault(v, j)  # a result nothing reads goes right away
    for o in graph.outputs:
        if o.__class__ is Var:
            last.pop(o, None)
    consts = set(graph.constvars)  # module globals of the generated code, never deleted
    drop: list = [[] for _ in graph.equations]
    for v, j in last.items():
        if j >= 0 and v not in consts:
            drop[j].append(v)
    return drop


def _result_bytes(eqn) -> int:
    """The bytes of an equation's largest staged result (0 where a size is unknown)."""
    most = 0
    for v in eqn.outputs:
        aval = v.aval
        try:
            most = max(most, math.prod(aval.shape) * aval.dtype.itemsize)
        except (AttributeError, TypeError):  # no aval, or an unknown dimension
            pass
    return most


def _buffer_for(executor, a):
    ex = getattr(a, "_ex", None)
    if ex is None:
        return a
    if ex is executor:
        return a._buf
    if getattr(ex, "name", None) == "<tracer>":
        raise ValueError("jit: a graph to compile captured a traced value; it must be an explicit input")
    return executor.from_foreign(a._buf, ex)


_executor.default_lowering = straight_line  # Executor.lower's default
