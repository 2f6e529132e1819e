"""NumPy data into arrayx with one pass on the host (issue #41: the default-dtype MLP on a TPU).

A float64 NumPy batch arriving on a device with 32-bit defaults is cast once, in the jax executor's
private host copy (``arrayx/executors/jax/host_transfer.py``), not cast and then copied again; the
copy stays private (writing the source afterwards changes nothing) and a jitted step over new
batches of one shape is traced once.  There is no TPU here: the ``jax_default_device`` fixture
(tests/executors/conftest.py) runs each test on the CPU device as it is and taken for a TPU.
Values are compared with NumPy's own cast and with the NumPy executor.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import arrayx as ax
from arrayx.api import _device_dtypes
from arrayx.core import executor as base
from arrayx.executors.jax import host_transfer

from tests.conftest import assert_same, on_numpy

_jax = base.get("jax")
needs_jax = pytest.mark.skipif(not _jax.available(), reason=f"executor 'jax' unavailable: {_jax.unavailable_reason}")

_CASTS = [(np.float64, np.float32), (np.float64, np.float64), (np.int64, np.int32), (np.float32, np.float64),
          (np.complex128, np.complex64), (np.bool_, np.float32), (np.uint8, np.int16), (np.int32, None)]


def _source(dtype, shape=(7, 5), seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(0, 100, shape).astype(dtype)
    if np.dtype(dtype).kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return (rng.standard_normal(shape) * 1e3).astype(dtype)


# -- the host copy itself ---------------------------------------------------------------------------

@pytest.mark.parametrize("src,to", _CASTS, ids=lambda d: getattr(d, "__name__", str(d)))
def test_private_copy_is_numpys_cast_aligned_and_private(src, to):
    x = _source(src)
    out = host_transfer.private_copy(x, to)
    want = np.asarray(x, dtype=to)
    assert out.dtype == want.dtype and out.shape == want.shape
    assert np.array_equal(out.view(np.uint8), want.view(np.uint8))  # bit for bit: NumPy's rounding
    assert out.ctypes.data % host_transfer.ALIGNMENT == 0 and out.flags.c_contiguous
    assert not np.shares_memory(out, x)


@pytest.mark.parametrize("shape", [(), (0,), (0, 3), (1,), (3, 1, 4)])
def test_private_copy_edge_shapes(shape):
    x = _source(np.float64, shape)
    out = host_transfer.private_copy(x, np.float32)
    assert out.shape == shape and out.dtype == np.float32
    assert np.array_equal(out, x.astype(np.float32))


def test_private_copy_of_strided_and_transposed_views():
    base_ = _source(np.float64, (8, 6))
    for view in (base_.T, base_[::2, 1::3], base_[:, ::-1]):
        out = host_transfer.private_copy(view, np.float32)
        assert out.flags.c_contiguous and np.array_equal(out, view.astype(np.float32))


def test_fits_leaves_other_dtypes_to_jax_numpy():
    x = np.zeros(3)
    assert host_transfer.fits(x) and host_transfer.fits(x, np.float32)
    assert not host_transfer.fits(x.astype(">f8"))  # byte-swapped data
    assert not host_transfer.fits(x, ">f4")
    assert not host_transfer.fits(np.array(["a"]))


# -- asarray on the jax executor, as it is and taken for a TPU ----------------------------------------

@needs_jax
def test_float64_batch_cast_once_on_the_host(jax_default_device, monkeypatch):
    """The NumPy float64 batch reaches the executor's private copy as it is (one cast, in that copy),
    and gives the device's default float with NumPy's values."""
    seen = []
    real = host_transfer.private_copy

    def counting(obj, dtype=None):
        seen.append((obj, dtype))
        return real(obj, dtype)

    monkeypatch.setattr(host_transfer, "private_copy", counting)
    x = _source(np.float64, (64, 784))
    want = _device_dtypes.for_device(_jax, jax_default_device).real
    with ax.use_executor("jax"), warnings.catch_warnings():
        warnings.simplefilter("ignore", _device_dtypes.DowncastWarning)
        a = ax.asarray(x)
    assert a.dtype == want
    assert len(seen) == 1 and seen[0][0] is x  # not cast to a new array before the copy
    assert np.array_equal(np.asarray(a), x.astype(want))


@needs_jax
@pytest.mark.parametrize("src", [np.float64, np.float32, np.int64, np.complex128])
def test_asarray_is_private_and_matches_numpy(jax_default_device, src):
    x = _source(src, (33, 17))
    dd = _device_dtypes.for_device(_jax, jax_default_device)
    want = dd.narrow.get(np.dtype(src), np.dtype(src))
    with ax.use_executor("jax"), warnings.catch_warnings():
        warnings.simplefilter("ignore", _device_dtypes.DowncastWarning)
        a = ax.asarray(x)
        before = x.astype(want)
        x[...] = 0  # the owner writes its array afterwards: arrayx's copy is its own
        assert a.dtype == want
        assert np.array_equal(np.asarray(a), before)
        assert_same(a + a, ax.asarray(before + before))


@pytest.mark.parametrize("src,to", [(np.float64, "float32"), (np.int64, "int32"), (np.float32, "float64")])
def test_asarray_with_dtype_matches_the_numpy_executor(executor, src, to):
    """``asarray(numpy_data, dtype=)`` on every executor: NumPy's cast, a private copy."""
    x = _source(src, (9, 4))
    want = np.asarray(x, dtype=to)
    a = ax.asarray(x, dtype=getattr(ax, to))
    x[...] = 0
    assert_same(a, want)
    assert_same(a, on_numpy(lambda v: v, ax.asarray(want)))


@needs_jax
def test_jitted_step_over_new_batches_traces_once(jax_default_device):
    """A step from NumPy float64 batches (asarray, then the jitted step) is traced once for a shape,
    and computes what the NumPy executor computes."""
    rng = np.random.default_rng(3)
    w = rng.standard_normal((12, 4)) / 4
    batches = [rng.standard_normal((16, 12)) for _ in range(4)]

    def step(w, x):
        return w - 0.1 * ax.grad(lambda v: ax.mean(ax.tanh(x @ v) ** 2))(w)

    with ax.use_executor("jax"), warnings.catch_warnings():
        warnings.simplefilter("ignore", _device_dtypes.DowncastWarning)
        jitted = ax.jit(step)
        wa = ax.asarray(w)
        outs = [jitted(wa, ax.asarray(b)) for b in batches]
        dtype = wa.dtype
    assert jitted.trace_count == 1
    with ax.use_executor("numpy"):
        for out, b in zip(outs, batches):
            ref = step(ax.asarray(w.astype(dtype)), ax.asarray(b.astype(dtype)))
            assert out.dtype == ref.dtype
            np.testing.assert_allclose(np.asarray(out), np.asarray(ref), rtol=1e-5 if dtype == np.float32 else 1e-12)


@needs_jax
def test_process_x64_setting_unchanged(jax_default_device):
    import jax

    before = bool(jax.config.jax_enable_x64)
    with ax.use_executor("jax"), warnings.catch_warnings():
        warnings.simplefilter("ignore", _device_dtypes.DowncastWarning)
        ax.asarray(_source(np.float64))
        ax.asarray(_source(np.float64), dtype=ax.float32)
    assert bool(jax.config.jax_enable_x64) == before
    assert jax.numpy.asarray(np.zeros(2)).dtype == (np.float64 if before else np.float32)
