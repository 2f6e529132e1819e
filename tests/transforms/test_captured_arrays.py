"""Transforms never damage arrays created outside them.

In-place code inside a transform (``buf[i] = t``, ``buf += t``) is functionalised: the
function sees the update, and when the transform returns every array it rebound has its old
value back (never a dead tracer).  Converting a traced value to a Python number under grad
raises (it would silently drop the gradient); ``bool()`` and ``__index__`` stay allowed.
"""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as ax
from tests.conftest import assert_same


def _captured_sum():
    buf = ax.zeros(3)

    def f(t):
        buf[0] = t
        buf[1] += 2.0 * t
        buf[2] = 4.0  # a concrete update under the transform is undone too
        return ax.sum(buf * buf)  # t^2 + 4 t^2 + 16

    return buf, f


def _untouched(buf) -> None:
    assert type(buf) is ax.Array
    assert_same(buf, np.zeros(3))
    assert_same(buf + 1.0, np.ones(3))  # usable in eager code afterwards


TRANSFORMS = {
    "grad": (lambda f, t: ax.grad(f)(t), 10 * 1.5),
    "value_and_grad": (lambda f, t: ax.value_and_grad(f)(t)[1], 10 * 1.5),
    "jvp": (lambda f, t: ax.jvp(f, (t,), (ax.asarray(1.0),))[1], 10 * 1.5),
    "vjp": (lambda f, t: ax.vjp(f, t)[1](ax.asarray(1.0))[0], 10 * 1.5),
    "linearize": (lambda f, t: ax.linearize(f, t)[1](ax.asarray(1.0)), 10 * 1.5),
    "jacrev": (lambda f, t: ax.jacrev(f)(t), 10 * 1.5),
    "hessian": (lambda f, t: ax.hessian(f)(t), 10.0),
    "grad of grad": (lambda f, t: ax.grad(ax.grad(f))(t), 10.0),
    "jit": (lambda f, t: ax.jit(f)(t), 5 * 1.5**2 + 16),
    "grad of jit": (lambda f, t: ax.grad(ax.jit(f))(t), 10 * 1.5),
    "vmap": (lambda f, t: ax.vmap(f)(ax.stack([t, t]))[1], 5 * 1.5**2 + 16),
}
# Not yet: checkpoint evaluates its body's primal eagerly (no trace), where in-place code writes
# into captured buffers for real, so the recomputation in the backward pass sees those writes.


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_captured_array_updated_in_place_comes_back(name: str, executor: str) -> None:
    run, want = TRANSFORMS[name]
    buf, f = _captured_sum()
    got = run(f, ax.asarray(1.5))
    np.testing.assert_allclose(float(got), want, rtol=1e-12)
    _untouched(buf)
    np.testing.assert_allclose(float(run(f, ax.asarray(1.5))), want, rtol=1e-12)  # and again
    _untouched(buf)


def test_captured_array_under_staging(executor: str) -> None:
    buf, f = _captured_sum()
    graph = ax.make_graph(f)(ax.asarray(1.5))
    assert "slice_update" in str(graph)  # the in-place write was staged as a functional update
    _untouched(buf)
    assert ax.eval_shape(f, ax.ShapeDtypeStruct((), ax.float64)) == ax.ShapeDtypeStruct((), ax.float64)
    _untouched(buf)


def test_returning_the_updated_captured_array(executor: str) -> None:
    buf = ax.zeros(3)

    def g(t):
        buf[1] = t
        buf[...] *= 2.0  # (buf *= 2.0 would make buf a local name)
        return buf

    assert_same(ax.jacfwd(g)(ax.asarray(1.5)), np.array([0.0, 2.0, 0.0]))
    _untouched(buf)
    assert_same(ax.jit(g)(ax.asarray(1.5)), np.array([0.0, 3.0, 0.0]))
    _untouched(buf)
    y, dy = ax.jvp(g, (ax.asarray(1.5),), (ax.asarray(1.0),))
    assert_same(y, np.array([0.0, 3.0, 0.0]))
    assert_same(dy, np.array([0.0, 2.0, 0.0]))
    _untouched(buf)


