"""The NumPy executor's buffer pool (executors/common/buffer_pool.py): a large result reuses a buffer only
when nothing outside the pool can reach it, the memory it keeps is capped, and every executor path
that writes into it gives the values plain NumPy gives.

The pool's own tests use a pool with a 1 KiB threshold on small arrays; the executor tests use
4 MiB results (the executor's threshold) and compare with NumPy run on independent copies.
"""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as ax
from arrayx.executors.common import buffer_pool as bp
from arrayx.core import executor as base
from arrayx.executors.numpy import NumpyExecutor
from tests.conftest import run_in_threads

N = 512  # float64 elements: 4 KiB, above the test pools' threshold


def small_pool(limit=1 << 30, min_bytes=1024):
    pool = bp.BufferPool(limit_bytes=limit, min_bytes=min_bytes)
    return pool, bp.pooled(np.multiply, pool), bp.pooled(np.add, pool)


def operands(seed=0, n=N):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n), rng.standard_normal(n)


def test_a_dropped_result_is_reused_and_a_live_one_is_not():
    pool, mul, _ = small_pool()
    a, b = operands()
    r = mul(a, b)
    addr = r.ctypes.data
    del r
    r = mul(a, b)
    assert r.ctypes.data == addr and pool.stats()["hits"] == 1
    keep = r
    r2 = mul(a, a)
    assert not np.shares_memory(keep, r2)
    np.testing.assert_array_equal(keep, a * b)
    np.testing.assert_array_equal(r2, a * a)
    s = pool.stats()
    assert (s["buffers"], s["in_use"], s["new"]) == (2, 2, 2)


VIEWS = {  # name -> (what the user keeps, how its values are read)
    "slice": (lambda r: r[3:-5], np.asarray),
    "reshape": (lambda r: r.reshape(16, 32), np.asarray),
    "transpose": (lambda r: r.reshape(16, 32).T, np.asarray),
    "broadcast_to": (lambda r: np.broadcast_to(r, (2, N)), np.asarray),
    "np.asarray": (lambda r: np.asarray(r), np.asarray),
    "view dtype": (lambda r: r.view(np.int64), np.asarray),
    "memoryview": (lambda r: memoryview(r), np.asarray),
    "np.frombuffer of a memoryview": (lambda r: np.frombuffer(memoryview(r), np.float64), np.asarray),
    "its base": (lambda r: r.base, np.asarray),
    "dlpack": (lambda r: np.from_dlpack(r), np.asarray),
    "an Array in a pytree": (lambda r: {"w": [ax.asarray(r, device="numpy", copy=False)], "n": None},
                             lambda t: np.asarray(t["w"][0])),
}


@pytest.mark.parametrize("make, read", VIEWS.values(), ids=VIEWS.keys())
def test_a_buffer_with_a_live_view_is_never_reused(make, read):
    pool, mul, add = small_pool()
    a, b = operands()
    r = mul(a, b)
    kept = make(r)
    want = np.array(read(kept), copy=True)
    del r
    for _ in range(3):  # new results (other values) while only ``kept`` reaches the memory
        other = add(a, b)
        np.testing.assert_array_equal(other, a + b)
        assert not np.shares_memory(read(kept), other)
        del other
    np.testing.assert_array_equal(read(kept), want)
    assert pool.stats()["buffers"] == 2
    del kept
    assert pool.stats()["in_use"] == 0


def test_x_equals_f_of_x_keeps_values():
    pool, mul, add = small_pool()
    a, _ = operands()
    x, want = mul(a, 1.0 + 0 * a), a.copy()
    for _ in range(5):
        x = add(mul(x, x), x)  # x's buffer is an operand: never the output
        want = want * want + want
        np.testing.assert_array_equal(x, want)
    assert pool.stats()["buffers"] <= 3


