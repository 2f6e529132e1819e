"""Native batch rules of the primitives that used to take vmap's loop fallback.

Each rule is checked on every executor against a Python loop over the batch members on the
NumPy executor (the function applied to each member eagerly, results stacked), with the batch
axis on different operands; batched index arrays follow NumPy's advanced-index axis placement.  Only the
data-dependent primitives (boolean masks, nonzero, unique_*) stay on the counted fallback.
"""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as ax
from arrayx.api import indexing as ix
from arrayx.transforms.rules import coverage

rng = np.random.default_rng(0)
X = rng.standard_normal((3, 4, 5, 4))  # batch 3, members of shape (4, 5, 4)
I = np.array([[0, 2], [1, 3], [3, 3]])  # a batch of index arrays of shape (2,)
DATA_DEPENDENT = {"boolean_mask", "nonzero", "unique_all", "unique_counts", "unique_inverse", "unique_values"}


def _loop_check(f, *args, in_axes=0, tol=1e-12):
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    size = next(a.shape[i] for a, i in zip(args, axes) if i is not None)
    got = ax.vmap(f, in_axes=in_axes)(*[ax.asarray(a) for a in args])
    with ax.use_executor("numpy"):  # the reference: each member on the NumPy executor
        members = [f(*[ax.asarray(a if i is None else np.take(a, b, axis=i)) for a, i in zip(args, axes)])
                   for b in range(size)]
        want = np.stack([np.asarray(m) for m in members])
    got = np.asarray(got)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_only_data_dependent_primitives_use_the_loop():
    assert set(coverage()["batch_loop"]) == DATA_DEPENDENT


# -- indexing --------------------------------------------------------------------------------------


def test_slice_and_slice_update(executor):
    _loop_check(lambda a: a[1:3, ::2, None, -1], X)
    _loop_check(lambda a, v: a.at[1].set(v), X, rng.standard_normal((3, 5, 4)))
    _loop_check(lambda a, v: a.at[1:3, 2].set(v), X, rng.standard_normal((3, 2, 4)))
    _loop_check(lambda a, v: a.at[1:3, 2].set(v), X, rng.standard_normal((3, 4)))  # v broadcasts
    _loop_check(lambda a, v: a.at[1:3, 2].add(v), X[0], rng.standard_normal((3, 4)), in_axes=(None, 0))
    _loop_check(lambda a: a.at[0, ::2].set(7.0), X)


@pytest.mark.parametrize("in_axes", [(0, 0), (None, 0), (0, None)], ids=["both", "index", "array"])
def test_gather_advanced_index_placement(executor, in_axes):
    x = X[0] if in_axes[0] is None else X
    i = I[0] if in_axes[1] is None else I
    _loop_check(lambda a, j: a[j], x, i, in_axes=in_axes)  # index dims first
    _loop_check(lambda a, j: a[:, j], x, i, in_axes=in_axes)  # in place of axis 1
    _loop_check(lambda a, j: a[:, j, j], x, i, in_axes=in_axes)  # adjacent: in place of axes 1, 2
    _loop_check(lambda a, j: a[j, :, j[:1]], x, i, in_axes=in_axes)  # separated: in front
    _loop_check(lambda a, j: ax.take(a, j, axis=2), x, i, in_axes=in_axes)


@pytest.mark.parametrize("in_axes", [(0, 0, 0), (None, 0, 0), (0, None, 0), (0, 0, None)],
                         ids=["all", "index+values", "array+values", "array+index"])
def test_scatter_advanced_index_placement(executor, in_axes):
    x = X[0] if in_axes[0] is None else X
    i = I[0] if in_axes[1] is None else I

    def pick(v):
        return v[0] if in_axes[2] is None else v

    _loop_check(lambda a, j, v: a.at[:, j].add(v), x, i, pick(rng.standard_normal((3, 4, 2, 4))), in_axes=in_axes)
    _loop_check(lambda a, j, v: a.at[j, :, j].set(v), x, i, pick(rng.standard_normal((3, 2, 5))), in_axes=in_axes)
    _loop_check(lambda a, j, v: a.at[j].multiply(v), x, i, pick(rng.standard_normal((3, 2, 5, 4))), in_axes=in_axes)
    _loop_check(lambda a, j, v: a.at[:, :, j].max(v), x, i, pick(rng.standard_normal((3, 4, 5, 2))), in_axes=in_axes)


def test_setitem_with_batched_indices(executor):
    def setter(a, j):
        a = a + 0
        a[j] = 7.0
        return a

    _loop_check(setter, X, I)
    _loop_check(setter, X[0], I, in_axes=(None, 0))


