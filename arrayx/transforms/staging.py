"""Staging: record a function's primitives into a Graph (``make_graph``, ``eval_shape``, linearize).

A :class:`StagingTrace` records an equation for every primitive that has at
least one of its own tracers among the operands; a primitive on values it does
not own (constants, tracers of enclosing transforms) is handed to the parent
trace and computed now.  That is online partial evaluation: under ``linearize``
the primal computation runs eagerly while the tangent computation is recorded,
and under ``make_graph`` constant subexpressions are folded.
"""
from __future__ import annotations

from typing import Any, Callable

from arrayx.core import config as _config
from arrayx import pytree
from arrayx.api import _dtypes
from arrayx.api._array import Array
from arrayx.core.executor import get_executor
from arrayx.core.primitives import _TRACE, Trace, current_trace
from arrayx.core.tracers import bind_with
from arrayx.core.tracers import (
    ShapeDtypeStruct,
    Tracer,
    TracerState,
    abstract_eval,
    aval_of,
    concretization_error,
)
from arrayx.core.graph import Equation, Graph, Literal, Var, typecheck

__all__ = ["StagingTrace", "StagingTracer", "make_graph", "eval_shape", "ShapeDtypeStruct"]


class StagingState(TracerState):
    __slots__ = ("var", "weak_type")

    def __init__(self, trace, var: Var):
        self.trace = trace
        self.var = var
        aval = var.aval
        self.shape = aval.shape
        self.dtype = aval.dtype
        self.weak_type = aval.weak_type


class StagingTracer(Tracer):
    """A value of a function being staged: known only by its shape and dtype."""

    __slots__ = ()

    def _concrete(self, what: str):
        self._check_alive(what)
        raise concretization_error(what, self)

    def _repr_extra(self) -> str:
        return ""


class StagingTrace(Trace):
    """Records equations over its own tracers; hands everything else to its parent."""

    __slots__ = ("equations", "const_vars", "const_values", "device", "inputs", "stage_nullary")

    def __init__(self, parent, device, transform: str = "make_graph", *, stage_nullary: bool = True):
        super().__init__(parent, transform)
        # creation functions (no operands) are recorded, except under linearize, whose staging
        # trace keeps everything primal known (it only records the tangent computation)
        self.stage_nullary = stage_nullary
        self.equations: list = []
        self.const_vars: dict = {}  # id(array) -> Var
        self.const_values: list = []
        self.inputs: list = []
        self.device = device

    def new_input(self, aval: ShapeDtypeStruct) -> StagingTracer:
        var = Var(aval)
        self.inputs.append(var)
        return StagingTracer._make(StagingState(self, var))

    def process_primitive(self, prim, args, params):
        for a in args:
            if a.__class__ is StagingTracer and a._buf.trace is self:
                break
        else:  # nothing of ours: compute it now, one level down (creation functions, which have
            if args or not self.stage_nullary:  # no operands, are recorded: ops, not constants)
                return bind_with(self.parent, prim, args, params)
        return self.record(prim, args, params)

    def process_call(self, prim, args, params):
        """A call-like primitive: its staging rule, or one equation holding closed sub-graphs."""
        for a in args:
            if a.__class__ is StagingTracer and a._buf.trace is self:
                break
        else:
            return bind_with(self.parent, prim, args, params)
        if prim.stage is not None:
            return prim.stage(self, args, params)
        if prim.fun_params:
            (name,) = prim.fun_params  # one staged function per primitive
            fun = params[name]
            if not isinstance(fun, Graph):  # a Python function: close it into a Graph
                avals = [aval_of(a) if isinstance(a, Array) else _abstractify(a) for a in args]
                graph, consts = close_function(fun, avals, self, f"{self.transform}/{prim.name}")
                params = {**params, name: graph}
                if consts:
                    params["num_consts"] = params.get("num_consts", 0) + len(consts)
                    args = (*consts, *args)
        return self.record(prim, args, params)

    def record(self, prim, args, params):
        """Append one equation for ``prim`` and return tracers of its outputs."""
        out_aval = abstract_eval(prim, args, params)
        inputs = []
        for a in args:
            if a.__class__ is StagingTracer and a._buf.trace is self:
                inputs.append(a._buf.var)
            else:
                inputs.append(self.atom(a))
        if prim.multiple_results:
            outvars = tuple(Var(a) for a in out_aval)
            self.equations.append(Equation(prim, tuple(inputs), params, outvars))
            return tuple(StagingTracer._make(StagingState(self, v)) for v in outvars)
        outvar = Var(out_aval)
        self.equations.append(Equation(prim, tuple(inputs), params, (outvar,)))
        return StagingTracer._make(StagingState(self, outvar))

    def owns(self, x) -> bool:
        return x.__class__ is StagingTracer and x._buf.trace is self

    def atom(self, a):
        """The Var or Literal standing for operand ``a`` in an equation."""
        if a.__class__ is StagingTracer and a._buf.trace is self:
            return a._buf.var
        if isinstance(a, Array):
            var = self.const_vars.get(id(a))
            if var is None:
                if isinstance(a, Tracer):
                    a._check_alive(f"{self.transform}")
                var = self.const_vars[id(a)] = Var(aval_of(a))
                self.const_values.append((var, a))  # keeps ``a`` alive, so its id stays unique
            return var
        return Literal(a)

    def to_graph(self, inputs, outputs) -> Graph:
        """The Graph of everything recorded, with these input Vars and output values."""
        outs = []
        for o in outputs:
            if o is None:
                outs.append(None)
            else:
                outs.append(self.atom(o))
        graph = Graph(inputs, [v for v, _ in self.const_values], [c for _, c in self.const_values],
                      self.equations, outs, device=self.device)
        if CHECK_GRAPHS:
            check_graph(graph)
        return graph


