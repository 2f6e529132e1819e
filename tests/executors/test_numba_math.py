"""The fused kernels' exp/expm1/tanh (LLVM IR in ``numba.math_defs``): special values exactly as NumPy's,
a sampled ulp bound against a wider reference (the exhaustive float32 sweep is benchmarks/bench_fused_math.py),
and a loop over them vectorises."""
from __future__ import annotations

import numpy as np
import pytest

numba = pytest.importorskip("numba")

from arrayx.executors.numba import math as nm  # noqa: E402

#: max ulp error against the correctly rounded value (bench_fused_math: 2**32 float32 inputs, 4e6 float64)
ULP_BOUND = {("exp", 32): 2, ("expm1", 32): 3, ("tanh", 32): 7, ("exp", 64): 2, ("expm1", 64): 3, ("tanh", 64): 3}
_KERNELS: dict = {}


def _kernel(bits: int):
    """One loop computing all three functions (one compile per width)."""
    if bits not in _KERNELS:
        exp, expm1, tanh = (getattr(nm, f"exp{bits}"), getattr(nm, f"expm1_{bits}"), getattr(nm, f"tanh{bits}"))

        @numba.njit(error_model="numpy")
        def run(x, out):
            for i in range(x.size):
                out[0, i] = exp(x[i])
                out[1, i] = expm1(x[i])
                out[2, i] = tanh(x[i])
        _KERNELS[bits] = run
    return _KERNELS[bits]


def _ours(x: np.ndarray) -> dict:
    out = np.empty((3, x.size), x.dtype)
    _kernel(x.dtype.itemsize * 8)(x, out)
    return dict(zip(("exp", "expm1", "tanh"), out))


_NUMPY = {"exp": np.exp, "expm1": np.expm1, "tanh": np.tanh}

_SPECIAL = {
    np.float32: [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 1e-40, -1e-40, 1e-30, -2e-20,
                 88.72, 88.73, 89.0, 1e30, -87.4, -100.0, -103.9, -104.0, -1e30, 9.0, 9.02, 9.03, -9.5, 20.0, -17.5],
    np.float64: [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, -5e-324, 1e-310, -1e-310, 1e-200, -2e-17,
                 709.78, 709.79, 710.0, 1e300, -708.5, -740.0, -745.1, -745.2, -1e300, 19.1, 20.0, -25.0, -37.5],
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_special_values_are_numpys(dtype):
    x = np.array(_SPECIAL[dtype], dtype)
    got = _ours(x)
    for name, fn in _NUMPY.items():
        with np.errstate(all="ignore"):
            want = fn(x)
        if name == "tanh":  # NumPy's tanh is itself an approximation: only the cases it rounds exactly
            keep = ~np.isfinite(x) | (np.abs(x) >= (9.02 if dtype == np.float32 else 19.1)) | (np.abs(x) < 1e-20)
            got[name], want, xs = got[name][keep], want[keep], x[keep]
        else:
            xs = x
        np.testing.assert_array_equal(np.isnan(got[name]), np.isnan(want), err_msg=name)
        exact = ~np.isfinite(want) | (want == 0) | (np.abs(xs) < 1e-20) | (np.abs(want) == 1)
        np.testing.assert_array_equal(got[name][exact], want[exact], err_msg=f"{name} {xs[exact]}")
        exact &= ~np.isnan(want)  # (a NaN's sign is not specified)
        np.testing.assert_array_equal(np.signbit(got[name][exact]), np.signbit(want[exact]), err_msg=name)
        np.testing.assert_allclose(got[name], want, rtol=4e-7 if dtype == np.float32 else 5e-16, err_msg=name)


def _reference(name: str, x: np.ndarray) -> np.ndarray:
    """The exact value, to well under one ulp of x's dtype (float64 math for float32, longdouble for float64)."""
    wide = np.float64 if x.dtype == np.float32 else np.longdouble
    with np.errstate(all="ignore"):
        return _NUMPY[name](x.astype(wide))


def _sample(dtype, n: int) -> np.ndarray:
    """Random bit patterns (every exponent, subnormals, NaN) plus a dense slice of the busy range."""
    rng = np.random.default_rng(14)
    if dtype == np.float32:
        bits = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    else:
        bits = rng.integers(0, 2**63, n, dtype=np.uint64).view(np.int64).view(np.float64)
        bits = np.copysign(bits, rng.random(n) - 0.5)
    return np.concatenate([bits, rng.uniform(-12, 12, n).astype(dtype)]).astype(dtype)


@pytest.mark.parametrize("bits", [32, 64])
def test_sampled_ulp_error(bits):
    dtype = np.float32 if bits == 32 else np.float64
    x = _sample(dtype, 100_000)
    got = _ours(x)
    for name in _NUMPY:
        want = _reference(name, x)
        finite = np.isfinite(want) & (np.abs(want) < np.finfo(dtype).max)
        spacing = np.spacing(np.abs(want[finite]).astype(dtype)).astype(want.dtype)
        ulp = (np.abs(got[name][finite].astype(want.dtype) - want[finite]) / spacing).astype(np.float64)
        worst = int(np.argmax(ulp))
        assert ulp[worst] <= ULP_BOUND[(name, bits)], (name, bits, float(ulp[worst]), float(x[finite][worst]))
        if name == "tanh":
            assert np.all(np.abs(got[name][~np.isnan(x)]) <= 1)


@pytest.mark.parametrize("bits", [32, 64])
def test_loop_vectorises_without_calls(bits):
    dtype = np.float32 if bits == 32 else np.float64
    run = _kernel(bits)
    run(np.ones(64, dtype), np.empty((3, 64), dtype))
    asm = next(iter(run.inspect_asm().values()))
    body = asm.split("cpython", 1)[0]  # the compiled loop, before Python's wrapper
    packed = "mulps" if bits == 32 else "mulpd"
    assert packed in body, f"no packed {packed}: the loop over exp/expm1/tanh{bits} did not vectorise"
    libm = [name for name in ("exp", "expm1", "tanh", "expf", "tanhf") if f"call\t{name}" in body or f"@{name}" in body]
    assert not libm, libm
