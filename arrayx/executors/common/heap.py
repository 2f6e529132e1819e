"""Have glibc's malloc reuse freed large blocks instead of mapping fresh pages for each one.

XLA on CPU allocates every result buffer with ``malloc``.  glibc serves a block above its mmap
threshold (128 KiB, raised on its own up to 32 MiB) with a fresh ``mmap`` and returns it to the
system on ``free``, so each large eager result of the jax executor pays one page fault per 4 KiB
page: ``a + 1.0`` on 100,000 x 64 float64 took 18 ms of CPU time of which 15 ms were page faults
(3 ms once blocks are reused; NumPy itself 2.6-4.9 ms).  :func:`reuse_large_blocks` raises the
mmap threshold to 1 GiB and the trim threshold likewise, so blocks up to 1 GiB come from the heap and
are reused after they are freed.  It also limits malloc to one arena: XLA dispatches work to its
own threads, and a thread's own arena grows in heaps of at most 64 MiB, so a large block allocated
there was mapped afresh and unmapped on free whatever the thresholds (scikit-learn's StandardScaler
on 100,000 x 64 float64: 12,500-37,500 page faults, 20-60 ms of CPU, per call; 1 with one arena;
the threads of Numba and Dask in the same process share that arena too).  The cost: the process
keeps up to 1 GiB of freed heap mapped (its resident size stays near its peak) instead of handing
it back at once.  The settings are process-wide (NumPy's own large arrays are reused too);
``ARRAYX_JAX_REUSE_MEMORY=0`` leaves malloc as it is.  Elsewhere than glibc (macOS, musl, Windows)
it does nothing.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import sys

__all__ = ["reuse_large_blocks"]

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8
#: blocks up to this size come from the heap (and are reused); beyond it, fresh mappings as before
LARGEST_REUSED = 1 << 30

_done = None


def reuse_large_blocks() -> bool:
    """Raise glibc's mmap and trim thresholds (once per process); True when malloc took them."""
    global _done
    if _done is not None:
        return _done
    _done = False
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    _done = bool(mallopt(_M_MMAP_THRESHOLD, LARGEST_REUSED)) and bool(mallopt(_M_TRIM_THRESHOLD, LARGEST_REUSED))
    # one arena: a thread's own arena grows in heaps of at most 64 MiB, so a large block that
    # XLA's threads allocate there is mapped afresh and unmapped on free whatever the thresholds
    mallopt(_M_ARENA_MAX, 1)
    return _done
