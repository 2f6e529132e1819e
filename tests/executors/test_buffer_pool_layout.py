"""Pooled results keep NumPy's own memory layout: a transposed (F-ordered) operand gives NumPy a
transposed result, and the pool gives it one too (the transpose of a C-ordered pooled buffer of the
reversed shape), so ``X.T - mean`` and ``astype`` of ``X.T`` neither pay a fresh mapping's page faults
nor a strided copy."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx
from tests.conftest import assert_same


def _pooled(x) -> bool:
    return np.asarray(x).base is not None  # a view of a pooled buffer (NumPy's own results own theirs)


def test_large_ops_on_transposed_operands_keep_numpys_layout():
    host = np.random.default_rng(1).normal(size=(40_000, 8))  # 2.5 MB: pooled sizes
    with arrayx.use_executor("numpy"):
        x = arrayx.asarray(host).T  # (8, 40000), F-ordered
        mean = arrayx.mean(x, axis=1, keepdims=True)
        for got, want in [(x - mean, host.T - np.asarray(mean)), (arrayx.exp(x), np.exp(host.T)),
                          (x * 2.0, host.T * 2.0), (2.0 * x, 2.0 * host.T), (mean - x, np.asarray(mean) - host.T),
                          (x * x, host.T * host.T),
                          (arrayx.astype(x, arrayx.float32), host.T.astype(np.float32)),
                          (arrayx.astype(x, arrayx.float64), host.T.astype(np.float64))]:
            assert_same(got, want)
            assert np.asarray(got).strides == want.strides, (np.asarray(got).strides, want.strides)


def test_transposed_results_come_from_the_pool_and_are_reused(pool_on):
    host = np.random.default_rng(2).normal(size=(40_000, 8))
    with arrayx.use_executor("numpy"):
        x = arrayx.asarray(host).T
        mean = arrayx.mean(x, axis=1, keepdims=True)
        for fn in (lambda: x - mean, lambda: arrayx.exp(x), lambda: arrayx.astype(x, arrayx.float64)):
            first = fn()
            assert _pooled(first)
            addr = np.asarray(first).__array_interface__["data"][0]
            second = fn()  # the first is alive: another buffer
            assert np.asarray(second).__array_interface__["data"][0] != addr
            assert_same(second, first)
            del first, second
            hits = pool_on.stats()["hits"]
            third = fn()  # both dropped: a buffer is reused
            assert pool_on.stats()["hits"] == hits + 1
            assert np.asarray(third).flags.f_contiguous and not np.asarray(third).flags.c_contiguous


def test_mixed_layouts_are_left_to_numpy():
    rng = np.random.default_rng(3)
    c_host, t_host = rng.normal(size=(8, 40_000)), rng.normal(size=(40_000, 8)).T
    with arrayx.use_executor("numpy"):
        c, t = arrayx.asarray(c_host), arrayx.asarray(t_host.T).T
        for got, want in [(c + t, c_host + t_host), (t + c, t_host + c_host)]:
            assert_same(got, want)
            assert np.asarray(got).strides == want.strides


def test_large_ops_on_c_ordered_operands_still_pooled():
    ex = arrayx.executors.get("numpy")
    if not ex.pool_min_bytes:
        return  # the pool is off here (ARRAYX_BUFFER_POOL=0)
    with arrayx.use_executor("numpy"):
        x = arrayx.asarray(np.ones((1000, 400)))  # 3.2 MB
        y = x + 1.0
        assert np.asarray(y).base is not None  # a view of a pooled buffer
        assert_same(y, np.full((1000, 400), 2.0))


@pytest.mark.parametrize("s1,s2", [((6000, 64), (64, 64)), ((64, 6000), (6000, 64)), ((3, 5), (5, 2))])
def test_small_matmul_results_skip_the_pool(pool_on, s1, s2):
    rng = np.random.default_rng(4)
    a_, b_ = rng.normal(size=s1), rng.normal(size=s2)
    if s1[0] * s2[1] * 8 >= pool_on.min_bytes:
        pytest.skip("result not small under this pool's threshold")
    before = pool_on.stats()
    with arrayx.use_executor("numpy"):
        got = arrayx.asarray(a_) @ arrayx.asarray(b_)
    after = pool_on.stats()
    assert (after["hits"], after["new"]) == (before["hits"], before["new"])
    assert not _pooled(got)
    np.testing.assert_allclose(np.asarray(got), a_ @ b_, rtol=1e-12, atol=1e-12)
