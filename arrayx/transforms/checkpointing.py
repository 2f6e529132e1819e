"""``checkpoint`` (alias ``remat``): trade computation for memory in reverse mode.

Under reverse mode a checkpointed function keeps only its inputs: the linear
graph gets one ``checkpoint_lin`` equation instead of the function's tangent
equations (and their captured intermediates), and transposing it linearizes the
function again from its inputs, that is, the forward pass is recomputed during the
backward pass.  Eagerly and under forward mode the function simply runs; staging
records one ``checkpoint`` equation holding the function's closed sub-graph.

Policies decide what may be saved instead of recomputed:
``checkpoint_policies.nothing_saveable`` (the default: recompute everything) and
``everything_saveable`` (no rematerialisation).
"""
from __future__ import annotations

import functools
from types import SimpleNamespace
from typing import Callable

from arrayx import pytree
from arrayx.api._array import Array
from arrayx.core import lowering as _lowering
from arrayx.core.tracers import CallPrimitive
from arrayx.core.tracers import ShapeDtypeStruct, aval_of

__all__ = ["checkpoint", "remat", "checkpoint_policies"]


def _nothing_saveable(*_, **__) -> bool:
    return False


def _everything_saveable(*_, **__) -> bool:
    return True


checkpoint_policies = SimpleNamespace(
    nothing_saveable=_nothing_saveable,
    everything_saveable=_everything_saveable,
)

checkpoint_p = CallPrimitive("checkpoint")


def _checkpoint_jvp(primals, tangents, *, fun, policy, num_consts=0):
    from arrayx.transforms.forward import jvp_flat

    if policy is _everything_saveable:  # nothing to recompute: differentiate the body directly
        outs, touts, _ = jvp_flat(fun, list(primals), list(tangents), "checkpoint")
        return tuple(outs), tuple(touts)
    # one call whose staging rule decides: forward mode computes it at once, reverse mode
    # (tangents staged by linearize) records a checkpoint_lin that recomputes in the backward pass
    has = tuple(t is not None for t in tangents)
    out = checkpoint_jvp_p.bind(*primals, *[t for t in tangents if t is not None], fun=fun, has_tangent=has)
    k = len(out) // 2
    return tuple(out[:k]), tuple(out[k:])


def _split_jvp_operands(args, has_tangent):
    n = len(has_tangent)
    it = iter(args[n:])
    return list(args[:n]), [next(it) if h else None for h in has_tangent]


def _checkpoint_jvp_eager(args, params):
    from arrayx.transforms.forward import jvp_flat

    primals, tangents = _split_jvp_operands(args, params["has_tangent"])
    outs, touts, _ = jvp_flat(params["fun"], primals, tangents, "checkpoint")
    return [*outs, *(_zeros_like(o) if t is None else t for o, t in zip(outs, touts))]


def _checkpoint_jvp_stage(trace, args, params):
    from arrayx.core.primitives import set_trace
    from arrayx.transforms.forward import jvp_flat

    fun = params["fun"]
    primals, tangents = _split_jvp_operands(args, params["has_tangent"])
    if any(trace.owns(p) for p in primals):  # primals staged too (make_graph of a jvp): inline
        outs, touts, _ = jvp_flat(fun, primals, tangents, "checkpoint", parent=trace)
        return (*outs, *(_zeros_like(o) if t is None else t for o, t in zip(outs, touts)))
    with set_trace(trace.parent):  # the primal now, saving nothing of the body
        outs = list(fun(*primals))
    touts = trace.process_call(checkpoint_lin_p, (*primals, *tangents),
                               dict(fun=fun, n=len(primals), out_avals=tuple(aval_of(o) for o in outs)))
    return (*outs, *touts)


def _checkpoint_jvp_jvp(primals, tangents, **params):
    from arrayx.transforms.forward import jvp_flat

    outs, touts, _ = jvp_flat(lambda *args: _checkpoint_jvp_eager(args, params), list(primals),
                              list(tangents), "checkpoint")
    return tuple(outs), tuple(touts)


checkpoint_jvp_p = CallPrimitive("checkpoint_jvp", eager=_checkpoint_jvp_eager, fun_params=(),
                                 stage=_checkpoint_jvp_stage)
checkpoint_jvp_p.jvp = _checkpoint_jvp_jvp
checkpoint_lin_p = CallPrimitive("checkpoint_lin", fun_params=())


def _zeros_like(x):
    from arrayx.api.creation import zeros_like

    return zeros_like(x)


def _checkpoint_lin_eager(args, params):
    # forward evaluation of the linear map (a tangent reached it): a plain jvp of the body
    from arrayx.transforms.forward import jvp_flat

    n = params["n"]
    _, touts, _ = jvp_flat(params["fun"], list(args[:n]), list(args[n:]), "checkpoint")
    return [_zeros_like(t) if t is None else t for t in touts]


