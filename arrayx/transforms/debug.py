"""``check_grads``: numerical checks of forward- and reverse-mode derivatives.

Both modes are compared with central finite differences along a random direction t:
forward mode as ``jvp(f)(x, t) == (f(x + eps t) - f(x - eps t)) / 2 eps``, reverse mode
through ``<ct, J t> == <J^T ct, t>`` with ``J t`` from those differences (JAX's check), so a
hand-written backward pass (``custom_vjp``, which has no forward mode) is checked on its own.
For ``order`` > 1 the same checks run on the derivative functions themselves.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from arrayx import pytree
from arrayx.api._array import Array
from arrayx.api._dtypes import kind_of
from arrayx.api.creation import asarray
from arrayx.transforms.forward import jvp
from arrayx.transforms.transpose import vjp

__all__ = ["check_grads", "check_jvp", "check_vjp"]

_EPS = {np.dtype("float32"): 3e-3, np.dtype("float64"): 1e-4,
        np.dtype("complex64"): 3e-3, np.dtype("complex128"): 1e-4}
_TOL = {np.dtype("float32"): 2e-2, np.dtype("float64"): 1e-5,
        np.dtype("complex64"): 2e-2, np.dtype("complex128"): 1e-5}


def _host(x) -> np.ndarray:
    return np.asarray(x)


def _leaves(tree) -> list:
    return pytree.leaves(tree)


def _random_like(rng, x):
    shape = tuple(x.shape)
    v = rng.standard_normal(shape)
    if x.dtype.kind == "c":
        v = v + 1j * rng.standard_normal(shape)
    return asarray(np.asarray(v, dtype=x.dtype), device=x.device)


def _tolerance(leaves, value, table):
    if value is not None:
        return value
    dts = [np.dtype(x.dtype) for x in leaves if isinstance(x, Array) and kind_of(x.dtype) in "fc"]
    return max((table.get(d, 1e-5) for d in dts), default=1e-5)


def _inner(xs, ys) -> complex:
    total = 0.0
    for x, y in zip(xs, ys):
        total = total + np.sum(_host(x).astype(np.complex128) * _host(y).astype(np.complex128))
    return total


def _number(v: complex):
    return v.real if v.imag == 0 else v


def _assert_close(what, actual, expected, atol, rtol):
    for a, e in zip(actual, expected):
        a, e = _host(a), _host(e)
        if not np.allclose(a, e, atol=atol, rtol=rtol, equal_nan=True):
            err = np.max(np.abs(a.astype(np.complex128) - e.astype(np.complex128))) if a.size else 0.0
            raise AssertionError(
                f"check_grads: {what} differ (max abs error {err:.3g}, atol={atol}, rtol={rtol}):\n"
                f"  got      {a!r}\n  expected {e!r}"
            )


def _axpy(a, xs, ys):
    """xs + a * ys leafwise (a Python scalar)."""
    return [x + a * y if kind_of(x.dtype) in "fc" else x for x, y in zip(xs, ys)]


def _numerical_jvp(f: Callable, leaves: list, tree, tangents: list, eps: float) -> list:
    """Central finite differences of ``f`` at ``leaves`` along ``tangents`` (host arrays)."""
    plus = f(*pytree.unflatten(tree, _axpy(eps, leaves, tangents)))
    minus = f(*pytree.unflatten(tree, _axpy(-eps, leaves, tangents)))
    return [(_host(p) - _host(m)) / (2 * eps) for p, m in zip(_leaves(plus), _leaves(minus))]


def check_jvp(f: Callable, args: Sequence, *, atol=None, rtol=None, eps=None, rng=None) -> None:
    """``jvp(f)`` equals central finite differences of ``f`` along a random tangent."""
    rng = rng or np.random.default_rng(0)
    leaves, tree = pytree.flatten(tuple(args))
    eps = _tolerance(leaves, eps, _EPS)
    atol = _tolerance(leaves, atol, _TOL)
    rtol = _tolerance(leaves, rtol, _TOL)
    tangents = [_random_like(rng, x) for x in leaves]
    _, tout = jvp(f, tuple(args), pytree.unflatten(tree, tangents))
    numeric = _numerical_jvp(f, leaves, tree, tangents, eps)
    _assert_close("jvp and finite differences", _leaves(tout), numeric, atol, rtol)


def check_vjp(f: Callable, args: Sequence, *, atol=None, rtol=None, eps=None, rng=None) -> None:
    """``vjp(f)`` agrees with finite differences: <ct, J t> == <J^T ct, t> for random t and ct,
    with ``J t`` from central differences (no forward mode needed: custom_vjp functions qualify)."""
    rng = rng or np.random.default_rng(1)
    leaves, tree = pytree.flatten(tuple(args))
    eps = _tolerance(leaves, eps, _EPS)
    atol = _tolerance(leaves, atol, _TOL)
    rtol = _tolerance(leaves, rtol, _TOL)
    tangents = [_random_like(rng, x) for x in leaves]
    out, f_vjp = vjp(f, *args)
    out_leaves, out_tree = pytree.flatten(out)
    cts = [_random_like(rng, o) for o in out_leaves]
    ct_in = _leaves(f_vjp(pytree.unflatten(out_tree, cts)))
    lhs = _inner(cts, _numerical_jvp(f, leaves, tree, tangents, eps))
    rhs = _inner([c for c, x in zip(ct_in, leaves) if kind_of(x.dtype) in "fc"],
                 [t for t, x in zip(tangents, leaves) if kind_of(x.dtype) in "fc"])
    scale = max(1.0, abs(lhs), abs(rhs))
    if not abs(lhs - rhs) <= atol * scale + rtol * abs(rhs):
        raise AssertionError(
            f"check_grads: vjp and finite differences disagree: <ct, J t> = {_number(lhs)} (finite "
            f"differences) but <J^T ct, t> = {_number(rhs)} (vjp) (atol={atol}, rtol={rtol}, eps={eps})"
        )


def check_grads(f: Callable, args: Sequence, order: int, modes=None, atol=None, rtol=None,
                eps=None) -> None:
    """Check ``f``'s derivatives up to ``order`` numerically (AssertionError on a mismatch).

    ``modes``: ``"fwd"`` checks ``jvp`` and ``"rev"`` checks ``vjp``, both against central
    finite differences; for ``order`` > 1 both are repeated on the derivative functions
    (``t -> jvp(f, x, t)`` and ``x -> vjp(f, x)(ct)``).  The default (None) is both modes
    where ``f`` has them: a ``custom_vjp`` function has no forward mode, so only its vjp is
    checked; asking for ``"fwd"`` on one raises the forward-mode error.

    >>> import arrayx as ax
    >>> ax.check_grads(ax.sin, (ax.asarray([0.1, 0.2]),), order=2)
    """
    from arrayx.transforms.custom import NoForwardModeError

    explicit = modes is not None
    modes = ("fwd", "rev") if modes is None else (modes,) if isinstance(modes, str) else tuple(modes)
    for m in modes:
        if m not in ("fwd", "rev"):
            raise ValueError(f"check_grads: modes must contain 'fwd' and/or 'rev', got {m!r}")
    args = tuple(args)
    rng = np.random.default_rng(42)

    def check(fun, fargs, order_left):
        leaves, tree = pytree.flatten(fargs)
        if "fwd" in modes:
            try:
                check_jvp(fun, fargs, atol=atol, rtol=rtol, eps=eps, rng=rng)
                has_fwd = True
            except NoForwardModeError:
                if explicit:
                    raise
                has_fwd = False  # a custom_vjp function: reverse mode is all it defines
            if has_fwd and order_left > 1:
                tangents = pytree.unflatten(tree, [_random_like(rng, x) for x in leaves])

                def fun_jvp(*primals):
                    return jvp(fun, primals, tangents)[1]

                check(fun_jvp, fargs, order_left - 1)
        if "rev" in modes:
            check_vjp(fun, fargs, atol=atol, rtol=rtol, eps=eps, rng=rng)
            if order_left > 1:
                out = fun(*fargs)
                o_leaves, o_tree = pytree.flatten(out)
                cts = pytree.unflatten(o_tree, [_random_like(rng, o) for o in o_leaves])

                def fun_vjp(*primals):
                    return vjp(fun, *primals)[1](cts)

                check(fun_vjp, fargs, order_left - 1)

    check(f, args, order)