def test_dynamic_slice_and_update(executor):
    starts = np.array([0, 2, 3])
    _loop_check(lambda a, s: ix.dynamic_slice_p.bind(a, s, 1, 0, sizes=(2, 3, 4)), X, starts)  # clamped start
    _loop_check(lambda a, s: ix.dynamic_slice_p.bind(a, 1, s, 0, sizes=(2, 3, 4)), X[0], starts, in_axes=(None, 0))
    _loop_check(lambda a: ix.dynamic_slice_p.bind(a, 1, 2, 0, sizes=(2, 3, 4)), X)
    u = rng.standard_normal((3, 2, 3, 4))
    _loop_check(lambda a, v, s: ix.dynamic_update_slice_p.bind(a, v, s, 1, 0), X, u, starts)
    _loop_check(lambda a, v, s: ix.dynamic_update_slice_p.bind(a, v, 2, s, 0), X[0], u[0], starts,
                in_axes=(None, None, 0))
    _loop_check(lambda a, v: ix.dynamic_update_slice_p.bind(a, v, 3, 1, 0), X[0], u, in_axes=(None, 0))
    # what x[i:i + 2] stages to, batched through vmap of jit
    _loop_check(ax.jit(lambda a, s: a[s:s + 2]), X, starts)
    _loop_check(ax.jit(lambda a, s, v: a.at[s:s + 2, 1].set(v)), X[0], starts, u[:, :, 0], in_axes=(None, 0, 0))


def test_take_along_axis(executor):
    idx = rng.integers(0, 5, (3, 4, 2, 4))
    _loop_check(lambda a, k: ax.take_along_axis(a, k, axis=1), X, idx)
    _loop_check(lambda a, k: ax.take_along_axis(a, k, axis=1), X[0], idx, in_axes=(None, 0))
    _loop_check(lambda a, k: ax.take_along_axis(a, k, axis=-1), X, rng.integers(0, 4, (4, 5, 2)), in_axes=(0, None))


def test_repeat(executor):
    _loop_check(lambda a: ax.repeat(a, 2, axis=1), X)
    _loop_check(lambda a: ax.repeat(a, ax.asarray([1, 0, 2, 1]), axis=0), X)
    _loop_check(lambda a: ax.repeat(a, 3), X)


# -- searching, sets --------------------------------------------------------------------------------------


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted(executor, side):
    sorted_rows = np.sort(rng.standard_normal((3, 6)), axis=1)
    sorted_rows[1, -2:] = np.nan  # NaN sorts last
    queries = np.concatenate([rng.standard_normal((3, 4)), sorted_rows[:, 1:3], np.full((3, 1), np.nan)], axis=1)
    _loop_check(lambda a, v: ax.searchsorted(a, v, side=side), sorted_rows, queries)
    _loop_check(lambda a, v: ax.searchsorted(a, v, side=side), sorted_rows, queries[0], in_axes=(0, None))
    _loop_check(lambda a, v: ax.searchsorted(a, v, side=side), sorted_rows[0], queries, in_axes=(None, 0))
    _loop_check(lambda a: ax.searchsorted(a, 0.1, side=side), sorted_rows)
    ints = np.sort(rng.integers(0, 5, (3, 7)), axis=1)
    _loop_check(lambda a, v: ax.searchsorted(a, v, side=side), ints, rng.integers(-1, 6, (3, 5)))


@pytest.mark.parametrize("invert", [False, True])
def test_isin(executor, invert):
    x1 = rng.integers(0, 6, (3, 4, 2))
    x2 = rng.integers(0, 6, (3, 5))
    _loop_check(lambda a, b: ax.isin(a, b, invert=invert), x1, x2)
    _loop_check(lambda a, b: ax.isin(a, b, invert=invert), x1[0], x2, in_axes=(None, 0))
    _loop_check(lambda a, b: ax.isin(a, b, invert=invert), x1, x2[0], in_axes=(0, None))
    _loop_check(lambda b: ax.isin(3, b, invert=invert), x2)


# -- linalg, fft, the rest -------------------------------------------------------------------------------


def test_solve(executor):
    a = rng.standard_normal((3, 4, 4)) + 4 * np.eye(4)
    _loop_check(ax.linalg.solve, a, rng.standard_normal((3, 4)), tol=1e-10)  # one vector per member
    _loop_check(ax.linalg.solve, a[0], rng.standard_normal((3, 4)), in_axes=(None, 0), tol=1e-10)
    _loop_check(ax.linalg.solve, a, rng.standard_normal(4), in_axes=(0, None), tol=1e-10)
    _loop_check(ax.linalg.solve, a, rng.standard_normal((3, 4, 2)), tol=1e-10)  # matrices
    _loop_check(ax.linalg.solve, a[0], rng.standard_normal((3, 4, 2)), in_axes=(None, 0), tol=1e-10)
    stacks = rng.standard_normal((3, 2, 4, 4)) + 4 * np.eye(4)
    _loop_check(ax.linalg.solve, stacks, rng.standard_normal((2, 4, 1)), in_axes=(0, None), tol=1e-10)


