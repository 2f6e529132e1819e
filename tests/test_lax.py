"""arrayx.lax against jax.lax on every executor: convolution, windows, dynamic slices, top_k, index updates."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import arrayx as ax
from conformance import profile
from tests import covering
from tests.conftest import ALL_EXECUTORS, to_numpy

jax = pytest.importorskip("jax")

@pytest.fixture(autouse=True, scope="module")
def _jax_peer(jax_peer_in_64_bits_module):  # JAX, the peer here, in 64 bits (tests/conftest.py)
    yield

jnp = jax.numpy

TOL = {np.dtype("float32"): dict(rtol=2e-4, atol=2e-5), np.dtype("float64"): dict(rtol=1e-11, atol=1e-12)}

# name -> (lhs shape, rhs shape, keyword arguments of conv_general_dilated)
CONVS = {
    "valid": ((2, 3, 7, 6), (4, 3, 3, 2), dict(window_strides=(1, 1), padding="VALID")),
    "same_strided": ((2, 3, 7, 6), (4, 3, 3, 3), dict(window_strides=(2, 2), padding="SAME")),
    "same_lower": ((1, 2, 6, 5), (3, 2, 2, 2), dict(window_strides=(1, 2), padding="SAME_LOWER")),
    "explicit_negative": ((2, 2, 8, 6), (3, 2, 3, 2), dict(window_strides=(1, 2), padding=((2, -1), (1, 3)))),
    "rhs_dilation": ((2, 3, 9, 8), (2, 3, 3, 2), dict(window_strides=(1, 1), padding="SAME", rhs_dilation=(2, 3))),
    "lhs_dilation": ((2, 2, 5, 4), (3, 2, 3, 3), dict(window_strides=(1, 1), padding=((2, 2), (1, 1)),
                                                      lhs_dilation=(2, 2))),
    "groups": ((2, 4, 6, 6), (6, 2, 3, 3), dict(window_strides=(2, 1), padding="SAME", feature_group_count=2)),
    "depthwise": ((1, 3, 5, 5), (3, 1, 2, 2), dict(window_strides=(1, 1), padding="VALID", feature_group_count=3)),
    "nhwc": ((2, 6, 5, 3), (3, 2, 3, 4), dict(window_strides=(1, 1), padding="SAME",
                                              dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    "conv1d": ((2, 3, 9), (2, 3, 4), dict(window_strides=(2,), padding=((1, 2),), rhs_dilation=(2,))),
    "conv3d": ((1, 2, 4, 5, 3), (2, 2, 2, 3, 2), dict(window_strides=(1, 2, 1), padding="SAME")),
    "window_larger_than_input": ((1, 1, 2, 2), (1, 1, 3, 3), dict(window_strides=(1, 1), padding="VALID")),
}


def _on_executors(name: str, cases: list, numba_keeps: int, jax_rotates: bool = False,
                  jax_halves: bool = False) -> list:
    """``executor, *case`` parameters: every case on every executor, except Numba in the ci profile,
    where a seeded sample of ``numba_keeps`` cases runs (all in the deep profile): Numba's lax entries
    are the NumPy executor's own functions (executors/numba/__init__.py), so its other cases run the
    same code as NumPy's with the same operands.  ``jax_rotates``: on the jax executor (new XLA programs
    per case and dtype) the ci profile takes each case in one dtype, in turn (tests/covering.py).
    ``jax_halves``: on the jax executor the ci profile takes every other case, the second, fourth, ...
    (for the conv gradients: conv3d, explicit_negative, lhs_dilation, rhs_dilation, same_strided,
    window_larger_than_input; the others there in the deep profile, every case on numpy and dask in
    ci, and test_conv_check_grads_order_2 differentiates groups and conv1d on jax).  For ``parametrize(..., indirect=["executor"])``."""
    params = []
    for ex in ALL_EXECUTORS:
        own = covering.rotate(cases) if ex == "jax" and jax_rotates else cases
        if ex == "jax" and jax_halves and profile.current().sampled:
            own = own[1::2]
        for case in (profile.sample(f"test_lax.{name}.numba", cases, numba_keeps) if ex == "numba" else own):
            case = case if isinstance(case, tuple) else (case,)
            params.append(pytest.param(ex, *case, id="-".join(map(str, (ex, *case)))))
    return params


def _host(tree):
    return jax.tree.map(np.asarray, tree)


#: JAX's side of a check is computed once per module (functools.cache: every executor's item reuses
#: it) and under one jax.jit (one XLA program, where eager jax.grad compiles one per operation)


def _conv_operands(case, dtype="float64", seed=0):
    lshape, rshape, kw = CONVS[case]
    rng = np.random.default_rng(seed)
    return rng.normal(size=lshape).astype(dtype), rng.normal(size=rshape).astype(dtype), kw


@pytest.mark.parametrize("executor, case, dtype", _on_executors(
    "conv_values", [(c, d) for c in sorted(CONVS) for d in ("float32", "float64")], 6, jax_rotates=True),
    indirect=["executor"])
def test_conv_values_match_jax(executor, case, dtype):
    x, w, kw = _conv_operands(case, dtype)
    got = ax.lax.conv_general_dilated(ax.asarray(x), ax.asarray(w), **kw)
    want = jax.lax.conv_general_dilated(jnp.asarray(x), jnp.asarray(w), **kw)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(to_numpy(got), np.asarray(want), **TOL[np.dtype(dtype)])


@functools.cache
def _conv_gradients_reference(case):
    x, w, kw = _conv_operands(case, seed=1)
    loss = lambda a, b: jnp.sum(jnp.sin(jax.lax.conv_general_dilated(a, b, **kw)) ** 2)  # noqa: E731
    return _host(jax.jit(jax.grad(loss, argnums=(0, 1)))(jnp.asarray(x), jnp.asarray(w)))


@pytest.mark.parametrize("executor, case", _on_executors("conv_gradients", sorted(CONVS), 3, jax_halves=True),
                         indirect=["executor"])
def test_conv_gradients_match_jax(executor, case):
    """Gradients of sum(sin(conv)**2) with respect to both operands, against jax.grad."""
    x, w, kw = _conv_operands(case, seed=1)

    def loss(conv, sin, s):
        return lambda a, b: s(sin(conv(a, b, **kw)) ** 2)

    got = ax.grad(loss(ax.lax.conv_general_dilated, ax.sin, ax.sum), argnums=(0, 1))(ax.asarray(x), ax.asarray(w))
    want = _conv_gradients_reference(case)
    for g, h in zip(got, want):
        np.testing.assert_allclose(to_numpy(g), np.asarray(h), rtol=1e-10, atol=1e-11)


@pytest.mark.parametrize("case", ["same_strided", "groups", "lhs_dilation", "conv1d"])
def test_conv_check_grads_order_2(executor, case):
    x, w, kw = _conv_operands(case, seed=2)
    ax.check_grads(lambda a, b: ax.lax.conv_general_dilated(a, b, **kw), (ax.asarray(x), ax.asarray(w)), order=2)


@pytest.mark.parametrize("case", ["same_strided", "groups", "nhwc"])
def test_conv_vmap_and_jit(executor, case):
    x, w, kw = _conv_operands(case, seed=3)
    rng = np.random.default_rng(4)
    xs = np.stack([x, rng.normal(size=x.shape)])
    ws = np.stack([w, rng.normal(size=w.shape)])
    conv = lambda a, b: ax.lax.conv_general_dilated(a, b, **kw)  # noqa: E731
    ref = [[np.asarray(jax.lax.conv_general_dilated(jnp.asarray(a), jnp.asarray(b), **kw)) for b in ws] for a in xs]
    got = ax.vmap(conv, in_axes=(0, None))(ax.asarray(xs), ax.asarray(w))
    np.testing.assert_allclose(to_numpy(got), np.stack([ref[0][0], ref[1][0]]), rtol=1e-11, atol=1e-12)
    got = ax.vmap(conv, in_axes=(None, 0))(ax.asarray(x), ax.asarray(ws))
    np.testing.assert_allclose(to_numpy(got), np.stack([ref[0][0], ref[0][1]]), rtol=1e-11, atol=1e-12)
    got = ax.vmap(conv)(ax.asarray(xs), ax.asarray(ws))
    np.testing.assert_allclose(to_numpy(got), np.stack([ref[0][0], ref[1][1]]), rtol=1e-11, atol=1e-12)
    got = ax.jit(conv)(ax.asarray(x), ax.asarray(w))
    np.testing.assert_allclose(to_numpy(got), ref[0][0], rtol=1e-11, atol=1e-12)


# name -> (lhs shape, rhs shape, keyword arguments): three images, so that blocks of two leave a partial one
BLOCKED_CONVS = {
    "groups_strided_dilated": ((3, 4, 9, 8), (6, 2, 3, 2), dict(window_strides=(2, 1), padding=((-3, 1), (1, -1)),
                                                                 lhs_dilation=(2, 1), rhs_dilation=(1, 2),
                                                                 feature_group_count=2)),
    "nhwc_same": ((3, 7, 6, 4), (3, 3, 4, 5), dict(window_strides=(1, 1), padding="SAME",
                                                   dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    "conv1d_depthwise": ((3, 3, 11), (6, 1, 3), dict(window_strides=(2,), padding=((1, 2),), rhs_dilation=(2,),
                                                     feature_group_count=3)),
    "conv3d": ((3, 2, 4, 5, 3), (2, 2, 2, 3, 2), dict(window_strides=(1, 2, 1), padding="SAME")),
}


@functools.cache
def _column_blocks_reference(case):
    """JAX's convolution of the case's operands and the gradients of the sum of its squares."""
    lshape, rshape, kw = BLOCKED_CONVS[case]
    rng = np.random.default_rng(5)
    x, w = jnp.asarray(rng.normal(size=lshape)), jnp.asarray(rng.normal(size=rshape))
    conv = lambda a, b: jax.lax.conv_general_dilated(a, b, **kw)  # noqa: E731
    grads = jax.grad(lambda a, b: jnp.sum(conv(a, b) ** 2), argnums=(0, 1))
    return _host(jax.jit(lambda a, b: (conv(a, b), grads(a, b)))(x, w))


@pytest.mark.parametrize("executor, case, blocks", _on_executors(
    "column_blocks", [(c, b) for c in sorted(BLOCKED_CONVS) for b in ("one_row", "two_images")], 2),
    indirect=["executor"])
def test_conv_column_blocks_match_jax(executor, case, blocks, monkeypatch):
    """The host im2col in blocks smaller than the batch (its budget lowered): one output row of one
    image per block, or two images per block with a partial last block; values and gradients vs JAX
    (the kernel's gradient, by output position, then sums blocks of one or more features)."""
    from arrayx.executors.numpy import lax as numpy_lax
    from arrayx.lax import _conv

    lshape, rshape, kw = BLOCKED_CONVS[case]
    rng = np.random.default_rng(5)
    x, w = rng.normal(size=lshape), rng.normal(size=rshape)
    conv = lambda f: lambda a, b: f(a, b, **kw)  # noqa: E731
    want, want_grads = _column_blocks_reference(case)
    dn = _conv.conv_dimension_numbers(lshape, rshape, kw.get("dimension_numbers"))
    spatial, window = _conv._take(want.shape, dn.out_spec)[2:], _conv._take(rshape, dn.rhs_spec)[2:]
    row_bytes = _conv._take(lshape, dn.lhs_spec)[1] * int(np.prod(window)) * 8
    budget = 1 if blocks == "one_row" else 2 * int(np.prod(spatial)) * row_bytes
    plan = numpy_lax.column_blocks(3, spatial, row_bytes, budget)
    assert plan == ((1, 1) if blocks == "one_row" else (2, spatial[0]))
    monkeypatch.setattr(numpy_lax, "COLUMN_BYTES", budget)
    got = conv(ax.lax.conv_general_dilated)(ax.asarray(x), ax.asarray(w))
    np.testing.assert_allclose(to_numpy(got), np.asarray(want), rtol=1e-11, atol=1e-12)
    loss = lambda f, s: lambda a, b: s(conv(f)(a, b) ** 2)  # noqa: E731
    got = ax.grad(loss(ax.lax.conv_general_dilated, ax.sum), argnums=(0, 1))(ax.asarray(x), ax.asarray(w))
    for g, h in zip(got, want_grads):
        np.testing.assert_allclose(to_numpy(g), np.asarray(h), rtol=1e-10, atol=1e-10)


def _xla_ops(fn, *args) -> list:
    import re

    text = jax.jit(fn).lower(*args).compile().as_text()
    return sorted(re.findall(r"= \S+ ([a-z][\w-]*)\(", text))


def test_conv_on_jax_compiles_to_what_jax_compiles():
    """The jax executor's jit(grad(conv)) is one XLA convolution per cotangent, with no layout
    transposes or copies beyond those of jax.jit(jax.grad) itself (the speed goal)."""
    from arrayx.core.executor import get

    rng = np.random.default_rng(9)
    x, w, g = (rng.normal(size=s).astype(np.float32) for s in ((2, 8, 10, 10), (8, 8, 3, 3), (2, 8, 10, 10)))
    with ax.use_executor("jax"):
        xa, wa, ga = ax.asarray(x), ax.asarray(w), ax.asarray(g)
    conv = lambda a, b: ax.lax.conv_general_dilated(a, b, (1, 1), "SAME")  # noqa: E731
    jconv = lambda a, b: jax.lax.conv_general_dilated(a, b, (1, 1), "SAME")  # noqa: E731
    loss_grad = ax.grad(lambda a, b, c: ax.sum(conv(a, b) * c), argnums=(0, 1))
    jloss_grad = jax.grad(lambda a, b, c: jnp.sum(jconv(a, b) * c), argnums=(0, 1))
    jaxex = get("jax")
    for ours, theirs, args in ((conv, jconv, (x, w)), (loss_grad, jloss_grad, (x, w, g))):
        graph = ax.jit(ours).trace(*(xa, wa, ga)[:len(args)]).graph
        got = _xla_ops(jaxex.lower(graph), *args)
        assert got == _xla_ops(theirs, *args)
        assert got.count("convolution") == len(args) - 1


def test_conv_shorthand_and_errors(executor):
    x, w, _ = _conv_operands("valid")
    got = ax.lax.conv(ax.asarray(x), ax.asarray(w), (1, 1), "SAME")
    np.testing.assert_allclose(to_numpy(got), np.asarray(jax.lax.conv(jnp.asarray(x), jnp.asarray(w), (1, 1), "SAME")),
                               rtol=1e-11)
    with pytest.raises(ValueError, match="feature_group_count"):
        ax.lax.conv_general_dilated(ax.asarray(x), ax.asarray(w), (1, 1), "VALID", feature_group_count=2)
    with pytest.raises(ValueError, match="padding"):
        ax.lax.conv_general_dilated(ax.asarray(x), ax.asarray(w), (1, 1), "FULL")
    with pytest.raises(NotImplementedError, match="batch_group_count"):
        ax.lax.conv_general_dilated(ax.asarray(x), ax.asarray(w), (1, 1), "VALID", batch_group_count=2)


# -- windows ------------------------------------------------------------------------------------------

WINDOWS = {
    "max_valid": ("max", (1, 1, 2, 2), (1, 1, 2, 2), "VALID", None, None),
    "max_same": ("max", (1, 1, 3, 3), (1, 1, 2, 2), "SAME", None, None),
    "sum_explicit": ("sum", (1, 2, 3, 2), (1, 1, 2, 1), ((0, 0), (1, 0), (1, 2), (0, 1)), None, None),
    "min_dilated": ("min", (1, 1, 2, 2), (1, 1, 1, 1), "VALID", None, (1, 1, 2, 2)),
    "sum_base_dilation": ("sum", (1, 1, 2, 2), (1, 1, 1, 1), "VALID", (1, 1, 2, 1), None),
    "max_negative_padding": ("max", (1, 1, 2, 3), (1, 1, 1, 2), ((0, 0), (0, 0), (-1, 1), (1, -2)), None, None),
    "max_base_dilation": ("max", (1, 1, 3, 2), (1, 1, 2, 1), "SAME", (1, 1, 2, 1), None),
}
_JAX_OPS = {"max": (jax.lax.max, -np.inf, "maximum"), "sum": (jax.lax.add, 0.0, "add"),
            "min": (jax.lax.min, np.inf, "minimum")}


@functools.cache
def _reduce_window_reference(case):
    """JAX's reduce_window of the case, and the gradient of sum(sin(.)) where JAX has a VJP (else None)."""
    kind, window, strides, padding, base, wdil = WINDOWS[case]
    x = jnp.asarray(np.random.default_rng(5).normal(size=(2, 3, 7, 6)))
    jop, init, _ = _JAX_OPS[kind]
    rw = lambda v: jax.lax.reduce_window(v, init, jop, window, strides, padding, base, wdil)  # noqa: E731
    if wdil is not None or case == "max_negative_padding":
        return _host(jax.jit(rw)(x)), None
    return _host(jax.jit(lambda v: (rw(v), jax.grad(lambda u: jnp.sum(jnp.sin(rw(u))))(v)))(x))


@pytest.mark.parametrize("executor, case", _on_executors("reduce_window", sorted(WINDOWS), 3), indirect=["executor"])
def test_reduce_window_matches_jax(executor, case):
    kind, window, strides, padding, base, wdil = WINDOWS[case]
    x = np.random.default_rng(5).normal(size=(2, 3, 7, 6))
    jop, init, name = _JAX_OPS[kind]
    args = (window, strides, padding, base, wdil)
    got = ax.lax.reduce_window(ax.asarray(x), init, getattr(ax, name), *args)
    want, h = _reduce_window_reference(case)
    np.testing.assert_allclose(to_numpy(got), np.asarray(want), rtol=1e-12)
    if executor == "jax" and profile.current().sampled and sorted(WINDOWS).index(case) % 2:
        return  # new XLA programs per gradient there: the ci profile differentiates every other case
        # (max_base_dilation, max_same, min_dilated, sum_explicit); all of them on numpy, dask and in deep
    g = ax.grad(lambda v: ax.sum(ax.sin(ax.lax.reduce_window(v, init, getattr(ax, name), *args))))(ax.asarray(x))
    if wdil is not None or case == "max_negative_padding":  # JAX has no VJP of these; check numerically
        ax.check_grads(lambda v: ax.lax.reduce_window(v, init, getattr(ax, name), *args), (ax.asarray(x),), order=1)
        return
    np.testing.assert_allclose(to_numpy(g), np.asarray(h), rtol=1e-11, atol=1e-12)


def test_reduce_window_init_value_and_integers(executor):
    x = np.arange(12, dtype=np.int64).reshape(3, 4)
    got = ax.lax.reduce_window(ax.asarray(x), 5, ax.add, (2, 2), (1, 2), "VALID")
    want = jax.lax.reduce_window(jnp.asarray(x), 5, jax.lax.add, (2, 2), (1, 2), "VALID")
    np.testing.assert_array_equal(to_numpy(got), np.asarray(want))
    got = ax.lax.reduce_window(ax.asarray(x), np.iinfo(np.int64).min, ax.maximum, (3, 3), (1, 1), "SAME")
    want = jax.lax.reduce_window(jnp.asarray(x), np.iinfo(np.int64).min, jax.lax.max, (3, 3), (1, 1), "SAME")
    np.testing.assert_array_equal(to_numpy(got), np.asarray(want))
    assert ax.lax.reduce_window(ax.zeros((1, 3)), 0.0, ax.add, (1, 4), None, "VALID").shape == (1, 0)
    with pytest.raises(NotImplementedError, match="computation"):
        ax.lax.reduce_window(ax.asarray(x), 0, lambda a, b: a - b, (2, 2))


_POOL_REFERENCES: dict = {}


def _pools_reference(x, full_pad):
    """JAX's max and sum windows of 2x2 over ``x``, the count of covered elements per window, and
    the gradient of sum((sum window / counts) ** 2); once per padding, one jax.jit program."""
    if full_pad not in _POOL_REFERENCES:
        args = ((1, 1, 2, 2), (1, 1, 2, 2), full_pad)

        def pools(v):
            counts = jax.lax.reduce_window(jnp.ones_like(v), 0.0, jax.lax.add, *args)
            loss = lambda u: jnp.sum((jax.lax.reduce_window(u, 0.0, jax.lax.add, *args) / counts) ** 2)  # noqa: E731
            return (jax.lax.reduce_window(v, -jnp.inf, jax.lax.max, *args),
                    jax.lax.reduce_window(v, 0.0, jax.lax.add, *args), counts, jax.grad(loss)(v))

        _POOL_REFERENCES[full_pad] = _host(jax.jit(pools)(jnp.asarray(x)))
    return _POOL_REFERENCES[full_pad]


@pytest.mark.parametrize("padding", ["VALID", "SAME", ((1, 1), (0, 1))])
def test_pools_nchw(executor, padding):
    x = np.random.default_rng(6).normal(size=(2, 3, 5, 6)).astype(np.float32)
    full_pad = padding if isinstance(padding, str) else ((0, 0), (0, 0)) + padding
    mx, sm, counts, h = _pools_reference(x, full_pad)
    xa = ax.asarray(x)
    np.testing.assert_allclose(to_numpy(ax.lax.max_pool(xa, (2, 2), padding=padding)), np.asarray(mx), rtol=1e-6)
    np.testing.assert_allclose(to_numpy(ax.lax.sum_pool(xa, (2, 2), padding=padding)), np.asarray(sm), rtol=1e-6)
    avg = ax.lax.avg_pool(xa, (2, 2), padding=padding)
    assert avg.dtype == ax.float32
    np.testing.assert_allclose(to_numpy(avg), np.asarray(sm / counts), rtol=1e-6)  # divides by covered elements
    np.testing.assert_allclose(to_numpy(ax.lax.avg_pool(xa, (2, 2), padding=padding, count_include_pad=True)),
                               np.asarray(sm / 4), rtol=1e-6)
    if padding == "SAME":  # the corner windows of a 5-row input cover 1 row: counts of 2 and 1
        assert np.asarray(counts).min() < 4
    g = ax.grad(lambda v: ax.sum(ax.lax.avg_pool(v, (2, 2), padding=padding) ** 2))(xa)
    np.testing.assert_allclose(to_numpy(g), np.asarray(h), rtol=1e-5, atol=1e-6)


def test_pool_axes_for_nhwc(executor):
    x = np.random.default_rng(7).normal(size=(2, 6, 4, 3))
    got = ax.lax.max_pool(ax.asarray(x), (2, 2), strides=(2, 1), axes=(1, 2))
    want = jax.lax.reduce_window(jnp.asarray(x), -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 1, 1), "VALID")
    np.testing.assert_allclose(to_numpy(got), np.asarray(want))
    ax.check_grads(lambda v: ax.lax.max_pool(v, (2, 2), axes=(1, 2)), (ax.asarray(x),), order=2)


