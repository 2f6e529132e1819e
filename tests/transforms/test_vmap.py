"""vmap: batched results equal stacking the function over the batch members.

The table's derivative examples (``conformance/differential/table/derivatives.py``: a seeded sample in
the ci profile) are mapped on every executor with several in_axes/out_axes and compared with a loop
over the batch on the NumPy executor; then the API
(pytree prefixes, None, negative axes, kwargs, axis_size, errors), nested vmap and the
compositions with grad (per-example gradients, compared with jax.vmap(jax.grad)).
"""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as ax
from arrayx import pytree
from arrayx.transforms.rules import coverage
from conformance import profile
from conformance.differential.table.derivatives import CASES, make_inputs
from tests.conftest import ALL_EXECUTORS

B = 3
#: the derivative examples (compositions) under vmap: a seeded sample in the ci profile, all in the deep one;
#: every table function under vmap on every executor is conformance/test_transforms_quick.py's
VMAP_CASES = profile.sample("vmap compositions", CASES, 40)
#: (executor, case) items of the two tests over VMAP_CASES: every case on every executor in each, except
#: that in the ci profile the jax executor takes the cases in turn between the two tests (each case still
#: runs under vmap on jax, in one of its in_axes forms: eagerly there each new shape compiles programs)
_FULL = not profile.current().sampled


def _vmap_params(turn: int) -> list:
    return [pytest.param(ex, c, id=f"{ex}-{c.name}") for ex in ALL_EXECUTORS
            for i, c in enumerate(VMAP_CASES) if _FULL or ex != "jax" or i % 2 == turn]


@pytest.fixture(autouse=True)
def _jax_peer(jax_peer_in_64_bits):  # JAX, the peer some tests here compare with, in 64 bits (tests/conftest.py)
    yield


def _members(case):
    return [make_inputs(case, seed=s) for s in range(B)]


def _stacked_reference(case, members):
    """The members' results on the NumPy executor (the reference of every executor's vmap), stacked."""
    with ax.use_executor("numpy"):
        outs = [case.fn(ax, *(ax.asarray(x) for x in m)) for m in members]
        shapes = {tuple(tuple(np.shape(v)) for v in pytree.leaves(o)) for o in outs}
        if len(shapes) > 1:
            return None  # the result's shape depends on the values (a boolean mask): not batchable
        return pytree.map(lambda *leaves: np.stack([np.asarray(v) for v in leaves]), *outs)


def _check_data_dependent(call):
    with pytest.raises(ValueError, match="vmap: .* different shapes for different batch members"):
        call()


def _assert_tree_close(got, want, tol=1e-9):
    g_leaves, g_tree = pytree.flatten(got)
    w_leaves, w_tree = pytree.flatten(want)
    assert g_tree == w_tree
    for g, w in zip(g_leaves, w_leaves):
        g = np.asarray(g)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def _skip_unsupported(case, executor):
    if executor in case.executors:
        pytest.skip(f"{case.name} is not available on {executor}")


@pytest.mark.parametrize("executor, case", _vmap_params(0), indirect=["executor"])
def test_vmap_every_function_axis0(executor, case):
    _skip_unsupported(case, executor)
    members = _members(case)
    want = _stacked_reference(case, members)
    batched = [ax.asarray(np.stack([m[i] for m in members])) for i in range(len(case.args))]
    call = lambda: ax.vmap(lambda *xs: case.fn(ax, *xs))(*batched)  # noqa: E731
    if want is None:
        return _check_data_dependent(call)
    _assert_tree_close(call(), want)


@pytest.mark.parametrize("executor, case", _vmap_params(1), indirect=["executor"])
def test_vmap_every_function_last_axis_and_unmapped(executor, case):
    """First operand mapped along its last axis (in_axes=-1), the others not mapped; out_axes=-1."""
    _skip_unsupported(case, executor)
    members = _members(case)
    shared = members[0][1:]
    members = [[m[0], *shared] for m in members]
    want = _stacked_reference(case, members)
    first = ax.asarray(np.stack([m[0] for m in members], axis=-1))
    in_axes = (-1,) + (None,) * len(shared)
    call = lambda: ax.vmap(lambda *xs: case.fn(ax, *xs), in_axes=in_axes, out_axes=-1)(  # noqa: E731
        first, *(ax.asarray(s) for s in shared))
    if want is None:
        return _check_data_dependent(call)
    _assert_tree_close(call(), pytree.map(lambda w: np.moveaxis(w, 0, -1), want))


