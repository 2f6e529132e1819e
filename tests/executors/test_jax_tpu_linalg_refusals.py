"""The complex128 linear algebra XLA:TPU aborts on, fails inside or halts the core on is refused
before XLA compiles, eagerly and under jit, naming the function, the dtype and the device; complex64
(the TPU's own complex type) and float64 still run.  The facts: the chip's probe (session 26) and
``conformance/results/tpu_aot_linalg.json`` (XLA:TPU's compiler run ahead of time on a CPU).
The CPU device stands in for a TPU here (tests/executors/platform_tolerances.py's ``taken_for_tpu``)."""
from __future__ import annotations

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
    "pinv": (lambda x: ax.linalg.pinv(x), _A, "svd"),
}


def _on_numpy(call, operand):
    with ax.use_executor("numpy"):
        return call(ax.asarray(operand))


@pytest.fixture(scope="module")
def as_tpu():
    with pytest.MonkeyPatch.context() as mp, taken_for_tpu(mp, "emulate") as ex:
        yield ex


@pytest.mark.parametrize("name", list(CALLS))
def test_complex128_refused_before_xla_and_complex64_runs(as_tpu, name):
    call, operand, prim = CALLS[name]
    x = ax.asarray(operand.astype(np.complex128))
    assert x.dtype == ax.complex128
    message = rf"{prim}: complex128 on a TPU( \(in a compiled function\))? is not run: .*tpu_limits.py.*jax:cpu:0"
    with pytest.raises(NotImplementedError, match=message):
        call(x)
    with pytest.raises(NotImplementedError, match=message):
        ax.jit(call)(x)
    want = _on_numpy(call, operand.astype(np.complex64))
    got = call(ax.asarray(operand.astype(np.complex64)))
    assert got.dtype == (ax.int32 if name == "matrix_rank" else want.dtype)  # (a TPU's default integer: int32)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-4, atol=2e-4)


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
    missing = [(f, d) for f, d in failed if d == "complex128"
               and tpu_limits.reason(prim.get(f, f), [np.dtype(d)]) is None]
    assert not missing, missing