def test_max_pool_ties_send_the_gradient_to_the_first_winner(executor):
    x = np.array([[[[1.0, 3.0, 2.0, 2.0], [3.0, 0.0, 2.0, 2.0]]]])  # windows: a 3 twice, then all 2s
    g = ax.grad(lambda v: ax.sum(ax.lax.max_pool(v, (2, 2)) * ax.asarray([5.0, 7.0])))(ax.asarray(x))
    np.testing.assert_array_equal(to_numpy(g), [[[[0.0, 5.0, 7.0, 0.0], [0.0, 0.0, 0.0, 0.0]]]])
    mn = ax.lax.min_pool(ax.asarray(-x), (2, 2))
    np.testing.assert_array_equal(to_numpy(mn), [[[[-3.0, -2.0]]]])


_MAX_POOL_REFERENCE: list = []


def _max_pool_reference(xs, t):
    """JAX's overlapping max pool of each member of ``xs``, the gradient of sum(sin(pool)) of each and
    the Hessian-vector product at ``xs[0]`` along ``t`` (one jax.jit program, once per module)."""
    if not _MAX_POOL_REFERENCE:
        def jpool(v):
            return jax.lax.reduce_window(v, -jnp.inf, jax.lax.max, (1, 1, 3, 2), (1, 1, 2, 1), "SAME")

        jloss = lambda v: jnp.sum(jnp.sin(jpool(v)))  # noqa: E731
        program = jax.jit(lambda vs, u: (jax.vmap(jpool)(vs), jax.vmap(jax.grad(jloss))(vs),
                                         jax.jvp(jax.grad(jloss), (vs[0],), (u,))[1]))
        _MAX_POOL_REFERENCE.append(_host(program(jnp.asarray(xs), jnp.asarray(t))))
    return _MAX_POOL_REFERENCE[0]