def test_limit_lru_eviction_and_clear():
    pool, mul, _ = small_pool(limit=3 << 20)  # three 1 MiB size classes
    small, big = np.ones(N), np.ones(N * 300)  # 4 KiB (one MiB class) and 1.2 MB (two)
    r1 = mul(small, small)
    del r1
    r2 = mul(big, big)  # 2 MiB more: fits beside the free 1 MiB buffer
    assert pool.stats()["owned_bytes"] == 3 << 20
    r3 = mul(big, 2 * big)  # r2 is alive: the free small one is dropped, still no room: unpooled
    s = pool.stats()
    assert s["evicted"] == 1 and s["unpooled"] == 1 and s["owned_bytes"] == 2 << 20
    np.testing.assert_array_equal(r3, 2 * big)
    np.testing.assert_array_equal(r2, big)
    assert pool.clear() == 0  # r2 still holds its buffer
    del r2
    assert pool.clear() == 2 << 20 and pool.stats()["buffers"] == 0


def test_limit_zero_and_small_results_are_plain_numpy():
    pool, mul, _ = small_pool(limit=0)
    a, b = operands()
    np.testing.assert_array_equal(mul(a, b), a * b)
    tiny = np.ones(8)
    pool2, mul2, _ = small_pool()
    assert mul2(tiny, tiny).base is None
    assert pool.stats()["buffers"] == pool2.stats()["buffers"] == 0


CASES = {
    "bool result": (np.less, np.arange(N, dtype=np.float32), np.float32(7)),
    "int8 + float32": (np.add, np.arange(N * 2, dtype=np.int8), np.ones(N * 2, np.float32)),
    "complex": (np.multiply, np.ones(N, np.complex128) * 1j, np.arange(N, dtype=np.complex128)),
    "broadcast outer": (np.multiply, np.arange(64.0)[:, None], np.arange(64.0)[None, :]),
    "python scalar": (np.multiply, np.arange(float(N)), 3.0),
    "unary": (np.sqrt, np.arange(float(N)), None),
    "unary bool": (np.isnan, np.arange(float(N * 8)), None),
}


@pytest.mark.parametrize("ufunc, x1, x2", CASES.values(), ids=CASES.keys())
def test_pooled_ufuncs_match_numpy(ufunc, x1, x2):
    pool = bp.BufferPool(min_bytes=1024)
    run = bp.pooled(ufunc, pool)
    args = (x1,) if x2 is None else (x1, x2)
    got, want = run(*args), ufunc(*args)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_pooled_ufunc_errors_are_numpys():
    run = bp.pooled(np.add, bp.BufferPool(min_bytes=1024))
    with pytest.raises(ValueError, match="broadcast"):
        run(np.ones((600, 3)), np.ones((600, 4)))
    with pytest.raises(TypeError):
        run(np.ones(600, dtype="datetime64[s]"), np.ones(600, dtype="datetime64[s]"))


MATMULS = {
    "2-d": ((64, 32), (32, 48)),
    "batched": ((4, 64, 32), (4, 32, 48)),
    "broadcast batch": ((3, 1, 16, 8), (5, 8, 40)),
    "outer k=1": ((4, 64, 1), (4, 1, 64)),
    "1-d": ((32,), (32, 64)),
}


@pytest.mark.parametrize("s1, s2", MATMULS.values(), ids=MATMULS.keys())
def test_pooled_matmul_matches_numpy(s1, s2):
    pool = bp.BufferPool(min_bytes=1024)
    run = bp.pooled(np.matmul, pool)
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal(s1).astype(np.float32), rng.standard_normal(s2).astype(np.float32)
    got = run(a, b)
    np.testing.assert_array_equal(got, np.matmul(a, b))
    assert (got.base is not None) == (len(s1) > 1)  # 1-d operands go to NumPy unpooled
    with pytest.raises(ValueError):
        run(a, np.ones((7, 3), np.float32))


def test_threads_never_share_a_live_buffer():
    pool, mul, _ = small_pool()
    errors = []

    def work(seed):
        a, b = operands(seed)
        want = a * b
        kept = []
        for i in range(200):
            r = mul(a, b)
            if not np.array_equal(r, want):
                errors.append(seed)
            kept = (kept + [r])[-3:]  # a few results alive at a time, the rest dropped
        for r in kept:
            if not np.array_equal(r, want):
                errors.append(seed)

    run_in_threads(work, 4)
    assert not errors
    assert pool.stats()["in_use"] == 0 and pool.stats()["hits"] > 0


