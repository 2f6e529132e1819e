"""shard_map's replication check (issue #40 point 2), the same on every executor: an output whose
out_specs leave a mesh axis out must not vary along it (JAX's check_vma: decided from the program,
never from the values), eagerly and under jit; ``check_rep=False`` gives member 0's value along
such an axis; a Python scalar result is a replicated constant; ``ARRAYX_VIRTUAL_DEVICES`` is bounded;
``create_device_mesh`` (issue #42 point 1).  numpy/numba/dask on virtual devices in this process,
dask also on a 2-worker LocalCluster, jax in a subprocess with 8 forced host devices."""
from __future__ import annotations

import gc
import textwrap

import numpy as np
import pytest

import arrayx as ax
from arrayx.core import executor as base
from arrayx.sharding import P, _records, virtual_devices

from tests.sharding.conftest import VIRTUAL, json_from_eight_jax_devices  # noqa: E402,F401  (and the vex fixture)




def _mesh(ex, shape=(8,), names=("x",)):
    return ax.sharding.make_mesh(shape, names, devices=virtual_devices(ex, int(np.prod(shape))))


def _sum1(b):
    return ax.reshape(ax.sum(b), (1,))


# -- the check: eager and under jit ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_unreduced_output_declared_replicated_is_refused(vex, mode):
    # the sum of each member's block without psum, declared replicated: 408.0 came back on dask
    mesh = _mesh(vex)
    f = ax.shard_map(lambda b: ax.sum(b), mesh=mesh, in_specs=P("x"), out_specs=P())
    f = ax.jit(f) if mode == "jit" else f
    with pytest.raises(ValueError, match=r"shard_map\(<lambda>\): out_specs is P\(\), which does not name mesh "
                                         r"axis 'x'.*varies along 'x'.*psum.*P\('x'\).*check_rep=False"):
        f(ax.arange(128.0))


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_unreduced_output_on_a_2d_mesh_is_refused_not_laid_out_wrong(vex, mode):
    # out_specs P('x') on a (2, 4) mesh say: replicated along 'y'; dask gave [120, 1144] (the y=0
    # members' blocks) for the [1024, 7104] that psum over 'y' gives
    mesh = _mesh(vex, (2, 4), ("x", "y"))
    f = ax.shard_map(_sum1, mesh=mesh, in_specs=P(("x", "y")), out_specs=P("x"))
    f = ax.jit(f) if mode == "jit" else f
    with pytest.raises(ValueError, match=r"out_specs is P\('x',\), which does not name mesh axis 'y'"):
        f(ax.arange(128.0))
    g = ax.shard_map(lambda b: ax.lax.psum(_sum1(b), "y"), mesh=mesh, in_specs=P(("x", "y")), out_specs=P("x"))
    g = ax.jit(g) if mode == "jit" else g
    np.testing.assert_array_equal(np.asarray(g(ax.arange(128.0))), np.arange(128.0).reshape(2, 64).sum(axis=1))