def test_max_pool_vmap_jit_and_second_order(executor):
    rng = np.random.default_rng(8)
    xs = rng.normal(size=(3, 2, 2, 6, 5))
    pool = lambda v: ax.lax.max_pool(v, (3, 2), strides=(2, 1), padding="SAME")  # noqa: E731 - overlapping
    t = rng.normal(size=xs.shape[1:])
    want, want_grads, want_hvp = _max_pool_reference(xs, t)
    np.testing.assert_allclose(to_numpy(ax.vmap(pool)(ax.asarray(xs))), want)
    np.testing.assert_allclose(to_numpy(ax.vmap(pool, in_axes=2, out_axes=2)(ax.asarray(np.moveaxis(xs, 0, 2)))),
                               np.moveaxis(want, 0, 2))
    loss = lambda v: ax.sum(ax.sin(pool(v)))  # noqa: E731
    got = ax.jit(ax.vmap(ax.grad(loss)))(ax.asarray(xs))
    np.testing.assert_allclose(to_numpy(got), want_grads, rtol=1e-12, atol=1e-12)
    hvp = lambda v, t: ax.jvp(ax.grad(loss), (v,), (t,))[1]  # noqa: E731 - scatter's transpose is select
    np.testing.assert_allclose(to_numpy(ax.jit(hvp)(ax.asarray(xs[0]), ax.asarray(t))), want_hvp,
                               rtol=1e-11, atol=1e-12)
    ax.check_grads(pool, (ax.asarray(xs[0]),), order=2)


