"""Defaults that promotion picks follow the device: on a TPU (32-bit defaults) integer operands of
floating-point functions compute in float32, not NumPy's float64, and bool with a Python int gives
int32, so no emulated 64-bit op reaches the chip by way of a default.  Operands that are already
64-bit (ARRAYX_TPU_64BIT=emulate) keep their width.  CPU devices keep NumPy's rules."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as ax
from tests.api.test_device_dtypes import tpu_jax  # noqa: F401  (the fixture)


def _int32():
    return ax.asarray(np.array([1, 2, 3], dtype=np.int32))


@pytest.mark.parametrize("make, want", [
    (lambda x: x / 2, np.float32),
    (lambda x: ax.divide(x, x), np.float32),
    (lambda x: ax.sin(x), np.float32),
    (lambda x: ax.sqrt(x), np.float32),
    (lambda x: ax.atan2(x, x), np.float32),
    (lambda x: x * 1.5, np.float32),
    (lambda x: x + 1j, np.complex64),
    (lambda x: (x > 1) + 1, np.int32),
], ids=["div-scalar", "divide", "sin", "sqrt", "atan2", "mul-float", "add-complex", "bool-plus-int"])
def test_defaults_from_promotion_follow_a_tpu(tpu_jax, make, want):  # noqa: F811
    x = _int32()
    eager = make(x)
    staged = ax.jit(make)(x)
    for got in (eager, staged):
        assert got.dtype == want
    with np.errstate(all="ignore"):
        ref = make(np.array([1, 2, 3], dtype=np.int32))
    np.testing.assert_allclose(np.asarray(eager), np.asarray(ref).astype(want), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(staged), np.asarray(eager), rtol=1e-6)


def test_64_bit_operands_keep_their_width_under_emulate(tpu_jax):  # noqa: F811
    with ax.tpu_64bit("emulate"):
        x = ax.asarray(np.array([1.0, 2.0]))
        assert x.dtype == ax.float64
        assert (x / 2).dtype == ax.float64
        assert (ax.asarray(np.array([1, 2], dtype=np.int64)) / 2).dtype == ax.float64


@pytest.mark.parametrize("executor", ["numpy", "jax"])
def test_cpu_keeps_numpys_rules(executor):
    with ax.use_executor(executor):
        x = _int32()
        assert (x / 2).dtype == ax.float64
        assert ax.sin(x).dtype == ax.float64
        assert ((x > 1) + 1).dtype == ax.int64
        assert ax.jit(lambda v: v / 2)(x).dtype == ax.float64


def test_arrayx_own_intermediates_follow_a_tpu(tpu_jax):  # noqa: F811
    """one_hot's default float, nn functions of integer input, counts of repeated ``.at`` indices and
    out-of-range index keys use the device's 32-bit defaults: no emulated 64-bit op on the chip."""
    labels = ax.asarray(np.array([0, 2, 7, 1], dtype=np.int32))
    hot = ax.nn.one_hot(labels, 3)
    assert hot.dtype == ax.float32
    np.testing.assert_array_equal(np.asarray(hot), np.array([0, 2, 7, 1])[:, None] == np.arange(3))
    assert ax.nn.sigmoid(labels).dtype == ax.float32
    x = ax.asarray(np.arange(6, dtype=np.float32))
    twice = x.at[ax.asarray(np.array([1, 1, 4], dtype=np.int32))].apply(lambda v: v * 2)
    assert twice.dtype == ax.float32
    np.testing.assert_array_equal(np.asarray(twice), [0, 4, 2, 3, 8, 5])
    for key, mode, want in ((10**12, "clip", 5.0), (-10**12, "clip", 0.0), (2**40, "fill", -1.0)):
        got = x.at[key].get(mode=mode, fill_value=-1.0)
        assert got.dtype == ax.float32 and float(got) == want, (key, mode)


@pytest.mark.parametrize("executor", ["numpy", "jax"])
def test_one_hot_of_narrow_and_unsigned_labels_on_cpu(executor):
    """Classes past the labels' own range (300 classes of uint8 labels) and uint64 labels give the
    hot positions NumPy's comparison gives; the default float stays float64 on a CPU."""
    with ax.use_executor(executor):
        for dt, vals, n in ((np.uint8, [0, 1, 250], 300), (np.uint64, [0, 5, 2], 6), (np.bool_, [True, False], 3)):
            got = ax.nn.one_hot(ax.asarray(np.array(vals, dtype=dt)), n)
            assert got.dtype == ax.float64
            np.testing.assert_array_equal(np.asarray(got), (np.array(vals, dtype=np.int64)[:, None] == np.arange(n)))


def test_mixed_kinds_of_narrow_operands_stay_narrow_on_a_tpu(tpu_jax):  # noqa: F811
    """int32 with float32 is float64 by NumPy's table; on a TPU (no native 64-bit types) float32,
    eagerly and staged; a 64-bit operand (emulate) keeps NumPy's answer."""
    i = ax.asarray(np.array([1, 2], dtype=np.int32))
    f = ax.asarray(np.array([0.5, 0.25], dtype=np.float32))
    u = ax.asarray(np.array([3, 4], dtype=np.uint32))
    for got in (i + f, ax.jit(lambda a, b: a + b)(i, f), ax.subtract(f, i), i * u):
        assert got.dtype in (ax.float32, ax.int32), got.dtype
    np.testing.assert_array_equal(np.asarray(i + f), np.array([1.5, 2.25], dtype=np.float32))
    assert (i * u).dtype == ax.int32  # NumPy's int64 for int32 with uint32, the device's int32
    with ax.tpu_64bit("emulate"):
        wide = ax.asarray(np.array([1, 2], dtype=np.int64))
        assert (wide + f).dtype == ax.float64


def test_an_explicit_64_bit_trace_dtype_asks_the_tpu_setting(tpu_jax):  # noqa: F811
    m = ax.asarray(np.arange(9, dtype=np.int32).reshape(3, 3))
    with pytest.raises(TypeError, match="trace: dtype=int64"):
        ax.linalg.trace(m, dtype=ax.int64)
    with ax.tpu_64bit("emulate"):
        assert ax.linalg.trace(m, dtype=ax.int64).dtype == ax.int64
    assert ax.linalg.trace(m).dtype == ax.int32 and int(ax.linalg.trace(m)) == 12


@pytest.mark.parametrize("executor", ["numpy", "jax"])
def test_mixed_kinds_keep_numpys_table_on_cpu(executor):
    with ax.use_executor(executor):
        i = ax.asarray(np.array([1, 2], dtype=np.int32))
        f = ax.asarray(np.array([0.5, 0.25], dtype=np.float32))
        assert (i + f).dtype == ax.float64
        assert ax.jit(lambda a, b: a + b)(i, f).dtype == ax.float64
