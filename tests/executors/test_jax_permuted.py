"""Deferred transposes on the JAX executor (arrayx/executors/jax/permuted.py): ``x.T`` and
``permute_dims`` of a buffer of 1 MiB or more record the base and the axes; every path that takes
such a buffer (elementwise, reductions, matmul, everything else, host views, jit, lazy, writes and
views) gives the NumPy executor's values."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as xp
from arrayx.core import executor as base
from tests import covering
from tests.conftest import assert_matches_numpy, assert_same, on_numpy
from tests.executors.conftest import only_on

pytestmark = only_on("jax")
ROWS, COLS = 600, 300  # float64: 1.4 MB, above permuted.MIN_BYTES


def _permuted():
    from arrayx.executors.jax.permuted import Permuted

    return Permuted


def _data(shape=(ROWS, COLS), seed=0, dtype=np.float64):
    return np.random.default_rng(seed).normal(size=shape).astype(dtype)


def _big(shape=(ROWS, COLS), seed=0):
    return xp.asarray(_data(shape, seed))


def test_large_transposes_are_deferred_and_small_ones_are_not():
    Permuted = _permuted()
    x = _big()
    for t in (x.T, xp.matrix_transpose(x), xp.permute_dims(x, (1, 0)), x.mT):
        assert t._buf.__class__ is Permuted and t._buf.base is x._buf
        assert t.shape == (COLS, ROWS) and t.dtype == x.dtype
        assert_same(t, np.asarray(x).T)
    small = xp.asarray(_data((10, 20)))
    assert small.T._buf.__class__ is not Permuted
    assert_same(small.T, np.asarray(small).T)
    # a transpose of a deferred transpose composes: x.T.T is x's own buffer again
    assert x.T.T._buf is x._buf
    y = xp.asarray(_data((40, 50, 80)))
    p = xp.permute_dims(xp.permute_dims(y, (2, 0, 1)), (1, 0, 2))
    assert p._buf.__class__ is Permuted and p._buf.axes == (0, 2, 1)
    assert_same(p, np.transpose(np.transpose(np.asarray(y), (2, 0, 1)), (1, 0, 2)))


def test_numpy_asarray_of_a_deferred_transpose_is_a_host_view_without_a_copy():
    x = _big()
    t = x.T
    host = np.asarray(t._buf)
    assert host.flags.f_contiguous and not host.flags.c_contiguous
    assert np.shares_memory(host, np.asarray(x._buf))
    np.testing.assert_array_equal(host, np.asarray(x).T)
    np.testing.assert_array_equal(np.asarray(t), np.asarray(x).T)
    np.testing.assert_array_equal(np.asarray(t._buf, dtype=np.float32), np.asarray(x).T.astype(np.float32))
    assert not np.shares_memory(np.asarray(t._buf, copy=True), np.asarray(x._buf))


@pytest.mark.parametrize("fn", [
    lambda t, x: xp.exp(t),
    lambda t, x: -t,
    lambda t, x: t * 2.5 + 1,
    lambda t, x: 2.0 ** t,
    lambda t, x: t ** 2.0,
    lambda t, x: t > 0,
    lambda t, x: xp.astype(t, xp.float32),
    lambda t, x: xp.astype(t, xp.float64, copy=True),
    lambda t, x: t - xp.mean(t, axis=-1, keepdims=True),  # broadcast column operand
    lambda t, x: t / xp.sum(t, axis=0),  # broadcast row operand (fewer dimensions)
    lambda t, x: t + t,  # both deferred, the same axes
    lambda t, x: t * xp.asarray(np.asarray(x).T.copy()),  # a plain operand of the full shape
    lambda t, x: xp.where(t > 0, t, 0.0),
    lambda t, x: xp.atan2(t, t + 1),
    lambda t, x: xp.maximum(t, 0.5),
], ids=["exp", "neg", "affine", "rpow", "square", "compare", "astype32", "astype-copy", "minus-mean", "div-sum",
        "t+t", "times-plain", "where", "atan2", "maximum"])
def test_elementwise_ops_on_a_deferred_transpose_match_numpy(fn):
    x = _big()
    got = assert_matches_numpy(lambda x: fn(x.T, x), x)
    assert got.shape == (COLS, ROWS)


# Each case is new XLA programs: the ci profile takes each (name, axis) with keepdims False or True in
# turn (tests/covering.rotate; both values on every function), the deep profile every case.
@pytest.mark.parametrize("name, axis, keepdims", covering.rotate(
    [(name, axis, keepdims) for keepdims in (False, True) for axis in [None, 0, 1, -1, (0, 1)]
     for name in ["sum", "mean", "prod", "max", "min", "std", "var", "any", "all"]]))
def test_reductions_of_a_deferred_transpose_match_numpy(name, axis, keepdims):
    x = _big()
    if name == "prod":
        x = 1.0 + x / 1000.0
    if name in ("any", "all"):
        x = x > -2.5

    def f(x):
        return getattr(xp, name)(x.T, axis=axis, keepdims=keepdims)

    got = f(x)
    want = on_numpy(f, x)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-12)


def test_reductions_of_a_3d_permutation_keep_the_axis_order():
    y = xp.asarray(_data((30, 40, 500)))
    # each case a new XLA program: the ci profile takes each (axes, axis) with keepdims False or True in
    # turn (tests/covering.rotate; both values on every permutation), the deep profile every case
    for axes, axis, keepdims in covering.rotate([(axes, axis, keepdims) for axes in [(2, 0, 1), (1, 2, 0), (0, 2, 1)]
                                                 for axis in [0, 1, 2, (0, 2), (1, 2)] for keepdims in (False, True)]):
        def f(y):
            return xp.sum(xp.permute_dims(y, axes), axis=axis, keepdims=keepdims)

        got, want = f(y), on_numpy(f, y)
        assert got.shape == want.shape
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("fn", [
    lambda a, b: a.T @ b,  # left operand transposed
    lambda a, b: b.T @ a.T.T,  # via a composed transpose (plain again)
    lambda a, b: (a.T @ b.T.T).T,  # the result transposed (small: not deferred)
    lambda a, b: a.T @ a,  # a Gram matrix, one buffer on both sides
    lambda a, b: xp.matmul(a[:COLS].T, b.T),  # a plain square matrix times a transposed one
], ids=["left", "composed", "result-T", "gram", "right"])
def test_matmul_folds_a_matrix_transpose_and_matches_numpy(fn):
    a, b = _big(seed=1), _big(seed=2)
    got = fn(a, b)
    want = on_numpy(fn, a, b)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-10)


def test_matmul_of_stacked_matrix_transposes_matches_numpy():
    a = xp.asarray(_data((4, 300, 200), seed=3))
    b = xp.asarray(_data((4, 300, 100), seed=4))
    for f in (lambda a, b: a.mT @ b, lambda a, b: b.mT @ a, lambda a, b: xp.permute_dims(a, (0, 2, 1)) @ b):
        got, want = f(a, b), on_numpy(f, a, b)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("fn", [
    lambda t: xp.reshape(t, (-1,)),
    lambda t: t[3:7, ::5],
    lambda t: t[4],
    lambda t: t[xp.asarray([0, 5, 2])],
    lambda t: t[t > 1.0],
    lambda t: xp.concat([t, t], axis=0),
    lambda t: xp.sort(t, axis=1),
    lambda t: xp.cumulative_sum(t, axis=1),
    lambda t: xp.flip(t, axis=0),
    lambda t: xp.linalg.matrix_norm(t[:, :COLS]),
    lambda t: xp.tensordot(t, t, axes=([1], [1])),
    lambda t: xp.vecdot(t, t, axis=0),
    lambda t: xp.clip(t, -0.5, 0.5),
    lambda t: xp.argmax(t, axis=1),
], ids=["reshape", "slice", "row", "take", "mask", "concat", "sort", "cumsum", "flip", "norm", "tensordot",
        "vecdot", "clip", "argmax"])
def test_other_ops_compute_the_transpose_and_match_numpy(fn):
    x = _big()
    got = fn(x.T)
    want = on_numpy(lambda x: fn(x.T), x)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-10)


def test_the_transpose_is_computed_once_for_ops_run_op_by_op():
    x = _big()
    t = x.T
    buf = t._buf
    xp.reshape(t, (-1,))  # compiled: the transpose is an operation of its program
    assert buf._full is None
    assert_same(xp.roll(t, 3, axis=1), np.roll(np.asarray(x).T, 3, axis=1))  # op by op: computed
    full = buf._full
    assert full is not None
    assert_same(xp.nonzero(t > 1.0)[1], np.nonzero(np.asarray(x).T > 1.0)[1])
    assert buf._full is full


def test_an_integer_index_array_that_is_a_deferred_transpose_takes_the_general_path():
    idx_host = np.random.default_rng(5).integers(0, ROWS, size=(COLS, 700)).astype(np.int64)
    idx = xp.asarray(np.ascontiguousarray(idx_host.T))  # (700, 300) int64: 1.7 MB
    x = xp.asarray(_data((ROWS,)))
    t = idx.T
    assert t._buf.__class__ is _permuted()
    got = x[t]
    assert_same(got, np.asarray(x)[idx_host])
    got2 = xp.asarray(_data((ROWS, 3)))[t, 1]
    assert got2.shape == (COLS, 700)


def test_writes_through_a_deferred_transpose_reach_the_base_and_views():
    xn = _data()
    x = xp.asarray(xn)
    t = x.T
    assert t._buf.__class__ is _permuted()
    t[2, 5] = 100.0  # x.T is a view of x: the write reaches x
    want = xn.copy()
    want[5, 2] = 100.0
    assert_same(x, want)
    assert_same(t, want.T)
    x[0, 0] = -7.0  # and a write to x reaches the view
    want[0, 0] = -7.0
    assert_same(t, want.T)
    t += 1.0
    want += 1.0
    assert_same(x, want)
    y = x.T.at[1, 2].set(3.0)  # .at gives a new array; x is unchanged
    w2 = want.T.copy()
    w2[1, 2] = 3.0
    assert_same(y, w2)
    assert_same(x, want)


def test_jit_takes_a_deferred_transpose_argument_and_matches_numpy():
    x = _big()

    @xp.jit
    def f(a, b):
        return xp.sum(xp.exp(a) * b, axis=1)

    t = x.T
    got = f(t, xp.asarray(np.asarray(x).T.copy()))
    want = on_numpy(lambda x: xp.sum(xp.exp(x.T) * x.T, axis=1), x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)
    # the same function on a plain array of the transposed shape: same values, own program
    got2 = f(xp.asarray(np.asarray(x).T.copy()), t)
    np.testing.assert_allclose(np.asarray(got2), np.asarray(want), rtol=1e-12)


def test_jit_of_a_square_deferred_transpose_is_not_confused_with_the_plain_array():
    sq = xp.asarray(_data((512, 512), seed=7))
    f = xp.jit(lambda a: a[0] * 1.0)
    assert_same(f(sq), np.asarray(sq)[0])
    assert_same(f(sq.T), np.asarray(sq).T[0])
    assert_same(f(sq), np.asarray(sq)[0])


def test_donating_a_deferred_transpose_leaves_its_base_alive():
    xn = _data()
    x = xp.asarray(xn)
    g = xp.jit(lambda a: a * 2.0, donate_argnums=0)
    t = x.T
    assert t._buf.__class__ is _permuted()
    out = g(t)
    assert_same(out, xn.T * 2.0)
    assert not x._buf.is_deleted()
    assert_same(x, xn)


def test_lazy_scope_reads_a_deferred_transpose_made_before_it():
    xn = _data()
    x = xp.asarray(xn)
    t = x.T
    with xp.lazy():
        y = xp.sum(xp.sin(t) * 2.0, axis=1)
        z = t + 1.0
    np.testing.assert_allclose(np.asarray(y), (np.sin(xn.T) * 2.0).sum(1), rtol=1e-12)
    assert_same(z, xn.T + 1.0)


def test_a_captured_deferred_transpose_in_jit():
    xn = _data()
    t = xp.asarray(xn).T
    f = xp.jit(lambda a: a + t)
    assert_same(f(xp.zeros((COLS, ROWS))), xn.T)


def test_dlpack_device_put_and_pickle_of_a_deferred_transpose():
    import pickle

    xn = _data()
    t = xp.asarray(xn).T
    np.testing.assert_array_equal(np.from_dlpack(t), xn.T)
    dev = xp.asarray(xn).device
    np.testing.assert_array_equal(np.asarray(t.to_device(dev)), xn.T)
    np.testing.assert_array_equal(np.asarray(pickle.loads(pickle.dumps(t))), xn.T)
    with xp.use_executor("numpy"):
        moved = xp.asarray(t, device="numpy")
    np.testing.assert_array_equal(np.asarray(moved), xn.T)


# -- compiled programs: outputs that are transposes, and graphs cut before a LAPACK call

def test_program_outputs_that_are_large_transposes_come_out_deferred():
    Permuted = _permuted()
    xn = _data()
    x = xp.asarray(xn)
    f = xp.jit(lambda a: (a * 3.0).T)
    out = f(x)
    assert out._buf.__class__ is Permuted and out.shape == (COLS, ROWS)
    assert_same(out, (xn * 3.0).T)
    g = xp.jit(lambda a: xp.permute_dims(xp.matrix_transpose(a + 1.0), (1, 0)))  # transposes that cancel
    out = g(x)
    assert out._buf.__class__ is not Permuted
    assert_same(out, xn + 1.0)
    small = xp.asarray(_data((10, 20)))
    assert f(small)._buf.__class__ is not Permuted
    assert_same(f(small), np.asarray(small).T * 3.0)
    with xp.lazy():
        y = xp.exp(x).T
        z = y[:, :7]
    assert y._buf.__class__ is Permuted
    assert_same(y, np.exp(xn).T)
    assert_same(z, np.exp(xn).T[:, :7])


def test_a_3d_permutation_output_composes_its_axes():
    yn = _data((40, 50, 80))
    y = xp.asarray(yn)
    f = xp.jit(lambda a: xp.permute_dims(xp.permute_dims(a * 2.0, (2, 0, 1)), (1, 0, 2)))
    out = f(y)
    assert out._buf.__class__ is _permuted() and out._buf.axes == (0, 2, 1)
    assert_same(out, np.transpose(np.transpose(yn * 2.0, (2, 0, 1)), (1, 0, 2)))


def _pca_like(a):
    c = a - xp.mean(a, axis=0)
    u, s, vh = xp.linalg.svd(c, full_matrices=False)
    return u[:, :3] * s[:3], vh, xp.linalg.qr(c[:50] * 2.0)[1]


def test_a_graph_computing_a_lapack_operand_is_cut_before_it_and_matches_numpy():
    import jax

    from arrayx.executors.jax import executor as jx

    a = xp.asarray(_data((400, 30), seed=9))
    f = xp.jit(_pca_like)
    got = f(a)
    (entry,) = f._cache.values()
    assert not isinstance(entry.fn.fn, type(jax.jit(abs)))  # consecutive programs (.fn: inside the 64-bit scope)
    assert jx._lapack_cut(entry.graph) is not None
    want = on_numpy(_pca_like, a)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.abs(np.asarray(g)), np.abs(np.asarray(w)), rtol=1e-9, atol=1e-12)
    # the same values as one program (LAPACK gets the same operand either way)
    try:
        jx._CUT_BEFORE_LAPACK = False
        fused = xp.jit(lambda a: _pca_like(a))(a)
    finally:
        jx._CUT_BEFORE_LAPACK = True
    for g, h in zip(got, fused):
        np.testing.assert_allclose(np.asarray(g), np.asarray(h), rtol=1e-12, atol=1e-13)
    with xp.lazy():
        lazy_got = _pca_like(a)
    for g, h in zip(lazy_got, got):
        np.testing.assert_allclose(np.asarray(g), np.asarray(h), rtol=1e-12, atol=1e-13)


@pytest.mark.filterwarnings("ignore:Some donated buffers were not usable")
def test_no_cut_with_donation_or_captured_constants():
    import jax

    a = xp.asarray(_data((400, 30), seed=9))
    g = xp.jit(_pca_like, donate_argnums=0)
    want = on_numpy(_pca_like, a)
    got = g(xp.asarray(np.asarray(a)))
    (entry,) = g._cache.values()
    assert isinstance(entry.fn.fn.jitted, type(jax.jit(abs)))  # one program: the donated buffer goes in once
    k = xp.asarray(_data((400, 30), seed=10))
    h = xp.jit(lambda a: _pca_like(a + k))
    got2 = h(a)
    (entry2,) = h._cache.values()
    assert entry2.graph.consts and isinstance(entry2.fn.fn, type(jax.jit(abs)))
    want2 = on_numpy(lambda a, k: _pca_like(a + k), a, k)
    for g_, w in [*zip(got, want), *zip(got2, want2)]:
        np.testing.assert_allclose(np.abs(np.asarray(g_)), np.abs(np.asarray(w)), rtol=1e-9, atol=1e-12)


def test_conversions_and_transforms_of_a_deferred_transpose_match_numpy():
    import copy

    xn = _data()
    x = xp.asarray(xn)
    t = x.T
    assert t._buf.__class__ is _permuted()
    assert_same(xp.asarray(t, copy=True), xn.T)
    assert_same(xp.asarray(t, dtype=xp.float32), xn.T.astype(np.float32))
    assert_same(copy.deepcopy(t), xn.T)
    assert_same(xp.stack([t, t]), np.stack([xn.T, xn.T]))
    assert_same(xp.broadcast_to(t, (2, COLS, ROWS)), np.broadcast_to(xn.T, (2, COLS, ROWS)))
    assert_same(xp.where(t > 0, t, x.T * 2.0), np.where(xn.T > 0, xn.T, xn.T * 2.0))
    assert_same(xp.grad(lambda a: xp.sum(a * a))(t), 2.0 * xn.T)
    np.testing.assert_allclose(np.asarray(xp.vmap(lambda r: xp.sum(r))(t)), xn.T.sum(1), rtol=1e-12)
    assert_same(xp.asarray(t, device="numpy"), xn.T)
    if "dask" in xp.executors():
        assert_same(xp.asarray(t, device="dask"), xn.T)
    u = x.T
    u[u > 1.0] = 0.0  # a masked write through the view reaches x
    want = xn.copy()
    want[want > 1.0] = 0.0
    assert_same(x, want)
