"""Forward mode: the JVP trace, ``jvp`` and ``linearize``.

A :class:`JVPTracer` carries a primal value and its tangent.  The trace applies
each primitive's ``jvp`` rule, ``rule(primals, tangents, **params) -> (out,
out_tangent)``, with its parent installed, so the rule's arrayx operations are
themselves traced one level down (higher-order derivatives, staging of the
tangent computation under ``linearize``).

Tangents are never materialised zeros: ``None`` stands for a zero tangent in
rules, and a result whose tangent is ``None`` is returned as its plain primal.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from arrayx import pytree
from arrayx.api._array import Array
from arrayx.api._dtypes import kind_of
from arrayx.api.creation import asarray, zeros_like
from arrayx.core.primitives import _TRACE, Trace, current_trace
from arrayx.core.tracers import bind_with
from arrayx.core.tracers import Tracer, TracerState, aval_of, conversion_error
from arrayx.transforms.staging import StagingTrace, StagingTracer, _device_of_leaves

__all__ = ["JVPTrace", "JVPTracer", "jvp", "linearize"]

#: check every rule's tangent against its primal (shape and dtype); cheap, and it names
#: the primitive whose rule is wrong
CHECK_RULES = True


class JVPState(TracerState):
    __slots__ = ("primal", "tangent")

    def __init__(self, trace, primal, tangent):
        self.trace = trace
        self.primal = primal
        self.tangent = tangent
        self.shape = primal.shape
        self.dtype = primal.dtype


class JVPTracer(Tracer):
    """A primal value with a tangent, inside ``jvp``/``grad``/``linearize``."""

    __slots__ = ()

    def _inner(self):
        return self._buf.primal

    def _concrete(self, what: str):
        self._check_alive(what)
        p = self._buf.primal
        if isinstance(p, Tracer):
            return p._concrete(what)
        return p

    def _shared_host_value(self, what: str):
        self._check_alive(what)
        p = self._buf.primal
        return p._shared_host_value(what) if isinstance(p, Tracer) else np.asarray(p)

    # A Python number carries no tangent: the derivative would silently be zero.  bool() and
    # __index__ stay allowed (control flow on primal values; indices are not differentiated).
    def __float__(self) -> float:
        self._check_alive("float()")
        raise conversion_error("float()", self, "a Python float")

    def __int__(self) -> int:
        self._check_alive("int()")
        raise conversion_error("int()", self, "a Python int")

    def __complex__(self) -> complex:
        self._check_alive("complex()")
        raise conversion_error("complex()", self, "a Python complex")

    def _repr_extra(self) -> str:
        p = self._buf.primal
        if isinstance(p, Tracer) or not self._buf.trace.alive:
            return ""
        return ", primal=" + repr(p)


class JVPTrace(Trace):
    """Applies jvp rules to primitives that have one of this trace's tracers as an operand."""

    __slots__ = ()

    def box(self, primal, tangent):
        if tangent is None:
            return primal
        if CHECK_RULES and (not _shapes_agree(tangent.shape, primal.shape) or tangent.dtype != primal.dtype):
            raise _tangent_mismatch(primal, tangent)
        return JVPTracer._make(JVPState(self, primal, tangent))

    def unbox(self, x):
        """(primal, tangent or None) of ``x`` as seen by this trace."""
        if x.__class__ is JVPTracer and x._buf.trace is self:
            return x._buf.primal, x._buf.tangent
        return x, None

    def process_primitive(self, prim, args, params):
        primals = []
        tangents = []
        own = False
        for a in args:
            if a.__class__ is JVPTracer and a._buf.trace is self:
                s = a._buf
                primals.append(s.primal)
                tangents.append(s.tangent)
                own = True
            else:
                primals.append(a)
                tangents.append(None)
        parent = self.parent
        if not own:
            return bind_with(parent, prim, args, params)
        rule = prim.jvp
        if rule is None:
            raise NotImplementedError(
                f"{prim.name}: no differentiation rule (jvp) is registered, so {self.transform} cannot "
                f"differentiate through it; see arrayx.transforms.rules.coverage()"
            )
        token = _TRACE.set(parent)
        try:
            out, tout = rule(primals, tangents, **params)
        finally:
            _TRACE.reset(token)
        if prim.multiple_results:
            if tout is None:
                return tuple(out)
            try:
                return tuple(self.box(o, t) for o, t in zip(out, tout))
            except ValueError as e:
                raise ValueError(f"{prim.name}: {e}") from None
        if tout is None:
            return out
        if CHECK_RULES:
            tb, ob = tout._buf, out._buf  # compare the buffers' shapes first: no property calls
            if (tb.shape != ob.shape or tb.dtype != ob.dtype) and (
                    not _shapes_agree(tout.shape, out.shape) or tout.dtype != out.dtype):  # (unknown dims compare here)
                raise ValueError(f"{prim.name}: the jvp rule is wrong: {_tangent_mismatch(out, tout)}")
        return JVPTracer._make(JVPState(self, out, tout))

    #: call-like primitives apply their jvp rule like any other (the rule may inline the body)
    process_call = process_primitive


