"""The Dask executor: lazy ``dask.array`` buffers, one graph per computation, a cluster if connected.

- ``executor``: :class:`DaskExecutor` and its table; ``base``: the scheduler / chunking / shape
  settings (``arrayx.executors.dask.connect(address)``, ``set_chunks``, ``resolve_shapes`` ...) and
  the read every part goes through; ``indexing``: gathers, masks, scatters, slices, reshapes;
  ``onechunk``: an operation on one-chunk operands as one task of the NumPy executor's code;
- ``fusion``: jit's regions as one blockwise task per chunk; ``keep``: the chunks kept after a
  read; ``linalg``: contractions, linalg and fft over chunks; ``random``: draws per chunk and the
  table's ``libm_log``;
- ``lax`` (convolution, window reductions), ``nn`` (erf), ``sharding`` (the sharding constraint):
  the table's entries for those primitives, mostly the NumPy executor's per block.

No import cycles: ``executor`` and ``indexing`` both import ``base``; ``executor`` takes in
``random``'s ``TABLE``, and ``random`` reads the chunking from ``base``.
"""
from __future__ import annotations

from arrayx.executors.dask.executor import *  # noqa: F401,F403
from arrayx.executors.dask.executor import DaskExecutor, __all__  # noqa: F401
