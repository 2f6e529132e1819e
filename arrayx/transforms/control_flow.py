"""Structured control flow: ``cond``, ``switch``, ``while_loop``, ``fori_loop``, ``scan``, ``map``.

With JAX's signatures and semantics.  With no transform active (or a concrete
predicate/index) they are plain Python.  Under a transform the functions are
staged into closed sub-graphs (values they capture become explicit operands) and
one call-like primitive is bound, so ``jit`` lowers them (jax: ``lax.switch``/
``lax.while_loop``/``lax.scan``; numpy/numba/cupy/dask: Python loops over the
compiled bodies) and the JVP trace differentiates them through their jvp rules.

Reverse mode: the jvp rules bind the primitive with a ``tangent_mask`` param; a
staging trace that sees the primal operands known and tangents staged (that is,
linearize) splits ``scan`` into a primal scan and a linear one, and ``cond`` into a
primal cond and a linear one (the taken branch only; control_flow_reverse.py), also when
they are nested in one another; ``while_loop`` has no static trip count and raises, as in JAX.
"""
from __future__ import annotations

from typing import Callable

from arrayx import pytree
from arrayx.api._array import Array
from arrayx.api._dtypes import kind_of
from arrayx.core.primitives import _TRACE, current_trace, set_trace
from arrayx.core.tracers import CallPrimitive
from arrayx.core.tracers import ShapeDtypeStruct, aval_of
from arrayx.core.graph import Graph
from arrayx.transforms.call_primitive import _jvp_graph, _stage_flat, _zeros
from arrayx.transforms.staging import StagingTracer, close_function
from arrayx.transforms.batching import batch_graph, front, moveaxis_to
from arrayx.transforms.rules._batch import size_of, to_front

__all__ = ["cond", "switch", "while_loop", "fori_loop", "scan", "map"]


# -- shared helpers ------------------------------------------------------------------------------


def _as_array(fname, x):
    if isinstance(x, Array):
        return x
    if isinstance(x, (bool, int, float, complex)):
        from arrayx.api.creation import asarray

        return asarray(x)
    raise TypeError(f"{fname}: operands and carried values must be arrayx arrays or Python scalars (in pytrees), "
                    f"got {type(x).__name__}")


def _leaves(fname, tree):
    leaves, treedef = pytree.flatten(tree)
    return [_as_array(fname, x) for x in leaves], treedef


def _type_str(a) -> str:
    return f"{a.dtype.name}{list(a.shape)}"


def _check_same_types(fname, what, tree_a, avals_a, tree_b, avals_b, names=("init", "body_fun output")):
    """A JAX-quality error when two carries (or branch outputs) differ in structure or type."""
    if tree_a != tree_b:
        raise TypeError(f"{fname}: {what} must have the same structure; {names[0]} is {tree_a}, "
                        f"{names[1]} is {tree_b}")
    paths = [p for p, _ in pytree.leaves_with_path(pytree.unflatten(tree_a, list(range(len(avals_a)))))]
    for path, a, b in zip(paths, avals_a, avals_b):
        if a.shape != b.shape or a.dtype != b.dtype:
            where = pytree.keystr(path) or "the value"
            raise TypeError(f"{fname}: {what} must have the same types; at {where} {names[0]} is {_type_str(a)} "
                            f"but {names[1]} is {_type_str(b)}")


class _Flat:
    """``fun`` on flat leaves: unflattens the inputs, flattens and remembers the output."""

    def __init__(self, fname, fun, in_trees):
        self.fname, self.fun, self.in_trees = fname, fun, in_trees
        self.out_tree = None

    def __call__(self, *leaves):
        args, i = [], 0
        for tree in self.in_trees:
            n = tree.num_leaves
            args.append(pytree.unflatten(tree, list(leaves[i:i + n])))
            i += n
        out_leaves, self.out_tree = _leaves(self.fname, self.fun(*args))
        return out_leaves


def _close(fname, fun, in_trees, avals):
    flat = _Flat(fname, fun, in_trees)
    graph, consts = close_function(flat, avals, current_trace(), fname)
    return graph, consts, flat.out_tree


def _restage(fun, avals, name) -> Graph:
    return _stage_flat(fun, avals, name)


def _linearizing(trace, args, mask) -> bool:
    """Primal operands known to ``trace`` and some tangent staged by it: ``trace`` is linearize's."""
    own = [a.__class__ is StagingTracer and a._buf.trace is trace for a in args]
    return not any(o for o, m in zip(own, mask) if not m) and any(o for o, m in zip(own, mask) if m)