def _shapes_agree(a: tuple, b: tuple) -> bool:
    """Equal shapes, where an unknown (None: data-dependent, on Dask) dimension agrees with any size."""
    return a == b or (len(a) == len(b) and all(m == n or m is None or n is None for m, n in zip(a, b)))


def _tangent_mismatch(primal, tangent):
    return ValueError(
        f"tangent of shape {tuple(tangent.shape)} and dtype {tangent.dtype} for a primal of shape "
        f"{tuple(primal.shape)} and dtype {primal.dtype}"
    )


# -- helpers shared by the autodiff API ----------------------------------------------------------


def is_differentiable(x) -> bool:
    return kind_of(x.dtype) in "fc"  # bfloat16's NumPy kind is "V"


def as_array_leaf(fname: str, x) -> Array:
    if isinstance(x, Array):
        return x
    if isinstance(x, (bool, int, float, complex)):
        return asarray(x)
    if hasattr(x, "__array__") or hasattr(x, "__dlpack__") or hasattr(x, "__array_interface__"):
        return asarray(x)  # NumPy arrays and other array-likes: on the current executor (as jit does)
    raise TypeError(
        f"{fname}: arguments must be arrayx arrays, NumPy arrays (or anything with __array__/__dlpack__) "
        f"or Python scalars in pytrees, got {type(x).__name__}; convert with arrayx.asarray(...)"
    )


def lower_leaf(trace, x):
    """``x`` with this trace's tracer replaced by its primal (for auxiliary outputs)."""
    if x.__class__ is JVPTracer and x._buf.trace is trace:
        return x._buf.primal
    return x


class FlatFun:
    """``fun`` on flat leaves: unflattens arguments, flattens results and remembers their tree."""

    __slots__ = ("fun", "in_tree", "has_aux", "out_tree", "aux", "fname")

    def __init__(self, fun, in_tree, has_aux: bool, fname: str):
        self.fun = fun
        self.in_tree = in_tree
        self.has_aux = has_aux
        self.out_tree = None
        self.aux = None
        self.fname = fname

    def __call__(self, *leaves):
        args = pytree.unflatten(self.in_tree, list(leaves))
        out = self.fun(*args)
        if self.has_aux:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TypeError(
                    f"{self.fname}(..., has_aux=True): the function must return a pair (output, aux), "
                    f"got {type(out).__name__}"
                )
            out, self.aux = out
        out_leaves, self.out_tree = pytree.flatten(out)
        return [as_array_leaf(self.fname, o) for o in out_leaves]


# -- jvp -------------------------------------------------------------------------------------------


def jvp_flat(fun: Callable, primals: list, tangents: list, transform: str = "jvp", parent=None):
    """(out primals, out tangents or None) of ``fun`` on flat leaves, under a fresh JVP trace
    whose parent is ``parent`` (default: the current trace)."""
    trace = JVPTrace(current_trace() if parent is None else parent, transform)
    ins = [trace.box(p, t) for p, t in zip(primals, tangents)]
    outs = trace.run(fun, ins)
    pairs = [trace.unbox(o) for o in outs]
    return [p for p, _ in pairs], [t for _, t in pairs], trace


