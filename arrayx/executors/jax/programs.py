"""How the jax executor runs compiled graphs around deferred transposes and LAPACK calls.

- ``DonatingProgram``: a donated argument that is a :class:`~arrayx.executors.jax.permuted.Permuted`
  is computed first (donating it must not give up another array's buffer, its base);
- ``deferred_outputs`` / ``PermutedOutputs``: outputs that are large transposes come out deferred,
  as eager ``permute_dims`` gives them;
- ``lapack_cut``: where a graph computing a LAPACK operand is cut into consecutive programs
  (``JaxExecutor.compile``).
"""
from __future__ import annotations

import math

from arrayx.core.graph import Var
from arrayx.executors.jax import permuted as _permuted
from arrayx.executors.jax.permuted import Permuted, plain


class DonatingProgram:
    """A compiled graph with donated arguments: a :class:`Permuted` one is computed first, so that
    donating it gives up the transpose's buffer, not its base (another array's, e.g. ``x`` of
    ``x.T``).  Other arguments, Permuted ones included, go to ``jax.jit`` as they are."""

    __slots__ = ("jitted", "donate")

    def __init__(self, jitted, donate):
        self.jitted = jitted
        self.donate = donate

    def __call__(self, *bufs):
        for i in self.donate:
            if i < len(bufs) and bufs[i].__class__ is Permuted:
                bufs = tuple(plain(b) if k in self.donate else b for k, b in enumerate(bufs))
                break
        return self.jitted(*bufs)

    def __getattr__(self, name):  # jax.jit's own attributes (lower, trace, _cache_size, ...)
        return getattr(self.jitted, name)


#: LAPACK-backed primitives: a compiled graph that computes one's operand is cut before it
LAPACK = frozenset({"cholesky", "det", "eig", "eigh", "eigvals", "eigvalsh", "inv", "qr", "slogdet", "solve", "svd",
                     "svdvals"})
_CUT_BEFORELAPACK = True


def lapack_cut(graph):
    """The index of the first LAPACK equation of ``graph`` whose operand an earlier equation
    computes (None: none).  Measured on XLA:CPU (jax 0.10, 20,000 x 64 float64): centring then
    ``svd`` in one program took longer than the two as consecutive programs."""
    made = set()
    for j, eqn in enumerate(graph.equations):
        if j and eqn.prim.name in LAPACK and any(a in made for a in eqn.inputs if a.__class__ is Var):
            return j
        made.update(eqn.outputs)
    return None


def deferred_outputs(graph):
    """(``graph`` whose outputs that are transposes of :data:`permuted.MIN_BYTES` or more are the
    values before the transpose, {output index: its axes}), or None where no output is one."""
    producer = None
    axes_of = {}
    outputs = list(graph.outputs)
    for i, o in enumerate(outputs):
        if o.__class__ is not Var or o.aval is None:
            continue
        if producer is None:
            producer = {v: e for e in graph.equations for v in e.outputs}
        e = producer.get(o)
        if e is None or e.prim.name not in ("permute_dims", "matrix_transpose"):
            continue
        try:
            if math.prod(o.aval.shape) * o.aval.dtype.itemsize < _permuted.MIN_BYTES:
                continue
        except TypeError:  # an unknown dimension
            continue
        axes, v = None, o
        while e is not None and e.prim.name in ("permute_dims", "matrix_transpose") and e.inputs[0].__class__ is Var:
            a = tuple(e.params["axes"]) if e.prim.name == "permute_dims" else _permuted.matrix_axes(len(v.aval.shape))
            axes = a if axes is None else _permuted.compose(axes, a)
            v = e.inputs[0]
            e = producer.get(v)
        if axes is not None:
            outputs[i] = v
            axes_of[i] = axes
    if not axes_of:
        return None
    from arrayx.core.graph import Graph, dce

    new = dce(Graph(graph.inputs, graph.constvars, graph.consts, graph.equations, outputs, device=graph.device))
    return new, axes_of


class PermutedOutputs:
    """A compiled graph whose outputs listed in ``axes_of`` are given as :class:`Permuted` of the
    program's result (the transpose is left undone, as eagerly)."""

    __slots__ = ("program", "axes_of")

    def __init__(self, program, axes_of):
        self.program = program
        self.axes_of = axes_of

    def __call__(self, *bufs):
        out = list(self.program(*bufs))
        for i, axes in self.axes_of.items():
            out[i] = out[i] if _permuted.is_identity(axes) else Permuted(out[i], axes)
        return out


def in_pieces(compile, graph, cut: int):
    """``graph`` as two consecutive programs (each built by ``compile``), the second starting at
    equation ``cut`` (a LAPACK call): XLA on CPU runs a LAPACK custom call slower when the
    computation of its operand is fused into the same program (see ``lapack_cut``)."""
    from arrayx.core.graph import Graph

    first, rest = graph.equations[:cut], graph.equations[cut:]
    made = {v for e in first for v in e.outputs}
    wanted = {a for e in rest for a in e.inputs if a.__class__ is Var} | set(graph.outputs)
    mids = [v for e in first for v in e.outputs if v in made and v in wanted]
    head = compile(Graph(graph.inputs, (), (), first, mids, device=graph.device))
    tail = compile(Graph((*graph.inputs, *mids), (), (), rest, graph.outputs, device=graph.device))

    def program(*bufs):
        return tail(*bufs, *head(*bufs))

    return program
