"""NumPy data into a JAX buffer with one pass over it on the host (``JaxExecutor.asarray``).

A NumPy array handed to arrayx stays its owner's: arrayx must not share its memory, because
XLA:CPU takes a host buffer that is 64-byte aligned as the device buffer itself (no copy) and the
owner may write into the array later.  So arrayx places a private copy.  Before this module, a
float64 array arriving on a device whose defaults are 32-bit (a TPU: ``arrayx/api/_device_dtypes.py``)
took three passes over the data on the host: NumPy's cast to float32, arrayx's private copy of
that, and XLA:CPU's own copy of the private copy (NumPy's large arrays start 16 bytes past a page
boundary, so XLA copied them again); JAX's ``jnp.asarray`` takes two (its cast, then XLA's copy).

:func:`private_copy` casts and copies in one pass, into a buffer that starts on a 64-byte boundary:
XLA:CPU takes it as it is, an accelerator's transfer reads it directly.  Only arrayx holds it, so
the aliasing is safe.  Measured on a CPU with a TPU's defaults (benchmarks/bench_tpu_defaults.py
``--as-tpu``; 2 cores shared with other jobs): ``asarray`` of a 4096x784 float64 batch took
2.5 ms against JAX's 2.0 ms before, and about 1.1 ms after.
"""
from __future__ import annotations

import numpy as np

__all__ = ["ALIGNMENT", "aligned_empty", "fits", "private_copy"]

#: the alignment XLA:CPU needs to take a host buffer without copying it (and DMA engines like)
ALIGNMENT = 64


def fits(obj: np.ndarray, dtype=None) -> bool:
    """Whether :func:`private_copy` takes ``obj`` (to ``dtype``, None: its own): native-endian data of
    the standard's numeric kinds (bool, integers, floats, complex) on both sides.  Others (bfloat16,
    byte-swapped data) go through ``jax.numpy``."""
    if obj.dtype.kind not in "biufc" or not obj.dtype.isnative:
        return False
    if dtype is None:
        return True
    to = np.dtype(dtype)
    return to.kind in "biufc" and to.isnative


def private_copy(obj: np.ndarray, dtype=None) -> np.ndarray:
    """A C-ordered copy of ``obj`` (cast to ``dtype`` in the same pass, with NumPy's casting, as
    ``np.asarray(obj, dtype)``) in a fresh buffer that starts on an :data:`ALIGNMENT` boundary."""
    out = aligned_empty(obj.shape, obj.dtype if dtype is None else np.dtype(dtype))
    np.copyto(out, obj, casting="unsafe")
    return out


def aligned_empty(shape: tuple, dtype: np.dtype) -> np.ndarray:
    """An uninitialised C-ordered array whose memory starts on an :data:`ALIGNMENT` boundary: what
    ``jax.device_put`` takes on XLA:CPU as the buffer itself, without a copy."""
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    start = -raw.ctypes.data % ALIGNMENT
    return raw[start:start + nbytes].view(dtype).reshape(shape)