# -- dynamic slices ------------------------------------------------------------------------------------


@pytest.mark.parametrize("starts", [(1, 2), (-1, 0), (5, 9), (-20, -7), (0, 3)])
def test_dynamic_slice_clamps_as_jax(executor, starts):
    x = np.arange(20.0).reshape(4, 5)
    want = jax.lax.dynamic_slice(jnp.asarray(x), starts, (2, 3))
    np.testing.assert_array_equal(to_numpy(ax.lax.dynamic_slice(ax.asarray(x), starts, (2, 3))), np.asarray(want))
    traced = ax.jit(lambda v, i, j: ax.lax.dynamic_slice(v, (i, j), (2, 3)))(
        ax.asarray(x), ax.asarray(starts[0]), ax.asarray(starts[1]))
    np.testing.assert_array_equal(to_numpy(traced), np.asarray(want))
    u = np.full((2, 3), -1.0)
    want = jax.lax.dynamic_update_slice(jnp.asarray(x), jnp.asarray(u), starts)
    got = ax.lax.dynamic_update_slice(ax.asarray(x), ax.asarray(u), starts)
    np.testing.assert_array_equal(to_numpy(got), np.asarray(want))
    got = ax.jit(lambda v, w, i: ax.lax.dynamic_update_slice(v, w, (i, starts[1])))(
        ax.asarray(x), ax.asarray(u), ax.asarray(starts[0]))
    np.testing.assert_array_equal(to_numpy(got), np.asarray(want))


