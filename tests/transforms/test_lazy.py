"""``arrayx.lazy()`` (issue 30, item 3): eager code recorded into a graph and run fused when a value
is read.  Values equal eager ones on every executor; shape/dtype/device reads compute nothing; each
read, call of a jitted function and scope exit runs the pending graph once; nesting, in-place
writes, jit and grad inside the scope, and failures."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

import arrayx as ax
from tests.conftest import assert_same

laziness = importlib.import_module("arrayx.transforms.laziness")


def _data():
    rng = np.random.default_rng(7)
    return rng.normal(size=(40, 6)), rng.normal(size=6)


def _standardise(X):
    m = ax.mean(X, axis=0)
    c = X - m
    sd = ax.sqrt(ax.mean(c * c, axis=0))
    z = c / sd
    return ax.exp(-0.5 * z * z) + ax.tanh(z) * 2.0, ax.sum(z, axis=1)


def _runs():
    return laziness.stats["runs"]


def test_lazy_values_equal_eager(executor):
    X = ax.asarray(_data()[0])
    want = _standardise(X)
    with ax.lazy():
        got = _standardise(X)
        assert all(type(g) is laziness.LazyTracer for g in got)
    assert all(type(g) is ax.Array for g in got)  # computed when the scope ends
    assert_same(got, want)


def test_shape_reads_do_not_compute_value_reads_do(executor):
    X = ax.asarray(_data()[0])
    with ax.lazy():
        before = _runs()
        y, s = _standardise(X)
        assert (y.shape, y.dtype, y.ndim, y.size, y.device) == ((40, 6), ax.float64, 2, 240, X.device)
        assert s.shape == (40,) and len(s) == 40 and y.mT.shape == (6, 40)
        assert _runs() == before  # nothing computed yet
        total = float(ax.sum(y))  # a read runs the pending graph once
        assert _runs() == before + 1
        assert type(y) is ax.Array and type(s) is ax.Array  # every live value was computed with it
        assert bool(ax.all(ax.isfinite(y)))  # a new graph, run once more
        assert _runs() == before + 2
    assert _runs() == before + 2  # nothing pending at exit: no run
    assert total == pytest.approx(float(ax.sum(_standardise(X)[0])), rel=1e-12)


@pytest.mark.parametrize("read", ["float", "int", "bool", "index", "array", "dlpack", "tolist", "item",
                                  "repr", "getitem_index", "nonzero", "to_device"])
def test_each_read_computes(executor, read):
    x = ax.asarray([1.0, 2.0, 3.0])
    with ax.lazy():
        before = _runs()
        y = x * 2.0 + 1.0
        i = ax.astype(ax.sum(y), ax.int64) - 15  # 0
        v = {
            "float": lambda: float(y[1]),
            "int": lambda: int(i),
            "bool": lambda: bool(y[0] > 2.0),
            "index": lambda: [10, 20][i],
            "array": lambda: np.asarray(y).tolist(),
            "dlpack": lambda: np.from_dlpack(y).tolist(),
            "tolist": lambda: y.tolist(),
            "item": lambda: y[2].item(),
            "repr": lambda: "5." in repr(y),
            "getitem_index": lambda: np.asarray(x[ax.astype(y[:2], ax.int64) - 3]).tolist(),
            "nonzero": lambda: np.asarray(ax.nonzero(y > 4.0)[0]).tolist(),
            "to_device": lambda: np.asarray(y.to_device("numpy")).tolist(),
        }[read]()
        # an array index is read for its bounds check (one run), then the gathered result (another)
        assert _runs() == before + (2 if read == "getitem_index" else 1), read
    want = {"float": 5.0, "int": 0, "bool": True, "index": 10, "array": [3.0, 5.0, 7.0],
            "dlpack": [3.0, 5.0, 7.0], "tolist": [3.0, 5.0, 7.0], "item": 7.0, "repr": True,
            "getitem_index": [1.0, 3.0], "nonzero": [1, 2], "to_device": [3.0, 5.0, 7.0]}[read]
    assert v == want


def test_repeated_calls_reuse_one_compiled_program(executor):
    X = ax.asarray(_data()[0])
    with ax.lazy():
        y, _ = _standardise(X)  # kept: a scope whose results nobody holds compiles nothing
    compiles = laziness.stats["compiles"]
    for _ in range(3):
        with ax.lazy():
            y, _ = _standardise(X)
    assert laziness.stats["compiles"] == compiles
    assert_same(y, _standardise(X)[0])


def test_nested_scopes_run_at_the_outer_exit(executor):
    x = ax.asarray([1.0, 2.0])
    before = _runs()
    with ax.lazy():
        with ax.lazy():
            y = ax.sin(x) + 1.0
        assert type(y) is laziness.LazyTracer and _runs() == before  # the inner exit runs nothing
        z = y * 3.0
    assert _runs() == before + 1
    assert_same(z, (ax.sin(x) + 1.0) * 3.0)


def test_decorator_form(executor):
    @ax.lazy()
    def f(x):
        return ax.cos(x) * 2.0 - x

    x = ax.asarray([0.0, 1.0, 2.0])
    out = f(x)
    assert type(out) is ax.Array
    assert_same(out, ax.cos(x) * 2.0 - x)
    assert_same(f(x), out)  # the decorator runs again (reentrant)


def test_in_place_writes_inside_the_scope(executor):
    base = np.arange(6.0).reshape(2, 3)
    a = ax.asarray(base.copy())
    with ax.lazy():
        b = a * 2.0  # reads a before the write
        a[0, :] = -1.0
        a += 1.0
        c = a * 1.0
        c[1, 1] = 100.0
    want_a = base.copy()
    want_a[0, :] = -1.0
    want_a += 1.0
    want_c = want_a.copy()
    want_c[1, 1] = 100.0
    assert_same(b, base * 2.0)
    assert_same(a, want_a)
    assert_same(c, want_c)


def test_write_lands_in_the_memory_of_an_array_from_before(executor):
    a = ax.asarray(np.zeros(4))
    if not a._ex.mutable:
        pytest.skip(f"{executor} buffers are immutable: there is no memory to share")
    host_view = np.asarray(a, copy=False)  # shares a's memory on numpy/numba
    with ax.lazy():
        a[1:3] = 5.0
    assert host_view.tolist() == [0.0, 5.0, 5.0, 0.0]


def test_jit_and_grad_inside_the_scope(executor):
    x = ax.asarray([0.5, 1.0, 1.5])
    f = ax.jit(lambda v: ax.sum(ax.sin(v) * v))
    g = ax.grad(lambda v: ax.sum(ax.sin(v) * v))
    with ax.lazy():
        y = x * 2.0
        before = _runs()
        out = f(y)  # a jitted call runs compiled on computed operands
        assert _runs() == before + 1 and type(y) is ax.Array
        dy = g(x * 2.0)  # grad traces through the lazy values
        hv = ax.sum(dy * dy)
    assert_same(out, f(x * 2.0))
    assert_same(dy, g(x * 2.0))
    assert_same(hv, ax.sum(g(x * 2.0) ** 2))


def test_lazy_inside_jit_is_a_no_op(executor):
    @ax.jit
    def f(v):
        with ax.lazy():
            return ax.exp(v) - 1.0

    x = ax.asarray([0.0, 1.0])
    assert_same(f(x), ax.exp(x) - 1.0)


def test_errors_are_eager_ones(executor):
    x = ax.ones((2, 3))
    with ax.lazy():
        with pytest.raises(ValueError):
            x + ax.ones((4,))  # shapes are checked when recorded, as eagerly
        with pytest.raises(TypeError, match="one element"):
            float(x * 2.0)
    with ax.lazy():
        y = x * 2.0
    assert_same(y, np.full((2, 3), 2.0))


def test_a_failing_scope_leaves_no_half_recorded_values(executor):
    x = ax.asarray([1.0, 2.0])
    with pytest.raises(KeyError):
        with ax.lazy():
            y = x + 1.0
            raise KeyError("boom")
    assert type(y) is ax.Array  # computed on the way out
    assert_same(y, np.asarray([2.0, 3.0]))


def test_mixed_executors_refused_as_eagerly(executor):
    if executor == "numpy":
        pytest.skip("needs a second executor")
    a = ax.ones(3)
    b = ax.ones(3, device="numpy")
    with ax.lazy():
        with pytest.raises(TypeError):
            a + b


def test_a_long_loop_without_reads_runs_in_pieces_of_one_program(executor, monkeypatch):
    monkeypatch.setattr(laziness, "MAX_PENDING", 8)
    x = ax.asarray([1.0, 2.0])
    with ax.lazy():
        before = _runs(), laziness.stats["compiles"]
        y = x
        for _ in range(32):
            y = y * 0.5 + 1.0  # two operations a step: a run every 4 steps
        assert _runs() == before[0] + 8
        assert laziness.stats["compiles"] <= before[1] + 2  # the pieces share their program
    want = x
    for _ in range(32):
        want = want * 0.5 + 1.0
    assert_same(y, want)


# -- transposed operands (xpx.cov(X.T)): fused without a copy into C order ---------------------------

def _transposed(shape, seed=3):
    """A NumPy array and its arrayx twin of the current executor, both ``X.T`` of a C-ordered X."""
    host = np.random.default_rng(seed).normal(size=shape[::-1])
    return host.T, ax.asarray(host).T


def _on_transposed(x):
    m = ax.mean(x, axis=1, keepdims=True)
    c = x - m
    return (ax.sum(c * c, axis=1), ax.var(x, axis=1), ax.std(x - 1.0, axis=1, correction=1.0),
            ax.max(ax.exp(x * 0.1), axis=1), c * 3.0 + 1.0)


@pytest.mark.parametrize("shape", [(64, 5000), (7, 300), (300, 7)])
def test_lazy_regions_on_transposed_operands(executor, shape):
    host, x = _transposed(shape)
    with ax.lazy():
        got = _on_transposed(x)
    want = (np.sum((host - host.mean(1, keepdims=True)) ** 2, axis=1), np.var(host, axis=1),
            np.std(host - 1.0, axis=1, ddof=1), np.max(np.exp(host * 0.1), axis=1),
            (host - host.mean(1, keepdims=True)) * 3.0 + 1.0)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-11, atol=1e-11)
    assert_same(got, _on_transposed(x))  # the eager values of this executor


def _record_numba_copies(monkeypatch) -> list:
    """The shapes of the operands numba's fused kernels copy into C order (filled as they run)."""
    pytest.importorskip("numba")
    run = importlib.import_module("arrayx.executors.numba.fusion.run")
    copied = []
    contiguous = run._contiguous

    def spy(b, empty):
        if not (b.__class__ is np.ndarray and b.flags.c_contiguous):
            copied.append(b.shape)
        return contiguous(b, empty)

    monkeypatch.setattr(run, "_contiguous", spy)
    return copied