def test_array_of_an_outer_transform_updated_inside_an_inner_one(executor: str) -> None:
    def outer(s):
        acc = ax.zeros(2) + s  # a tracer of the outer grad

        def inner(t):
            acc[0] = t * s
            return ax.sum(acc * t)

        g = ax.grad(inner)(s)  # d/dt (t s t + s t) = 2 t s + s at t = s
        return g + ax.sum(acc)  # acc is the outer tracer again: s + s

    np.testing.assert_allclose(float(ax.grad(outer)(ax.asarray(1.5))), 4 * 1.5 + 1 + 2, rtol=1e-12)


def test_an_exception_inside_the_transform_restores_too(executor: str) -> None:
    buf = ax.zeros(3)

    def f(t):
        buf[0] = t
        raise RuntimeError("user error")

    with pytest.raises(RuntimeError, match="user error"):
        ax.grad(f)(ax.asarray(1.0))
    _untouched(buf)


def test_arrays_updated_in_place_inside_the_function_still_differentiate(executor: str) -> None:
    def f(x):
        y = ax.zeros(3)
        y[0] = x
        y[1:] += x * x
        y **= 2.0
        return ax.sum(y)  # x^2 + 2 x^4

    np.testing.assert_allclose(float(ax.grad(f)(ax.asarray(1.5))), 2 * 1.5 + 8 * 1.5**3, rtol=1e-12)


# -- Python numbers from traced values --------------------------------------------------------------


@pytest.mark.parametrize("convert", [float, int, complex])
def test_python_number_of_a_traced_value_raises_under_grad(convert, executor: str) -> None:
    with pytest.raises(TypeError, match=rf"{convert.__name__}\(\): cannot convert a traced value "
                                        r"\(a JVPTracer of grad\).*zero gradient.*arrayx.stop_gradient"):
        ax.grad(lambda t: t * convert(t))(ax.asarray(2.0))
    with pytest.raises(TypeError, match=r"JVPTracer of jvp"):
        ax.jvp(lambda t: t * convert(t), (ax.asarray(2.0),), (ax.asarray(1.0),))
    # the same message as NumPy's conversion
    with pytest.raises(TypeError, match=r"numpy.asarray\(\): cannot convert a traced value.*stop_gradient"):
        ax.grad(lambda t: t * float(np.asarray(t)))(ax.asarray(2.0))


def test_stop_gradient_gives_the_value(executor: str) -> None:
    g = ax.grad(lambda t: t * float(ax.stop_gradient(t)))(ax.asarray(2.0))
    assert float(g) == 2.0  # d/dt (t * 2), the value treated as a constant
    g = ax.grad(lambda t: t * int(ax.stop_gradient(t)))(ax.asarray(3.0))
    assert float(g) == 3.0


def test_bool_and_index_stay_allowed_under_grad(executor: str) -> None:
    def f(x, n):
        k = n[0]  # an integer value: indices are not differentiated
        return x[k] ** 3 if x[k] > 0 else -x[k]

    x = ax.asarray([1.0, 2.0, -3.0])
    assert_same(ax.grad(f)(x, ax.asarray([1])), np.array([0.0, 12.0, 0.0]))
    assert_same(ax.grad(f)(x, ax.asarray([2])), np.array([0.0, 0.0, -1.0]))
    assert_same(ax.grad(lambda x: x[ax.argmax(x)] * 2.0)(x), np.array([0.0, 2.0, 0.0]))


def test_format_of_a_traced_value(executor: str) -> None:
    seen = []

    def f(t):
        seen.append(f"{t}")
        with pytest.raises(TypeError, match=r"float\(\): cannot convert a traced value"):
            f"{t:.2f}"
        seen.append(f"{ax.stop_gradient(t):.2f}")
        return t * t

    ax.grad(f)(ax.asarray(1.25))
    assert seen[0].startswith("JVPTracer<f64[]>(grad") and seen[1] == "1.25"
    with pytest.raises(TypeError, match="cond"):
        ax.make_graph(lambda t: f"{t:.1f}")(ax.asarray(1.0))