def _float(aval) -> bool:
    return kind_of(aval.dtype) in "fc"


# -- cond / switch ------------------------------------------------------------------------------


def _clamp(i: int, n: int) -> int:
    return min(max(int(i), 0), n - 1)


def switch(index, branches, *operands):
    """``branches[clamp(index)](*operands)``; under a transform all branches are staged.

    >>> import arrayx as ax
    >>> float(ax.switch(1, [lambda x: x + 1, lambda x: x * 10], ax.asarray(2.0)))
    20.0
    """
    branches = tuple(branches)
    if not branches:
        raise ValueError("switch: branches must be a non-empty sequence of functions")
    if isinstance(index, (bool, int)) or index.__class__ is Array:  # known now: plain Python
        if isinstance(index, Array) and (index.shape != () or index.dtype.kind not in "biu"):
            raise TypeError(f"switch: index must be an integer scalar, got {_type_str(index)}")
        return branches[_clamp(int(index), len(branches))](*operands)
    return _staged_switch("switch", index, branches, operands)


def cond(pred, true_fun: Callable, false_fun: Callable, *operands):
    """``true_fun(*operands) if pred else false_fun(*operands)``; under a transform both are staged.

    >>> import arrayx as ax
    >>> float(ax.cond(ax.asarray(True), lambda x: x + 1, lambda x: x - 1, ax.asarray(1.0)))
    2.0
    """
    if isinstance(pred, Array) and (pred.shape != () or pred.dtype.kind not in "biu"):
        raise TypeError(f"cond: pred must be a boolean (or integer) scalar, got {_type_str(pred)}; "
                        f"use arrayx.where for elementwise choice")
    if isinstance(pred, (bool, int)) or pred.__class__ is Array:
        return true_fun(*operands) if bool(pred) else false_fun(*operands)
    from arrayx.api.data_types import astype

    index = astype(pred if pred.dtype.kind == "b" else pred != 0, _INDEX_DTYPE)
    return _staged_switch("cond", index, (false_fun, true_fun), operands,
                          names=("false_fun output", "true_fun output"))


def _staged_switch(fname, index, branches, operands, names=None):
    from arrayx.api.data_types import astype

    if index.dtype != _INDEX_DTYPE:
        index = astype(index, _INDEX_DTYPE)
    leaves, in_tree = _leaves(fname, operands)
    avals = [aval_of(x) for x in leaves]
    closed = [_close(fname, lambda ops, b=b: b(*ops), [in_tree], avals) for b in branches]
    out_tree0, out_avals0 = closed[0][2], closed[0][0].out_avals
    for i, (g, _, tree) in enumerate(closed[1:], 1):
        _check_same_types(fname, "the branches' outputs", out_tree0, out_avals0, tree, g.out_avals,
                          names or ("branch 0 output", f"branch {i} output"))
    # every branch takes every branch's captured values, then the operands
    all_consts = [c for _, consts, _ in closed for c in consts]
    graphs = []
    for b, (g, consts, _) in enumerate(closed):
        before = sum(len(c) for _, c, _ in closed[:b])
        after = len(all_consts) - before - len(consts)
        graphs.append(_with_ignored_inputs(g, before, after, [aval_of(c) for c in all_consts]))
    outs = cond_p.bind(index, *all_consts, *leaves, branches=tuple(graphs), tangent_mask=None)
    return pytree.unflatten(out_tree0, list(outs))


def _with_ignored_inputs(g: Graph, before: int, after: int, const_avals) -> Graph:
    """``g`` (own captured values, then operands) taking every branch's captured values first."""
    from arrayx.core.graph import Var

    n_own = len(const_avals) - before - after
    ins = [*(Var(a) for a in const_avals[:before]), *g.inputs[:n_own],
           *(Var(a) for a in const_avals[before + n_own:]), *g.inputs[n_own:]]
    return Graph(ins, g.constvars, g.consts, g.equations, g.outputs)


_INDEX_DTYPE = None  # int32 would do; the standard's default index dtype keeps one type everywhere


def _cond_eager(args, params):
    branches = params["branches"]
    return branches[_clamp(int(args[0]), len(branches))](*args[1:])