#: type-check every graph staging builds (the test suite turns this on: ARRAYX_CHECK_GRAPHS=1)
CHECK_GRAPHS = _config.get("ARRAYX_CHECK_GRAPHS")


def check_graph(graph: Graph) -> None:
    """Run the type-check pass (``graph.typecheck``) with tracers of a scratch trace as operands."""
    scratch = StagingTrace(None, graph.device, "typecheck")
    try:
        typecheck(graph, scratch.new_input)
    finally:
        scratch.alive = False


def close_function(fun: Callable, avals, parent, transform: str):
    """Stage ``fun`` (flat arrays in, flat list out) on ``avals``: (closed Graph, captured values).

    Values ``fun`` captured (tracers of ``parent`` or of enclosing traces, constant
    arrays) become the graph's leading inputs, and are returned so that the caller
    passes them as explicit operands: the graph holds no tracer (closure conversion).
    Operations on captured values alone are done by ``parent`` now, outside the graph.
    """
    trace = StagingTrace(parent, parent.device if parent is not None and hasattr(parent, "device")
                         else _default_device(), transform)
    ins = [trace.new_input(a) for a in avals]
    outs = trace.run(fun, ins)
    graph = trace.to_graph(list(trace.inputs), [_as_output(o) for o in outs])
    closed = Graph((*graph.constvars, *graph.inputs), (), (), graph.equations, graph.outputs)
    return closed, list(graph.consts)


def _default_device():
    from arrayx.core.executor import get_executor

    return get_executor().default_device()


# -- public API ----------------------------------------------------------------------------------


def _device_of_leaves(leaves):
    for x in leaves:
        if isinstance(x, Array):
            return x.device
    return get_executor().default_device()


def _abstractify(x):
    if isinstance(x, ShapeDtypeStruct):
        return x
    if isinstance(x, Array):
        return aval_of(x)
    if hasattr(x, "shape") and hasattr(x, "dtype"):  # NumPy arrays, jax.ShapeDtypeStruct, ...
        return ShapeDtypeStruct(x.shape, x.dtype)
    if isinstance(x, (bool, int, float, complex)):  # weakly typed, as the scalar is eagerly
        return ShapeDtypeStruct((), _dtypes.scalar_dtype(x), weak_type=True)
    raise TypeError(
        f"expected arrays, ShapeDtypeStructs or Python scalars as (non-static) arguments, got {type(x).__name__}"
    )


def _is_input(x) -> bool:
    return isinstance(x, (Array, ShapeDtypeStruct, bool, int, float, complex)) or (
        hasattr(x, "shape") and hasattr(x, "dtype"))


