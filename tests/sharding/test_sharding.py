"""arrayx.sharding on numpy/numba/dask virtual devices (in this process) and jax's real devices (a
subprocess with 8 forced host devices): specs, errors, device_put, shard_map with every collective,
under jit/grad/vmap, jit's in/out_shardings, dask chunking and placement on a 2-worker LocalCluster."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

import arrayx as ax
from arrayx.core import executor as base
from arrayx.sharding import Mesh, NamedSharding, P, SingleDeviceSharding, virtual_devices

from tests.sharding.conftest import VIRTUAL, json_from_eight_jax_devices  # noqa: E402,F401  (and the vex fixture)


def _mesh(ex, shape=(2, 4), names=("x", "y")):
    return ax.sharding.make_mesh(shape, names, devices=virtual_devices(ex, int(np.prod(shape))))




# -- specs and errors -------------------------------------------------------------------------------


def test_uneven_split_is_refused_naming_axis_and_sizes(vex):
    mesh = _mesh(vex, (8,), ("x",))
    with pytest.raises(ValueError, match=r"dimension 0 of size 6.*'x' \(size 8\).*not divisible by 8"):
        ax.device_put(ax.arange(6.0), NamedSharding(mesh, P("x")))


def test_spec_errors(vex):
    mesh = _mesh(vex)
    with pytest.raises(ValueError, match="does not have"):
        NamedSharding(mesh, P("z"))
    with pytest.raises(ValueError, match="more than once"):
        NamedSharding(mesh, P("x", "x"))
    with pytest.raises(ValueError, match="2 entries but the array has 1"):
        ax.device_put(ax.arange(8.0), NamedSharding(mesh, P("x", "y")))
    with pytest.raises(ValueError, match="needs 16 devices"):
        ax.sharding.make_mesh((4, 4), ("a", "b"), devices=virtual_devices(vex, 8))


def test_replicated_axis_and_shards(vex):
    mesh = _mesh(vex)
    x = ax.reshape(ax.arange(32.0), (4, 8))
    y = ax.device_put(x, NamedSharding(mesh, P("x")))  # replicated over 'y'
    assert y.sharding == NamedSharding(mesh, P("x")) and len(y.devices()) == 8
    # JAX 0.10's equality: the same layout, another spec
    assert y.sharding != NamedSharding(mesh, P("x", None)) and y.sharding.is_equivalent_to(
        NamedSharding(mesh, P("x", None)), 2)
    shards = y.addressable_shards
    assert len(shards) == 8 and sorted(s.replica_id for s in shards) == [0] * 2 + [1] * 2 + [2] * 2 + [3] * 2
    for s in shards:
        np.testing.assert_array_equal(np.asarray(s.data), np.asarray(x)[s.index])
    np.testing.assert_array_equal(np.asarray(y), np.asarray(x))
    assert y.sharding.shard_shape((4, 8)) == (2, 8) and not y.sharding.is_fully_replicated


def test_separate_buffers_on_numpy():
    mesh = _mesh("numpy", (4,), ("x",))
    y = ax.device_put(ax.arange(8.0), NamedSharding(mesh, P("x")))
    bufs = [s.data._buf for s in y.addressable_shards]
    assert all(not np.shares_memory(a, b) for i, a in enumerate(bufs) for b in bufs[i + 1:])
    assert not np.shares_memory(bufs[0], y._buf)


def test_visualize_text_grid(vex, capsys):
    mesh = _mesh(vex)
    ax.debug.visualize_array_sharding(ax.device_put(ax.arange(32.0), NamedSharding(mesh, P("y"))))
    assert capsys.readouterr().out.splitlines()[1] == "│ CPU 0,4 │ CPU 1,5 │ CPU 2,6 │ CPU 3,7 │"
    with pytest.raises(ValueError, match="1-D and 2-D"):
        ax.debug.visualize_array_sharding(ax.zeros((2, 2, 2)))


def test_unsharded_array_and_device_put_pytree(vex):
    x = ax.arange(4.0)
    assert isinstance(x.sharding, SingleDeviceSharding) and x.devices() == {x.device}
    mesh = _mesh(vex, (2,), ("x",))
    out = ax.device_put({"a": x, "b": [x, x]}, NamedSharding(mesh, P("x")))
    assert out["b"][1].sharding.spec == P("x")
    out = ax.device_put((x, x), (NamedSharding(mesh, P("x")), NamedSharding(mesh, P())))
    assert out[1].sharding.is_fully_replicated and out[0].sharding.spec == P("x")


def test_partition_spec_equality_is_jax_s():
    assert P("x", None) != P("x") and P(("x",)) == P("x") and P(("x", "y")) == P(("x", "y"))
    assert P("x") != ("x",) and P() != P(None) and P("x", None).normalized(2) == P("x").normalized(2)
    assert hash(P(("x",), None)) == hash(P("x", None))


def test_mesh_equality_and_errors():
    d = virtual_devices("numpy", 4)
    assert Mesh(np.array(d).reshape(2, 2), ("a", "b")) == Mesh([[d[0], d[1]], [d[2], d[3]]], ("a", "b"))
    with pytest.raises(ValueError, match="one name per dimension"):
        Mesh(d, ("a", "b"))
    with pytest.raises(ValueError, match="one executor"):
        Mesh([d[0], virtual_devices("dask", 1)[0]], ("a",))


# -- jit ----------------------------------------------------------------------------------------------


def test_jit_keeps_and_propagates(vex):
    mesh = _mesh(vex)
    s = NamedSharding(mesh, P("x", "y"))
    x = ax.device_put(ax.reshape(ax.arange(32.0), (4, 8)), s)
    f = ax.jit(lambda v: (ax.exp(v) * 2, ax.max(v, axis=1), v.T))
    a, b, c = f(x)
    assert a.sharding == s and b.sharding.spec == P("x") and c.sharding.spec == P("y", "x")
    np.testing.assert_allclose(np.asarray(a), np.exp(np.arange(32.0).reshape(4, 8)) * 2)


def test_jit_in_and_out_shardings(vex):
    mesh = _mesh(vex, (4,), ("x",))
    s, r = NamedSharding(mesh, P("x")), NamedSharding(mesh, P())
    f = ax.jit(lambda v: v * 3, in_shardings=s, out_shardings=r)
    y = f(ax.arange(8.0))
    assert y.sharding == r
    np.testing.assert_array_equal(np.asarray(y), np.arange(8.0) * 3)


# -- shard_map ---------------------------------------------------------------------------------------


def _smap_all(x):
    def body(b):
        s = ax.psum(ax.sum(b), "x")
        m = ax.pmean(b, "y")
        hi, lo = ax.pmax(ax.max(b), ("x", "y")), ax.pmin(ax.min(b), "x")
        g = ax.all_gather(b, "y", axis=1, tiled=True)
        idx = ax.astype(ax.axis_index("y"), b.dtype)
        shifted = ax.sharding.ppermute(b, "y", [(i, (i + 1) % 4) for i in range(4)])
        scat = ax.sharding.psum_scatter(b, "x", scatter_dimension=0, tiled=True)
        return s + m + hi + lo + idx + shifted, g, scat

    return body


def _reference():
    # the same program written by hand over the 2x4 blocks of a (4, 8) array
    x = np.arange(32.0).reshape(4, 8) ** 1.5
    blk = {(i, j): x[2 * i:2 * i + 2, 2 * j:2 * j + 2] for i in range(2) for j in range(4)}
    out = np.zeros((4, 8))
    gat = np.zeros((4, 32))
    sc = np.zeros((2, 8))
    for (i, j), b in blk.items():
        s = sum(blk[(k, j)].sum() for k in range(2))
        m = sum(blk[(i, k)] for k in range(4)) / 4
        hi = max(v.max() for v in blk.values())
        lo = min(blk[(k, j)].min() for k in range(2))
        shifted = blk[(i, (j - 1) % 4)]
        out[2 * i:2 * i + 2, 2 * j:2 * j + 2] = s + m + hi + lo + j + shifted
        gat[2 * i:2 * i + 2, 8 * j:8 * j + 8] = np.concatenate([blk[(i, k)] for k in range(4)], axis=1)
        sc[i, 2 * j:2 * j + 2] = (blk[(0, j)] + blk[(1, j)])[i]
    return x, out, gat, sc


def test_shard_map_collectives_eager_and_jit(vex):
    mesh = _mesh(vex)
    x, want, gat, scat = _reference()
    f = ax.shard_map(_smap_all(None), mesh=mesh, in_specs=P("x", "y"), out_specs=(P("x", "y"), P("x", "y"),
                                                                                  P("x", "y")))
    for fn in (f, ax.jit(f)):
        out, g, sc = fn(ax.asarray(x))
        np.testing.assert_allclose(np.asarray(out), want, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(g), gat)
        assert out.sharding == NamedSharding(mesh, P("x", "y"))
        np.testing.assert_allclose(np.asarray(sc), scat)


def test_shard_map_grad_and_vmap(vex):
    mesh = _mesh(vex, (4,), ("x",))
    f = ax.shard_map(lambda b: ax.psum(ax.sum(b * b), "x"), mesh=mesh, in_specs=P("x"), out_specs=P())
    x = ax.arange(8.0)
    assert float(f(x)) == float(np.sum(np.arange(8.0) ** 2))
    np.testing.assert_allclose(np.asarray(ax.grad(f)(x)), 2 * np.arange(8.0))
    np.testing.assert_allclose(np.asarray(ax.jit(ax.grad(f))(x)), 2 * np.arange(8.0))
    xs = ax.reshape(ax.arange(24.0), (3, 8))
    np.testing.assert_allclose(np.asarray(ax.vmap(f)(xs)), np.sum(np.arange(24.0).reshape(3, 8) ** 2, axis=1))


def test_shard_map_refusals(vex):
    mesh = _mesh(vex, (4,), ("x",))
    inner = ax.shard_map(lambda b: b, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
    outer = ax.shard_map(lambda b: inner(b), mesh=mesh, in_specs=P("x"), out_specs=P("x"))
    with pytest.raises(NotImplementedError, match="nested shard_map"):
        outer(ax.arange(16.0))
    bad = ax.shard_map(lambda b: ax.sum(b), mesh=mesh, in_specs=P("x"), out_specs=P())
    if vex != "dask":  # dask computes lazily: the check would force a compute
        with pytest.raises(ValueError, match="does not name mesh axis"):
            bad(ax.arange(8.0))
    with pytest.raises(NameError, match="unbound axis name 'z'"):
        ax.shard_map(lambda b: ax.psum(b, "z"), mesh=mesh, in_specs=P("x"), out_specs=P("x"))(ax.arange(8.0))


def test_cupy_is_refused_naming_the_executor():
    if "cupy" not in base.registered():
        pytest.skip("no cupy executor")
    mesh = ax.sharding.make_mesh((2,), ("x",), devices=virtual_devices("cupy", 2))
    with pytest.raises(NotImplementedError, match="'cupy'"):
        ax.device_put(np.ones(2), NamedSharding(mesh, P("x")))


# -- dask: chunking and placement on a LocalCluster -----------------------------------------------------


def test_dask_chunks_and_placement():
    pytest.importorskip("distributed")
    from distributed import LocalCluster

    import arrayx.executors.dask as dex

    cluster = LocalCluster(n_workers=2, processes=False, threads_per_worker=1, dashboard_address=None)
    try:
        client = dex.connect(cluster)
        workers = ax.sharding.devices("dask")
        assert len(workers) == 2 and all(d.label.startswith("worker:") for d in workers)
        mesh = ax.sharding.make_mesh((2,), ("w",), executor="dask")
        with ax.use_executor("dask"):
            x = ax.device_put(ax.reshape(ax.arange(16.0), (4, 4)), NamedSharding(mesh, P("w")))
        assert x._buf.chunks == ((2, 2), (4,))
        from arrayx.sharding._dask import placement

        where = placement(x)
        assert sorted(w for ws in where.values() for w in ws) == sorted(client.scheduler_info()["workers"])
        f = ax.shard_map(lambda b: ax.psum(ax.sum(b, axis=0), "w"), mesh=mesh, in_specs=P("w"), out_specs=P())
        np.testing.assert_array_equal(np.asarray(f(x)), np.arange(16.0).reshape(4, 4).sum(axis=0))
        # eager ops keep the sharding and one chunk per shard
        y = 2 * x + 1
        assert y.sharding == x.sharding and y._buf.chunks == ((2, 2), (4,))
        np.testing.assert_array_equal(np.asarray(y), 2 * np.arange(16.0).reshape(4, 4) + 1)
    finally:
        dex.disconnect()
        cluster.close()


def test_dask_device_put_scatters_host_blocks_and_releases_them(monkeypatch):
    pytest.importorskip("distributed")
    import gc
    import time

    from distributed import Client, LocalCluster

    import arrayx.executors.dask as dex
    from arrayx.sharding import _dask

    cluster = LocalCluster(n_workers=2, processes=False, threads_per_worker=1, dashboard_address=None)
    try:
        client = dex.connect(cluster)
        mesh = ax.sharding.make_mesh((2,), ("w",), executor="dask")

        def no_graph(*a, **k):
            raise AssertionError("device_put of host data submitted a task graph instead of scattering blocks")

        host = np.arange(64.0).reshape(8, 8)
        with monkeypatch.context() as m:
            m.setattr(Client, "compute", no_graph)
            m.setattr(Client, "persist", no_graph)
            x = ax.device_put(host, NamedSharding(mesh, P(None, "w")))
        assert x._buf.chunks == ((8,), (4, 4))
        where = _dask.placement(x)
        assert len(where) == 2 and sorted(w for ws in where.values() for w in ws) == \
            sorted(client.scheduler_info()["workers"])
        np.testing.assert_array_equal(np.asarray(x), host)
        y = ax.sum(x * 2, axis=0)  # placed on the workers (computed there): it holds blocks of its own
        keys = set(where)
        assert keys <= set(_dask._PLACED)
        del x
        gc.collect()
        np.testing.assert_array_equal(np.asarray(y), 2 * host.sum(axis=0))
        assert not keys & set(_dask._PLACED)  # the last array gone: the blocks are released
        for _ in range(100):  # the scheduler forgets them (asynchronously)
            if not keys & set(client.who_has()):
                break
            time.sleep(0.05)
        assert not keys & set(client.who_has())
    finally:
        dex.disconnect()
        cluster.close()


# -- jax: real XLA shardings ---------------------------------------------------------------------------------


def test_jax_real_shardings_in_subprocess():
    if not base.get("jax").available():
        pytest.skip("jax unavailable")
    code = textwrap.dedent("""
        import numpy as np, jax, arrayx as ax
        from arrayx.sharding import NamedSharding, P
        mesh = ax.sharding.make_mesh((2, 4), ("x", "y"), executor="jax")
        s = NamedSharding(mesh, P("x", "y"))
        with ax.use_executor("jax"):
            x = ax.device_put(ax.reshape(ax.arange(32.0), (4, 8)), s)
        assert isinstance(x._buf.sharding, jax.sharding.NamedSharding) and len(x._buf.addressable_shards) == 8
        assert x._buf.addressable_shards[5].data.shape == (2, 2)
        y = ax.jit(lambda v: ax.sin(v) + 1)(x)
        assert y.sharding == s and y._buf.sharding.spec == jax.sharding.PartitionSpec("x", "y")
        r = NamedSharding(mesh, P())
        z = ax.jit(lambda v: v * 2, in_shardings=r, out_shardings=s)(ax.asarray(np.ones((4, 8)), device=x.device))
        assert z.sharding == s
        f = ax.shard_map(lambda b: ax.psum(ax.sum(b), ("x", "y")), mesh=mesh, in_specs=P("x", "y"), out_specs=P())
        assert float(f(x)) == 496.0 and float(ax.jit(f)(x)) == 496.0
        g = ax.grad(f)(x)
        np.testing.assert_array_equal(np.asarray(g), np.ones((4, 8)))
        print('"ok"')
    """)
    assert json_from_eight_jax_devices(code) == "ok"  # the 8-device child the sharding tests share
