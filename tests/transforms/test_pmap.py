"""pmap and the named-axis collectives: vmap(axis_name=) and pmap on every executor against JAX;
jax over simulated CPU devices (the child process the sharding tests share), dask on a LocalCluster with 2 workers."""
from __future__ import annotations

import contextlib
import pathlib
import textwrap

import numpy as np
import pytest

import arrayx as ax
from arrayx.core import executor as base
from tests.conftest import to_numpy
from tests.sharding.conftest import json_from_eight_jax_devices

jax = pytest.importorskip("jax")
jnp = jax.numpy


@pytest.fixture(autouse=True, scope="module")
def _jax_peer(jax_peer_in_64_bits_module):  # JAX, the peer here, in 64 bits (tests/conftest.py), not process-wide
    yield

REPO = pathlib.Path(__file__).resolve().parents[2]


def collectives(lib, lax):
    """One member's function using every collective over the axis "i" (written once for both libraries)."""
    def f(x, y):
        return {
            "psum": lax.psum(x, "i"),
            "pmean": lax.pmean(x * y, "i"),
            "pmax": lax.pmax(x, "i"),
            "pmin": lax.pmin(x, "i"),
            "gather0": lax.all_gather(x, "i"),
            "gather1": lax.all_gather(x, "i", axis=1),
            "tiled": lax.all_gather(x, "i", tiled=True),
            "index": lax.axis_index("i"),
            "scaled": x * lax.axis_index("i") + lax.psum(1, "i"),
            "tree": lax.psum((x, y), "i")[1],
        }

    return f


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(4, 3, 2)), rng.normal(size=(3, 2))


#: JAX's side of the comparisons of this module, as NumPy values: one jax.jit program per reference,
#: computed once per module (every executor's item compares with it; eagerly each operation of
#: jax.vmap compiled a program of its own)
_JAX_RESULTS: dict = {}


def _jax_once(key, fn, *args):
    if key not in _JAX_RESULTS:
        _JAX_RESULTS[key] = jax.tree_util.tree_map(np.asarray, jax.jit(fn)(*args))
    return _JAX_RESULTS[key]


def _jax_reference(seed):
    x, y = _inputs(seed)
    return _jax_once(("collectives", seed), jax.vmap(collectives(jnp, jax.lax), in_axes=(0, None), axis_name="i"),
                     jnp.asarray(x), jnp.asarray(y))


def _assert_tree_close(got, want):
    for k in want:
        g, w = to_numpy(got[k]), np.asarray(want[k])
        assert g.shape == w.shape, (k, g.shape, w.shape)
        assert g.dtype == w.dtype, (k, g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14, err_msg=k)


def test_vmap_axis_name_matches_jax(executor):
    x, y = _inputs()
    got = ax.vmap(collectives(ax, ax), in_axes=(0, None), axis_name="i")(ax.asarray(x), ax.asarray(y))
    _assert_tree_close(got, _jax_reference(0))


def test_pmap_matches_jax_vmap(executor):
    if executor == "jax":
        pytest.skip("the jax executor maps over devices: test_pmap_on_jax_cpu_devices (a subprocess)")
    x, y = _inputs(1)
    got = ax.pmap(collectives(ax, ax), "i", in_axes=(0, None))(ax.asarray(x), ax.asarray(y))
    _assert_tree_close(got, _jax_reference(1))
    # out_axes, a mapped axis other than 0, static arguments
    f = ax.pmap(lambda v, k: ax.psum(v, "i") * k, "i", in_axes=1, out_axes=1, static_broadcasted_argnums=1)
    np.testing.assert_allclose(to_numpy(f(ax.asarray(x), 3.0)), np.repeat((x.sum(axis=1) * 3.0)[:, None, :], 3, axis=1),
                               rtol=1e-12)
    g = ax.pmap(lambda v: ax.pmean(v, "i"), "i", out_axes=None)(ax.asarray(x))
    np.testing.assert_allclose(to_numpy(g), x.mean(axis=0), rtol=1e-12)


