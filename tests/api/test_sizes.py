"""Shapes too large for any buffer, or for one executor, raise ValueError before an executor sees them.

XLA aborts the whole process (SIGABRT) on a shape whose byte size overflows int64, so the check
comes first, on every executor; the message names the function, the shape and the limit.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import arrayx as xp
from arrayx.api._checks import MAX_BUFFER_BYTES, check_size
from arrayx.core import executor as base

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
