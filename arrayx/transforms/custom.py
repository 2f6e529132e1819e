"""Custom derivatives: ``stop_gradient``, ``custom_jvp`` and ``custom_vjp``.

Both custom-rule decorators bind a :class:`CallPrimitive` whose params carry the
flattened function and rules.  Eagerly the function runs as it is; staging records
one equation whose ``fun`` is the closed sub-graph and whose rules are kept, so
differentiating the staged graph still uses them; a JVP trace runs the custom rule:

- ``custom_jvp_call``: the user's jvp computes primal and tangent outputs; under
  reverse mode its tangent operations are recorded and transposed like any others,
  so the rule must be linear in the tangents (as in JAX).
- ``custom_vjp_call``: the user's ``fwd`` runs on the primals, its residuals are kept,
  and the tangent output is one ``custom_vjp_lin`` equation whose transpose calls
  ``bwd``.  Forward mode (``jvp``) over a custom_vjp function is an error, as in JAX.

Values a staged custom function captured from enclosing transforms are constants
for its rule (their tangents do not flow through it), as in JAX.
"""
from __future__ import annotations

import functools
import inspect
from typing import Callable

from arrayx import pytree
from arrayx.api._array import Array
from arrayx.api.creation import zeros_like
from arrayx.core.primitives import _TRACE, Primitive
from arrayx.core.tracers import CallPrimitive
from arrayx.core.tracers import ShapeDtypeStruct, aval_of
from arrayx.transforms.rules._define import zeros_for
from arrayx.transforms.rules._batch import size_of
from arrayx.transforms.batching import batch_fun, front
from arrayx.api.statistical import sum as _sum
from arrayx.core.executor import GENERIC

__all__ = ["stop_gradient", "custom_jvp", "custom_vjp"]


# -- stop_gradient ----------------------------------------------------------------------------------

stop_gradient_p = Primitive("stop_gradient")
GENERIC[stop_gradient_p.name] = lambda buf: buf
stop_gradient_p.abstract_eval = lambda x: ShapeDtypeStruct(x.shape, x.dtype)


def _stop_gradient_jvp(primals, tangents):
    (x,) = primals
    return stop_gradient_p.bind(x), None


stop_gradient_p.jvp = _stop_gradient_jvp
stop_gradient_p.batch = lambda vals, dims: (stop_gradient_p.bind(vals[0]), dims[0])


def stop_gradient(x):
    """``x`` itself, but with zero derivative: transforms do not differentiate through it.

    Works on pytrees of arrays (non-array leaves pass through).

    >>> import arrayx as ax
    >>> float(ax.grad(lambda x: x * ax.stop_gradient(x))(ax.asarray(3.0)))
    3.0
    """
    if _TRACE.get() is None:
        return x

    def leaf(v):
        return stop_gradient_p.bind(v) if isinstance(v, Array) else v

    if isinstance(x, Array):
        return leaf(x)
    return pytree.map(leaf, x)


# -- shared plumbing -----------------------------------------------------------------------------------


def _resolve_args(fname, sig, args, kwargs):
    """Positional arguments of a call (keyword arguments moved into place using ``sig``)."""
    if not kwargs:
        return tuple(args)
    if sig is None:
        raise TypeError(f"{fname}: keyword arguments need an inspectable signature; pass them positionally")
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    if bound.kwargs:
        raise TypeError(f"{fname}: keyword-only arguments are not supported; pass {sorted(bound.kwargs)} positionally")
    return tuple(bound.args)


def _signature(fun):
    try:
        return inspect.signature(fun)
    except (TypeError, ValueError):
        return None


class _OutStore:
    """Where a flattened function leaves its output tree (known only after it runs)."""

    __slots__ = ("tree",)

    def __init__(self):
        self.tree = None

    def __repr__(self) -> str:
        return "<output tree>"


def _leaves_of(fname, out, store):
    leaves, tree = pytree.flatten(out)
    if store.tree is None:
        store.tree = tree
    elif store.tree != tree:
        raise TypeError(f"{fname}: the output structure changed between calls: {store.tree} vs {tree}")
    for o in leaves:
        if not isinstance(o, Array):
            raise TypeError(f"{fname}: outputs must be arrayx arrays (in a pytree), got {type(o).__name__}")
    return leaves


def _split_nondiff(args, nondiff_argnums):
    nondiff = tuple(args[i] for i in nondiff_argnums)
    diff = tuple(a for i, a in enumerate(args) if i not in nondiff_argnums)
    return nondiff, diff


