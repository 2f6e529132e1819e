"""The Graph IR: what staging records and what executors compile.

A :class:`Graph` is a list of :class:`Equation` s over :class:`Var` s::

    graph(a:f64[3], b:f64[]) {
      c:f64[3] = sin a
      d:f64[3] = broadcast_to[shape=(3,)] b
      e:f64[3] = multiply c d
      return e
    }

- ``inputs``: the Vars bound to the arguments, in order;
- ``constvars``/``consts``: Vars bound to constant arrays captured while tracing;
- ``equations``: ``Equation(prim, inputs, params, outputs)``; an input is a Var or a
  :class:`Literal` (a NumPy scalar or None, inlined);
- ``outputs``: Vars or Literals (None stands for a symbolic zero in linear graphs).

``eval_graph`` binds every equation's primitive under the current trace, so a
graph can itself be transformed (that is how a linearized function is evaluated
and how jit's graphs are differentiated).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from arrayx.core.primitives import Primitive
from arrayx.core.keys import exact_key
from arrayx.core.tracers import ShapeDtypeStruct, short_dtype

__all__ = ["Var", "Literal", "Equation", "Graph", "GraphTypeError", "cse", "dce", "eval_graph", "typecheck"]


class Var:
    """A value of a graph, defined once (by an input, a constant or an equation)."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapeDtypeStruct):
        self.aval = aval

    def __repr__(self) -> str:
        return f"Var({self.aval.str_short()})"