def test_gradients_through_collectives_match_jax(executor):
    x, _ = _inputs(2)

    def loss(lib, lax):
        return lambda v: lib.sum(lax.psum(v ** 2, "i") * lib.sin(v)) + lib.sum(lax.all_gather(v, "i")[1] * v)

    want = _jax_once("grad through collectives", jax.vmap(jax.grad(loss(jnp, jax.lax)), axis_name="i"), jnp.asarray(x))
    got = ax.vmap(ax.grad(loss(ax, ax)), axis_name="i")(ax.asarray(x))
    np.testing.assert_allclose(to_numpy(got), np.asarray(want), rtol=1e-12)
    if executor != "jax":
        got = ax.pmap(ax.grad(loss(ax, ax)), "i")(ax.asarray(x))
        np.testing.assert_allclose(to_numpy(got), np.asarray(want), rtol=1e-12)
    if executor == "jax":
        return  # a pmap at the top level needs 4 jax devices: test_pmap_on_jax_cpu_devices
    # grad of a pmapped function (pmap under a transform is vmap over the named axis)
    f = lambda v: ax.sum(ax.pmap(lambda u: u * ax.psum(u, "i"), "i")(v))  # noqa: E731
    fj = lambda v: jnp.sum(jax.vmap(lambda u: u * jax.lax.psum(u, "i"), axis_name="i")(v))  # noqa: E731
    np.testing.assert_allclose(to_numpy(ax.grad(f)(ax.asarray(x))),
                               _jax_once("grad of pmap", jax.grad(fj), jnp.asarray(x)), rtol=1e-12)
    ax.check_grads(f, (ax.asarray(x),), order=2)


def test_pmax_derivative_goes_to_the_maximum(executor):
    x = ax.asarray([1.0, 5.0, 5.0, 2.0])
    g = ax.vmap(ax.grad(lambda v: ax.pmax(v * 2.0, "i")), axis_name="i")(x)
    # the maximum is shared by members 1 and 2; each member's cotangent is 1, psum-ed (JAX's transpose)
    np.testing.assert_allclose(to_numpy(g), [0.0, 4.0, 4.0, 0.0])
    g = ax.vmap(ax.grad(lambda v: ax.pmin(v, "i")), axis_name="i")(x)
    np.testing.assert_allclose(to_numpy(g), [4.0, 0.0, 0.0, 0.0])


def test_nested_axis_names(executor):
    x = np.arange(24.0).reshape(2, 3, 4)
    f = lambda v: ax.psum(v, "a") + 10 * ax.psum(v, "b") + 100 * ax.axis_index("a")  # noqa: E731
    fj = lambda v: jax.lax.psum(v, "a") + 10 * jax.lax.psum(v, "b") + 100 * jax.lax.axis_index("a")  # noqa: E731
    got = ax.vmap(ax.vmap(f, axis_name="b"), axis_name="a")(ax.asarray(x))
    want = _jax_once("nested axis names", jax.vmap(jax.vmap(fj, axis_name="b"), axis_name="a"), jnp.asarray(x))
    np.testing.assert_allclose(to_numpy(got), np.asarray(want))
    got = ax.vmap(ax.vmap(lambda v: ax.psum(v, ("a", "b")), axis_name="b"), axis_name="a")(ax.asarray(x))
    np.testing.assert_allclose(to_numpy(got), np.broadcast_to(x.sum(axis=(0, 1)), x.shape))


def test_errors(executor):
    x = ax.asarray(np.ones((2, 3)))
    with pytest.raises(NameError, match="unbound axis name 'j'"):
        ax.vmap(lambda v: ax.psum(v, "j"), axis_name="i")(x)
    with pytest.raises(NameError, match="psum"):
        ax.psum(x, "i")
    if executor == "jax" and len(jax.devices()) < 2:
        with pytest.raises(ValueError, match="xla_force_host_platform_device_count"):
            ax.pmap(lambda v: v, "i")(x)
    if executor != "jax":
        with pytest.raises(NotImplementedError, match="cond"):
            ax.pmap(lambda v: ax.cond(ax.sum(v) > 0, lambda u: ax.psum(u, "i"), lambda u: u, v), "i")(x)


def test_device_count():
    assert ax.device_count("numpy") == 1
    assert ax.local_device_count("jax") == len(jax.local_devices())


# -- jax over simulated CPU devices (4 members on 4 of the 8 devices of the sharding tests' shared child) --