def _merge(nondiff_argnums, nondiff, diff):
    out = []
    it_n, it_d = iter(nondiff), iter(diff)
    for i in range(len(nondiff) + len(diff)):
        out.append(next(it_n) if i in nondiff_argnums else next(it_d))
    return out


def _lower_fun(ex, params):
    # under jit the rules were applied before lowering: the executor runs the function itself
    from arrayx.core.lowering import lower_fun_param

    return lower_fun_param(ex, params)


# -- custom_jvp ------------------------------------------------------------------------------------------

custom_jvp_call_p = CallPrimitive("custom_jvp_call")


def _custom_jvp_call_jvp(primals, tangents, *, fun, jvp, store, num_consts=0):
    # values the staged function captured (num_consts leading operands) are constants of the rule
    primals, tangents = primals[num_consts:], tangents[num_consts:]
    tangents = [zeros_like(p) if t is None else t for p, t in zip(primals, tangents)]
    outs, touts = jvp(primals, tangents)
    return tuple(outs), tuple(touts)


def _custom_jvp_call_batch(vals, dims, *, fun, jvp, store, num_consts=0):
    # the function and its rule are both batched (outputs batch axis first), so grad(vmap(f)) uses the rule
    size = size_of(vals, dims)
    ins = tuple(None if d is None else 0 for d in dims)
    rule_dims = ins[num_consts:]  # a tangent is batched as its primal is (both come from the parent)

    def batched_jvp(primals, tangents):
        k = len(primals)

        def flat(*xs):
            outs, touts = jvp(xs[:k], xs[k:])
            return [*outs, *touts]

        both = batch_fun(flat, rule_dims + rule_dims, size)(*primals, *tangents)
        m = len(both) // 2
        return both[:m], both[m:]

    params = {"num_consts": num_consts} if num_consts else {}
    outs = custom_jvp_call_p.bind(*front(vals, dims), fun=batch_fun(fun, ins, size), jvp=batched_jvp,
                                  store=store, **params)
    return outs, 0


custom_jvp_call_p.jvp = _custom_jvp_call_jvp
custom_jvp_call_p.batch = _custom_jvp_call_batch
custom_jvp_call_p.lowerings["*"] = _lower_fun