def test_environment_configures_and_rejects(monkeypatch):
    monkeypatch.setenv("ARRAYX_BUFFER_POOL_LIMIT", "12345")
    monkeypatch.setenv("ARRAYX_BUFFER_POOL_MIN_BYTES", "2048")
    pool = bp.BufferPool()
    assert (pool.limit_bytes, pool.min_bytes) == (12345, 2048)
    monkeypatch.setenv("ARRAYX_BUFFER_POOL_LIMIT", "1GB")
    with pytest.raises(ValueError, match="ARRAYX_BUFFER_POOL_LIMIT='1GB'"):
        bp.BufferPool()


def test_on_by_default_and_the_environment_turns_it_off(monkeypatch):
    from arrayx.api.elementwise import multiply_p

    for raw, on in [(None, True), ("1", True), ("0", False), (" off ", False), ("no", False)]:
        if raw is None:
            monkeypatch.delenv("ARRAYX_BUFFER_POOL", raising=False)
        else:
            monkeypatch.setenv("ARRAYX_BUFFER_POOL", raw)
        assert bp.enabled_by_environment() is on, raw
    monkeypatch.setattr(bp, "ENABLED", False)
    off = NumpyExecutor()
    assert off.pool_min_bytes == 0 and off.resolve(multiply_p) is np.multiply
    monkeypatch.setattr(bp, "ENABLED", True)
    on = NumpyExecutor()
    # NumPy's own function for small results, the pooled one only for those that may be large
    assert on.pool_min_bytes == bp.POOL.min_bytes > 0
    assert on.resolve(multiply_p) is np.multiply and on.resolve_large(multiply_p) is not np.multiply


# -- through the executors (4 MiB results: the executor's own threshold) ---------------------------


def _made(pool) -> tuple:
    s = pool.stats()
    return s["hits"], s["new"]


def test_set_buffer_pool_switches_every_executor_that_runs_numpys_functions():
    numpy_ex, was = base.get("numpy"), bp.ENABLED
    numbas = [ex for ex in base._registry.values() if isinstance(ex, NumpyExecutor)]
    big = np.ones(BIG, np.float32)
    try:
        numpy_ex.set_buffer_pool(False)
        assert all(ex.pool_min_bytes == 0 for ex in numbas)
        with ax.use_executor("numpy"):
            r = ax.asarray(big) * ax.asarray(big)
        assert np.asarray(r).base is None  # NumPy's own allocation
        numpy_ex.set_buffer_pool(True)
        assert all(ex.pool_min_bytes == ex.buffer_pool.min_bytes > 0 for ex in numbas)
        with ax.use_executor("numpy"):
            r = ax.asarray(big) * ax.asarray(big)
        assert np.asarray(r).base is not None and bp.POOL.stats()["in_use"] >= 1  # a view of a pooled buffer
    finally:
        numpy_ex.set_buffer_pool(was)

BIG = (1024, 1024)  # float32: 4 MiB
POOLED = [name for name in ("numpy", "numba") if name in base.registered()]  # whose results use the pool


@pytest.fixture(params=POOLED)
def pooled_executor(request, pool_on) -> str:
    """An executor whose eager and jitted ops write into the pool (Numba through its NumPy fallbacks)."""
    ex = base.get(request.param)
    if not ex.available():
        pytest.skip(f"executor {request.param!r} unavailable: {ex.unavailable_reason}")
    before = _made(pool_on)
    with ax.use_executor(request.param):
        yield request.param
    assert _made(pool_on) != before, "the test made no pooled result"


def big_operands(executor, seed=0):
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal(BIG).astype(np.float32), rng.standard_normal(BIG).astype(np.float32)
    return a, b, ax.asarray(a, device=executor_device(executor)), ax.asarray(b, device=executor_device(executor))


def executor_device(name):
    return base.get(name).default_device()


def host(x):
    return np.array(np.asarray(x), copy=True)


