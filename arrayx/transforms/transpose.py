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
from arrayx.api.creation import eye, ones_like, zeros, zeros_like
from arrayx.api.data_types import astype
from arrayx.api.manipulation import reshape, stack
from arrayx.transforms._tracer import UndefinedPrimal
from arrayx.transforms.graph import Graph, Var
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
        kind = x.dtype.kind
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
        elif y.dtype.kind != "f":
            raise TypeError(
                f"grad: the function must return a real floating-point scalar, got dtype {y.dtype}"
                + ("; for complex outputs pass holomorphic=True or take real()/abs()" if y.dtype.kind == "c" else "")
            )
        cts_in = iter(backward_pass(lin.graph, [ones_like(y)]))
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


def _std_basis(leaves):
    """Rows of the identity over the concatenated leaves: a list of per-leaf one-hot tangents."""
    sizes = [int(np.prod(x.shape)) for x in leaves]
    total = sum(sizes)
    if total == 0:
        return []
    dtype = leaves[0].dtype
    basis = []
    for k, (x, n) in enumerate(zip(leaves, sizes)):
        rows = eye(n, dtype=x.dtype, device=x.device)
        for i in range(n):
            tangents = []
            for j, (y, m) in enumerate(zip(leaves, sizes)):
                tangents.append(reshape(rows[i], y.shape) if j == k else None)
            basis.append(tangents)
    return basis


def jacfwd(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False) -> Callable:
    """The Jacobian of ``fun`` by forward mode: one ``jvp`` per input element.

    For an input leaf of shape ``S`` and an output leaf of shape ``T`` the block has
    shape ``T + S``; the result nests the input structure inside the output structure
    (as ``jax.jacfwd``).
    """
    def jacfwd_f(*args, **kwargs):
        dyn, partial_fun = _split_args("jacfwd", fun, args, kwargs, argnums)
        leaves, in_tree = pytree.flatten(dyn)
        leaves = [as_array_leaf("jacfwd", x) for x in leaves]
        _check_inputs("jacfwd", leaves, False, holomorphic)
        flat = FlatFun(partial_fun, in_tree, has_aux, "jacfwd")
        columns = []  # columns[k][o]: tangent of output o for basis vector k
        outs = None
        aux = None
        for tangents in _std_basis(leaves):
            outs, touts, trace = jvp_flat(flat, leaves, tangents, "jacfwd")
            columns.append(touts)
            if has_aux:
                aux = pytree.map(lambda a: lower_leaf(trace, a), flat.aux)
        if outs is None:  # no input elements: evaluate once for the output shapes
            outs = flat(*leaves)
            aux = flat.aux
        jac = _assemble(columns, outs, leaves, in_tree, argnums, outputs_first=False)
        out = pytree.unflatten(flat.out_tree, jac)
        return (out, aux) if has_aux else out

    jacfwd_f.__name__ = f"jacfwd({getattr(fun, '__name__', 'f')})"
    return jacfwd_f


def jacrev(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
           allow_int: bool = False) -> Callable:
    """The Jacobian of ``fun`` by reverse mode: one linearization, one pullback per output element.

    Blocks have shape ``output shape + input shape``, nested as in ``jax.jacrev``.
    """
    def jacrev_f(*args, **kwargs):
        dyn, partial_fun = _split_args("jacrev", fun, args, kwargs, argnums)
        leaves, in_tree = pytree.flatten(dyn)
        leaves = [as_array_leaf("jacrev", x) for x in leaves]
        _check_inputs("jacrev", leaves, allow_int, holomorphic)
        flat = FlatFun(partial_fun, in_tree, has_aux, "jacrev")
        lin = linearize_flat(flat, leaves, "jacrev")
        outs = lin.out_primals
        rows = []  # rows[k][i]: cotangent of input i for output basis vector k
        for cts in _std_basis(outs):
            cts = [c if c is not None else zeros_like(o) for c, o in zip(cts, outs)]
            rows.append(_pullback("jacrev", lin, leaves, in_tree, flat.out_tree,
                                  pytree.unflatten(flat.out_tree, cts)))
        jac = _assemble(rows, outs, leaves, in_tree, argnums, outputs_first=True)
        out = pytree.unflatten(flat.out_tree, jac)
        if has_aux:
            return out, pytree.map(lambda a: lower_leaf(lin.trace, a), flat.aux)
        return out

    jacrev_f.__name__ = f"jacrev({getattr(fun, '__name__', 'f')})"
    return jacrev_f


def _assemble(vectors, outs, ins, in_tree, argnums, *, outputs_first: bool):
    """Per output leaf, the pytree (like the inputs) of Jacobian blocks of shape out.shape + in.shape.

    ``vectors[k]`` is, for jacfwd (``outputs_first=False``), the output tangents for the
    k-th input basis vector; for jacrev, the input cotangents for the k-th output one.
    """
    in_sizes = [int(np.prod(x.shape)) for x in ins]
    out_sizes = [int(np.prod(o.shape)) for o in outs]
    in_offsets = np.cumsum([0] + in_sizes)
    out_offsets = np.cumsum([0] + out_sizes)
    result = []
    for o_idx, o in enumerate(outs):
        blocks = []
        for i_idx, x in enumerate(ins):
            dtype = o.dtype if is_differentiable(o) else x.dtype
            shape = tuple(o.shape) + tuple(x.shape)
            if outputs_first:
                ks = range(out_offsets[o_idx], out_offsets[o_idx + 1])
                parts = [vectors[k][i_idx] for k in ks]
                if not parts:
                    block = zeros(shape, dtype=dtype, device=x.device)
                else:
                    parts = [p if p is not None else zeros_like(x) for p in parts]
                    block = reshape(stack(parts), shape)
            else:
                ks = range(in_offsets[i_idx], in_offsets[i_idx + 1])
                parts = [vectors[k][o_idx] for k in ks]
                if not parts:
                    block = zeros(shape, dtype=dtype, device=x.device)
                else:
                    parts = [p if p is not None else zeros_like(o) for p in parts]
                    stacked = stack(parts, axis=-1) if o.ndim else stack(parts)
                    block = reshape(stacked, shape)
            blocks.append(block)
        tree = pytree.unflatten(in_tree, blocks)
        if isinstance(argnums, int):
            tree = tree[0]
        result.append(tree)
    return result


def hessian(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False) -> Callable:
    """The Hessian of a scalar ``fun``: ``jacfwd(jacrev(fun))`` (blocks of shape in.shape + in.shape)."""
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums,
                  has_aux=has_aux, holomorphic=holomorphic)