class custom_jvp:
    """A function with a custom forward-mode derivative (reverse mode follows by transposition).

    >>> import arrayx as ax
    >>> @ax.custom_jvp
    ... def f(x):
    ...     return ax.sin(x)
    >>> @f.defjvp
    ... def f_jvp(primals, tangents):
    ...     (x,), (t,) = primals, tangents
    ...     return f(x), 2.0 * t        # deliberately not cos(x)
    >>> float(ax.grad(f)(ax.asarray(0.3)))
    2.0
    """

    def __init__(self, fun: Callable, nondiff_argnums: tuple = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp = None
        self._sig = _signature(fun)

    def defjvp(self, jvp: Callable) -> Callable:
        """``jvp(*nondiff_args, primals, tangents) -> (primal_out, tangent_out)``."""
        self.jvp = jvp
        return jvp

    def defjvps(self, *tangent_fns: Callable | None) -> None:
        """One function per argument: ``fn(t, primal_out, *primals)`` is its contribution (None: zero)."""
        def jvp(primals, tangents):
            out = self.fun(*primals)
            tout = None
            for fn, t in zip(tangent_fns, tangents):
                if fn is None:
                    continue
                c = fn(t, out, *primals)
                tout = c if tout is None else pytree.map(lambda a, b: a + b, tout, c)
            if tout is None:
                tout = pytree.map(zeros_like, out)
            return out, tout

        self.jvp = jvp

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        if self.jvp is None:
            raise AttributeError(f"custom_jvp {self.__name__}: no jvp rule; define one with @{self.__name__}.defjvp")
        args = _resolve_args(self.__name__, self._sig, args, kwargs)
        nondiff, diff = _split_nondiff(args, self.nondiff_argnums)
        leaves, in_tree = pytree.flatten(diff)
        store = _OutStore()
        nums = self.nondiff_argnums
        fun, user_jvp, name = self.fun, self.jvp, self.__name__

        def flat_fun(*xs):
            d = pytree.unflatten(in_tree, list(xs))
            return _leaves_of(name, fun(*_merge(nums, nondiff, d)), store)

        def flat_jvp(primals, tangents):
            p = pytree.unflatten(in_tree, list(primals))
            t = pytree.unflatten(in_tree, list(tangents))
            out, tout = user_jvp(*nondiff, tuple(p), tuple(t))  # JAX's order: nondiff args first
            outs = _leaves_of(name, out, store)
            touts, t_tree = pytree.flatten(tout)
            if t_tree != store.tree:
                raise TypeError(f"custom_jvp {name}: the tangent output must be structured like the output, "
                                f"got {t_tree} and {store.tree}")
            return outs, touts

        flat_fun.__name__ = name
        outs = custom_jvp_call_p.bind(*leaves, fun=flat_fun, jvp=flat_jvp, store=store)
        return pytree.unflatten(store.tree, list(outs))


# -- custom_vjp ------------------------------------------------------------------------------------------


class NoForwardModeError(TypeError):
    """Forward-mode differentiation reached a custom_vjp function (it only has a reverse rule)."""


def _no_forward_mode(args, params):
    raise NoForwardModeError(
        "can't apply forward-mode differentiation (jvp, jacfwd, linearize's f_jvp) to a custom_vjp "
        "function; use reverse mode (grad, vjp, jacrev), or define a custom_jvp instead"
    )


custom_vjp_call_p = CallPrimitive("custom_vjp_call")
custom_vjp_lin_p = CallPrimitive("custom_vjp_lin", eager=_no_forward_mode, fun_params=())


def _custom_vjp_call_jvp(primals, tangents, *, fun, fwd, bwd, store, n_res, num_consts=0):
    primals, tangents = primals[num_consts:], tangents[num_consts:]  # captured values: constants
    outs, res_leaves, res_tree = fwd(*primals)
    res_arrays = [r for r in res_leaves if isinstance(r, Array)]
    touts = custom_vjp_lin_p.bind(
        *res_arrays, *tangents, bwd=bwd, res_leaves=tuple(None if isinstance(r, Array) else r for r in res_leaves),
        res_tree=res_tree, n_res=len(res_arrays), out_avals=tuple(aval_of(o) for o in outs),
    )
    return tuple(outs), tuple(touts)


def _custom_vjp_lin_abstract(*args, out_avals, **params):
    return out_avals


def _custom_vjp_lin_transpose(cts, *args, bwd, res_leaves, res_tree, n_res, out_avals):
    res_arrays = iter(args[:n_res])
    res = [next(res_arrays) if r is None else r for r in res_leaves]
    like = next((c for c in cts if c is not None), None)
    cts = [zeros_for(a, like) if c is None else c for c, a in zip(cts, out_avals)]
    cts_in = bwd(pytree.unflatten(res_tree, res), cts)
    return [None] * n_res + list(cts_in)


def _custom_vjp_lin_jvp(primals, tangents, **params):
    _no_forward_mode(primals, params)


def _custom_vjp_call_batch(vals, dims, *, fun, fwd, bwd, store, n_res, num_consts=0):
    # fwd and bwd are batched too: residuals and cotangents carry the batch axis first, and an
    # unbatched argument's cotangent is the sum over the batch (it was shared by every member)
    size = size_of(vals, dims)
    ins = tuple(None if d is None else 0 for d in dims)
    rule_dims = ins[num_consts:]

    def batched_fwd(*xs):
        kept = {}

        def flat(*ys):
            outs, res_leaves, res_tree = fwd(*ys)
            kept["res"] = ([None if isinstance(r, Array) else r for r in res_leaves], res_tree)
            kept["n_out"] = len(outs)
            return [*outs, *(r for r in res_leaves if isinstance(r, Array))]

        res = batch_fun(flat, rule_dims, size)(*xs)
        others, res_tree = kept["res"]
        n = kept["n_out"]
        arrays = iter(res[n:])
        return res[:n], [next(arrays) if r is None else r for r in others], res_tree

    def batched_bwd(res, cts):
        res_leaves, res_tree = pytree.flatten(res)
        is_array = [isinstance(r, Array) for r in res_leaves]
        arrays = [r for r, a in zip(res_leaves, is_array) if a]
        n = len(arrays)

        def flat(*ys):
            it = iter(ys[:n])
            r = pytree.unflatten(res_tree, [next(it) if a else v for v, a in zip(res_leaves, is_array)])
            return list(bwd(r, list(ys[n:])))

        cts_in = batch_fun(flat, (0,) * (n + len(cts)), size)(*arrays, *cts)
        return [c if c is None or d is not None else _sum(c, axis=0) for c, d in zip(cts_in, rule_dims)]

    params = {"num_consts": num_consts} if num_consts else {}
    outs = custom_vjp_call_p.bind(*front(vals, dims), fun=batch_fun(fun, ins, size), fwd=batched_fwd,
                                  bwd=batched_bwd, store=store, n_res=n_res, **params)
    return outs, 0


custom_vjp_call_p.jvp = _custom_vjp_call_jvp
custom_vjp_call_p.batch = _custom_vjp_call_batch
custom_vjp_call_p.lowerings["*"] = _lower_fun
custom_vjp_lin_p.jvp = _custom_vjp_lin_jvp
custom_vjp_lin_p.abstract_eval = _custom_vjp_lin_abstract
custom_vjp_lin_p.transpose = _custom_vjp_lin_transpose


class custom_vjp:
    """A function with a custom reverse-mode derivative.

    ``defvjp(fwd, bwd)``: ``fwd(*args) -> (out, residuals)`` and
    ``bwd(*nondiff_args, residuals, ct_out) -> tuple of cotangents`` (one per
    differentiable argument, structured like it; None means zero).

    >>> import arrayx as ax
    >>> @ax.custom_vjp
    ... def clip_grad(x):
    ...     return x
    >>> clip_grad.defvjp(lambda x: (x, None), lambda res, g: (ax.clip(g, -1.0, 1.0),))
    >>> float(ax.grad(lambda x: 10.0 * clip_grad(x))(ax.asarray(2.0)))
    1.0
    """

    def __init__(self, fun: Callable, nondiff_argnums: tuple = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd = None
        self.bwd = None
        self._sig = _signature(fun)

    def defvjp(self, fwd: Callable, bwd: Callable) -> None:
        self.fwd = fwd
        self.bwd = bwd

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        if self.fwd is None:
            raise AttributeError(f"custom_vjp {self.__name__}: no rule; define one with {self.__name__}.defvjp(fwd, bwd)")
        args = _resolve_args(self.__name__, self._sig, args, kwargs)
        nums = self.nondiff_argnums
        nondiff, diff = _split_nondiff(args, nums)
        leaves, in_tree = pytree.flatten(diff)
        store = _OutStore()
        fun, user_fwd, user_bwd, name = self.fun, self.fwd, self.bwd, self.__name__

        def flat_fun(*xs):
            d = pytree.unflatten(in_tree, list(xs))
            return _leaves_of(name, fun(*_merge(nums, nondiff, d)), store)

        def flat_fwd(*xs):
            d = pytree.unflatten(in_tree, list(xs))
            result = user_fwd(*_merge(nums, nondiff, d))
            if not (isinstance(result, (tuple, list)) and len(result) == 2):
                raise TypeError(f"custom_vjp {name}: fwd must return a pair (output, residuals)")
            out, res = result
            res_leaves, res_tree = pytree.flatten(res)
            return _leaves_of(name, out, store), res_leaves, res_tree

        def flat_bwd(res, cts):
            ct = pytree.unflatten(store.tree, list(cts))
            cts_in = user_bwd(*nondiff, res, ct)
            if not isinstance(cts_in, (tuple, list)) or len(cts_in) != len(diff):
                raise TypeError(
                    f"custom_vjp {name}: bwd must return a tuple with one cotangent per differentiable "
                    f"argument ({len(diff)}), got {type(cts_in).__name__}"
                    + (f" of length {len(cts_in)}" if isinstance(cts_in, (tuple, list)) else "")
                )
            out = []
            for d, c in zip(diff, cts_in):
                d_leaves, d_tree = pytree.flatten(d)
                if c is None:
                    out.extend(None for _ in d_leaves)
                    continue
                c_leaves, c_tree = pytree.flatten(c)
                if c_tree != d_tree:
                    raise TypeError(f"custom_vjp {name}: a cotangent from bwd is structured {c_tree}, its argument {d_tree}")
                for dl, cl in zip(d_leaves, c_leaves):
                    if isinstance(dl, Array) and tuple(cl.shape) != tuple(dl.shape):
                        raise ValueError(
                            f"custom_vjp {name}: bwd returned a cotangent of shape {tuple(cl.shape)} for an "
                            f"argument of shape {tuple(dl.shape)}"
                        )
                out.extend(c_leaves)
            return out

        flat_fun.__name__ = name
        outs = custom_vjp_call_p.bind(*leaves, fun=flat_fun, fwd=flat_fwd, bwd=flat_bwd, store=store, n_res=None)
        return pytree.unflatten(store.tree, list(outs))
