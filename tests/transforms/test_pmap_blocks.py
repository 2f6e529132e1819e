"""``ppermute`` and ``psum_scatter`` inside ``pmap`` move only the blocks each member needs (issue #42
point 3), on every executor, with jax.pmap's bits.

- values: one program (two ppermutes, full and partial, three psum_scatters, tiled or not, along
  dimensions 0 and 1, one of a ppermute's result, and a gradient through both; only exact
  elementwise operations between them, none XLA could fuse into an FMA, so that the bits are the
  collectives') on 8 members of
  float32 data, against ``jax.pmap`` of the same program in a child process with 8 forced host
  devices (XLA reads its flags once), where arrayx's jax executor must give the same bits and call
  ``jax.lax.ppermute`` / ``jax.lax.psum_scatter`` themselves (``all_gather`` and ``psum`` are
  replaced by functions that raise); numpy, numba and dask (without a cluster, and on a 2-worker
  cluster through each dask runner) must give the same bits as well;
- traffic: on numpy / numba ``record_transfers`` sees one block per pair of a ppermute and a
  ``1/n``-th of each other member's value per psum_scatter member; on dask's task runner the stage
  that reads the collectives depends on its own group's stage and on small *cut* tasks of the other
  group only, and the cuts hold exactly the blocks that cross."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

import arrayx as ax
from arrayx.core import executor as base
from tests.sharding.conftest import json_from_eight_jax_devices
from tests.transforms.pmap_runners import RUNNERS, use_runner

ROOT = pathlib.Path(__file__).resolve().parents[2]
N = 8
PERM_CYCLE = [(k, (k + 3) % N) for k in range(N)]
PERM_PARTIAL = [(0, 3), (3, 5), (6, 1)]  # 3 <- 0 in one group of 4; 5 <- 3 and 1 <- 6 across the two


def program(lax, lib, grad):
    """One member's function (written once for jax and arrayx): x (8, 16) mapped, w (8, 16) not;
    ``grad`` None leaves the gradient out."""
    def loss(v, w):
        return lib.sum(lax.ppermute(v, "i", PERM_PARTIAL) * w) + \
            lib.sum(lax.psum_scatter(v * v, "i", scatter_dimension=1, tiled=True))

    def f(x, w):
        return [lax.ppermute(x, "i", PERM_CYCLE),
                lax.ppermute(x * w, "i", PERM_PARTIAL),
                lax.psum_scatter(x, "i", scatter_dimension=1, tiled=True),
                lax.psum_scatter(x[:, :8] * x[:, 8:], "i", scatter_dimension=1),
                lax.psum_scatter(lax.ppermute((x - w) * 2.0, "i", PERM_CYCLE), "i", scatter_dimension=0)] + \
            ([grad(loss)(x, w)] if grad is not None else [])

    return f


def inputs():
    rng = np.random.default_rng(42)
    return (rng.standard_normal((N, 8, 16), dtype=np.float32), rng.standard_normal((8, 16), dtype=np.float32))


def _encode(outs) -> list:
    return [[np.asarray(o).dtype.str, list(np.asarray(o).shape), np.asarray(o).tobytes().hex()] for o in outs]


def _decode(enc) -> list:
    return [np.frombuffer(bytes.fromhex(h), dtype=np.dtype(d)).reshape(s) for d, s, h in enc]


_JAX = """
import json, sys
sys.path.insert(0, sys.argv[1])
import numpy as np, jax, jax.numpy as jnp
import arrayx as ax
from tests.transforms.test_pmap_blocks import program, inputs, _encode
x, w = inputs()
ref = jax.pmap(program(jax.lax, jnp, jax.grad), "i", in_axes=(0, None))(jnp.asarray(x), jnp.asarray(w))
calls = {"ppermute": 0, "psum_scatter": 0}
real = {k: getattr(jax.lax, k) for k in calls}
def counted(name):
    def call(*a, **k):
        calls[name] += 1
        return real[name](*a, **k)
    return call
