"""max/min of slices holding a NaN are NaN on every executor, eagerly and under jit, at the lengths
where XLA:CPU (jax 0.10) loses the NaN (3 x 2048 float32: -inf or 1.0 instead of nan)."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as ax
from tests import covering
from tests.conftest import assert_same, on_numpy


#: every size on numpy, numba and dask (their kernels' vector and chunk boundaries); on jax (new XLA
#: programs per size, eager and jitted) the ci profile takes each function and dtype at one size, the
#: sizes in turn (tests/covering.py; every cell in the deep profile)
@pytest.mark.parametrize("executor, name, dtype, n", covering.on_executors(
    [(name, dtype, n) for n in [8, 2048, 3000] for dtype in ["float32", "float64"] for name in ["max", "min"]]),
    indirect=["executor"])
def test_a_nan_in_a_slice_gives_nan(executor, name, dtype, n):
    x = np.ones((3, n), dtype)
    x[0, 1] = -2.0
    x[1, 5] = np.nan
    x[2, n - 1] = np.nan
    xa = ax.asarray(x)
    reduce = getattr(ax, name)
    for axis in (1, None):
        eager = reduce(xa, axis=axis)
        assert_same(eager, on_numpy(lambda v: reduce(v, axis=axis), xa))
        assert_same(ax.jit(lambda v: reduce(v, axis=axis))(xa), eager)
    np.testing.assert_array_equal(np.asarray(reduce(xa, axis=1)), [1.0 if name == "max" else -2.0, np.nan, np.nan])
    ints = ax.asarray(np.arange(3 * n, dtype=np.int32).reshape(3, n))  # integers keep the plain reduction
    np.testing.assert_array_equal(np.asarray(reduce(ints, axis=1)), getattr(np, name)(np.asarray(ints), axis=1))
