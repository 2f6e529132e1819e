"""Adding an executor is one file plus one entry point.

The executor below is the whole file a third party writes: a class with a name, a buffer
type, ``_load`` (its standard namespace) and one plain table of the primitives whose
implementation differs from ``getattr(xp, name)`` (None: unsupported).  It is found through
the ``arrayx.executors`` entry-point group, and then the namespace, grad and jit run on it.
"""
from __future__ import annotations

import importlib.metadata

import numpy as np
import pytest

import arrayx as ax
from arrayx.core import executor as base


class TinyExecutor(base.Executor):
    """NumPy buffers through array-api-compat, with ``sort`` marked unsupported and its own ``exp``."""

    name = "tiny"
    array_type = np.ndarray
    overrides = {
        "sort": None,  # explicit "unsupported" entry
        "exp": lambda x: np.exp(x),
    }

    def _load(self):
        import array_api_compat.numpy as xp

        return xp

    def compile(self, graph, donate_argnums=()):
        return self.lower(graph)  # one call per equation over the table


class _EntryPoint:
    name = "tiny"

    def load(self):
        return TinyExecutor


@pytest.fixture
def tiny(monkeypatch):
    real = importlib.metadata.entry_points

    def entry_points(**kw):
        return [_EntryPoint()] if kw.get("group") == "arrayx.executors" else real(**kw)

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    monkeypatch.setattr(base, "_entry_points_loaded", False)
    monkeypatch.delitem(base._registry, "tiny", raising=False)
    yield
    base._registry.pop("tiny", None)


def test_an_executor_from_an_entry_point_runs_the_namespace_grad_and_jit(tiny):
    assert "tiny" in ax.executors()
    x = ax.asarray([0.5, 1.0, 2.0], device="tiny")
    assert x.executor == "tiny" and x.device == base.get("tiny").default_device()
    y = ax.sum(ax.exp(x) * x) + ax.matmul(x, x)
    np.testing.assert_allclose(float(y), np.sum(np.exp([0.5, 1, 2]) * [0.5, 1, 2]) + 5.25)
    g = ax.grad(lambda v: ax.sum(ax.sin(v) ** 2))(x)
    assert g.executor == "tiny"
    np.testing.assert_allclose(np.asarray(g), np.sin(2 * np.array([0.5, 1.0, 2.0])))
    f = ax.jit(lambda v: ax.exp(v) - 1.0)
    np.testing.assert_allclose(np.asarray(f(x)), np.expm1([0.5, 1.0, 2.0]))


def test_in_place_operators_on_an_executor_of_numpy_buffers(tiny):
    # written straight into the buffer (api/_inplace.py), with no hook of the NumPy executor's family
    with ax.use_executor("tiny"):
        x = ax.asarray(np.arange(6.0).reshape(2, 3))
        x += ax.asarray([1.0, 2.0, 3.0])
        x *= 2.0
        big = ax.asarray(np.ones((1024, 256)))  # 2 MiB: a temporary written in place too
        y = 3.0 * (big + big)
    assert np.asarray(x).tolist() == [[2.0, 6.0, 10.0], [8.0, 12.0, 16.0]]
    assert float(np.asarray(y).min()) == float(np.asarray(y).max()) == 6.0


def test_unsupported_entries_raise_naming_the_function_and_the_executor(tiny):
    ex = base.get("tiny")
    assert not ex.supports("sort") and ex.supports("exp") and ex.supports("add")
    assert ex.unsupported() == ["sort"]
    with pytest.raises(NotImplementedError, match="sort is not supported by the 'tiny' executor"):
        ax.sort(ax.asarray([3.0, 1.0], device="tiny"))


def _on_numpy(fn, *arrays):
    return np.asarray(fn(*[ax.asarray(np.asarray(a), device="numpy") for a in arrays]))


