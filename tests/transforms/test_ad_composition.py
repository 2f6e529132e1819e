"""Composition of transforms: higher order, nesting with closures, custom rules, checkpoint,
in-place code, pytrees, Jacobians; every test runs on every executor (``executor`` fixture)
and compares with closed forms or with the NumPy executor."""
from __future__ import annotations

import math

import numpy as np
import pytest

import arrayx as ax

from tests.conftest import on_numpy


def close(a, b, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def vec(*values):
    return ax.asarray(np.asarray(values, dtype=np.float64))


# -- higher order ----------------------------------------------------------------------------------


def test_grad_of_grad(executor):
    x = ax.asarray(0.7)
    close(ax.grad(ax.grad(ax.sin))(x), -math.sin(0.7))
    close(ax.grad(ax.grad(ax.grad(lambda x: x ** 4)))(x), 24 * 0.7)


def test_jvp_of_vjp_is_a_hessian_vector_product(executor):
    def f(x):
        return ax.sum(ax.sin(x) * x ** 2)

    x = vec(0.3, -1.2, 2.0)
    v = vec(1.0, 0.5, -2.0)

    def g(x):
        return ax.vjp(f, x)[1](ax.asarray(1.0))[0]

    _, hv = ax.jvp(g, (x,), (v,))
    xn, vn = np.asarray(x), np.asarray(v)
    d2 = -np.sin(xn) * xn ** 2 + 4 * xn * np.cos(xn) + 2 * np.sin(xn)  # f is separable: H is diagonal
    close(hv, d2 * vn)
    close(ax.hessian(f)(x), np.diag(d2))
    close(ax.jacrev(ax.jacrev(f))(x), np.diag(d2))
    close(ax.jacfwd(ax.jacfwd(f))(x), np.diag(d2))


def test_linearize_matches_jvp(executor):
    def f(x, y):
        return ax.tanh(x * y) + ax.exp(x)

    x, y = vec(0.1, 0.2), vec(1.5, -0.5)
    out, f_jvp = ax.linearize(f, x, y)
    tx, ty = vec(1.0, 2.0), vec(-1.0, 0.5)
    out2, t2 = ax.jvp(f, (x, y), (tx, ty))
    close(out, out2)
    close(f_jvp(tx, ty), t2)
    close(f_jvp(tx * 2.0, ty * 2.0), np.asarray(t2) * 2)


# -- nesting, closures and perturbation confusion ----------------------------------------------------


def test_perturbation_confusion(executor):
    # d/dx [ x * d/dy (x + y) ] = d/dx [ x ] = 1; confusing the two perturbations gives 2
    def f(x):
        return x * ax.grad(lambda y: x + y)(x)

    close(ax.grad(f)(ax.asarray(3.0)), 1.0)

    # the same with forward mode inside reverse mode and the other way round
    def g(x):
        return x * ax.jvp(lambda y: x * y, (x,), (ax.ones_like(x),))[1]

    close(ax.grad(g)(ax.asarray(3.0)), 6.0)  # g(x) = x * x
    close(ax.jvp(lambda x: x * ax.grad(lambda y: x * y)(x), (ax.asarray(2.0),), (ax.asarray(1.0),))[1], 4.0)


def test_closure_over_outer_tracer(executor):
    def outer(a):
        def inner(b):
            return ax.sum(a * ax.sin(b))

        return ax.sum(ax.grad(inner)(a * 2.0))  # sum(a * cos(2a))

    a = vec(0.3, 0.4)
    an = np.asarray(a)
    close(ax.grad(outer)(a), np.cos(2 * an) - 2 * an * np.sin(2 * an))


def test_value_and_grad_has_aux_argnums_pytrees(executor):
    def loss(params, x, scale):
        w, b = params["w"], params["b"]
        pred = x @ w + b
        return ax.sum(pred ** 2) * scale, {"pred": pred}

    params = {"w": vec(0.5, -1.0), "b": ax.asarray(0.25)}
    x = ax.asarray(np.array([[1.0, 2.0], [3.0, -1.0]]))
    (value, aux), grads = ax.value_and_grad(loss, argnums=(0, 2), has_aux=True)(params, x, ax.asarray(2.0))
    pred = np.asarray(x) @ np.array([0.5, -1.0]) + 0.25
    close(value, 2 * np.sum(pred ** 2))
    close(aux["pred"], pred)
    g_params, g_scale = grads
    close(g_params["w"], 2 * 2 * np.asarray(x).T @ pred)
    close(g_params["b"], 2 * 2 * np.sum(pred))
    close(g_scale, np.sum(pred ** 2))
    assert isinstance(aux["pred"], ax.Array) and type(aux["pred"]) is ax.Array  # aux leaves are lowered


def test_vjp_pytree_output_and_jacobians(executor):
    def f(x):
        return {"a": ax.sin(x), "b": ax.sum(x) * x[0]}

    x = vec(0.5, 1.0, -1.0)
    out, f_vjp = ax.vjp(f, x)
    (ct,) = f_vjp({"a": vec(1.0, 0.0, 2.0), "b": ax.asarray(3.0)})
    xn = np.asarray(x)
    expected = np.array([1.0, 0.0, 2.0]) * np.cos(xn) + 3.0 * (np.array([xn.sum(), 0, 0]) + xn[0])
    close(ct, expected)
    jf, jr = ax.jacfwd(f)(x), ax.jacrev(f)(x)
    close(jf["a"], np.diag(np.cos(xn)))
    close(jr["a"], np.diag(np.cos(xn)))
    close(jf["b"], jr["b"])
    assert tuple(jf["b"].shape) == (3,)


def test_mlp_gradient_matches_numpy_executor(executor):
    rng = np.random.default_rng(3)
    params = [(rng.standard_normal((4, 5)), rng.standard_normal(5)), (rng.standard_normal((5, 3)), rng.standard_normal(3))]
    X, labels = rng.standard_normal((6, 4)), np.eye(3)[rng.integers(0, 3, 6)]

    def loss(params, X, labels):
        h = X
        for i, (w, b) in enumerate(params):
            h = h @ w + b
            if i == 0:
                h = ax.tanh(h)
        logp = h - ax.log(ax.sum(ax.exp(h - ax.max(h, axis=1, keepdims=True)), axis=1, keepdims=True)) \
            - ax.max(h, axis=1, keepdims=True)
        return -ax.mean(ax.sum(logp * labels, axis=1))

    def run(params, X, labels):
        return ax.grad(loss)(params, X, labels)

    p = [(ax.asarray(w), ax.asarray(b)) for w, b in params]
    got = run(p, ax.asarray(X), ax.asarray(labels))
    with ax.use_executor("numpy"):
        want = run([(ax.asarray(w), ax.asarray(b)) for w, b in params], ax.asarray(X), ax.asarray(labels))
    for (gw, gb), (ew, eb) in zip(got, want):
        assert gw.executor == executor
        close(gw, ew, rtol=1e-9)
        close(gb, eb, rtol=1e-9)


# -- custom rules, stop_gradient, checkpoint -------------------------------------------------------------


def test_stop_gradient(executor):
    x = ax.asarray(3.0)
    close(ax.grad(lambda x: x * ax.stop_gradient(x))(x), 3.0)
    close(ax.grad(lambda x: ax.sum(ax.stop_gradient({"a": x})["a"] + x))(x), 1.0)
    close(ax.grad(ax.grad(lambda x: x ** 2 * ax.stop_gradient(x ** 2)))(x), 18.0)


def test_custom_vjp_clips_gradient(executor):
    @ax.custom_vjp
    def clip_gradient(x, lo, hi):
        return x

    def fwd(x, lo, hi):
        return x, (lo, hi)

    def bwd(res, g):
        lo, hi = res
        return (ax.clip(g, lo, hi), None, None)

    clip_gradient.defvjp(fwd, bwd)
    x = vec(1.0, 2.0)
    f = lambda x: ax.sum(10.0 * clip_gradient(x * x, -1.0, 1.0))  # noqa: E731
    close(f(x), 50.0)
    close(ax.grad(f)(x), [2.0, 4.0])  # d(x*x)/dx times the clipped cotangent 1
    close(ax.grad(lambda x: ax.sum(ax.sin(clip_gradient(x, -0.5, 0.5))))(x), np.clip(np.cos([1.0, 2.0]), -0.5, 0.5))
    with pytest.raises(TypeError, match="forward-mode"):
        ax.jvp(f, (x,), (x,))


def _sin_times_x(bwd):
    f = ax.custom_vjp(lambda x: ax.sin(x) * x)
    f.defvjp(lambda x: (f(x), x), bwd)
    return f


def test_check_grads_checks_a_custom_vjp_against_finite_differences(executor):
    x = vec(0.3, 1.2, -0.7)
    right = _sin_times_x(lambda x, g: (g * (ax.cos(x) * x + ax.sin(x)),))
    ax.check_grads(right, (x,), order=1)  # default modes: the vjp (it has no forward mode)
    ax.check_grads(right, (x,), order=2, modes=("rev",))  # bwd differentiated by reverse mode
    ax.check_grads(lambda x: ax.exp(right(x)) * x, (x,), order=1)  # inside other code
    wrong = _sin_times_x(lambda x, g: (g * ax.cos(x) * x,))  # forgets the product rule's sin(x)
    with pytest.raises(AssertionError, match=r"vjp and finite differences disagree"):
        ax.check_grads(wrong, (x,), order=1)
    with pytest.raises(AssertionError, match=r"vjp and finite differences disagree"):
        ax.check_grads(wrong, (x,), order=1, modes="rev")
    with pytest.raises(TypeError, match="forward-mode"):  # asked for explicitly: as JAX, refused
        ax.check_grads(right, (x,), order=1, modes=("fwd", "rev"))


def test_check_grads_rev_finds_a_wrong_custom_jvp(executor):
    f = ax.custom_jvp(lambda x: ax.sin(x))
    f.defjvp(lambda primals, tangents: (ax.sin(primals[0]), 2.0 * ax.cos(primals[0]) * tangents[0]))
    x = vec(0.3, 1.2)
    for modes in ("fwd", "rev"):  # reverse mode is no longer checked against forward mode alone
        with pytest.raises(AssertionError, match="finite differences"):
            ax.check_grads(f, (x,), order=1, modes=modes)


def test_custom_vjp_nondiff_argnums_and_second_order(executor):
    def f_impl(n, x):
        return x ** n

    f = ax.custom_vjp(f_impl, nondiff_argnums=(0,))
    f.defvjp(lambda n, x: (x ** n, x), lambda n, x, g: (g * n * x ** (n - 1),))
    x = ax.asarray(1.5)
    close(ax.grad(lambda x: f(3, x))(x), 3 * 1.5 ** 2)
    close(ax.grad(ax.grad(lambda x: f(3, x)))(x), 6 * 1.5)  # bwd is differentiated by reverse mode


def test_custom_jvp(executor):
    @ax.custom_jvp
    def log1pexp(x):
        return ax.log(1.0 + ax.exp(x))

    @log1pexp.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        return log1pexp(x), t * (1.0 - 1.0 / (1.0 + ax.exp(x)))

    x = vec(0.0, 100.0, -3.0)
    close(ax.grad(lambda x: ax.sum(log1pexp(x)))(x), 1.0 / (1.0 + np.exp(-np.asarray(x))))
    _, t = ax.jvp(log1pexp, (x,), (ax.ones_like(x),))
    close(t, 1.0 / (1.0 + np.exp(-np.asarray(x))))

    @ax.custom_jvp
    def f(x, y):
        return x * y

    f.defjvps(lambda t, out, x, y: t * 2.0, None)  # deliberately "wrong": d/dx = 2, d/dy = 0
    close(ax.grad(f, argnums=(0, 1))(ax.asarray(3.0), ax.asarray(4.0)), [2.0, 0.0])


def test_checkpoint_recomputes_in_backward_pass(executor):
    calls = []

    def block(x):
        calls.append(1)
        return ax.sin(ax.sin(x))

    f = ax.checkpoint(block)
    x = vec(0.5, 1.0)
    xn = np.asarray(x)
    expected = np.cos(np.sin(xn)) * np.cos(xn)
    g = ax.grad(lambda x: ax.sum(f(x)))(x)
    close(g, expected)
    assert len(calls) == 2  # once forward, once recomputed when transposing
    calls.clear()
    close(ax.grad(lambda x: ax.sum(ax.checkpoint(block, policy=ax.checkpoint_policies.everything_saveable)(x)))(x), expected)
    assert len(calls) == 1
    _, t = ax.jvp(f, (x,), (ax.ones_like(x),))
    close(t, expected)
    close(ax.grad(ax.grad(lambda x: ax.sum(ax.remat(ax.sin)(x))))(ax.asarray(0.3)), -math.sin(0.3))


# -- in-place code ------------------------------------------------------------------------------------------


def test_inplace_updates_are_functionalised(executor):
    def f(x):
        y = ax.zeros_like(x)
        y[0] = x[1] * 2.0      # setitem on a concrete array that receives a traced value
        y[1:] = ax.sin(x[1:])
        y += x                 # augmented assignment on a tracer
        z = x * 1.0
        z[2] = 5.0             # overwritten element: no gradient to x[2] through z
        return ax.sum(y * z)

    x = vec(0.5, -1.0, 2.0)

    def reference(xn):
        y = np.zeros(3)
        y[0] = xn[1] * 2.0
        y[1:] = np.sin(xn[1:])
        y = y + xn
        z = xn.copy()
        z[2] = 5.0
        return np.sum(y * z)

    xn = np.asarray(x)
    close(f(x), reference(xn))
    eps = 1e-6
    numeric = [(reference(xn + eps * e) - reference(xn - eps * e)) / (2 * eps) for e in np.eye(3)]
    close(ax.grad(f)(x), numeric, rtol=1e-6, atol=1e-8)
    ax.check_grads(f, (x,), order=2)


def test_at_updates_under_grad(executor):
    def f(x, v):
        return ax.sum(x.at[1:].set(v * 2.0) ** 2) + ax.sum(x.at[ax.asarray([0, 0])].add(v[:2]))

    x, v = vec(1.0, 2.0, 3.0), vec(0.5, -0.5)
    gx, gv = ax.grad(f, argnums=(0, 1))(x, v)
    # first term: x[0] kept (2 * x0), x[1:] overwritten; v enters as (2v)^2 -> 8v
    # second term: every x gets 1; both v[:2] are added to x[0] -> 1 each
    close(gx, [2.0 * 1.0 + 1.0, 1.0, 1.0])
    close(gv, [8 * 0.5 + 1.0, 8 * -0.5 + 1.0])


def test_grad_on_executor_matches_numpy_for_inplace_loop(executor):
    def f(x):
        acc = x[0] * 0.0
        out = ax.zeros_like(x)
        for i in range(x.shape[0]):
            acc = acc + ax.exp(x[i])
            out[i] = acc
        return ax.sum(out ** 2)

    x = vec(0.1, 0.2, -0.3)
    got = ax.grad(f)(x)
    want = on_numpy(lambda x: ax.grad(f)(x), x)
    close(got, want)


def test_reverse_mode_through_everything_at_once(executor):
    @ax.custom_vjp
    def scale_grad(x):
        return x

    scale_grad.defvjp(lambda x: (x, None), lambda res, g: (g * 0.5,))

    @ax.checkpoint
    def block(x):
        y = ax.zeros_like(x)
        y[...] = ax.sin(x)           # in-place update inside the checkpointed block
        y += ax.stop_gradient(x) * x  # d/dx = stop(x) only
        return scale_grad(y)

    x = vec(0.2, -0.7)
    xn = np.asarray(x)
    g = ax.grad(lambda x: ax.sum(block(x)))(x)
    close(g, 0.5 * (np.cos(xn) + xn))
    g2 = ax.grad(lambda x: ax.sum(ax.grad(lambda x: ax.sum(block(x)))(x)))(x)
    close(g2, 0.5 * (-np.sin(xn)))  # the custom bwd scales by 0.5; stop_gradient(x) has no derivative
    graph = ax.make_graph(block)(x)
    (eqn,) = graph.equations  # the checkpoint survives staging, its body is a closed sub-graph
    assert eqn.prim.name == "checkpoint"
    body = {e.prim.name for e in eqn.params["fun"].equations}
    assert {"sin", "slice_update", "stop_gradient", "custom_vjp_call"} <= body


def test_jacobians_and_hessian_match_jax():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    def f(m, p, x):
        return m.tanh(p["w"] @ x + p["b"]) * m.sum(x ** 2)

    rng = np.random.default_rng(5)
    p = {"w": rng.standard_normal((2, 3)), "b": rng.standard_normal(2)}
    x = rng.standard_normal(3)
    ap = {k: ax.asarray(v, device="numpy") for k, v in p.items()}
    axx = ax.asarray(x, device="numpy")
    with jax.enable_x64(True):
        jp = {k: jnp.asarray(v) for k, v in p.items()}
        jx = jnp.asarray(x)
        for ours, theirs in ((ax.jacfwd, jax.jacfwd), (ax.jacrev, jax.jacrev)):
            got = ours(lambda p, x: f(ax, p, x), argnums=(0, 1))(ap, axx)
            want = jax.jit(theirs(lambda p, x: f(jnp, p, x), argnums=(0, 1)))(jp, jx)  # one program each
            for g, w in zip(ax.pytree.leaves(got), jax.tree.leaves(want)):
                close(g, np.asarray(w), rtol=1e-9)
        got = ax.hessian(lambda x: ax.sum(f(ax, ap, x)))(axx)
        want = jax.jit(jax.hessian(lambda x: jnp.sum(f(jnp, jp, x))))(jx)
        close(got, np.asarray(want), rtol=1e-9)