def test_the_check_is_static_equal_values_that_vary_are_refused(vex):
    # as JAX: the program decides (sum(b) * 0 is 0 on every member, but depends on its block)
    mesh = _mesh(vex, (4,))
    f = ax.shard_map(lambda b: ax.sum(b) * 0, mesh=mesh, in_specs=P("x"), out_specs=P())
    with pytest.raises(ValueError, match="does not name mesh axis 'x'"):
        f(ax.arange(8.0))
    g = ax.shard_map(lambda b: ax.astype(ax.lax.axis_index("x"), ax.float64), mesh=mesh, in_specs=P("x"),
                     out_specs=P())
    with pytest.raises(ValueError, match="does not name mesh axis 'x'"):
        g(ax.arange(8.0))


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_what_makes_an_output_replicated(vex, mode):
    mesh = _mesh(vex, (2, 4), ("x", "y"))
    h = np.arange(32.0).reshape(4, 8)
    c = ax.asarray(5.0)

    def body(b, r):
        s = ax.sum(b)
        both = ax.lax.psum(s, ("x", "y"))  # invariant along both
        over_y = ax.lax.pmax(s, "y")  # still varies along 'x'
        g = ax.lax.all_gather(b, "x", tiled=True)  # varies along 'y' only
        looped = ax.lax.fori_loop(0, 3, lambda i, v: v + ax.sum(r), both)  # invariant in, invariant out
        return both + c + ax.sum(r), ax.reshape(over_y, (1,)), g, looped

    f = ax.shard_map(body, mesh=mesh, in_specs=(P("x", "y"), P()),
                     out_specs=(P(), P("x"), P(None, "y"), P()))
    f = ax.jit(f) if mode == "jit" else f
    a, m, g, lp = f(ax.asarray(h), ax.ones(3))
    assert float(a) == h.sum() + 5 + 3 and float(lp) == h.sum() + 9
    blocks = h.reshape(2, 2, 4, 2).sum(axis=(1, 3))
    np.testing.assert_array_equal(np.asarray(m), blocks.max(axis=1))
    np.testing.assert_array_equal(np.asarray(g), h)


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_check_rep_false_gives_member_zero_along_the_unnamed_axis(vex, mode):
    mesh = _mesh(vex, (2, 4), ("x", "y"))
    f = ax.shard_map(_sum1, mesh=mesh, in_specs=P(("x", "y")), out_specs=P("x"), check_rep=False)
    f = ax.jit(f) if mode == "jit" else f
    blocks = np.arange(128.0).reshape(8, 16).sum(axis=1)
    np.testing.assert_array_equal(np.asarray(f(ax.arange(128.0))), blocks[[0, 4]])
    g = ax.shard_map(lambda b: ax.sum(b), mesh=mesh, in_specs=P(("x", "y")), out_specs=P(), check_vma=False)
    g = ax.jit(g) if mode == "jit" else g
    assert float(g(ax.arange(128.0))) == blocks[0]


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_python_scalar_output_is_a_replicated_constant(vex, mode):
    mesh = _mesh(vex, (2,))
    f = ax.shard_map(lambda b: (1.5, b * 2), mesh=mesh, in_specs=P("x"), out_specs=(P(), P("x")))
    f = ax.jit(f) if mode == "jit" else f
    records = len(_records._RECORDS)
    one, two = f(ax.arange(4.0))
    want = ax.jit(lambda v: 1.5)(ax.arange(4.0))
    assert isinstance(one, ax.Array) and one.shape == () and one.dtype == want.dtype and float(one) == 1.5
    np.testing.assert_array_equal(np.asarray(two), np.arange(4.0) * 2)
    # the results' shardings go with them: the constant the cached member graph holds carries none
    # (it did on dask, which kept the sharding hook installed for the rest of the process)
    del one, two
    gc.collect()
    assert len(_records._RECORDS) == records


def test_grad_through_a_checked_shard_map(vex):
    mesh = _mesh(vex, (2, 4), ("x", "y"))
    f = ax.shard_map(lambda b, w: ax.lax.psum(ax.sum(b * w), ("x", "y")), mesh=mesh, in_specs=(P("x", "y"), P()),
                     out_specs=P())
    h = np.arange(32.0).reshape(4, 8)
    w = ax.asarray(3.0)
    gx, gw = ax.grad(f, argnums=(0, 1))(ax.asarray(h), w)
    np.testing.assert_array_equal(np.asarray(gx), np.full((4, 8), 3.0))
    assert float(gw) == h.sum()
    # a value closed over from an enclosing grad is the same on every member
    gw2 = ax.grad(lambda v: ax.shard_map(lambda b: ax.lax.psum(ax.sum(b) * v, "x"), mesh=mesh, in_specs=P("x"),
                                         out_specs=P())(ax.asarray(h)))(w)
    assert float(gw2) == h.sum()


# -- ARRAYX_VIRTUAL_DEVICES is bounded ------------------------------------------------------------------


def test_absurd_virtual_device_count_is_refused(vex, monkeypatch):
    monkeypatch.setenv("ARRAYX_VIRTUAL_DEVICES", "100000000")
    with pytest.raises(ValueError, match=r"ARRAYX_VIRTUAL_DEVICES='100000000'.* at most 65536"):
        ax.sharding.make_mesh((2,), ("x",))
    with pytest.raises(ValueError, match=r"at most 65536"):
        virtual_devices(vex, 10 ** 8)


def test_a_mesh_builds_only_the_devices_it_uses(vex, monkeypatch):
    from arrayx.core import executor as core_executor

    monkeypatch.setenv("ARRAYX_VIRTUAL_DEVICES", "65536")
    made = []
    real = core_executor.Device.__init__

    def counting(self, *a, **k):
        made.append(1)
        real(self, *a, **k)

    monkeypatch.setattr(core_executor.Device, "__init__", counting)
    mesh = ax.sharding.make_mesh((2,), ("x",))
    assert mesh.devices.shape == (2,) and len(made) <= 2
    assert len(ax.sharding.mesh_utils.create_device_mesh((2,), devices=ax.sharding.devices()[:2])) == 2


# -- create_device_mesh --------------------------------------------------------------------------------


