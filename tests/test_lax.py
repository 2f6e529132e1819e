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


def _jitted(fn, *operands):
    """``jax.jit(fn)(*operands)`` as NumPy arrays, the operands passed as the host arrays they are
    (``jnp.asarray`` of a host array compiles a program of its own per shape and dtype)."""
    return _host(jax.jit(fn)(*operands))


#: JAX's side of a check is computed once per module (functools.cache: every executor's item reuses
#: it), every case of a test in one jax.jit (one XLA program per test, where eager JAX compiles one
#: per operation, shape and dtype, and a program per case one per case)


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
    want = _conv_values_reference()[f"{case}/{dtype}"]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(to_numpy(got), want, **TOL[np.dtype(dtype)])


@functools.cache
def _conv_values_reference():
    """JAX's convolution of every case in both dtypes (by "case/dtype"), and ``lax.conv`` of the
    "valid" operands with SAME padding (test_conv_shorthand_and_errors, as "shorthand")."""
    operands = {f"{c}/{d}": _conv_operands(c, d)[:2] for c in CONVS for d in ("float32", "float64")}

    def every_case(ops):
        out = {k: jax.lax.conv_general_dilated(x, w, **CONVS[k.split("/")[0]][2]) for k, (x, w) in ops.items()}
        out["shorthand"] = jax.lax.conv(*ops["valid/float64"], (1, 1), "SAME")
        return out

    return _jitted(every_case, operands)


@functools.cache
def _conv_gradients_references():
    """jax.grad of sum(sin(conv)**2) of every case with respect to both operands, by case."""
    operands = {c: _conv_operands(c, seed=1)[:2] for c in CONVS}

    def every_case(ops):
        def loss(kw):
            return lambda a, b: jnp.sum(jnp.sin(jax.lax.conv_general_dilated(a, b, **kw)) ** 2)

        return {c: jax.grad(loss(CONVS[c][2]), argnums=(0, 1))(x, w) for c, (x, w) in ops.items()}

    return _jitted(every_case, operands)


@pytest.mark.parametrize("executor, case", _on_executors("conv_gradients", sorted(CONVS), 3, jax_halves=True),
                         indirect=["executor"])
def test_conv_gradients_match_jax(executor, case):
    """Gradients of sum(sin(conv)**2) with respect to both operands, against jax.grad."""
    x, w, kw = _conv_operands(case, seed=1)

    def loss(conv, sin, s):
        return lambda a, b: s(sin(conv(a, b, **kw)) ** 2)

    got = ax.grad(loss(ax.lax.conv_general_dilated, ax.sin, ax.sum), argnums=(0, 1))(ax.asarray(x), ax.asarray(w))
    want = _conv_gradients_references()[case]
    for g, h in zip(got, want):
        np.testing.assert_allclose(to_numpy(g), np.asarray(h), rtol=1e-10, atol=1e-11)


@pytest.mark.parametrize("case", ["same_strided", "groups", "lhs_dilation", "conv1d"])
def test_conv_check_grads_order_2(executor, case):
    x, w, kw = _conv_operands(case, seed=2)
    ax.check_grads(lambda a, b: ax.lax.conv_general_dilated(a, b, **kw), (ax.asarray(x), ax.asarray(w)), order=2)


VMAP_CASES = ("same_strided", "groups", "nhwc")


def _vmap_operands(case):
    x, w, kw = _conv_operands(case, seed=3)
    rng = np.random.default_rng(4)
    return np.stack([x, rng.normal(size=x.shape)]), np.stack([w, rng.normal(size=w.shape)]), kw


@functools.cache
def _conv_vmap_references():
    """JAX's convolution of each member of the batch of lhs with each of the batch of rhs, by case."""
    operands = {c: _vmap_operands(c)[:2] for c in VMAP_CASES}

    def every_case(ops):
        return {c: [[jax.lax.conv_general_dilated(a, b, **CONVS[c][2]) for b in ws] for a in xs]
                for c, (xs, ws) in ops.items()}

    return _jitted(every_case, operands)