def jvp(fun: Callable, primals, tangents, has_aux: bool = False):
    """``(fun(*primals), J(primals) @ tangents)``: the forward-mode derivative of ``fun``.

    ``primals`` and ``tangents`` are tuples (or lists) of pytrees of the same structure;
    tangents have their primals' shapes and dtypes (tangents of integer primals are
    ignored).  With ``has_aux`` ``fun`` returns ``(output, aux)`` and so does the result's
    third element.

    >>> import arrayx as ax
    >>> y, dy = ax.jvp(ax.sin, (ax.asarray(0.0),), (ax.asarray(1.0),))
    >>> float(y), float(dy)
    (0.0, 1.0)
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError(
            f"jvp: primals and tangents must be tuples or lists of arguments, got "
            f"{type(primals).__name__} and {type(tangents).__name__}; write jvp(f, (x,), (t,))"
        )
    p_leaves, p_tree = pytree.flatten(tuple(primals))
    t_leaves, t_tree = pytree.flatten(tuple(tangents))
    if p_tree != t_tree:
        raise TypeError(f"jvp: primals and tangents must have the same structure, got {p_tree} and {t_tree}")
    p_leaves = [as_array_leaf("jvp", p) for p in p_leaves]
    tans = []
    for p, t in zip(p_leaves, t_leaves):
        t = as_array_leaf("jvp", t)
        if not is_differentiable(p):
            tans.append(None)
            continue
        if t.shape != p.shape or t.dtype != p.dtype:
            raise ValueError(
                f"jvp: a tangent must have its primal's shape and dtype; got a tangent {t.dtype}{list(t.shape)} "
                f"for a primal {p.dtype}{list(p.shape)}"
            )
        tans.append(t)
    flat = FlatFun(fun, p_tree, has_aux, "jvp")
    outs, touts, trace = jvp_flat(flat, p_leaves, tans, "jvp")
    touts = [zeros_like(o) if t is None else t for o, t in zip(outs, touts)]
    out = pytree.unflatten(flat.out_tree, outs)
    tout = pytree.unflatten(flat.out_tree, touts)
    if has_aux:
        return out, tout, pytree.map(lambda a: lower_leaf(trace, a), flat.aux)
    return out, tout


# -- linearize ------------------------------------------------------------------------------------


class Linearized:
    """What ``linearize_flat`` records: the primal outputs and the linear tangent graph."""

    __slots__ = ("out_primals", "graph", "has_tangent", "trace")

    def __init__(self, out_primals, graph, has_tangent, trace):
        self.out_primals = out_primals
        self.graph = graph
        self.has_tangent = has_tangent  # per input leaf: whether it has a tangent input in graph
        self.trace = trace


def linearize_flat(fun: Callable, primals: list, transform: str = "linearize") -> Linearized:
    """Run ``fun`` with primals computed now and tangents staged into a linear Graph."""
    staging = StagingTrace(current_trace(), _device_of_leaves(primals), transform, stage_nullary=False)
    tan_in = [staging.new_input(aval_of(p)) if is_differentiable(p) else None for p in primals]
    try:
        out_primals, out_tangents, trace = jvp_flat(fun, primals, tan_in, transform, parent=staging)
    finally:
        staging.finish()
    for p in out_primals:
        if p.__class__ is StagingTracer and p._buf.trace is staging:
            raise RuntimeError(
                f"{transform}: a primal output depends on tangents; some jvp rule mixes tangents into "
                f"its primal result"
            )
    graph = staging.to_graph([t._buf.var for t in tan_in if t is not None], out_tangents)
    return Linearized(out_primals, graph, [t is not None for t in tan_in], trace)


def linearize(fun: Callable, *primals, has_aux: bool = False):
    """``(fun(*primals), f_jvp)`` where ``f_jvp(*tangents)`` is the linear map ``J(primals) @ tangents``.

    The primal computation runs once now; the tangent computation is recorded as a
    Graph and replayed by each call of ``f_jvp`` (so many tangents cost one
    linearization).

    >>> import arrayx as ax
    >>> y, f_jvp = ax.linearize(ax.exp, ax.asarray(1.0))
    >>> float(f_jvp(ax.asarray(2.0))) == 2 * float(y)
    True
    """
    leaves, in_tree = pytree.flatten(primals)
    leaves = [as_array_leaf("linearize", x) for x in leaves]
    flat = FlatFun(fun, in_tree, has_aux, "linearize")
    lin = linearize_flat(flat, leaves, "linearize")
    out_tree = flat.out_tree
    graph = lin.graph

    def f_jvp(*tangents):
        t_leaves, t_tree = pytree.flatten(tangents)
        if t_tree != in_tree:
            raise TypeError(f"linearize: f_jvp expects tangents structured like the primals {in_tree}, got {t_tree}")
        ins = []
        for p, t, has in zip(leaves, t_leaves, lin.has_tangent):
            if has:
                t = as_array_leaf("linearize", t)
                if t.shape != p.shape or t.dtype != p.dtype:
                    raise ValueError(
                        f"linearize: tangent {t.dtype}{list(t.shape)} does not match its primal {p.dtype}{list(p.shape)}"
                    )
                ins.append(t)
        outs = graph(*ins)
        outs = [zeros_like(p) if t is None else t for p, t in zip(lin.out_primals, outs)]
        return pytree.unflatten(out_tree, outs)

    out = pytree.unflatten(out_tree, lin.out_primals)
    if has_aux:
        return out, f_jvp, pytree.map(lambda a: lower_leaf(lin.trace, a), flat.aux)
    return out, f_jvp