def test_the_tiny_executor_runs_lax_nn_random_and_the_transforms(tiny):
    # a third party's executor gets lax, nn and random through their generic implementations (written
    # in arrayx operations), and grad/vmap/jit of them; every value is compared with the numpy executor's
    rng = np.random.default_rng(0)
    img, ker = rng.standard_normal((2, 3, 7, 6)), rng.standard_normal((4, 3, 3, 2))
    x, w = ax.asarray(img, device="tiny"), ax.asarray(ker, device="tiny")

    def conv(a, b):
        return ax.lax.conv_general_dilated(a, b, (2, 1), [(1, 1), (0, 1)], rhs_dilation=(1, 2))

    got = conv(x, w)
    assert got.executor == "tiny"
    np.testing.assert_allclose(np.asarray(got), _on_numpy(conv, img, ker), rtol=1e-10, atol=1e-12)

    def pool(a):
        return ax.lax.reduce_window(a, -ax.inf, ax.maximum, (1, 1, 2, 2), (1, 1, 2, 1), "SAME")

    np.testing.assert_allclose(np.asarray(pool(x)), _on_numpy(pool, img))
    v = ax.asarray(np.linspace(-2.0, 2.0, 9), device="tiny")
    for fn in (ax.nn.erf, ax.nn.erfc, ax.nn.gelu):
        np.testing.assert_allclose(np.asarray(fn(v)), _on_numpy(fn, np.linspace(-2.0, 2.0, 9)), rtol=1e-12)
    for draw_fn in (ax.random.normal, ax.random.uniform):
        draw = draw_fn(ax.random.key(0, device="tiny"), (5,))
        assert draw.executor == "tiny"
        np.testing.assert_allclose(np.asarray(draw), np.asarray(draw_fn(ax.random.key(0), (5,))), rtol=1e-12)
    loss = lambda a, b: ax.sum(conv(a, b) ** 2)  # noqa: E731
    g = ax.grad(loss, argnums=(0, 1))(x, w)
    want_g = ax.grad(loss, argnums=(0, 1))(ax.asarray(img), ax.asarray(ker))
    for a, b in zip(g, want_g):
        assert a.executor == "tiny"
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-9, atol=1e-9)
    batched = ax.vmap(lambda a: ax.nn.erf(a) * 2.0)(ax.reshape(v[:8], (2, 4)))
    np.testing.assert_allclose(np.asarray(batched), _on_numpy(lambda a: ax.nn.erf(a) * 2.0, np.linspace(-2, 2, 9)[:8].reshape(2, 4)), rtol=1e-12)
    jitted = ax.jit(lambda a, b: pool(conv(a, b)))(x, w)
    np.testing.assert_allclose(np.asarray(jitted), _on_numpy(lambda a, b: pool(conv(a, b)), img, ker), rtol=1e-10, atol=1e-12)


def _min_pool(a, init):
    return ax.lax.reduce_window(a, init, ax.minimum, (1, 1, 2, 3), (1, 1, 2, 2), "SAME")


