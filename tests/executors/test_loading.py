"""Loading an executor: the first use from several threads at once, in a fresh process."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from tests.conftest import ALL_EXECUTORS

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Eight threads wait at a barrier, then all make their first array on the executor at once.
_FIRST_USE = r"""
import json, sys, threading
import arrayx as xp

name, results, barrier = sys.argv[1], [], threading.Barrier(8)

def first_use(i):
    barrier.wait()
    try:
        x = xp.ones((3,), device=name) * float(i)
        results.append(("ok", float(xp.sum(x))))
    except Exception as e:
        results.append(("error", f"{type(e).__name__}: {e}"))

threads = [threading.Thread(target=first_use, args=(i,)) for i in range(8)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps(sorted(results)))
"""


@pytest.mark.parametrize("name", ALL_EXECUTORS)
def test_first_use_from_eight_threads_at_once(name, tmp_path):
    from arrayx.core import executor as base

    ex = base.get(name)
    if not ex.available():
        pytest.skip(f"executor {name!r} unavailable: {ex.unavailable_reason}")
    env = dict(os.environ, ARRAYX_NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    run = subprocess.run([sys.executable, "-c", _FIRST_USE, name], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    results = json.loads(run.stdout.strip().splitlines()[-1])
    assert results == [["ok", 3.0 * i] for i in range(8)], results
