"""What XLA:TPU's 64-bit emulation fails on is refused before XLA compiles, naming the function, the
dtype and the device: complex128 data does not reach a TPU even under ``tpu_64bit('emulate')``
(its emulation fails on transposes, slices, abs, division, decompositions, FFTs), and, for a
complex128 buffer that is there anyway, the linear algebra XLA:TPU aborts on, fails inside or halts
the core on is refused eagerly and under jit; float64 LU and FFTs too.  complex64 (the TPU's own
complex type) and the float64 decompositions still run.  The facts: the chip's probe (session 26) and
``conformance/results/tpu_aot_linalg.json`` (XLA:TPU's compiler run ahead of time on a CPU).
The CPU device stands in for a TPU here (tests/executors/platform_tolerances.py's ``taken_for_tpu``)."""
from __future__ import annotations

import contextlib
import json
import pathlib

import numpy as np
import pytest

import arrayx as ax
from tests.executors.conftest import only_on
from tests.executors.platform_tolerances import taken_for_tpu

pytestmark = only_on("jax")

AOT = pathlib.Path(__file__).parents[2] / "conformance" / "results" / "tpu_aot_linalg.json"
_RNG = np.random.default_rng(0)
_A = _RNG.standard_normal((3, 3)) + 1j * _RNG.standard_normal((3, 3))
_SPD = _A @ _A.conj().T + 3 * np.eye(3)

#: standard function -> (the call, its operand, the primitive named in the error)
CALLS = {
    "cholesky": (lambda x: ax.linalg.cholesky(x), _SPD, "cholesky"),
    "det": (lambda x: ax.linalg.det(x), _A, "det"),
    "slogdet": (lambda x: ax.linalg.slogdet(x)[1], _A, "slogdet"),
    "inv": (lambda x: ax.linalg.inv(x), _A, "inv"),
    "matrix_power": (lambda x: ax.linalg.matrix_power(x, -2), _A, "inv"),
    "solve": (lambda x: ax.linalg.solve(x, x[:, :1]), _A, "solve"),
    "eigh": (lambda x: ax.linalg.eigh(x).eigenvalues, _SPD, "eigh"),
    "eigvalsh": (lambda x: ax.linalg.eigvalsh(x), _SPD, "eigvalsh"),
    "qr": (lambda x: ax.linalg.qr(x).R, _A, "qr"),
    "svdvals": (lambda x: ax.linalg.svdvals(x), _A, "svdvals"),
    "matrix_rank": (lambda x: ax.linalg.matrix_rank(x), _A, "svdvals"),
    "matrix_norm nuc": (lambda x: ax.linalg.matrix_norm(x, ord="nuc"), _A, "svdvals"),
    "pinv": (lambda x: ax.linalg.pinv(x), _A, "(svd|astype)"),  # (its own complex128 step is refused first)
}


@contextlib.contextmanager
def _on_the_cpu():
    """The CPU the jax executor's and JAX's default device (what stands in for a TPU here; on a TPU
    machine the chip itself would otherwise take these arrays, as 32-bit data under the default)."""
    import jax

    from arrayx.api import _device_dtypes
    from arrayx.core import executor as base

    ex = base.get("jax")
    cpu = next(d for d in ex.devices() if d.native.platform == "cpu")
    with pytest.MonkeyPatch.context() as mp, jax.default_device(cpu.native):
        mp.setattr(ex, "_default", cpu)
        _device_dtypes.clear_caches()
        try:
            yield
        finally:
            mp.undo()
            _device_dtypes.clear_caches()


def _on_numpy(call, operand):
    with ax.use_executor("numpy"):
        return call(ax.asarray(operand))


@pytest.fixture
def as_tpu():
    with _on_the_cpu(), pytest.MonkeyPatch.context() as mp, taken_for_tpu(mp, "emulate") as ex:
        yield ex


@pytest.fixture(scope="module")
def complex128_there():
    """operand -> a complex128 array of it made before the devices are taken for TPUs (as one arriving by
    another road would be), then those devices taken for TPUs."""
    with _on_the_cpu():
        with ax.use_executor("jax"):
            made = {id(a): ax.asarray(a.astype(np.complex128)) for a in (_A, _SPD)}
        with pytest.MonkeyPatch.context() as mp, taken_for_tpu(mp, "emulate"):
            yield lambda operand: made[id(operand)]