_JAX_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    sys.path.insert(0, sys.argv[1])
    import arrayx as ax, jax, jax.numpy as jnp
    x64 = jax.config.jax_enable_x64  # the shared child's, given back at the end
    from tests.transforms.test_pmap import collectives
    jax.config.update("jax_enable_x64", True)  # this program's JAX in 64 bits, as the module's peer
    n = jax.local_device_count()
    assert n >= 4, jax.devices()
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(4, 3, 2)), rng.normal(size=(3, 2))
    with ax.use_executor("jax"):
        assert ax.device_count() == n
        got = ax.pmap(collectives(ax, ax), "i", in_axes=(0, None))(ax.asarray(x), ax.asarray(y))
        want = jax.pmap(collectives(jnp, jax.lax), "i", in_axes=(0, None))(jnp.asarray(x), jnp.asarray(y))
        devices = len(got["psum"]._buf.devices())
        loss = lambda lib, lax: (lambda v: lib.sum(lax.psum(v ** 2, "i") * lib.sin(v)))
        g = ax.pmap(ax.grad(loss(ax, ax)), "i")(ax.asarray(x))
        gj = jax.pmap(jax.grad(loss(jnp, jax.lax)), "i")(jnp.asarray(x))
        h = ax.grad(lambda v: ax.sum(ax.pmap(lambda u: u * ax.psum(u, "i"), "i")(v)))(ax.asarray(x))
        hj = jax.grad(lambda v: jnp.sum(jax.pmap(lambda u: u * jax.lax.psum(u, "i"), "i")(v)))(jnp.asarray(x))
        jitted_inside = ax.pmap(ax.jit(lambda v: ax.psum(v, "i") * 2.0), "i")(ax.asarray(x))
        try:
            ax.pmap(lambda v: v, "i")(ax.asarray(np.ones((n + 1, 2))))
            too_many = "no error"
        except ValueError as e:
            too_many = str(e)
    out = {k: float(np.max(np.abs(np.asarray(got[k]) - np.asarray(want[k])))) for k in want}
    out["dtypes"] = all(np.asarray(got[k]).dtype == np.asarray(want[k]).dtype for k in want)
    out["grad"] = float(np.max(np.abs(np.asarray(g) - np.asarray(gj))))
    out["grad_of_pmap"] = float(np.max(np.abs(np.asarray(h) - np.asarray(hj))))
    out["jit_inside"] = float(np.max(np.abs(np.asarray(jitted_inside) - 2 * x.sum(axis=0))))
    out["devices"] = devices
    out["count"] = n
    out["too_many"] = too_many
    jax.config.update("jax_enable_x64", x64)
    print(json.dumps(out))
