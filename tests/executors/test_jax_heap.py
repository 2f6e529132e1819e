"""The jax executor's malloc settings (executors/common/heap.py): XLA's large result buffers come
from reused heap, not fresh pages, so a repeated large eager operation stops faulting pages in."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from arrayx.core import executor as base

EX = base.get("jax")
pytestmark = [
    pytest.mark.skipif(not EX.available(), reason=f"executor 'jax' unavailable: {EX.unavailable_reason}"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc settings (Linux only)"),
]

_SCRIPT = textwrap.dedent("""
    import resource
    import numpy as np
    import arrayx as xp
    from arrayx.executors.common import heap

    def faults():
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

    def scale(A):  # a StandardScaler's operations, dispatched without waiting for each
        count = xp.sum(xp.astype(~xp.isnan(A), xp.float64), axis=0)
        mean = xp.sum(A, axis=0) / count
        t = A - mean
        correction = xp.sum(t, axis=0)
        var = (xp.sum(t ** 2, axis=0) - correction ** 2 / count) / count
        assert bool(xp.isfinite(xp.sum(A)))
        return (A - mean) / xp.sqrt(var)

    X = np.random.default_rng(0).normal(size=(100_000, 64))  # 51 MB results
    with xp.use_executor("jax"):
        a = xp.asarray(X)
        per_call = []
        for _ in range(10):
            before = faults()
            scale(a)._buf.block_until_ready()
            reference = (X - X.mean(0)) / X.std(0)  # NumPy's own large blocks in between
            del reference
            per_call.append(faults() - before)
    print(heap._done, sum(per_call[5:]))
""")



def test_repeated_large_results_reuse_heap_pages():
    out = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=300,
                         env={**__import__("os").environ, "ARRAYX_JAX_REUSE_MEMORY": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    done, faults = out.stdout.split()
    if done != "True":
        pytest.skip("malloc is not glibc's here")
    # each call makes five 51 MB results (12,500 pages each); with XLA's blocks in threads' own
    # arenas two of them were mapped afresh on every call (125,000 faults in five calls)
    assert int(faults) < 30_000, f"{faults} page faults in the last 5 calls: freed heap is not being reused"