#: the batched operands of test_conv_vmap_and_jit: lhs only, rhs only, both
VMAP_AXES = ((0, None), (None, 0), (0, 0))
#: case -> the one of VMAP_AXES the jax executor takes in the ci profile (new XLA programs per batching
#: there, about five each): every case and every batching once on jax (groups with both batched:
#: groups of groups); every case with every batching on numpy, numba, dask and in the deep profile
VMAP_AXES_ON_JAX = {"same_strided": (0, None), "nhwc": (None, 0), "groups": (0, 0)}


@pytest.mark.parametrize("case", VMAP_CASES)
def test_conv_vmap_and_jit(executor, case):
    xs, ws, kw = _vmap_operands(case)
    x, w = xs[0], ws[0]
    conv = lambda a, b: ax.lax.conv_general_dilated(a, b, **kw)  # noqa: E731
    ref = _conv_vmap_references()[case]
    axes = [VMAP_AXES_ON_JAX[case]] if executor == "jax" and profile.current().sampled else VMAP_AXES
    for in_axes in axes:
        got = ax.vmap(conv, in_axes=in_axes)(ax.asarray(xs if in_axes[0] == 0 else x),
                                             ax.asarray(ws if in_axes[1] == 0 else w))
        i, j = (1 if in_axes[0] == 0 else 0), (1 if in_axes[1] == 0 else 0)  # the second member's pair
        np.testing.assert_allclose(to_numpy(got), np.stack([ref[0][0], ref[i][j]]), rtol=1e-11, atol=1e-12)
    got = ax.jit(conv)(ax.asarray(x), ax.asarray(w))
    np.testing.assert_allclose(to_numpy(got), ref[0][0], rtol=1e-11, atol=1e-12)


def test_the_jax_rotations_keep_every_case_and_batching():
    """The jax executor's ci share of test_conv_vmap_and_jit runs every case and every batching, and
    test_pools_nchw's differentiated padding is one of its paddings."""
    assert set(VMAP_AXES_ON_JAX) == set(VMAP_CASES)
    assert sorted(VMAP_AXES_ON_JAX.values(), key=str) == sorted(VMAP_AXES, key=str)
    assert POOLS_GRADIENT_ON_JAX in POOL_PADDINGS


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


def _blocked_operands(case):
    lshape, rshape, kw = BLOCKED_CONVS[case]
    rng = np.random.default_rng(5)
    return rng.normal(size=lshape), rng.normal(size=rshape), kw


@functools.cache
def _column_blocks_references():
    """JAX's convolution of each case's operands and the gradients of the sum of its squares, by case."""
    operands = {c: _blocked_operands(c)[:2] for c in BLOCKED_CONVS}

    def every_case(ops):
        out = {}
        for c, (x, w) in ops.items():
            conv = lambda a, b, kw=BLOCKED_CONVS[c][2]: jax.lax.conv_general_dilated(a, b, **kw)  # noqa: E731
            out[c] = (conv(x, w), jax.grad(lambda a, b: jnp.sum(conv(a, b) ** 2), argnums=(0, 1))(x, w))
        return out

    return _jitted(every_case, operands)


@pytest.mark.parametrize("executor, case, blocks", _on_executors(
    "column_blocks", [(c, b) for c in sorted(BLOCKED_CONVS) for b in ("one_row", "two_images")], 2),
    indirect=["executor"])
def test_conv_column_blocks_match_jax(executor, case, blocks, monkeypatch):
    """The host im2col in blocks smaller than the batch (its budget lowered): one output row of one
    image per block, or two images per block with a partial last block; values and gradients vs JAX
    (the kernel's gradient, by output position, then sums blocks of one or more features)."""
    from arrayx.executors.numpy import lax as numpy_lax
    from arrayx.lax import _conv

    x, w, kw = _blocked_operands(case)
    lshape, rshape = x.shape, w.shape
    conv = lambda f: lambda a, b: f(a, b, **kw)  # noqa: E731
    want, want_grads = _column_blocks_references()[case]
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
    np.testing.assert_allclose(to_numpy(got), _conv_values_reference()["shorthand"], rtol=1e-11)
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