def _cond_jvp(primals, tangents, *, branches, tangent_mask):
    has = tuple(t is not None for t in tangents[1:])
    jg = tuple(_jvp_graph(b, has) for b in branches)
    present = [t for t in tangents[1:] if t is not None]
    mask = (False,) * len(primals) + (True,) * len(present)
    out = cond_p.bind(*primals, *present, branches=jg, tangent_mask=mask)
    k = len(branches[0].outputs)
    return tuple(out[:k]), tuple(out[k:])


def _cond_stage(trace, args, params):
    branches, mask = params["branches"], params["tangent_mask"]
    if mask is None or not _linearizing(trace, args, mask):
        return trace.record(cond_p, args, params)
    index, rest = args[0], args[1:]
    if index.__class__ is Array:  # the branch is known: only its linear part is recorded
        with set_trace(trace):
            return tuple(branches[_clamp(int(index), len(branches))](*rest))
    from arrayx.transforms.control_flow_reverse import cond_partial_eval

    return cond_partial_eval(trace, index, rest, branches, mask[1:])  # the taken branch only, forward and back


def _cond_lowering(ex, params):
    from arrayx.core.lowering import lowered

    fns = [lowered(ex, g) for g in params["branches"]]
    n = len(fns)
    if ex.name == "jax":
        lax = ex._jax.lax
        return lambda index, *rest: lax.switch(index, fns, *rest)  # lax.switch clamps the index
    return lambda index, *rest: fns[_clamp(int(index), n)](*rest)


def _lanes(mask, x):
    """``mask`` of shape (B,) reshaped to broadcast against ``x`` (batch axis first)."""
    from arrayx.api.manipulation import reshape

    return reshape(mask, (mask.shape[0],) + (1,) * (x.ndim - 1))


def _cond_batch(vals, dims, *, branches, tangent_mask):
    size = size_of(vals, dims)
    index, ops = vals[0], front(vals[1:], dims[1:])
    in_b = tuple(d is not None for d in dims[1:])
    if dims[0] is None:  # one branch for every member: a cond of the batched branches
        force = tuple(any(col) for col in zip(*(batch_graph(b, in_b, size)[1] for b in branches)))
        graphs = tuple(batch_graph(b, in_b, size, force)[0] for b in branches)
        outs = cond_p.bind(index, *ops, branches=graphs, tangent_mask=tangent_mask)
        return outs, [0 if f else None for f in force]
    # members take different branches: run every branch batched, then select per member
    from arrayx.api.elementwise import clip
    from arrayx.api.searching import where

    index = clip(to_front(index, dims[0]), 0, len(branches) - 1)
    force = (True,) * len(branches[0].outputs)
    results = [batch_graph(b, in_b, size, force)[0](*ops) for b in branches]
    outs = list(results[-1])
    for i in range(len(branches) - 2, -1, -1):
        outs = [where(_lanes(index == i, r), r, o) for r, o in zip(results[i], outs)]
    return tuple(outs), 0


cond_p = CallPrimitive("cond", eager=_cond_eager, fun_params=(), stage=_cond_stage)
cond_p.abstract_eval = lambda *args, branches, tangent_mask: branches[0].out_avals
cond_p.jvp = _cond_jvp
cond_p.batch = _cond_batch
cond_p.lowerings["*"] = _cond_lowering


# -- while_loop ------------------------------------------------------------------------------------


def while_loop(cond_fun: Callable, body_fun: Callable, init_val):
    """``val = init_val; while cond_fun(val): val = body_fun(val); return val``.

    Under a transform both functions are staged (the carry keeps its structure and
    types: a mismatch names the path and both types).  Forward-mode differentiable;
    reverse mode raises (the trip count is unknown): use ``scan`` or ``fori_loop``
    with static bounds.

    >>> import arrayx as ax
    >>> int(ax.while_loop(lambda i: i < 10, lambda i: i * 2, ax.asarray(1)))
    16
    """
    if _TRACE.get() is None:
        val = init_val
        while bool(cond_fun(val)):
            val = body_fun(val)
        return val
    leaves, tree = _leaves("while_loop", init_val)
    avals = [aval_of(x) for x in leaves]
    cg, cconsts, ctree = _close("while_loop", cond_fun, [tree], avals)
    (pred,) = cg.out_avals if len(cg.out_avals) == 1 else (None,)
    if pred is None or pred.shape != () or pred.dtype.kind != "b":
        got = ", ".join(_type_str(a) for a in cg.out_avals)
        raise TypeError(f"while_loop: cond_fun must return a boolean scalar, got {got}")
    bg, bconsts, btree = _close("while_loop", body_fun, [tree], avals)
    _check_same_types("while_loop", "body_fun's output and the carry", tree, avals, btree, bg.out_avals)
    outs = while_p.bind(*cconsts, *bconsts, *leaves, cond=cg, body=bg, cond_nconsts=len(cconsts),
                        body_nconsts=len(bconsts), tangent_mask=None)
    return pytree.unflatten(tree, list(outs))