def test_results_alive_across_calls_and_rebinding(pooled_executor):
    a, b, xa, xb = big_operands(pooled_executor)
    kept = [xa * xb, xa + xb]
    x, want = xa, a.copy()
    for _ in range(4):
        x = x * xb + 1.0  # x = f(x): the old x is dropped after the new one exists
        want = want * b + np.float32(1.0)
        kept.append(x)
    np.testing.assert_allclose(host(x), want, rtol=1e-6)
    np.testing.assert_array_equal(host(kept[0]), a * b)
    np.testing.assert_array_equal(host(kept[1]), a + b)
    y = xa * 1.0
    y += xb  # in place: functionalised on the Array
    y -= xa
    np.testing.assert_array_equal(host(y), (a + b) - a)
    outer = ax.matmul(xa[:, :16], xb[:16, :])  # a 4 MiB result from small operands
    np.testing.assert_allclose(host(outer), a[:, :16] @ b[:16, :], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(host(kept[0]), a * b)


def test_numpy_exports_survive_new_results(executor, pool_on):
    a, b, xa, xb = big_operands(executor, seed=1)
    r = xa * xb
    exported = np.asarray(r)  # what SciPy does: keeps the executor's buffer (or a copy) alive
    transposed = ax.matrix_transpose(r)
    del r
    for _ in range(3):
        s = xa + xb
        np.testing.assert_array_equal(host(s), a + b)
        del s
    np.testing.assert_array_equal(exported, a * b)
    np.testing.assert_array_equal(host(transposed), (a * b).T)


def test_moved_to_another_executor_then_dropped(executor, pool_on):
    a, b = big_operands("numpy", seed=2)[:2]
    with ax.use_executor("numpy"):
        r = ax.asarray(a) * ax.asarray(b)
    moved = ax.asarray(r, device=executor_device(executor))
    del r
    with ax.use_executor("numpy"):
        again = [ax.asarray(b) * ax.asarray(b) for _ in range(3)]
    np.testing.assert_array_equal(host(moved), a * b)
    np.testing.assert_array_equal(host(again[-1]), b * b)


def test_vmap_grad_and_jit_with_pooled_results(pooled_executor):
    rng = np.random.default_rng(4)
    w = rng.standard_normal((256, 256)).astype(np.float32) / 16
    xs = rng.standard_normal((16, 256)).astype(np.float32)  # per-example gradients: 16 x 256 KiB = 4 MiB
    dev = executor_device(pooled_executor)
    wa, xa = ax.asarray(w, device=dev), ax.asarray(xs, device=dev)
    loss = lambda w, x: ax.sum(ax.tanh(x @ w) ** 2)  # noqa: E731
    per_example = ax.vmap(ax.grad(loss), in_axes=(None, 0))
    first = per_example(wa, xa)
    # while the first is alive; jit on NumPy only (Numba's jit fuses into its own kernels)
    second = (ax.jit(per_example) if pooled_executor == "numpy" else per_example)(wa, xa * 2.0)
    h1, h2 = np.tanh(xs @ w), np.tanh(2 * xs @ w)
    want1 = xs[:, :, None] * (2 * h1 * (1 - h1 ** 2))[:, None, :]
    want2 = 2 * xs[:, :, None] * (2 * h2 * (1 - h2 ** 2))[:, None, :]
    np.testing.assert_allclose(host(first), want1, rtol=2e-4, atol=2e-5)
    np.testing.assert_allclose(host(second), want2, rtol=2e-4, atol=2e-5)


# -- the size decision of the eager paths and jit's lowering ---------------------------------------


def _pool_frames(fn) -> int:
    """How many Python frames of executors/common/buffer_pool.py calling ``fn()`` runs."""
    frames = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_filename == bp.__file__:
            frames.append(frame.f_code.co_name)

    import sys

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return len(frames)


def _pooled_result(x) -> bool:
    return np.asarray(x).base is not None  # a view of a pooled buffer (NumPy's own results own theirs)


def test_small_operands_call_numpy_without_a_frame(pool_on):
    s, m = ax.asarray(np.arange(8.0)), ax.asarray(np.ones((4, 4)))
    mid = ax.asarray(np.ones(100_000, np.float32))  # 400 KB: size1 * nbytes2 is over 4 MiB, one shape
    for small in [lambda: s + s, lambda: ax.multiply(s, 2.0), lambda: ax.exp(s), lambda: m @ m,
                  lambda: mid * mid, lambda: ax.sqrt(mid), lambda: ax.jit(lambda a: a * a)(mid)]:
        small()
        assert _pool_frames(small) == 0
        assert not _pooled_result(small())


def test_results_that_may_be_large_are_pooled(pool_on):
    rng = np.random.default_rng(5)
    a_, c_, r_ = (rng.standard_normal(s).astype(np.float32) for s in (BIG, (1024, 1), (1, 1024)))
    t_, w_ = rng.standard_normal((1024, 8)).astype(np.float32), rng.standard_normal((8, 1024)).astype(np.float32)
    a, col, row, tall, wide = map(ax.asarray, (a_, c_, r_, t_, w_))
    cases = {  # name: (arrayx, NumPy)
        "one shape": (lambda: a * a, a_ * a_),
        "array and scalar": (lambda: a * 2.0, a_ * np.float32(2.0)),
        "unary": (lambda: ax.exp(a), np.exp(a_)),
        "broadcast outer, small operands": (lambda: col * row, c_ * r_),
        "matmul outer, small operands": (lambda: tall @ wide, t_ @ w_),
        "through bind (vmap)": (lambda: ax.vmap(lambda v: v * 3.0)(a), a_ * np.float32(3.0)),
        "jit": (lambda: ax.jit(lambda u, v: u * v + 1.0)(col, row), c_ * r_ + np.float32(1.0)),
    }
    for name, (fn, want) in cases.items():
        first = fn()
        got = fn()  # while the first is alive
        assert _pooled_result(got) and _pooled_result(first), name
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, err_msg=name)
        np.testing.assert_allclose(np.asarray(first), want, rtol=1e-6, err_msg=name)


