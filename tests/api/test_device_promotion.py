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