def _static_split(fname, args, static_argnums):
    static_argnums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    n = len(args)
    static = {i % n if n else i for i in static_argnums}
    for i in static_argnums:
        if not -n <= i < n:
            raise ValueError(f"{fname}: static_argnums {static_argnums} is out of range for {n} arguments")
    return static


def stage(fun: Callable, args: tuple, kwargs: dict, *, static_argnums=(), transform="make_graph"):
    """Stage ``fun(*args, **kwargs)``: (Graph, output tree, list of input leaves)."""
    static = _static_split(transform, args, static_argnums)
    dyn = [a for i, a in enumerate(args) if i not in static]
    # keyword arguments are inputs too (array and scalar leaves; others, e.g. strings, stay static)
    leaves, in_tree = pytree.flatten((dyn, kwargs))
    _refuse_iterators(transform, fun, leaves, (dyn, kwargs))
    device = _device_of_leaves(leaves)
    trace = StagingTrace(current_trace(), device, transform)
    in_leaves = [trace.new_input(_abstractify(x)) if _is_input(x) else x for x in leaves]
    dyn_tracers, kw_tracers = pytree.unflatten(in_tree, in_leaves)
    it = iter(dyn_tracers)
    full = [a if i in static else next(it) for i, a in enumerate(args)]
    out_leaves = out_tree = None
    token = _TRACE.set(trace)
    try:
        out_leaves, out_tree = pytree.flatten(fun(*full, **kw_tracers))
    finally:
        _TRACE.reset(token)
        out_leaves = trace.finish(out_leaves)
    graph = trace.to_graph(list(trace.inputs), [_as_output(o) for o in out_leaves])
    return graph, out_tree, out_leaves


def _refuse_iterators(transform, fun, leaves, args) -> None:
    """An iterator argument would be consumed while staging (and is no array): refuse it up front."""
    import collections.abc

    for x in leaves:
        if isinstance(x, collections.abc.Iterator):
            path = next(p for p, v in pytree.leaves_with_path(args) if v is x)
            where = (f"argument {path[1].idx}" if path[0].idx == 0 else f"argument {path[1].key!r}") + \
                pytree.keystr(path[2:])
            raise TypeError(
                f"{transform}({getattr(fun, '__name__', 'f')}): {where} is an iterator "
                f"({type(x).__name__}), which staging would consume; pass a list or tuple, or an array "
                f"(arrayx.asarray(list(it)))")


def _as_output(o):
    if isinstance(o, (Array, bool, int, float, complex)) or o is None:
        return o
    if hasattr(o, "dtype") and hasattr(o, "shape"):
        return o
    raise TypeError(f"a transformed function must return arrays (in a pytree), got {type(o).__name__}")


def make_graph(fun: Callable, *, static_argnums=()) -> Callable:
    """``make_graph(f)(*args)``: the Graph of primitives ``f`` binds on arguments like ``args``.

    Arguments may be arrays, ``ShapeDtypeStruct`` s or Python scalars (in pytrees);
    ``static_argnums`` are passed through as Python values.  Printing the graph shows
    one equation per primitive, like ``jax.make_jaxpr``.

    >>> import arrayx as ax
    >>> print(ax.make_graph(lambda x: ax.sin(x) * 2.0)(ax.ones(3)))
    graph(a:f64[3]) {
      b:f64[3] = sin a
      c:f64[3] = multiply b 2.0:f64
      return c
    }
    """
    def graph_of(*args, **kwargs) -> Graph:
        graph, _, _ = stage(fun, args, kwargs, static_argnums=static_argnums, transform="make_graph")
        return graph

    graph_of.__name__ = f"make_graph({getattr(fun, '__name__', 'f')})"
    return graph_of


def eval_shape(fun: Callable, *args, **kwargs) -> Any:
    """Shapes and dtypes of ``fun(*args, **kwargs)`` as a pytree of ``ShapeDtypeStruct``, computing nothing.

    >>> import arrayx as ax
    >>> ax.eval_shape(lambda x, y: x @ y, ax.ShapeDtypeStruct((2, 3), ax.float32), ax.ones((3, 4), dtype=ax.float32))
    ShapeDtypeStruct(shape=(2, 4), dtype=float32)
    """
    graph, out_tree, _ = stage(fun, args, kwargs, transform="eval_shape")
    return pytree.unflatten(out_tree, [a if a is None else a for a in graph.out_avals])
