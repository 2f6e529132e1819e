"""On a real TPU (skipped elsewhere): the jax executor's defaults, the 64-bit setting, the refusals
before XLA, the matmul precision and the user's own JAX, on the chip itself.

Run by ``bash benchmarks/tpu_check.sh run`` (step ``tests``) on the device machine; CI has no TPU.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import arrayx as ax
from tests.executors.platform_tolerances import tpu_device


TPU = tpu_device()
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
    # svd of float32 runs (its TPU lowering built with 64-bit types off: tpu_limits.LOWER_IN_32_BITS)
    a = np.arange(12, dtype=np.float32).reshape(4, 3) / 7
    u, s, vt = ax.linalg.svd(ax.asarray(a, device=TPU), full_matrices=False)
    np.testing.assert_allclose(np.asarray(s), np.linalg.svd(a.astype(np.float64), compute_uv=False), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(np.asarray(u) * np.asarray(s) @ np.asarray(vt), a, atol=1e-5)
    with ax.tpu_64bit("emulate"), pytest.raises(NotImplementedError, match="svd: complex128 on a TPU"):
        ax.linalg.svd(ax.asarray(np.ones((4, 3), dtype=np.complex128), device=TPU))
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


def test_dlpack_export_is_a_host_copy():
    """XLA cannot export a TPU buffer by DLPack (JAX: "cannot be used as a DLPack device"), and DLPack
    has no device type for it: the export is a private host copy, reported as kDLCPU."""
    x = ax.asarray(np.array([1.5, 2.5, 3.5], dtype=np.float32), device=TPU)
    assert x.__dlpack_device__() == (1, 0)
    for kw in ({}, {"device": "cpu"}, {"copy": True}):
        h = np.from_dlpack(x, **kw)
        assert h.dtype == np.float32 and h.tolist() == [1.5, 2.5, 3.5]
        h[0] = 0.0
        assert float(x[0]) == 1.5
    with pytest.raises(BufferError, match="copy=False"):
        np.from_dlpack(x, copy=False)
    y = ax.from_dlpack(x, device=TPU)
    assert y.device == TPU and np.asarray(y).tolist() == [1.5, 2.5, 3.5]


def test_debug_print_has_run_when_a_jitted_call_returns(capsys):
    """On the chip a callback runs when the program reaches it, after JAX's dispatch has returned:
    arrayx's compiled call waits for it, so both prints are there before anything else runs."""
    seen = []

    def f(x):
        ax.debug.print("x = {}", x)
        ax.debug.callback(lambda v: seen.append(float(v)), ax.sum(x))
        return x * 2.0

    jf = ax.jit(f)
    for v in ([1.0, 2.0], [3.0, 4.0]):
        jf(ax.asarray(np.array(v, dtype=np.float32), device=TPU))
    assert capsys.readouterr().out == "x = [1. 2.]\nx = [3. 4.]\n"
    assert seen == [3.0, 7.0]


def test_64bit_data_on_the_chip_per_setting():
    """downcast: float64 host data becomes float32 (1e-310 becomes 0.0, below float32's range) and
    int64 wraps as NumPy's astype; emulate: 64-bit types kept, about 48 bits of mantissa."""
    tiny64 = np.array([1e-310, 1.0 + 2**-40])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = ax.asarray(tiny64, device=TPU)
        big = ax.asarray(np.array([2**62 + 1]), device=TPU)
    assert a.dtype == ax.float32 and np.asarray(a).tolist() == [0.0, 1.0]
    assert big.dtype == ax.int32 and np.asarray(big).tolist() == [1]
    with ax.tpu_64bit("emulate"):
        e = ax.asarray(np.array([1.0, 1.0 + 2**-40]), device=TPU)
        assert e.dtype == ax.float64
        assert abs(float(e[1] - e[0]) - 2**-40) < 1e-14  # pairs of float32: exact here or nearly
        assert ax.asarray([1, 2], device=TPU).dtype == ax.int32  # Python data takes the defaults in every mode
    tiny32 = np.array([1e-40], np.float32)
    b = ax.asarray(tiny32, device=TPU)
    np.testing.assert_array_equal(np.asarray(b), tiny32)  # stored and read back unchanged
    assert np.asarray(b * 1.0)[0] == 0.0  # XLA:TPU's float32 arithmetic flushes subnormals, as XLA:CPU's


