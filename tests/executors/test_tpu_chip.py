"""On a real TPU (skipped elsewhere): the jax executor's defaults, the 64-bit setting, the refusals
before XLA, the matmul precision and the user's own JAX, on the chip itself.

Run by ``bash benchmarks/tpu_check.sh run`` (step ``tests``) on the device machine; CI has no TPU.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import arrayx as ax
from arrayx.core import executor as base


def _tpu():
    ex = base.get("jax")
    if not ex.available():
        return None
    return next((d for d in ex.devices() if ex.platform_of(d) == "tpu"), None)


TPU = _tpu()
pytestmark = pytest.mark.skipif(TPU is None, reason="no TPU here (the jax executor lists no tpu device)")


def test_defaults_are_32_bit():
    info = ax.__array_namespace_info__()
    assert info.default_dtypes(device=TPU) == {"real floating": ax.float32, "complex floating": ax.complex64,
                                               "integral": ax.int32, "indexing": ax.int32}
    assert ax.float64 not in info.dtypes(device=TPU).values()
    x = ax.ones(4, device=TPU)
    assert x.dtype == ax.float32 and x.device == TPU
    assert ax.arange(5, device=TPU).dtype == ax.int32
    assert ax.argmax(x).dtype == ax.int32


def test_float64_data_is_downcast_once_explicit_requests_refused():
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        w = ax.asarray(np.linspace(0, 1, 8), device=TPU)
    assert w.dtype == ax.float32
    np.testing.assert_allclose(np.asarray(w), np.linspace(0, 1, 8), rtol=1e-7)
    with pytest.raises(TypeError, match="float64"):
        ax.zeros(3, dtype=ax.float64, device=TPU)


def test_refused_before_xla_on_the_chip():
    with ax.tpu_64bit("emulate"):
        c = ax.asarray(np.ones(3, dtype=np.complex128), device=TPU)
        with pytest.raises(NotImplementedError, match="abs: complex128 on a TPU"):
            ax.abs(c)
        with pytest.raises(NotImplementedError, match="tanh: complex128 on a TPU"):
            ax.jit(ax.tanh)(c)
    with pytest.raises(NotImplementedError, match="svd: float32 on a TPU"):
        ax.linalg.svd(ax.ones((4, 3), device=TPU))
    s = ax.linalg.svdvals(ax.asarray(np.eye(3, dtype=np.float32) * 2, device=TPU))
    np.testing.assert_allclose(np.asarray(s), [2, 2, 2], rtol=1e-6)


def test_matmul_precision_on_the_chip():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 256, 256)).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    x, y = ax.asarray(a, device=TPU), ax.asarray(b, device=TPU)
    scale = np.max(np.abs(exact))
    with ax.default_matmul_precision("highest"):
        err_highest = np.max(np.abs(np.asarray(x @ y) - exact)) / scale
    err_default = np.max(np.abs(np.asarray(x @ y) - exact)) / scale
    assert err_highest < 1e-5
    assert err_default > err_highest  # one bfloat16 pass: about three digits


def test_bfloat16_on_the_chip():
    x = ax.asarray(np.arange(6, dtype=np.float32).reshape(2, 3), dtype=ax.bfloat16, device=TPU)
    y = x @ ax.matrix_transpose(x)
    assert y.dtype == ax.bfloat16
    np.testing.assert_allclose(np.asarray(ax.astype(y, ax.float32)), [[5, 14], [14, 50]])
    assert (x + 1.5).dtype == ax.bfloat16 and (x + ax.ones(3, dtype=ax.float32, device=TPU)).dtype == ax.float32
    g = ax.grad(lambda v: ax.sum(v * v))(x)
    assert g.dtype == ax.bfloat16


def test_the_users_own_jax_is_left_alone():
    import jax
    import jax.numpy as jnp

    ax.asarray([1.0, 2.0], device=TPU) * 2
    assert not jax.config.jax_enable_x64
    assert jnp.asarray(np.ones(3)).dtype == jnp.float32