def refused(name):
    def call(*a, **k):
        raise AssertionError(f"jax.lax.{name} called")
    return call
saved = {k: getattr(jax.lax, k) for k in ("ppermute", "psum_scatter", "all_gather", "psum")}
try:  # (the child is shared: jax.lax is given back whatever happens)
    for k in calls:
        setattr(jax.lax, k, counted(k))
    jax.lax.all_gather, jax.lax.psum = refused("all_gather"), refused("psum")
    with ax.use_executor("jax"):  # without the gradient (its transpose of psum_scatter is an all_gather)
        got = ax.pmap(program(ax.lax, ax, None), "i", in_axes=(0, None))(ax.asarray(x), ax.asarray(w))
        got = [np.asarray(o) for o in got]
    jax.lax.all_gather, jax.lax.psum = saved["all_gather"], saved["psum"]
    with ax.use_executor("jax"):
        full = [np.asarray(o) for o in ax.pmap(program(ax.lax, ax, ax.grad), "i", in_axes=(0, None))(
            ax.asarray(x), ax.asarray(w))]
finally:
    for k, v in saved.items():
        setattr(jax.lax, k, v)
print(json.dumps({"jax-itself": _encode(ref), "jax-no-gather": _encode(got), "jax": _encode(full), "calls": calls}))
"""


@pytest.fixture(scope="module")
def jax_pmap_ref():
    if not base.get("jax").available():
        pytest.skip("executor 'jax' unavailable")
    return json_from_eight_jax_devices(_JAX, argv=(ROOT,))  # the 8-device child the sharding tests share


def _assert_bits(got, want, who):
    assert len(got) == len(want), who
    for k, (g, w) in enumerate(zip(got, want)):
        g = np.asarray(g)
        assert g.dtype == w.dtype and g.shape == w.shape, (who, k, g.dtype, w.dtype, g.shape, w.shape)
        np.testing.assert_array_equal(g, w, err_msg=f"{who}: result {k}")


def _reference_values():
    """The program's results computed by hand with NumPy (left folds in member order)."""
    x, w = inputs()
    src = {d: s for s, d in PERM_CYCLE}
    part = {d: s for s, d in PERM_PARTIAL}
    cyc = np.stack([x[src[m]] for m in range(N)])
    par = np.stack([x[part[m]] * w if m in part else np.zeros_like(x[0]) for m in range(N)])
    return cyc, par


def test_jax_executor_is_jax_pmap(jax_pmap_ref):
    ref = _decode(jax_pmap_ref["jax-itself"])
    _assert_bits(_decode(jax_pmap_ref["jax"]), ref, "jax executor")
    _assert_bits(_decode(jax_pmap_ref["jax-no-gather"]), ref[:5], "jax executor without all_gather/psum")
    assert jax_pmap_ref["calls"]["ppermute"] >= 3 and jax_pmap_ref["calls"]["psum_scatter"] >= 3
    cyc, par = _reference_values()
    np.testing.assert_array_equal(ref[0], cyc)
    np.testing.assert_array_equal(ref[1], par)


@pytest.mark.parametrize("ex", ["numpy", "numba", "dask"])
def test_pmap_blocks_match_jax_pmap_bits(ex, jax_pmap_ref):
    if not base.get(ex).available():
        pytest.skip(f"executor {ex!r} unavailable: {base.get(ex).unavailable_reason}")
    x, w = inputs()
    with ax.use_executor(ex):
        f = ax.pmap(program(ax.lax, ax, ax.grad), "i", in_axes=(0, None))
        got = [np.asarray(o) for o in f(ax.asarray(x), ax.asarray(w))]
        again = [np.asarray(o) for o in f(ax.asarray(x), ax.asarray(w))]  # the cached member graph
    _assert_bits(got, _decode(jax_pmap_ref["jax-itself"]), ex)
    _assert_bits(again, got, f"{ex}, second call")


