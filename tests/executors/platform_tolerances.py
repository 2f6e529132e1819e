"""What a test may expect of a result on the device that computed it: the dtype host data takes
there, and the tolerance of the dtype produced on that kind of hardware.

Devices are asked through the standard's inspection API (``__array_namespace_info__().dtypes`` and
``default_dtypes(device=)``), never by platform name: a device that lists float64 holds 64-bit types
natively and computes as NumPy does (CI's CPUs); one that does not (a TPU) gets its 32-bit defaults,
and 64-bit host data becomes them under ``ARRAYX_TPU_64BIT=downcast`` (the default).  Where a kind of
hardware computes a function differently from NumPy, the tolerance comes from its entry in
``conformance/deviations.py`` (``PLATFORM_DEVIATIONS``: a TPU's float32 transcendentals and its
products at JAX's default matmul precision); elsewhere tests keep their own bounds.
"""
from __future__ import annotations

import contextlib

import numpy as np

import arrayx as ax
from arrayx.core import executor as base
from conformance import deviations
from tests.conftest import assert_same

_INFO = ax.__array_namespace_info__()

#: relative accuracy of a result where a platform deviation covers one of the functions computing it
#: (float32/complex64): a TPU's transcendentals (largest seen 1.8e-4, conformance/results/tpu_probe.json)
TRANSCENDENTAL_RTOL = 2e-4
#: normwise relative accuracy of a float32 product of a few tens of terms per matmul precision, where
#: the platform's products deviate (one bfloat16 pass at "default": 6.4e-3 seen; "high", three passes,
#: about 2**-16 a term; "highest": float32's own), and where they do not (every precision is float32's)
PRODUCT_RTOL = {"default": 1e-2, "high": 1e-4, "highest": 1e-5}
FLOAT32_PRODUCT_RTOL = 1e-5
#: float32 results of a short computation where nothing deviates: a few ulp
FLOAT32_RTOL = 1e-5
#: functions that are products (their accuracy follows the matmul precision)
PRODUCTS = frozenset(deviations._PRODUCTS)


def device_of(x):
    """The device of arrayx array ``x`` (None for anything else: host data, the reference)."""
    return getattr(x, "device", None) if isinstance(x, ax.Array) else None


def native64(device) -> bool:
    """Whether ``device`` holds 64-bit types natively (its ``dtypes()`` list float64)."""
    return "float64" in _INFO.dtypes(device=device)


def defaults(device) -> dict:
    """``default_dtypes(device=)``: the dtypes Python scalars, creation and index results take there."""
    return _INFO.default_dtypes(device=device)


def arriving(dtype, device) -> np.dtype:
    """The dtype host data of ``dtype`` takes on ``device`` without a ``dtype=`` (the default setting):
    itself where 64-bit types are native, else a 64-bit dtype becomes the device's default of its kind."""
    dt = np.dtype(dtype)
    if native64(device):
        return dt
    d = defaults(device)
    narrow = {np.dtype("float64"): d["real floating"], np.dtype("complex128"): d["complex floating"],
              np.dtype("int64"): d["integral"], np.dtype("uint64"): np.dtype(f"uint{d['integral'].itemsize * 8}")}
    return np.dtype(narrow.get(dt, dt))


def native64_device(executor: str = "jax"):
    """A device of ``executor`` with native 64-bit types (the jax executor's CPU device on a TPU
    machine; its default device elsewhere), or None."""
    ex = base.get(executor)
    default = ex.default_device()
    return default if native64(default) else next((d for d in ex.devices() if native64(d)), None)


@contextlib.contextmanager
def dtypes_of_a_tpu(monkeypatch):
    """The jax executor's devices count as TPUs for the per-device dtype table only (``platform_of``;
    its eager implementations stay as they are); yields its default device with the jax executor in
    use; everything put back after."""
    from arrayx.api import _device_dtypes

    ex = base.get("jax")
    monkeypatch.setattr(type(ex), "platform_of", lambda self, device: "tpu")
    _device_dtypes.clear_caches()
    _device_dtypes.reset_warning()
    try:
        with ax.use_executor("jax"):
            yield ex.default_device()
    finally:
        monkeypatch.undo()
        _device_dtypes.clear_caches()
        _device_dtypes.reset_warning()