def test_no_loop_fallback_for_core_categories():
    """Elementwise, reductions, products and manipulation are batched natively (not by a loop)."""
    loop = set(coverage()["batch_loop"])
    native = {"add", "sin", "where", "clip", "astype", "sum", "mean", "max", "var", "std", "prod",
              "cumulative_sum", "argmax", "matmul", "tensordot", "vecdot", "reshape", "permute_dims",
              "expand_dims", "squeeze", "concat", "stack", "broadcast_to", "flip", "roll", "moveaxis",
              "inv", "det", "cholesky", "eigh", "svd", "sort", "argsort", "all", "any"}
    assert not native & loop, sorted(native & loop)


# -- the API: axes, pytrees, sizes ---------------------------------------------------------------


def test_in_axes_pytree_prefix_none_and_kwargs(executor):
    rng = np.random.default_rng(1)
    w = rng.standard_normal((4, 2))
    xs = rng.standard_normal((5, 4))
    bs = rng.standard_normal((2, 5))

    def f(params, x, *, scale):
        return {"y": ax.tanh(x @ params["w"] + params["b"]) * scale, "n": ax.sum(x)}

    scale = rng.standard_normal(5)
    got = ax.vmap(f, in_axes=({"w": None, "b": 1}, 0))(
        {"w": ax.asarray(w), "b": ax.asarray(bs)}, ax.asarray(xs), scale=ax.asarray(scale))
    want_y = np.stack([np.tanh(xs[i] @ w + bs[:, i]) * scale[i] for i in range(5)])
    np.testing.assert_allclose(np.asarray(got["y"]), want_y, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(got["n"]), xs.sum(1), rtol=1e-12)


def test_out_axes_prefix_and_unbatched_output(executor):
    x = ax.asarray(np.arange(6.0).reshape(2, 3))
    c = ax.asarray(np.ones(4))
    a, b = ax.vmap(lambda v: (v * 2, c + 1), out_axes=(1, None))(x)
    np.testing.assert_array_equal(np.asarray(a), np.arange(6.0).reshape(2, 3).T * 2)
    np.testing.assert_array_equal(np.asarray(b), np.full(4, 2.0))
    # an unbatched output with an axis is broadcast along it
    a, b = ax.vmap(lambda v: (v, c), out_axes=0)(x)
    assert tuple(b.shape) == (2, 4)


def test_axis_size_when_nothing_is_mapped(executor):
    out = ax.vmap(lambda v: v + 1, in_axes=None, axis_size=3)(ax.asarray([1.0, 2.0]))
    np.testing.assert_array_equal(np.asarray(out), np.tile([2.0, 3.0], (3, 1)))


def test_nested_vmap_outer_product(executor):
    x = np.arange(3.0)
    y = np.arange(4.0) + 1
    f = ax.vmap(ax.vmap(lambda a, b: a * b + ax.sin(a), in_axes=(None, 0)), in_axes=(0, None))
    np.testing.assert_allclose(np.asarray(f(ax.asarray(x), ax.asarray(y))), x[:, None] * y[None] + np.sin(x)[:, None])
    # the inner map over the columns, the outer over the rows of a batch of matrices
    m = np.arange(24.0).reshape(2, 3, 4)
    g = ax.vmap(ax.vmap(lambda r: ax.sum(r * r), in_axes=1), in_axes=0)
    np.testing.assert_allclose(np.asarray(g(ax.asarray(m))), (m * m).sum(1))


def test_errors_name_the_problem():
    x = ax.ones((3, 2))
    y = ax.ones((4, 2))
    with pytest.raises(ValueError, match=r"inconsistent sizes.*\[0\]\[0\]: 3.*\[0\]\[1\]: 4"):
        ax.vmap(lambda a, b: a + b)(x, y)
    with pytest.raises(ValueError, match="in_axes has 1 entries but the function got 2"):
        ax.vmap(lambda a, b: a + b, in_axes=(0,))(x, y)
    with pytest.raises(ValueError, match="in_axes 2 at .* out of range"):
        ax.vmap(lambda a: a, in_axes=2)(x)
    with pytest.raises(ValueError, match="out_axes is None at .* batched"):
        ax.vmap(lambda a: a, out_axes=None)(x)
    with pytest.raises(ValueError, match="in_axes has a dict"):
        ax.vmap(lambda a: a, in_axes=({"a": 0},))([x])
    with pytest.raises(ValueError, match="pass axis_size"):
        ax.vmap(lambda a: a, in_axes=None)(x)
    with pytest.raises(ax.core.primitives.ConcretizationError, match="batched by vmap"):
        ax.vmap(lambda a: a * 2 if float(ax.sum(a)) > 0 else a)(x)


# -- compositions with differentiation ------------------------------------------------------------


def _mlp_data(seed=0, batch=6):
    rng = np.random.default_rng(seed)
    params = {"w1": rng.standard_normal((5, 7)) * 0.4, "b1": rng.standard_normal(7) * 0.1,
              "w2": rng.standard_normal((7, 3)) * 0.4, "b2": rng.standard_normal(3) * 0.1}
    xs = rng.standard_normal((batch, 5))
    ys = rng.standard_normal((batch, 3))
    return params, xs, ys


