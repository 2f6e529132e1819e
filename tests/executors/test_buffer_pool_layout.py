"""Pooled results keep NumPy's own memory layout: a transposed (F-ordered) operand gives NumPy a
transposed result, and the pool (whose buffers are C-ordered) leaves such operands to NumPy."""
from __future__ import annotations

import numpy as np

import arrayx
from tests.conftest import assert_same


def test_large_ops_on_transposed_operands_keep_numpys_layout():
    host = np.random.default_rng(1).normal(size=(40_000, 8))  # 2.5 MB: pooled sizes
    with arrayx.use_executor("numpy"):
        x = arrayx.asarray(host).T  # (8, 40000), F-ordered
        mean = arrayx.mean(x, axis=1, keepdims=True)
        for got, want in [(x - mean, host.T - np.asarray(mean)), (arrayx.exp(x), np.exp(host.T)),
                          (x * 2.0, host.T * 2.0)]:
            assert_same(got, want)
            assert np.asarray(got).strides == want.strides, (np.asarray(got).strides, want.strides)


def test_large_ops_on_c_ordered_operands_still_pooled():
    ex = arrayx.executors.get("numpy")
    if not ex.pool_min_bytes:
        return  # the pool is off here (ARRAYX_BUFFER_POOL=0)
    with arrayx.use_executor("numpy"):
        x = arrayx.asarray(np.ones((1000, 400)))  # 3.2 MB
        y = x + 1.0
        assert np.asarray(y).base is not None  # a view of a pooled buffer
        assert_same(y, np.full((1000, 400), 2.0))
