"""The NumPy executor's svd (executors/numpy/linalg.py): tall, thin real matrices go through SciPy's
gesdd where SciPy is importable; every case agrees with numpy.linalg.svd to rounding."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx
from arrayx.executors.numpy import linalg as npl


def _check(x_host, full_matrices, rtol):
    with arrayx.use_executor("numpy"):
        u, s, vh = arrayx.linalg.svd(arrayx.asarray(x_host), full_matrices=full_matrices)
    u, s, vh = np.asarray(u), np.asarray(s), np.asarray(vh)
    wu, ws, wvh = np.linalg.svd(x_host, full_matrices=full_matrices)
    assert (u.shape, s.shape, vh.shape) == (wu.shape, ws.shape, wvh.shape)
    assert u.dtype == s.dtype == vh.dtype == x_host.dtype
    np.testing.assert_allclose(s, ws, rtol=rtol, atol=rtol * ws.max())
    k = s.shape[-1]
    np.testing.assert_allclose(u[..., :k] * s[..., None, :] @ vh[..., :k, :], x_host,
                               rtol=0, atol=rtol * 10 * np.abs(x_host).max() * max(x_host.shape))
    # orthonormal columns / rows, and the same subspaces as NumPy's (vectors up to sign)
    eye = np.eye(k, dtype=x_host.dtype)
    np.testing.assert_allclose(np.swapaxes(u[..., :k], -1, -2) @ u[..., :k], np.broadcast_to(eye, s.shape[:-1] + (k, k)),
                               atol=rtol * 100)
    np.testing.assert_allclose(np.abs(np.sum(vh[..., :k, :] * wvh[..., :k, :], axis=-1)), 1.0, atol=rtol * 1e4)


@pytest.mark.parametrize("shape", [(2000, 64), (20_000, 8), (2048, 128), (16, 1), (4000, 3)])
def test_tall_thin_float64_agrees_with_numpy(shape):
    x = np.random.default_rng(sum(shape)).normal(size=shape)
    _check(x, False, 1e-10)


def test_tall_thin_float32_agrees_with_numpy():
    x = np.random.default_rng(7).normal(size=(1600, 50)).astype(np.float32)
    _check(x, False, 1e-4)


@pytest.mark.parametrize("shape,full", [((2000, 64), True), ((64, 64), False), ((100, 64), False),
                                        ((2000, 200), False), ((64, 2000), False), ((3, 200, 10), False)])
def test_other_shapes_agree_with_numpy(shape, full):
    x = np.random.default_rng(3).normal(size=shape)
    _check(x, full, 1e-10)


def test_tall_thin_takes_scipys_path_when_scipy_is_there(monkeypatch):
    pytest.importorskip("scipy.linalg")
    calls = []
    real = npl._scipy()

    def spy(*a, **k):
        calls.append(k)
        return real(*a, **k)

    monkeypatch.setattr(npl, "_scipy_svd", spy)
    x = np.random.default_rng(1).normal(size=(2000, 64))
    npl.svd(x, full_matrices=False)
    npl.svd(x[:64], full_matrices=False)  # square: NumPy's
    npl.svd(x, full_matrices=True)  # full matrices: NumPy's
    assert calls == [dict(full_matrices=False, compute_uv=True, overwrite_a=False, check_finite=False,
                          lapack_driver="gesdd")]


def test_without_scipy_numpy_runs(monkeypatch):
    monkeypatch.setattr(npl, "_scipy_svd", False)
    x = np.random.default_rng(2).normal(size=(2000, 64))
    _check(x, False, 1e-10)


def test_input_is_not_modified_and_nan_raises_numpys_error():
    x = np.random.default_rng(4).normal(size=(3000, 32))
    keep = x.copy()
    npl.svd(x, full_matrices=False)
    np.testing.assert_array_equal(x, keep)
    x[10, 3] = np.nan
    with pytest.raises(np.linalg.LinAlgError):
        npl.svd(x, full_matrices=False)