def test_numba_native_kernels_write_into_the_pool(pool_on):
    # the eager Numba kernels' outputs (a fresh 40 MB output costs ~10 ms of page faults per call)
    ex = base.get("numba")
    if not ex.available():
        pytest.skip(f"numba unavailable: {ex.unavailable_reason}")
    saved, share = dict(ex.thresholds), ex.min_team_share
    ex.thresholds.update(dict.fromkeys(saved, 0))  # native kernels for every size,
    ex.min_team_share = 0  # whatever share the worker team took of recent calls
    try:
        a, b, xa, xb = big_operands("numba", seed=3)
        before = _made(pool_on)
        kept = {"exp": ax.exp(xa), "add": xa + xb, "mul_scalar": xa * 2.0, "where": ax.where(xa > 0, xa, xb),
                "clip": ax.clip(xa, -0.5, 0.5)}
        x, want = xa, a.copy()
        for _ in range(4):  # x = f(x): the dropped results' buffers come back, live ones never
            x = ax.tanh(x)
            want = np.tanh(want)
        assert _made(pool_on) != before, "no native kernel wrote into the pool"
        assert all(np.asarray(r).base is not None for r in (*kept.values(), x))  # views of pooled buffers
        np.testing.assert_allclose(host(x), want, rtol=1e-5, atol=1e-6)
        with np.errstate(all="ignore"):
            expect = {"exp": np.exp(a), "add": a + b, "mul_scalar": a * np.float32(2.0), "where": np.where(a > 0, a, b),
                      "clip": np.clip(a, np.float32(-0.5), np.float32(0.5))}
        for name, r in kept.items():
            np.testing.assert_allclose(host(r), expect[name], rtol=1e-6, atol=0, err_msg=name)
    finally:
        ex.thresholds.update(saved)
        ex.min_team_share = share


def test_the_special_functions_loaded_late_are_pooled_as_their_ufuncs():
    """erf/erfc/erfinv of the NumPy executor import SciPy on their first call (not with arrayx), and the
    pool still takes them as SciPy's ufuncs: a large result lands in a pooled buffer, with the same values."""
    import subprocess
    import sys

    from arrayx.executors.numpy import nn

    code = "import sys, arrayx; print('scipy' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"
    pool = bp.BufferPool()
    x = np.linspace(-0.99, 0.99, 300_000)
    for name in ("erf", "erfc", "erfinv"):
        late = getattr(nn, name)
        run = bp.pooled(late, pool)
        assert run is not late and run is not late.ufunc_when_loaded()  # the pooled form of the ufunc
        np.testing.assert_array_equal(run(x), late(x))
