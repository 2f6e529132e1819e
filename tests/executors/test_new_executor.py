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
