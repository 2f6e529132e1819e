"""Pieces of one call run side by side on Python threads, for NumPy functions that release the GIL
(pocketfft's transforms, ufunc loops): what the Numba executor's fft (``common/fft.py``) and its
in-place arithmetic (``numba/executor.py``'s ``ufunc_into``) use to put a second core to work on
a call that NumPy runs on one.

``run_pieces(work, extent, pieces, threads)`` cuts ``range(extent)`` into ``pieces`` contiguous
parts and calls ``work(start, stop)`` for each, on the caller and ``threads - 1`` workers.  Parts
are claimed one at a time, so a worker that starts late (or that the OS deschedules) only takes
fewer: the caller never waits for a part nobody started.  An exception in any part reaches the
caller.  The workers are made on first use and remade in a forked child (whose parent's threads are
gone).
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

_lock = threading.Lock()
_workers: ThreadPoolExecutor | None = None
_worker_count = 0
#: pieces per thread (more, smaller pieces: a thread the OS deschedules holds up less of the call)
PIECES_PER_THREAD = 4
#: calls that ran in pieces on more than one thread (tests read it to see the path taken)
split_calls = 0


def piece_count(elements: int, threads: int, piece_min: int) -> int:
    """How many pieces a call of ``elements`` elements is cut into: ``PIECES_PER_THREAD`` per thread,
    none smaller than ``piece_min`` elements (below 2: one call)."""
    return min(threads * PIECES_PER_THREAD, elements // piece_min)


def _reset_after_fork() -> None:
    global _workers, _worker_count, _lock
    _workers, _worker_count, _lock = None, 0, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


def _pool(count: int) -> ThreadPoolExecutor:
    """The worker threads (``count`` of them; made on first use, remade for a larger count)."""
    global _workers, _worker_count
    with _lock:
        if _workers is None or _worker_count < count:
            old = _workers
            _workers, _worker_count = ThreadPoolExecutor(count, thread_name_prefix="arrayx-piece"), count
            if old is not None:
                old.shutdown(wait=False)
        return _workers


def run_pieces(work, extent: int, pieces: int, threads: int) -> None:
    """``work(start, stop)`` over ``pieces`` contiguous parts of ``range(extent)`` on ``threads``
    threads (the caller one of them); see the module docstring."""
    global split_calls
    pieces = max(1, min(pieces, extent))
    if threads <= 1 or pieces < 2:
        work(0, extent)
        return
    bounds = [extent * i // pieces for i in range(pieces + 1)]
    claimed = iter(range(pieces))
    claim = threading.Lock()

    def drain():
        while True:
            with claim:
                i = next(claimed, None)
            if i is None:
                return
            work(bounds[i], bounds[i + 1])

    workers = _pool(threads - 1)
    helpers = [workers.submit(drain) for _ in range(min(threads, pieces) - 1)]
    try:
        drain()
    finally:
        for h in helpers:
            h.result()
    split_calls += 1


__all__ = ["run_pieces", "piece_count", "PIECES_PER_THREAD"]
