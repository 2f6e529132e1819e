"""Reverse mode: transposing linear graphs, and ``vjp``, ``grad``, ``value_and_grad``, ``jacfwd``,
``jacrev``, ``hessian`` on top.

``vjp`` linearizes (``jvp.linearize_flat``: primal computed now, tangent
computation staged as a linear Graph) and returns a function that runs the
graph backwards: each equation's ``transpose`` rule maps the cotangent of its
output to cotangents of its linear inputs.  The linear inputs arrive as
:class:`UndefinedPrimal` (their shape and dtype only); the other operands are
the constants captured while linearizing.  Rules are arrayx code evaluated under
the current trace, so reverse mode composes with every transform, itself
included.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from arrayx import pytree
from arrayx.api._dtypes import kind_of
from arrayx.api.creation import eye, ones, zeros, zeros_like
from arrayx.api.data_types import astype
from arrayx.api.manipulation import moveaxis, reshape
from arrayx.core.tracers import UndefinedPrimal
from arrayx.core.graph import Graph, Var
from arrayx.transforms.forward import FlatFun, as_array_leaf, is_differentiable, jvp_flat, linearize_flat, lower_leaf

__all__ = ["UndefinedPrimal", "backward_pass", "vjp", "grad", "value_and_grad", "jacfwd", "jacrev", "hessian"]


def _rule_constant(v):
    """Constants as rules see them: NumPy scalars become Python scalars (they promote weakly)."""
    if isinstance(v, np.generic):
        return v.item()
    return v


def backward_pass(graph: Graph, cts_out: Sequence) -> list:
    """Cotangents of ``graph.inputs`` given cotangents of its outputs (None means zero)."""
    ct_env: dict = {}
    consts = dict(zip(graph.constvars, graph.consts))

    def accumulate(v, ct):
        old = ct_env.get(v)
        ct_env[v] = ct if old is None else old + ct

    for v, ct in zip(graph.outputs, cts_out):
        if ct is not None and v.__class__ is Var and v not in consts:
            accumulate(v, ct)
    for eqn in reversed(graph.equations):
        prim = eqn.prim
        if prim.multiple_results:
            ct = [ct_env.pop(v, None) for v in eqn.outputs]
            if all(c is None for c in ct):
                continue
        else:
            ct = ct_env.pop(eqn.outputs[0], None)
            if ct is None:
                continue
        args = []
        for a in eqn.inputs:
            if a.__class__ is Var:
                c = consts.get(a, _MISSING)
                args.append(UndefinedPrimal(a.aval) if c is _MISSING else c)
            else:
                args.append(_rule_constant(a.value))
        rule = prim.transpose
        if rule is None:
            raise NotImplementedError(
                f"{prim.name}: no transpose rule is registered, so reverse-mode differentiation "
                f"(grad/vjp) cannot pass through it; see arrayx.transforms.rules.coverage()"
            )
        cts_in = rule(ct, *args, **eqn.params)
        for a, x, c in zip(eqn.inputs, args, cts_in):
            if c is not None and x.__class__ is UndefinedPrimal:
                if c.shape != x.aval.shape:
                    raise ValueError(
                        f"{prim.name}: the transpose rule returned a cotangent of shape {tuple(c.shape)} "
                        f"for an operand of shape {x.aval.shape}"
                    )
                accumulate(a, c)
    return [ct_env.get(v) for v in graph.inputs]


_MISSING = object()


# -- vjp ------------------------------------------------------------------------------------------


def _pullback(fname, lin, in_leaves, in_tree, out_tree, cts, *, instantiate=True):
    """Cotangent leaves of the inputs (zeros for inputs without tangents when ``instantiate``)."""
    ct_leaves, ct_tree = pytree.flatten(cts)
    if ct_tree != out_tree:
        raise TypeError(
            f"{fname}: the cotangent must be structured like the function's output {out_tree}, got {ct_tree}"
        )
    ct_arrays = []
    for o, c in zip(lin.out_primals, ct_leaves):
        c = as_array_leaf(fname, c)
        if c.shape != o.shape:
            raise ValueError(
                f"{fname}: a cotangent of shape {tuple(c.shape)} was given for an output of shape {tuple(o.shape)}"
            )
        if c.dtype != o.dtype and is_differentiable(o):
            c = astype(c, o.dtype)
        ct_arrays.append(c if is_differentiable(o) else None)
    cts_in = iter(backward_pass(lin.graph, ct_arrays))
    out = []
    for p, has in zip(in_leaves, lin.has_tangent):
        c = next(cts_in) if has else None
        if c is None and instantiate:
            c = zeros_like(p)
        out.append(c)
    return out


def vjp(fun: Callable, *primals, has_aux: bool = False):
    """``(fun(*primals), f_vjp)``; ``f_vjp(ct)`` returns a tuple of cotangents, one per primal.

    ``ct`` is structured like ``fun``'s output.  With ``has_aux`` ``fun`` returns
    ``(output, aux)`` and ``vjp`` returns ``(output, f_vjp, aux)``.

    >>> import arrayx as ax
    >>> y, f_vjp = ax.vjp(lambda x: x * x, ax.asarray(3.0))
    >>> float(f_vjp(ax.asarray(1.0))[0])
    6.0
    """
    leaves, in_tree = pytree.flatten(primals)
    leaves = [as_array_leaf("vjp", x) for x in leaves]
    flat = FlatFun(fun, in_tree, has_aux, "vjp")
    lin = linearize_flat(flat, leaves, "vjp")
    out_tree = flat.out_tree

    def f_vjp(ct):
        return pytree.unflatten(in_tree, _pullback("vjp", lin, leaves, in_tree, out_tree, ct))

    out = pytree.unflatten(out_tree, lin.out_primals)
    if has_aux:
        return out, f_vjp, pytree.map(lambda a: lower_leaf(lin.trace, a), flat.aux)
    return out, f_vjp


# -- grad -----------------------------------------------------------------------------------------


def _argnums(fname: str, argnums, nargs: int) -> tuple:
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    if not nums:
        raise ValueError(f"{fname}: argnums must name at least one argument")
    for i in nums:
        if not isinstance(i, int) or isinstance(i, bool):
            raise TypeError(f"{fname}: argnums must be an int or a tuple of ints, got {argnums!r}")
        if not -nargs <= i < nargs:
            raise ValueError(
                f"{fname}: argnums={argnums!r} is out of range for a call with {nargs} positional argument(s)"
            )
    return tuple(i % nargs for i in nums)


def _check_inputs(fname: str, leaves, allow_int: bool, holomorphic: bool) -> None:
    for x in leaves:
        kind = kind_of(x.dtype)
        if holomorphic and kind != "c":
            raise TypeError(f"{fname}(holomorphic=True): inputs must be complex, got {x.dtype}")
        if kind not in "fc" and not allow_int:
            raise TypeError(
                f"{fname}: differentiating with respect to an input of dtype {x.dtype} (shape {tuple(x.shape)}); "
                f"only floating-point and complex inputs have derivatives. Convert it with "
                f"astype(x, arrayx.float64), move it out of argnums, or pass allow_int=True (its gradient is zeros)"
            )


def _split_args(fname, fun, args, kwargs, argnums):
    nums = _argnums(fname, argnums, len(args))
    dyn = tuple(args[i] for i in nums)

    def partial_fun(*dyn_args):
        full = list(args)
        for i, a in zip(nums, dyn_args):
            full[i] = a
        return fun(*full, **kwargs)

    return dyn, partial_fun


def value_and_grad(fun: Callable, argnums=0, has_aux: bool = False, allow_int: bool = False,
                   holomorphic: bool = False) -> Callable:
    """A function returning ``(fun(*args), grad(fun)(*args))`` (``((value, aux), grad)`` with ``has_aux``).

    >>> import arrayx as ax
    >>> v, g = ax.value_and_grad(lambda x: ax.sum(x ** 2))(ax.asarray([1.0, 2.0]))
    >>> float(v), [float(t) for t in g]
    (5.0, [2.0, 4.0])
    """
    fname = "value_and_grad"

    def value_and_grad_f(*args, **kwargs):
        dyn, partial_fun = _split_args(fname, fun, args, kwargs, argnums)
        leaves, in_tree = pytree.flatten(dyn)
        leaves = [as_array_leaf(fname, x) for x in leaves]
        _check_inputs("grad", leaves, allow_int, holomorphic)
        flat = FlatFun(partial_fun, in_tree, has_aux, "grad")
        lin = linearize_flat(flat, leaves, "grad")
        outs = lin.out_primals
        if len(outs) != 1 or outs[0].shape != ():
            shape = tuple(outs[0].shape) if len(outs) == 1 else f"a pytree of {len(outs)} arrays"
            raise TypeError(
                f"grad: the function must return a scalar (a 0-d array), got {shape}; use arrayx.jacrev(f) "
                f"for the Jacobian of a non-scalar function, or reduce the output, e.g. with arrayx.sum(y)"
            )
        y = outs[0]
        if holomorphic:
            if y.dtype.kind != "c":
                raise TypeError(f"grad(holomorphic=True): the output must be complex, got {y.dtype}")
        elif kind_of(y.dtype) != "f":
            raise TypeError(
                f"grad: the function must return a real floating-point scalar, got dtype {y.dtype}"
                + ("; for complex outputs pass holomorphic=True or take real()/abs()" if y.dtype.kind == "c" else "")
            )
        # the seed depends on y's dtype only, so jit's DCE can drop what computed y's value
        cts_in = iter(backward_pass(lin.graph, [ones((), dtype=y.dtype, device=y.device)]))
        cts = []
        for p, has in zip(leaves, lin.has_tangent):
            c = next(cts_in) if has else None
            cts.append(zeros_like(p) if c is None else c)
        g = pytree.unflatten(in_tree, cts)
        if isinstance(argnums, int):
            g = g[0]
        value = pytree.unflatten(flat.out_tree, outs)
        if has_aux:
            return (value, pytree.map(lambda a: lower_leaf(lin.trace, a), flat.aux)), g
        return value, g

    value_and_grad_f.__name__ = f"value_and_grad({getattr(fun, '__name__', 'f')})"
    value_and_grad_f.__wrapped__ = fun
    return value_and_grad_f


def grad(fun: Callable, argnums=0, has_aux: bool = False, allow_int: bool = False,
         holomorphic: bool = False) -> Callable:
    """The gradient of a scalar-valued ``fun`` with respect to argument(s) ``argnums``.

    Arguments may be pytrees of arrays; the gradient has their structure (a tuple of
    them when ``argnums`` is a tuple).  With ``has_aux`` ``fun`` returns ``(value, aux)``
    and the result is ``(grad, aux)``.  Integer/bool inputs raise unless ``allow_int``
    (their gradient is zeros).

    >>> import arrayx as ax
    >>> float(ax.grad(ax.sin)(ax.asarray(0.0)))
    1.0
    """
    vg = value_and_grad(fun, argnums, has_aux, allow_int, holomorphic)

    def grad_f(*args, **kwargs):
        value, g = vg(*args, **kwargs)
        if has_aux:
            return g, value[1]
        return g

    grad_f.__name__ = f"grad({getattr(fun, '__name__', 'f')})"
    grad_f.__wrapped__ = fun
    return grad_f


# -- Jacobians --------------------------------------------------------------------------------------


def _offsets(leaves) -> list:
    sizes = [int(np.prod(x.shape)) for x in leaves]
    return [int(v) for v in np.cumsum([0] + sizes)]


def _basis(leaves, total: int):
    """Per leaf, its part of the rows of the identity of size ``total`` (all leaves concatenated):
    an array of shape ``(total, *leaf.shape)``; with vmap over the rows, one push per basis vector."""
    offsets = _offsets(leaves)
    return [reshape(eye(total, offsets[i + 1] - offsets[i], k=-offsets[i], dtype=x.dtype, device=x.device),
                    (total, *x.shape)) for i, x in enumerate(leaves)]


def _block(stacked, lo: int, hi: int, shape: tuple, *, vectors_last: bool):
    """Rows ``lo:hi`` of ``stacked`` (one per basis vector) as a Jacobian block of shape ``shape``."""
    part = stacked[lo:hi]
    if vectors_last:  # jacfwd: the basis vectors run over the input, which comes last
        part = moveaxis(part, 0, -1)
    return reshape(part, shape)


def jacfwd(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False) -> Callable:
    """The Jacobian of ``fun`` by forward mode: ``jvp`` vmapped over the input basis vectors.

    For an input leaf of shape ``S`` and an output leaf of shape ``T`` the block has
    shape ``T + S``; the result nests the input structure inside the output structure
    (as ``jax.jacfwd``).
    """
    from arrayx.transforms.batching import vmap

    def jacfwd_f(*args, **kwargs):
        dyn, partial_fun = _split_args("jacfwd", fun, args, kwargs, argnums)
        leaves, in_tree = pytree.flatten(dyn)
        leaves = [as_array_leaf("jacfwd", x) for x in leaves]
        _check_inputs("jacfwd", leaves, False, holomorphic)
        flat = FlatFun(partial_fun, in_tree, has_aux, "jacfwd")
        offsets = _offsets(leaves)
        n = offsets[-1]

        def push(*tangents):
            outs, touts, trace = jvp_flat(flat, leaves, list(tangents), "jacfwd")
            aux = [lower_leaf(trace, a) for a in pytree.leaves(flat.aux)] if has_aux else []
            return outs, [zeros_like(o) if t is None else t for o, t in zip(outs, touts)], aux

        if n:
            outs, columns, aux = vmap(push, out_axes=(None, 0, None))(*_basis(leaves, n))
            aux = pytree.unflatten(pytree.flatten(flat.aux)[1], aux) if has_aux else None
        else:  # no input elements: evaluate once for the output shapes
            outs, columns, aux = flat(*leaves), None, flat.aux
        jac = []
        for k, o in enumerate(outs):
            blocks = []
            for i, x in enumerate(leaves):
                shape = tuple(o.shape) + tuple(x.shape)
                if not n or not is_differentiable(o):
                    blocks.append(zeros(shape, dtype=o.dtype if is_differentiable(o) else x.dtype, device=x.device))
                else:
                    blocks.append(_block(columns[k], offsets[i], offsets[i + 1], shape, vectors_last=True))
            jac.append(_by_input(blocks, in_tree, argnums))
        out = pytree.unflatten(flat.out_tree, jac)
        return (out, aux) if has_aux else out

    jacfwd_f.__name__ = f"jacfwd({getattr(fun, '__name__', 'f')})"
    return jacfwd_f


def jacrev(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
           allow_int: bool = False) -> Callable:
    """The Jacobian of ``fun`` by reverse mode: one linearization, its pullback vmapped over the
    output basis vectors.

    Blocks have shape ``output shape + input shape``, nested as in ``jax.jacrev``.
    """
    from arrayx.transforms.batching import vmap

    def jacrev_f(*args, **kwargs):
        dyn, partial_fun = _split_args("jacrev", fun, args, kwargs, argnums)
        leaves, in_tree = pytree.flatten(dyn)
        leaves = [as_array_leaf("jacrev", x) for x in leaves]
        _check_inputs("jacrev", leaves, allow_int, holomorphic)
        flat = FlatFun(partial_fun, in_tree, has_aux, "jacrev")
        lin = linearize_flat(flat, leaves, "jacrev")
        outs = lin.out_primals
        diff = [is_differentiable(o) for o in outs]
        offsets = _offsets(outs)
        m = offsets[-1]

        def pull(*cts):
            it = iter(cts)
            cts_in = iter(backward_pass(lin.graph, [next(it) if d else None for d in diff]))
            out = []
            for p, has in zip(leaves, lin.has_tangent):
                c = next(cts_in) if has else None
                out.append(zeros_like(p) if c is None else c)
            return out

        basis = [b for b, d in zip(_basis(outs, m), diff) if d] if m else []
        rows = vmap(pull)(*basis) if basis else None
        jac = []
        for k, o in enumerate(outs):
            blocks = []
            for i, x in enumerate(leaves):
                shape = tuple(o.shape) + tuple(x.shape)
                if rows is None or not diff[k]:
                    blocks.append(zeros(shape, dtype=o.dtype if diff[k] else x.dtype, device=x.device))
                else:
                    blocks.append(_block(rows[i], offsets[k], offsets[k + 1], shape, vectors_last=False))
            jac.append(_by_input(blocks, in_tree, argnums))
        out = pytree.unflatten(flat.out_tree, jac)
        if has_aux:
            return out, pytree.map(lambda a: lower_leaf(lin.trace, a), flat.aux)
        return out

    jacrev_f.__name__ = f"jacrev({getattr(fun, '__name__', 'f')})"
    return jacrev_f


def _by_input(blocks, in_tree, argnums):
    """One output leaf's blocks, nested like the inputs (unwrapped for a single ``argnums``)."""
    tree = pytree.unflatten(in_tree, blocks)
    return tree[0] if isinstance(argnums, int) else tree


def hessian(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False) -> Callable:
    """The Hessian of a scalar ``fun``: ``jacfwd(jacrev(fun))`` (blocks of shape in.shape + in.shape)."""
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums,
                  has_aux=has_aux, holomorphic=holomorphic)
