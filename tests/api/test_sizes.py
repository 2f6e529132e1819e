"""Sizes at the edges, on every executor: shapes too large for any buffer (or for one executor)
raise ValueError before an executor sees them, and size-0 inputs give NumPy's shapes and values.

XLA aborts the whole process (SIGABRT) on a shape whose byte size overflows int64, so the check
comes first, on every executor; the message names the function, the shape and the limit.  Size-0
inputs (reductions, searchsorted, index arrays, setitem, sort, repeat, unique, norms) are compared
with the NumPy executor; Dask runs them over several chunks (``dask_chunks``).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import arrayx as xp
from arrayx.api._checks import MAX_BUFFER_BYTES, check_size
from arrayx.core import executor as base
from tests.conftest import assert_matches_numpy, assert_same

HUGE = 2**62

# (call, function named in the message, shape named in the message)
BEYOND_ANY_EXECUTOR = [
    (lambda: xp.zeros((HUGE, HUGE)), "zeros", (HUGE, HUGE)),
    (lambda: xp.ones((2**31, 2**31)), "ones", (2**31, 2**31)),
    (lambda: xp.empty(2**61), "empty", (2**61,)),
    (lambda: xp.full((2**33, 2**33), 1.0), "full", (2**33, 2**33)),
    (lambda: xp.eye(2**31), "eye", (2**31, 2**31)),
    (lambda: xp.eye(2**40, 2**30, dtype=xp.int8), "eye", (2**40, 2**30)),
    (lambda: xp.arange(HUGE), "arange", (HUGE,)),
    (lambda: xp.arange(-HUGE, HUGE, 2, dtype=xp.int64), "arange", (HUGE,)),
    (lambda: xp.zeros((HUGE, HUGE, 0)), "zeros", (HUGE, HUGE, 0)),  # zero dims do not shrink the extents
    (lambda: xp.reshape(xp.zeros(0), (HUGE, HUGE, 0)), "reshape", (HUGE, HUGE, 0)),
    (lambda: xp.broadcast_to(xp.ones(1), (HUGE, HUGE)), "broadcast_to", (HUGE, HUGE)),
    (lambda: xp.random.normal(xp.random.key(0), (HUGE, HUGE)), "normal", (HUGE, HUGE)),
    (lambda: xp.random.randint(xp.random.key(0), (HUGE, 4), 0, 9), "randint", (HUGE, 4)),
]


@pytest.mark.parametrize("case", range(len(BEYOND_ANY_EXECUTOR)))
def test_shapes_beyond_int64_bytes_raise_value_error_first(executor, case):
    call, fname, shape = BEYOND_ANY_EXECUTOR[case]
    with pytest.raises(ValueError, match=rf"^{fname}: shape {shape!r}".replace("(", r"\(").replace(")", r"\)")) as info:
        call()
    assert "more than any executor can address (2**63 - 1 bytes" in str(info.value)


def test_arange_sizes_are_named(executor):
    with pytest.raises(ValueError, match=r"arange: shape \(1000000000000000000,\) of float64 \(1000000000000000000 elements\)"):
        xp.arange(0, 1e18)
    with pytest.raises(ValueError, match=r"arange: \[0, inf\) in steps of 1 has infinitely many values"):
        xp.arange(0, math.inf)


def _needs_more_memory_than(name: str) -> int | None:
    limit = base.get(name).memory_limit()
    return None if limit is None else limit[0]


def test_arrays_larger_than_memory_raise_on_eager_executors(executor):
    limit = _needs_more_memory_than(executor)
    n = 2**40  # 8 TiB of float64
    if limit is None or limit >= n * 8:
        pytest.skip(f"the {executor!r} executor allows {n} float64 values here")
    for call, fname in [(lambda: xp.zeros(n), "zeros"), (lambda: xp.ones((2**20, 2**20)), "ones"),
                        (lambda: xp.full((n,), 2.0), "full"), (lambda: xp.empty((n,)), "empty"),
                        (lambda: xp.eye(2**20), "eye"), (lambda: xp.arange(float(n)), "arange"),
                        (lambda: xp.random.uniform(xp.random.key(1), (n,)), "uniform")]:
        with pytest.raises(ValueError, match=rf"^{fname}: shape .* needs 8 TiB on the '{executor}' executor, "
                                             r"more than one array can have there \("):
            call()


def test_linspace_checks_the_host_array_it_computes_first(executor):
    with pytest.raises(ValueError, match=r"linspace: shape \(1099511627776,\) of float64 .* needs 8 TiB"):
        xp.linspace(0.0, 1.0, 2**40)


def test_dask_builds_large_lazy_arrays_within_its_chunk_limit():
    ex = base.get("dask")
    if not ex.available():
        pytest.skip(f"dask unavailable: {ex.unavailable_reason}")
    with xp.use_executor("dask"):
        x = xp.zeros(2**40)  # 8 TiB, lazy: nothing is allocated
        assert x.shape == (2**40,) and x.dtype == xp.float64
        limit, why = ex.memory_limit()
        assert "chunks of Dask's array.chunk-size" in why
        with pytest.raises(ValueError, match=r"zeros: shape \(36028797018963968,\) of float64 .* on the 'dask' executor"):
            xp.zeros(2**55)  # 256 PiB: more chunks than a client can hold


def test_sizes_at_the_limit_pass_the_check():
    check_size("zeros", (MAX_BUFFER_BYTES // 8,), np.float64)  # no executor: only the int64 rule
    check_size("zeros", (2**62, 0, 1), np.int8)
    with pytest.raises(ValueError, match="2\\*\\*63 - 1 bytes"):
        check_size("zeros", (MAX_BUFFER_BYTES // 8 + 1,), np.float64)
    assert xp.zeros((0, 2**40)).shape == (0, 2**40)  # empty arrays need no memory
    assert xp.reshape(xp.zeros((2, 3)), (-1,)).shape == (6,)


# -- size-0 arrays ---------------------------------------------------------------------------

@pytest.mark.dask_chunks(2, 1)
@pytest.mark.parametrize("fn,shape,want_shape", [
    (lambda x: xp.min(x, axis=0), (3, 0, 0), (0, 0)),
    (lambda x: xp.min(x, axis=()), (3, 0, 0), (3, 0, 0)),
    (lambda x: xp.max(x, axis=(0, 2)), (3, 0, 2), (0,)),
    (lambda x: xp.max(x, axis=2), (0, 1, 1), (0, 1)),
    (lambda x: xp.max(x, axis=(), keepdims=True), (0, 2), (0, 2)),
    (lambda x: xp.sum(x, axis=1), (3, 0), (3,)),
    (lambda x: xp.prod(x, axis=(0, 1), keepdims=True), (0, 3), (1, 1)),
    (lambda x: xp.nonzero(x), (4, 0, 0), None),
    (lambda x: xp.roll(x, 1), (3, 0), (3, 0)),
    (lambda x: xp.roll(x, 2, axis=1), (0, 3), (0, 3)),
    (xp.unique_values, (1, 4, 0), (0,)),
    (lambda x: xp.unique_counts(x), (2, 0), None),
    (xp.linalg.vector_norm, (3, 4, 0), ()),
    (lambda x: xp.linalg.vector_norm(x, axis=1), (3, 0), (3,)),
    (lambda x: xp.linalg.matrix_norm(x, ord=2), (2, 3, 0), (2,)),
    (lambda x: xp.linalg.matrix_norm(x, ord=2), (0, 3, 3), (0,)),
    (lambda x: xp.cumulative_sum(x, axis=0, include_initial=True), (0, 2), (1, 2)),
    (lambda x: xp.sort(x, axis=0), (0, 3), (0, 3)),
    (lambda x: xp.repeat(x, 2, axis=0), (0, 3), (0, 3)),
    (lambda x: xp.repeat(x, xp.asarray([1, 0, 2]), axis=0), (3, 0), (3, 0)),
])
def test_size_zero_inputs(executor, fn, shape, want_shape):
    x = xp.zeros(shape, dtype=xp.int8 if "unique" in repr(fn) else xp.float64)
    out = assert_matches_numpy(fn, x)
    if want_shape is not None:
        assert out.shape == want_shape


@pytest.mark.dask_chunks(2, 1)
def test_size_zero_searchsorted(executor):
    s = xp.asarray([1.0, 2.0, 3.0])
    assert assert_matches_numpy(xp.searchsorted, s, xp.zeros((2, 0))).shape == (2, 0)
    assert assert_matches_numpy(xp.searchsorted, s, xp.zeros((0, 3))).shape == (0, 3)
    out = assert_matches_numpy(xp.searchsorted, xp.zeros(0), xp.asarray([[1.0, 2.0]]))
    assert np.asarray(out).tolist() == [[0, 0]]


@pytest.mark.dask_chunks(2, 1)
def test_size_zero_index_arrays_and_setitem(executor):
    a = xp.reshape(xp.arange(9.0), (3, 3))
    out = assert_matches_numpy(lambda a, i, j: a[i, j], a, xp.zeros((1, 0), dtype=xp.uint8), xp.zeros(0, dtype=xp.uint8))
    assert out.shape == (1, 0)
    assert assert_matches_numpy(lambda a, i: a[i], a, xp.zeros(0, dtype=xp.int64)).shape == (0, 3)

    def set_none_0(a):
        a = xp.asarray(a, copy=True)
        a[None, 0] = 1
        return a

    assert assert_matches_numpy(set_none_0, xp.zeros((2, 0))).shape == (2, 0)
    with pytest.raises(IndexError):
        set_none_0(xp.zeros((0, 3)))

    def set_empty_region(a, v):  # a size-0 value written into a size-0 region
        a = xp.asarray(a, copy=True)
        a[0:0, :] = v
        return a

    host = np.asarray([[[-1], [127]]], dtype=np.int8)
    for x in (xp.asarray(host), xp.asarray(np.repeat(host, 2, axis=0))[::2]):  # contiguous and strided
        out = assert_matches_numpy(set_empty_region, x, xp.asarray([2], dtype=xp.int8))
        assert_same(out, host)
    with pytest.raises(ValueError):  # a value that does not broadcast to the empty region still fails
        set_empty_region(xp.asarray(host), xp.asarray([1, 2, 3], dtype=xp.int8))

    def add_at(a, i):
        return a.at[i].add(1.0)

    assert assert_matches_numpy(add_at, xp.zeros((0, 3)), xp.zeros(0, dtype=xp.int64)).shape == (0, 3)