@pytest.mark.parametrize("case", ["pool_2x2", "overlapping_padded", "dilated_cropped", "integer_min"])
def test_the_tiny_executor_runs_the_gradient_of_a_max_pool(tiny, case):
    # reduce_window max's derivative is window_select / window_scatter (each the other's transpose):
    # on an executor without entries for them they run as their compositions in arrayx operations;
    # values, gradients (ties included: the first winner in window order takes it), a second
    # derivative and jit are compared with the numpy executor's
    rng = np.random.default_rng(3)
    img = np.round(rng.standard_normal((2, 3, 7, 6)), 1)  # rounded: windows with tied maxima
    img[0, 0, :2, :2] = 1.5
    pools = {
        "pool_2x2": lambda a: ax.lax.max_pool(a, (2, 2)),
        "overlapping_padded": lambda a: ax.lax.reduce_window(a, -ax.inf, ax.maximum, (1, 1, 3, 2), (1, 1, 2, 1),
                                                             [(0, 0), (0, 0), (1, 1), (0, 1)]),
        "dilated_cropped": lambda a: ax.lax.reduce_window(a, -ax.inf, ax.maximum, (1, 2, 2, 2), (1, 1, 1, 2),
                                                          [(0, 0), (0, 0), (-1, 1), (1, -2)],
                                                          window_dilation=(1, 1, 2, 1)),
        "integer_min": lambda a: ax.astype(_min_pool(ax.astype(a * 10, ax.int32), 2**31 - 1), ax.float64)
        * _min_pool(a, ax.inf),
    }
    pool = pools[case]
    x = ax.asarray(img, device="tiny")
    loss = lambda a: ax.sum(pool(a) ** 2 * ax.cos(ax.sum(pool(a))))  # noqa: E731
    got, want = pool(x), _on_numpy(pool, img)
    assert got.executor == "tiny"
    np.testing.assert_array_equal(np.asarray(got), want)
    g = ax.grad(loss)(x)
    assert g.executor == "tiny"
    np.testing.assert_allclose(np.asarray(g), _on_numpy(ax.grad(loss), img), rtol=1e-12, atol=1e-12)
    tangent = rng.standard_normal(img.shape)
    hvp = lambda a, t: ax.jvp(ax.grad(loss), (a,), (t,))[1]  # noqa: E731  (window_select of window_scatter)
    np.testing.assert_allclose(np.asarray(hvp(x, ax.asarray(tangent, device="tiny"))), _on_numpy(hvp, img, tangent),
                               rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(np.asarray(ax.jit(ax.grad(loss))(x)), _on_numpy(ax.grad(loss), img),
                               rtol=1e-12, atol=1e-12)
    batched = ax.vmap(ax.grad(loss))(ax.stack([x, -x]))
    np.testing.assert_allclose(np.asarray(batched)[1], _on_numpy(ax.grad(loss), -img), rtol=1e-12, atol=1e-12)


# -- indexing: the primitives' generic implementations (arrayx/api/_indexing_generic.py) -----------


def _tiny(a):
    return ax.asarray(np.asarray(a), device="tiny")


def _matches_numpy(fn, *arrays):
    """``fn`` of the arrays on the tiny executor: a tiny array with the numpy executor's values."""
    got = fn(*[_tiny(a) for a in arrays])
    assert got.executor == "tiny"
    want = _on_numpy(fn, *arrays)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype, want.dtype)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


def _every_way(fn, x, *rest):
    """``fn(x, *rest)`` eagerly, under jit, its gradient in x (of ``sum(fn ** 2 * ...)``, so that the
    transposes see uneven cotangents) and vmapped over a stack of two x: each on the tiny executor,
    compared with the numpy executor."""
    def loss(a, *r):
        out = fn(a, *r)
        return ax.sum(out ** 2 * ax.reshape(ax.linspace(0.5, 2.0, out.size, device=out.device), out.shape))

    batched = ax.vmap(fn, in_axes=(0,) + (None,) * len(rest))
    _matches_numpy(fn, x, *rest)
    _matches_numpy(ax.jit(fn), x, *rest)
    _matches_numpy(ax.grad(loss), x, *rest)
    _matches_numpy(ax.jit(ax.grad(loss)), x, *rest)
    _matches_numpy(batched, np.stack([x, 1.0 - 2.0 * x]), *rest)


_X = np.round(np.random.default_rng(5).standard_normal((4, 5, 6)), 2)


@pytest.mark.parametrize("case", ["trailing", "ellipsis", "reversed", "int_and_new_axis", "negative_steps"])
def test_the_tiny_executor_runs_basic_slicing(tiny, case):
    # the slice primitive (standard basic indexing) and its transpose slice_update (a select: no
    # buffer is written), eagerly, under jit, grad and vmap
    fn = {
        "trailing": lambda a: a[..., :4],
        "ellipsis": lambda a: a[1:, ..., 2],
        "reversed": lambda a: a[::-1, 1:4],
        "int_and_new_axis": lambda a: a[None, -1, :, None, 1::2],
        "negative_steps": lambda a: a[-2::-2, 4:0:-3, -1:-7:-2],
    }[case]
    _every_way(fn, _X)