def test_numba_fuses_transposed_operands_without_copying_them(monkeypatch):
    """On numba a region whose full operands are all transposed runs on their memory as it is (before:
    each was copied into C order first, 96 of xpx.cov's 172 ms at 120000 x 64); its elementwise
    results come back transposed, as NumPy gives them for a transposed operand."""
    copied = _record_numba_copies(monkeypatch)
    with ax.use_executor("numba"):
        host, x = _transposed((64, 5000))
        with ax.lazy():
            m = ax.mean(x, axis=1)
            c = x - m[:, None]
            y = c * 2.0
            s = ax.sum(y, axis=1)
    assert copied == []
    assert np.asarray(y).flags.f_contiguous and not np.asarray(y).flags.c_contiguous
    want = (host - host.mean(1)[:, None]) * 2.0
    np.testing.assert_allclose(np.asarray(y), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(s), want.sum(1), rtol=1e-9, atol=1e-9)


def _distances(a, b):
    xx = ax.sum(a * a, axis=1)[:, None]
    yy = ax.sum(b * b, axis=1)[None, :]
    d = -2.0 * (a @ b.T)
    d += xx
    d += yy
    d = ax.maximum(d, 0.0)
    return d, ax.sum(d, axis=1), ax.var(d - yy, axis=0)