def _window_operand():
    return np.random.default_rng(5).normal(size=(2, 3, 7, 6))


def _has_jax_vjp(case) -> bool:
    return WINDOWS[case][5] is None and case != "max_negative_padding"


@functools.cache
def _reduce_window_references():
    """JAX's reduce_window of every case, with the gradient of sum(sin(.)) where JAX has a VJP (else None)."""

    def every_case(x):
        out = {}
        for case, (kind, window, strides, padding, base, wdil) in WINDOWS.items():
            jop, init, _ = _JAX_OPS[kind]
            rw = lambda v, a=(init, jop, window, strides, padding, base, wdil): jax.lax.reduce_window(v, *a)  # noqa: E731
            out[case] = (rw(x), jax.grad(lambda u: jnp.sum(jnp.sin(rw(u))))(x) if _has_jax_vjp(case) else None)
        return out

    return _jitted(every_case, _window_operand())


@pytest.mark.parametrize("executor, case", _on_executors("reduce_window", sorted(WINDOWS), 3), indirect=["executor"])
def test_reduce_window_matches_jax(executor, case):
    kind, window, strides, padding, base, wdil = WINDOWS[case]
    x = _window_operand()
    jop, init, name = _JAX_OPS[kind]
    args = (window, strides, padding, base, wdil)
    got = ax.lax.reduce_window(ax.asarray(x), init, getattr(ax, name), *args)
    want, h = _reduce_window_references()[case]
    np.testing.assert_allclose(to_numpy(got), np.asarray(want), rtol=1e-12)
    if executor == "jax" and profile.current().sampled and sorted(WINDOWS).index(case) % 2:
        return  # new XLA programs per gradient there: the ci profile differentiates every other case
        # (max_base_dilation, max_same, min_dilated, sum_explicit); all of them on numpy, dask and in deep
    g = ax.grad(lambda v: ax.sum(ax.sin(ax.lax.reduce_window(v, init, getattr(ax, name), *args))))(ax.asarray(x))
    if not _has_jax_vjp(case):  # JAX has no VJP of these (window dilation, negative padding); check numerically
        ax.check_grads(lambda v: ax.lax.reduce_window(v, init, getattr(ax, name), *args), (ax.asarray(x),), order=1)
        return
    np.testing.assert_allclose(to_numpy(g), np.asarray(h), rtol=1e-11, atol=1e-12)


@functools.cache
def _integer_windows_reference():
    """JAX's sum of 2x2 windows from 5 and max of 3x3 windows of arange(12) as 3x4 int64."""
    return _jitted(lambda v: (jax.lax.reduce_window(v, 5, jax.lax.add, (2, 2), (1, 2), "VALID"),
                              jax.lax.reduce_window(v, np.iinfo(np.int64).min, jax.lax.max, (3, 3), (1, 1), "SAME")),
                   np.arange(12, dtype=np.int64).reshape(3, 4))


def test_reduce_window_init_value_and_integers(executor):
    x = np.arange(12, dtype=np.int64).reshape(3, 4)
    want_sum, want_max = _integer_windows_reference()
    got = ax.lax.reduce_window(ax.asarray(x), 5, ax.add, (2, 2), (1, 2), "VALID")
    assert want_sum.dtype == np.int64
    np.testing.assert_array_equal(to_numpy(got), want_sum)
    got = ax.lax.reduce_window(ax.asarray(x), np.iinfo(np.int64).min, ax.maximum, (3, 3), (1, 1), "SAME")
    np.testing.assert_array_equal(to_numpy(got), want_max)
    assert ax.lax.reduce_window(ax.zeros((1, 3)), 0.0, ax.add, (1, 4), None, "VALID").shape == (1, 0)
    with pytest.raises(NotImplementedError, match="computation"):
        ax.lax.reduce_window(ax.asarray(x), 0, lambda a, b: a - b, (2, 2))


