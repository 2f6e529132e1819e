"""``numpy.asarray`` of an arrayx array is writeable on every executor, as NumPy's own arrays are.

SciPy and scikit-learn convert foreign arrays with ``np.asarray`` and then write into the result
(or take writeable memoryviews of it); JAX's host view is read-only, so the jax executor hands out
a copy (benchmarks/bench_array_export.py measures it).  ``copy=False`` keeps the no-copy view.
"""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as xp
from arrayx.core import executor as _base


def test_asarray_is_writeable_and_holds_the_values(executor):
    x = xp.asarray([1.0, 2.0, 3.0])
    host = np.asarray(x)
    assert host.flags.writeable
    np.testing.assert_array_equal(host, [1.0, 2.0, 3.0])
    host[0] = 10.0
    if _base.get(executor).mutable and executor != "dask":
        assert float(x[0]) == 10.0  # a view of the buffer, as NumPy's asarray of a NumPy array
    else:
        assert float(x[0]) == 1.0  # an immutable (JAX) or computed (Dask) buffer is never written


def test_asarray_with_dtype_and_copy(executor):
    x = xp.asarray([1.5, 2.5])
    out = np.asarray(x, dtype=np.float32)
    assert out.dtype == np.float32 and out.flags.writeable
    np.testing.assert_array_equal(out, np.array([1.5, 2.5], np.float32))
    copied = np.array(x, copy=True)
    copied[1] = 0.0
    assert float(x[1]) == 2.5


def test_scipy_sosfilt_accepts_arrayx_arrays(executor):
    signal = pytest.importorskip("scipy.signal")
    sos = signal.butter(2, 0.2, output="sos")
    data = np.sin(np.linspace(0.0, 6.0, 50))
    out = signal.sosfilt(xp.asarray(sos), xp.asarray(data))
    np.testing.assert_allclose(np.asarray(out), signal.sosfilt(sos, data), rtol=1e-12, atol=1e-14)


def test_sklearn_scale_accepts_arrayx_arrays(executor):
    preprocessing = pytest.importorskip("sklearn.preprocessing")
    data = np.arange(12.0).reshape(6, 2) ** 1.5
    out = preprocessing.scale(xp.asarray(data))
    np.testing.assert_allclose(np.asarray(out), preprocessing.scale(data), rtol=1e-12, atol=1e-14)
    out1 = preprocessing.scale(xp.asarray(data[:, 0]))  # 1-D: scikit-learn scales in place
    np.testing.assert_allclose(np.asarray(out1), preprocessing.scale(data[:, 0]), rtol=1e-12, atol=1e-14)