def _while_eager(args, params):
    cg, bg, nc, nb = params["cond"], params["body"], params["cond_nconsts"], params["body_nconsts"]
    cc, bc, carry = args[:nc], args[nc:nc + nb], list(args[nc + nb:])
    while bool(cg(*cc, *carry)[0]):
        carry = bg(*bc, *carry)
    return carry


def _while_jvp(primals, tangents, *, cond, body, cond_nconsts, body_nconsts, tangent_mask):
    nc, nb = cond_nconsts, body_nconsts
    bc, carry = primals[nc:nc + nb], primals[nc + nb:]
    bc_t, carry_t = tangents[nc:nc + nb], tangents[nc + nb:]
    carry_mask = tuple(_float(aval_of(c)) for c in carry)
    bc_has = tuple(t is not None for t in bc_t)
    jg = _jvp_graph(body, (*bc_has, *carry_mask))
    n, nbt, nct = len(carry), sum(bc_has), sum(carry_mask)

    def body_jvp(*xs):  # (bc, bc_t, carry, carry_t) -> (carry, carry_t)
        b, bt, c, ct = xs[:nb], xs[nb:nb + nbt], xs[nb + nbt:nb + nbt + n], xs[nb + nbt + n:]
        out = jg(*b, *c, *bt, *ct)
        return [*out[:n], *(t for t, m in zip(out[n:], carry_mask) if m)]

    bavals = [aval_of(x) for x in bc]
    cavals = [aval_of(x) for x in carry]
    new_body = _restage(body_jvp, [*bavals, *(a for a, h in zip(bavals, bc_has) if h), *cavals,
                                   *(a for a, m in zip(cavals, carry_mask) if m)], "jvp of while_loop body")
    new_cond = _restage(lambda *xs: cond(*xs[:nc + n]), [*(aval_of(x) for x in primals[:nc]), *cavals,
                                                          *(a for a, m in zip(cavals, carry_mask) if m)],
                        "while_loop cond")
    init_t = [(_zeros(a) if t is None else t) for t, a, m in zip(carry_t, cavals, carry_mask) if m]
    present_bt = [t for t in bc_t if t is not None]
    ops = [*primals[:nc], *bc, *present_bt, *carry, *init_t]
    mask = (False,) * (nc + nb) + (True,) * len(present_bt) + (False,) * n + (True,) * len(init_t)
    out = while_p.bind(*ops, cond=new_cond, body=new_body, cond_nconsts=nc, body_nconsts=nb + nbt,
                       tangent_mask=mask)
    it = iter(out[n:])
    return tuple(out[:n]), tuple(next(it) if m else None for m in carry_mask)


def _while_stage(trace, args, params):
    mask = params["tangent_mask"]
    if mask is not None and _linearizing(trace, args, mask):
        raise TypeError(
            "while_loop: reverse-mode differentiation (grad, vjp, jacrev) is not supported, because the "
            "number of iterations is only known at run time; use arrayx.fori_loop with static (Python int) "
            "bounds or arrayx.scan, or forward mode (jvp, jacfwd)"
        )
    return trace.record(while_p, args, params)


def _while_lowering(ex, params):
    from arrayx.core.lowering import lowered

    c, b = lowered(ex, params["cond"]), lowered(ex, params["body"])
    nc, nb = params["cond_nconsts"], params["body_nconsts"]
    if ex.name == "jax":
        lax = ex._jax.lax

        def run(*args):
            cc, bc = args[:nc], args[nc:nc + nb]
            return lax.while_loop(lambda carry: c(*cc, *carry)[0], lambda carry: list(b(*bc, *carry)),
                                  list(args[nc + nb:]))

        return run

    def run(*args):  # the predicate is the only value computed to decide (dask computes just that)
        cc, bc, carry = args[:nc], args[nc:nc + nb], list(args[nc + nb:])
        while bool(c(*cc, *carry)[0]):
            carry = b(*bc, *carry)
        return carry

    return run


