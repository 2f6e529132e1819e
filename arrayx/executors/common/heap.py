"""Have glibc's malloc reuse freed large blocks instead of mapping fresh pages for each one, and
keep no more freed memory resident than a bound.

XLA on CPU allocates every result buffer with ``malloc``.  glibc serves a block above its mmap
threshold (128 KiB, raised on its own up to 32 MiB) with a fresh ``mmap`` and returns it to the
system on ``free``, so each large eager result of the jax executor pays one page fault per 4 KiB
page: ``a + 1.0`` on 100,000 x 64 float64 took 18 ms of CPU time of which 15 ms were page faults
(3 ms once blocks are reused; NumPy itself 2.6-4.9 ms).  :func:`reuse_large_blocks` raises the
mmap threshold to 1 GiB, so blocks up to 1 GiB come from the heap and are reused after they are
freed.  It also limits malloc to one arena: XLA dispatches work to its own threads, and a thread's
own arena grows in heaps of at most 64 MiB, so a large block allocated there was mapped afresh and
unmapped on free whatever the thresholds (scikit-learn's StandardScaler on 100,000 x 64 float64:
12,500-37,500 page faults, 20-60 ms of CPU, per call; 1 with one arena; the threads of Numba and
Dask in the same process share that arena too).

The cost is memory: freed heap stays resident so that it can be reused.  glibc hands back only the
free top of the heap by itself (above its trim threshold, which is set to the bound below); a
block freed under a live one stays resident for good, so a program that freed 60 NumPy arrays of
40 MB under one small live array kept all 2.3 GB.  The bound, :func:`keep_bound`, is an eighth of
the physical memory, at most 1 GiB: a daemon thread (``arrayx-heap-trim``) reads malloc's free
bytes every :data:`PERIOD` seconds and, when they exceed the bound and the heap changed since it
last looked, calls ``malloc_trim(0)``, which returns every free page to the system (freed
blocks are reused afterwards, at the price of faulting their pages in once more).  The settings
are process-wide (NumPy's own large arrays are reused too); ``ARRAYX_JAX_REUSE_MEMORY=0`` leaves
malloc as it is.  Elsewhere than glibc 2.33 or later (macOS, musl, Windows, an older glibc without
``mallinfo2``) it does nothing, as the bound could not be kept there.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading

__all__ = ["reuse_large_blocks", "keep_bound", "release_free_heap"]

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8
#: blocks up to this size come from the heap (and are reused); beyond it, fresh mappings as before
LARGEST_REUSED = 1 << 30
#: the most freed heap the process keeps resident, whatever the machine
KEEP_AT_MOST = 1 << 30
#: seconds between two looks of the trimming thread at malloc's free bytes
PERIOD = 0.25

_done = None
_libc = None
_trimmer: threading.Thread | None = None


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
                 "fordblks", "keepcost")]


def keep_bound() -> int:
    """The most freed heap (bytes) the process keeps resident: an eighth of the physical memory,
    at most :data:`KEEP_AT_MOST`."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return KEEP_AT_MOST
    return max(1 << 20, min(KEEP_AT_MOST, physical // 8))


def _free_heap():
    """(malloc's free bytes, a signature of the heap's state) of every arena."""
    info = _libc.mallinfo2()
    return info.fordblks, (info.arena, info.hblkhd, info.uordblks, info.fordblks)


def release_free_heap() -> bool:
    """Return every free page of malloc's heap to the system now (``malloc_trim(0)``); False
    where :func:`reuse_large_blocks` did not take effect."""
    if not _done:
        return False
    _libc.malloc_trim(0)
    return True


def _trim_loop(bound: int, stop: threading.Event) -> None:
    last = None  # the heap's signature just after the last trim: unchanged, nothing to hand back
    while not stop.wait(PERIOD):
        free, signature = _free_heap()
        if free > bound and signature != last:
            _libc.malloc_trim(0)  # ctypes lets go of the GIL for the call
            last = _free_heap()[1]


def _start_trimmer() -> None:
    global _trimmer
    _trimmer = threading.Thread(target=_trim_loop, args=(keep_bound(), threading.Event()),
                                name="arrayx-heap-trim", daemon=True)
    _trimmer.start()


def reuse_large_blocks() -> bool:
    """Raise glibc's mmap threshold and bound the freed heap kept (once per process); True when
    malloc took the settings."""
    global _done, _libc
    if _done is not None:
        return _done
    _done = False
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt, mallinfo2, malloc_trim = libc.mallopt, libc.mallinfo2, libc.malloc_trim
    except (OSError, AttributeError):  # not glibc, or one older than 2.33: the bound could not be kept
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    mallinfo2.argtypes = ()
    mallinfo2.restype = _MallInfo2
    malloc_trim.argtypes = (ctypes.c_size_t,)
    malloc_trim.restype = ctypes.c_int
    _libc = libc
    # the free top of the heap goes back at once beyond the bound; freed blocks under live ones
    # are the trimming thread's
    _done = bool(mallopt(_M_MMAP_THRESHOLD, LARGEST_REUSED)) and bool(mallopt(_M_TRIM_THRESHOLD, keep_bound()))
    # one arena: a thread's own arena grows in heaps of at most 64 MiB, so a large block that
    # XLA's threads allocate there is mapped afresh and unmapped on free whatever the thresholds
    mallopt(_M_ARENA_MAX, 1)
    if _done:
        _start_trimmer()
        os.register_at_fork(after_in_child=_start_trimmer)  # a forked child has no threads but the caller
    return _done
