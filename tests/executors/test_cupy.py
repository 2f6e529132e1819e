"""The CuPy executor.  Without a usable GPU (or without CuPy) the executor reports itself
unavailable with a reason and the GPU tests skip with that reason; on a machine with a GPU they run."""
from __future__ import annotations

import importlib.util
import subprocess
import sys

import numpy as np
import pytest

import arrayx as xp
from arrayx.core import executor as base
from tests.conftest import assert_same

EX = base.get("cupy")
needs_gpu = pytest.mark.skipif(not EX.available(), reason=f"executor 'cupy' unavailable: {EX.unavailable_reason}")


def test_unavailable_executor_reports_a_clean_reason():
    if EX.available():
        pytest.skip("a GPU is usable here; the unavailable path is not reachable")
    reason = EX.unavailable_reason
    assert reason and "\n" not in reason
    if importlib.util.find_spec("cupy") is None:
        assert "cupy is not installed" in reason
    else:
        assert "no usable CUDA GPU" in reason
    assert "cupy" not in xp.executors() and "cupy" in base.registered()
    assert all(d.executor != "cupy" for d in xp.__array_namespace_info__().devices())
    with pytest.raises(RuntimeError, match="not available here.*cupy"):
        xp.zeros(3, device="cupy")
    with pytest.raises(RuntimeError, match="pip install cupy"):
        with xp.use_executor("cupy"):
            pass


def test_missing_cupy_is_reported_as_not_installed():
    code = (
        "import sys; sys.modules['cupy'] = None\n"
        "import arrayx\n"
        "ex = arrayx.executors.get('cupy')\n"
        "assert not ex.available()\n"
        "print(ex.unavailable_reason)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "cupy is not installed" in out.stdout, out.stderr


def test_import_does_not_import_cupy():
    code = "import sys, arrayx; assert 'cupy' not in sys.modules, 'cupy imported eagerly'; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr


# -- with a GPU ---------------------------------------------------------------------------------

@needs_gpu
def test_buffers_devices_and_updates():
    import cupy

    with xp.use_executor("cupy"):
        x = xp.asarray([1.0, 2.0, 3.0])
        assert isinstance(x._buf, cupy.ndarray) and x.dtype == xp.float64
        devs = EX.devices()
        assert len(devs) == cupy.cuda.runtime.getDeviceCount() and devs[0].label == "cuda:0"
        assert x.device in devs and set(devs) <= set(xp.__array_namespace_info__().devices())
        x[0] = 10.0
        x += 1
        assert_same(x, np.array([11.0, 3.0, 4.0]))
        idx = xp.asarray([0, 0, 2])
        assert_same(xp.zeros(3).at[idx].add(1.0), np.array([2.0, 0.0, 1.0]))
        assert_same(xp.ones(3).at[idx].multiply(3.0), np.array([9.0, 1.0, 3.0]))
        for d in devs:
            y = x.to_device(d)
            assert y.device == d
            assert_same(y, np.array([11.0, 3.0, 4.0]))


@needs_gpu
def test_dlpack_exchange_with_numpy_and_jax():
    x = xp.asarray(np.arange(4.0), device="cupy")
    assert x.__dlpack_device__()[0] == 2  # kDLCUDA
    host = xp.asarray(x, device="numpy")
    assert_same(host, np.arange(4.0))
    back = xp.asarray(host, device="cupy")
    assert back.executor == "cupy"
    assert_same(back, np.arange(4.0))
    assert xp.from_dlpack(np.arange(3), device="cupy").executor == "cupy"
    if base.get("jax").available():
        j = xp.asarray(x, device="jax")
        assert j.executor == "jax"
        assert_same(j, np.arange(4.0))
        assert_same(xp.asarray(j, device="cupy"), np.arange(4.0))


def test_scatter_accumulators_with_numpy_standing_in_for_cupy(monkeypatch):
    # runs without a GPU: the CuPy executor's scatter (executors/common/indexing.scatter_on_copy with
    # CuPy's kernels for add/min/max and the host's ufunc.at for multiply), cupy and cupyx stood in
    # by NumPy, against the NumPy executor's scatter
    import types

    from arrayx.executors.common.indexing import NUMPY_LIKE
    from arrayx.executors.cupy import executor as cupy_executor

    monkeypatch.setattr(cupy_executor, "cupy", types.SimpleNamespace(
        ndarray=np.ndarray, asnumpy=np.array, asarray=np.asarray))
    cupyx = types.ModuleType("cupyx")
    cupyx.scatter_add, cupyx.scatter_min, cupyx.scatter_max = np.add.at, np.minimum.at, np.maximum.at
    monkeypatch.setitem(sys.modules, "cupyx", cupyx)
    x = np.array([[1.0, -2.0], [3.0, 4.0], [5.0, 6.0]])
    kept = x.copy()
    cases = [(None, np.array([0, 0, 2]), np.array([[10.0, -1.0], [0.5, 7.0], [2.0, 3.0]])),
             ("drop", np.array([0, 5, 2, -9]), np.array([[10.0, -1.0], [0.5, 7.0], [2.0, 3.0], [8.0, 8.0]]))]
    for mode, idx, u in cases:
        for kind in ("set", "add", "multiply", "min", "max"):
            got = cupy_executor._scatter(x, u, idx, axes=(0,), kind=kind, mode=mode)
            want = NUMPY_LIKE["scatter"](x, u, idx, axes=(0,), kind=kind, mode=mode)
            np.testing.assert_array_equal(got, want, err_msg=f"{kind}, mode {mode}")
            assert not np.array_equal(got, x), kind
    np.testing.assert_array_equal(x, kept)  # on a copy
    assert cupy_executor.CupyExecutor.overrides["scatter"] is cupy_executor._scatter
