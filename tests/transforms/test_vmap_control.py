"""vmap of call-like primitives and structured control flow.

Call-like primitives (custom_jvp/custom_vjp, checkpoint, jit's call) are batched by batching their
sub-computations, never inlined: their custom rules survive (grad(vmap(custom_vjp_fn)) uses the
rule) and a jitted function stays one call.  cond/switch with a batched predicate select between
the batched branches; while_loop with a batched predicate runs while any member runs and freezes
finished members; scan/fori_loop/map batch carries and xs.  Values are compared with jax.vmap of
the same jax.lax functions, on every executor.
"""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as ax
from arrayx import pytree

jax = pytest.importorskip("jax")

@pytest.fixture(autouse=True, scope="module")
def _jax_peer(jax_peer_in_64_bits_module):  # JAX, the peer here, in 64 bits (tests/conftest.py)
    yield

jnp = jax.numpy
lax = jax.lax

X = np.linspace(-1.0, 2.0, 6).reshape(3, 2)


#: JAX's side of each comparison, as NumPy leaves, once per module: one jax.jit program per call site
#: and operands (eagerly each lax operation of jax.vmap compiles a program of its own, and every
#: executor's item would compute the same reference again)
_JAX_RESULTS: dict = {}


def _jax_once(key, f_jax, *args):
    """jax.jit(f_jax)(*args)'s leaves as NumPy arrays, computed on the first call for ``key`` (a call
    site's code object plus its operands: the functions passed at one call site close over the same
    constants on every executor)."""
    if key not in _JAX_RESULTS:
        _JAX_RESULTS[key] = [np.asarray(w) for w in jax.tree_util.tree_leaves(jax.jit(f_jax)(*args))]
    return _JAX_RESULTS[key]


def _operands_key(args):
    return tuple((a.shape, a.dtype.str, a.tobytes()) for a in map(np.asarray, args))