def _carry_fixpoint(body, before, carry_b, after, size):
    """Which carried values end up batched: those batched at the start, and those the body makes batched
    (``before``/``after``: whether the body's other inputs, around the carry, are batched)."""
    carry_b = list(carry_b)
    while True:
        _, out_b = batch_graph(body, (*before, *carry_b, *after), size)
        new = [c or o for c, o in zip(carry_b, out_b)]
        if new == carry_b:
            return tuple(carry_b)
        carry_b = new


def _while_batch(vals, dims, *, cond, body, cond_nconsts, body_nconsts, tangent_mask):
    size = size_of(vals, dims)
    nc, nb = cond_nconsts, body_nconsts
    b = [d is not None for d in dims]
    cc_b, bc_b = tuple(b[:nc]), tuple(b[nc:nc + nb])
    carry_b = _carry_fixpoint(body, bc_b, b[nc + nb:], (), size)
    _, (pred_b,) = batch_graph(cond, (*cc_b, *carry_b), size)
    if pred_b:  # members finish at different times: every carried value is per member
        carry_b = (True,) * len(carry_b)
    vals = front(vals, dims)
    cc, bc = vals[:nc], vals[nc:nc + nb]
    carry = [moveaxis_to(v, None, 0, size) if want and not has else v
             for v, want, has in zip(vals[nc + nb:], carry_b, b[nc + nb:])]
    cg, _ = batch_graph(cond, (*cc_b, *carry_b), size)
    bg, _ = batch_graph(body, (*bc_b, *carry_b), size, carry_b)
    out_dims = [0 if x else None for x in carry_b]
    if not pred_b:
        outs = while_p.bind(*cc, *bc, *carry, cond=cg, body=bg, cond_nconsts=nc, body_nconsts=nb,
                            tangent_mask=tangent_mask)
        return outs, out_dims
    # run while any member's predicate holds; a finished member keeps its carry (a select per step)
    from arrayx.api.searching import where
    from arrayx.api.utility import any as _any

    def any_cond(*xs):
        return [_any(cg(*xs)[0])]

    def frozen_body(*xs):
        c, bcs, cr = xs[:nc], xs[nc:nc + nb], xs[nc + nb:]
        live = cg(*c, *cr)[0]
        new = bg(*bcs, *cr)
        return [where(_lanes(live, n), n, o) for n, o in zip(new, cr)]

    c_avals = [aval_of(x) for x in (*cc, *carry)]
    new_cond = _restage(any_cond, c_avals, "vmap of while_loop cond")
    new_body = _restage(frozen_body, [aval_of(x) for x in (*cc, *bc, *carry)], "vmap of while_loop body")
    mask = None if tangent_mask is None else (*tangent_mask[:nc], *tangent_mask)
    outs = while_p.bind(*cc, *cc, *bc, *carry, cond=new_cond, body=new_body, cond_nconsts=nc,
                        body_nconsts=nc + nb, tangent_mask=mask)
    return outs, out_dims


while_p = CallPrimitive("while", eager=_while_eager, fun_params=(), stage=_while_stage)
while_p.abstract_eval = lambda *args, body, **params: body.out_avals
while_p.jvp = _while_jvp
while_p.batch = _while_batch
while_p.lowerings["*"] = _while_lowering


# -- scan ------------------------------------------------------------------------------------------


def scan(f: Callable, init, xs=None, length: int | None = None, reverse: bool = False, unroll: int | bool = 1):
    """Loop ``carry, y = f(carry, x)`` over the leading axis of ``xs``; returns ``(carry, stacked ys)``.

    As ``jax.lax.scan``: ``xs`` may be None when ``length`` is given; ``reverse`` runs
    from the end (ys stay in input order); ``unroll`` is passed to JAX's lowering.
    Differentiable in both modes.

    >>> import arrayx as ax
    >>> c, ys = ax.scan(lambda c, x: (c + x, c * x), ax.asarray(0.0), ax.asarray([1.0, 2.0, 3.0]))
    >>> float(c), [float(y) for y in ys]
    (6.0, [0.0, 2.0, 9.0])
    """
    init_leaves, ctree = _leaves("scan", init)
    x_leaves, xtree = _leaves("scan", xs) if xs is not None else ([], pytree.flatten(None)[1])
    n = _scan_length(x_leaves, length)
    if _TRACE.get() is None:
        return _python_scan(f, init, xs, x_leaves, xtree, n, reverse)
    cavals = [aval_of(x) for x in init_leaves]
    xavals = [ShapeDtypeStruct._trusted(tuple(x.shape[1:]), x.dtype) for x in x_leaves]

    def body(carry, x):
        out = f(carry, x)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TypeError(f"scan: f must return a pair (carry, y), got {type(out).__name__}")
        return out

    g, consts, otree = _close("scan", body, [ctree, xtree], [*cavals, *xavals])
    out_c_tree, y_tree = otree.children() if otree.num_nodes > 1 else (None, None)
    k = len(init_leaves)
    _check_same_types("scan", "f's carry output and the init carry", ctree, cavals, out_c_tree,
                      g.out_avals[:k], ("init", "f's carry output"))
    outs = scan_p.bind(*consts, *init_leaves, *x_leaves, body=g, num_consts=len(consts), num_carry=k, length=n,
                       reverse=bool(reverse), unroll=unroll, tangent_mask=None)
    return pytree.unflatten(ctree, list(outs[:k])), pytree.unflatten(y_tree, list(outs[k:]))