@pytest.mark.parametrize("case", ["set_region", "add_strided", "set_int_row", "set_everything"])
def test_the_tiny_executor_runs_updates_of_basic_regions(tiny, case):
    fn = {
        "set_region": lambda a, v: a.at[1:3, ::2].set(v[0, :3]),
        "add_strided": lambda a, v: a.at[::-2, 1:, -1].add(v[0, 1:, 0]),
        "set_int_row": lambda a, v: a.at[2, None, :, 3].set(v[0, 0, 0]),
        "set_everything": lambda a, v: a.at[...].set(v),
    }[case]
    v = np.linspace(-1.0, 1.0, 5 * 6).reshape(1, 5, 6)
    _every_way(fn, _X, v)


_GATHERS = {
    # (key builder, index arrays): one index array (negative, repeated), two adjacent, two apart,
    # and one in the middle of basic entries
    "one_array_axis0": (lambda a, i, j: a[i], ([0, -1, 2, -1], None)),
    "one_array_axis1": (lambda a, i, j: a[:, i], ([[4, -5], [0, 4]], None)),
    "two_adjacent": (lambda a, i, j: a[:, i, j], ([0, -1, 3, 3], [5, 0, -6, 5])),
    "two_apart": (lambda a, i, j: a[i, :, j], ([[1], [-1]], [0, 5, -2])),
    "with_slices": (lambda a, i, j: a[1:, i, ::-2], ([[-1, 2, 2]], None)),
    "take": (lambda a, i, j: ax.take(a, i, axis=2), ([5, 0, -1, 0], None)),
}


@pytest.mark.parametrize("case", list(_GATHERS))
def test_the_tiny_executor_runs_integer_array_indexing(tiny, case):
    # gather (take over the merged indexed axes) and, under grad, its transpose scatter add, where
    # repeated indices accumulate; jit sees the indices as traced values (clamped: in range here)
    key, (i, j) = _GATHERS[case]
    args = [np.asarray(i)] + ([np.asarray(j)] if j is not None else [])
    fn = (lambda a, i: key(a, i, None)) if j is None else key
    _every_way(fn, _X, *args)


@pytest.mark.parametrize("case", ["all_axes", "leading_axis", "inner_axis", "two_dim_inner", "between_slices"])
def test_the_tiny_executor_runs_boolean_masks(tiny, case):
    # boolean_mask (the standard's single boolean index, the masked axes moved to the front for it)
    fn = {
        "all_axes": lambda a: a[a > 0.3],
        "leading_axis": lambda a: a[a[:, 0, 0] > 0],
        "inner_axis": lambda a: a[:, :, a[0, 0, :] < 0],
        "two_dim_inner": lambda a: a[1:, a[0] > -0.2],
        "between_slices": lambda a: a[1:, a[0, :, 0] > 0, ::2],
    }[case]
    _matches_numpy(fn, _X)
    _matches_numpy(lambda a: ax.grad(lambda b: ax.sum(fn(b) ** 3))(a), _X)


_AT_INDICES = np.array([[1, -3, 1], [3, 1, -3]])  # repeated, negative