POOL_PADDINGS = ["VALID", "SAME", ((1, 1), (0, 1))]
#: the padding whose avg_pool gradient the jax executor checks in the ci profile (test_pools_nchw)
POOLS_GRADIENT_ON_JAX = "SAME"


def _pool_operands():
    """The NCHW float32 operand of test_pools_nchw and the NHWC float64 one of test_pool_axes_for_nhwc."""
    return (np.random.default_rng(6).normal(size=(2, 3, 5, 6)).astype(np.float32),
            np.random.default_rng(7).normal(size=(2, 6, 4, 3)))


@functools.cache
def _pools_references():
    """Per padding (its index in POOL_PADDINGS): JAX's max and sum windows of 2x2 over the NCHW operand,
    the count of covered elements per window, and the gradient of sum((sum window / counts) ** 2); and
    (as "nhwc") the max of 2x2 windows with strides (2, 1) over axes 1 and 2 of the NHWC operand."""

    def every_padding(v, nhwc):
        out = {}
        for i, padding in enumerate(POOL_PADDINGS):
            args = ((1, 1, 2, 2), (1, 1, 2, 2), padding if isinstance(padding, str) else ((0, 0), (0, 0)) + padding)
            counts = jax.lax.reduce_window(jnp.ones_like(v), 0.0, jax.lax.add, *args)
            loss = lambda u, a=args, n=counts: jnp.sum((jax.lax.reduce_window(u, 0.0, jax.lax.add, *a) / n) ** 2)  # noqa: E731
            out[str(i)] = (jax.lax.reduce_window(v, -jnp.inf, jax.lax.max, *args),
                           jax.lax.reduce_window(v, 0.0, jax.lax.add, *args), counts, jax.grad(loss)(v))
        out["nhwc"] = jax.lax.reduce_window(nhwc, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 1, 1), "VALID")
        return out

    return _jitted(every_padding, *_pool_operands())


@pytest.mark.parametrize("padding", POOL_PADDINGS)
def test_pools_nchw(executor, padding):
    x = _pool_operands()[0]
    mx, sm, counts, h = _pools_references()[str(POOL_PADDINGS.index(padding))]
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
    if executor == "jax" and profile.current().sampled and padding != POOLS_GRADIENT_ON_JAX:
        return  # new XLA programs per padding there (about a dozen for the gradient): the ci profile
        # differentiates the SAME padding (partial windows, so the divisor differs per window); every
        # padding's gradient on numpy, numba, dask and in the deep profile
    g = ax.grad(lambda v: ax.sum(ax.lax.avg_pool(v, (2, 2), padding=padding) ** 2))(xa)
    np.testing.assert_allclose(to_numpy(g), np.asarray(h), rtol=1e-5, atol=1e-6)


def test_pool_axes_for_nhwc(executor):
    x = _pool_operands()[1]
    got = ax.lax.max_pool(ax.asarray(x), (2, 2), strides=(2, 1), axes=(1, 2))
    np.testing.assert_allclose(to_numpy(got), _pools_references()["nhwc"])
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
        _MAX_POOL_REFERENCE.append(_host(program(xs, t)))
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


SLICE_STARTS = [(1, 2), (-1, 0), (5, 9), (-20, -7), (0, 3)]


@functools.cache
def _dynamic_slice_references():
    """JAX's 2x3 slice of arange(20) as 4x5 from each of SLICE_STARTS, and its update by -1 there."""

    def every_start(x, u):
        return [(jax.lax.dynamic_slice(x, s, (2, 3)), jax.lax.dynamic_update_slice(x, u, s)) for s in SLICE_STARTS]

    return _jitted(every_start, np.arange(20.0).reshape(4, 5), np.full((2, 3), -1.0))