def test_create_device_mesh_on_virtual_devices(vex, monkeypatch):
    from arrayx.sharding import mesh_utils

    monkeypatch.setenv("ARRAYX_VIRTUAL_DEVICES", "8")
    devs = ax.sharding.devices()
    assert ax.sharding.create_device_mesh is mesh_utils.create_device_mesh
    for shape, want in [((2, 4), (2, 4)), ((8,), (8,)), (8, (8,)), ([4, 2], (4, 2)), ((2, 2, 2), (2, 2, 2)),
                        (np.array([2, 4]), (2, 4))]:
        m = mesh_utils.create_device_mesh(shape)
        assert isinstance(m, np.ndarray) and m.dtype == object and m.shape == want
        assert list(m.flat) == devs  # in device order, as JAX's on CPU
    mesh = ax.sharding.Mesh(mesh_utils.create_device_mesh((2, 4)), ("x", "y"))
    assert mesh.shape == {"x": 2, "y": 4}
    assert list(mesh_utils.create_device_mesh((2, 2), devices=devs[4:]).flat) == devs[4:]
    for shape in [(2, 3), (16,), (4, 4), (), (1,)]:
        with pytest.raises(ValueError, match=rf"create_device_mesh: number of devices 8 must equal the product "
                                             rf"of mesh_shape {tuple(shape)!r}".replace("(", r"\(").replace(")", r"\)")):
            mesh_utils.create_device_mesh(shape)
    with pytest.raises(ValueError, match="number of devices 3 must equal the product of mesh_shape"):
        mesh_utils.create_device_mesh((2, 2), devices=devs[:3])
    with pytest.raises(ValueError, match="should be a sequence of ints"):
        mesh_utils.create_device_mesh("ab")
    with pytest.raises(ValueError, match="should be a sequence of ints"):
        mesh_utils.create_device_mesh((2.5, 4))
    with pytest.raises(ValueError, match="sizes must be positive"):
        mesh_utils.create_device_mesh((-2, -4))


# -- dask on a cluster of two workers ---------------------------------------------------------------