def _scan_length(x_leaves, length):
    lengths = {int(x.shape[0]) for x in x_leaves if x.ndim > 0}
    if any(x.ndim == 0 for x in x_leaves):
        raise ValueError("scan: every leaf of xs must have a leading axis to scan over; got a 0-d array")
    if length is not None:
        lengths.add(int(length))
    if not lengths:
        raise ValueError("scan: xs is None (or empty), so pass length= to say how many iterations to run")
    if len(lengths) > 1:
        raise ValueError(f"scan: the leading axes of xs (and length) disagree: {sorted(lengths)}")
    return lengths.pop()


def _stack(ys, like_avals, n, fname="scan"):
    from arrayx.api.creation import zeros
    from arrayx.api.manipulation import stack

    if n == 0:
        return [zeros((0, *a.shape), dtype=a.dtype) for a in like_avals]
    return [stack([y[i] for y in ys]) for i in range(len(like_avals))]


def _python_scan(f, init, xs, x_leaves, xtree, n, reverse):
    carry = init
    ys = []
    order = range(n - 1, -1, -1) if reverse else range(n)
    y_tree = None
    for i in order:
        x = pytree.unflatten(xtree, [v[i] for v in x_leaves]) if xs is not None else None
        out = f(carry, x)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TypeError(f"scan: f must return a pair (carry, y), got {type(out).__name__}")
        carry, y = out
        y_leaves, y_tree = _leaves("scan", y)
        ys.append(y_leaves)
    if reverse:
        ys.reverse()
    if y_tree is None:  # no iterations: ys of f's output types, from a staged call
        y_avals = pytree.leaves(_eval_shape_y(f, init, xs, x_leaves, xtree))
        y_tree = pytree.flatten(_eval_shape_y(f, init, xs, x_leaves, xtree))[1]
        return carry, pytree.unflatten(y_tree, _stack([], y_avals, 0))
    avals = [aval_of(v) for v in ys[0]]
    return carry, pytree.unflatten(y_tree, _stack(ys, avals, n))


def _eval_shape_y(f, init, xs, x_leaves, xtree):
    from arrayx.transforms.staging import eval_shape

    x = pytree.unflatten(xtree, [ShapeDtypeStruct(v.shape[1:], v.dtype) for v in x_leaves]) if xs is not None else None
    return eval_shape(lambda c, x: f(c, x)[1], init, x)


def _scan_loop(args, params):
    body, nconst, k, n, reverse = (params["body"], params["num_consts"], params["num_carry"], params["length"],
                                   params["reverse"])
    consts, carry, xs = args[:nconst], list(args[nconst:nconst + k]), args[nconst + k:]
    ys = []
    for i in (range(n - 1, -1, -1) if reverse else range(n)):
        out = body(*consts, *carry, *(x[i] for x in xs))
        carry, y = list(out[:k]), list(out[k:])
        ys.append(y)
    if reverse:
        ys.reverse()
    return [*carry, *_stack(ys, body.out_avals[k:], n)]


def _scan_abstract(*args, body, num_consts, num_carry, length, **params):
    avals = body.out_avals
    return (*avals[:num_carry], *(ShapeDtypeStruct._trusted((length, *a.shape), a.dtype) for a in avals[num_carry:]))