def _same_as_jax(f_ax, f_jax, *args, in_axes=0, tol=1e-12):
    got = ax.vmap(f_ax, in_axes=in_axes)(*[ax.asarray(a) for a in args])
    w_leaves = _jax_once(("vmap", f_jax.__code__, repr(in_axes), _operands_key(args)),
                         jax.vmap(f_jax, in_axes=in_axes), *[jnp.asarray(a) for a in args])
    g_leaves = pytree.leaves(got)
    assert len(g_leaves) == len(w_leaves)
    for g, w in zip(g_leaves, w_leaves):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, (g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
    return got


def _eqn_names(graph):
    return [e.prim.name for e in graph.equations]


# -- call-like primitives ---------------------------------------------------------------------------


def _scaled_custom_vjp():
    @ax.custom_vjp
    def f(x, w):
        return ax.sin(x) * w

    # a deliberately "wrong" rule (factors 2 and 3) shows that it, not the body, is differentiated
    f.defvjp(lambda x, w: (ax.sin(x) * w, (ax.cos(x), w, ax.sin(x))),
             lambda r, g: (g * r[0] * r[1] * 2.0, g * r[2] * 3.0))
    return f


def test_grad_of_vmap_of_custom_vjp_uses_the_rule(executor):
    f = _scaled_custom_vjp()
    w = np.array([0.5, 2.0])
    gx, gw = ax.grad(lambda x, w: ax.sum(ax.vmap(f, in_axes=(0, None))(x, w)), argnums=(0, 1))(
        ax.asarray(X), ax.asarray(w))
    np.testing.assert_allclose(np.asarray(gx), 2 * np.cos(X) * w, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(gw), 3 * np.sin(X).sum(0), rtol=1e-12)  # summed over the batch
    # and vmap of grad, the other order
    gx2 = ax.vmap(ax.grad(lambda x: ax.sum(f(x, ax.asarray(w)))))(ax.asarray(X))
    np.testing.assert_allclose(np.asarray(gx2), 2 * np.cos(X) * w, rtol=1e-12)


def test_vmap_keeps_call_like_primitives():
    f = _scaled_custom_vjp()
    w = ax.asarray(np.array([0.5, 2.0]))
    assert _eqn_names(ax.make_graph(lambda x: ax.vmap(f, in_axes=(0, None))(x, w))(ax.asarray(X))) == [
        "custom_vjp_call"]
    jitted = ax.jit(lambda a: ax.tanh(a) * 2)
    g = ax.make_graph(ax.vmap(jitted))(ax.asarray(X))
    assert _eqn_names(g) == ["call"]
    assert g.equations[0].params["graph"].in_avals[0].shape == (3, 2)  # the batched graph
    c = ax.checkpoint(lambda x: ax.sin(ax.sin(x)))
    assert _eqn_names(ax.make_graph(ax.vmap(c))(ax.asarray(X))) == ["checkpoint"]


def test_grad_of_vmap_of_custom_jvp_uses_the_rule(executor):
    @ax.custom_jvp
    def h(x):
        return ax.sin(x)

    h.defjvp(lambda p, t: (h(p[0]), 5.0 * t[0]))
    g = ax.grad(lambda x: ax.sum(ax.vmap(h)(x)))(ax.asarray(X))
    np.testing.assert_array_equal(np.asarray(g), np.full(X.shape, 5.0))
    t = ax.jvp(ax.vmap(h), (ax.asarray(X),), (ax.ones_like(ax.asarray(X)),))[1]
    np.testing.assert_array_equal(np.asarray(t), np.full(X.shape, 5.0))


def test_checkpoint_under_vmap_every_order(executor):
    c = ax.checkpoint(lambda x: ax.sin(ax.sin(x)))
    want = np.cos(np.sin(X)) * np.cos(X)
    np.testing.assert_allclose(np.asarray(ax.grad(lambda x: ax.sum(ax.vmap(c)(x)))(ax.asarray(X))), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(ax.vmap(ax.grad(lambda x: ax.sum(c(x))))(ax.asarray(X))), want, rtol=1e-12)
    # a batched tangent of an unbatched primal (vmap over jvp's tangents)
    t = ax.vmap(lambda v: ax.jvp(c, (ax.asarray(X[0]),), (v,))[1])(ax.asarray(X))
    np.testing.assert_allclose(np.asarray(t), want[0] * X, rtol=1e-12)


def test_vmap_of_jit_in_both_orders_and_under_grad(executor):
    jitted = ax.jit(lambda a, b: ax.tanh(a @ b) + 1)
    a = np.random.default_rng(2).standard_normal((4, 3, 2))
    b = np.random.default_rng(3).standard_normal((2, 5))
    want = np.tanh(a @ b) + 1
    np.testing.assert_allclose(np.asarray(ax.vmap(jitted, in_axes=(0, None))(ax.asarray(a), ax.asarray(b))), want,
                               rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.asarray(ax.jit(ax.vmap(jitted, in_axes=(0, None)))(ax.asarray(a), ax.asarray(b))),
                               want, rtol=1e-12, atol=1e-14)
    g = ax.grad(lambda a: ax.sum(ax.vmap(jitted, in_axes=(0, None))(a, ax.asarray(b))))(ax.asarray(a))
    gj, = _jax_once("grad of tanh(a @ b) + 1", jax.grad(lambda a, b: jnp.sum(jnp.tanh(a @ b) + 1)),
                    jnp.asarray(a), jnp.asarray(b))
    np.testing.assert_allclose(np.asarray(g), gj, rtol=1e-12, atol=1e-14)


# -- cond / switch ------------------------------------------------------------------------------------


def test_cond_batched_predicate_selects(executor):
    _same_as_jax(lambda x: ax.cond(ax.sum(x) > 0.5, ax.sin, lambda v: v * 3, x),
                 lambda x: lax.cond(jnp.sum(x) > 0.5, jnp.sin, lambda v: v * 3, x), X)


def test_cond_unbatched_predicate_stays_a_cond(executor):
    f = lambda x, p: ax.cond(p > 0, ax.sin, lambda v: v * 3, x)  # noqa: E731
    for p in (1.0, -1.0):
        _same_as_jax(f, lambda x, p: lax.cond(p > 0, jnp.sin, lambda v: v * 3, x), X, np.array(p),
                     in_axes=(0, None))
    g = ax.make_graph(ax.vmap(f, in_axes=(0, None)))(ax.asarray(X), ax.asarray(1.0))
    assert "cond" in _eqn_names(g)


def test_switch_batched_index_clamps(executor):
    branches_ax = [lambda v: v, lambda v: v * 2, lambda v: v * v]
    branches_jax = [lambda v: v, lambda v: v * 2, lambda v: v * v]
    _same_as_jax(lambda x, i: ax.switch(i, branches_ax, x), lambda x, i: lax.switch(i, branches_jax, x),
                 X, np.array([0, 2, 5]))
    _same_as_jax(lambda x, i: ax.switch(i, branches_ax, x), lambda x, i: lax.switch(i, branches_jax, x),
                 X, np.array([-3, 1, 1]))


def test_grad_of_vmap_of_batched_cond(executor):
    def loss(m, cond):
        return lambda x: m.sum(jax.vmap(lambda v: cond(m.sum(v) > 0.5, m.sin, lambda u: u * 3, v))(x)) \
            if m is jnp else m.sum(ax.vmap(lambda v: cond(m.sum(v) > 0.5, m.sin, lambda u: u * 3, v))(x))

    g = ax.grad(loss(ax, ax.cond))(ax.asarray(X))
    gj, = _jax_once("grad of vmap of cond", jax.grad(loss(jnp, lax.cond)), jnp.asarray(X))
    np.testing.assert_allclose(np.asarray(g), gj, rtol=1e-12)


# -- while_loop -------------------------------------------------------------------------------------


def test_while_batched_predicate_freezes_finished_members(executor):
    _same_as_jax(lambda x: ax.while_loop(lambda c: c[0] < 10.0, lambda c: (c[0] * 2 + 1, c[1] + 1), (x, 0)),
                 lambda x: lax.while_loop(lambda c: c[0] < 10.0, lambda c: (c[0] * 2 + 1, c[1] + 1), (x, 0)),
                 np.array([0.5, 3.0, 20.0]))


def test_while_unbatched_predicate_batched_carry(executor):
    _same_as_jax(lambda x: ax.while_loop(lambda c: c[1] < 4, lambda c: (c[0] * 2, c[1] + 1), (x, 0)),
                 lambda x: lax.while_loop(lambda c: c[1] < 4, lambda c: (c[0] * 2, c[1] + 1), (x, 0)), X)


def test_while_carry_made_batched_by_the_body(executor):
    # the counter starts unbatched, the body adds a batched value: the carry becomes batched
    _same_as_jax(lambda x: ax.while_loop(lambda c: c[1] < 3, lambda c: (c[0] + x, c[1] + 1), (0.0, 0)),
                 lambda x: lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0] + x, c[1] + 1), (0.0, 0)),
                 np.array([1.0, -2.0]))