@pytest.mark.parametrize("processes", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_dask_cluster_replication_check(processes):
    pytest.importorskip("distributed")
    if not base.get("dask").available():
        pytest.skip("dask unavailable")
    from distributed import LocalCluster

    import arrayx.executors.dask as dex

    cluster = LocalCluster(n_workers=2, processes=processes, threads_per_worker=1, dashboard_address=None)
    try:
        dex.connect(cluster)
        mesh = ax.sharding.make_mesh((2,), ("w",), executor="dask")
        with ax.use_executor("dask"):
            x = ax.arange(128.0)
            bad = ax.shard_map(lambda b: ax.sum(b), mesh=mesh, in_specs=P("w"), out_specs=P())
            for fn in (bad, ax.jit(bad)):
                with pytest.raises(ValueError, match="does not name mesh axis 'w'"):
                    fn(x)
            good = ax.shard_map(lambda b: ax.lax.psum(ax.sum(b), "w"), mesh=mesh, in_specs=P("w"), out_specs=P())
            assert float(good(x)) == 8128.0 and float(ax.jit(good)(x)) == 8128.0
            unchecked = ax.shard_map(lambda b: ax.sum(b), mesh=mesh, in_specs=P("w"), out_specs=P(), check_rep=False)
            assert float(unchecked(x)) == float(np.arange(64.0).sum())
    finally:
        dex.disconnect()
        cluster.close()


# -- jax: 8 forced host devices --------------------------------------------------------------------------


#: the jax checks, each a function run in one child process with 8 forced host devices (XLA reads its
#: flags once); the child prints one JSON line: each check's name -> "ok" or its traceback
_JAX_CHECKS = textwrap.dedent('''
import json, traceback


def replication_check():
    import numpy as np, arrayx as ax
    from arrayx.sharding import P
    ax.set_executor("jax")
    mesh = ax.sharding.make_mesh((8,), ("x",))
    mesh2 = ax.sharding.make_mesh((2, 4), ("x", "y"))
    x = ax.arange(128.0)
    def refused(fn, what):
        try:
            fn(x)
        except ValueError as e:
            assert "does not name mesh axis " + repr(what) in str(e) and "psum" in str(e), str(e)
        else:
            raise AssertionError("no error")
    for wrap in (lambda f: f, ax.jit):
        refused(wrap(ax.shard_map(lambda b: ax.sum(b), mesh=mesh, in_specs=P("x"), out_specs=P())), "x")
        refused(wrap(ax.shard_map(lambda b: ax.reshape(ax.sum(b), (1,)), mesh=mesh2, in_specs=P(("x", "y")),
                                  out_specs=P("x"))), "y")
        ok = wrap(ax.shard_map(lambda b: ax.lax.psum(ax.sum(b), "x"), mesh=mesh, in_specs=P("x"), out_specs=P()))
        assert float(ok(x)) == 8128.0
        unchecked = wrap(ax.shard_map(lambda b: ax.reshape(ax.sum(b), (1,)), mesh=mesh2, in_specs=P(("x", "y")),
                                      out_specs=P("x"), check_rep=False))
        np.testing.assert_array_equal(np.asarray(unchecked(x)), np.arange(128.0).reshape(8, 16).sum(1)[[0, 4]])
        one, two = wrap(ax.shard_map(lambda b: (1.5, b * 2), mesh=mesh, in_specs=P("x"), out_specs=(P(), P("x"))))(x)
        assert float(one) == 1.5 and one.shape == () and float(ax.sum(two)) == 2 * 8128.0


def create_device_mesh_is_jax_s():
    import arrayx as ax
    from jax.experimental import mesh_utils as jmu
    from arrayx.sharding import mesh_utils
    ax.set_executor("jax")
    for shape in [(2, 4), (8,), (4, 2), (2, 2, 2), [2, 4]]:
        mine, theirs = mesh_utils.create_device_mesh(shape), jmu.create_device_mesh(shape)
        assert mine.shape == theirs.shape and mine.dtype == object
        assert [d.native for d in mine.flat] == list(theirs.flat)
    assert mesh_utils.create_device_mesh(8).shape == (8,)
    for shape in [(2, 3), (16,), ()]:
        try:
            jmu.create_device_mesh(shape)
        except ValueError as e:
            want = str(e)
        try:
            mesh_utils.create_device_mesh(shape)
        except ValueError as e:
            assert want.lower() in str(e).lower(), (want, str(e))
        else:
            raise AssertionError(shape)


results = {}
for check in (replication_check, create_device_mesh_is_jax_s):
    try:
        check()
        results[check.__name__] = "ok"
    except BaseException:
        results[check.__name__] = traceback.format_exc()[-3000:]
print(json.dumps(results))
''')


@pytest.fixture(scope="module")
def jax_checks() -> dict:
    if not base.get("jax").available():
        pytest.skip("jax unavailable")
    return json_from_eight_jax_devices(_JAX_CHECKS)  # the 8-device child the sharding tests share


def test_jax_replication_check_in_subprocess(jax_checks):
    assert jax_checks["replication_check"] == "ok", jax_checks["replication_check"]


def test_jax_create_device_mesh_is_jax_s_in_subprocess(jax_checks):
    assert jax_checks["create_device_mesh_is_jax_s"] == "ok", jax_checks["create_device_mesh_is_jax_s"]


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_control_flow_and_custom_rules_in_the_body(vex, mode):
    # the analysis agrees with vmap's batching of cond/while/scan/custom_jvp/checkpoint under jit
    mesh = _mesh(vex, (2, 4), ("x", "y"))
    h = np.arange(32.0).reshape(4, 8)

    def body(b, k):
        s = ax.lax.psum(ax.sum(b), ("x", "y"))
        c = ax.lax.cond(k > 0, lambda v: v * 2, lambda v: v, s)  # invariant operands: invariant
        w = ax.lax.while_loop(lambda v: v < 1e4, lambda v: v * 2, s)
        carry, ys = ax.lax.scan(lambda cr, xv: (cr + xv, cr * xv), s, ax.arange(3.0))
        r = ax.checkpoint(lambda v: ax.nn.relu(v) + 1)(b)  # varies along both
        return c + w + carry + ax.sum(ys), r

    f = ax.shard_map(body, mesh=mesh, in_specs=(P("x", "y"), P()), out_specs=(P(), P("x", "y")))
    f = ax.jit(f) if mode == "jit" else f
    tot, r = f(ax.asarray(h), ax.asarray(1.0))
    s = h.sum()
    w = s
    while w < 1e4:
        w *= 2
    carry, ys = s, 0.0
    for xv in range(3):
        carry, ys = carry + xv, ys + carry * xv
    assert float(tot) == 2 * s + w + carry + ys
    np.testing.assert_array_equal(np.asarray(r), np.maximum(h, 0) + 1)
    # a branch chosen by a varying index makes the result vary
    g = ax.shard_map(lambda b: ax.lax.cond(ax.sum(b) > 100, lambda: 1.0, lambda: 0.0), mesh=mesh,
                     in_specs=P("x", "y"), out_specs=P())
    with pytest.raises(ValueError, match="does not name mesh axis 'x', 'y'"):
        (ax.jit(g) if mode == "jit" else g)(ax.asarray(h))