def test_lazy_regions_with_operands_broadcast_both_ways(executor):
    """scikit-learn's euclidean distances: (n, 1) and (1, m) operands of one (n, m) region."""
    rng = np.random.default_rng(5)
    A, B = rng.normal(size=(300, 16)), rng.normal(size=(500, 16))
    with ax.lazy():
        got = _distances(ax.asarray(A), ax.asarray(B))
    d = np.maximum(-2.0 * (A @ B.T) + (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :], 0.0)
    want = (d, d.sum(1), (d - (B * B).sum(1)[None, :]).var(0))
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-10, atol=1e-9)
    assert_same(got, _distances(ax.asarray(A), ax.asarray(B)))


def test_numba_reads_operands_broadcast_along_the_block_without_copying(monkeypatch):
    """On numba an operand repeated across the region's block (one value per position in it: (1, m)
    beside an (n, 1) one) is read where it is; before, it was broadcast into a full copy first."""
    copied = _record_numba_copies(monkeypatch)
    rng = np.random.default_rng(6)
    C, col, row = rng.normal(size=(3000, 50)), rng.normal(size=(1, 50)), rng.normal(size=(3000, 1))
    with ax.use_executor("numba"):
        c, co, ro = ax.asarray(C), ax.asarray(col), ax.asarray(row)
        with ax.lazy():
            y = (c + co) * ro
            s = ax.sum(c * co + ro, axis=0)
            v = ax.var(c - ro, axis=1)
    assert copied == []
    np.testing.assert_allclose(np.asarray(y), (C + col) * row, rtol=1e-13, atol=0)
    np.testing.assert_allclose(np.asarray(s), (C * col + row).sum(0), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(np.asarray(v), (C - row).var(1), rtol=1e-10, atol=1e-12)


def test_astype_to_its_own_dtype_reuses_the_value_where_buffers_are_never_written(executor):
    """On jax and dask (buffers never written) a recorded astype to the array's own dtype is the
    array's value (no program output copying it); elsewhere it is a copy; writes to the result
    never reach the operand."""
    Xn = _data()[0]
    X = ax.asarray(Xn)
    with ax.lazy():
        y = X * 2.0
        n = laziness.stats["recorded"]
        z = ax.astype(y, ax.float64, copy=True)
        w = ax.astype(X, ax.float64, copy=True)
        recorded = laziness.stats["recorded"] - n
        shares = w._buf is X._buf
        f32 = ax.astype(y, ax.float32)
        z[0, 0] = 99.0
        w[1, 1] = -1.0
    immutable = not X._ex.mutable
    assert recorded == (0 if immutable else 2)
    assert shares == immutable
    assert_same(X, Xn)
    assert_same(y, Xn * 2.0)
    want_z = Xn * 2.0
    want_z[0, 0] = 99.0
    want_w = Xn.copy()
    want_w[1, 1] = -1.0
    assert_same(z, want_z)
    assert_same(w, want_w)
    assert_same(f32, (Xn * 2.0).astype(np.float32))
