"""The passes jit runs over a staged graph: dead-code elimination (effects kept), repeated equations
computed once, literals that differ only in the sign of zero kept apart; control flow under
jit(grad): cond runs only the taken branch, scan is not unrolled (a forward scan and a transposed
reverse scan); the JAX executor lowers to the HLO jax.jit gives."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as ax


@pytest.fixture(autouse=True)
def _jax_peer(jax_peer_in_64_bits):  # JAX, the peer some tests here compare with, in 64 bits (tests/conftest.py)
    yield


def _names(graph):
    return [e.prim.name for e in graph.equations]


def test_dead_code_is_eliminated_from_jit_graphs(executor):
    def f(x):
        unused = ax.exp(x) * 3  # noqa: F841 - dead
        ax.cos(x)  # dead too
        return ax.sin(x) + 1

    jitted = ax.jit(f)
    assert _names(jitted.trace(ax.ones(3)).graph) == ["sin", "add"]
    np.testing.assert_allclose(np.asarray(jitted(ax.asarray([0.5, 1.0, 2.0]))), np.sin([0.5, 1.0, 2.0]) + 1,
                               rtol=1e-12)


def test_repeated_equations_are_computed_once(executor):
    def log_softmax(z):
        top = ax.max(z, axis=-1, keepdims=True)
        return z - top - ax.log(ax.sum(ax.exp(z - top), axis=-1, keepdims=True))

    z = np.array([[0.5, -1.0, 2.0], [3.0, 0.0, 1.0]])
    jitted = ax.jit(log_softmax)
    names = _names(jitted.trace(ax.asarray(z)).graph)
    assert names.count("subtract") == 2 and names.count("broadcast_to") == 2, names  # z - top once
    want = z - z.max(-1, keepdims=True)
    want = want - np.log(np.exp(want).sum(-1, keepdims=True))
    np.testing.assert_allclose(np.asarray(jitted(ax.asarray(z))), want, rtol=1e-12)
    # equal operands but different params, or different literals, stay apart
    g = ax.jit(lambda x: (ax.sum(x, axis=0), ax.sum(x, axis=1), x + 1.0, x + 2.0))
    assert _names(g.trace(ax.asarray(z)).graph) == ["sum", "sum", "add", "add"]
    outs = g(ax.asarray(z))
    for got, want in zip(outs, (z.sum(0), z.sum(1), z + 1, z + 2)):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)


def test_params_equal_only_by_python_equality_stay_apart(executor):
    # -0.0 == 0.0 and True == 1 in Python: CSE must not merge full((), -0.0) into full((), 0.0)
    g = ax.jit(lambda: (ax.full((2,), -0.0), ax.full((2,), 0.0), ax.full((2,), 1), ax.full((2,), True)))
    assert _names(g.trace().graph).count("full") == 4
    neg, pos, one, true = g()
    np.testing.assert_array_equal(np.signbit(np.asarray(neg)), [True, True])
    np.testing.assert_array_equal(np.signbit(np.asarray(pos)), [False, False])
    assert np.asarray(one).dtype.kind == "i" and np.asarray(true).dtype == np.bool_


def test_repeated_effects_and_empty_buffers_are_kept(executor):
    seen = []

    def f(x):
        ax.debug.callback(lambda v: seen.append(float(v.sum())), x)
        ax.debug.callback(lambda v: seen.append(float(v.sum())), x)
        return ax.empty(2), ax.empty(2)

    graph = ax.jit(f).trace(ax.ones(2)).graph
    assert _names(graph).count("debug_callback") == 2 and _names(graph).count("full") == 2
    ax.jit(f)(ax.asarray([1.0, 2.0]))
    assert seen == [3.0, 3.0]


def test_jit_grad_does_not_compute_the_loss_value(executor):
    # the cotangent seed depends on the loss's dtype only: log and mean of the forward pass are dead
    def loss(w, x):
        return ax.mean(ax.log(1.0 + ax.exp(x @ w)))

    w, x = np.array([0.5, -0.25]), np.array([[1.0, 2.0], [0.5, -1.0], [2.0, 0.0]])
    g = ax.jit(ax.grad(loss))
    names = _names(g.trace(ax.asarray(w), ax.asarray(x)).graph)
    assert "log" not in names and "mean" not in names, names
    s = 1 / (1 + np.exp(-(x @ w)))
    np.testing.assert_allclose(np.asarray(g(ax.asarray(w), ax.asarray(x))), x.T @ s / 3, rtol=1e-12)


def test_effects_survive_dead_code_elimination(executor):
    seen = []

    def f(x):
        ax.debug.callback(lambda v: seen.append(float(v.sum())), x)
        ax.scan(lambda c, xi: (ax.debug.callback(lambda v: seen.append(float(v)), xi) or c, None), 0.0, x)
        return x * 2

    out = ax.jit(f)(ax.asarray([1.0, 2.0]))
    np.testing.assert_array_equal(np.asarray(out), [2.0, 4.0])
    assert seen == [3.0, 1.0, 2.0]


def _branches(calls):
    def taken(name, fn):
        def branch(v, w):
            ax.debug.callback(lambda a: calls.append(name), v)
            return fn(v, w)
        return branch

    return [taken("sin", lambda v, w: ax.sin(v) * w),
            taken("square", lambda v, w: v * v * 3 + w),
            taken("constant", lambda v, w: ax.zeros_like(v) + 2.0)]  # its tangent is a known zero


def test_jit_grad_of_switch_runs_only_the_taken_branch(executor):
    calls = []
    branches = _branches(calls)

    def loss(x, w, i):
        return ax.sum(ax.switch(i, branches, x, w) ** 2)

    g = ax.jit(ax.grad(loss, argnums=(0, 1)))
    x, w = np.array([0.3, 0.7]), 1.5
    want = {0: (2 * np.sin(x) * w * np.cos(x) * w, np.sum(2 * np.sin(x) * w * np.sin(x))),
            1: (2 * (3 * x * x + w) * 6 * x, np.sum(2 * (3 * x * x + w))),
            2: (np.zeros(2), 0.0)}
    for i, name in enumerate(["sin", "square", "constant"]):
        calls.clear()
        gx, gw = g(ax.asarray(x), ax.asarray(w), ax.asarray(i))
        np.testing.assert_allclose(np.asarray(gx), want[i][0], rtol=1e-12)
        np.testing.assert_allclose(float(gw), want[i][1], rtol=1e-12)
        assert calls == [name]  # one branch ran, once (the primal; the linear part has no callback)
    graph = g.trace(ax.asarray(x), ax.asarray(w), ax.asarray(0)).graph
    assert _names(graph).count("cond") == 2  # the primal cond and the transposed linear cond
    assert "select" not in _names(graph) and "where" not in _names(graph)


#: JAX's side of the comparisons below, as NumPy arrays: one jax.jit program per reference, computed once
#: per module (every executor's item compares with it; eagerly each operation of JAX's forward and
#: backward pass compiled a program of its own)
_JAX_RESULTS: dict = {}


def _jax_once(key, fn, *args):
    if key not in _JAX_RESULTS:
        import jax

        _JAX_RESULTS[key] = [np.asarray(v) for v in jax.tree_util.tree_leaves(jax.jit(fn)(*args))]
    return _JAX_RESULTS[key]


def _scan_loss(m, scan, reverse):
    def f(c0, xs, w):
        c, ys = scan(lambda c, x: (m.sin(c) * x + w * c, c * x + w), c0, xs, reverse=reverse)
        return m.sum(ys) + m.sum(c)
    return f


@pytest.mark.parametrize("reverse", [False, True])
def test_jit_grad_of_scan_is_not_unrolled(executor, reverse):
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    args = (np.array([0.5, 1.0]), np.linspace(0, 1, 10).reshape(5, 2), np.array(0.3))
    g = ax.jit(ax.grad(_scan_loss(ax, ax.scan, reverse), argnums=(0, 1, 2)))
    want = _jax_once(("grad of scan", reverse), jax.grad(_scan_loss(jnp, jax.lax.scan, reverse), argnums=(0, 1, 2)),
                     *map(jnp.asarray, args))
    for got in (g(*map(ax.asarray, args)), ax.grad(_scan_loss(ax, ax.scan, reverse), argnums=(0, 1, 2))(
            *map(ax.asarray, args))):
        for a, b in zip(got, want):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-14)
    # one forward scan (stacking residuals) and one reverse scan, whatever the length
    for n in (5, 40):
        xs = ax.asarray(np.linspace(0, 1, 2 * n).reshape(n, 2))
        names = _names(g.trace(ax.asarray(args[0]), xs, ax.asarray(args[2])).graph)
        assert names.count("scan") == 2 and len(names) < 20, names


def test_grad_of_fori_loop_and_hessian_through_scan(executor):
    jax = pytest.importorskip("jax")
    jnp, lax = jax.numpy, jax.lax
    g = ax.jit(ax.grad(lambda x: ax.sum(ax.fori_loop(0, 6, lambda i, v: ax.sin(v) * 1.1 + i, x))))
    want, = _jax_once("grad of fori_loop",
                      jax.grad(lambda x: jnp.sum(lax.fori_loop(0, 6, lambda i, v: jnp.sin(v) * 1.1 + i, x))),
                      jnp.array([0.2, 0.4]))
    np.testing.assert_allclose(np.asarray(g(ax.asarray([0.2, 0.4]))), want, rtol=1e-12)
    assert _names(g.trace(ax.asarray([0.2, 0.4])).graph).count("scan") == 2
    h = ax.hessian(lambda x: ax.sum(ax.scan(lambda c, xi: (c * ax.sin(xi), c), 1.0, x)[1]))(ax.asarray([0.2, 0.5, 0.9]))
    hj, = _jax_once("hessian through scan",
                    jax.hessian(lambda x: jnp.sum(lax.scan(lambda c, xi: (c * jnp.sin(xi), c), 1.0, x)[1])),
                    jnp.array([0.2, 0.5, 0.9]))
    np.testing.assert_allclose(np.asarray(h), hj, rtol=1e-11, atol=1e-13)


def test_jax_executor_lowers_to_the_same_hlo_as_jax_jit():
    # arrayx.jit on jax must add nothing XLA has to run (no converts, copies or weak-type casts)
    jax = pytest.importorskip("jax")
    import re

    def selu(m, x):
        return 1.0507009873554805 * m.where(x > 0, x, 1.6732632423543772 * (m.exp(x) - 1.0))

    xn = np.linspace(-2.0, 2.0, 64, dtype=np.float32)
    with ax.use_executor("jax"):
        xa = ax.asarray(xn)
    fa = ax.jit(lambda x: selu(ax, x))
    graph = fa.trace(xa).graph
    mine = jax.jit(ax.executors.get("jax").lower(graph)).lower(xa._buf).as_text()
    theirs = jax.jit(lambda x: selu(jax.numpy, x)).lower(xn).as_text()

    def body(text):  # the ops, without the module's name and the result's pytree label
        return [re.sub(r"\{jax\.result_info = [^}]*\}", "", line).strip() for line in text.splitlines()
                if "stablehlo." in line or "call @" in line]

    assert body(mine) == body(theirs)
    np.testing.assert_allclose(np.asarray(fa(xa)), np.asarray(jax.jit(lambda x: selu(jax.numpy, x))(xn)), rtol=1e-6)


def test_python_scalars_that_differ_only_in_the_sign_of_zero_stage_apart(executor):
    # a Python scalar argument is a constant of the graph, keyed bit for bit: -0.0 after 0.0 stages again
    x = ax.asarray([1.0, 2.0])
    for jitted in (ax.jit(lambda x, s: x * s), ax.jit(lambda x, s: x * s, static_argnums=1)):
        np.testing.assert_array_equal(np.signbit(np.asarray(jitted(x, 0.0))), [False, False])
        np.testing.assert_array_equal(np.signbit(np.asarray(jitted(x, -0.0))), [True, True])
