"""``arrayx.distributed``: many processes on the jax executor, spelled as ``jax.distributed``.

``arrayx.distributed.initialize(coordinator_address, num_processes, process_id)`` joins this
process to a multi-process JAX program (JAX's own runtime, ``jax.distributed.initialize``), before
any array is made on the jax executor; ``shutdown()`` and ``is_initialized()`` as JAX's.  The rest
(``process_index``, ``make_array_from_process_local_data``, ``process_allgather``, ...) is in
``arrayx.sharding``; the launcher is ``python -m arrayx.sharding.launch``.  The implementation and
what the other executors do: ``arrayx/sharding/_distributed.py``.
"""
from __future__ import annotations

from arrayx.sharding._distributed import initialize, is_initialized, shutdown  # noqa: F401

__all__ = ["initialize", "shutdown", "is_initialized"]
