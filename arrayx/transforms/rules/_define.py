"""The small helpers every rule module registers its rules with.

A jvp rule has the signature ``jvp(primals, tangents, **params) -> (out, out_tangent)``
where a tangent of ``None`` is a symbolic zero; a transpose rule
``transpose(ct, *args, **params) -> cotangent per arg`` receives the linear operands as
:class:`~arrayx.transforms.transpose.UndefinedPrimal` and returns None for constants.
The helpers below build those from per-operand formulas, so most rules are one line:

- ``defjvp(prim, *per_operand)``: ``per_operand[i](t, out, *args, **params)`` is the
  contribution of operand i's tangent ``t`` (None: operand i is never differentiated,
  or the formula may return None for "no contribution"); contributions are summed.
- ``defjvp_coef(prim, coef)``: unary ``out' = t * coef(out, x)`` (the coefficient is
  computed on primals, so under reverse mode one multiplication is recorded).
- ``defjvp_zero(*prims)``: results have zero derivative (comparisons, argmax, floor...).
- ``deflinear(prim, transpose, linear_argnums=(0,))``: linear in those operands (the
  others are constants such as index arrays): the tangent is the primitive itself
  applied to the tangents.
- ``defbilinear(prim, lhs_transpose, rhs_transpose)``: products (multiply, matmul, ...).
- ``defbroadcasting(prim)``: operands may be smaller than the result (clip bounds,
  at[...] values); per-operand contributions are broadcast to the result's shape.
- ``defabstract(prim, rule)``: shape/dtype rule for staging.

Constants in formulas should be Python scalars, so they take the operand's dtype
(``t * 0.5`` stays float32).  NumPy-scalar operands reach formulas as Python scalars.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from arrayx.api.creation import zeros, zeros_like
from arrayx.api.manipulation import broadcast_to, reshape
from arrayx.api.statistical import sum as _sum
from arrayx.core.primitives import Primitive, primitives
from arrayx.core.tracers import UndefinedPrimal, known_values

__all__ = [
    "defjvp", "defjvp_coef", "defjvp_zero", "deflinear", "defbilinear", "defbroadcasting",
    "defabstract", "count_known_values", "py", "unbroadcast", "zeros_for", "is_undefined",
]

_BROADCASTING: set = set()


def py(v):
    """A NumPy scalar operand as a Python scalar (weakly typed in arrayx arithmetic)."""
    return v.item() if isinstance(v, np.generic) else v


def is_undefined(x) -> bool:
    """Whether ``x`` is a linear operand being transposed (an UndefinedPrimal)."""
    return x.__class__ is UndefinedPrimal


def zeros_for(aval, like):
    """Zeros of ``aval``'s shape and dtype on the device of the array ``like``."""
    return zeros(aval.shape, dtype=aval.dtype, device=like.device)


def unbroadcast(ct, shape: tuple):
    """Sum ``ct`` down to ``shape`` (the transpose of broadcasting ``shape`` to ``ct.shape``)."""
    shape = tuple(shape)
    if tuple(ct.shape) == shape:
        return ct
    lead = ct.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(shape) if d == 1 and ct.shape[lead + i] != 1
    )
    out = _sum(ct, axis=axes, dtype=ct.dtype) if axes else ct
    return reshape(out, shape)


def _broadcast_to_out(c, out):
    if c is None or tuple(c.shape) == tuple(out.shape):
        return c
    return broadcast_to(c, out.shape)


