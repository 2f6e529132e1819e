"""Numba's threading layer, chosen before anything of arrayx's can start it.

Numba starts its threading layer (picks TBB, OpenMP or its own workqueue, and launches the
threads) at the first call that needs it: a parallel kernel's launch, but also
``numba.get_num_threads()``.  Whichever runs first decides, for the rest of the process.  With
GNU OpenMP chosen, a ``fork`` child that touches Numba's threads is killed ("fork() called from a
process already using GNU OpenMP"), so every path of arrayx into Numba goes through ``numba()``
here, which sets the layer first (``ARRAYX_NUMBA_THREADING_LAYER``, default ``workqueue``, which
survives a fork; ``NUMBA_THREADING_LAYER`` wins; a process that started Numba's threads before
arrayx keeps its layer).
"""
from __future__ import annotations

import os
import threading

from arrayx.core import config as _config

__all__ = ["numba", "layer"]

_lock = threading.Lock()
_layer: str | None = None


def numba():
    """The ``numba`` module, with its threading layer chosen (once per process)."""
    import numba as nb

    if _layer is None:
        _choose(nb)
    return nb


def _choose(nb) -> None:
    global _layer
    with _lock:
        if _layer is not None:
            return
        from numba.np.ufunc import parallel

        if (not parallel._is_initialized and nb.config.THREADING_LAYER == "default"
                and not os.environ.get("NUMBA_THREADING_LAYER")):
            nb.config.THREADING_LAYER = _config.get("ARRAYX_NUMBA_THREADING_LAYER")
        _layer = nb.config.THREADING_LAYER


def layer() -> str:
    """The layer chosen (what Numba will start, or started)."""
    numba()
    return _layer


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.Lock()  # a parent thread may have held it


os.register_at_fork(after_in_child=_after_fork_in_child)
