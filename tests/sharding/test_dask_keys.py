"""Placed Dask arrays on a cluster reuse no key name for two different tasks (issue #42): a placed
array (``device_put``, an eager or jitted result on sharded arrays) is its chunks' futures under keys
of a name of its own, so later graphs that read it hold only those futures.  It was the futures
joined by ``da.block``, whose ``concatenate-...`` keys every later graph optimised (fused) in its own
way, and Dask's scheduler warned "Detected different `run_spec` for key ('concatenate-...', ...)"
on the sharding conformance rows (a key name reused for two different tasks can deadlock)."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import arrayx as ax
from arrayx.sharding import NamedSharding, P

distributed = pytest.importorskip("distributed")


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@pytest.fixture
def cluster(monkeypatch):
    import arrayx.executors.dask as dex

    if not ax.executors.get("dask").available():
        pytest.skip("dask executor unavailable")
    monkeypatch.setenv("ARRAYX_VIRTUAL_DEVICES", "8")
    records = _Records()
    logger = logging.getLogger("distributed.scheduler")
    logger.addHandler(records)
    try:
        with distributed.LocalCluster(n_workers=2, processes=False, threads_per_worker=1,
                                      dashboard_address=None) as c:
            client = dex.connect(c)
            try:
                yield client, records
            finally:
                dex.disconnect()
    finally:
        logger.removeHandler(records)


def test_the_sharding_rows_reuse_no_key_on_a_cluster(cluster, monkeypatch):
    from conformance import sharding as rows

    _, records = cluster
    got = rows.run("dask")
    assert not [m for m in records.messages if "run_spec" in m], records.messages
    monkeypatch.setenv("ARRAYX_VIRTUAL_DEVICES", "8")
    want = rows.run("numpy")  # the same programs on the NumPy executor: the same values and shardings
    assert got == want


def test_a_placed_array_is_its_futures_under_its_own_keys(cluster):
    from distributed import Future

    client, records = cluster
    host = np.arange(64.0).reshape(8, 8)
    with ax.use_executor("dask"):
        mesh = ax.sharding.make_mesh((2, 4), ("x", "y"))
        s = NamedSharding(mesh, P("x", "y"))
        for x in (ax.device_put(host, s), ax.device_put(ax.asarray(host), s)):  # scattered, computed
            y = x
            for _ in range(3):
                y = y * 2.0 + 1.0  # eager results: placed as well
                graph = dict(y._buf.__dask_graph__())
                assert all(isinstance(v, Future) for v in graph.values())
                assert set(graph) == {(y._buf.name, i, j) for i in range(2) for j in range(4)}
                assert y._buf.name.startswith("placed-")
            want = host
            for _ in range(3):
                want = want * 2.0 + 1.0
            np.testing.assert_array_equal(np.asarray(y), want)
            np.testing.assert_array_equal(np.asarray(ax.sum(y, axis=0)), want.sum(axis=0))
    assert not [m for m in records.messages if "run_spec" in m], records.messages