def _scan_jvp(primals, tangents, *, body, num_consts, num_carry, length, reverse, unroll, tangent_mask):
    nc, k = num_consts, num_carry
    consts, carry, xs = primals[:nc], primals[nc:nc + k], primals[nc + k:]
    c_t, carry_t, xs_t = tangents[:nc], tangents[nc:nc + k], tangents[nc + k:]
    cavals = [aval_of(x) for x in carry]
    carry_mask = tuple(_float(a) for a in cavals)
    c_has = tuple(t is not None for t in c_t)
    x_has = tuple(t is not None for t in xs_t)
    jg = _jvp_graph(body, (*c_has, *carry_mask, *x_has))
    ny = len(body.outputs) - k
    y_mask = tuple(_float(a) for a in body.out_avals[k:])
    ncc, nct, nx, nxt = len(consts), sum(c_has), len(xs), sum(x_has)
    nk = sum(carry_mask)

    def body_jvp(*zs):  # (consts, consts_t, carry, carry_t, x, x_t) -> (carry, carry_t, y, y_t)
        i = 0
        parts = []
        for size in (ncc, nct, k, nk, nx, nxt):
            parts.append(zs[i:i + size])
            i += size
        c, ct, cr, crt, x, xt = parts
        out = jg(*c, *cr, *x, *ct, *crt, *xt)
        n_out = k + ny
        prim, tans = out[:n_out], out[n_out:]
        return [*prim[:k], *(t for t, m in zip(tans[:k], carry_mask) if m), *prim[k:],
                *(t for t, m in zip(tans[k:], y_mask) if m)]

    xavals = [ShapeDtypeStruct._trusted(tuple(x.shape[1:]), x.dtype) for x in xs]
    c_avals = [aval_of(x) for x in consts]
    new_body = _restage(body_jvp, [*c_avals, *(a for a, h in zip(c_avals, c_has) if h), *cavals,
                                   *(a for a, m in zip(cavals, carry_mask) if m), *xavals,
                                   *(a for a, h in zip(xavals, x_has) if h)], "jvp of scan body")
    init_t = [(_zeros(a) if t is None else t) for t, a, m in zip(carry_t, cavals, carry_mask) if m]
    ct_present = [t for t in c_t if t is not None]
    xt_present = [t for t in xs_t if t is not None]
    ops = [*consts, *ct_present, *carry, *init_t, *xs, *xt_present]
    mask = ((False,) * ncc + (True,) * nct + (False,) * k + (True,) * nk + (False,) * nx + (True,) * nxt)
    out = scan_p.bind(*ops, body=new_body, num_consts=ncc + nct, num_carry=k + nk, length=length, reverse=reverse,
                      unroll=unroll, tangent_mask=mask)
    c_out, ct_out, y_out, yt_out = out[:k], out[k:k + nk], out[k + nk:k + nk + ny], out[k + nk + ny:]
    it_c, it_y = iter(ct_out), iter(yt_out)
    return ((*c_out, *y_out),
            (*(next(it_c) if m else None for m in carry_mask), *(next(it_y) if m else None for m in y_mask)))


def _scan_stage(trace, args, params):
    mask = params["tangent_mask"]
    if mask is not None and _linearizing(trace, args, mask):
        from arrayx.transforms.control_flow_reverse import scan_partial_eval

        split = scan_partial_eval(trace, args, params)  # a primal scan now, a linear scan recorded
        if split is not None:
            return split
        with set_trace(trace):  # a known carry computed from tangents (not a linearized scan): unrolled
            return tuple(_scan_loop(args, params))
    return trace.record(scan_p, args, params)


def _scan_lowering(ex, params):
    from arrayx.core.lowering import lowered

    body = lowered(ex, params["body"])
    nc, k, n, reverse = params["num_consts"], params["num_carry"], params["length"], params["reverse"]
    y_avals = params["body"].out_avals[k:]
    if ex.name == "jax":
        lax = ex._jax.lax

        def run(*args):
            consts = args[:nc]

            def step(carry, x):
                out = body(*consts, *carry, *x)
                return list(out[:k]), list(out[k:])

            carry, ys = lax.scan(step, list(args[nc:nc + k]), list(args[nc + k:]), length=n, reverse=reverse,
                                 unroll=params["unroll"])
            return [*carry, *ys]

        return run
    xp = ex.xp

    def run(*args):
        consts, carry, xs = args[:nc], list(args[nc:nc + k]), args[nc + k:]
        ys = []
        for i in (range(n - 1, -1, -1) if reverse else range(n)):
            out = body(*consts, *carry, *(x[i] for x in xs))
            carry = list(out[:k])
            ys.append(out[k:])
        if reverse:
            ys.reverse()
        if n == 0:
            return [*carry, *(xp.zeros((0, *a.shape), dtype=a.dtype) for a in y_avals)]
        return [*carry, *(xp.stack([y[j] for y in ys]) for j in range(len(y_avals)))]

    return run