class Literal:
    """A scalar (or None) written into an equation."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __repr__(self) -> str:
        return _literal_str(self.value)


class Equation(NamedTuple):
    prim: Primitive
    inputs: tuple
    params: dict
    outputs: tuple


class Graph:
    """A staged function: inputs, captured constants, equations and outputs (see the module doc)."""

    __slots__ = ("inputs", "constvars", "consts", "equations", "outputs", "derived", "device")

    def __init__(self, inputs, constvars, consts, equations, outputs, device=None):
        self.derived: dict = {}  # what transforms and executors made of this graph (jvp, compiled, ...)
        self.device = device  # the Device the staged inputs lived on (None: not known)
        self.inputs = tuple(inputs)
        self.constvars = tuple(constvars)
        self.consts = tuple(consts)
        self.equations = list(equations)
        self.outputs = tuple(outputs)

    @property
    def in_avals(self) -> tuple:
        return tuple(v.aval for v in self.inputs)

    @property
    def out_avals(self) -> tuple:
        return tuple(_atom_aval(o) for o in self.outputs)

    def __call__(self, *args):
        """Evaluate the graph on ``args`` (under the current trace)."""
        return eval_graph(self, args)

    def __str__(self) -> str:
        return _GraphPrinter().graph(self, "")

    def __repr__(self) -> str:
        return str(self)

    def _repr_pretty_(self, p, cycle):  # IPython
        p.text(str(self))


def _atom_aval(o):
    if isinstance(o, Var):
        return o.aval
    if o is None or (isinstance(o, Literal) and o.value is None):
        return None
    v = o.value if isinstance(o, Literal) else o
    return ShapeDtypeStruct(np.shape(v), np.asarray(v).dtype)


# -- passes ---------------------------------------------------------------------------------------


def uses_of(graph: Graph) -> dict:
    """Each Var of ``graph`` -> the equations that read it, in order (Vars nothing reads are absent)."""
    uses: dict = {}
    for eqn in graph.equations:
        for a in eqn.inputs:
            if a.__class__ is Var:
                uses.setdefault(a, []).append(eqn)
    return uses


def dce(graph: Graph) -> Graph:
    """``graph`` without the equations (and constants) no output depends on.

    Primitives with effects (``prim.effectful``, e.g. debug callbacks) are always kept, and so
    are equations whose sub-graphs (branches, loop bodies, calls) hold one.
    """
    live = {o for o in graph.outputs if o.__class__ is Var}
    kept = []
    for eqn in reversed(graph.equations):
        if has_effects(eqn) or any(v in live for v in eqn.outputs):
            kept.append(eqn)
            live.update(a for a in eqn.inputs if a.__class__ is Var)  # sub-graphs are closed
    kept.reverse()
    consts = [(v, c) for v, c in zip(graph.constvars, graph.consts) if v in live]
    return Graph(graph.inputs, [v for v, _ in consts], [c for _, c in consts], kept, graph.outputs,
                 device=graph.device)


def cse(graph: Graph) -> Graph:
    """``graph`` with each repeated equation (same primitive, operands and params) computed once.

    User code repeats itself (``logits - top`` twice in a log-softmax) and so do rules (one
    ``broadcast_to`` per use); the repeats cost a pass over memory each.  Equations with effects,
    with sub-graphs or with unhashable params are left alone; ``empty`` (``full`` with no fill) too,
    since two of them are two distinct buffers.
    """
    seen: dict = {}
    renamed: dict = {}
    kept = []
    for eqn in graph.equations:
        inputs = tuple(renamed.get(a, a) if a.__class__ is Var else a for a in eqn.inputs)
        if inputs != eqn.inputs:
            eqn = Equation(eqn.prim, inputs, eqn.params, eqn.outputs)
        key = _cse_key(eqn)
        if key is not None:
            earlier = seen.get(key)
            if earlier is not None:
                renamed.update(zip(eqn.outputs, earlier))
                continue
            seen[key] = eqn.outputs
        kept.append(eqn)
    outputs = [renamed.get(o, o) if o.__class__ is Var else o for o in graph.outputs]
    return Graph(graph.inputs, graph.constvars, graph.consts, kept, outputs, device=graph.device)


def _cse_key(eqn: Equation):
    """What makes two equations compute the same value, or None when they must both run."""
    if has_effects(eqn) or eqn.params.get("fill_value", 0) is None:
        return None
    atoms = []
    for a in eqn.inputs:
        if a.__class__ is Var:
            atoms.append(a)
        elif a is None or a.value is None:
            atoms.append(None)
        else:
            v = np.asarray(a.value)
            atoms.append((v.dtype.str, v.tobytes(), type(a.value)))
    if any(_graphs_in(v) for v in eqn.params.values()):
        return None
    try:
        params = tuple((k, exact_key(v)) for k, v in eqn.params.items())
        hash(params)
    except TypeError:
        return None
    return (eqn.prim, tuple(atoms), params)


def has_effects(eqn: Equation) -> bool:
    """Whether ``eqn`` has an effect: an effectful primitive, itself or inside a sub-graph."""
    if getattr(eqn.prim, "effectful", False):
        return True
    return any(has_effects(e) for p in eqn.params.values() for g in _graphs_in(p) for e in g.equations)


class GraphTypeError(TypeError):
    """A graph is malformed: a var used before its definition, defined twice, or an equation whose
    recorded output types differ from its primitive's abstract evaluation."""


def typecheck(graph: Graph, make_operand) -> None:
    """Check ``graph``: every var defined once before use, every equation's outputs typed as its
    primitive's abstract-eval rule says (shape, dtype, weak type); sub-graphs recursively.

    ``make_operand(aval)`` builds a stand-in operand for the rules (staging supplies tracers of
    a scratch trace); constants are passed as they are (rules of data-dependent ops read them).
    """
    from arrayx.core.tracers import abstract_eval

    env: dict = {}

    def define(v, value, where):
        if v in env:
            raise GraphTypeError(f"{where}: {v!r} is defined twice")
        env[v] = value

    def read(a, where):
        if a.__class__ is Var:
            if a not in env:
                raise GraphTypeError(f"{where}: {a!r} is used before it is defined")
            return env[a]
        return a.value

    for v in graph.inputs:
        define(v, make_operand(v.aval), "graph input")
    for v, c in zip(graph.constvars, graph.consts):
        define(v, c, "graph constant")
    for i, eqn in enumerate(graph.equations):
        where = f"equation {i} ({eqn.prim.name})"
        ins = [read(a, where) for a in eqn.inputs]
        for p in eqn.params.values():
            if isinstance(p, Graph):
                typecheck(p, make_operand)
        want = abstract_eval(eqn.prim, ins, eqn.params)
        want = tuple(want) if eqn.prim.multiple_results else (want,)
        got = tuple(v.aval for v in eqn.outputs)
        if len(want) != len(got) or any(
                (w.shape, w.dtype, w.weak_type) != (g.shape, g.dtype, g.weak_type) for w, g in zip(want, got)):
            raise GraphTypeError(f"{where}: outputs are typed {got}, its abstract evaluation gives {want}")
        for v in eqn.outputs:
            define(v, make_operand(v.aval), where)
    for o in graph.outputs:
        if o is not None:
            read(o, "graph output")


