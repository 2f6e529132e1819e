"""Eager paths of the host executors (issue 30: client calls as fast as on plain NumPy): ``x ** 2`` as a
square, large results of the NumPy executor's own divide/reciprocal/expm1/tanh in the buffer pool, and
in-place operators on the Numba executor written in place.  Values compare with NumPy and with the
NumPy executor on every executor; the rest checks which path ran, never how long it took."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as ax
from arrayx.executors.common import buffer_pool as bp
from tests.conftest import assert_matches_numpy

SPECIALS = [-0.0, 0.0, np.inf, -np.inf, np.nan, 1e200, -1e-200, 3.0, -1.5, 5e-324]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_pow_two_equals_numpy_power(executor, dtype):
    with np.errstate(over="ignore"):
        host = np.array(SPECIALS, dtype=dtype)
    x = ax.asarray(host.copy())
    with np.errstate(all="ignore"):
        want = np.power(host, np.dtype(dtype).type(2))
        got = assert_matches_numpy(lambda v: v ** 2, x)
        np.testing.assert_array_equal(np.asarray(got), want)
        np.testing.assert_array_equal(np.asarray(x ** ax.asarray(2.0, dtype=x.dtype)), want)
        np.testing.assert_array_equal(np.asarray(x ** 2.5), np.power(host, np.dtype(dtype).type(2.5)))
        y = ax.asarray(host.copy())
        y **= 2
        np.testing.assert_array_equal(np.asarray(y), want)


@pytest.mark.parametrize("large", [False, True])
def test_numpy_executor_squares_rather_than_calling_pow(monkeypatch, large):
    with ax.use_executor("numpy"):
        x = ax.asarray(np.linspace(-3, 3, 600_000 if large else 60))
    calls = []
    power = np.power

    def spy(*args, **kwargs):
        calls.append(args[1])
        return power(*args, **kwargs)

    monkeypatch.setattr(np, "power", spy)
    y = x ** 2
    x **= 2.0
    assert calls == []
    np.testing.assert_array_equal(np.asarray(y), np.asarray(x))
    x ** 3.0
    assert len(calls) == 1


def _pool_takes():
    s = bp.POOL.stats()
    return s["hits"] + s["new"]


@pytest.mark.parametrize("fn", ["divide", "reciprocal", "expm1", "tanh"])
def test_large_results_of_numpy_overrides_come_from_the_pool(fn):
    if not bp.ENABLED:
        pytest.skip("buffer pool turned off (ARRAYX_BUFFER_POOL=0)")
    host = np.random.default_rng(0).uniform(0.5, 2.0, size=(1000, 300))  # 2.4 MB results
    with ax.use_executor("numpy"):
        x = ax.asarray(host)
        op = (lambda v: v / 3.0) if fn == "divide" else getattr(ax, fn)
        before = _pool_takes()
        got = op(x)
        assert _pool_takes() == before + 1
    want = host / 3.0 if fn == "divide" else getattr(np, fn)(host)
    np.testing.assert_array_equal(np.asarray(got), want)


def test_complex_divide_keeps_its_fixups_when_large():
    n = 200_000
    a = np.full(n, 1.0 + 1.0j)
    b = np.zeros(n, complex)
    b[: n // 2] = np.inf
    with ax.use_executor("numpy"):
        got = np.asarray(ax.asarray(a) / ax.asarray(b))
    assert np.all(np.isinf(got[n // 2:].real)) and np.all(got[: n // 2] == 0)


@pytest.mark.parametrize("op", ["-=", "*=", "/=", "+=", "**="])
def test_in_place_operators_on_large_arrays(executor, op):
    rng = np.random.default_rng(1)
    h1, h2 = rng.uniform(0.5, 2.0, size=(2000, 600)), rng.uniform(0.5, 2.0, size=(2000, 600))
    for other, hother in ((ax.asarray(h2), h2), (1.25, 1.25), (ax.asarray(h2[0]), h2[0])):
        x = ax.asarray(h1.copy())
        want = h1.copy()
        exec(f"x {op} other", {"x": x, "other": other})
        exec(f"want {op} hother", {"want": want, "hother": hother})
        np.testing.assert_allclose(np.asarray(x), want, rtol=1e-15, atol=0)


def test_in_place_with_an_overlapping_view(executor):
    h = np.random.default_rng(2).normal(size=(3000, 400))
    x = ax.asarray(h.copy())
    tail = x[1:]
    tail += x[:-1]
    want = h.copy()
    want[1:] += h[:-1]
    np.testing.assert_array_equal(np.asarray(x), want)


def test_numba_in_place_operators_write_in_place(monkeypatch):
    """``x -= y`` on numba writes x's own buffer with NumPy's in-place ufunc (before: the kernel made a
    new result, from the pool, which was then copied back or rebound)."""
    pytest.importorskip("numba")
    if not bp.ENABLED:
        pytest.skip("buffer pool turned off (ARRAYX_BUFFER_POOL=0)")
    from arrayx.core import primitives as _core

    # while any sharded array lives in the process (one an earlier test kept), eager ops go through
    # the sharding hook, never the in-place path; x and y are not sharded: the hook is off here
    monkeypatch.setattr(_core, "eager_hook", None)
    rng = np.random.default_rng(3)
    h1, h2 = rng.normal(size=(2000, 600)), rng.normal(size=(2000, 600))  # 1.2M elements: native sizes
    with ax.use_executor("numba"):
        x, y = ax.asarray(h1), ax.asarray(h2)
        before = _pool_takes()
        x -= y
        x *= 0.5
        x /= 3.0
        assert _pool_takes() == before
    np.testing.assert_array_equal(np.asarray(x), (h1 - h2) * 0.5 / 3.0)