@contextlib.contextmanager
def taken_for_tpu(monkeypatch, setting: str):
    """The jax executor with its devices taken for TPUs (their default dtypes and tpu_limits' checks)
    and its eager implementations rebuilt, under ``tpu_64bit(setting)``; everything put back after."""
    from arrayx.api import _device_dtypes
    from arrayx.executors.jax import tpu_limits

    ex = base.get("jax")
    assert ex.available()  # loaded first: loading sets _has_tpu from the real devices
    _device_dtypes.clear_caches()
    _device_dtypes.reset_warning()
    monkeypatch.setattr(ex, "_has_tpu", True)
    monkeypatch.setattr(tpu_limits, "_on_tpu", lambda buf: True)
    monkeypatch.setattr(type(ex), "platform_of", lambda self, device: "tpu")
    saved = dict(ex.impls)
    ex.impls.clear()
    try:
        with ax.tpu_64bit(setting):
            yield ex
    finally:
        ex.impls.clear()
        ex.impls.update(saved)
        monkeypatch.undo()
        _device_dtypes.clear_caches()  # the per-device defaults were read with the devices taken for TPUs
        _device_dtypes.reset_warning()


def tpu_device():
    """The jax executor's TPU device, or None (no jax, or no TPU here)."""
    ex = base.get("jax")
    if not ex.available():
        return None
    return next((d for d in ex.devices() if ex.platform_of(d) == "tpu"), None)


def platform(device) -> str:
    """The kind of hardware ``device`` is (its executor's ``platform_of``), "cpu" for None (NumPy)."""
    return "cpu" if device is None else base.get(device.executor).platform_of(device)


def _deviation(device, dtype, uses) -> set:
    where = platform(device)
    found = {deviations.classify_platform(where, f, (np.dtype(dtype).name,)) for f in uses}
    return {d.id for d in found if d is not None}


def tolerance(dtype, device=None, *, uses=(), precision: str = "default", condition: float = 1.0,
              rtol: float = 1e-12, atol: float = 1e-13) -> dict:
    """``rtol``/``atol`` for a result of ``dtype`` computed on ``device`` by the functions ``uses``
    (standard names: "exp", "matmul", ...), at arrayx's matmul ``precision``.

    64-bit results: the test's own ``rtol``/``atol`` (where 64-bit types are native; emulated ones, a
    TPU's under ``tpu_64bit('emulate')``, agree to about 1e-13).  32-bit results: a few ulp
    (``FLOAT32_RTOL``), or the platform's accuracy for the functions it computes differently
    (``TRANSCENDENTAL_RTOL``, ``PRODUCT_RTOL[precision]``), times ``condition`` (how much the
    computation amplifies the relative error of those functions, e.g. a cancellation after a log).
    ``atol`` of 32-bit results equals ``rtol`` (values near 1; a larger scale passes ``condition``)."""
    dt = np.dtype(dtype)
    if dt.kind not in "fc":
        return {"rtol": 0, "atol": 0}
    if dt in (np.dtype("float64"), np.dtype("complex128")):
        if device is not None and not native64(device):
            rtol, atol = max(rtol, 1e-13), max(atol, 1e-13)
        return {"rtol": rtol, "atol": atol}
    found = _deviation(device, dt, uses)
    r = FLOAT32_RTOL
    if "tpu-float32-transcendentals" in found:
        r = max(r, TRANSCENDENTAL_RTOL)
    if any(f in PRODUCTS for f in uses):
        r = max(r, PRODUCT_RTOL[precision] if "tpu-matmul-default-precision" in found else FLOAT32_PRODUCT_RTOL)
    r = max(r, rtol) * condition
    return {"rtol": r, "atol": r}


def assert_close(actual, expected, *, uses=(), precision: str = "default", condition: float = 1.0,
                 rtol: float = 1e-12, atol: float = 1e-13, device=None) -> None:
    """``actual`` (an arrayx array, or host data computed on ``device``) within :func:`tolerance` of
    ``expected`` for the dtype ``actual`` has and the device that computed it."""
    device = device or device_of(actual)
    got = np.asarray(actual)
    kw = tolerance(got.dtype, device, uses=uses, precision=precision, condition=condition, rtol=rtol, atol=atol)
    np.testing.assert_allclose(got, np.asarray(expected), **kw)


def assert_same_here(actual, expected) -> None:
    """``assert_same`` (dtype, shape, values under the one comparator) of ``actual``, an arrayx array,
    with ``expected`` (host data of NumPy's dtype) in the dtype it takes on ``actual``'s device: the
    same as ``assert_same`` where 64-bit types are native; float32 for float64 on a TPU."""
    want = np.asarray(expected)
    assert_same(actual, want.astype(arriving(want.dtype, actual.device), copy=False))
