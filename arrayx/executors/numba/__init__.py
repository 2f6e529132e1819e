"""The Numba executor: NumPy's buffers, with Numba kernels for large elementwise ops and reductions.

- ``executor``: :class:`NumbaExecutor` (a NumPy executor whose table sends large, native-dtype
  ufuncs, ``where``, ``clip`` and reductions to generated kernels) and its eager builders; its
  table starts as the NumPy executor's, the same entries (``lax``, ``nn`` and ``random``'s
  included: ``executors/numpy/lax.py`` ... are Numba's too);
- ``kernels``: the kernel expressions as data, their generated source and the on-disk cache
  (``cache``: private, verified files); ``math``/``math_defs``: inline transcendentals
  (``arrayx.executors.libm``, the C library's log for host buffers, is shared with the NumPy executor); ``layer``: importing Numba with its
  threading layer set; ``team``: the threads that run kernel chunks; ``vectors``: the vector width;
- ``random_kernels``: ``arrayx.random``'s eager draws (NumPy and Numba executors) as one kernel each;
- ``fusion/``: jit's fused kernels (``lowering``: one ``@njit`` kernel per region of the graph,
  ``run``: calling them, ``contract``: fused multiply-add recognition, ``fold``/``pointers``:
  kernel pieces).

Import cycles (documented): ``kernels`` <-> ``cache`` (the cache verifies files that the kernel
module generates, and the kernel module opens them through the cache; both imports are inside
functions, so either module loads alone).
"""
from __future__ import annotations

from arrayx.executors.numba.executor import DEFAULT_THRESHOLDS, NATIVE, NumbaExecutor  # noqa: F401

__all__ = ["NumbaExecutor", "DEFAULT_THRESHOLDS", "NATIVE"]
