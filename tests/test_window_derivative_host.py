"""The host (NumPy) derivative of the max/min window reduction: the branch-free masked copies of
``executors/numpy/lax.py`` give the same bits as the plain ``where``/add composition they replace
(``select_host``/``scatter_host``, which CuPy still runs), for every window shape the reduction takes;
and grad of max_pool agrees on every executor with the NumPy executor's."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as ax
from arrayx.executors.numpy import lax as host
from tests.conftest import to_numpy

# (shape, window, strides, padding, window_dilation): disjoint windows that cover the operand (2x2
# pooling), disjoint ones that leave a row out, overlapping ones, padding and negative padding,
# dilation, a window over every axis, 1-d
CASES = [
    ((3, 4, 8, 8), (1, 1, 2, 2), (1, 1, 2, 2), ((0, 0),) * 4, (1,) * 4),
    ((3, 4, 9, 7), (1, 1, 2, 2), (1, 1, 2, 2), ((0, 0),) * 4, (1,) * 4),
    ((2, 9, 7), (1, 3, 2), (1, 2, 1), ((0, 0), (1, 1), (0, 1)), (1, 1, 1)),
    ((2, 9, 10), (1, 3, 3), (1, 3, 3), ((0, 0), (1, 2), (-1, 2)), (1, 1, 1)),
    ((2, 9, 10), (1, 2, 2), (1, 4, 3), ((0, 0), (0, 0), (0, 0)), (1, 2, 1)),
    ((2, 10, 10), (2, 2, 2), (2, 2, 2), ((0, 0), (0, 0), (0, 0)), (1, 1, 1)),
    ((6,), (3,), (3,), ((0, 0),), (1,)),
    ((5,), (2,), (1,), ((-1, 1),), (2,)),
]
DTYPES = ["float32", "float64", "float16", "int32", "int8", "uint16", "bool"]


def _operand(rng, shape, dtype):
    """Values with many ties (a handful of distinct values), NaNs and signed zeros where floating."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    x = rng.integers(0 if dtype.kind == "u" else -2, 3, shape).astype(dtype)
    if dtype.kind == "f":
        x.flat[::7] = np.nan
        x.flat[::5] = -0.0
    return x


def _cotangent(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    c = (rng.standard_normal(shape) * 3).astype(dtype)
    if dtype.kind == "f":
        c.flat[::4] = -0.0  # the composition adds into zeros: -0.0 comes back as +0.0
        c.flat[::9] = np.inf
    return c


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("kind", ["max", "min"])
def test_host_select_and_scatter_match_the_composition_bit_for_bit(case, dtype, kind):
    shape, window, strides, padding, dilation = CASES[case]
    params = dict(kind=kind, window=window, strides=strides, padding=padding, window_dilation=dilation)
    rng = np.random.default_rng(case)
    x = _operand(rng, shape, dtype)
    t = _cotangent(rng, shape, dtype)
    out = host.reduce_window(x, **params)
    ct = _cotangent(rng, out.shape, dtype)
    got = host.window_select(x, t, **params)
    want = host.select_host(np, host.reduce_window, x, t, **params)
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    assert got.tobytes() == want.tobytes(), f"window_select {kind} {dtype} {params}"
    got = host.window_scatter(x, ct, **params)
    want = host.scatter_host(np, host.reduce_window, host.add_at_inplace, x, ct, **params)
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes(), \
        f"window_scatter {kind} {dtype} {params}"


def test_host_derivative_of_a_channels_last_operand():
    """A conv result is a channels-last view; the derivative reads it in any memory order."""
    rng = np.random.default_rng(3)
    x = np.maximum(rng.standard_normal((4, 5, 6, 8)), 0).transpose(0, 3, 1, 2)  # (N, C, H, W) view
    params = dict(kind="max", window=(1, 1, 2, 2), strides=(1, 1, 2, 2), padding=((0, 0),) * 4,
                  window_dilation=(1,) * 4)
    ct = rng.standard_normal(host.reduce_window(x, **params).shape).T.copy().T  # Fortran-ordered too
    got = host.window_scatter(x, ct, **params)
    want = host.scatter_host(np, host.reduce_window, host.add_at_inplace, x, ct, **params)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(host.window_select(x, x * 2, **params),
                                  host.select_host(np, host.reduce_window, x, x * 2, **params))


def test_max_pool_gradient_under_jit_matches_the_numpy_executor(executor):
    """The CNN's pooling step (relu then 2x2 max_pool, ties at zero): jit(grad) on each executor
    against the NumPy executor's."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 3, 8, 10)).astype(np.float32)
    w = rng.standard_normal((4, 3, 4, 5)).astype(np.float32)

    def loss(v, w):
        return ax.sum(ax.lax.max_pool(ax.maximum(v, 0.0), (2, 2)) * w)

    got = ax.jit(ax.grad(loss))(ax.asarray(x), ax.asarray(w))
    with ax.use_executor("numpy"):
        want = ax.jit(ax.grad(loss))(ax.asarray(x), ax.asarray(w))
    np.testing.assert_array_equal(to_numpy(got), to_numpy(want))