def test_dynamic_slice_in_dim_and_grads(executor):
    x = np.arange(24.0).reshape(4, 6)
    for start in (2, -2, 7):
        want = jax.lax.dynamic_slice_in_dim(jnp.asarray(x), start, 3, axis=1)
        np.testing.assert_array_equal(to_numpy(ax.lax.dynamic_slice_in_dim(ax.asarray(x), start, 3, axis=1)),
                                      np.asarray(want))
        want = jax.lax.dynamic_update_slice_in_dim(jnp.asarray(x), jnp.zeros((4, 2)), start, axis=1)
        got = ax.lax.dynamic_update_slice_in_dim(ax.asarray(x), ax.zeros((4, 2)), start, axis=1)
        np.testing.assert_array_equal(to_numpy(got), np.asarray(want))
    got = ax.lax.dynamic_index_in_dim(ax.asarray(x), 1, axis=0, keepdims=False)
    np.testing.assert_array_equal(to_numpy(got), x[1])
    g = ax.grad(lambda v, i: ax.sum(ax.lax.dynamic_slice(v, (i, 1), (2, 2)) ** 2))(ax.asarray(x), ax.asarray(3))
    h = jax.grad(lambda v, i: jnp.sum(jax.lax.dynamic_slice(v, (i, 1), (2, 2)) ** 2))(jnp.asarray(x), 3)
    np.testing.assert_array_equal(to_numpy(g), np.asarray(h))
    starts = ax.asarray([1, 4])
    np.testing.assert_array_equal(to_numpy(ax.lax.dynamic_slice(ax.asarray(x), starts, (2, 2))), x[1:3, 4:6])
    with pytest.raises(TypeError, match="dynamic_update_slice"):
        ax.lax.dynamic_update_slice(ax.asarray(x), ax.zeros((1, 1), dtype=ax.float32), (0, 0))
    with pytest.raises(ValueError, match="slice_sizes"):
        ax.lax.dynamic_slice(ax.asarray(x), (0, 0), (5, 1))


