"""Writes to a basic window (``x.at[key].set``, ``x[key] = v``'s functional form, the gradient of
``w[i]``): every executor against the NumPy executor, eager and compiled.  The jax executor places a
window by concatenating the pieces of ``x`` around it (``executors/jax/indexing.py``:
``slice_update``), not by XLA's scatter: XLA:TPU compiled the attention block's three ``w[i]``
gradients faster that way, to a program closer to JAX's own (benchmarks/tpu_aot_rows.py)."""
from __future__ import annotations

import re

import numpy as np
import pytest

import arrayx as ax
from arrayx.core import executor as base

# (shape, key, value shape): ints (negative too), unit-step slices (clipped, empty), None,
# Ellipsis, whole axes, a scalar value, and keys that are not windows (steps, reversed)
CASES = [
    ((3, 4, 5), (1,), (4, 5)),
    ((3, 4, 5), (-1, slice(1, 3)), (2, 5)),
    ((3, 4, 5), (slice(None), 2, slice(1, None)), (3, 4)),
    ((3, 4, 5), (Ellipsis, slice(-2, None)), (3, 4, 2)),
    ((3, 4, 5), (None, 0, slice(0, 9)), (1, 4, 5)),
    ((3, 4, 5), (slice(2, 2),), (0, 4, 5)),
    ((3, 4, 5), (slice(0, 3), slice(0, 4)), ()),
    ((6,), (slice(1, 5),), (1,)),
    ((6, 4), (slice(None, None, 2), 1), (3,)),
    ((6, 4), (slice(None, None, -1),), (6, 4)),
]


def _ids(case):
    return f"{case[0]}-{case[1]}".replace(" ", "")


def _window_cases() -> list:
    """``executor, case, compiled, dtype``: every (case, eager or jit, dtype) on every executor but jax
    (two new programs each), which in the ci profile takes one dtype per (case, eager or jit) in turn,
    eager and jit in alternating order along the cases, so every case runs in both dtypes there, each
    dtype eager and compiled (tests/covering.py; all of them in the deep profile).  Cases by index:
    their keys hold slices, which this Python cannot hash."""
    from tests import covering

    grid = [(k, compiled, dtype) for k in range(len(CASES)) for compiled in ((False, True), (True, False))[k % 2]
            for dtype in ("float32", "int32")]
    names = {False: "eager", True: "jit"}
    return covering.on_executors(grid, axis=2, ids=lambda v: names[v] if isinstance(v, bool) else
                                 _ids(CASES[v]) if isinstance(v, int) else v)


@pytest.mark.parametrize("executor, case, compiled, dtype", _window_cases(), indirect=["executor"])
def test_a_window_write_is_the_numpy_executors(executor, case, compiled, dtype):
    shape, key, vshape = CASES[case]
    rng = np.random.default_rng(0)
    x = rng.integers(-9, 9, size=shape).astype(dtype)
    v = rng.integers(-9, 9, size=vshape).astype(dtype)

    def write(x, v):
        return x.at[key].set(v), x.at[key].add(v)

    def run(name):
        with ax.use_executor(name):
            fn = ax.jit(write) if compiled else write
            return [np.asarray(r) for r in fn(ax.asarray(x), ax.asarray(v))]

    for got, want in zip(run(executor), run("numpy")):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_the_gradient_of_indexed_weights_is_the_numpy_executors(executor):
    """``w[i]`` for each i (the attention block's weights): each gradient written into zeros."""
    rng = np.random.default_rng(1)
    w = rng.standard_normal((3, 4, 5))
    q = rng.standard_normal((2, 6, 4))

    def loss(w, q):
        return ax.sum((q @ w[0]) * (q @ w[2]) - ax.sin(q @ w[1]) + w[-1][1:3, ::2].sum())

    def run(name):
        with ax.use_executor(name):
            value, grad = ax.jit(ax.value_and_grad(loss))(ax.asarray(w), ax.asarray(q))
            return np.asarray(value), np.asarray(grad)

    (value, grad), (value0, grad0) = run(executor), run("numpy")
    np.testing.assert_allclose(value, value0, rtol=1e-12)
    np.testing.assert_allclose(grad, grad0, rtol=1e-12, atol=1e-12)


@pytest.mark.jax
@pytest.mark.skipif(not base.get("jax").available(), reason="jax is not installed")
@pytest.mark.parametrize("platform", ["tpu", "cpu"])
def test_the_gradient_of_indexed_weights_has_no_scatter_in_the_program(platform):
    import jax

    ex = base.get("jax")

    def loss(w, q):
        return ax.mean((q @ w[0] + q @ w[1] * q @ w[2]) ** 2)

    with ax.use_executor("jax"):
        args = (ax.asarray(np.ones((3, 8, 8), np.float32)), ax.asarray(np.ones((2, 4, 8), np.float32)))
        graph = ax.jit(ax.grad(loss)).lower(*args).graph
    assert [e.prim.name for e in graph.equations].count("slice_update") == 3
    program = ex.lower(graph)
    avals = [jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in graph.in_avals]
    try:
        text = ex.scoped(lambda: jax.jit(program).trace(*avals).lower(lowering_platforms=(platform,)).as_text())()
    except Exception as e:  # noqa: BLE001 - an installed JAX that cannot lower for the platform here
        pytest.skip(f"this JAX cannot lower for {platform!r} without the device: {type(e).__name__}: {e}"[:300])
    ops = re.findall(r"stablehlo\.([a-z_]+)", text)
    assert "scatter" not in ops and "dynamic_update_slice" not in ops, sorted(set(ops))
    assert ops.count("concatenate") == 3


def test_eager_writes_in_a_loop_compile_one_program_per_window_size():
    """``x[i] = v`` over ``i`` on the jax executor: no new program after the first write of each window
    size (the starts are the program's arguments, as for reads), each write the NumPy executor's; it
    compiled a program per index."""
    pytest.importorskip("jax")
    from arrayx.executors.jax import indexing

    want = np.zeros((7, 3))
    with ax.use_executor("jax"):
        x = ax.zeros((7, 3))
        x[0] = 0.0  # the first of each size compiles
        x[0, 1] = ax.asarray(0.0)
        before = indexing._UPDATE._cache_size()
        for i in range(7):
            x[i] = float(i)
            want[i] = float(i)
            x[-1 - i, 1] = ax.asarray(10.0 + i)
            want[-1 - i, 1] = 10.0 + i
        assert indexing._UPDATE._cache_size() == before
        x[2:4] = ax.asarray([1.5, 2.5, 3.5])
        want[2:4] = [1.5, 2.5, 3.5]
    np.testing.assert_array_equal(np.asarray(x), want)