def defjvp(prim: Primitive, *per_operand: Callable | None) -> None:
    """Register a jvp rule summing per-operand contributions (see the module doc)."""
    broadcasting = prim in _BROADCASTING

    def jvp(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        args = [py(p) for p in primals]
        tout = None
        for i, t in enumerate(tangents):
            if t is None:
                continue
            rule = per_operand[i] if i < len(per_operand) else None
            if rule is None:
                raise NotImplementedError(
                    f"{prim.name}: operand {i} has no differentiation rule (it is not differentiable)"
                )
            c = rule(t, out, *args, **params)
            if c is None:
                continue
            if broadcasting:
                c = _broadcast_to_out(c, out)
            tout = c if tout is None else tout + c
        return out, tout

    jvp.__name__ = f"{prim.name}_jvp"
    prim.jvp = jvp


def defjvp_coef(prim: Primitive, coef: Callable) -> None:
    """Unary ``prim`` with derivative ``coef(out, x)``: the tangent is ``t * coef(out, x)``."""

    def jvp(primals, tangents, **params):
        (x,), (t,) = primals, tangents
        out = prim.bind(x, **params)
        return out, t * coef(out, x)

    jvp.__name__ = f"{prim.name}_jvp"
    prim.jvp = jvp


def defjvp_zero(*prims: Primitive) -> None:
    """The results of ``prims`` do not depend differentiably on their operands."""
    for prim in prims:
        def jvp(primals, tangents, _prim=prim, **params):
            return _prim.bind(*primals, **params), None

        jvp.__name__ = f"{prim.name}_jvp_zero"
        prim.jvp = jvp
        prim.transpose = None


def deflinear(prim: Primitive, transpose: Callable, linear_argnums: tuple = (0,)) -> None:
    """``prim`` is linear in ``linear_argnums`` (jointly); the other operands are constants.

    The tangent is ``prim`` applied to the tangents of the linear operands (zeros where
    a tangent is missing), and ``transpose(ct, *args, **params)`` returns one cotangent
    per operand.
    """
    linear = tuple(linear_argnums)

    def jvp(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        if all(tangents[i] is None for i in linear):
            return out, None
        args = list(primals)
        for i in linear:
            t = tangents[i]
            if t is None:
                t = zeros_like(primals[i]) if hasattr(primals[i], "shape") else primals[i] * 0
            args[i] = t
        return out, prim.bind(*args, **params)

    jvp.__name__ = f"{prim.name}_jvp_linear"
    prim.jvp = jvp
    prim.transpose = transpose


def defbilinear(prim: Primitive, lhs_transpose: Callable, rhs_transpose: Callable) -> None:
    """``prim(x, y)`` is linear in each operand separately (a product).

    ``lhs_transpose(ct, x, y, **params)`` is the cotangent of ``x`` (an UndefinedPrimal
    there) for constant ``y``; ``rhs_transpose(ct, x, y, **params)`` that of ``y``.
    """

    def jvp(primals, tangents, **params):
        x, y = primals
        tx, ty = tangents
        out = prim.bind(x, y, **params)
        tout = None
        if tx is not None:
            tout = prim.bind(tx, y, **params)
        if ty is not None:
            c = prim.bind(x, ty, **params)
            tout = c if tout is None else tout + c
        return out, tout

    def transpose(ct, x, y, **params):
        ux, uy = is_undefined(x), is_undefined(y)
        if ux and uy:
            raise ValueError(f"{prim.name}: cannot transpose a product of two linear operands (not linear)")
        return (lhs_transpose(ct, x, py(y), **params) if ux else None,
                rhs_transpose(ct, py(x), y, **params) if uy else None)

    jvp.__name__ = f"{prim.name}_jvp_bilinear"
    transpose.__name__ = f"{prim.name}_transpose"
    prim.jvp = jvp
    prim.transpose = transpose


def defbroadcasting(*prims: Primitive) -> None:
    """Operands of ``prims`` may broadcast against each other: contributions are broadcast
    to the result's shape (call before ``defjvp``)."""
    _BROADCASTING.update(prims)


def defabstract(prim: Primitive, rule: Callable, *, data_dependent: str | None = None) -> None:
    """Register ``rule(*args, **params) -> ShapeDtypeStruct | tuple`` as ``prim``'s abstract eval.

    ``data_dependent`` marks a primitive whose result size depends on operand values; it
    is the alternative the error names when those values are traced (the rule reads them
    with :func:`count_known_values`).
    """
    prim.abstract_eval = rule
    prim.data_dependent = data_dependent


def count_known_values(x, prim_name: str):
    """Host values of ``x`` for a data-dependent rule (DataDependentShapeError when traced)."""
    return known_values(x, primitives[prim_name])