def _numpy_results():
    x, w = inputs()
    with ax.use_executor("numpy"):
        return [np.asarray(o) for o in ax.pmap(program(ax.lax, ax, ax.grad), "i", in_axes=(0, None))(
            ax.asarray(x), ax.asarray(w))]


@pytest.mark.parametrize("runner", RUNNERS)
def test_pmap_blocks_on_a_cluster_match_numpy_bits(runner, monkeypatch):
    distributed = pytest.importorskip("distributed")
    from arrayx.executors import dask as dask_executor
    if not base.get("dask").available():
        pytest.skip("dask executor unavailable")
    use_runner(monkeypatch, runner)
    want = _numpy_results()
    x, w = inputs()
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        dask_executor.connect(cluster)
        try:
            with ax.use_executor("dask"):
                f = ax.pmap(program(ax.lax, ax, ax.grad), "i", in_axes=(0, None))
                out = f(ax.asarray(x), ax.asarray(w))
                out2 = f(out[0], ax.asarray(w))  # a result fed back (held on the cluster)
                got = [np.asarray(o) for o in out]
                got2 = [np.asarray(o) for o in out2]
        finally:
            dask_executor.disconnect()
    _assert_bits(got, want, runner)
    with ax.use_executor("numpy"):
        want2 = [np.asarray(o) for o in ax.pmap(program(ax.lax, ax, ax.grad), "i", in_axes=(0, None))(
            ax.asarray(want[0]), ax.asarray(w))]
    _assert_bits(got2, want2, f"{runner}, fed back")


# -- what moves ----------------------------------------------------------------------------------------------


def _moves(v):
    return [ax.lax.ppermute(v, "i", PERM_PARTIAL), ax.lax.ppermute(v * 2.0, "i", PERM_CYCLE),
            ax.lax.psum_scatter(v, "i", scatter_dimension=1, tiled=True)]


