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
