"""Operations that an executor may compute with a host library where its own kernel is slower
(docs/executors.rst, "Host kernels on the jax executor"): the values are the NumPy executor's, the
result stays an array of the executor and device the operand came from."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as xp
from tests.conftest import assert_matches_numpy, assert_same, on_numpy


@pytest.mark.parametrize("name", ["unique_values", "unique_counts", "unique_inverse", "unique_all"])
def test_unique_counts_subnormals_zeros_and_nans_as_numpy(executor, name):
    # XLA compares a subnormal as zero (jax.numpy's unique_counts gave [5e-324, 1, nan, nan]
    # with counts [4, 1, 1, 1]); NumPy keeps 5e-324 apart from both zeros
    x = xp.asarray([5e-324, 0.0, -0.0, 1.0, 5e-324, np.nan, np.nan])
    got = assert_matches_numpy(getattr(xp, name), x)
    values = got if name == "unique_values" else got.values
    assert values.shape == (5,)
    assert values.device == x.device  # the result lives where the operand does


@pytest.mark.parametrize("dtype", ["int64", "int8", "uint16", "bool", "float32", "complex128"])
def test_unique_all_fields_match_numpy_per_dtype(executor, dtype):
    rng = np.random.default_rng(3)
    host = (rng.integers(0, 5, size=(40, 3)) % (2 if dtype == "bool" else 5)).astype(dtype)
    x = xp.asarray(host)
    u = assert_matches_numpy(xp.unique_all, x)
    assert u.inverse_indices.shape == (40, 3)
    assert u.indices.dtype == u.inverse_indices.dtype == u.counts.dtype == xp.int64
    assert_same(xp.take(u.values, xp.reshape(u.inverse_indices, (-1,))), on_numpy(xp.reshape, x, (-1,)))


@pytest.mark.parametrize("shape", [(64,), (7, 9), (2, 3, 4), (0, 5)])
@pytest.mark.parametrize("dtype", ["bool", "int32", "float64", "complex64"])
def test_nonzero_matches_numpy(executor, shape, dtype):
    rng = np.random.default_rng(sum(shape) + len(dtype))
    host = (rng.integers(0, 3, size=shape) == 0).astype(dtype)
    if dtype == "float64" and host.size:
        host.flat[0] = -0.0  # a zero of either sign is a zero
        host.flat[-1] = 5e-324  # a subnormal is not (NumPy's rule, on the host for CPU devices)
    x = xp.asarray(host)
    got = assert_matches_numpy(xp.nonzero, x)
    assert len(got) == len(shape)
    for idx in got:
        assert idx.dtype == xp.int64 and idx.device == x.device


def test_a_mask_write_goes_through_nonzero_on_the_operands_executor(executor):
    host = np.arange(64.0)
    x = xp.asarray(host, copy=True)  # the NumPy executor would write into host itself
    mask = xp.asarray(host % 5 == 0)
    x[mask] = xp.asarray(-np.arange(13.0))
    want = host.copy()
    want[host % 5 == 0] = -np.arange(13.0)
    assert_same(x, want)