def test_newton_solver_while_loop_under_jit_of_vmap(executor):
    def sqrt_newton(m, loop):
        def f(a):
            return loop(lambda c: m.abs(c * c - a) > 1e-12, lambda c: 0.5 * (c + a / c), a)
        return f

    a = np.array([2.0, 9.0, 0.25, 1e4])
    got = ax.jit(ax.vmap(sqrt_newton(ax, ax.while_loop)))(ax.asarray(a))
    np.testing.assert_allclose(np.asarray(got), np.sqrt(a), rtol=1e-12)
    _same_as_jax(sqrt_newton(ax, ax.while_loop), sqrt_newton(jnp, lax.while_loop), a)


def test_fori_loop_with_batched_trip_count(executor):
    _same_as_jax(lambda x, n: ax.fori_loop(0, n, lambda i, v: v * 1.5 + i, x),
                 lambda x, n: lax.fori_loop(0, n, lambda i, v: v * 1.5 + i, x),
                 np.array([1.0, 2.0, 3.0]), np.array([1, 3, 6]))


# -- scan / fori_loop / map ------------------------------------------------------------------------------


def test_scan_batched_carry_and_xs(executor):
    step_ax = lambda c, x: (c * 0.5 + x, c * x)  # noqa: E731
    step_jax = lambda c, x: (c * 0.5 + x, c * x)  # noqa: E731
    _same_as_jax(lambda c0, xs: ax.scan(step_ax, c0, xs), lambda c0, xs: lax.scan(step_jax, c0, xs),
                 np.array([1.0, 2.0]), np.arange(10.0).reshape(2, 5))
    # unbatched init, xs batched along their second axis; reverse
    _same_as_jax(lambda c0, xs: ax.scan(step_ax, c0, xs, reverse=True),
                 lambda c0, xs: lax.scan(step_jax, c0, xs, reverse=True),
                 np.array(1.0), np.arange(10.0).reshape(5, 2), in_axes=(None, 1))


def test_scan_rnn_per_example(executor):
    rng = np.random.default_rng(0)
    w, u = rng.standard_normal((3, 3)) * 0.5, rng.standard_normal((2, 3)) * 0.5
    xs = rng.standard_normal((4, 6, 2))  # batch 4, 6 steps, 2 features

    def rnn(m, scan):
        wm, um = m.asarray(w), m.asarray(u)

        def run(x):
            return scan(lambda h, xt: (m.tanh(h @ wm + xt @ um),) * 2, m.zeros(3), x)
        return run

    _same_as_jax(rnn(ax, ax.scan), rnn(jnp, lax.scan), xs)