def test_cross(executor):
    _loop_check(ax.linalg.cross, rng.standard_normal((3, 2, 3)), rng.standard_normal((3, 2, 3)))
    _loop_check(ax.linalg.cross, rng.standard_normal((3, 2, 3)), rng.standard_normal(3), in_axes=(0, None))
    _loop_check(lambda a, b: ax.linalg.cross(a, b, axis=0), rng.standard_normal((3, 3, 2)),
                rng.standard_normal((3, 2)), in_axes=(0, None))


FFTS = [
    ("fft", lambda a: ax.fft.fft(a, n=6, axis=1)),
    ("ifft", lambda a: ax.fft.ifft(a, axis=0)),
    ("rfft", lambda a: ax.fft.rfft(a, axis=-1)),
    ("irfft", lambda a: ax.fft.irfft(ax.astype(a, ax.complex128), n=6, axis=1)),
    ("hfft", lambda a: ax.fft.hfft(ax.astype(a, ax.complex128), axis=0)),
    ("ihfft", lambda a: ax.fft.ihfft(a, axis=2)),
    ("fftn", lambda a: ax.fft.fftn(a, axes=(0, 2))),
    ("ifftn", lambda a: ax.fft.ifftn(a)),
    ("rfftn", lambda a: ax.fft.rfftn(a, axes=(1, 2))),
    ("irfftn", lambda a: ax.fft.irfftn(ax.astype(a, ax.complex128), s=(4, 6), axes=(0, 1))),
    ("fftshift", lambda a: ax.fft.fftshift(a, axes=1)),
    ("ifftshift", lambda a: ax.fft.ifftshift(a)),
]


@pytest.mark.parametrize("fn", [f for _, f in FFTS], ids=[n for n, _ in FFTS])
def test_fft(executor, fn):
    _loop_check(fn, X, tol=1e-10)
    _loop_check(fn, np.moveaxis(X, 0, 2), in_axes=2, tol=1e-10)


def test_stop_gradient_and_libm_log(executor):
    from arrayx._random_math import libm_log

    _loop_check(lambda a: ax.stop_gradient(a) * 2, X)
    _loop_check(libm_log, np.abs(X) + 0.1, tol=0)  # bit-exact: the same libm call per element
    g = ax.vmap(ax.grad(lambda v: ax.sum(v * ax.stop_gradient(v))))(ax.asarray(X))
    np.testing.assert_allclose(np.asarray(g), X, rtol=1e-12)


def test_debug_callback_once_per_member_in_order(executor):
    seen = []
    xs = np.arange(6.0).reshape(3, 2)

    def f(v, w):
        ax.debug.callback(lambda a, b: seen.append((a.tolist(), b.tolist())), v, w)
        return v * 2

    out = ax.vmap(f, in_axes=(0, None))(ax.asarray(xs), ax.asarray(10.0))
    np.testing.assert_array_equal(np.asarray(out), xs * 2)
    assert seen == [(r.tolist(), 10.0) for r in xs]
    seen.clear()
    ax.jit(ax.vmap(f, in_axes=(0, None)))(ax.asarray(xs), ax.asarray(10.0))
    assert seen == [(r.tolist(), 10.0) for r in xs]


def test_eager_slice_with_batched_start(executor):
    # x[i:i + 2] with a batched i, eagerly: the window size is the stop - start every member shares
    starts = np.array([0, 2, 1])
    _loop_check(lambda a, s: a[s:s + 2], X, starts)
    _loop_check(lambda a, s: a[:, s:2 + s, 1], X[0], starts, in_axes=(None, 0))
    _loop_check(lambda a, s: a[1, s:s + ax.asarray(3)], X, starts)  # a traced offset with one value
    _loop_check(lambda a, s, v: a.at[s:s + 2, 1].set(v), X, starts, rng.standard_normal((3, 2, 4)))
    # a window past the end clamps its start, as dynamic_slice and jax.lax.dynamic_slice do
    jax = pytest.importorskip("jax")
    late = np.array([3, 0, 4])
    got = np.asarray(ax.vmap(lambda a, s: a[s:s + 2])(ax.asarray(X[:, :, 0, 0]), ax.asarray(late)))
    want = jax.vmap(lambda a, s: jax.lax.dynamic_slice(a, (s,), (2,)))(X[:, :, 0, 0], late)
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-6)
    np.testing.assert_allclose(got[0], X[0, 2:4, 0, 0], rtol=1e-12)


