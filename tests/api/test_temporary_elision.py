"""Temporary elision (``Array.__mul__`` and friends, ``arrayx/api/_inplace.py``): ``-2 * (X @ Y.T)`` and
``(X - m) / s`` write into the temporary's buffer where nothing else can see it (NumPy does the
same); every other case computes a new result.  Values always equal the NumPy executor's and NumPy's."""
from __future__ import annotations

import operator
import sys

import numpy as np
import pytest

import arrayx
from arrayx.api import _inplace
from tests.conftest import assert_same

_RNG = np.random.default_rng(31)
A = _RNG.normal(size=(400, 64))
B = _RNG.normal(size=(800, 64))  # A @ B.T: 400 x 800 float64, 2.5 MB (elided from 1 MiB)

needs_elision = pytest.mark.skipif(_inplace._TEMPORARY < 0, reason=f"no temporary elision on Python {sys.version}")


def _ptr(x) -> int:
    return np.asarray(x).__array_interface__["data"][0]


class _Made:
    """Makes A @ B.T on the current executor and remembers where its buffer is (not the array)."""

    def __init__(self):
        self.a, self.b, self.where = arrayx.asarray(A), arrayx.asarray(B), []

    def __call__(self):
        r = self.a @ self.b.T
        self.where.append(_ptr(r))
        return r

    def reused(self, result) -> bool:
        return _ptr(result) == self.where[-1]


@pytest.mark.parametrize("form", ["-2 * t", "t * 2", "t - 1.5", "t / 3", "1.5 + t", "t + row", "t * t2"])
def test_values_equal_numpy_whatever_the_form(executor, form):
    made = _Made()
    row = arrayx.asarray(_RNG.normal(size=800))
    t2 = arrayx.asarray(A @ B.T)
    got = {"-2 * t": lambda: -2 * made(), "t * 2": lambda: made() * 2, "t - 1.5": lambda: made() - 1.5,
           "t / 3": lambda: made() / 3, "1.5 + t": lambda: 1.5 + made(), "t + row": lambda: made() + row,
           "t * t2": lambda: made() * t2}[form]()
    M = A @ B.T
    want = {"-2 * t": -2 * M, "t * 2": M * 2, "t - 1.5": M - 1.5, "t / 3": M / 3, "1.5 + t": 1.5 + M,
            "t + row": M + np.asarray(row), "t * t2": M * M}[form]
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)
    with arrayx.use_executor("numpy"):
        ref = arrayx.asarray(M)
    assert got.shape == ref.shape and got.dtype == ref.dtype


@needs_elision
@pytest.mark.parametrize("executor_name", ["numpy", "numba"])
@pytest.mark.parametrize("form", ["-2 * t", "t * 2", "t - 1.5", "t / 3", "1.5 + t", "t + row"])
def test_a_temporary_is_written_in_place(executor_name, form):
    if executor_name == "numba":
        pytest.importorskip("numba")
    with arrayx.use_executor(executor_name):
        made = _Made()
        row = arrayx.asarray(_RNG.normal(size=800))
        r = {"-2 * t": lambda: -2 * made(), "t * 2": lambda: made() * 2, "t - 1.5": lambda: made() - 1.5,
             "t / 3": lambda: made() / 3, "1.5 + t": lambda: 1.5 + made(), "t + row": lambda: made() + row}[form]()
        assert made.reused(r)


@needs_elision
def test_what_is_never_written_in_place():
    with arrayx.use_executor("numpy"):
        made = _Made()
        t = made()
        r = t * 2  # a named operand: its name still sees the old values
        assert not made.reused(r)
        np.testing.assert_array_equal(np.asarray(r), 2 * np.asarray(t))
        r = operator.mul(made(), 2)  # C code calling the operator may hold a reference we cannot count
        assert not made.reused(r)
        keep = []

        def kept():
            r = made()
            keep.append(np.asarray(r))  # an exported NumPy view of the buffer
            return r

        r = kept() * 2
        assert not np.shares_memory(np.asarray(r), keep[0])
        np.testing.assert_array_equal(np.asarray(r), 2 * keep[0])
        r = made()[:200] * 2  # a view of a temporary: its base is another array's memory
        assert r.shape == (200, 800)
        r = 1.5 - made()  # not commutative: the reflected form computes a new result
        assert not made.reused(r)
        r = made() * arrayx.ones((2, 400, 800))  # the result is larger than the temporary
        assert r.shape == (2, 400, 800) and not made.reused(r)
        r = made() * arrayx.ones(800, dtype=arrayx.float32)  # another dtype operand: not the in-place path
        assert r.dtype == arrayx.float64
        small = arrayx.asarray(A[:10]) * 2  # under 1 MiB: a fresh result is cheap
        np.testing.assert_array_equal(np.asarray(small), A[:10] * 2)


def test_immutable_executors_compute_a_new_result(executor):
    made = _Made()
    r = -2 * made()
    np.testing.assert_allclose(np.asarray(r), -2 * (A @ B.T), rtol=1e-12, atol=1e-12)


def test_under_a_transform_no_elision(executor):
    a, b = arrayx.asarray(A), arrayx.asarray(B)
    f = arrayx.jit(lambda a, b: -2 * (a @ b.T) + 1.0)
    np.testing.assert_allclose(np.asarray(f(a, b)), -2 * (A @ B.T) + 1.0, rtol=1e-12, atol=1e-12)
    assert_same(a, A)  # the inputs are untouched