@pytest.mark.parametrize("kind", ["set", "add", "multiply", "min", "max"])
@pytest.mark.parametrize("where", ["axis0", "axis1", "two_adjacent", "two_apart"])
def test_the_tiny_executor_runs_scatter_updates_with_repeated_indices(tiny, kind, where):
    # scatter of each kind: repeated indices accumulate (add, multiply, min, max), "set" keeps one of
    # the repeated updates (the last, as NumPy's assignment); eagerly, jit, grad and vmap
    key = {
        "axis0": lambda i: (i,),
        "axis1": lambda i: (slice(None), i),
        "two_adjacent": lambda i: (slice(None), i, i + 2),
        "two_apart": lambda i: (i, slice(None), i + 1),
    }[where]

    def fn(a, i, u):
        k = key(i)
        region = a[k]
        return getattr(a.at[k], kind)(ax.reshape(u[:region.size], region.shape))

    u = np.round(np.random.default_rng(7).standard_normal(4 * 5 * 6 * 6), 1)
    if kind == "set":  # NumPy leaves it open which repeated update lands; arrayx's generic one takes the last
        _matches_numpy(fn, _X, _AT_INDICES, u)
        _matches_numpy(ax.jit(fn), _X, _AT_INDICES, u)
        _matches_numpy(ax.vmap(fn, in_axes=(0, None, None)), np.stack([_X, -_X]), _AT_INDICES, u)
        _matches_numpy(ax.grad(lambda a, i, u: ax.sum(fn(a, i, u) ** 2)), _X, _AT_INDICES, u)
    else:
        _every_way(fn, _X, _AT_INDICES, u)


@pytest.mark.parametrize("mode", ["clip", "drop", "fill", "promise_in_bounds"])
@pytest.mark.parametrize("kind", ["get", "set", "add", "multiply", "min", "max"])
def test_the_tiny_executor_runs_at_updates_in_each_mode(tiny, kind, mode):
    # out-of-range indices (except with promise_in_bounds) clamped, dropped or filled as the mode says
    i = np.array([0, 7, -1, 2, -9, 2, 3]) if mode != "promise_in_bounds" else np.array([0, 3, -1, 2, -4, 2, 3])

    def fn(a, i, u):
        if kind == "get":
            return a.at[:, i].get(mode=mode, fill_value=-7.0) if mode == "fill" else a.at[:, i].get(mode=mode)
        return getattr(a.at[:, i], kind)(u, mode=mode)

    x = _X[:, :4, 0]
    u = np.round(np.random.default_rng(8).standard_normal((4, 7)), 1)
    _matches_numpy(fn, x, i, u)
    _matches_numpy(ax.jit(fn), x, i, u)
    _matches_numpy(ax.vmap(fn, in_axes=(0, None, None)), np.stack([x, -x]), i, u)
    if kind in ("get", "add", "set"):
        _matches_numpy(ax.grad(lambda a, i, u: ax.sum(fn(a, i, u) ** 2)), x, i, u)


@pytest.mark.parametrize("starts", [(1, 2, 3), (3, -1, 5), (0, 9, -9)])
def test_the_tiny_executor_runs_dynamic_slices(tiny, starts):
    # dynamic_slice / dynamic_update_slice with starts clamped so that the window fits (JAX's rule);
    # under jit the starts are traced values (take and a select over an iota: nothing read on the host)
    def window(a, s):
        return ax.lax.dynamic_slice(a, (s[0], s[1], s[2]), (2, 3, 4))

    def update(a, s):
        return ax.lax.dynamic_update_slice(a, ax.sin(window(a, s)) * 3.0, (s[2], s[0], s[1]))

    s = np.asarray(starts)
    _every_way(window, _X, s)
    _every_way(update, _X, s)
    _every_way(lambda a, s: ax.lax.dynamic_slice(a, (1, 2, 3), (3, 3, 3)) * 2.0, _X, s)  # Python int starts
    _every_way(lambda a, s: ax.lax.dynamic_index_in_dim(a, s[1], axis=1, keepdims=False), _X, s)


