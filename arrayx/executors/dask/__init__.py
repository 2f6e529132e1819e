"""The Dask executor: lazy ``dask.array`` buffers, one graph per computation, a cluster if connected.

- ``executor``: :class:`DaskExecutor`, its table and the scheduler / chunking / shape settings
  (``arrayx.executors.dask.connect(address)``, ``set_chunks``, ``resolve_shapes`` ...);
- ``fusion``: jit's regions as one blockwise task per chunk; ``keep``: the chunks kept after a
  read; ``linalg``: contractions, linalg and fft over chunks; ``random``: draws per chunk and the
  table's ``libm_log``;
- ``lax`` (convolution, window reductions), ``nn`` (erf), ``sharding`` (the sharding constraint):
  the table's entries for those primitives, mostly the NumPy executor's per block.

Import cycles: ``executor`` and ``random``: the executor's table sends random draws to
``random`` (one task per chunk) and takes in its ``TABLE``, and the draws read the executor's
chunking (imports inside ``random``'s functions).
"""
from __future__ import annotations

from arrayx.executors.dask.executor import *  # noqa: F401,F403
from arrayx.executors.dask.executor import DaskExecutor, __all__  # noqa: F401