def test_index_helpers_match_at(executor):
    x = np.arange(6.0)
    idx = np.array([0, 2, 2, 5])
    y = np.array([10.0, -1.0, 3.0, 7.0])
    xa, ia, ya = ax.asarray(x), ax.asarray(idx), ax.asarray(y)
    xj, ij, yj = jnp.asarray(x), jnp.asarray(idx), jnp.asarray(y)
    np.testing.assert_array_equal(to_numpy(ax.lax.index_add(xa, ia, ya)), np.asarray(xj.at[ij].add(yj)))
    np.testing.assert_array_equal(to_numpy(ax.lax.index_min(xa, ia, ya)), np.asarray(xj.at[ij].min(yj)))
    np.testing.assert_array_equal(to_numpy(ax.lax.index_max(xa, ia, ya)), np.asarray(xj.at[ij].max(yj)))
    np.testing.assert_array_equal(to_numpy(ax.lax.index_update(xa, slice(1, 3), 0.5)), [0, 0.5, 0.5, 3, 4, 5])
    np.testing.assert_array_equal(to_numpy(xa), x)  # functional: x itself is unchanged


# -- sorting -----------------------------------------------------------------------------------------------


_TOP_K_GRAD = jax.jit(jax.grad(lambda a: jnp.sum(jax.lax.top_k(a, 2)[0] ** 2)))  # compiled once, not per executor