def eval_graph(graph: Graph, args) -> list:
    """The outputs of ``graph`` on ``args``, binding each equation under the current trace."""
    if len(args) != len(graph.inputs):
        raise TypeError(f"graph expects {len(graph.inputs)} arguments, got {len(args)}")
    env = dict(zip(graph.inputs, args))
    env.update(zip(graph.constvars, graph.consts))
    for eqn in graph.equations:
        ins = [env[a] if a.__class__ is Var else a.value for a in eqn.inputs]
        out = eqn.prim.bind(*ins, **eqn.params)
        if eqn.prim.multiple_results:
            env.update(zip(eqn.outputs, out))
        else:
            env[eqn.outputs[0]] = out
    return [env[o] if o.__class__ is Var else (None if o is None else o.value) for o in graph.outputs]


# -- printing ------------------------------------------------------------------------------


def _literal_str(v) -> str:
    if v is None:
        return "None"
    if isinstance(v, np.generic):
        return f"{v.item()!r}:{short_dtype(v.dtype)}"
    return repr(v)


def _param_str(v) -> str:
    if isinstance(v, Graph):
        return "<graph>"
    if isinstance(v, np.dtype):
        return v.name
    if callable(v):
        return getattr(v, "__name__", type(v).__name__)
    return repr(v)


class _GraphPrinter:
    def __init__(self):
        self.names: dict = {}

    def name(self, v) -> str:
        if v is None:
            return "0"
        if isinstance(v, Literal):
            return _literal_str(v.value)
        n = self.names.get(v)
        if n is None:
            n = self.names[v] = _letters(len(self.names))
        return n

    def decl(self, v: Var) -> str:
        return f"{self.name(v)}:{v.aval.str_short()}"

    def graph(self, g: Graph, indent: str) -> str:
        lines = []
        ins = ", ".join(self.decl(v) for v in g.inputs)
        head = f"{indent}graph({ins})"
        if g.constvars:
            head += " consts(" + ", ".join(self.decl(v) for v in g.constvars) + ")"
        lines.append(head + " {")
        for eqn in g.equations:
            lines.append(self.equation(eqn, indent + "  "))
        outs = ", ".join(self.name(o) for o in g.outputs)
        lines.append(f"{indent}  return {outs}")
        lines.append(indent + "}")
        return "\n".join(lines)

    def equation(self, eqn: Equation, indent: str) -> str:
        outs = " ".join(self.decl(v) for v in eqn.outputs)
        params = []
        subgraphs = []  # printed below the equation, indented, with their param name
        for k, v in eqn.params.items():
            graphs = _graphs_in(v)
            if graphs:
                params.append(f"{k}=<{len(graphs)} graph{'s' if len(graphs) > 1 else ''}>"
                              if isinstance(v, (tuple, list)) else f"{k}=<graph>")
                subgraphs.extend((k if len(graphs) == 1 else f"{k}[{i}]", g) for i, g in enumerate(graphs))
            else:
                params.append(f"{k}={_param_str(v)}")
        shown = "[" + ", ".join(params) + "]" if params else ""
        ins = " ".join(self.name(a) for a in eqn.inputs)
        line = f"{indent}{outs + ' = ' if outs else ''}{eqn.prim.name}{shown} {ins}".rstrip()
        for name, g in subgraphs:
            line += f"\n{indent}  {name} = " + self.graph(g, indent + "  ").lstrip()
        return line


def _graphs_in(v) -> list:
    if isinstance(v, Graph):
        return [v]
    if isinstance(v, (tuple, list)) and v and all(isinstance(g, Graph) for g in v):
        return list(v)
    return []


def _letters(i: int) -> str:
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = chr(ord("a") + r) + s
    return s