def _checkpoint_lin_transpose(cts, *args, fun, n, out_avals):
    from arrayx.transforms.forward import linearize_flat
    from arrayx.transforms.transpose import backward_pass

    primals = list(args[:n])
    lin = linearize_flat(fun, primals, "checkpoint")  # the recomputation
    cts_in = iter(backward_pass(lin.graph, list(cts)))
    out = [None] * n
    for has in lin.has_tangent:
        out.append(next(cts_in) if has else None)
    return out


def _checkpoint_lin_jvp(primals, tangents, **params):
    # differentiate the linear map's own definition (a jvp of the body): exact at any order
    from arrayx.transforms.forward import jvp_flat

    outs, touts, _ = jvp_flat(lambda *args: _checkpoint_lin_eager(args, params), list(primals),
                              list(tangents), "checkpoint")
    return tuple(outs), tuple(touts)


def _checkpoint_batch(vals, dims, *, fun, policy, num_consts=0):
    from arrayx.transforms.batching import batch_fun, front
    from arrayx.transforms.rules._batch import size_of

    size = size_of(vals, dims)
    ins = tuple(None if d is None else 0 for d in dims)
    params = {"num_consts": num_consts} if num_consts else {}
    outs = checkpoint_p.bind(*front(vals, dims), fun=batch_fun(fun, ins, size), policy=policy, **params)
    return outs, 0


def _fully_batched(prim, fun_arity):
    """Batch rule of a call-like ``prim`` whose ``fun`` takes its first operands: every operand is
    batched (tangents and primals must agree), ``fun`` is batched along axis 0."""
    def rule(vals, dims, **params):
        from arrayx.transforms.batching import batch_fun, front
        from arrayx.transforms.rules._batch import size_of

        size = size_of(vals, dims)
        n = fun_arity(params, len(vals))
        new = {**params, "fun": batch_fun(params["fun"], (0,) * n, size)}
        if "out_avals" in params:
            new["out_avals"] = tuple(ShapeDtypeStruct._trusted((size, *a.shape), a.dtype, a.weak_type)
                                     for a in params["out_avals"])
        return prim.bind(*front(vals, dims, size), **new), 0

    rule.__name__ = f"{prim.name}_batch"
    return rule


checkpoint_p.jvp = _checkpoint_jvp
checkpoint_p.batch = _checkpoint_batch
checkpoint_jvp_p.batch = _fully_batched(checkpoint_jvp_p, lambda params, n: len(params["has_tangent"]))
checkpoint_lin_p.batch = _fully_batched(checkpoint_lin_p, lambda params, n: params["n"])
checkpoint_p.lowerings["*"] = lambda ex, params: _lowering.lower_fun_param(ex, params)
checkpoint_lin_p.jvp = _checkpoint_lin_jvp
checkpoint_lin_p.eager = _checkpoint_lin_eager
checkpoint_lin_p.abstract_eval = lambda *args, out_avals, **params: out_avals
checkpoint_lin_p.transpose = _checkpoint_lin_transpose


def checkpoint(fun: Callable, *, prevent_cse: bool = True, policy: Callable | None = None,
               static_argnums: tuple = ()) -> Callable:
    """``fun`` with its intermediates recomputed, rather than stored, for reverse mode.

    ``policy`` is one of ``checkpoint_policies`` (default ``nothing_saveable``);
    ``static_argnums`` are passed through as Python values.  ``prevent_cse`` is
    accepted for JAX compatibility (arrayx does not eliminate common subexpressions).

    >>> import arrayx as ax
    >>> f = ax.checkpoint(lambda x: ax.sin(ax.sin(x)))
    >>> round(float(ax.grad(f)(ax.asarray(0.5))), 6)
    0.778644
    """
    policy = policy or _nothing_saveable
    static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    @functools.wraps(fun)
    def checkpointed(*args, **kwargs):
        n = len(args)
        static_set = {i % n for i in static} if n else set()
        dyn = [a for i, a in enumerate(args) if i not in static_set]
        leaves, in_tree = pytree.flatten(dyn)
        holder = {}

        def flat_fun(*xs):
            it = iter(pytree.unflatten(in_tree, list(xs)))
            full = [a if i in static_set else next(it) for i, a in enumerate(args)]
            out = fun(*full, **kwargs)
            out_leaves, holder["tree"] = pytree.flatten(out)
            for o in out_leaves:
                if not isinstance(o, Array):
                    raise TypeError(f"checkpoint: outputs must be arrays, got {type(o).__name__}")
            return out_leaves

        flat_fun.__name__ = getattr(fun, "__name__", "checkpointed")
        outs = checkpoint_p.bind(*leaves, fun=flat_fun, policy=policy)
        return pytree.unflatten(holder["tree"], list(outs))

    return checkpointed


remat = checkpoint
