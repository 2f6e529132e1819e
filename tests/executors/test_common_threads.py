"""Pieces of one call on several Python threads (executors/common/threads.py): every part runs
once, errors reach the caller, a forked child gets workers of its own."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap
import threading

import pytest

from arrayx.executors.common import threads as T


@pytest.mark.parametrize("extent,pieces,threads", [(100, 8, 2), (7, 8, 2), (1000, 3, 4), (5, 1, 2), (9, 4, 1)])
def test_every_part_runs_once_and_covers_the_range(extent, pieces, threads):
    seen, lock = [], threading.Lock()

    def work(start, stop):
        with lock:
            seen.append((start, stop, threading.get_ident()))

    before = T.split_calls
    T.run_pieces(work, extent, pieces, threads)
    spans = sorted((a, b) for a, b, _ in seen)
    assert spans[0][0] == 0 and spans[-1][1] == extent
    assert all(b == c for (_, b), (c, _) in zip(spans, spans[1:]))  # contiguous, no overlap
    split = threads > 1 and min(pieces, extent) > 1
    assert len(spans) == (min(pieces, extent) if split else 1)
    assert (T.split_calls > before) == split


def test_an_error_in_a_piece_reaches_the_caller():
    def work(start, stop):
        if start > 0:
            raise RuntimeError(f"piece {start} failed")

    with pytest.raises(RuntimeError, match="failed"):
        T.run_pieces(work, 64, 8, 2)


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin", reason="needs os.fork")
def test_pieces_run_in_a_forked_child():
    # in a fresh interpreter (no JAX threads to fork with): the parent's worker threads are gone in
    # the child, which gets new ones
    code = textwrap.dedent("""
        import os, threading
        from arrayx.executors.common import threads as T
        def run():
            ids = set()
            def work(a, b):
                ids.add(threading.get_ident())
                import time; time.sleep(0.01)
            T.run_pieces(work, 16, 8, 2)
            return len(ids)
        assert run() == 2 and T.split_calls == 1
        pid = os.fork()
        if pid == 0:
            os._exit(0 if run() == 2 and T.split_calls == 2 else 1)
        _, status = os.waitpid(pid, 0)
        raise SystemExit(os.waitstatus_to_exitcode(status))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=pathlib.Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