""")


def test_pmap_on_jax_cpu_devices():
    """4 members on 4 of the 8 host devices of the child the sharding tests share (one process for all
    of its programs: JAX and arrayx imported once), n + 1 members refused on n devices."""
    if not base.get("jax").available():
        pytest.skip("executor 'jax' unavailable")
    out = json_from_eight_jax_devices(_JAX_SCRIPT, argv=(REPO,))
    assert out.pop("devices") == 4  # the result is sharded over the 4 devices of its members
    assert out.pop("dtypes") is True
    n = out.pop("count")
    assert n == 8 and f"{n + 1} members but {n} device(s)" in out.pop("too_many")
    for k, err in out.items():
        assert err < 1e-12, (k, err)


# -- dask on a LocalCluster with 2 workers ---------------------------------------------------------------


@contextlib.contextmanager
def _two_workers():
    """The dask executor on a cluster of 2 in-process workers, one thread each: (cluster, client)."""
    distributed = pytest.importorskip("distributed")
    from arrayx.executors import dask as dask_executor

    if not ax.executors.get("dask").available():
        pytest.skip("dask executor unavailable")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        client = dask_executor.connect(cluster)
        try:
            yield cluster, client
        finally:
            dask_executor.disconnect()


def test_pmap_on_a_dask_cluster_runs_one_task_per_worker(monkeypatch):
    # the task runner (a cluster of worker processes takes it; here forced on an in-process one)
    distributed = pytest.importorskip("distributed")
    from arrayx.transforms import pmap_dask

    monkeypatch.setattr(pmap_dask, "RUNNER_ACTOR", False)
    x, y = _inputs(3)
    with _two_workers() as (cluster, client):
        assert ax.device_count("dask") == 2
        with ax.use_executor("dask"):
            f = ax.pmap(lambda v, w: (ax.psum(ax.sin(v) * w, "i"), ax.all_gather(v + 1.0, "i")), "i",
                        in_axes=(0, None))
            with distributed.get_task_stream(client=client) as stream:
                s, g = f(ax.asarray(x), ax.asarray(y))
                s, g = to_numpy(s), to_numpy(g)
        workers = set(cluster.scheduler.workers)
    np.testing.assert_allclose(s, np.broadcast_to((np.sin(x) * y).sum(axis=0), x.shape), rtol=1e-12)
    np.testing.assert_allclose(g, np.broadcast_to(x + 1.0, (4,) + x.shape), rtol=1e-12)
    keys = [str(t["key"]) for t in stream.data]
    stage_tasks = [t for t in stream.data if "pmap-stage0" in str(t["key"])]
    # the 4 members in 2 groups, one per worker: one task per group for the one compute segment, each
    # group on its own worker; the psum and the all_gather are combined when a result's chunk is read
    # (each chunk from both groups' values): no other task
    assert len(stage_tasks) == 2, keys
    assert {t["worker"] for t in stage_tasks} == workers
    assert not [k for k in keys if "pmap" in k and "stage0" not in k and "pmap-out" not in k], keys


def _train(lib, steps, n_dev=8):
    """JAX's pmap tutorial's data-parallel linear regression: a gradient step with pmean, on ``lib``."""
    def loss_fn(params, xs, ys):
        w, b = params
        return ax.mean((w * xs + b - ys) ** 2)

    def update(params, xs, ys):
        loss, grads = ax.value_and_grad(loss_fn)(params, xs, ys)
        grads, loss = ax.pmean(grads, axis_name="d"), ax.pmean(loss, axis_name="d")
        return tuple(p - g * 0.005 for p, g in zip(params, grads)), loss

    rng = np.random.default_rng(0)
    xs = rng.normal(size=(16 * n_dev, 1))
    ys = xs * 3 - 1 + 0.5 * rng.normal(size=xs.shape)
    with ax.use_executor(lib):
        step = ax.pmap(update, axis_name="d")
        params = (ax.asarray(np.full(n_dev, 0.3)), ax.asarray(np.full(n_dev, -0.2)))
        xsp, ysp = ax.asarray(xs.reshape(n_dev, -1, 1)), ax.asarray(ys.reshape(n_dev, -1, 1))
        losses, bufs = [], []
        for i in range(steps):
            params, loss = step(params, xsp, ysp)
            bufs.append(params[0]._buf)
            if i % 2 == 0:
                losses.append(float(loss[0]))
        return [to_numpy(p) for p in params], losses, bufs


def test_pmap_training_loop_on_a_dask_cluster_keeps_parameters_on_the_workers(monkeypatch):
    # issue #42 point 2, the task runner: one graph per step, submitted at once; the per-device
    # parameters are futures held on the workers (the next step reads them there, a read computes
    # nothing again); with one thread per worker a step no longer computes on the cluster from
    # inside a task (it waited for ever)
    distributed = pytest.importorskip("distributed")
    from arrayx.transforms import pmap_dask
    from arrayx.transforms.pmap_dask import held_futures

    monkeypatch.setattr(pmap_dask, "RUNNER_ACTOR", False)
    want_params, want_losses, _ = _train("numpy", 6)
    with _two_workers() as (cluster, client):
        got_params, got_losses, bufs = _train("dask", 6)
        workers = set(cluster.scheduler.workers)
        futures = held_futures(bufs[-1])
        client.gather(futures)
        held = client.who_has(futures)
    for g, w in zip(got_params, want_params):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-12)
    for b in bufs:  # each step's result is one task per chunk reading its step's held values (one
        # future per group, on its worker, and the scattered code): no task of an earlier step in its graph
        graph = dict(b.__dask_graph__())
        assert set(graph) == set(b.__dask_keys__()), list(graph)[:5]
        kept = held_futures(b)
        assert all(isinstance(f, distributed.Future) for f in kept) and len(kept) <= 3, kept
        assert all(set(t.dependencies) <= {f.key for f in kept} for t in graph.values())
    # 8 members in 2 chunks of 4, one per worker: the last step's values held one group per worker
    assert bufs[-1].chunks == ((4, 4),)
    groups = {k: ws for k, ws in held.items() if "pmap-stage" in str(k)}
    assert len(groups) == 2 and {w for ws in groups.values() for w in ws} == workers, held


def test_pmap_training_loop_on_an_in_process_cluster_keeps_parameters_in_the_runner():
    # issue #42 point 2, the runner actor (in-process workers): each step's results are one task per
    # output reading the runner's values of that step, nothing of an earlier step; the bits of numpy
    from arrayx.transforms import pmap_dask_actor

    want_params, want_losses, _ = _train("numpy", 6)
    with _two_workers() as (cluster, client):
        got_params, got_losses, bufs = _train("dask", 6)
        entry = pmap_dask_actor.runner_for(client)
        workers = set(cluster.scheduler.workers)
    for g, w in zip(got_params, want_params):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(got_losses, want_losses)
    assert entry is not None and entry.worker in workers
    for b in bufs:
        graph = dict(b.__dask_graph__())
        assert set(graph) == set(b.__dask_keys__()) and len(graph) == 1, list(graph)[:5]
        held, k = b._arrayx_pmap_held
        assert held.runner_id == entry.runner_id and k == 0


def test_pmap_training_loop_on_dask_without_a_cluster_matches_numpy():
    if not ax.executors.get("dask").available():
        pytest.skip("dask executor unavailable")
    want_params, want_losses, _ = _train("numpy", 4)
    got_params, got_losses, bufs = _train("dask", 4)
    for g, w in zip(got_params, want_params):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-12)
    assert len(dict(bufs[-1].__dask_graph__())) == bufs[-1].npartitions  # computed: no graph of earlier steps