@pytest.mark.parametrize("make", [lambda: ax.asarray(_A), lambda: ax.zeros(3, dtype=ax.complex128),
                                  lambda: ax.astype(ax.asarray(_A.real), ax.complex128)])
def test_complex128_does_not_reach_a_tpu_even_when_emulating(as_tpu, make):
    with pytest.raises(NotImplementedError, match=r"complex128 on Device\('jax:cpu:0'\) is not run, even with "
                                                  r"ARRAYX_TPU_64BIT=emulate: .*transposes.*tpu_emulate64.json\). "
                                                  r"Use complex64 .*device='jax:cpu:0'"):
        make()
    assert ax.asarray(_A.real).dtype == ax.float64  # (float64 is emulated)


@pytest.mark.parametrize("name", list(CALLS))
def test_complex128_refused_before_xla_and_complex64_runs(complex128_there, name):
    call, operand, prim = CALLS[name]
    x = complex128_there(operand)
    assert x.dtype == ax.complex128
    message = rf"{prim}: complex128 on (a TPU( \(in a compiled function\))?|Device\('jax:cpu:0'\)) is not run.*jax:cpu:0"
    with pytest.raises(NotImplementedError, match=message):
        call(x)
    with pytest.raises(NotImplementedError, match=message):
        ax.jit(call)(x)
    want = _on_numpy(call, operand.astype(np.complex64))
    got = call(ax.asarray(operand.astype(np.complex64)))
    assert got.dtype == (ax.int32 if name == "matrix_rank" else want.dtype)  # (a TPU's default integer: int32)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("name", ["det", "slogdet", "inv", "solve"])
def test_float64_lu_refused_before_xla(as_tpu, name):
    call, operand, prim = CALLS[name]
    with pytest.raises(NotImplementedError, match=rf"{prim}: float64 on a TPU.* is not run: XLA:TPU has no float64 LU"):
        call(ax.asarray(operand.real.copy()))


@pytest.mark.parametrize("fn", ["rfft", "fft", "ihfft"])
def test_64_bit_ffts_refused_before_xla(as_tpu, fn):
    x = ax.asarray(np.arange(8.0))
    with pytest.raises(NotImplementedError, match=rf"(rfft|astype|ihfft): (float64|complex128) on (a TPU|Device).* is not run"):
        getattr(ax.fft, fn)(x)
    np.testing.assert_allclose(np.asarray(getattr(ax.fft, fn)(ax.asarray(np.arange(8.0, dtype=np.float32)))),
                               getattr(np.fft, fn)(np.arange(8.0)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["cholesky", "eigvalsh", "qr", "svdvals"])
def test_float64_still_runs(as_tpu, name):
    call, operand, _ = CALLS[name]
    real = operand.real.copy() if name != "cholesky" else (_SPD.real + _SPD.real.T) / 2
    got = call(ax.asarray(real))
    want = _on_numpy(call, real)
    assert got.dtype == ax.float64
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-10)


def test_every_failure_the_ahead_of_time_compile_saw_is_refused():
    from arrayx.executors.jax import tpu_limits

    data = json.loads(AOT.read_text())
    assert data["environment"]["jax"] == tpu_limits.MEASURED_ON["jax"]
    assert data["environment"]["libtpu"] == tpu_limits.MEASURED_ON["libtpu"]
    failed = [(r["function"].removeprefix("linalg."), r["dtype"]) for r in data["rows"] if r["status"] != "compiles"]
    assert ("cholesky", "complex128") in failed
    prim = {"pinv": "svd"}
    assert ("det", "float64") in failed
    missing = [(f, d) for f, d in failed if tpu_limits.reason(prim.get(f, f), [np.dtype(d)]) is None]
    assert not missing, missing


def test_int64_products_refused_before_xla_and_int32_runs(as_tpu):
    a = np.arange(6).reshape(2, 3)
    with pytest.raises(NotImplementedError, match=r"matmul: int64 on a TPU.* is not run: .*dot_general s64"):
        ax.asarray(a) @ ax.asarray(a.T)
    with pytest.raises(NotImplementedError, match=r"tensordot: int64 on a TPU.* is not run"):
        ax.tensordot(ax.asarray(a), ax.asarray(a.T), axes=1)
    got = ax.asarray(a.astype(np.int32)) @ ax.asarray(a.T.astype(np.int32))
    assert got.dtype == ax.int32
    np.testing.assert_array_equal(np.asarray(got), a @ a.T)