def test_top_k_with_ties_matches_jax(executor):
    x = np.array([[3, 1, 3, 2, 3, 0], [5, 5, 1, 5, 2, 2]])
    for k in (0, 1, 3, 6):
        v, i = ax.lax.top_k(ax.asarray(x), k)
        jv, ji = jax.lax.top_k(jnp.asarray(x), k)
        np.testing.assert_array_equal(to_numpy(v), np.asarray(jv))
        np.testing.assert_array_equal(to_numpy(i), np.asarray(ji))
    xf = np.random.default_rng(8).normal(size=(3, 7))
    v, i = ax.lax.top_k(ax.asarray(xf), 3, axis=0)
    jv, ji = jax.lax.top_k(jnp.asarray(xf), 3, axis=0)
    np.testing.assert_array_equal(to_numpy(v), np.asarray(jv))
    np.testing.assert_array_equal(to_numpy(i), np.asarray(ji))
    g = ax.grad(lambda a: ax.sum(ax.lax.top_k(a, 2)[0] ** 2))(ax.asarray(xf))
    h = _TOP_K_GRAD(jnp.asarray(xf))
    np.testing.assert_allclose(to_numpy(g), np.asarray(h))
    with pytest.raises(ValueError, match="top_k"):
        ax.lax.top_k(ax.asarray(xf), 8)