def test_eager_slice_with_batched_start_sizes_that_differ_raise(executor):
    with pytest.raises(IndexError, match="static size"):
        ax.vmap(lambda a, s: a[s:2 * s])(ax.asarray(X), ax.asarray(np.array([1, 2, 3])))


def test_grad_of_vmap_with_batched_slice_start(executor):
    starts = np.array([0, 2, 1])
    a = X[:, :, 0, 0]

    def loss(xs):
        return ax.sum(ax.vmap(lambda x, s: x[s:s + 2] ** 2)(xs, ax.asarray(starts)))

    want = np.zeros_like(a)
    for b, s in enumerate(starts):
        want[b, s:s + 2] = 2 * a[b, s:s + 2]
    np.testing.assert_allclose(np.asarray(ax.grad(loss)(ax.asarray(a))), want, rtol=1e-12)
    per_member = ax.vmap(ax.grad(lambda x, s: ax.sum(x[s:s + 2] ** 2)))(ax.asarray(a), ax.asarray(starts))
    np.testing.assert_allclose(np.asarray(per_member), want, rtol=1e-12)
    jitted = ax.jit(ax.vmap(lambda x, s: x[s:s + 2]))(ax.asarray(a), ax.asarray(starts))
    np.testing.assert_allclose(np.asarray(jitted), np.stack([a[b, s:s + 2] for b, s in enumerate(starts)]))


@pytest.mark.parametrize("axis", [0, 1])
def test_matrix_times_batched_vectors_is_one_batch_major_product(executor, axis):
    # A @ v per member is V @ A.T: one GEMM whose result is already batch-major (per-example backprop)
    a, v = rng.standard_normal((5, 4)), rng.standard_normal((3, 4))
    vs = v if axis == 0 else v.T
    _loop_check(lambda m, w: m @ w, a, vs, in_axes=(None, axis))
    graph = ax.make_graph(ax.vmap(lambda m, w: m @ w, in_axes=(None, axis)))(ax.asarray(a), ax.asarray(vs))
    names = [e.prim.name for e in graph.equations]
    assert names.count("matmul") == 1 and "moveaxis" not in names[names.index("matmul"):], names


# -- linalg.solve with one vector per member; clip with unbatched (read-only) bounds -------------------

from tests.conftest import assert_same, on_numpy  # noqa: E402


@pytest.mark.parametrize("a_shape, b_shape, a_axis", [
    ((2, 2, 1, 3, 3), (2, 3), 0),     # a stack of matrices per member, one vector per member
    ((2, 4, 3, 3), (2, 3), 0),
    ((2, 3, 3), (2, 3), 0),
    ((4, 3, 3), (2, 3), None),        # an unbatched stack, batched vectors
    ((3, 3), (2, 3), None),           # one matrix: the vectors become its right-hand sides
    ((2, 2, 1, 3, 3), (2, 2, 1, 3, 2), 0),  # matrices on the right: batch dims broadcast per member
])
def test_vmap_of_solve_with_one_vector_per_member(executor, a_shape, b_shape, a_axis):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(a_shape) + 4 * np.eye(3)
    b = rng.standard_normal(b_shape).astype(np.complex64)  # mixed dtypes, as drawn
    got = ax.vmap(ax.linalg.solve, in_axes=(a_axis, 0))(ax.asarray(a), ax.asarray(b))
    want = np.stack([np.asarray(on_numpy(ax.linalg.solve, ax.asarray(a if a_axis is None else a[i]), ax.asarray(b[i])))
                     for i in range(2)])
    assert tuple(got.shape) == want.shape
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-12)


def test_clip_with_read_only_integer_bounds(executor):
    # vmap broadcasts an unbatched bound into a read-only view; array-api-compat's clip wrote into it
    x = ax.asarray(np.arange(12, dtype=np.uint64).reshape(2, 6))
    lo = ax.asarray(np.asarray([3, 1, 4, 1, 5, 9], dtype=np.uint64))
    got = ax.vmap(lambda v, m: ax.clip(v, min=m, max=7), in_axes=(0, None))(x, lo)
    assert_same(got, on_numpy(lambda v, m: ax.clip(v, min=ax.broadcast_to(m, v.shape), max=7), x, lo))
    np.testing.assert_array_equal(np.asarray(got), np.clip(np.arange(12).reshape(2, 6), [3, 1, 4, 1, 5, 9], 7))
    empty = ax.vmap(lambda v, m: ax.clip(v, min=m, max=87))(ax.asarray(np.zeros((2, 2, 0, 0), np.uint64)),
                                                           ax.asarray(np.zeros((2, 0), np.uint64)))
    assert tuple(empty.shape) == (2, 2, 0, 0) and empty.dtype == ax.uint64