@pytest.mark.parametrize("starts", SLICE_STARTS)
def test_dynamic_slice_clamps_as_jax(executor, starts):
    x = np.arange(20.0).reshape(4, 5)
    want, want_update = _dynamic_slice_references()[SLICE_STARTS.index(starts)]
    np.testing.assert_array_equal(to_numpy(ax.lax.dynamic_slice(ax.asarray(x), starts, (2, 3))), want)
    traced = ax.jit(lambda v, i, j: ax.lax.dynamic_slice(v, (i, j), (2, 3)))(
        ax.asarray(x), ax.asarray(starts[0]), ax.asarray(starts[1]))
    np.testing.assert_array_equal(to_numpy(traced), want)
    u = np.full((2, 3), -1.0)
    want = want_update
    got = ax.lax.dynamic_update_slice(ax.asarray(x), ax.asarray(u), starts)
    np.testing.assert_array_equal(to_numpy(got), np.asarray(want))
    got = ax.jit(lambda v, w, i: ax.lax.dynamic_update_slice(v, w, (i, starts[1])))(
        ax.asarray(x), ax.asarray(u), ax.asarray(starts[0]))
    np.testing.assert_array_equal(to_numpy(got), np.asarray(want))


IN_DIM_STARTS = (2, -2, 7)


@functools.cache
def _in_dim_references():
    """JAX's slices of 3 columns of arange(24) as 4x6 from each of IN_DIM_STARTS, its updates by two
    columns of zeros there, and the gradient of the sum of squares of its 2x2 slice at (3, 1)."""

    def every_start(x):
        cols = [(jax.lax.dynamic_slice_in_dim(x, s, 3, axis=1),
                 jax.lax.dynamic_update_slice_in_dim(x, jnp.zeros((4, 2)), s, axis=1)) for s in IN_DIM_STARTS]
        return cols, jax.grad(lambda v, i: jnp.sum(jax.lax.dynamic_slice(v, (i, 1), (2, 2)) ** 2))(x, 3)

    return _jitted(every_start, np.arange(24.0).reshape(4, 6))


def test_dynamic_slice_in_dim_and_grads(executor):
    x = np.arange(24.0).reshape(4, 6)
    cols, h = _in_dim_references()
    for start, (want, want_update) in zip(IN_DIM_STARTS, cols):
        np.testing.assert_array_equal(to_numpy(ax.lax.dynamic_slice_in_dim(ax.asarray(x), start, 3, axis=1)), want)
        got = ax.lax.dynamic_update_slice_in_dim(ax.asarray(x), ax.zeros((4, 2)), start, axis=1)
        np.testing.assert_array_equal(to_numpy(got), want_update)
    got = ax.lax.dynamic_index_in_dim(ax.asarray(x), 1, axis=0, keepdims=False)
    np.testing.assert_array_equal(to_numpy(got), x[1])
    g = ax.grad(lambda v, i: ax.sum(ax.lax.dynamic_slice(v, (i, 1), (2, 2)) ** 2))(ax.asarray(x), ax.asarray(3))
    np.testing.assert_array_equal(to_numpy(g), h)
    starts = ax.asarray([1, 4])
    np.testing.assert_array_equal(to_numpy(ax.lax.dynamic_slice(ax.asarray(x), starts, (2, 2))), x[1:3, 4:6])
    with pytest.raises(TypeError, match="dynamic_update_slice"):
        ax.lax.dynamic_update_slice(ax.asarray(x), ax.zeros((1, 1), dtype=ax.float32), (0, 0))
    with pytest.raises(ValueError, match="slice_sizes"):
        ax.lax.dynamic_slice(ax.asarray(x), (0, 0), (5, 1))


def _index_operands():
    return np.arange(6.0), np.array([0, 2, 2, 5]), np.array([10.0, -1.0, 3.0, 7.0])