def test_fori_loop_and_map(executor):
    _same_as_jax(lambda x: ax.fori_loop(0, 5, lambda i, v: v * x + i, x),
                 lambda x: lax.fori_loop(0, 5, lambda i, v: v * x + i, x), X)
    _same_as_jax(lambda x: ax.map(lambda r: ax.sum(r * r), x), lambda x: lax.map(lambda r: jnp.sum(r * r), x),
                 np.arange(24.0).reshape(2, 3, 4))


def test_vmap_of_grad_of_scan(executor):
    def loss(m, scan):
        return lambda c0, xs: m.sum(scan(lambda c, x: (m.sin(c) * x, c * x), c0, xs)[1])

    g = ax.vmap(ax.grad(loss(ax, ax.scan)), in_axes=(0, None))(ax.asarray([1.0, 2.0]), ax.asarray(np.arange(5.0)))
    gj, = _jax_once("vmap of grad of scan", jax.vmap(jax.grad(loss(jnp, lax.scan)), in_axes=(0, None)),
                    jnp.array([1.0, 2.0]), jnp.arange(5.0))
    np.testing.assert_allclose(np.asarray(g), gj, rtol=1e-12)
    g = ax.grad(lambda c: ax.sum(ax.vmap(loss(ax, ax.scan), in_axes=(0, None))(c, ax.asarray(np.arange(5.0)))))(
        ax.asarray([1.0, 2.0]))
    np.testing.assert_allclose(np.asarray(g), np.asarray(gj), rtol=1e-12)


# -- Jacobians are vmapped (not a Python loop over basis vectors) ----------------------------------


def _jac_fn(m):
    def f(p, x):
        h = m.tanh(x @ p["w"] + p["b"])
        return {"y": m.sin(h) * m.sum(x), "s": m.sum(h * h)}
    return f


def _jac_args(m, rng):
    return ({"w": m.asarray(rng.standard_normal((4, 3))), "b": m.asarray(rng.standard_normal(3))},
            m.asarray(rng.standard_normal(4)))


def _jax_jacobian(name, argnums, jp, jx):
    """jax.jacfwd/jacrev of _jac_fn: one jax.jit program per (name, argnums), computed once per module
    (every executor's item compares with it; eagerly each operation would compile on its own)."""
    if (name, argnums) not in _JAX_RESULTS:
        jac = jax.jit(getattr(jax, name)(_jac_fn(jnp), argnums=argnums))
        _JAX_RESULTS[name, argnums] = jax.tree_util.tree_map(np.asarray, jac(jp, jx))
    return _JAX_RESULTS[name, argnums]


@pytest.mark.parametrize("name", ["jacfwd", "jacrev"])
def test_jacobians_match_jax(executor, name):
    rng = np.random.default_rng(5)
    p, x = _jac_args(ax, np.random.default_rng(5))
    jp, jx = _jac_args(jnp, np.random.default_rng(5))
    for argnums in (0, 1, (0, 1)):
        got = getattr(ax, name)(_jac_fn(ax), argnums=argnums)(p, x)
        want = _jax_jacobian(name, argnums, jp, jx)
        g_leaves, w_leaves = pytree.leaves(got), jax.tree_util.tree_leaves(want)
        assert len(g_leaves) == len(w_leaves)
        for g, w in zip(g_leaves, w_leaves):
            assert np.asarray(g).shape == np.asarray(w).shape
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-11, atol=1e-13)
    del rng


def test_hessian_matches_jax(executor):
    f = lambda m: lambda x: m.sum(m.sin(x) * m.roll(x, 1)) + m.sum(x) ** 3  # noqa: E731
    x = np.linspace(-1, 1, 7)
    if "hessian" not in _JAX_RESULTS:  # one jax.jit program, once per module
        _JAX_RESULTS["hessian"] = np.asarray(jax.jit(jax.hessian(f(jnp)))(jnp.asarray(x)))
    np.testing.assert_allclose(np.asarray(ax.hessian(f(ax))(ax.asarray(x))), _JAX_RESULTS["hessian"],
                               rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("name", ["jacfwd", "jacrev", "hessian"])
def test_jacobians_stage_the_same_graph_for_any_size(name):
    # a Python loop over basis vectors would stage one pass per input/output element
    f = lambda x: ax.sin(x) * ax.sum(x * x)  # noqa: E731
    g = (lambda x: ax.sum(f(x))) if name == "hessian" else f
    sizes = [len(ax.make_graph(getattr(ax, name)(g))(ax.ones(n)).equations) for n in (3, 40)]
    assert sizes[0] == sizes[1], sizes
