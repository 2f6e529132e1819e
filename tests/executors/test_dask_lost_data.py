"""Reads of Dask data lost with a worker raise at once, naming the lost key (issue #40 point 6).

A block that ``device_put`` placed on a worker is lost when that worker dies: sent from the host
(``client.scatter``), Dask cannot recompute it; computed on the worker, it is restricted to that
worker's address, which a restarted worker does not get back, and a read waited for ever.  Each
case runs in a subprocess with a cluster of two worker processes, so that a read that hangs
fails the test at its timeout instead of hanging the run.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from arrayx.core import executor as base

_DASK = base.get("dask")
pytestmark = pytest.mark.skipif(not _DASK.available(), reason="Dask is not installed")

_SCRIPT = textwrap.dedent("""
    import json, os, signal, sys, time
    import numpy as np
    import arrayx as ax
    import arrayx.executors.dask as xd
    from arrayx.sharding import NamedSharding, PartitionSpec as P, _dask
    from distributed import LocalCluster

    def read(x):
        start = time.perf_counter()
        try:
            value, error = np.asarray(x).tolist(), None
        except Exception as e:
            value, error = None, f"{type(e).__name__}: {e}"
        return {"value": value, "error": error, "seconds": time.perf_counter() - start}

    if __name__ == "__main__":
        source = sys.argv[1]
        cluster = LocalCluster(n_workers=2, processes=True, threads_per_worker=1, memory_limit="500MB",
                               dashboard_address=None)
        client = xd.connect(cluster)
        with ax.use_executor("dask"):
            mesh = ax.sharding.make_mesh((2,), ("w",), executor="dask")
            host = np.arange(64.0).reshape(8, 8)
            x = ax.device_put(host if source == "host" else ax.asarray(host), NamedSharding(mesh, P(None, "w")))
            where = _dask.placement(x)
            key, (victim,) = sorted(where.items(), key=lambda kv: kv[1])[0]
            pid = client.run(os.getpid, workers=[victim])[victim]
            os.kill(pid, signal.SIGKILL)
            lost = read(x)
            unrelated = read(ax.asarray(np.arange(5.0)) + 1)
        print(json.dumps({"key": key, "lost": lost, "unrelated": unrelated}))
        sys.stdout.flush()
        os._exit(0)  # the cluster's processes go with this one
""")


@pytest.mark.parametrize("source", ["host", "dask"])
def test_read_of_a_block_lost_with_its_worker_raises_naming_the_key(source):
    pytest.importorskip("distributed")
    try:
        out = subprocess.run([sys.executable, "-c", _SCRIPT, source], capture_output=True, text=True,
                             timeout=90, cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    except subprocess.TimeoutExpired:
        pytest.fail(f"device_put from {source}: the read of a block whose worker died did not return in 90 s")
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    lost = got["lost"]
    assert lost["value"] is None and lost["error"].startswith("RuntimeError: read of a Dask array:"), lost
    key = tuple(got["key"]) if isinstance(got["key"], list) else got["key"]  # a chunk key, through JSON
    assert repr(key) in lost["error"] and "is lost" in lost["error"], lost
    assert lost["seconds"] < 10, lost
    assert got["unrelated"] == {"value": [1.0, 2.0, 3.0, 4.0, 5.0], "error": None,
                                "seconds": got["unrelated"]["seconds"]}