def _loss(m, params, x, y):
    h = m.tanh(x @ params["w1"] + params["b1"])
    out = h @ params["w2"] + params["b2"]
    return m.sum((out - y) ** 2) + m.mean(m.abs(h))


def test_per_example_gradients_vmap_of_grad(executor):
    params, xs, ys = _mlp_data()
    p = pytree.map(ax.asarray, params)
    per_example = ax.vmap(ax.grad(lambda q, x, y: _loss(ax, q, x, y)), in_axes=(None, 0, 0))(
        p, ax.asarray(xs), ax.asarray(ys))
    with ax.use_executor("numpy"):  # the reference: a loop over the examples on the NumPy executor
        q = pytree.map(ax.asarray, params)
        loop = [ax.grad(lambda q, x, y: _loss(ax, q, x, y))(q, ax.asarray(xs[i]), ax.asarray(ys[i])) for i in range(6)]
        want = pytree.map(lambda *g: np.stack([np.asarray(v) for v in g]), *loop)
    _assert_tree_close(per_example, want, tol=1e-10)


def test_per_example_gradients_match_jax():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    params, xs, ys = _mlp_data(seed=3)
    got = ax.vmap(ax.grad(lambda q, x, y: _loss(ax, q, x, y)), in_axes=(None, 0, 0))(
        pytree.map(ax.asarray, params), ax.asarray(xs), ax.asarray(ys))
    # one jax.jit program (eagerly each operation of JAX's forward and backward pass compiles on its own)
    want = jax.jit(jax.vmap(jax.grad(lambda q, x, y: _loss(jnp, q, x, y)), in_axes=(None, 0, 0)))(
        pytree.map(jnp.asarray, params), jnp.asarray(xs), jnp.asarray(ys))
    for k in params:
        np.testing.assert_allclose(np.asarray(got[k]), np.asarray(want[k]), rtol=1e-10, atol=1e-12)


def test_grad_of_vmap_and_jacobian_by_vmap(executor):
    params, xs, ys = _mlp_data(seed=1)
    p = pytree.map(ax.asarray, params)

    def batch_loss(q):
        return ax.sum(ax.vmap(lambda x, y: _loss(ax, q, x, y))(ax.asarray(xs), ax.asarray(ys)))

    got = ax.grad(batch_loss)(p)
    with ax.use_executor("numpy"):  # the reference: the sum over a loop of the examples on the NumPy executor
        want = ax.grad(lambda q: sum(_loss(ax, q, ax.asarray(xs[i]), ax.asarray(ys[i])) for i in range(6)))(
            pytree.map(ax.asarray, params))
    _assert_tree_close(got, pytree.map(np.asarray, want), tol=1e-10)
    # vmap of a vjp over the rows of the identity is the Jacobian
    x = ax.asarray(np.array([0.3, -0.7, 1.1]))
    _, pullback = ax.vjp(lambda v: ax.sin(v) * ax.sum(v), x)
    jac = ax.vmap(lambda ct: pullback(ct)[0])(ax.eye(3, dtype=ax.float64))
    np.testing.assert_allclose(np.asarray(jac), np.asarray(ax.jacrev(lambda v: ax.sin(v) * ax.sum(v))(x)), rtol=1e-12)


def test_vmap_of_jvp_and_of_custom_vjp(executor):
    @ax.custom_vjp
    def clipped(x):
        return ax.sin(x)

    clipped.defvjp(lambda x: (ax.sin(x), ax.cos(x)), lambda c, ct: (ct * c * 2.0,))
    xs = ax.asarray(np.linspace(-1, 1, 4).reshape(2, 2))
    got = ax.vmap(ax.grad(lambda v: ax.sum(clipped(v))))(xs)
    np.testing.assert_allclose(np.asarray(got), 2 * np.cos(np.linspace(-1, 1, 4).reshape(2, 2)), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(ax.vmap(clipped)(xs)), np.sin(np.asarray(xs)), rtol=1e-12)
    t = ax.vmap(lambda v: ax.jvp(ax.exp, (v,), (ax.ones_like(v),))[1])(xs)
    np.testing.assert_allclose(np.asarray(t), np.exp(np.asarray(xs)), rtol=1e-12)


def test_vmap_of_jit(executor):
    f = ax.jit(lambda a, b: ax.tanh(a @ b) + 1)
    a = np.random.default_rng(2).standard_normal((4, 3, 2))
    b = np.random.default_rng(3).standard_normal((2, 5))
    got = ax.vmap(f, in_axes=(0, None))(ax.asarray(a), ax.asarray(b))
    np.testing.assert_allclose(np.asarray(got), np.tanh(a @ b) + 1, rtol=1e-12, atol=1e-14)