@functools.cache
def _index_references():
    """JAX's x.at[idx].add(y), .min(y) and .max(y) (a repeated index among them)."""
    return _jitted(lambda a, i, b: (a.at[i].add(b), a.at[i].min(b), a.at[i].max(b)), *_index_operands())


def test_index_helpers_match_at(executor):
    x, idx, y = _index_operands()
    xa, ia, ya = ax.asarray(x), ax.asarray(idx), ax.asarray(y)
    added, smallest, largest = _index_references()
    np.testing.assert_array_equal(to_numpy(ax.lax.index_add(xa, ia, ya)), added)
    np.testing.assert_array_equal(to_numpy(ax.lax.index_min(xa, ia, ya)), smallest)
    np.testing.assert_array_equal(to_numpy(ax.lax.index_max(xa, ia, ya)), largest)
    np.testing.assert_array_equal(to_numpy(ax.lax.index_update(xa, slice(1, 3), 0.5)), [0, 0.5, 0.5, 3, 4, 5])
    np.testing.assert_array_equal(to_numpy(xa), x)  # functional: x itself is unchanged


# -- sorting -----------------------------------------------------------------------------------------------


TOP_KS = (0, 1, 3, 6)


def _top_k_operands():
    return np.array([[3, 1, 3, 2, 3, 0], [5, 5, 1, 5, 2, 2]]), np.random.default_rng(8).normal(size=(3, 7))


@functools.cache
def _top_k_references():
    """JAX's top_k of the tied integers for each of TOP_KS, top 3 of the floats along axis 0, and the
    gradient of the sum of squares of their top 2 (along the last axis)."""
    return _jitted(lambda x, xf: ([jax.lax.top_k(x, k) for k in TOP_KS], jax.lax.top_k(xf, 3, axis=0),
                                  jax.grad(lambda a: jnp.sum(jax.lax.top_k(a, 2)[0] ** 2))(xf)),
                   *_top_k_operands())


def test_top_k_with_ties_matches_jax(executor):
    x, xf = _top_k_operands()
    per_k, (jv0, ji0), h = _top_k_references()
    for k, (jv, ji) in zip(TOP_KS, per_k):
        v, i = ax.lax.top_k(ax.asarray(x), k)
        np.testing.assert_array_equal(to_numpy(v), jv)
        np.testing.assert_array_equal(to_numpy(i), ji)
    v, i = ax.lax.top_k(ax.asarray(xf), 3, axis=0)
    np.testing.assert_array_equal(to_numpy(v), jv0)
    np.testing.assert_array_equal(to_numpy(i), ji0)
    g = ax.grad(lambda a: ax.sum(ax.lax.top_k(a, 2)[0] ** 2))(ax.asarray(xf))
    np.testing.assert_allclose(to_numpy(g), h)
    with pytest.raises(ValueError, match="top_k"):
        ax.lax.top_k(ax.asarray(xf), 8)


@functools.cache
def _sort_key_val_references():
    """JAX's sort_key_val of the tied keys and their values along the last axis and along axis 0."""
    keys = np.array([[3.0, 1.0, 2.0, 1.0], [0.5, -1.0, 0.5, 2.0]])
    return keys, _jitted(lambda k, v: [jax.lax.sort_key_val(k, v, dimension=d) for d in (-1, 0)],
                         keys, np.arange(8).reshape(2, 4))


def test_sort_key_val_matches_jax(executor):
    keys, per_dim = _sort_key_val_references()
    vals = np.arange(8).reshape(2, 4)
    for dim, (jk, jv) in zip((-1, 0), per_dim):
        k, v = ax.lax.sort_key_val(ax.asarray(keys), ax.asarray(vals), dimension=dim)
        np.testing.assert_array_equal(to_numpy(k), jk)
        np.testing.assert_array_equal(to_numpy(v), jv)


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