def test_the_tiny_executor_runs_traced_out_of_range_indices_and_batched_indices(tiny):
    # under jit known-nothing indices are clamped (gather) or their updates dropped (scatter), as in
    # JAX; vmap over the indices batches gather and scatter with an iota index (the batching rules)
    i = np.array([[0, 9], [-1, -12], [2, 2]])
    u = np.round(np.random.default_rng(9).standard_normal((4, 3, 2)), 1)
    x = _X[:, :5, 1]
    _matches_numpy(ax.jit(lambda a, i: a[:, i]), x, i)
    _matches_numpy(ax.jit(lambda a, i, u: a.at[:, i].add(u)), x, i, u)
    _matches_numpy(ax.jit(lambda a, i, u: a.at[:, i].set(u)), x, i % 5, u)
    _matches_numpy(ax.jit(ax.grad(lambda a, i: ax.sum(a[i[0], i] ** 2))), x, i)
    _matches_numpy(ax.vmap(lambda a, i: a[i], in_axes=(None, 0)), x, i % 4)
    _matches_numpy(ax.vmap(lambda a, i, u: a.at[i].add(u), in_axes=(None, 0, 0)), x, i % 4,
                   np.round(np.linspace(-2, 2, 3 * 2 * 5).reshape(3, 2, 5), 1))


class ImmutableExecutor(base.Executor):
    """JAX arrays through jax.numpy (a standard namespace): buffers that cannot be written in place."""

    name = "tiny_immutable"
    mutable = False

    def _load(self):
        import jax

        jax.config.update("jax_enable_x64", True)  # process-wide, for this toy only (the jax executor scopes it per call)
        type(self).array_type = self.array_type = jax.Array
        return jax.numpy

    def compile(self, graph, donate_argnums=()):
        return self.lower(graph)


@pytest.fixture
def immutable():
    """The toy registered for the test; JAX's process-wide 64-bit setting, which its loading turns on,
    put back afterwards (the later tests in this process see JAX's defaults)."""
    jax = pytest.importorskip("jax")
    saved = bool(jax.config.jax_enable_x64)
    base._registry.pop(ImmutableExecutor.name, None)
    base.register_executor(ImmutableExecutor())
    try:
        yield ImmutableExecutor.name
    finally:
        base._registry.pop(ImmutableExecutor.name, None)
        jax.config.update("jax_enable_x64", saved)


def test_an_executor_of_immutable_buffers_runs_the_indexing_updates(immutable):
    # the generic updates write no buffer (selects over an iota, a sorted scatter), so buffers with no
    # __setitem__ (JAX's) take x[key] = v, x.at[].op(v) with repeated indices, dynamic_update_slice,
    # and the transposes under grad; values compared with the numpy executor
    i = np.array([0, -1, 0, 2])
    u = np.round(np.random.default_rng(11).standard_normal((4, 4, 6)), 1)

    def run(fn, *arrays):
        got = fn(*[ax.asarray(np.asarray(a), device=immutable) for a in arrays])
        assert got.executor == immutable
        np.testing.assert_allclose(np.asarray(got), _on_numpy(fn, *arrays), rtol=1e-12, atol=1e-12)

    def setitem(a):
        a = ax.asarray(a, copy=True)
        a[1:, ::-2, 3] = -1.0
        return a

    x = _X[:, :4]
    run(setitem, x)
    for kind in ("set", "add", "multiply", "min", "max"):
        run(lambda a, i, u: getattr(a.at[i], kind)(u), x, i, u)
        run(ax.jit(lambda a, i, u: getattr(a.at[:, i], kind)(ax.permute_dims(u, (1, 0, 2)))), x, i, u)
    run(lambda a: ax.lax.dynamic_update_slice(a, a[:2, :2, :2] * 2.0, (3, 1, -1)), x)
    run(ax.jit(lambda a, s: ax.lax.dynamic_update_slice(a, a[:2, :2, :2] * 2.0, (s, 1, s))), x, np.asarray(3))
    run(ax.grad(lambda a, i: ax.sum(a[i, 1:, ::2] ** 2) + ax.sum(ax.lax.dynamic_slice(a, (1, 1, 1), (2, 2, 2)) ** 3)), x, i)
