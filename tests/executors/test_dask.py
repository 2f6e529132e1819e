"""The Dask executor: lazy dask.array buffers, schedulers and clusters, chunks, unknown shapes,
implicit computes, the gaps it fills, and every function of the standard compared with NumPy."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import arrayx as xp
from arrayx.core import executor as base
from tests.conftest import assert_same

EX = base.get("dask")
pytestmark = pytest.mark.skipif(not EX.available(), reason=f"executor 'dask' unavailable: {EX.unavailable_reason}")

if EX.available():
    from arrayx.executors import dask as xd


@pytest.fixture(autouse=True)
def on_dask():
    """Unit tests compute on the synchronous scheduler; settings are restored afterwards."""
    saved = (xd.get_scheduler(), xd.get_chunks(), xd.base._shape_policy)
    xd.set_scheduler("sync")
    try:
        with xp.use_executor("dask"):
            yield
    finally:
        xd.set_scheduler(saved[0])
        xd.set_chunks(saved[1])
        xd.set_unknown_shapes(saved[2])


class ComputeCounter:
    """Counts the graphs Dask executes (a dask.callbacks.Callback)."""

    def __enter__(self):
        from dask.callbacks import Callback

        self.count = 0
        counter = self

        class _Count(Callback):
            def _start(self, dsk):
                counter.count += 1

        self._cb = _Count()
        self._cb.__enter__()
        return self

    def __exit__(self, *exc):
        self._cb.__exit__(*exc)


def test_buffers_are_lazy_dask_arrays():
    import dask.array as da

    with ComputeCounter() as c:
        x = xp.asarray(np.arange(12.0).reshape(3, 4))
        y = xp.sum(xp.sin(x) * 2 + x, axis=0)
        z = xp.linalg.inv(xp.eye(3) + 1.0)
        assert isinstance(y._buf, da.Array) and isinstance(z._buf, da.Array)
        assert c.count == 0  # nothing ran yet
        assert_same(y, np.sum(np.sin(np.arange(12.0).reshape(3, 4)) * 2 + np.arange(12.0).reshape(3, 4), axis=0))
        assert c.count >= 1


def test_implicit_computes_are_the_documented_ones():
    x = xp.asarray([1.5, 2.5])
    s = xp.sum(x)
    for convert in (bool, float, int, complex, repr, np.asarray):
        with ComputeCounter() as c:
            convert(s)
        assert c.count == 1, convert
    with ComputeCounter() as c:
        h = np.from_dlpack(x)  # DLPack is served from the computed host array
    assert c.count == 1 and h.tolist() == [1.5, 2.5]
    assert float(s) == 4.0 and bool(s) and int(s) == 4


def test_unknown_shapes_are_reported_as_none_and_resolvable():
    xd.set_unknown_shapes("lazy")
    x = xp.asarray([3.0, -1.0, 2.0, 5.0, -4.0])
    m = x[x > 0]
    assert m.shape == (None,) and m.size is None
    assert xp.unique_values(xp.asarray([1, 1, 2])).shape == (None,)
    assert xp.nonzero(x > 0)[0].shape == (None,)
    assert_same(m, np.array([3.0, 2.0, 5.0]))  # values compute fine while the shape is unknown
    assert xd.resolve_shapes(m) is m and m.shape == (3,) and m.size == 3
    v, inv = xp.unique_inverse(xp.asarray([3, 1, 3, 2]))  # gathers from unknown sizes resolve them
    assert_same(xp.take(v, inv), np.array([3, 1, 3, 2]))
    assert_same(v[inv], np.array([3, 1, 3, 2]))
    u = xp.unique_all(xp.asarray([5.0, 4.0, 5.0]))
    assert_same(xp.take(xp.asarray([5.0, 4.0, 5.0]), u.indices), np.array([4.0, 5.0]))
    xd.set_unknown_shapes("compute")
    u = xp.unique_counts(xp.asarray([4, 4, 1, 4]))
    assert u.values.shape == (2,) and u.counts.shape == (2,)
    assert_same(u.counts, np.array([1, 3]))
    with pytest.raises(ValueError, match="policy"):
        xd.set_unknown_shapes("sometimes")


def test_unique_counts_every_nan_and_takes_unknown_sizes():
    xd.set_chunks(2)
    a = np.array([[np.nan, 1.0, np.nan], [1.0, -0.0, 0.0]])
    x = xp.asarray(a)
    assert_same(xp.unique_values(x), np.array([-0.0, 1.0, np.nan, np.nan]))
    c = xp.unique_counts(x)
    assert_same(c.counts, np.array([2, 2, 1, 1]))
    assert_same(xp.unique_inverse(x).inverse_indices, np.array([[2, 1, 3], [1, 0, 0]]))
    assert_same(xp.unique_all(x).indices, np.array([4, 1, 0, 2]))
    m = x[x > 0]  # unknown chunk sizes
    assert_same(xp.unique_counts(m).counts, np.array([2]))
    assert_same(xp.unique_values(m), np.array([1.0]))


def test_chunks_are_configurable():
    xd.set_chunks(4)
    assert xp.zeros(10)._buf.chunks == ((4, 4, 2),)
    assert xp.arange(10)._buf.chunks == ((4, 4, 2),)
    assert xp.asarray(np.ones((6, 6)))._buf.chunks == ((4, 2), (4, 2))
    assert xp.full((5,), 2.0)._buf.chunks == ((4, 1),)
    xd.set_chunks("16B")  # two float64 per chunk
    assert xp.ones(5)._buf.chunks == ((2, 2, 1),)
    xd.set_chunks("auto")
    assert xp.ones(5)._buf.chunks == ((5,),)
    x = xp.asarray(np.arange(10.0))
    xd.set_chunks(3)
    assert_same(xp.sum(xp.asarray(np.arange(10.0)) * x), np.array(285.0))  # mixed chunkings meet fine
    with pytest.raises(ValueError, match="set_chunks"):
        xd.set_chunks(0)


def test_a_gather_with_an_nd_index_is_a_few_chunks():
    """The result of a 2-D index into a 1-D array is chunked like the index, not a chunk per row
    (issue 31: SciPy's bootstrap, ``sample[..., i]`` with i of shape (9999, 100), made 30,000 tasks
    that every later read ran again; the values on every executor: tests/api/test_indexing.py)."""
    xd.set_chunks("auto")
    sample = xp.arange(100, dtype=xp.float64)
    i = xp.asarray(np.random.default_rng(1).integers(0, 100, (9999, 100)))
    out = sample[..., i]
    assert out._buf.npartitions <= 4
    want = np.arange(100.0)[np.asarray(i)]
    assert_same(xp.mean(out, axis=-1), np.mean(want, axis=-1))


def test_schedulers():
    x = xp.asarray(np.arange(100.0))
    for name in ("sync", "threads"):
        xd.set_scheduler(name)
        assert float(xp.sum(x)) == 4950.0
    xd.set_scheduler(None)
    assert float(xp.sum(x)) == 4950.0
    with pytest.raises(ValueError, match="connect"):
        xd.set_scheduler("tcp://nowhere:1")


def test_connect_runs_on_a_distributed_cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        client = xd.connect(cluster)
        try:
            assert xd.get_scheduler() is client
            x = xp.asarray(np.arange(1000.0))
            before = client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.transition_counter)
            assert float(xp.mean(x * 2)) == 999.0
            # task groups are forgotten once their results are released; the transition count is not
            after = client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.transition_counter)
            assert after > before
        finally:
            xd.disconnect()
        assert xd.get_scheduler() is None
        client = xd.connect(cluster.scheduler_address)  # by address, as for a remote cluster
        try:
            assert_same(xp.cumulative_sum(xp.asarray([1, 2, 3])), np.array([1, 3, 6]))
        finally:
            xd.disconnect()
        assert client.status == "closed"  # the Client connect() made is closed by disconnect()


def test_environment_selects_the_scheduler():
    code = (
        "import arrayx, arrayx.executors.dask as xd\n"
        "x = arrayx.asarray([1, 2, 3], device='dask')\n"
        "assert xd.get_scheduler() == 'sync', xd.get_scheduler()\n"
        "print(int(arrayx.sum(x)))\n"
    )
    env = dict(os.environ, ARRAYX_DASK_SCHEDULER="sync", PYTHONPATH=os.getcwd())
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.strip() == "6", out.stderr


def test_setitem_and_at_updates():
    x = xp.asarray(np.arange(12).reshape(3, 4))
    x[0, 1] = 100
    x[x > 9] = -1
    x[:, 0] += 5
    x[xp.asarray([2, 0]), 1] = 7
    assert_same(x, np.array([[5, 7, 2, 3], [9, 5, 6, 7], [13, 7, -1, -1]]))
    v = xp.zeros(4)
    idx = xp.asarray([0, 0, 3, 0])
    assert_same(v.at[idx].add(1.0), np.array([3.0, 0.0, 0.0, 1.0]))  # repeated indices accumulate
    assert_same(v.at[idx].max(2.0), np.array([2.0, 0.0, 0.0, 2.0]))
    w = xp.asarray([1.0, -2.0, 3.0])
    assert_same(w.at[w < 0].multiply(10.0), np.array([1.0, -20.0, 3.0]))
    assert_same(w, np.array([1.0, -2.0, 3.0]))


def test_indexing_cases_dask_refuses_on_its_own():
    a = np.arange(24).reshape(4, 6)
    x = xp.asarray(a)
    assert_same(x[True], a[True])  # Dask reads True as the index 1
    assert_same(x[False], a[False])
    assert_same(x[None, False, 1], a[None, False, 1])
    i, j = np.array([[0, 3], [2, 2]]), np.array([1, 5])
    assert_same(x[xp.asarray(i), xp.asarray(j)], a[i, j])  # several integer arrays: vectorised
    assert_same(x[xp.asarray(i)], a[i])  # an n-D integer array
    assert_same(x[:, xp.asarray(i)], a[:, i])
    assert_same(x[xp.asarray(2), xp.asarray(3)], a[2, 3])
    assert_same(x[0, xp.asarray([1, 4])], a[0, [1, 4]])


@pytest.mark.parametrize("x_shape,mask_shape,lead", [
    ((2, 3, 4), (2, 3), ()),  # a mask over leading axes (Dask takes 1-D or whole-array masks only)
    ((2, 3, 4), (3, 4), (slice(None),)),
    ((2, 3, 4), (3, 4), (Ellipsis,)),
    ((2, 3), (), ()),  # 0-d masks add an axis of length 1 or 0
    ((2, 3), (), (slice(1, 2),)),
    ((2, 3), (0,), ()),  # an empty mask selects nothing from any axis size
    ((0, 3), (0, 3), ()),
    ((4,), (4,), ()),
])
def test_boolean_masks(x_shape, mask_shape, lead):
    xd.set_unknown_shapes("compute")
    a = np.arange(int(np.prod(x_shape))).reshape(x_shape)
    for seed in (0, 1):
        m = np.random.default_rng(seed).random(mask_shape) > 0.4
        got = xp.asarray(a)[lead + (xp.asarray(m),)]
        assert_same(got, a[lead + (m,)])
        assert got.shape == a[lead + (m,)].shape
    with pytest.raises(IndexError):
        xp.asarray(np.ones(3))[xp.asarray(np.ones(2, dtype=bool))]


def test_filled_gaps():
    a = np.random.default_rng(0).uniform(size=(2, 4, 4)) + 4 * np.eye(4)
    x = xp.asarray(a)
    assert_same(xp.take_along_axis(x, xp.argsort(x, axis=1), axis=1), np.take_along_axis(a, np.argsort(a, axis=1), axis=1))
    assert xp.broadcast_shapes((2, 1), (3,)) == (2, 3)
    w, v = xp.linalg.eigh(x + xp.matrix_transpose(x))
    np.testing.assert_allclose(np.asarray(w), np.linalg.eigvalsh(a + np.swapaxes(a, -1, -2)), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(xp.linalg.det(x)), np.linalg.det(a), rtol=1e-10)
    q, r = xp.linalg.qr(x, mode="complete")
    np.testing.assert_allclose(np.asarray(q @ r), a, atol=1e-12)
    u, s, vh = xp.linalg.svd(x[:, :3, :], full_matrices=True)
    assert u.shape == (2, 3, 3) and s.shape == (2, 3) and vh.shape == (2, 4, 4)
    assert x.device == xp.__array_namespace_info__().devices()[[d.executor for d in xp.__array_namespace_info__().devices()].index("dask")]
    assert x.to_device(x.device) is not None
    assert xp.linalg.inv(xp.zeros((0, 0))).shape == (0, 0)


def test_searchsorted_and_index_dtypes():
    s = xp.asarray([1.0, 2.0, 3.0])
    out = xp.searchsorted(s, xp.asarray([2.5, 0.0]))
    assert out.dtype == xp.int64
    assert_same(out, np.array([2, 0]))
    assert xp.argmax(s).dtype == xp.int64 and xp.nonzero(s)[0].dtype == xp.int64


def test_import_does_not_import_dask():
    code = "import sys, arrayx; assert 'dask' not in sys.modules, 'dask imported eagerly'; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr


def test_data_dependent_sizes_are_computed_when_read_and_not_before():
    """The default policy: lazy until a shape is read, then computed once, in place."""
    assert xd.base._shape_policy == "compute"
    x = xp.asarray(np.array([3.0, -1.0, 2.0, 5.0, -4.0]))
    with ComputeCounter() as c:
        m = x[x > 0]
        s = xp.sum(xp.sin(m) ** 2 + 1.0)  # nothing here needs the size
        assert c.count == 0
        assert m.shape == (3,) and c.count == 1  # reading it computes it
        assert len(m) == 3 and m.size == 3 and c.count == 1  # once
    assert float(s) == pytest.approx(float(np.sum(np.sin([3.0, 2.0, 5.0]) ** 2 + 1.0)))
    u = xp.unique_values(xp.asarray([4, 1, 4, 2]))
    assert u.shape[0] > 2 and u.shape == (3,)  # what clients do with it


@pytest.mark.parametrize("policy", ["compute", "lazy"])
def test_masked_arrays_under_grad_len_and_reshape(policy):
    """They work (compute), or fail with one error naming resolve_shapes (lazy)."""
    xd.set_unknown_shapes(policy)
    x = xp.asarray([1.0, -2.0, 3.0])
    r = xp.reshape(x[x > 0], (1, -1))  # reshape resolves the sizes it needs under either policy
    assert_same(r, np.array([[1.0, 3.0]]))
    if policy == "compute":
        assert_same(xp.grad(lambda x: xp.sum(x[x > 0] ** 2))(x), np.array([2.0, 0.0, 6.0]))
        assert len(x[x > 0]) == 2
        return
    with pytest.raises(TypeError, match=r"arrayx\.executors\.dask\.resolve_shapes"):
        len(x[x > 0])
    with pytest.raises(TypeError, match=r"arrayx\.executors\.dask\.resolve_shapes"):
        xp.grad(lambda x: xp.sum(x[x > 0] ** 2))(x)
    m = x[x > 0]
    assert len(xd.resolve_shapes(m)) == 2


def test_masked_update_with_an_array_of_values():
    x = xp.asarray([1.0, -2.0, 3.0, -4.0])
    assert_same(x.at[x < 0].add(xp.asarray([10.0, 20.0])), np.array([1.0, 8.0, 3.0, 16.0]))
    assert_same(x.at[x < 0].multiply(2.0), np.array([1.0, -4.0, 3.0, -8.0]))


class TaskCounter:
    """Counts the tasks Dask runs and the bytes of their results."""

    def __enter__(self):
        from dask.callbacks import Callback

        counter = self
        self.tasks, self.nbytes = 0, 0

        class _Count(Callback):
            def _posttask(self, key, result, dsk, state, worker_id):
                counter.tasks += 1
                counter.nbytes += getattr(result, "nbytes", 0)

        self._cb = _Count()
        self._cb.__enter__()
        return self

    def __exit__(self, *exc):
        self._cb.__exit__(*exc)


def test_repr_of_a_large_lazy_array_computes_only_what_it_shows():
    xd.set_chunks(2**22)
    x = xp.arange(2**28, dtype=xp.float64) * 2.0  # 2 GiB if computed, in 64 chunks
    with TaskCounter() as c:
        text = repr(x)
    assert text == ("Array([0.00000000e+00, 2.00000000e+00, 4.00000000e+00, ..., 5.36870906e+08,\n"
                    "       5.36870908e+08, 5.36870910e+08], dtype=float64, device=dask:cpu)")
    assert c.tasks < 16 and c.nbytes < 2**10  # three edge blocks of 64, a few elements moved
    xd.set_chunks(100)
    m = xp.reshape(xp.arange(10**6), (1000, 1000)) / 7  # 100 x 100 blocks: the corners touch 9
    with TaskCounter() as c:
        text = repr(m)
    assert c.tasks < 60
    with xp.use_executor("numpy"):  # the same text as the whole array gives
        assert text.replace("dask:cpu", "numpy:cpu") == repr(xp.reshape(xp.arange(10**6), (1000, 1000)) / 7)


def test_a_bad_scheduler_address_fails_fast_naming_the_variable():
    code = (
        "import arrayx\n"
        "try:\n"
        "    arrayx.asarray([1, 2], device='dask')\n"
        "except RuntimeError as e:\n"
        "    print(e)\n"
    )
    env = dict(os.environ, ARRAYX_DASK_SCHEDULER="tcp://127.0.0.1:1", ARRAYX_DASK_CONNECT_TIMEOUT="1",
               PYTHONPATH=os.getcwd())
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    msg = out.stdout
    assert "ARRAYX_DASK_SCHEDULER='tcp://127.0.0.1:1'" in msg and "within 1 s" in msg, out.stderr
    assert "Install Dask" not in msg and "unset it" in msg


@pytest.mark.parametrize("make", [
    lambda s: xp.zeros(s), lambda s: xp.ones(s), lambda s: xp.empty(s), lambda s: xp.full(s, 2.0),
    lambda s: xp.asarray(np.zeros(s)), lambda s: xp.random.normal(xp.random.key(0), s),
    lambda s: xp.linalg.solve(xp.zeros(s[:-2] + (3, 3)), xp.zeros(s[:-2] + (3, 1))),
], ids=["zeros", "ones", "empty", "full", "asarray", "random.normal", "linalg.solve"])
def test_arrays_without_elements_of_any_shape_are_made(make):
    # Dask's automatic chunking divided by zero for such shapes (found by the official suite's test_solve)
    shape = (0, 20, 1, 1, 1, 1)
    out = make(shape)
    with xp.use_executor("numpy"):
        expected = make(shape)
    assert out.shape == expected.shape and out.dtype == expected.dtype
    assert np.asarray(out).shape == expected.shape
