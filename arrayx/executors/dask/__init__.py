"""The Dask executor: lazy ``dask.array`` buffers, one graph per computation, a cluster if connected.

- ``executor``: :class:`DaskExecutor`, its table and the scheduler / chunking / shape settings
  (``arrayx.executors.dask.connect(address)``, ``set_chunks``, ``resolve_shapes`` ...);
- ``fusion``: jit's regions as one blockwise task per chunk; ``keep``: the chunks kept after a
  read; ``linalg``: contractions, linalg and fft over chunks; ``random``: draws per chunk.

Import cycles: ``executor`` and ``random``: the executor's table sends random draws to
``random`` (one task per chunk), whose draws read the executor's chunking; both imports are inside
functions.
"""
from __future__ import annotations

from arrayx.executors.dask.executor import *  # noqa: F401,F403
from arrayx.executors.dask.executor import DaskExecutor, __all__  # noqa: F401