@pytest.mark.parametrize("ex", ["numpy", "numba"])
def test_each_member_receives_only_its_blocks(ex):
    from arrayx.sharding import _collectives as C

    if not base.get(ex).available():
        pytest.skip(f"executor {ex!r} unavailable: {base.get(ex).unavailable_reason}")
    x, _ = inputs()
    block = x[0].nbytes  # 512 bytes
    with ax.use_executor(ex):
        with C.record_transfers() as t:
            got = [np.asarray(o) for o in ax.pmap(_moves, "i")(ax.asarray(x))]
        with C.record_transfers() as old:  # the earlier formulation: every member received every block
            ax.pmap(lambda v: [C.ppermute_gathered(v, ("i",), tuple(PERM_PARTIAL)),
                               C.psum_scatter_summed(v, ("i",), 1, True)], "i")(ax.asarray(x))
    by = t.by_collective()
    assert by == {"ppermute": 3 * block + N * block, "psum_scatter": N * (N - 1) * block // N}
    assert len([r for r in t.records if r[0] == "ppermute"]) == len(PERM_PARTIAL) + len(PERM_CYCLE)
    assert old.bytes == 2 * N * (N - 1) * block  # an all_gather and a psum of whole blocks
    cyc, _ = _reference_values()
    part = {d: s for s, d in PERM_PARTIAL}
    np.testing.assert_array_equal(got[0], np.stack([x[part[m]] if m in part else np.zeros_like(x[0])
                                                    for m in range(N)]))
    np.testing.assert_array_equal(got[1], 2.0 * cyc)
    want = []
    for m in range(N):  # member m: part m of every member's value, added in member order
        acc = x[0][:, 2 * m:2 * m + 2].copy()
        for k in range(1, N):
            acc = acc + x[k][:, 2 * m:2 * m + 2]
        want.append(acc)
    _assert_bits(got[2:], [np.stack(want)], ex)


def test_the_dask_task_runner_moves_only_the_blocks_that_cross(monkeypatch):
    distributed = pytest.importorskip("distributed")
    from arrayx.executors import dask as dask_executor
    from arrayx.transforms import pmap_dask

    if not base.get("dask").available():
        pytest.skip("dask executor unavailable")
    monkeypatch.setattr(pmap_dask, "RUNNER_ACTOR", False)
    crossed, plans = [], []
    cut, plan = pmap_dask._cut, pmap_dask._plan

    def recording_cut(src, vals, start, lo, k, n):
        out = cut(src, vals, start, lo, k, n)
        if start != lo:  # from one group to the other (own-group values are read in place)
            crossed.append((src[1], start, lo, sum(np.asarray(p).nbytes for v in out.values()
                                                  for p in (v if isinstance(v, list) else [v]))))
        return out

    def recording_plan(*a, **k):
        got = plan(*a, **k)
        plans.append((a[2], got))
        return got

    monkeypatch.setattr(pmap_dask, "_cut", recording_cut)
    monkeypatch.setattr(pmap_dask, "_plan", recording_plan)
    x, _ = inputs()
    block = x[0].nbytes
    with ax.use_executor("numpy"):
        want = [np.asarray(o) for o in ax.pmap(_moves, "i")(ax.asarray(x))]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        dask_executor.connect(cluster)
        try:
            with ax.use_executor("dask"):
                got = [np.asarray(o) for o in ax.pmap(_moves, "i")(ax.asarray(x))]
        finally:
            dask_executor.disconnect()
    _assert_bits(got, want, "dask tasks")
    sizes, p = plans[-1]
    assert sizes == (4, 4)
    # the stage that reads the collectives: its own group's stage and the other group's cuts only
    reader = p.deps[-1]
    for g, deps in enumerate(reader):
        assert not [d for d in deps if d[0] != pmap_dask._CUT and d[-1] != g], deps
        assert {d[2] for d in deps if d[0] == pmap_dask._CUT} == {1 - g}
    got_cross = sorted(crossed)
    # ppermute partial: 5 <- 3 and 1 <- 6 (one block each way); the cycle by 3: 3 blocks each way;
    # psum_scatter: each group's 4 members' parts (1/8 of a block) for the other group's 4 members
    assert got_cross == sorted([("ppermute", 0, 4, block), ("ppermute", 4, 0, block),
                                ("ppermute", 0, 4, 3 * block), ("ppermute", 4, 0, 3 * block),
                                ("psum_scatter", 0, 4, 16 * block // N), ("psum_scatter", 4, 0, 16 * block // N)])


def test_blocks_of_a_deferred_result_on_the_task_runner(monkeypatch):
    """A ppermute / psum_scatter of the result of a pmap whose last stage is deferred (a psum's
    stage, run inside the next call): the cut tasks run that stage where the result is held."""
    from arrayx.executors import dask as dask_executor
    from arrayx.transforms import pmap_dask

    if not base.get("dask").available():
        pytest.skip("dask executor unavailable")
    monkeypatch.setattr(pmap_dask, "RUNNER_ACTOR", False)

    def g(x):
        return x * ax.psum(x * 2.0, "i") + ax.astype(ax.axis_index("i"), x.dtype)

    def h(y):
        return ax.lax.ppermute(y, "i", PERM_CYCLE), ax.lax.psum_scatter(y, "i", scatter_dimension=0, tiled=True)

    x = np.random.default_rng(3).standard_normal((N, 16))

    def run(lib):
        with ax.use_executor(lib):
            pg, ph = ax.pmap(g, "i"), ax.pmap(h, "i")
            a = pg(ax.asarray(x))
            out = []
            for _ in range(3):
                p, s = ph(a)
                a = pg(p)
                out += [np.asarray(p), np.asarray(s), np.asarray(a)]
            return out

    want = run("numpy")
    with distributed_cluster() as cluster:
        dask_executor.connect(cluster)
        try:
            got = run("dask")
        finally:
            dask_executor.disconnect()
    _assert_bits(got, want, "dask tasks, deferred inputs")


def distributed_cluster():
    distributed = pytest.importorskip("distributed")
    return distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None)
