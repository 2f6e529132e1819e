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
