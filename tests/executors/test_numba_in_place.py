"""The Numba executor's ``x op= y`` on large arrays (``NumbaExecutor.ufunc_into``): NumPy's ufunc run
in pieces on several threads, bit-identical to one NumPy call, one call where operands overlap."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx
from arrayx.core import executor as base
from arrayx.executors.common import threads as T
from arrayx.executors.numba import executor as nx

from .conftest import only_on

pytestmark = only_on("numba")


@pytest.fixture
def small_pieces(monkeypatch):
    """Small arrays split too (the thresholds lowered), so a quick test takes the threaded path."""
    ex = base.get("numba")
    monkeypatch.setitem(ex.thresholds, "in place", 64)
    monkeypatch.setattr(nx, "IN_PLACE_PIECE_MIN", 8)
    return ex._numba().get_num_threads() > 1  # whether a split can happen here at all


OPS = {"+=": np.add, "-=": np.subtract, "*=": np.multiply, "/=": np.divide}


def _apply(op, a, b):
    if op == "+=":
        a += b
    elif op == "-=":
        a -= b
    elif op == "*=":
        a *= b
    else:
        a /= b
    return a


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("shape,other", [
    ((300, 40), (300, 40)), ((300, 40), (300, 1)), ((300, 40), (1, 40)), ((300, 40), (40,)),
    ((300, 40), "scalar"), ((5000,), (5000,)), ((40, 30, 7), (30, 1)), ((40, 30, 7), (40, 30, 7)),
])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_bit_identical_to_one_numpy_call(small_pieces, op, shape, other, dtype):
    rng = np.random.default_rng(len(shape))
    x = rng.normal(size=shape).astype(dtype)
    y = 1.5 if other == "scalar" else (rng.normal(size=other) + 3).astype(dtype)
    want = OPS[op](x, dtype(y) if other == "scalar" else y)
    a = arrayx.asarray(x)
    before = T.split_calls
    a = _apply(op, a, y if other == "scalar" else arrayx.asarray(y))
    assert np.asarray(a).dtype == want.dtype and np.array_equal(np.asarray(a), want)
    assert (T.split_calls > before) == small_pieces


def test_below_the_threshold_one_call():
    x = arrayx.asarray(np.ones((100, 10)))
    before = T.split_calls
    x += arrayx.asarray(np.ones((100, 10)))
    assert T.split_calls == before and np.asarray(x).tolist() == [[2.0] * 10] * 100


@pytest.mark.parametrize("case", ["shifted view", "reversed view", "itself"])
def test_overlapping_operands_run_as_one_numpy_call(small_pieces, case):
    # NumPy computes x op= (a view of x) as if the operand were copied first: one call keeps that
    base_host = np.arange(4000.0).reshape(400, 10)
    x = arrayx.asarray(base_host)
    want = base_host.copy()
    before = T.split_calls
    if case == "shifted view":
        x[1:] += x[:-1]
        want[1:] += want[:-1]
    elif case == "reversed view":
        x += x[::-1]
        want += want[::-1]
    else:
        x *= x
        want *= want
    assert np.array_equal(np.asarray(x), want)
    assert T.split_calls == before


def test_a_temporary_written_in_place_splits_too(small_pieces):
    # the temporary elision (api/_inplace.py) runs the same in-place call
    x = np.random.default_rng(1).normal(size=(2000, 600))  # >= 1 MiB: elided
    a = arrayx.asarray(x)
    before = T.split_calls
    got = -2.0 * (a @ a.T[:, :600])
    assert np.array_equal(np.asarray(got), -2.0 * (x @ x.T[:, :600]))
    assert (T.split_calls > before) == small_pieces
