"""jit graphs: dead-code elimination (effects kept) and control flow under jit(grad)."""
from __future__ import annotations

import numpy as np

import arrayx as ax


def _names(graph):
    return [e.prim.name for e in graph.equations]


def test_dead_code_is_eliminated_from_jit_graphs(executor):
    def f(x):
        unused = ax.exp(x) * 3  # noqa: F841 - dead
        ax.cos(x)  # dead too
        return ax.sin(x) + 1

    jitted = ax.jit(f)
    assert _names(jitted.trace(ax.ones(3)).graph) == ["sin", "add"]
    np.testing.assert_allclose(np.asarray(jitted(ax.asarray([0.5, 1.0, 2.0]))), np.sin([0.5, 1.0, 2.0]) + 1,
                               rtol=1e-12)


def test_effects_survive_dead_code_elimination(executor):
    seen = []

    def f(x):
        ax.debug.callback(lambda v: seen.append(float(v.sum())), x)
        ax.scan(lambda c, xi: (ax.debug.callback(lambda v: seen.append(float(v)), xi) or c, None), 0.0, x)
        return x * 2

    out = ax.jit(f)(ax.asarray([1.0, 2.0]))
    np.testing.assert_array_equal(np.asarray(out), [2.0, 4.0])
    assert seen == [3.0, 1.0, 2.0]
