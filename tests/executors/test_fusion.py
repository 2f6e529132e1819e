"""jit's fused kernels on the Numba executor (arrayx/executors/numba/fusion/lowering.py).

Every pattern is jitted on every available executor and compared with the NumPy executor; on
numba the test also checks that the pattern really ran as fused kernels (``regions``), with
the size thresholds lowered so that small arrays fuse too.
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import arrayx as xp
from arrayx.api import _internal as I
from arrayx.core import executor as base
from conformance import profile
from tests.conftest import assert_same, on_numpy

numba = pytest.importorskip("numba")

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def fuse_small_arrays():
    """Fuse regions of any size (the default leaves arrays under 4096 elements to NumPy)."""
    ex = base.get("numba")
    if not ex.available():
        yield
        return
    saved = ex.fusion_min_size, ex.fusion_parallel_size
    ex.fusion_min_size = 0
    try:
        yield
    finally:
        ex.fusion_min_size, ex.fusion_parallel_size = saved


def _compiled(jf, *args, **kwargs):
    graph = jf.trace(*args, **kwargs).graph
    fns = [fn for key, fn in graph.derived.items() if isinstance(key, tuple) and key[:2] == ("compiled", "numba")]
    assert len(fns) == 1
    return fns[0]


def check(fn, *arrays, regions: int | None = None, fused: bool = True):
    """jit(fn) on the current executor equals fn on NumPy; on numba, ``regions`` kernels ran."""
    args = [xp.asarray(a) for a in arrays]
    jf = xp.jit(fn)
    got = jf(*args)
    want = on_numpy(fn, *args)
    assert_same(got, want)
    if xp.get_executor().name == "numba":
        runners = _compiled(jf, *args).regions
        if regions is not None:
            assert len(runners) == regions, [r.source for r in runners]
        if fused:
            # a kernel ran: the region's, or its transposed-operand variant (RegionRunner._run_transposed)
            assert runners and all(r.failed is None and (r.kernel is not None or r._transposed is not None)
                                   for r in runners)
    return got


RNG = np.random.default_rng(7)


def normal(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def selu(x):
    return 1.0507009873554805 * xp.where(x > 0, x, 1.6732632423543772 * (xp.exp(x) - 1))


def softmax(x):
    e = xp.exp(x - xp.max(x, axis=-1, keepdims=True))
    return e / xp.sum(e, axis=-1, keepdims=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_elementwise_chains_keep_the_dtype(executor, dtype):
    x = normal(50, 33, dtype=dtype)
    assert check(selu, x, regions=1).dtype == dtype
    check(lambda x: ((x * 2 + 1) * x - 0.5) * x + 3, x, regions=1)
    check(lambda x: xp.tanh(x) * xp.expm1(x) + xp.sqrt(xp.abs(x)) - xp.log1p(x * x) ** 2, x, regions=1)
    check(lambda x: xp.clip(x, -0.5, 0.5) + xp.clip(x, min=0.1) * xp.clip(x, max=0.2), x, regions=1)


def test_broadcast_operands(executor):
    x, row, col = normal(40, 30), normal(30), normal(40, 1)
    check(lambda x, b: x * b + 1.0, x, row, regions=1)  # (30,) repeated over the rows
    check(lambda x, c: xp.exp(x - c), x, col, regions=1)  # (40, 1) repeated over the columns
    check(lambda x, b, c: x * b + c, x, row, col, regions=1)  # both: one is copied to full
    check(lambda x, s: x + s, normal(6, 7, 8), normal(1, 7, 1), regions=1)  # not one block: copied
    check(lambda x, s: x * s, x, np.float64(3.0), regions=1)  # a 0-d operand


def test_mixed_dtypes_casts_and_literals(executor):
    i8 = RNG.integers(-128, 127, (40, 30), dtype=np.int8)
    u8 = RNG.integers(0, 255, (40, 30), dtype=np.uint8)
    f32 = normal(40, 30, dtype=np.float32)
    # literals cast to the operand dtype: int8 + 100 wraps in int8, float32 * 1.5 stays float32
    assert check(lambda a: a + 100, i8, regions=1).dtype == np.int8
    assert check(lambda a: a * 3 - 7, u8, regions=1).dtype == np.uint8
    assert check(lambda x: x * 1.5 + 0.25, f32, regions=1).dtype == np.float32
    # casts and mixed operands (promotion inserts astype)
    check(lambda a, x: a * x + xp.astype(a > 0, xp.float32), i8, f32, regions=1)
    check(lambda a, b: xp.astype(a, xp.int32) * xp.astype(b, xp.int32) + 1, i8, u8, regions=1)
    check(lambda x: xp.astype(x, xp.bool) | (x > 1), f32, regions=1)
    check(lambda a, b: (a & b) ^ (a | 3), u8, u8[::-1], regions=1)


def test_integer_overflow_wraps(executor):
    big = np.array([2**31 - 1, -2**31, 2**30, 7] * 20, dtype=np.int32)
    check(lambda a: a * 3 + (2**31 - 1), big, regions=1)
    check(lambda a: -a - 1, np.array([0, 1, 255, 128] * 20, dtype=np.uint8), regions=1)
    check(lambda a: xp.sum(a * a), big, regions=1)  # int32 squares wrap, then an int64 sum
    check(lambda a: xp.sum(a, dtype=xp.int32), big, regions=1)  # the int32 sum wraps too


def test_special_values_propagate(executor):
    x = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e308, -1e-310, 2.0] * 10)
    check(lambda x: xp.exp(x) * x - xp.tanh(x) + xp.where(x > 1, x, -x), x, regions=1)
    check(lambda x: (xp.sum(x), xp.max(x), xp.min(x), xp.mean(x)), x, regions=1)
    check(lambda x: (xp.max(x[2:]), xp.min(x[1:]), xp.var(x[1:]), xp.prod(x[3:])), x)
    check(lambda x: xp.expm1(x) + xp.sign(x), x.astype(np.float32), regions=1)


REDUCTION_AXES = [None, 0, 1, 2, (0, 1), (1, 2), (0, 2)]


@pytest.mark.parametrize("axis", REDUCTION_AXES)
def test_reductions_end_regions(executor, axis):
    x = normal(9, 10, 11)
    checks = [lambda x: xp.sum(x * 2.0 + 1.0, axis=axis),
              lambda x: (xp.mean(x * x, axis=axis, keepdims=True), xp.std(xp.exp(x), axis=axis)),
              lambda x: (xp.var(x - 1.0, axis=axis, correction=1), xp.prod(x * 0.5 + 1.0, axis=axis)),
              lambda x: (xp.max(xp.abs(x), axis=axis), xp.min(x, axis=axis)),
              lambda x: (xp.any(x > 2.0, axis=axis), xp.all(x > -3.0, axis=axis))]
    # jax (new programs per axis and check): in the ci profile alternate checks along the axes, so every
    # check runs on 3-4 axes and every axis with 2-3 checks there; the others and the deep profile all
    turn = REDUCTION_AXES.index(axis) % 2 if executor == "jax" and profile.current().sampled else None
    for j, fn in enumerate(checks):
        if turn is None or j % 2 == turn:
            check(fn, x)


def test_one_pass_var_and_softmax(executor):
    x = normal(30, 200) * 10 + 1e3  # a large mean: the one-pass update must not cancel
    check(lambda x: xp.var(x), x, regions=1)
    check(lambda x: xp.sum((x - xp.mean(x)) ** 2), x, regions=2)
    check(softmax, x, regions=3)
    check(softmax, x.astype(np.float32), regions=3)


FOLD_SIZES = [1023, 1024, 1025, 3 * 1024 + 7]


def _jax_turn(executor: str, i: int) -> int | None:
    """On jax in the ci profile (each check a new XLA program; the block and lane sizes are the Numba
    kernels' own), which checks the ``i``-th size runs: the even or the odd ones, alternately along the
    sizes, so every check still runs on half the sizes there; ``None`` (all) elsewhere and in deep."""
    return i % 2 if executor == "jax" and profile.current().sampled else None


@pytest.mark.parametrize("n", FOLD_SIZES)
def test_float32_reductions_fold_blocks_in_float32(executor, n):
    """float32 sums/means/variances fold 1024-blocks in float32 and join them in float64: within
    float32 tolerance of NumPy on both sides of a block boundary, with a large mean (var's update
    must not cancel), along a row and over columns; NaN and inf propagate."""
    rng = np.random.default_rng(n)  # its own generator: RNG's draws for the later tests stay as they were
    x = (rng.standard_normal((4, n)) * 10 + 1e3).astype(np.float32)
    special = x.copy()
    special[1, n // 2], special[2, -1] = np.nan, np.inf
    checks = [(lambda x: (xp.sum(x), xp.mean(x * 2), xp.var(x), xp.std(x, correction=1)), x),
              (lambda x: (xp.sum(x, axis=1), xp.var(x - 1, axis=1)), x),
              (lambda x: (xp.mean(x, axis=0), xp.var(x, axis=0)), x),
              (lambda x: (xp.sum(x, axis=1), xp.var(x, axis=1), xp.mean(x)), special)]
    turn = _jax_turn(executor, FOLD_SIZES.index(n))
    for j, (fn, operand) in enumerate(checks):
        if turn is None or j % 2 == turn:
            check(fn, operand)
    if xp.get_executor().name == "numba":
        jf, a = xp.jit(lambda x: (xp.sum(x), xp.var(x))), xp.asarray(x)
        jf(a)
        source = _compiled(jf, a).regions[0].source
        assert "fb.sum_block(t0, nb, T_float32(0))" in source and "mean_m2_block(t1, nb, T_float32(nb)" in source


def test_max_min_folds_in_lanes_keep_numpys_rules(executor):
    """max/min fold a block in eight lanes plus a tail: a NaN in any lane or in the tail wins, ±inf
    and ties as NumPy's, for rows shorter than, equal to and longer than the lanes and a block."""
    for i, n in enumerate((3, 8, 13, 1030)):
        turn = _jax_turn(executor, i)  # jax, ci profile: each size one of the two checks, in turn
        rng = np.random.default_rng(n)  # (not RNG: see above)
        x = rng.standard_normal((5, n))
        x[1, n - 1] = np.nan  # the tail (or the last lane)
        x[2, min(5, n - 1)] = np.nan  # a lane
        x[3, :] = -np.inf
        x[4, :] = 2.0
        x[4, n // 2] = np.inf
        if n > 1000 and xp.get_executor().name == "jax":  # jax.jit's own max/min over rows this long
            x[1:3] = rng.standard_normal((2, n))  # drop NaNs on CPU (jax 0.10.2, XLA's vectorised reduction)
        if turn in (None, 0):
            check(lambda x: (xp.max(x * 1.0, axis=1), xp.min(x * 1.0, axis=1), xp.max(x[3:] + 0.0)), x, regions=2)
        if turn in (None, 1):
            check(lambda x: (xp.max(x[:, :n - 1] * 1.0), xp.min(xp.abs(x[2:3]))), x)


def test_several_outputs_and_glue_between_kernels(executor):
    x = normal(20, 20)
    check(lambda x: (x + 1, x * 2, xp.sum(x * 3)), x, regions=1)
    # matmul runs between two kernels, the second reads the first's output
    check(lambda x: xp.tanh(xp.exp(x) @ x) * 2 - 1, x, regions=2)
    check(lambda x: xp.sort(x * 2, axis=0) + x, x, regions=2)


def test_internal_primitives_fuse(executor):
    """broadcast_in_dim (any axes), convert_element_type and select join the region (one kernel)."""
    x, col, row = normal(40, 30), normal(40), normal(30, dtype=np.float32)

    def f(x, col, row):
        c = I.broadcast_in_dim(col, (40, 30), (0,))  # (40,) along the rows: not a trailing broadcast
        r = I.convert_element_type(I.broadcast_in_dim(row, (40, 30), (1,)), xp.float64)
        return I.select(x > c, x * r, c - I.convert_element_type(x < 0, xp.float64))

    check(f, x, col, row, regions=1)
    # the same operand broadcast along two different axes is two operands of one kernel
    sq = normal(30)
    check(lambda v: I.broadcast_in_dim(v, (30, 30), (0,)) - I.broadcast_in_dim(v, (30, 30), (1,)) * v, sq,
          regions=1)
    # ... and a reduction still ends the region
    check(lambda x, col: xp.sum(I.select(x > 0, x, I.broadcast_in_dim(col, (40, 30), (0,))), axis=1),
          x, col, regions=1)


def _buffers_read(fn, *arrays):
    """How many array buffers the fused kernels of jit(fn) read (None off numba)."""
    if xp.get_executor().name != "numba":
        return None
    args = [xp.asarray(a) for a in arrays]
    jf = xp.jit(fn)
    jf(*args)
    return sum(len(set(r.positions.values())) for r in _compiled(jf, *args).regions)


def _device(x):
    return xp.get_executor().default_device()


def test_creation_primitives_fuse_bit_for_bit(executor):
    """full, iota, arange and eye are computed in the kernel from the element's index: one kernel,
    and the created values themselves (stored outputs) equal the eager ones exactly."""
    x = normal(40, 30, dtype=np.float32)

    def f(x):
        d = _device(x)
        i0 = I.iota(xp.float32, (40, 30), 0, device=d)
        i1 = I.iota(xp.int32, (40, 30), 1, device=d)
        e = xp.eye(40, 30, k=2, dtype=xp.float32, device=d)
        z = xp.full((40, 30), 0.5, dtype=xp.float32, device=d)
        return x * i0 + xp.astype(i1, xp.float32) - e + z, i1, e

    check(f, x, regions=1)
    assert _buffers_read(f, x) in (None, 1)  # the kernel reads x only: nothing created is materialised
    got = xp.jit(f)(xp.asarray(x))
    want = on_numpy(f, xp.asarray(x))
    for g, w in zip(got[1:], want[1:]):
        assert np.array_equal(np.asarray(g), np.asarray(w))

    n = 5000
    v = normal(n)

    def g(v):
        d = _device(v)
        r = xp.arange(3, 3 + 2 * n, 2, dtype=xp.int64, device=d)  # int: start + i * step
        rf = xp.arange(-7.0, n - 7.0, dtype=xp.float32, device=d)  # float, exact step: fused
        return v * xp.astype(r, xp.float64) + xp.astype(rf, xp.float64), r, rf

    check(g, v, regions=1)
    assert _buffers_read(g, v) in (None, 1)
    for a, b in zip(xp.jit(g)(xp.asarray(v))[1:], on_numpy(g, xp.asarray(v))[1:]):
        assert np.array_equal(np.asarray(a), np.asarray(b))
    # a float step whose products round (and linspace) run op by op on numba: their bits are NumPy's
    h = lambda v: (v + xp.arange(0.0, n * 0.1, 0.1, device=_device(v))[:n],  # noqa: E731
                   v * xp.linspace(0, 1, n, device=_device(v)))
    out = check(h, v)
    if xp.get_executor().name == "numba":
        for a, b in zip(out, on_numpy(h, xp.asarray(v))):
            assert np.array_equal(np.asarray(a), np.asarray(b))
    # a 1-D iota against a reduction's block (rows and columns kernels read the flat index)
    m = normal(40, 30)
    check(lambda m: xp.sum(m * I.iota(xp.float64, (40, 30), 1, device=_device(m)), axis=0), m, regions=1)
    check(lambda m: xp.max(m + I.iota(xp.float64, (40, 30), 0, device=_device(m)), axis=1), m, regions=1)


def test_regions_of_creation_primitives_alone_run_op_by_op(executor):
    # nothing is read: NumPy fills an array as fast as a kernel would, without compiling one
    jf = xp.jit(lambda: (xp.zeros((64, 64), device=xp.get_executor().default_device()),
                         I.iota(xp.int64, (64, 64), 1, device=xp.get_executor().default_device())))
    got = jf()
    assert np.array_equal(np.asarray(got[1]), np.broadcast_to(np.arange(64), (64, 64)))
    assert not np.asarray(got[0]).any()
    if xp.get_executor().name == "numba":
        assert _compiled(jf).regions == []


def test_shifts_follow_numpy(executor):
    for dt in (np.uint32, np.int8, np.int64, np.uint8):
        a = RNG.integers(-100 if np.dtype(dt).kind == "i" else 0, 100, 64).astype(dt)
        b = np.array([0, 1, 3, 7, 8, 31, 32, 40, 63, 64, 70, 2] * 6)[:64].astype(dt)
        if np.dtype(dt).kind == "i":
            b[::7] = -3  # negative counts: NumPy gives 0 (left) and the sign (right)
        check(lambda a, b: (a << b) ^ (a >> b), a, b, regions=1)


def test_shifts_by_literal_counts_follow_numpy(executor):
    """A literal count in range is a masked shift in the kernel; one outside keeps NumPy's rule.  Every
    (dtype, count) on every executor but jax, where each literal is a new program: in the ci profile
    there each count (0, 1, 3, bits - 1, bits, bits + 5, -3) takes one dtype in turn, so every count
    and every dtype still runs (tests/covering.py); all of them in the deep profile."""
    from tests import covering

    dtypes = (np.uint32, np.int8, np.int64, np.uint8)
    grid = [(k, dt) for k in range(7) for dt in dtypes if k < 6 or np.dtype(dt).kind == "i"]
    taken = set(covering.rotate(grid, axis=1) if executor == "jax" else grid)
    for dt in dtypes:
        signed = np.dtype(dt).kind == "i"
        a = RNG.integers(-100 if signed else 0, 100, 64).astype(dt)
        bits = np.dtype(dt).itemsize * 8
        for k, c in enumerate([0, 1, 3, bits - 1, bits, bits + 5] + ([-3] if signed else [])):
            if (k, dt) in taken:
                check(lambda a, c=c: ((a << c) ^ (a >> c)) + a, a, regions=1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_random_under_jit_fuses_bit_for_bit(dtype):
    """threefry and the float conversions run in fused kernels on numba, with the same bits as eager
    (and as jax.random): the kernels do not contract a * b + c, which the float code emulates
    exactly.  (jit's random bits on every executor, fused or not: tests/test_random_jit.py.)"""
    from arrayx import random as xr
    from arrayx.executors.numba.fusion import lowering as _numba_fusion

    if not base.get("numba").available():
        pytest.skip(f"executor 'numba' unavailable: {base.get('numba').unavailable_reason}")
    key = xr.key(42)
    n = 20_000
    draws = {
        "normal": lambda k: xr.normal(k, (n,), dtype=dtype),
        "uniform": lambda k: xr.uniform(k, (n,), dtype=dtype, minval=-2.0, maxval=3.0),
        "bits": lambda k: xr.bits(k, (n,), dtype=xp.uint32),
        "exponential": lambda k: xr.exponential(k, (n,), dtype=dtype),
    }
    with xp.use_executor("numba"):
        for name, draw in draws.items():
            eager = np.asarray(on_numpy(draw, key))
            k = xp.asarray(np.asarray(key))
            jf = xp.jit(draw)
            got = np.asarray(jf(k))
            assert got.dtype == eager.dtype, name
            np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), eager.view(f"u{got.itemsize}"), err_msg=name)
            runners = _compiled(jf, k).regions
            # a kernel ran: the region's, or its transposed-operand variant (RegionRunner._run_transposed)
            assert runners and all(r.failed is None and (r.kernel is not None or r._transposed is not None)
                                   for r in runners), name
            steps = _numba_fusion.regions_of(jf.trace(k).graph, 0)
            glue = {s.prim.name for s in steps if not isinstance(s, _numba_fusion.Region)}
            assert not glue & {"bitwise_left_shift", "bitwise_right_shift", "bitwise_or", "multiply"}, (name, glue)


def test_non_contiguous_inputs(executor):
    x = normal(40, 30)
    check(lambda x: x * 2 + xp.exp(x), x.T, regions=1)
    check(lambda x: xp.sum(x * x, axis=1), x[::2, ::3], regions=1)
    check(lambda x, y: x * y, x[:20, 5:25], x.T[:20, :20].T, regions=1)


@pytest.mark.parametrize("shape", [(0,), (3, 0), (1,), (1, 1), ()])
def test_size_0_and_1(executor, shape):
    x = normal(*shape)
    check(lambda x: selu(x) * 2, x, fused=False)
    check(lambda x: (xp.sum(x * 2), xp.prod(x + 1), xp.any(x > 0)), x, fused=False)
    if 0 not in shape:
        check(lambda x: (xp.max(x * 2), xp.mean(x), xp.var(x)), x, fused=False)


def test_parallel_kernels_match(executor):
    ex = base.get("numba")
    if ex.available():
        ex.fusion_parallel_size = 0  # parallel kernels even on small arrays
    # positive values: float32 sums without cancellation (jax's reduction order differs from NumPy's)
    x = np.random.default_rng(3).uniform(0.5, 1.5, (3000, 7)).astype(np.float32)
    check(lambda x: (selu(x), xp.var(x), xp.sum(x * 2, axis=0), xp.max(x, axis=1)), x)
    check(softmax, x.T.copy())


def test_buffer_reuse_never_overwrites_live_values(executor):
    x = normal(30, 40)
    # e is consumed by the next region only: its buffer may be reused; x and the outputs never
    got = check(softmax, x)
    check(lambda x: (xp.exp(x) @ x.T, xp.exp(x) + 1), x)
    np.testing.assert_array_equal(np.asarray(xp.asarray(x)), x)
    assert np.all(np.isfinite(np.asarray(got)))


@pytest.fixture
def fresh_pool(monkeypatch):
    """The buffer pool on, pooling buffers of any size, with counts of this test only."""
    from arrayx.executors.common import buffer_pool as bp

    pool = bp.BufferPool(min_bytes=0)
    monkeypatch.setattr(bp, "POOL", pool)
    monkeypatch.setattr(bp, "ENABLED", True)
    return pool


def test_fused_outputs_from_the_pool_never_overwrite_live_results(executor, fresh_pool):
    """Outputs (and copies of non-contiguous operands) come from the buffer pool; a result the
    user holds (the array, a view of it, a host view) is never handed out again."""
    x = normal(64, 50)
    fn = lambda x: ((x * 2 + 1) * x - 0.5) * x + 3  # noqa: E731 (a flat kernel)
    jf, a = xp.jit(fn), xp.asarray(x)
    r1, r2 = jf(a), jf(a)  # both alive
    first = np.array(r1)  # a copy: what r1, r2 and the kept views must still hold at the end
    assert_same(r1, fn(x))
    assert not np.shares_memory(np.asarray(r1), np.asarray(r2))
    view, host = jf(a)[::3], np.asarray(jf(a))  # only a view / a host view of each result kept
    for _ in range(3):
        jf(a)  # dropped at once: its buffer may come back; the kept ones may not
    for got in (r1, r2, host):
        np.testing.assert_array_equal(np.asarray(got), first)
    np.testing.assert_array_equal(np.asarray(view), first[::3])
    y, ys = a, [np.array(a)]
    for _ in range(4):  # x = f(x): the input dies as the output is made
        y = jf(y)
        ys.append(np.array(y))
    for before, after in zip(ys, ys[1:]):  # each step from the previous one's kept copy
        np.testing.assert_array_equal(after, np.asarray(jf(xp.asarray(before))))
    assert_same(xp.asarray(ys[1]), fn(x))
    got = xp.jit(lambda x: xp.exp(x) * 2)(xp.asarray(x.T))  # a non-contiguous operand, copied
    assert_same(got, np.exp(x.T) * 2)
    np.testing.assert_array_equal(np.asarray(a), x)
    if xp.get_executor().name == "numba":
        stats = fresh_pool.stats()
        assert stats["hits"] >= 4 and stats["new"] >= 4, stats  # buffers reused, and new ones for kept results


def test_fused_outputs_without_the_pool(executor, monkeypatch):
    from arrayx.executors.common import buffer_pool as bp

    monkeypatch.setattr(bp, "ENABLED", False)
    pool = bp.BufferPool(min_bytes=0)
    monkeypatch.setattr(bp, "POOL", pool)
    x = normal(64, 50)
    check(lambda x: xp.exp(x) * 2 + 1, x, regions=1)
    assert pool.stats()["new"] == 0  # NumPy's own allocations


def test_donated_outputs_are_written_through_the_operand(executor):
    """softmax's last region (e / s) writes into e's buffer through e's own slice (one pointer, so
    LLVM vectorises the loop), rows and flat kernels alike; values as NumPy's, inputs untouched."""
    x = normal(30, 40)
    def flat(x):  # y's kernel, sort (glue) reading y, then a flat kernel that may take y's buffer
        y = xp.exp(x)
        return y * xp.sort(y, axis=0) + 1

    for fn in (softmax, flat):
        check(fn, x)
        if xp.get_executor().name == "numba":
            jf, a = xp.jit(fn), xp.asarray(x)
            jf(a)
            last = _compiled(jf, a).regions[-1]
            assert last.donors == {0: 1} or last.donors == {0: 0}, last.source
            assert f"ptr.store(x{last.donors[0]}, " in last.source, last.source  # through the operand
    np.testing.assert_array_equal(np.asarray(xp.asarray(x)), x)


HOSTILE = "__import__('os').system('echo pwned')\n#\"'; import sys"


def test_generated_source_never_holds_user_strings():
    if not base.get("numba").available():
        pytest.skip("numba unavailable")
    ns: dict = {}
    exec(f"def f(**kw):\n    return {{k: v * 2 + 1 for k, v in kw.items()}}", ns)  # noqa: S102
    f = ns["f"]
    f.__name__ = f.__qualname__ = HOSTILE
    with xp.use_executor("numba"):
        x = xp.asarray(normal(50, 10))
        jf = xp.jit(f)
        out = jf(**{HOSTILE: x, "ok": x})
        assert_same(out[HOSTILE], np.asarray(x) * 2 + 1)
        runners = _compiled(jf, **{HOSTILE: x, "ok": x}).regions
    assert runners
    for r in runners:
        assert "pwned" not in r.source and "import sys" not in r.source and "kw" not in r.source
    from arrayx.executors.numba import kernels as _numba_kernels

    folder = _numba_kernels.cache_dir()
    if folder is not None:
        for path in folder.glob("fused_*.py"):
            assert "pwned" not in path.read_text()


_CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import arrayx as xp
from arrayx.core import executor as base
import arrayx.executors.numba.fusion.lowering as _numba_fusion
with xp.use_executor("numba"):
    x = xp.asarray(np.linspace(-3, 3, 100_000))
    f = xp.jit(lambda x: xp.sum(xp.where(x > 0, x, xp.exp(x) - 1) * 1.5))  # a rows kernel
    g = xp.jit(lambda x: xp.where(x > 0, x, xp.exp(x) - 1) * 1.5 > 0.5)  # a flat one, bool stores
    r = [float(f(x)), np.asarray(g(x)).tolist()]
print(json.dumps(dict(_numba_fusion.kernel_stats(), result=r)))
"""


def test_kernels_load_from_disk_in_a_new_process(tmp_path):
    if not base.get("numba").available():
        pytest.skip("numba unavailable")
    env = dict(os.environ, ARRAYX_NUMBA_CACHE_DIR=str(tmp_path / "cache"))

    def run():
        out = subprocess.run([sys.executable, "-c", _CHILD, str(REPO)], env=env, capture_output=True, text=True,
                             timeout=600)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    first, second = run(), run()
    assert first["kernels"] == 2 and first["compiled"] == 2 and first["loaded"] == 0
    assert second["kernels"] == 2 and second["compiled"] == 0 and second["loaded"] == 2
    assert first["result"] == second["result"]
    x = np.linspace(-3, 3, 100_000)
    assert second["result"][1] == (np.where(x > 0, x, np.expm1(x)) * 1.5 > 0.5).tolist()


def test_cache_is_pruned_to_the_newest_kernels(tmp_path):
    from arrayx.executors.numba.fusion import lowering as F

    for i in range(5):
        for suffix in (".py", ".kernel-22.py311.nbi", ".kernel-22.py311.1.nbc"):
            p = tmp_path / f"fused_{i:024d}{suffix}"
            p.write_text("x")
            os.utime(p, (1000 + i, 1000 + i))
    (tmp_path / "add_vv_float64.py").write_text("x")  # eager kernels are not the fused cache's
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)  # the cache folder is used through a held handle
    try:
        F._prune(fd, keep=2)
    finally:
        os.close(fd)
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["add_vv_float64.py"] + sorted(
        f"fused_{i:024d}{s}" for i in (3, 4) for s in (".py", ".kernel-22.py311.nbi", ".kernel-22.py311.1.nbc"))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_inline_transcendentals_special_values_and_ulps(executor, dtype):
    special = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-40, -1e-40, 100.0, -100.0, 800.0, -800.0] * 40)
    dense = np.linspace(-30, 30, 20_001)
    for fn in (xp.exp, xp.expm1, xp.tanh):
        x = special.astype(dtype)
        got = np.asarray(check(lambda v: fn(v) * 1.0, x, regions=1))
        want = np.asarray(on_numpy(lambda v: fn(v), xp.asarray(x)))
        if executor != "jax":  # (XLA flushes the subnormals: the jax-flushes-subnormals deviation)
            exact = ~np.isfinite(want) | (want == 0) | (x == 0)
            np.testing.assert_array_equal(np.signbit(got[exact]), np.signbit(want[exact]))  # -0 stays -0
            np.testing.assert_array_equal(got[exact], want[exact])  # NaN/inf/0 exactly
        if executor != "numba":  # the ulp bound is the inline code's (other executors: check's tolerance)
            continue
        x = dense.astype(dtype)
        got = np.asarray(check(lambda v: fn(v) + 0.0, x, regions=1))
        want = np.asarray(on_numpy(lambda v: fn(v), xp.asarray(x)))
        ulps = np.abs(got.astype(np.float64) - want) / np.spacing(np.abs(want).astype(dtype)).astype(np.float64)
        bound = 6 if fn is xp.tanh and dtype == np.float32 else 4  # float32 tanh: a rational, 6 ulp (bench_fused_math)
        assert ulps.max() <= bound, (fn.__name__, float(ulps.max()), float(x[np.argmax(ulps)]))


# -- no buffer is written while a view of it, or a callback's copy of it, is alive ---------------------

def _views():
    """name -> a function returning a value that may share memory with its operand (2-D, 64 x 128)."""
    from arrayx import lax
    from arrayx.transforms.custom import stop_gradient

    return {
        "T": lambda a: a.T,
        "matrix_transpose": xp.matrix_transpose,
        "permute_dims": lambda a: xp.permute_dims(a, (1, 0)),
        "reshape": lambda a: xp.reshape(a, (128, 64)),
        "reshape_flat": lambda a: xp.reshape(a, (-1,)),
        "slice_step": lambda a: a[::2],
        "index_row": lambda a: a[0],
        "index_column": lambda a: a[:, 3],
        "slice_rows": lambda a: a[1:],
        "expand_dims": lambda a: xp.expand_dims(a, axis=0),
        "squeeze": lambda a: xp.squeeze(xp.reshape(a, (1, 64, 128)), axis=0),
        "moveaxis": lambda a: xp.moveaxis(a, 0, 1),
        "flip": lambda a: xp.flip(a, axis=0),
        "broadcast_to": lambda a: xp.broadcast_to(a, (2, 64, 128)),
        "astype_same": lambda a: xp.astype(a, a.dtype, copy=False),
        "real": xp.real,
        "positive": lambda a: +a,
        # row 5 of a, through a view of its first 8 rows (unstacking all 64 rows is a 64-output
        # program on jax, ~1 s CPU to compile)
        "unstack": lambda a: xp.unstack(a[:8])[5],
        "diagonal": xp.linalg.diagonal,
        "stop_gradient": stop_gradient,
        "dynamic_slice": lambda a: lax.dynamic_slice(a, (xp.asarray(2), xp.asarray(3)), (8, 16)),
    }


VIEWS = sorted(_views())


def _between_regions(view, uses_view_later: bool):
    """A region computing ``a``, ``view(a)``, a region reading ``a`` (whose output may take a's buffer)."""
    def fn(x):
        a = x * 2.0 - 0.5  # exact: jitted and eager agree bit for bit
        b = view(a)
        c = a + 1.0
        if uses_view_later:
            return c, b * 3.0
        return b, c
    return fn


def _view_cases() -> list:
    """``executor, name, later``: every view both ways on every executor, except on jax (two new programs
    a case) in the ci profile, where each view is returned or used later in turn (tests/covering.py)."""
    from tests import covering

    return covering.on_executors([(name, later) for later in (False, True) for name in VIEWS],
                                 ids=lambda v: {False: "returned", True: "used_later"}.get(v, v))


@pytest.mark.parametrize("executor, name, later", _view_cases(), indirect=["executor"])
def test_jit_never_overwrites_a_live_view(executor, name, later):
    """A fused region's output never goes into a buffer a live view points into:
    jitted equals eager bit for bit, with every view-producing primitive between two regions."""
    fn = _between_regions(_views()[name], later)
    x = xp.asarray(normal(64, 128))
    want = [np.array(v) for v in fn(x)]  # eager, this executor
    got = [np.array(v) for v in xp.jit(fn)(x)]
    # XLA contracts x * 2 - 0.5 into one fused multiply-add: jax within rounding, the others exactly
    same = np.testing.assert_array_equal if executor != "jax" else assert_same
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        same(g, w)
    for g, w in zip(got, on_numpy(fn, x)):
        same(g, np.asarray(w))


def test_jit_never_overwrites_a_value_handed_to_a_callback(executor):
    """The callback may keep the array it is given: the buffer is never written afterwards."""
    kept = []

    def fn(x):
        a = x * 2.0 - 0.5
        xp.debug.callback(lambda v: kept.append(v), a)
        return a + 1.0

    x = xp.asarray(normal(64, 128))
    got = np.array(xp.jit(fn)(x))
    xs = np.asarray(x)
    assert_same(got, xs * 2.0 - 0.5 + 1.0)
    assert kept
    assert_same(np.asarray(kept[-1]), xs * 2.0 - 0.5)


def test_jit_repro_of_issue_25(executor):
    """``a = exp(x); b = a.T; c = a + 1`` returned b off by exactly 1.0 on numba."""
    def fn(x):
        a = xp.exp(x)
        return a.T, a + 1.0

    x = xp.asarray(normal(128, 128))
    b, c = xp.jit(fn)(x)
    np.testing.assert_allclose(np.asarray(b), np.exp(np.asarray(x)).T, rtol=1e-14, atol=0)
    np.testing.assert_allclose(np.asarray(c), np.exp(np.asarray(x)) + 1.0, rtol=1e-14, atol=0)


def _fresh_calls():
    """primitive name -> (a call of the public function binding it, operand kind: "f" float, "i" int, "b" bool)."""
    from arrayx.executors.common.fusion import FRESH_RESULTS

    binary = {"add", "subtract", "multiply", "divide", "floor_divide", "remainder", "pow", "maximum", "minimum",
              "atan2", "hypot", "logaddexp", "copysign", "nextafter", "equal", "not_equal", "greater",
              "greater_equal", "less", "less_equal"}
    int_binary = {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"}
    bool_fns = {"logical_and", "logical_or", "logical_xor"}
    calls = {}
    for name in FRESH_RESULTS:
        fn = getattr(xp, name, None)
        if name in binary:
            calls[name] = (lambda x, fn=fn: fn(x, x), "f")
        elif name in int_binary:
            calls[name] = (lambda x, fn=fn: fn(x, x % 3), "i")
        elif name in bool_fns:
            calls[name] = (lambda x, fn=fn: fn(x, x), "b")
        elif name in ("logical_not",):
            calls[name] = (fn, "b")
        elif name == "bitwise_invert":
            calls[name] = (fn, "i")
        elif name in ("where", "select"):
            calls[name] = (lambda x: xp.where(x > 0, x, x), "f")
        elif name == "clip":
            calls[name] = (lambda x: xp.clip(x, -10.0, 10.0), "f")
        elif name in ("matmul", "tensordot", "vecdot"):
            calls[name] = ({"matmul": lambda x: x @ x.T, "tensordot": lambda x: xp.tensordot(x, x.T, axes=1),
                            "vecdot": lambda x: xp.vecdot(x, x)}[name], "f")
        elif name in ("concat", "stack"):
            calls[name] = (lambda x, fn=fn: fn([x]), "f")
        elif name in ("sum", "prod", "mean", "var", "std", "max", "min", "any", "all", "argmax", "argmin",
                      "cumulative_sum", "cumulative_prod", "sort", "argsort"):
            calls[name] = (lambda x, fn=fn: fn(x, axis=-1), "f")
        else:
            calls[name] = (fn, "f")
    return calls


@pytest.mark.parametrize("name", sorted(_fresh_calls()))
def test_fresh_results_never_share_memory_with_operands(name):
    """The alias analysis (executors.common.fusion.FRESH_RESULTS``) trusts these primitives to return new
    memory on the NumPy and Numba executors: checked here, with operands of every size class."""
    call, kind = _fresh_calls()[name]
    for ex in ("numpy", "numba"):
        with xp.use_executor(ex):
            for shape in ((1, 1), (4, 5), (512, 2048)):  # the last reaches Numba's native kernels
                x = np.random.default_rng(1).uniform(0.5, 2.0, shape)
                host = {"f": x, "i": (x * 7).astype(np.int64), "b": x > 1.0}[kind]
                a = xp.asarray(host)
                out = call(a)
                assert not np.shares_memory(np.asarray(out), np.asarray(a)), (name, ex, shape)


def test_long_chains_are_split_into_capped_regions(executor):
    """A run of elementwise ops longer than ``MAX_REGION_OPS`` becomes several kernels (a kernel's
    compile time grows faster than its size), each of at most that many equations; values as NumPy's."""
    from arrayx.executors.numba.fusion import lowering as F

    n = 3 * F.MAX_REGION_OPS + 5

    def chain(x):
        y = x
        for i in range(n // 2):
            y = (y * 0.999 + 0.001) if i % 2 else xp.sin(y) + 0.5
        return y

    check(chain, normal(40, 50), regions=-(-(n // 2 * 2) // F.MAX_REGION_OPS) if executor == "numba" else None)
    if executor == "numba":
        jf, a = xp.jit(chain), xp.asarray(normal(40, 50))
        jf(a)
        runners = _compiled(jf, a).regions
        assert all(len(r.plan.stored) >= 1 for r in runners)
        from arrayx.executors.numba.fusion.lowering import regions_of

        steps = regions_of(jf.trace(a).graph, 0)
        assert max(len(s.eqns) for s in steps if hasattr(s, "eqns")) <= F.MAX_REGION_OPS
