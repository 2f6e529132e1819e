"""pmap's dask runners: the task runner (arrayx/transforms/pmap_dask.py: stages between
collectives, the last stage deferred on a cluster and run inside the next call or when a result is
read) and, on a cluster whose workers are in this process, the runner actor
(arrayx/transforms/pmap_dask_actor.py: one message a call, no task); the same bits as the NumPy
executor, on a LocalCluster of 2 workers (each runner) and without a cluster."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as ax
from tests.conftest import to_numpy
from tests.transforms.pmap_runners import RUNNERS, use_runner


def _program(n, rng):
    """Two pmaps chained: three stages (two runs of collectives), a graph ending with collectives,
    a result fed back mapped and unmapped, axis_index, a constant; every result read twice."""
    def f(x, w):
        s = ax.psum(x * w, "i")  # run 1
        z = ax.sin(s) * x + ax.astype(ax.axis_index("i"), x.dtype)
        m = ax.pmax(z, "i")  # run 2
        return z - m * 0.5, ax.all_gather(ax.sum(z), "i")  # ends with a collective

    def g(a, b, c):
        return ax.pmean(a * ax.sum(c) + b[0], "i"), a + 1.0

    x = rng.normal(size=(n, 3))
    w = rng.normal(size=(3,))
    return f, g, x, w


def _run(lib, n, steps=3):
    f, g, x, w = _program(n, np.random.default_rng(n))
    out = []
    with ax.use_executor(lib):
        pf = ax.pmap(f, "i", in_axes=(0, None))
        pg = ax.pmap(g, "i", in_axes=(0, 0, None))
        a, b = pf(ax.asarray(x), ax.asarray(w))
        for _ in range(steps):
            a, b = pf(a, ax.asarray(w))  # a: the last call's (deferred) result, mapped
            c, d = pg(a, b, b[0])  # b[0]: a result's row, unmapped
            out += [to_numpy(a), to_numpy(b), to_numpy(c), to_numpy(d), to_numpy(a)]  # a read twice
            a = c
    return out


@pytest.fixture(params=RUNNERS)
def runner(request, monkeypatch):
    """Each dask runner on an in-process cluster: the runner actor (the default), the runner actor
    as it runs in a worker process (the call shipped as the task runner's compiled stages, inputs
    sent once by name, progress asked of the actor), or the tasks."""
    from arrayx.transforms import pmap_dask_actor

    use_runner(monkeypatch, request.param)
    monkeypatch.setattr(pmap_dask_actor, "_MAX_AHEAD", 2)  # the client waits for the runner often
    return request.param


@pytest.mark.parametrize("n", [4, 5])
def test_pmap_dask_stages_match_numpy_bits_on_a_cluster(n, runner):
    distributed = pytest.importorskip("distributed")
    from arrayx.executors import dask as dask_executor

    if not ax.executors.get("dask").available():
        pytest.skip("dask executor unavailable")
    want = _run("numpy", n)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        dask_executor.connect(cluster)
        try:
            got = _run("dask", n)
        finally:
            dask_executor.disconnect()
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and g.shape == w.shape, (k, g.dtype, w.dtype, g.shape, w.shape)
        np.testing.assert_array_equal(g, w, err_msg=f"result {k}")


@pytest.mark.parametrize("lib", ["numba", "dask"])
def test_pmap_stages_match_numpy_bits_without_a_cluster(lib):
    if not ax.executors.get(lib).available():
        pytest.skip(f"{lib} executor unavailable")
    want = _run("numpy", 4, steps=2)
    got = _run(lib, 4, steps=2)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and g.shape == w.shape, (k, g.dtype, w.dtype)
        np.testing.assert_array_equal(g, w, err_msg=f"result {k}")


def test_a_deferred_result_is_read_from_its_held_values_only(monkeypatch):
    # the tutorial's step on a cluster, by the task runner: one task per group a step; a result's
    # chunk reads its step's carries (one future per group) and the scattered code, nothing of an
    # earlier step
    distributed = pytest.importorskip("distributed")
    from arrayx.executors import dask as dask_executor
    from arrayx.transforms import pmap_dask
    from arrayx.transforms.pmap_dask import held_futures

    monkeypatch.setattr(pmap_dask, "RUNNER_ACTOR", False)

    if not ax.executors.get("dask").available():
        pytest.skip("dask executor unavailable")

    def step(p, x):
        g = ax.pmean(p * x, "d")
        return p - 0.1 * g

    x = np.linspace(0.0, 1.0, 8)
    with ax.use_executor("numpy"):
        p_np = ax.asarray(np.full(8, 0.5))
        s = ax.pmap(step, "d")
        for _ in range(5):
            p_np = s(p_np, ax.asarray(x))
        want = to_numpy(p_np)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        client = dask_executor.connect(cluster)
        try:
            with ax.use_executor("dask"):
                p = ax.asarray(np.full(8, 0.5))
                s = ax.pmap(step, "d")
                xs = ax.asarray(x)
                p = s(p, xs)  # the first call cuts and places the inputs
                to_numpy(p)  # and has run
                with distributed.get_task_stream(client=client) as stream:
                    for _ in range(4):
                        p = s(p, xs)
                    kept = held_futures(p._buf)
                    got = to_numpy(p)
        finally:
            dask_executor.disconnect()
    np.testing.assert_array_equal(got, want)
    steps = [t for t in stream.data if "pmap-stage" in str(t["key"])]
    assert len(steps) == 4 * 2, [str(t["key"]) for t in stream.data]  # 4 calls x 2 groups, nothing else
    assert len([f for f in kept if "pmap-stage" in str(f.key)]) == 2


def _edges():
    """An identity (a result that is an input), no collective (one stage, run now), only a collective
    with ``out_axes=None``, static arguments with axis_index, chained collectives; chained twice."""
    x = np.random.default_rng(1).normal(size=(6, 2))
    f1 = ax.pmap(lambda a: a, "i")
    f2 = ax.pmap(lambda a: ax.sin(a) * 2.0, "i")
    f3 = ax.pmap(lambda a: ax.psum(a, "i"), "i", out_axes=None)
    f4 = ax.pmap(lambda a, k: (ax.pmean(a * k, "i"), ax.axis_index("i")), "i", static_broadcasted_argnums=1)
    f5 = ax.pmap(lambda a: (ax.psum(ax.psum(a, "i"), "i"), ax.pmax(a, "i") + 0.0 * a), "i")
    a, out = ax.asarray(x), []
    for _ in range(2):
        b = f1(a)
        c = f2(b)
        d = f3(c)
        e, idx = f4(c, 3.0)
        g, h = f5(e)
        out += [to_numpy(v) for v in (b, c, d, e, idx, g, h)]
        a = h
    return out


def test_pmap_dask_edge_programs_match_numpy_bits(runner):
    distributed = pytest.importorskip("distributed")
    from arrayx.executors import dask as dask_executor

    if not ax.executors.get("dask").available():
        pytest.skip("dask executor unavailable")
    with ax.use_executor("numpy"):
        want = _edges()
    with ax.use_executor("dask"):
        local = _edges()
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        dask_executor.connect(cluster)
        try:
            with ax.use_executor("dask"):
                got = _edges()
        finally:
            dask_executor.disconnect()
    for k, (g, lo, w) in enumerate(zip(got, local, want)):
        assert g.dtype == w.dtype and g.shape == w.shape, (k, g.dtype, w.dtype, g.shape, w.shape)
        np.testing.assert_array_equal(g, w, err_msg=f"result {k} on the cluster")
        np.testing.assert_array_equal(lo, w, err_msg=f"result {k} without a cluster")


def test_the_runner_actor_runs_calls_without_tasks_and_releases_results():
    # on an in-process cluster a call is one message to the runner actor: no task reaches the
    # scheduler until a result is read, and a result's values go when its arrays are collected
    import gc

    distributed = pytest.importorskip("distributed")
    from arrayx.executors import dask as dask_executor
    from arrayx.transforms import pmap_dask_actor

    if not ax.executors.get("dask").available():
        pytest.skip("dask executor unavailable")

    def step(p, x):
        g = ax.pmean(p * x, "d")
        return p - 0.1 * g, ax.psum(g, "d")

    x = np.linspace(0.0, 1.0, 8)
    with ax.use_executor("numpy"):
        p_np, s = ax.asarray(np.full(8, 0.5)), ax.pmap(step, "d")
        for _ in range(30):
            p_np, loss_np = s(p_np, ax.asarray(x))
        want, want_loss = to_numpy(p_np), to_numpy(loss_np)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        client = dask_executor.connect(cluster)
        try:
            with ax.use_executor("dask"):
                s = ax.pmap(step, "d")
                p, xs = ax.asarray(np.full(8, 0.5)), ax.asarray(x)
                p, loss = s(p, xs)
                to_numpy(p)  # the runner is placed and has run
                with distributed.get_task_stream(client=client) as stream:
                    for _ in range(29):
                        p, loss = s(p, xs)
                    calls = list(stream.data)
                got, got_loss = to_numpy(p), to_numpy(loss)
                state = pmap_dask_actor._STATES[pmap_dask_actor.runner_for(client).runner_id]
                held = len(state.results)
                del p, loss
                gc.collect()
                s(ax.asarray(np.zeros(8)), xs)  # a call after the releases: the runner has taken them
                with state.cv:
                    assert state.cv.wait_for(lambda: len(state.results) <= 1, 60), len(state.results)
        finally:
            dask_executor.disconnect()
    assert calls == [], [str(t["key"]) for t in calls]
    assert held <= 2, held  # the last call's results (and at most one call not yet released)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_loss, want_loss)


def test_an_error_in_a_call_is_raised_by_its_reads_and_the_next_calls(runner):
    # the numpy executor raises at the call; on a cluster the call runs later (the runner's thread or
    # the tasks): its reads raise the member's error, as do the reads of a call that reads its
    # results; the calls after run as before
    distributed = pytest.importorskip("distributed")
    from arrayx.executors import dask as dask_executor

    if not ax.executors.get("dask").available():
        pytest.skip("dask executor unavailable")

    def check(v):
        if v < 0:
            raise ValueError("a negative member value")

    def f(a):
        ax.debug.callback(check, a)
        return ax.psum(a, "d") * a

    bad, good = np.array([1.0, -1.0]), np.array([1.0, 2.0])
    with ax.use_executor("numpy"):
        with pytest.raises(ValueError, match="a negative member value"):
            ax.pmap(f, "d")(ax.asarray(bad))
        want = to_numpy(ax.pmap(f, "d")(ax.asarray(good)))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        dask_executor.connect(cluster)
        try:
            with ax.use_executor("dask"):
                g = ax.pmap(f, "d")
                y = g(ax.asarray(bad))
                with pytest.raises(ValueError, match="a negative member value"):
                    to_numpy(y)
                with pytest.raises(ValueError, match="a negative member value"):
                    to_numpy(g(y))
                got = to_numpy(g(ax.asarray(good)))
        finally:
            dask_executor.disconnect()
    np.testing.assert_array_equal(got, want)


@pytest.mark.slow
def test_the_runner_actor_on_worker_processes_matches_numpy_bits():
    # a cluster of worker processes: small calls go to the runner actor in a worker process (the
    # compiled stages shipped once), reads are tasks there; the bits of the numpy executor
    distributed = pytest.importorskip("distributed")
    from arrayx.executors import dask as dask_executor
    from arrayx.transforms import pmap_dask_actor

    if not ax.executors.get("dask").available():
        pytest.skip("dask executor unavailable")
    want = _run("numpy", 4)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        client = dask_executor.connect(cluster)
        try:
            got = _run("dask", 4)
            entry = pmap_dask_actor.runner_for(client)
        finally:
            dask_executor.disconnect()
    assert entry is not None and not entry.local
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and g.shape == w.shape, (k, g.dtype, w.dtype)
        np.testing.assert_array_equal(g, w, err_msg=f"result {k}")