def test_sort_key_val_matches_jax(executor):
    keys = np.array([[3.0, 1.0, 2.0, 1.0], [0.5, -1.0, 0.5, 2.0]])
    vals = np.arange(8).reshape(2, 4)
    for dim in (-1, 0):
        k, v = ax.lax.sort_key_val(ax.asarray(keys), ax.asarray(vals), dimension=dim)
        jk, jv = jax.lax.sort_key_val(jnp.asarray(keys), jnp.asarray(vals), dimension=dim)
        np.testing.assert_array_equal(to_numpy(k), np.asarray(jk))
        np.testing.assert_array_equal(to_numpy(v), np.asarray(jv))


def test_control_flow_is_reexported():
    for name in ("cond", "switch", "while_loop", "fori_loop", "scan", "map"):
        assert getattr(ax.lax, name) is getattr(ax, name)
    out = ax.lax.fori_loop(0, 4, lambda i, c: c + i, ax.asarray(0))
    assert int(out) == 6


def test_rules_cover_conv_and_windows():
    from arrayx.transforms.rules import coverage

    c = coverage()
    for name in ("conv", "reduce_window", "window_select", "window_scatter"):
        assert name not in c["jvp"] and name not in c["abstract_eval"] and name not in c["batch_loop"]
    for name in ("conv", "window_select", "window_scatter"):
        assert name not in c["transpose"]
