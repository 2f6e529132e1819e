"""The NumPy executor: eager, the default and the reference every other executor is compared with.

- ``executor``: :class:`NumpyExecutor` and its table (``overrides``: the primitives whose NumPy
  implementation differs from ``getattr(xp, name)``), which takes in the entries of
- ``lax``: ``conv`` (blocked im2col + BLAS) and the max/min window reduction with its derivative,
  written over any NumPy-like module (the CuPy, JAX and Dask entries reuse them);
- ``nn``: ``erf``/``erfc``/``erfinv`` (SciPy's ufuncs, or the C library's without SciPy);
- ``random``: ``libm_log`` (the C library's float64 log, ``executors/libm.py``).

The Numba executor's table starts as this one: an entry it does not replace is NumPy's.
"""
from __future__ import annotations

from arrayx.executors.numpy.executor import NumpyExecutor  # noqa: F401

__all__ = ["NumpyExecutor"]
