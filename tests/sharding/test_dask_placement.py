"""Eager (and jitted) ops on sharded Dask arrays on a cluster: each result block is computed on, and
kept by, the worker that holds it under the result's sharding, which for an elementwise op is where
the input's block is (issue 42, point 3), as ``Client.who_has`` reports.  A LocalCluster of 2
workers: in-process (threads) in the default tier, worker processes in the slow tier."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as ax
from arrayx.sharding import NamedSharding, P, virtual_devices

pytest.importorskip("distributed")


def _expected(r) -> dict:
    """{block position: the workers the result's sharding says hold it}."""
    from arrayx.sharding import _dask

    return {pos: sorted(set(ws)) for pos, ws in _dask.holders(r.sharding, tuple(r.shape)).items()}


def _check_placed(r, want_values):
    from arrayx.sharding import _dask

    got = _dask.block_placement(r)
    want = _expected(r)
    assert set(got) == set(want)
    for pos, workers in got.items():
        assert workers and set(workers) <= set(want[pos]), (pos, workers, want[pos])
    np.testing.assert_allclose(np.asarray(r), want_values, rtol=1e-13)
    return got


@pytest.fixture(params=[pytest.param(False, id="threads"), pytest.param(True, id="processes", marks=pytest.mark.slow)])
def cluster(request):
    from distributed import LocalCluster

    import arrayx.executors.dask as dex

    c = LocalCluster(n_workers=2, processes=request.param, threads_per_worker=1, dashboard_address=None)
    try:
        client = dex.connect(c)
        with ax.use_executor("dask"):
            yield client
    finally:
        dex.disconnect()
        c.close()


def test_eager_results_stay_with_their_inputs(cluster):
    from arrayx.sharding import _dask

    mesh = ax.sharding.make_mesh((2,), ("w",), executor="dask")
    host = np.arange(64.0).reshape(8, 8)
    x = ax.device_put(host, NamedSharding(mesh, P("w")))
    where = _check_placed(x, host)
    assert sorted(w for ws in where.values() for w in ws) == sorted(cluster.scheduler_info()["workers"])
    y = ax.sin(2.0 * x + 1.0)  # three eager ops, each result placed
    assert y.sharding == x.sharding and _dask.block_placement(y) == where
    _check_placed(y, np.sin(2 * host + 1))
    s = ax.sum(y, axis=1)  # rows stay split: block i where x's block (i, 0) is
    assert s.sharding.spec == P("w")
    assert _check_placed(s, np.sin(2 * host + 1).sum(axis=1)) == {(i,): where[(i, 0)] for i in range(2)}
    t = x.T  # column block i where x's row block i is
    assert t.sharding.spec == P(None, "w")
    assert _check_placed(t, host.T) == {(0, i): where[(i, 0)] for i in range(2)}
    z = ax.jit(lambda v: ax.exp(v / 64.0) * v)(x)  # jitted results too
    assert _check_placed(z, np.exp(host / 64.0) * host) == where
    total = ax.sum(x)  # replicated: on one of the workers
    _check_placed(total, host.sum())


def test_eight_virtual_devices_on_two_workers(cluster):
    from arrayx.sharding import _dask

    devs = virtual_devices("dask", 8)  # virtual device i on worker i % 2
    mesh = ax.sharding.make_mesh((2, 4), ("x", "y"), devices=devs)
    workers = sorted(cluster.scheduler_info()["workers"])
    host = np.arange(8.0 * 16).reshape(8, 16)
    x = ax.device_put(ax.asarray(host), NamedSharding(mesh, P("x", "y")))
    where = _check_placed(x, host)
    assert where == {(a, b): [workers[(a * 4 + b) % 2]] for a in range(2) for b in range(4)}
    y = x * 3.0 - x
    assert _dask.block_placement(y) == where
    _check_placed(y, 2 * host)
    # a result whose blocks the sharding puts on other devices than its inputs' are computed there
    m = ax.max(x, axis=0)  # P('y'): replicated along 'x', block j on devices (0, j) and (1, j)
    _check_placed(m, host.max(axis=0))


def _fetched(client) -> int:
    """Bytes the workers have fetched from each other so far."""
    logs = client.run(lambda dask_worker: sum(e["total"] for e in dask_worker.transfer_incoming_log))
    return sum(logs.values())


def test_shard_map_members_run_on_their_workers_and_move_only_what_they_need(cluster):
    from arrayx.sharding import _collectives as C, _dask

    mesh = ax.sharding.make_mesh((8,), ("x",), devices=virtual_devices("dask", 8))  # device i: worker i % 2
    workers = sorted(cluster.scheduler_info()["workers"])
    block = 1000  # float64: 8 kB a block
    host = np.arange(8.0 * block)
    step1 = [(i, (i + 1) % 8) for i in range(8)]  # every block to the other worker
    step2 = [(i, (i + 2) % 8) for i in range(8)]  # every block to a device of its own worker
    cases = {
        "ppermute +1": (lambda b: C.ppermute(b, "x", step1) * 2.0,
                        lambda b: C.ppermute_gathered(b, ("x",), step1) * 2.0, 2 * np.roll(host, block)),
        "ppermute +2": (lambda b: C.ppermute(b, "x", step2) * 2.0,
                        lambda b: C.ppermute_gathered(b, ("x",), step2) * 2.0, 2 * np.roll(host, 2 * block)),
        "psum_scatter": (lambda b: C.psum_scatter(b, "x", tiled=True)[None] * 2.0,
                         lambda b: C.psum_scatter_summed(b, ("x",), 0, True)[None] * 2.0,
                         2 * host.reshape(8, 8, block // 8).sum(axis=0)),
    }
    moved, results = {}, []
    for kind, (new, old, want) in cases.items():
        for how, body in (("new", new), ("old", old)):
            x = ax.device_put(host, NamedSharding(mesh, P("x")))  # scattered from the host: no transfer
            _dask.block_placement(x)  # (new blocks each time: nothing a run fetched is reused)
            before = _fetched(cluster)
            r = ax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(x)
            where = _dask.block_placement(r)  # waits for the results (submitted at once)
            moved[kind, how] = _fetched(cluster) - before
            assert where == {(i,) + (0,) * (r.ndim - 1): [workers[i % 2]] for i in range(8)}, (kind, how)
            results.append((r, want))
    for r, want in results:
        np.testing.assert_array_equal(np.asarray(r), want.reshape(r.shape))
    # ppermute: a block moves only where its destination is on another worker; the all_gather made
    # each worker fetch the other's 4 blocks whatever the permutation
    assert moved["ppermute +1", "new"] == 8 * 8 * block
    assert moved["ppermute +2", "new"] == 0
    assert moved["ppermute +2", "old"] >= 8 * 8 * block, moved
    # psum_scatter: per member, the other worker's 4 members' parts (1/8 of a block each, in one
    # list: a few bytes more); psum fetched the 4 blocks of one worker to the other and the sum back
    assert 8 * 4 * block <= moved["psum_scatter", "new"] <= 8 * 4 * block + 8 * 200, moved
    assert moved["psum_scatter", "old"] >= 5 * 8 * block, moved


def test_shard_map_with_blocks_the_numpy_buffer_pool_would_take(cluster):
    # a member's segment code goes into the graph sent to the scheduler: the NumPy executor's
    # buffer pool (results of 1 MiB and more) holds a lock, which cannot be pickled
    from arrayx.core.executor import get

    mesh = ax.sharding.make_mesh((2,), ("w",), executor="dask")
    n = max(get("numpy").pool_min_bytes, 1 << 20) // 8 * 2
    host = np.arange(2.0 * n) % 7
    x = ax.device_put(host, NamedSharding(mesh, P("w")))
    f = ax.shard_map(lambda b: ax.psum(b * 2.0, "w") + 1.0, mesh=mesh, in_specs=P("w"), out_specs=P("w"))
    want = 2 * (host[:n] + host[n:]) + 1
    np.testing.assert_array_equal(np.asarray(f(x)), np.concatenate([want, want]))