def test_platform_tolerances_hold_on_the_chip():
    """The bounds tests/executors/platform_tolerances.py gives for a TPU's float32 results hold here:
    its transcendentals, and products at each matmul precision (K = 64)."""
    from tests.executors.platform_tolerances import PRODUCT_RTOL, tolerance

    rng = np.random.default_rng(1)
    v = rng.uniform(0.1, 3.0, 4096).astype(np.float32)
    x = ax.asarray(v, device=TPU)
    for name in ("exp", "log", "tanh", "sin", "cos", "sqrt", "expm1", "log1p"):
        got = np.asarray(getattr(ax, name)(x))
        want = getattr(np, name)(v.astype(np.float64))
        np.testing.assert_allclose(got, want, err_msg=name, **tolerance(ax.float32, TPU, uses=(name,)))
    a, b = rng.standard_normal((2, 64, 64)).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    for precision, rtol in PRODUCT_RTOL.items():
        with ax.default_matmul_precision(precision):
            got = np.asarray(ax.asarray(a, device=TPU) @ ax.asarray(b, device=TPU))
        assert np.max(np.abs(got - exact)) / np.max(np.abs(exact)) < rtol, precision


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_svd_of_huge_entries_is_scaled_not_nan(dtype):
    """XLA:TPU's svd overflowed on entries near 1e19 (NaN singular values; the official suite's test_svd
    and test_svdvals at 20 examples): the jax executor scales each matrix by a power of two on a TPU,
    eagerly and compiled."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 4, 5)) * 1e19
    if dtype is np.complex64:
        a = a + 1j * rng.standard_normal((3, 4, 5)) * 1e19
    a = a.astype(dtype)
    want = np.linalg.svd(a.astype(np.complex128 if dtype is np.complex64 else np.float64), compute_uv=False)
    x = ax.asarray(a, device=TPU)
    for got in (ax.linalg.svdvals(x), ax.linalg.svd(x, full_matrices=False)[1], ax.jit(ax.linalg.svdvals)(x)):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
@pytest.mark.parametrize("magnitude", [1e19, 1e-19, 1e-30])
def test_eigh_and_qr_of_extreme_entries_are_scaled(dtype, magnitude):
    """XLA:TPU's eigh and qr do not scale their input: float32 entries near 1e19 gave a non-finite Q R and
    eigenvalues 60% off, entries near 1e-19 and 1e-30 (products below the normal range, flushed to zero)
    eigenvalues and Q R 10-80% off, silently (session 24): the jax executor scales each matrix by a
    power of two on a TPU, eagerly and compiled."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal((2, 5, 5))
    if dtype is np.complex64:
        a = a + 1j * rng.standard_normal((2, 5, 5))
    a = (a * magnitude).astype(dtype)
    h = ((a + np.conj(np.swapaxes(a, -1, -2))) / 2).astype(dtype)
    wide = a.astype(np.complex128 if dtype is np.complex64 else np.float64)
    hw = h.astype(wide.dtype)
    want_w = np.linalg.eigvalsh(hw)
    x, hx = ax.asarray(a, device=TPU), ax.asarray(h, device=TPU)
    scale_w = np.abs(want_w).max(axis=-1, keepdims=True)
    for w in (ax.linalg.eigvalsh(hx), ax.linalg.eigh(hx)[0], ax.jit(ax.linalg.eigvalsh)(hx)):
        assert np.all(np.abs(np.asarray(w, np.float64) - want_w) <= 1e-5 * scale_w)
    w, v = (np.asarray(t).astype(wide.dtype) for t in ax.jit(ax.linalg.eigh)(hx))
    rebuilt = (v * w[..., None, :]) @ np.conj(np.swapaxes(v, -1, -2))
    assert np.abs(rebuilt - hw).max() <= 1e-4 * np.abs(hw).max()
    for q, r in (ax.linalg.qr(x), ax.jit(ax.linalg.qr)(x)):
        q, r = np.asarray(q).astype(wide.dtype), np.asarray(r).astype(wide.dtype)
        assert np.all(np.isfinite(r)) and np.allclose(np.tril(r, -1), 0)
        assert np.abs(q @ r - wide).max() <= 1e-4 * np.abs(wide).max()
        assert np.abs(np.conj(np.swapaxes(q, -1, -2)) @ q - np.eye(5)).max() <= 1e-4
