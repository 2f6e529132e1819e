"""Control flow nested in a control-flow body, differentiated with mixed primal/tangent operands.

Under grad (linearize) a cond or scan inside a scan step, a fori_loop body or a cond branch
splits through its own rule (transforms/jitting.py ``_partial_eval_by_staging``): the scan stays
a scan (one forward, one backward, not unrolled) and a cond runs its taken branch only (not
both branches and a select).  Values are compared with JAX's; the branches count their runs
with debug callbacks, which run only where the branch runs.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

import arrayx as ax

jax = pytest.importorskip("jax")

@pytest.fixture(autouse=True, scope="module")
def _jax_peer(jax_peer_in_64_bits_module):  # JAX, the peer here, in 64 bits (tests/conftest.py)
    yield

jnp = jax.numpy

X = np.linspace(-1.0, 1.0, 7)  # 3 positive elements: the true branch runs 3 times, the false one 4


def _scan_with_cond(m, lax, runs=None):
    def branch(name, fn):
        def run(v, c):
            if runs is not None:
                ax.debug.callback(lambda _: runs.append(name), v)
            return fn(v, c)
        return run

    def f(x):
        def body(c, xi):
            y = lax.cond(xi > 0, branch("true", lambda v, c: m.sin(v) * c),
                         branch("false", lambda v, c: m.cos(v) + c * c), xi, c)
            return c * 0.9 + y, y
        c, ys = lax.scan(body, x[0] * 0 + 1.0, x)
        return c + m.sum(ys * ys)
    return f


def _fori_with_cond(m, lax):
    def f(x):
        def body(i, acc):
            xi = x[i]
            return lax.cond(xi > 0, lambda a: a * m.sin(xi) + xi, lambda a: a - m.exp(xi) * a, acc)
        return lax.fori_loop(0, x.shape[0], body, x[0] * 0 + 1.5)
    return f


def _scan_in_scan(m, lax):
    def f(x):
        def outer(c, xi):
            inner, _ = lax.scan(lambda d, w: (d * m.cos(w + xi) + c, None), c, x[:3])
            return inner * 0.5, inner
        c, ys = lax.scan(outer, x[1] * 0 + 0.3, x)
        return c + m.sum(m.sin(ys))
    return f


def _cond_in_cond(m, lax):
    def f(x):
        def inner(v):
            return lax.cond(v[0] > -2, lambda w: m.sum(m.sin(w) * w), lambda w: m.sum(w), v)
        return lax.cond(m.sum(x) > -1, lambda v: inner(v * 2.0) + v[1], lambda v: m.prod(v), x)
    return f


PROGRAMS = {"scan(cond)": _scan_with_cond, "fori(cond)": _fori_with_cond, "scan(scan)": _scan_in_scan,
            "cond(cond)": _cond_in_cond}


def _names(graph) -> list:
    return [e.prim.name for e in graph.equations]


@functools.cache
def _jax_reference(name):
    """jax.grad of the program at X and its jvp along cos(0..6), computed once per module (each call
    of PROGRAMS[name] makes new functions, which JAX would trace and compile again for every executor)."""
    fj = PROGRAMS[name](jnp, jax.lax)
    v = np.cos(np.arange(7.0))
    grad, (_, tangent) = jax.jit(lambda x, t: (jax.grad(fj)(x), jax.jvp(fj, (x,), (t,))))(X, v)
    return np.asarray(grad), float(tangent)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_grad_of_nested_control_flow_matches_jax(executor, name):
    fa = PROGRAMS[name](ax, ax)
    want, jtangent = _jax_reference(name)
    np.testing.assert_allclose(np.asarray(ax.grad(fa)(ax.asarray(X))), want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.asarray(ax.jit(ax.grad(fa))(ax.asarray(X))), want, rtol=1e-12, atol=1e-14)
    v = np.cos(np.arange(7.0))
    _, tangent = ax.jvp(fa, (ax.asarray(X),), (ax.asarray(v),))
    np.testing.assert_allclose(float(tangent), jtangent, rtol=1e-12)


@pytest.mark.parametrize("name", ["scan(cond)", "fori(cond)", "scan(scan)"])
def test_grad_of_a_scan_holding_control_flow_is_not_unrolled(name):
    graph = ax.jit(ax.grad(PROGRAMS[name](ax, ax))).trace(ax.asarray(X)).graph
    names = _names(graph)
    assert names.count("scan") == 2 and "cond" not in names, names  # one forward, one backward scan
    forward = next(e for e in graph.equations if e.prim.name == "scan").params["body"]
    inner = "scan" if name == "scan(scan)" else "cond"
    assert inner in _names(forward), _names(forward)


def test_grad_of_a_cond_in_a_scan_runs_the_taken_branch_only(executor):
    for transform in (ax.grad, lambda f: ax.jit(ax.grad(f))):
        runs = []
        g = transform(_scan_with_cond(ax, ax, runs))(ax.asarray(X))
        np.testing.assert_allclose(np.asarray(g), _jax_reference("scan(cond)")[0], rtol=1e-12)
        assert sorted(runs) == ["false"] * 4 + ["true"] * 3, runs


_JAX_JVPS: dict = {}


def test_jvp_of_a_cond_in_a_while_loop_matches_jax(executor):
    def make(m, lax):
        def f(x):
            def body(s):
                i, acc = s
                step = lax.cond(acc < 3.0, lambda a: a * x + 0.5, lambda a: m.sqrt(a) * x, acc)
                return i + 1, step
            return lax.while_loop(lambda s: s[0] < 6, body, (0, x))[1]
        return f

    got = ax.jvp(make(ax, ax), (ax.asarray(1.3),), (ax.asarray(1.0),))
    if "jvp of a cond in a while_loop" not in _JAX_JVPS:  # one jax.jit program, once per module
        _JAX_JVPS["jvp of a cond in a while_loop"] = jax.jit(lambda x, t: jax.jvp(make(jnp, jax.lax), (x,), (t,)))(
            1.3, 1.0)
    want = _JAX_JVPS["jvp of a cond in a while_loop"]
    np.testing.assert_allclose([float(v) for v in got], [float(v) for v in want], rtol=1e-12)
    jitted = ax.jit(lambda x, t: ax.jvp(make(ax, ax), (x,), (t,)))(ax.asarray(1.3), ax.asarray(1.0))
    np.testing.assert_allclose([float(v) for v in jitted], [float(v) for v in want], rtol=1e-12)