def _scan_batch(vals, dims, *, body, num_consts, num_carry, length, reverse, unroll, tangent_mask):
    from arrayx.api.manipulation import moveaxis

    size = size_of(vals, dims)
    nc, k = num_consts, num_carry
    b = [d is not None for d in dims]
    consts_b, x_b = tuple(b[:nc]), tuple(b[nc + k:])
    carry_b = _carry_fixpoint(body, consts_b, b[nc:nc + k], x_b, size)
    in_b = (*consts_b, *carry_b, *x_b)
    # the body sees one step's x with the batch axis first: in xs it is axis 1 (axis 0 is the scan's)
    bg, out_b = batch_graph(body, in_b, size, (*carry_b, *(False,) * (len(body.outputs) - k)))
    consts = front(vals[:nc], dims[:nc])
    carry = [moveaxis_to(v, d, 0, size) if want else v
             for v, d, want in zip(vals[nc:nc + k], dims[nc:nc + k], carry_b)]
    xs = [v if d is None or d == 1 else moveaxis(v, d, 1) for v, d in zip(vals[nc + k:], dims[nc + k:])]
    outs = scan_p.bind(*consts, *carry, *xs, body=bg, num_consts=nc, num_carry=k, length=length,
                       reverse=reverse, unroll=unroll, tangent_mask=tangent_mask)
    return outs, [*(0 if c else None for c in carry_b), *(1 if y else None for y in out_b[k:])]


scan_p = CallPrimitive("scan", eager=_scan_loop, fun_params=(), stage=_scan_stage)
scan_p.abstract_eval = _scan_abstract
scan_p.jvp = _scan_jvp
scan_p.batch = _scan_batch
scan_p.lowerings["*"] = _scan_lowering


# -- fori_loop and map -------------------------------------------------------------------------------


def fori_loop(lower, upper, body_fun: Callable, init_val, unroll=None):
    """``val = init_val; for i in range(lower, upper): val = body_fun(i, val); return val``.

    With Python-int bounds under a transform it is a ``scan`` (so it reverse-differentiates);
    with staged bounds a ``while_loop``.

    >>> import arrayx as ax
    >>> float(ax.fori_loop(0, 4, lambda i, v: v + i, ax.asarray(0.0)))
    6.0
    """
    from arrayx.api.creation import asarray

    if _TRACE.get() is None:
        val = init_val
        for i in range(int(lower), int(upper)):
            val = body_fun(asarray(i), val)
        return val
    if isinstance(lower, int) and isinstance(upper, int):
        def step(carry, _):
            i, val = carry
            return (i + 1, body_fun(i, val)), None

        (_, val), _ = scan(step, (asarray(lower), init_val), None, length=max(upper - lower, 0),
                           unroll=1 if unroll is None else unroll)
        return val

    def loop_cond(carry):
        return carry[0] < carry[1]

    def loop_body(carry):
        i, hi, val = carry
        return i + 1, hi, body_fun(i, val)

    return while_loop(loop_cond, loop_body, (_as_array("fori_loop", lower), _as_array("fori_loop", upper),
                                             init_val))[2]


def map(f: Callable, xs):  # noqa: A001 - JAX's name
    """``stack([f(x) for x in xs])`` over the leading axis (pytrees too), as ``jax.lax.map``.

    >>> import arrayx as ax
    >>> [float(v) for v in ax.map(lambda x: x * 2, ax.asarray([1.0, 2.0]))]
    [2.0, 4.0]
    """
    return scan(lambda c, x: (c, f(x)), None, xs)[1]


def _index_dtype():
    from arrayx.api import _dtypes

    return _dtypes.DEFAULT_INT


_INDEX_DTYPE = _index_dtype()


from arrayx.transforms import control_flow_reverse as _reverse  # noqa: E402  (registers the transposes)

del _reverse

from arrayx.api import _hooks as _api_hooks  # noqa: E402

_api_hooks.while_loop = while_loop  # indexing's loops over a traced count (arrayx.api sits below)
